/*
 * merge.c — POST /v1/volumes/{id}/merge (issue 37 item 1, API.md "Merge"):
 * the changes of volume `from` since the common base, brought into this
 * volume per path, as one change through the write path (land.c).
 *
 * The base is always a seq of `from` (what both sides held then): the fork
 * point (a fork continues its parent's seq, so the fork read at its base seq
 * is its parent there), the `from` seq of the last merge from `from` into
 * this volume (a state record, kind "merge"), or the caller's `base`. Only
 * paths `from` changed since the base can take anything from it: a path it
 * did not change has theirs == base, so ours stands whatever ours did. So the
 * work is `from`'s changes feed since the base plus three reads per path
 * changed, never a listing of either volume.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <git2.h>
#include "hooks/hooks.h"
#include "volume/volume.h"

/* ------------------------------------------------------------ text merge */

static pthread_once_t git_once = PTHREAD_ONCE_INIT;
static void git_init(void) { git_libgit2_init(); }

int cof_merge_is_text(const void *p, size_t n)
{
	return n <= COF_MERGE_TEXT_MAX && !memchr(p, '\0', n) && cof_utf8_valid(p, n);
}

int cof_merge_text(const void *base, size_t blen, const void *ours, size_t olen,
		   const void *theirs, size_t tlen, unsigned char **out, size_t *outlen,
		   cof_err *err)
{
	git_merge_file_input in[3];
	git_merge_file_options opt;
	git_merge_file_result res;
	const void *ptr[3] = {base, ours, theirs};
	size_t len[3] = {blen, olen, tlen};
	int rc;

	*out = NULL;
	*outlen = 0;
	pthread_once(&git_once, git_init);
	for (int i = 0; i < 3; i++) {
		git_merge_file_input_init(&in[i], GIT_MERGE_FILE_INPUT_VERSION);
		in[i].ptr = len[i] ? ptr[i] : "";
		in[i].size = len[i];
	}
	git_merge_file_options_init(&opt, GIT_MERGE_FILE_OPTIONS_VERSION);
	opt.ancestor_label = "base";
	opt.our_label = "ours";
	opt.their_label = "theirs";
	memset(&res, 0, sizeof res);
	if (git_merge_file(&res, &in[0], &in[1], &in[2], &opt) < 0) {
		const git_error *e = git_error_last();
		return cof_error(err, COF_EINTERNAL, "cannot merge text: %s",
				 e && e->message ? e->message : "libgit2 failed");
	}
	rc = res.automergeable ? 1 : 0;
	if (!(*out = cof_malloc(res.len + 1))) {
		git_merge_file_result_free(&res);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	if (res.len)
		memcpy(*out, res.ptr, res.len);
	(*out)[res.len] = '\0';
	*outlen = res.len;
	git_merge_file_result_free(&res);
	return rc;
}

/* ------------------------------------------------------------ the merge */

enum act { ACT_NONE, ACT_THEIRS, ACT_BASE, ACT_BYTES, ACT_CONFLICT };

typedef struct mpath {
	char *path;
	cof_entry b, o, t;          /* base, ours, theirs */
	int hb, ho, ht;             /* present */
	enum act act;
	const char *from;           /* "ours" | "theirs" | "merged" */
	const char *kind;           /* the conflict's */
	unsigned char *bytes;       /* ACT_BYTES: what to write (malloc'd) */
	size_t nbytes;
	char *markers;              /* a text conflict's merged text (malloc'd) */
} mpath;

typedef struct merge_ctx {
	cof_store *st;
	cof_view ours, theirs;
	int64_t base;
	int64_t if_seq;             /* -1 = none */
	cof_by by;                  /* who merges (via "merge") */
	mpath *p;
	size_t n, cap;
	int over;                   /* more paths than COF_MERGE_PATHS */
	int64_t last_seq;           /* of the changes page read */
	size_t page;
	cof_land_file *files;
	size_t nfiles;
	int raced;                  /* ours moved between reads and the change */
	int64_t held;               /* bytes of merged texts held (COF_MERGE_TEXT_TOTAL) */
	int revert;                 /* a revert (revert.c's shape of the same steps) */
	int64_t landed;             /* the change's seq; -1 = none (dry run) */
} merge_ctx;

/* How an answer names where a path's content came from: a revert's "theirs"
 * is what the path was before the reverted change. */
static const char *from_name(const merge_ctx *c, const char *from)
{
	if (!c->revert)
		return from;
	return !strcmp(from, "theirs") ? "before" : !strcmp(from, "ours") ? "kept" : from;
}

static void mpath_free(mpath *p)
{
	free(p->path);
	free(p->bytes);
	free(p->markers);
}

static void ctx_reset(merge_ctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		mpath_free(&c->p[i]);
	free(c->p);
	free(c->files);
	c->p = NULL;
	c->files = NULL;
	c->n = c->cap = c->nfiles = 0;
	c->held = 0;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const mpath *)a)->path, ((const mpath *)b)->path);
}

