/*
 * fuzz_fork.c — copy-on-write forks of the SQLite metadata store
 * (src/store/meta_sqlite*.c; docs/design.md, "Forks") against a model. Input:
 * pairs of bytes (op, arg), at most 64. Ops: write or remove one of 6 paths in
 * one of the volumes, fork a volume (now, or at an older seq of it), delete a
 * volume, check everything. Forks of forks go past COF_FORK_DEPTH (a copy).
 *
 * Invariants: every live volume lists (whole and under a prefix, in path
 * order) and reads exactly what the model holds, now and at every older seq
 * it went through (checked at the end); files counts match; deleting a volume never changes what
 * its forks show; the store stays usable (no error) throughout.
 */
#include <unistd.h>
#include "fuzz.h"
#include "store/meta.h"

#define NPATH 6
#define MAXV 12
#define MAXSEQ 24

static const char *const paths[NPATH] = {"a", "b/c", "b/d", "e", "f/g", "z"};

typedef struct state { char c[NPATH][12]; } state;   /* "" = absent */

typedef struct vol {
	cof_volrow row;
	int live;
	int64_t seq0;            /* the seq it was made at */
	int nseq;                /* states at seq0 .. seq0 + nseq - 1 */
	state at[MAXSEQ];
} vol;

static cof_meta *m;
static vol vols[MAXV];
static int nv;
static char org[48];
static unsigned counter;

