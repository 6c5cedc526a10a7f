/*
 * gc.c — garbage collection and checking of a data dir.
 *
 * A sweep: (1) drops history rows closed more than the grace period ago that
 * no snapshot covers, and changes older than the history window; (2) marks
 * content nothing refers to as orphaned (now) and un-marks what is referred to
 * again; (3) deletes content orphaned for longer than the grace period, and
 * stored content the metadata never named (an upload refused or cut off) once
 * its file is older than the grace period. Deleting holds the content lock
 * exclusively (store/lock.c), so a write that is about to name some content
 * never loses it, in this process or in another sharing the data dir.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "util/metrics.h"
#include "volume/volume.h"

typedef struct sweep {
	cof_store *st;
	int64_t deleted, freed, pending, cutoff;
	char (*shas)[65];
	int64_t *sizes;
	size_t n, cap;
	cof_err *err;
} sweep;

static int collect(void *arg, const char *sha, int64_t size)
{
	sweep *s = arg;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		void *a = cof_realloc(s->shas, cap * sizeof *s->shas);
		s->shas = a;
		void *b = cof_realloc(s->sizes, cap * sizeof *s->sizes);
		s->sizes = b;
		s->cap = cap;
	}
	memcpy(s->shas[s->n], sha, 65);
	s->sizes[s->n++] = size;
	return 0;
}

/* Blobs on disk that the metadata never named and are older than the grace. */
static int collect_untracked(void *arg, const char *sha, int64_t size, int64_t mtime)
{
	sweep *s = arg;
	cof_err e = {0};
	int known;

	if (mtime > s->cutoff)
		return 0;
	known = cof_meta_blob_known(s->st->meta, sha, &e);
	cof_err_clear(&e);
	return known == 0 ? collect(arg, sha, size) : 0;
}

int cof_gc(cof_store *st, json_t **out, cof_err *err)
{
	int64_t now = cof_now(), pruned = 0;
	sweep s = {.st = st, .err = err};

	s.cutoff = now - st->opts.gc_grace_seconds;
	if (cof_meta_gc_prune(st->meta, s.cutoff, now - st->opts.history_seconds, &pruned, err) ||
	    cof_meta_gc_mark(st->meta, now, err) ||
	    cof_meta_gc_orphans(st->meta, s.cutoff, collect, &s, err))
		goto fail;
	size_t tracked = s.n;
	if (st->blobs->each(st->blobs, collect_untracked, &s, err))
		goto fail;
	if (cof_store_collect_begin(st, err))
		goto fail;
	for (size_t i = 0; i < s.n; i++) {
		/* Claimed first, in the metadata, so that no write on another node
		 * names these bytes while they go (docs/design.md). */
		int gone = i < tracked ? cof_meta_blob_forget(st->meta, s.shas[i], err)
				       : cof_meta_blob_claim(st->meta, s.shas[i], err);
		if (gone < 0)
			break;
		if (gone && !st->blobs->remove(st->blobs, s.shas[i], err)) {
			s.deleted++;
			s.freed += s.sizes[i];
			if (cof_meta_blob_forgotten(st->meta, s.shas[i], err))
				break;
		}
	}
	cof_store_collect_end(st);
	if (err->code)
		goto fail;
	free(s.shas);
	free(s.sizes);
	s.shas = NULL, s.sizes = NULL, s.n = s.cap = 0;
	/* What is marked and waits for its grace to end. */
	if (cof_meta_gc_orphans(st->meta, now, collect, &s, err))
		goto fail;
	cof_metric_add(COF_M_GC_RUNS, 1);
	cof_metric_add(COF_M_GC_BYTES_FREED, s.freed);
	cof_metric_add(COF_M_GC_BLOBS_FREED, s.deleted);
	*out = json_pack("{s:I, s:I, s:I, s:I}", "blobsDeleted", (json_int_t)s.deleted,
			 "bytesFreed", (json_int_t)s.freed, "historyPruned", (json_int_t)pruned,
			 "pending", (json_int_t)s.n);
	free(s.shas);
	free(s.sizes);
	return 0;
fail:
	free(s.shas);
	free(s.sizes);
	return -1;
}

/* ------------------------------------------------------------------ fsck */

typedef struct check {
	cof_store *st;
	json_t *missing, *corrupt, *orphans;
	int64_t checked, norphans;
	char (*refs)[65];
	size_t nrefs, cap;
} check;

static int blob_hash(cof_store *st, const char *sha, int64_t size, int *missing)
{
	cof_err e = {0};
	cof_blob_reader *r;
	unsigned char buf[65536], md[32];
	unsigned int mdlen;
	char hex[65];
	int64_t total = 0;
	EVP_MD_CTX *ctx;

	*missing = 0;
	if (cof_content_open(st, sha, size, NULL, &r, &e)) {
		*missing = e.code == COF_ENOTFOUND;
		cof_err_clear(&e);
		return -1;
	}
	ctx = EVP_MD_CTX_new();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (;;) {
		size_t n = 0;
		if (cof_blob_read_at(r, total, buf, sizeof buf, &n, &e) || n == 0)
			break;
		EVP_DigestUpdate(ctx, buf, n);
		total += (int64_t)n;
	}
	cof_err_clear(&e);
	cof_blob_close(r);
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	cof_hex(md, 32, hex);
	return (strcmp(hex, sha) || total != size) ? -1 : 0;
}

static int check_ref(void *arg, const char *sha, int64_t size)
{
	check *c = arg;
	int missing;

	c->checked++;
	if (blob_hash(c->st, sha, size, &missing))
		json_array_append_new(missing ? c->missing : c->corrupt, json_string(sha));
	if (c->nrefs == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 1024;
		void *p = cof_realloc(c->refs, cap * sizeof *c->refs);
		c->refs = p;
		c->cap = cap;
	}
	memcpy(c->refs[c->nrefs++], sha, 65);
	return 0;
}

static int cmp_sha(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int check_orphan(void *arg, const char *sha, int64_t size, int64_t mtime)
{
	check *c = arg;

	/* no refs: c->refs is NULL, which bsearch may not be given */
	if (!c->nrefs || !bsearch(sha, c->refs, c->nrefs, sizeof *c->refs, cmp_sha)) {
		if (c->norphans++ < 1000)
			json_array_append_new(c->orphans, json_string(sha));
	}
	return 0;
}

int cof_fsck(cof_store *st, json_t **out, cof_err *err)
{
	check c = {.st = st, .missing = json_array(), .corrupt = json_array(),
		   .orphans = json_array()};
	int rc = -1;

	if (cof_meta_referenced(st->meta, check_ref, &c, err))
		goto out;
	if (c.nrefs)
		qsort(c.refs, c.nrefs, sizeof *c.refs, cmp_sha);
	if (st->blobs->each(st->blobs, check_orphan, &c, err))
		goto out;
	int ok = json_array_size(c.missing) == 0 && json_array_size(c.corrupt) == 0;
	*out = json_pack("{s:b, s:I, s:O, s:O, s:O, s:I}", "ok", ok, "checked",
			 (json_int_t)c.checked, "missing", c.missing, "corrupt", c.corrupt,
			 "orphans", c.orphans, "orphanCount", (json_int_t)c.norphans);
	rc = 0;
out:
	json_decref(c.missing);
	json_decref(c.corrupt);
	json_decref(c.orphans);
	free(c.refs);
	return rc;
}