/* Sorts the paths and drops repeats (a path changed several times). */
static void dedupe(merge_ctx *c)
{
	size_t k = 0;

	if (!c->n)
		return;
	qsort(c->p, c->n, sizeof *c->p, by_path);
	for (size_t i = 1; i < c->n; i++) {
		if (!strcmp(c->p[i].path, c->p[k].path))
			free(c->p[i].path);
		else
			c->p[++k] = c->p[i];
	}
	c->n = k + 1;
}

static int add_change(void *ctx, const cof_change_row *row)
{
	merge_ctx *c = ctx;

	c->page++;
	c->last_seq = row->seq;
	if (row->seq > c->theirs.seq)
		return 1;   /* past a snapshot of `from`: not part of the merge */
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		mpath *p = realloc(c->p, cap * sizeof *p);
		if (!p)
			return c->over = -1;
		c->p = p;
		c->cap = cap;
	}
	memset(&c->p[c->n], 0, sizeof c->p[c->n]);
	if (!(c->p[c->n].path = strdup(row->path)))
		return c->over = -1;
	c->n++;
	return 0;
}

/* The paths `from` changed after the base, read from its changes feed in
 * pages of PAGE rows (a page ends mid-seq: the next starts at that seq again;
 * a page all of one seq names PAGE > COF_MERGE_PATHS distinct paths). */
#define PAGE (4 * COF_MERGE_PATHS)
static int changed_paths(merge_ctx *c, cof_err *err)
{
	int64_t since = c->base;

	for (;;) {
		c->page = 0;
		if (cof_meta_changes(c->st->meta, c->theirs.vno, since, "", PAGE, add_change, c,
				     err))
			return -1;
		if (c->over < 0)
			return cof_error(err, COF_EINTERNAL, "out of memory");
		dedupe(c);
		if (c->n > COF_MERGE_PATHS)
			return cof_error(err, COF_ETOOLARGE,
					 "the merge names more than %d paths changed in '%s' since "
					 "its base (seq %lld): merge in steps (a 'fromSnapshot' or "
					 "'base' nearer) or copy the volume",
					 COF_MERGE_PATHS, c->theirs.vol.id, (long long)c->base);
		if (c->page < PAGE || c->last_seq > c->theirs.seq)
			return 0;
		since = c->last_seq - 1;
	}
}

static json_t *side_json(const cof_entry *e, int has)
{
	if (!has)
		return json_null();
	return json_pack("{s:I, s:s, s:I}", "version", (json_int_t)e->version, "sha256",
			 e->sha256, "size", (json_int_t)e->size);
}

static int same(const cof_entry *a, int ha, const cof_entry *b, int hb)
{
	return ha == hb && (!ha || !strcmp(a->sha256, b->sha256));
}

/* Reads one side's bytes for the text merge: NULL content for an absent
 * side (empty). 0, or -1. */
static int read_side(cof_store *st, const cof_entry *e, int has, unsigned char **out,
		     cof_err *err)
{
	*out = NULL;
	if (!has)
		return 0;
	return cof_content_read(st, e->sha256, e->size, out, err);
}

/* Decides a path changed on `from` (theirs != base). */
static int decide(merge_ctx *c, mpath *p, cof_err *err)
{
	unsigned char *b = NULL, *o = NULL, *t = NULL, *m = NULL;
	size_t mlen = 0;
	int rc = -1, r;

	p->act = ACT_NONE;
	if (same(&p->t, p->ht, &p->b, p->hb))
		return 0;                       /* changed and back */
	if (same(&p->o, p->ho, &p->b, p->hb)) {
		p->act = ACT_THEIRS;            /* changed on theirs only */
		p->from = "theirs";
		return 0;
	}
	if (same(&p->o, p->ho, &p->t, p->ht))
		return 0;                       /* the same change on both: ours has it */
	p->act = ACT_CONFLICT;
	p->kind = "content";
	if (!p->ho || !p->ht) {
		p->kind = "remove-change";
		return 0;
	}
	if (cof_is_symlink(p->o.ctype) != cof_is_symlink(p->t.ctype)) {
		p->kind = "type";
		return 0;
	}
	if (cof_is_symlink(p->o.ctype) || p->o.size > COF_MERGE_TEXT_MAX ||
	    p->t.size > COF_MERGE_TEXT_MAX || (p->hb && p->b.size > COF_MERGE_TEXT_MAX))
		return 0;                       /* binary: a conflict */
	if (read_side(c->st, &p->b, p->hb, &b, err) || read_side(c->st, &p->o, 1, &o, err) ||
	    read_side(c->st, &p->t, 1, &t, err))
		goto out;
	if (!cof_merge_is_text(o, (size_t)p->o.size) || !cof_merge_is_text(t, (size_t)p->t.size) ||
	    (b && !cof_merge_is_text(b, (size_t)p->b.size))) {
		rc = 0;
		goto out;
	}
	if ((r = cof_merge_text(b, b ? (size_t)p->b.size : 0, o, (size_t)p->o.size, t,
				(size_t)p->t.size, &m, &mlen, err)) < 0)
		goto out;
	/* results are held until the change: bounded per merge, not per file */
	c->held += (int64_t)mlen;
	if (c->held > COF_MERGE_TEXT_TOTAL) {
		cof_error(err, COF_ETOOLARGE,
			  "the merge's merged texts (with conflict markers) pass %lld MiB at "
			  "'%.200s': merge in steps (a 'fromSnapshot' or 'base' nearer)",
			  (long long)(COF_MERGE_TEXT_TOTAL >> 20), p->path);
		goto out;
	}
	if (r == 1) {
		p->act = ACT_BYTES;
		p->from = "merged";
		p->bytes = m;
		p->nbytes = mlen;
	} else {
		p->markers = (char *)m;
	}
	m = NULL;
	rc = 0;
out:
	free(b);
	free(o);
	free(t);
	free(m);
	return rc;
}