static void sha_of(const char *content, char out[65])
{
	uint32_t h = 2166136261u;

	for (const char *p = content; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(out, 65, "%056x%08x", 0, h);
}

typedef struct edit { const char *path, *content; } edit;

static int apply(cof_txn *tx, void *ctx, cof_err *err)
{
	edit *e = ctx;
	char sha[65];

	if (!e->content)
		return cof_txn_remove(tx, e->path, err);
	sha_of(e->content, sha);
	return cof_txn_write(tx, e->path, sha, (int64_t)strlen(e->content), "text/plain",
			     e->content, err);
}

static int list_fn(void *ctx, const cof_entry *e)
{
	char *out = ctx;
	size_t n = strlen(out);

	snprintf(out + n, 1024 - n, "%s=%s,", e->path, e->sha256 + 56);
	return 0;
}

/* Checks volume i at the state `s` of seq `at` (< 0 = live). */
static void check_at(vol *v, int64_t at, const state *s)
{
	char got[1024] = "", want[1024] = "", sub[1024] = "", wsub[1024] = "";
	cof_err err = {0};
	cof_entry e;

	for (int p = 0; p < NPATH; p++) {
		char sha[65];
		if (!s->c[p][0])
			continue;
		sha_of(s->c[p], sha);
		size_t n = strlen(want);
		snprintf(want + n, sizeof want - n, "%s=%s,", paths[p], sha + 56);
		if (!strncmp(paths[p], "b/", 2)) {
			n = strlen(wsub);
			snprintf(wsub + n, sizeof wsub - n, "%s=%s,", paths[p], sha + 56);
		}
	}
	FUZZ_CHECK(cof_meta_list(m, v->row.vno, at, "", NULL, list_fn, got, &err) == 0, "%s",
		   err.msg);
	FUZZ_CHECK(!strcmp(got, want), "listing of %s at %lld: '%s', want '%s'", v->row.name,
		   (long long)at, got, want);
	FUZZ_CHECK(cof_meta_list(m, v->row.vno, at, "b/", NULL, list_fn, sub, &err) == 0, "%s",
		   err.msg);
	FUZZ_CHECK(!strcmp(sub, wsub), "listing of b/ in %s: '%s', want '%s'", v->row.name,
		   sub, wsub);
	for (int p = 0; p < NPATH; p++) {
		int r = cof_meta_entry_get(m, v->row.vno, paths[p], at, &e, &err);
		FUZZ_CHECK(r == (s->c[p][0] != '\0'), "read of %s in %s at %lld: %d", paths[p],
			   v->row.name, (long long)at, r);
	}
}

/* Checks every live volume now and, with `history`, at each older seq. */
static void check_all(int history)
{
	cof_err err = {0};
	cof_volrow row;

	for (int i = 0; i < nv; i++) {
		vol *v = &vols[i];
		if (!v->live)
			continue;
		const state *now = &v->at[v->nseq - 1];
		int files = 0;
		check_at(v, -1, now);
		for (int k = 0; history && k < v->nseq; k++)
			check_at(v, v->seq0 + k, &v->at[k]);
		for (int p = 0; p < NPATH; p++)
			files += now->c[p][0] != '\0';
		FUZZ_CHECK(cof_meta_volume_get(m, org, v->row.id, &row, &err) == 0, "%s", err.msg);
		FUZZ_CHECK(row.files == files, "files of %s: %lld, want %d", v->row.name,
			   (long long)row.files, files);
	}
}

static void op_edit(vol *v, int p, int remove)
{
	state next = v->at[v->nseq - 1];
	char content[12];
	edit e = {paths[p], NULL};
	cof_err err = {0};
	int64_t seq;

	if (v->nseq >= MAXSEQ || (remove && !next.c[p][0]))
		return;
	if (!remove) {
		snprintf(content, sizeof content, "c%u", counter++);
		e.content = content;
		snprintf(next.c[p], sizeof next.c[p], "%s", content);
	} else {
		next.c[p][0] = '\0';
	}
	FUZZ_CHECK(cof_meta_change(m, v->row.vno, apply, &e, &seq, &err) == 0, "%s", err.msg);
	FUZZ_CHECK(seq == v->seq0 + v->nseq, "seq %lld", (long long)seq);
	v->at[v->nseq++] = next;
}

static void op_fork(vol *src, int back)
{
	vol *v = &vols[nv];
	cof_err err = {0};
	int k = src->nseq - 1 - back % src->nseq;

	memset(v, 0, sizeof *v);
	cof_id_new("vol_", v->row.id, sizeof v->row.id);
	snprintf(v->row.org, sizeof v->row.org, "%s", org);
	snprintf(v->row.name, sizeof v->row.name, "v%d", nv);
	v->row.seq = v->row.history_from = src->seq0 + k;
	v->row.capacity = v->row.ceiling = 1 << 30;
	FUZZ_CHECK(cof_meta_volume_fork(m, &v->row, src->row.vno, src->seq0 + k, &err) == 0,
		   "%s", err.msg);
	v->live = 1;
	v->seq0 = src->seq0 + k;
	v->nseq = 1;
	v->at[0] = src->at[k];
	nv++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cof_err err = {0};

	if (!m) {
		/* scripts/fuzz gives a temp dir it removes at the end */
		const char *base = getenv("COFFER_FUZZ_TMP");
		char dir[256], url[300];
		snprintf(dir, sizeof dir, "%s/fork-XXXXXX", base && *base ? base : "/tmp");
		FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
		snprintf(url, sizeof url, "sqlite:%s/meta.db", dir);
		FUZZ_CHECK(cof_meta_open(url, &m, &err) == 0, "%s", err.msg);
	}
	cof_id_new("org_", org, sizeof org);
	memset(vols, 0, sizeof vols);
	nv = 1;
	cof_id_new("vol_", vols[0].row.id, sizeof vols[0].row.id);
	snprintf(vols[0].row.org, sizeof vols[0].row.org, "%s", org);
	snprintf(vols[0].row.name, sizeof vols[0].row.name, "v0");
	vols[0].row.capacity = vols[0].row.ceiling = 1 << 30;
	FUZZ_CHECK(cof_meta_volume_add(m, &vols[0].row, &err) == 0, "%s", err.msg);
	vols[0].live = 1;
	vols[0].nseq = 1;
	for (size_t i = 0; i + 1 < size && i < 128; i += 2) {
		int op = data[i] % 8, arg = data[i + 1];
		vol *v = &vols[(arg >> 3) % nv];
		if (!v->live)
			continue;
		switch (op) {
		case 0: case 1: case 2: op_edit(v, arg % NPATH, 0); break;
		case 3: case 4: op_edit(v, arg % NPATH, 1); break;
		case 5: if (nv < MAXV) op_fork(v, arg & 7); break;
		case 6:
			FUZZ_CHECK(cof_meta_volume_delete(m, v->row.vno, &err) == 0, "%s", err.msg);
			v->live = 0;
			break;
		default: check_all(0); break;
		}
	}
	check_all(1);
	/* Everything goes, leaves first or not: nothing is left to list. */
	for (int i = 0; i < nv; i++)
		if (vols[i].live)
			FUZZ_CHECK(cof_meta_volume_delete(m, vols[i].row.vno, &err) == 0, "%s", err.msg);
	for (int i = 0; i < nv; i++) {
		char got[1024] = "";
		FUZZ_CHECK(cof_meta_list(m, vols[i].row.vno, -1, "", NULL, list_fn, got, &err) == 0,
			   "%s", err.msg);
		FUZZ_CHECK(got[0] == '\0', "rows of deleted %s left: %s", vols[i].row.name, got);
	}
	return 0;
}