/* Settles a conflict by the caller's resolution `r` (validated) or strategy. */
static int settle(mpath *p, json_t *r, const char *strategy, cof_err *err)
{
	const char *s = json_is_string(r) ? json_string_value(r) : NULL;

	if (!r && strategy)
		s = strategy;
	if (!r && !s)
		return 0;
	if (s && !strcmp(s, "ours")) {
		p->act = ACT_NONE;
		p->from = "ours";
	} else if (s && !strcmp(s, "theirs")) {
		p->act = ACT_THEIRS;
		p->from = "theirs";
	} else if (s && !strcmp(s, "base")) {
		p->act = ACT_BASE;
		p->from = "merged";
	} else {
		json_t *text = json_object_get(r, "text"), *data = json_object_get(r, "data");
		free(p->bytes);
		p->bytes = NULL;
		if (text) {
			size_t n = json_string_length(text);
			if (!(p->bytes = cof_malloc(n + 1)))
				return cof_error(err, COF_EINTERNAL, "out of memory");
			memcpy(p->bytes, json_string_value(text), n);
			p->nbytes = n;
		} else if (cof_base64_decode(json_string_value(data), json_string_length(data),
					     &p->bytes, &p->nbytes)) {
			return cof_error(err, COF_EVALIDATION,
					 "resolutions['%.200s'].data is not base64", p->path);
		}
		p->act = ACT_BYTES;
		p->from = "merged";
	}
	free(p->markers);
	p->markers = NULL;
	return 0;
}

static int merge_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	merge_ctx *c = l->ctx;
	cof_volrow *v = cof_txn_volume(tx);
	size_t f = 0;

	if (v->seq - 1 != c->ours.seq) {
		if (c->if_seq >= 0) {
			cof_error(err, COF_EPRECONDITION,
				  "volume '%s' is at seq %lld, not %lld ('ifSeq')", v->id,
				  (long long)(v->seq - 1), (long long)c->if_seq);
			cof_err_set(err, "current", json_pack("{s:I}", "seq", (json_int_t)(v->seq - 1)));
			return -1;
		}
		c->raced = 1;   /* decided on an older state: decide again */
		return cof_error(err, COF_ECONFLICT, "volume '%s' changed during the merge", v->id);
	}
	for (size_t i = 0; i < c->n; i++) {
		mpath *p = &c->p[i];
		const cof_entry *e = p->act == ACT_BASE ? &p->b : &p->t;
		int has = p->act == ACT_BASE ? p->hb : p->ht;

		if (p->act == ACT_BYTES) {
			cof_land_file *lf = &c->files[f++];
			if (!p->ho && cof_volume_path_free(tx, p->path, err))
				return -1;
			if (cof_txn_write(tx, p->path, lf->sha256, lf->size, lf->type, lf->inl, err))
				return -1;
			continue;
		}
		if (p->act != ACT_THEIRS && p->act != ACT_BASE)
			continue;
		if (same(e, has, &p->o, p->ho))
			continue;
		if (!has) {
			if (cof_txn_remove(tx, p->path, err))
				return -1;
			continue;
		}
		if (!p->ho && cof_volume_path_free(tx, p->path, err))
			return -1;
		if (cof_txn_write(tx, p->path, e->sha256, e->size, e->ctype, NULL, err))
			return -1;
	}
	return cof_volume_fit(tx, err);
}

static const cof_jfield merge_fields[] = {
	{"from", COF_JSTR, 1}, {"fromSnapshot", COF_JSTR, 0}, {"base", COF_JINT, 0},
	{"strategy", COF_JSTR, 0}, {"resolutions", COF_JOBJ, 0}, {"dryRun", COF_JBOOL, 0},
	{"ifSeq", COF_JINT, 0}, {NULL, 0, 0}};

static int check_resolutions(json_t *res, cof_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach(res, k, v) {
		const char *s = json_string_value(v);
		if (s && (!strcmp(s, "ours") || !strcmp(s, "theirs") || !strcmp(s, "base")))
			continue;
		if (json_is_object(v) && json_object_size(v) == 1 &&
		    (json_is_string(json_object_get(v, "text")) ||
		     json_is_string(json_object_get(v, "data"))))
			continue;
		return cof_error(err, COF_EVALIDATION,
				 "resolutions['%.200s'] must be \"ours\", \"theirs\", \"base\", "
				 "{\"text\": ...} or {\"data\": base64}", k);
	}
	return 0;
}

/* The base (a seq of `from`) when the body gives none: the last merge from
 * `from` into this volume, else the fork point between them. */
static int find_base(merge_ctx *c, cof_err *err)
{
	cof_staterow r = {0};
	char id[48];
	int got;

	snprintf(id, sizeof id, "%lld:%lld", (long long)c->ours.vol.vno,
		 (long long)c->theirs.vol.vno);
	if ((got = cof_meta_state_get(c->st->meta, "merge", id, &r, err)) < 0)
		return -1;
	if (got) {
		json_t *b = json_loads(r.body, 0, NULL);
		int64_t t = -1;
		free(r.body);
		if (b && cof_json_int(b, "from", &t) == 1 && t >= 0 && t <= c->theirs.seq) {
			json_decref(b);
			c->base = t;
			return 0;
		}
		json_decref(b);
	}
	if (c->theirs.vol.base_vno == c->ours.vol.vno) {
		c->base = c->theirs.vol.base_seq;   /* `from` is a fork of this volume */
		return 0;
	}
	if (c->ours.vol.base_vno == c->theirs.vol.vno) {
		c->base = c->ours.vol.base_seq;     /* this volume is a fork of `from` */
		return 0;
	}
	return cof_error(err, COF_EVALIDATION,
			 "volumes '%s' and '%s' have no common base: neither is a fork of the "
			 "other and they were never merged; give 'base' (a seq of '%s')",
			 c->ours.vol.id, c->theirs.vol.id, c->theirs.vol.id);
}

void cof_merge_base_save(cof_store *st, const cof_volrow *into, const cof_volrow *from,
			 int64_t from_seq, int64_t into_seq)
{
	char id[48];
	json_t *b = json_pack("{s:I, s:I}", "from", (json_int_t)from_seq, "into",
			      (json_int_t)into_seq);

	snprintf(id, sizeof id, "%lld:%lld", (long long)into->vno, (long long)from->vno);
	cof_meta_state_save(st->meta, "merge", id, into->org, "", 0, b, "merge");
	json_decref(b);
}

/* One attempt: reads, decides, lands. 1 = ours moved meanwhile (try again). */
/* The end of a merge or a revert, once c->p is decided: resolutions and
 * strategy settle conflicts; with any left (and no dryRun) 409 listing them;
 * else the one change. 0 (c->landed = its seq, or -1 for a dry run), 1 when
 * the volume moved meanwhile (decide again), or -1. */
static int settle_and_land(merge_ctx *c, cof_store *st, json_t *body, json_t **out,
			   cof_err *err)
{
	const char *strategy = cof_json_str(body, "strategy");
	json_t *res = json_object_get(body, "resolutions"), *merged = NULL, *conflicts = NULL;
	int dry = cof_json_bool(body, "dryRun", 0), rc = -1;
	const char *what = c->revert ? "revert" : "merge", *list = c->revert ? "reverted" : "merged";

	c->landed = -1;
	/* resolutions name conflicts only: a stale one is the caller's mistake */
	if (res) {
		const char *k;
		json_t *v;
		json_object_foreach(res, k, v) {
			mpath key = {.path = (char *)k};
			mpath *p = c->n ? bsearch(&key, c->p, c->n, sizeof *c->p, by_path) : NULL;
			if (!p || p->act != ACT_CONFLICT)
				return cof_error(err, COF_EVALIDATION,
						 "resolutions names '%.200s', which is not a conflict "
						 "of this %s", k, what);
		}
	}
	merged = json_array();
	conflicts = json_array();
	for (size_t i = 0; i < c->n; i++) {
		mpath *p = &c->p[i];
		if (p->act == ACT_CONFLICT &&
		    settle(p, json_object_get(res, p->path), strategy, err))
			goto out;
		if (p->act == ACT_CONFLICT) {
			json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:o}", "path", p->path, "kind",
					      p->kind, "base", side_json(&p->b, p->hb), "ours",
					      side_json(&p->o, p->ho), "theirs",
					      side_json(&p->t, p->ht));
			if (p->markers)
				json_object_set_new(j, "merged", json_string(p->markers));
			json_array_append_new(conflicts, j);
		} else if (p->from) {
			json_array_append_new(merged, json_pack("{s:s, s:s}", "path", p->path,
								"from", from_name(c, p->from)));
		}
		if (p->act == ACT_BYTES)
			c->nfiles++;
	}
	if (json_array_size(conflicts) && !dry) {
		if (c->revert)
			cof_error(err, COF_ECONFLICT,
				  "the revert in '%s' has %zu conflict(s) (changed again since); "
				  "settle them with 'resolutions'", c->ours.vol.id,
				  json_array_size(conflicts));
		else {
			cof_error(err, COF_ECONFLICT,
				  "the merge of '%s' into '%s' has %zu conflict(s); settle them "
				  "with 'resolutions' or 'strategy'", c->theirs.vol.id,
				  c->ours.vol.id, json_array_size(conflicts));
			cof_hooks_emit(st, c->ours.vol.org, "merge.conflicted", c->ours.vol.id, NULL,
				       json_pack("{s:s, s:s, s:I}", "volumeId", c->ours.vol.id,
						 "from", c->theirs.vol.id, "conflicts",
						 (json_int_t)json_array_size(conflicts)));
		}
		cof_err_set(err, "conflicts", conflicts);
		conflicts = NULL;
		goto out;
	}
	if (dry) {
		*out = json_pack("{s:I, s:b, s:O, s:O}", "seq", (json_int_t)c->ours.seq, "dryRun", 1,
				 list, merged, "conflicts", conflicts);
		rc = 0;
		goto out;
	}
	if (c->nfiles && !(c->files = calloc(c->nfiles, sizeof *c->files))) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	for (size_t i = 0, f = 0; i < c->n; i++) {
		mpath *p = &c->p[i];
		if (p->act != ACT_BYTES)
			continue;
		cof_land_file *lf = &c->files[f++];
		lf->kind = COF_LAND_MEMORY;
		lf->data = p->bytes;
		lf->len = p->nbytes;
		lf->path = p->path;
		/* a merged file keeps ours's type when it has one */
		lf->ctype = p->ho && !cof_is_symlink(p->o.ctype) ? p->o.ctype : NULL;
	}
	c->by.via = what;
	cof_landing l = {.vol = &c->ours.vol, .files = c->files, .nfiles = c->nfiles,
			 .apply = merge_apply, .ctx = c, .by = &c->by};
	c->raced = 0;
	if (cof_land(st, &l, err)) {
		rc = c->raced ? 1 : -1;
		goto out;
	}
	c->landed = l.seq;
	*out = json_pack("{s:I, s:O, s:O}", "seq", (json_int_t)l.seq, list, merged,
			 "conflicts", conflicts);
	rc = 0;
out:
	json_decref(merged);
	json_decref(conflicts);
	return rc;
}


static int merge_once(merge_ctx *c, cof_store *st, const char *org, const char *vol,
		      json_t *body, json_t **out, cof_err *err)
{
	const char *from = cof_json_str(body, "from");
	cof_view bv;
	int64_t b;
	int rc;

	ctx_reset(c);
	if (cof_view_open(st, org, vol, NULL, &c->ours, err) ||
	    cof_view_open(st, org, from, cof_json_str(body, "fromSnapshot"), &c->theirs, err))
		return -1;
	if (c->theirs.vol.vno == c->ours.vol.vno)
		return cof_error(err, COF_EVALIDATION, "'from' must be another volume than '%s'",
				 vol);
	if (c->theirs.vno != c->theirs.vol.vno)
		return cof_error(err, COF_EVALIDATION,
				 "'fromSnapshot' must be a snapshot of the volume, not of given files");
	if (c->if_seq >= 0 && c->ours.seq != c->if_seq) {
		cof_error(err, COF_EPRECONDITION, "volume '%s' is at seq %lld, not %lld ('ifSeq')",
			  c->ours.vol.id, (long long)c->ours.seq, (long long)c->if_seq);
		cof_err_set(err, "current", json_pack("{s:I}", "seq", (json_int_t)c->ours.seq));
		return -1;
	}
	if (cof_json_int(body, "base", &b) == 1) {
		if (b < 0 || b > c->theirs.seq)
			return cof_error(err, COF_EVALIDATION,
					 "'base' must be a seq of '%s' from 0 to %lld", from,
					 (long long)c->theirs.seq);
		c->base = b;
	} else if (find_base(c, err)) {
		return -1;
	} else if (c->base > c->theirs.seq) {
		return cof_error(err, COF_EVALIDATION,
				 "snapshot '%s' of '%s' is older than the merge's base (seq %lld)",
				 cof_json_str(body, "fromSnapshot"), from, (long long)c->base);
	}
	if (cof_view_open(st, org, c->theirs.vol.id, NULL, &bv, err) ||
	    cof_view_at(st, &bv, c->base, err))
		return -1;
	if (c->base < c->theirs.vol.history_from) {
		cof_error(err, COF_EGONE, "the changes of '%s' before seq %lld are no longer kept; "
			  "give a later 'base'", c->theirs.vol.id,
			  (long long)c->theirs.vol.history_from);
		cof_err_set(err, "oldest", json_integer(c->theirs.vol.history_from));
		return -1;
	}
	if (changed_paths(c, err))
		return -1;
	for (size_t i = 0; i < c->n; i++) {
		mpath *p = &c->p[i];
		if ((p->hb = cof_meta_entry_get(st->meta, bv.vno, p->path, c->base, &p->b, err)) < 0 ||
		    (p->ho = cof_meta_entry_get(st->meta, c->ours.vno, p->path, c->ours.seq, &p->o,
						err)) < 0 ||
		    (p->ht = cof_meta_entry_get(st->meta, c->theirs.vno, p->path, c->theirs.seq,
						&p->t, err)) < 0)
			return -1;
		if (decide(c, p, err))
			return -1;
	}
	if ((rc = settle_and_land(c, st, body, out, err)) == 0 && c->landed >= 0)
		cof_merge_base_save(st, &c->ours.vol, &c->theirs.vol, c->theirs.seq, c->landed);
	return rc;
}

typedef int (*once_fn)(merge_ctx *c, cof_store *st, const char *org, const char *vol,
		       json_t *body, json_t **out, cof_err *err);

/* Runs a merge's or a revert's steps until they land on the state they
 * decided on (a write between the reads and the change: decide again on the
 * new state), at most 5 times; then frees c's paths. */
static int decided(once_fn once, merge_ctx *c, cof_store *st, const char *org, const char *vol,
		   json_t *body, json_t **out, cof_err *err)
{
	int rc;

	for (int attempt = 0;; attempt++) {
		rc = once(c, st, org, vol, body, out, err);
		if (rc != 1)
			break;
		if (attempt == 4) {
			rc = -1;
			break;
		}
		cof_err_clear(err);
	}
	ctx_reset(c);
	return rc;
}

int cof_volume_merge(cof_store *st, const char *org, const char *vol, json_t *body,
		     const cof_by *by, json_t **out, cof_err *err)
{
	merge_ctx c = {.st = st, .if_seq = -1, .by = by ? *by : (cof_by){0}};
	const char *strategy;

	if (cof_json_check(body, merge_fields, err))
		return -1;
	strategy = cof_json_str(body, "strategy");
	if (strategy && strcmp(strategy, "ours") && strcmp(strategy, "theirs"))
		return cof_error(err, COF_EVALIDATION, "'strategy' must be \"ours\" or \"theirs\"");
	if (json_object_get(body, "resolutions") &&
	    check_resolutions(json_object_get(body, "resolutions"), err))
		return -1;
	if (cof_json_int(body, "ifSeq", &c.if_seq) == 1 && c.if_seq < 0)
		return cof_error(err, COF_EVALIDATION, "'ifSeq' must be a seq (0 or more)");
	return decided(merge_once, &c, st, org, vol, body, out, err);
}

/* ------------------------------------------------------------ revert
 * A revert is a merge of "what the paths were before" (theirs) into the
 * volume now (ours), with "what the reverted change left" as the base: a
 * path nobody changed since goes back; one changed again since is decided
 * (and settled) exactly as a merge's. */

static const cof_jfield revert_fields[] = {
	{"runId", COF_JSTR, 0}, {"callId", COF_JSTR, 0}, {"seq", COF_JINT, 0},
	{"paths", COF_JARR, 0}, {"dryRun", COF_JBOOL, 0}, {"resolutions", COF_JOBJ, 0},
	{NULL, 0, 0}};

typedef struct rv_read {
	merge_ctx *c;
	int64_t only_seq;           /* > 0: the changes of this seq only */
	int64_t *lo, *hi;           /* per c->p: the seqs of the target's first and last change */
	size_t cap;
} rv_read;

static int rv_add(void *ctx, const cof_change_row *row)
{
	rv_read *r = ctx;
	merge_ctx *c = r->c;

	c->page++;
	c->last_seq = row->seq;
	if (r->only_seq > 0 && row->seq > r->only_seq)
		return 1;
	if (c->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		mpath *p = realloc(c->p, cap * sizeof *p);
		int64_t *lo = p ? realloc(r->lo, cap * sizeof *lo) : NULL;
		int64_t *hi = lo ? realloc(r->hi, cap * sizeof *hi) : NULL;
		if (p)
			c->p = p;
		if (lo)
			r->lo = lo;
		if (!hi)
			return c->over = -1;
		r->hi = hi;
		r->cap = c->cap = cap;
	}
	memset(&c->p[c->n], 0, sizeof c->p[c->n]);
	if (!(c->p[c->n].path = strdup(row->path)))
		return c->over = -1;
	r->lo[c->n] = r->hi[c->n] = row->seq;
	c->n++;
	return 0;
}

/* Sorts the target's paths, one each with its first and last seq. */
static void rv_dedupe(merge_ctx *c, rv_read *r)
{
	size_t k = 0, *ord;
	mpath *p;
	int64_t *lo, *hi;

	if (c->n < 2)
		return;
	ord = cof_malloc(c->n * sizeof *ord);
	p = cof_malloc(c->n * sizeof *p);
	lo = cof_malloc(c->n * sizeof *lo);
	hi = cof_malloc(c->n * sizeof *hi);
	/* rows come by seq: a stable sort by path keeps that order per path */
	for (size_t i = 0; i < c->n; i++)
		ord[i] = i;
	{
		/* bottom-up merge sort of ord by path (stable) */
		size_t *tmp = cof_malloc(c->n * sizeof *tmp);
		for (size_t w = 1; w < c->n; w *= 2) {
			for (size_t a = 0; a < c->n; a += 2 * w) {
				size_t m = a + w < c->n ? a + w : c->n;
				size_t e = a + 2 * w < c->n ? a + 2 * w : c->n, i = a, j = m, o = a;
				while (i < m && j < e)
					tmp[o++] = strcmp(c->p[ord[j]].path, c->p[ord[i]].path) < 0
							   ? ord[j++] : ord[i++];
				while (i < m)
					tmp[o++] = ord[i++];
				while (j < e)
					tmp[o++] = ord[j++];
			}
			memcpy(ord, tmp, c->n * sizeof *ord);
		}
		free(tmp);
	}
	for (size_t i = 0; i < c->n; i++) {
		size_t x = ord[i];
		if (k && !strcmp(p[k - 1].path, c->p[x].path)) {
			free(c->p[x].path);
			if (r->lo[x] < lo[k - 1])
				lo[k - 1] = r->lo[x];
			if (r->hi[x] > hi[k - 1])
				hi[k - 1] = r->hi[x];
			continue;
		}
		p[k] = c->p[x];
		lo[k] = r->lo[x];
		hi[k++] = r->hi[x];
	}
	memcpy(c->p, p, k * sizeof *p);
	memcpy(r->lo, lo, k * sizeof *lo);
	memcpy(r->hi, hi, k * sizeof *hi);
	c->n = k;
	free(ord);
	free(p);
	free(lo);
	free(hi);
}

/* The paths the run, call or seq changed, each with the span of seqs. */
static int rv_paths(merge_ctx *c, rv_read *r, const cof_change_filter *f, const char *what,
		    cof_err *err)
{
	int64_t since = r->only_seq > 0 ? r->only_seq - 1 : c->ours.vol.history_from;

	for (;;) {
		c->page = 0;
		if (cof_meta_changes_where(c->st->meta, c->ours.vno, since, "", f, PAGE, rv_add, r,
					   err))
			return -1;
		if (c->over < 0)
			return cof_error(err, COF_EINTERNAL, "out of memory");
		rv_dedupe(c, r);
		if (c->n > COF_MERGE_PATHS)
			return cof_error(err, COF_ETOOLARGE,
					 "%s changed more than %d paths; a revert takes at most %d "
					 "(give 'paths')", what, COF_MERGE_PATHS, COF_MERGE_PATHS);
		if (c->page < PAGE || (r->only_seq > 0 && c->last_seq > r->only_seq))
			return 0;
		since = c->last_seq - 1;
	}
}

/* Keeps the paths `paths` names (each one the target changed). */
static int rv_only(merge_ctx *c, rv_read *r, json_t *paths, const char *what, cof_err *err)
{
	size_t k = 0;
	json_t *v;
	size_t i;
	char *keep;

	if (!paths)
		return 0;
	if (json_array_size(paths) > COF_MERGE_PATHS)
		return cof_error(err, COF_ETOOLARGE, "'paths' names %zu paths; the limit is %d",
				 json_array_size(paths), COF_MERGE_PATHS);
	keep = cof_calloc(c->n ? c->n : 1, 1);
	json_array_foreach(paths, i, v) {
		const char *s = json_string_value(v), *np;
		mpath key, *hit;
		if (!s || cof_path_check(s, json_string_length(v), "'paths'", &np, err)) {
			free(keep);
			return s ? -1 : cof_error(err, COF_EVALIDATION, "'paths' must hold strings");
		}
		key.path = (char *)np;
		hit = c->n ? bsearch(&key, c->p, c->n, sizeof *c->p, by_path) : NULL;
		if (!hit) {
			free(keep);
			return cof_error(err, COF_EVALIDATION, "'paths' names '%.200s', which %s did "
					 "not change", np, what);
		}
		keep[hit - c->p] = 1;
	}
	for (i = 0; i < c->n; i++) {
		if (!keep[i]) {
			free(c->p[i].path);
			continue;
		}
		c->p[k] = c->p[i];
		r->lo[k] = r->lo[i];
		r->hi[k++] = r->hi[i];
	}
	c->n = k;
	free(keep);
	return 0;
}

static int revert_once(merge_ctx *c, cof_store *st, const char *org, const char *vol,
		       json_t *body, json_t **out, cof_err *err)
{
	cof_change_filter f = {.run_id = cof_json_str(body, "runId"),
			       .call_id = cof_json_str(body, "callId")};
	rv_read r = {.c = c};
	char what[200];
	cof_view at;
	int64_t lo = INT64_MAX;
	int rc = -1;

	ctx_reset(c);
	c->cap = 0;
	if (cof_view_open(st, org, vol, NULL, &c->ours, err))
		return -1;
	if (f.run_id)
		snprintf(what, sizeof what, "run '%.100s'", f.run_id);
	else if (f.call_id)
		snprintf(what, sizeof what, "call '%.100s'", f.call_id);
	else {
		r.only_seq = cof_json_i64(body, "seq");
		snprintf(what, sizeof what, "seq %lld", (long long)r.only_seq);
		if (r.only_seq < 1 || r.only_seq > c->ours.seq)
			return cof_error(err, COF_EVALIDATION, "'seq' must be a seq of '%s' from 1 "
					 "to %lld", vol, (long long)c->ours.seq);
	}
	if ((r.only_seq > 0 && r.only_seq <= c->ours.vol.history_from)) {
		cof_error(err, COF_EGONE, "the changes of '%s' before seq %lld are no longer kept",
			  vol, (long long)c->ours.vol.history_from);
		cof_err_set(err, "oldest", json_integer(c->ours.vol.history_from));
		return -1;
	}
	if (rv_paths(c, &r, r.only_seq > 0 ? NULL : &f, what, err) ||
	    rv_only(c, &r, json_object_get(body, "paths"), what, err))
		goto out;
	if (!c->n) {
		cof_error(err, COF_ENOTFOUND, "%s changed nothing in '%s' that the changes feed "
			  "still holds", what, vol);
		goto out;
	}
	for (size_t i = 0; i < c->n; i++)
		if (r.lo[i] < lo)
			lo = r.lo[i];
	/* what the paths were before: 410 when that history may be gone */
	at = c->ours;
	if (cof_view_at(st, &at, lo - 1, err))
		goto out;
	for (size_t i = 0; i < c->n; i++) {
		mpath *p = &c->p[i];
		if ((p->hb = cof_meta_entry_get(st->meta, c->ours.vno, p->path, r.hi[i], &p->b,
						err)) < 0 ||
		    (p->ho = cof_meta_entry_get(st->meta, c->ours.vno, p->path, c->ours.seq, &p->o,
						err)) < 0 ||
		    (p->ht = cof_meta_entry_get(st->meta, c->ours.vno, p->path, r.lo[i] - 1,
						&p->t, err)) < 0)
			goto out;
		if (decide(c, p, err))
			goto out;
	}
	rc = settle_and_land(c, st, body, out, err);
out:
	free(r.lo);
	free(r.hi);
	return rc;
}

int cof_volume_revert(cof_store *st, const char *org, const char *vol, json_t *body,
		      const cof_by *by, json_t **out, cof_err *err)
{
	merge_ctx c = {.st = st, .if_seq = -1, .revert = 1, .by = by ? *by : (cof_by){0}};
	int64_t seq;
	int n;

	if (cof_json_check(body, revert_fields, err))
		return -1;
	n = !!cof_json_str(body, "runId") + !!cof_json_str(body, "callId") +
	    (cof_json_int(body, "seq", &seq) == 1);
	if (n != 1)
		return cof_error(err, COF_EVALIDATION, "give exactly one of 'runId', 'callId' and "
				 "'seq'");
	if (json_object_get(body, "resolutions") &&
	    check_resolutions(json_object_get(body, "resolutions"), err))
		return -1;
	return decided(revert_once, &c, st, org, vol, body, out, err);
}
