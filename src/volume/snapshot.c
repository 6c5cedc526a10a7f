/*
 * snapshot.c — snapshots (a volume at a seq, or a set of given files), forks and
 * restore. A volume snapshot is metadata only: (volume, seq) plus pin and
 * labels, so its cost does not grow with the volume.
 */
#include <stdlib.h>
#include <string.h>
#include "hooks/hooks.h"
#include "volume/volume.h"

int cof_labels_check(json_t *labels, cof_err *err)
{
	const char *k;
	json_t *v;

	if (!json_is_object(labels))
		return cof_error(err, COF_EVALIDATION, "'labels' must be an object of strings");
	if (json_object_size(labels) > COF_LABELS_MAX)
		return cof_error(err, COF_EVALIDATION, "'labels' has %zu labels; the limit is %d",
				 json_object_size(labels), COF_LABELS_MAX);
	json_object_foreach(labels, k, v) {
		size_t kn = strlen(k);
		if (kn == 0 || kn > COF_LABEL_KEY_MAX || strchr(k, ':'))
			return cof_error(err, COF_EVALIDATION,
					 "label key '%.70s' must be 1 to %d bytes without ':'", k,
					 COF_LABEL_KEY_MAX);
		if (!json_is_string(v))
			return cof_error(err, COF_EVALIDATION, "label '%s' must be a string", k);
		if (json_string_length(v) > COF_LABEL_VALUE_MAX)
			return cof_error(err, COF_EVALIDATION,
					 "label '%s' is %zu bytes; the limit is %d bytes", k,
					 json_string_length(v), COF_LABEL_VALUE_MAX);
	}
	return 0;
}

/* ---- the snapshot rules: the pinned limit and the retention of unpinned
 * ones, decided in one cof_meta_snapshot_change (the volume's snapshots have
 * one writer at a time until the commit) from the store's primitives. */

/* 0 when the volume has room for one more pinned snapshot, else 409. */
static int pinned_room(cof_snaptx *tx, int max_pinned, cof_err *err)
{
	int64_t n;

	if (cof_meta_snapshot_count(tx, 1, &n, err))
		return -1;
	if (n >= max_pinned)
		return cof_error(err, COF_ECONFLICT,
				 "the volume has %lld pinned snapshots; the limit is %d",
				 (long long)n, max_pinned);
	return 0;
}

/* Drops the oldest unpinned snapshots past `keep`; the last one dropped goes
 * to `dropped`. */
static int retain(cof_snaptx *tx, int keep, char dropped[48], cof_err *err)
{
	cof_snaprow *old = cof_malloc(sizeof *old);   /* labels are large */
	int64_t n;
	int rc = old ? cof_meta_snapshot_count(tx, 0, &n, err)
		     : cof_error(err, COF_EINTERNAL, "out of memory");

	for (; !rc && n > keep; n--) {
		int found = cof_meta_snapshot_oldest(tx, old, err);
		if (found <= 0)
			rc = found < 0 ? -1 : cof_error(err, COF_EINTERNAL,
							"retaining snapshots: none to drop");
		else if (!(rc = cof_meta_snapshot_drop(tx, old, err)))
			memcpy(dropped, old->id, 48);
	}
	free(old);
	return rc;
}

/* What snapshot_add is given. */
typedef struct {
	cof_snaprow *s;
	int keep_unpinned, max_pinned;
	char *dropped;
} add_ctx;

/* cof_snaptx_fn: the pinned limit, the row, then retention. */
static int snapshot_add(cof_snaptx *tx, void *ctx, cof_err *err)
{
	add_ctx *a = ctx;

	if (a->s->pinned && pinned_room(tx, a->max_pinned, err))
		return -1;
	if (cof_meta_snapshot_insert(tx, a->s, err))
		return -1;
	return retain(tx, a->keep_unpinned, a->dropped, err);
}

int cof_snapshot_add_row(cof_meta *m, cof_snaprow *s, int keep_unpinned, int max_pinned,
			 char dropped[48], cof_err *err)
{
	add_ctx a = { s, keep_unpinned, max_pinned, dropped };

	dropped[0] = '\0';
	return cof_meta_snapshot_change(m, s->vno, snapshot_add, &a, err);
}

/* What snapshot_set is given. */
typedef struct {
	const char *sid, *labels;
	int pinned, max_pinned;
} set_ctx;

/* cof_snaptx_fn: pinning one not pinned takes room under the limit. */
static int snapshot_set(cof_snaptx *tx, void *ctx, cof_err *err)
{
	set_ctx *a = ctx;
	cof_snaprow *s = cof_malloc(sizeof *s);
	int rc = s ? cof_meta_snapshot_load(tx, a->sid, s, err)
		   : cof_error(err, COF_EINTERNAL, "out of memory");

	if (!rc && a->pinned == 1 && !s->pinned)
		rc = pinned_room(tx, a->max_pinned, err);
	if (!rc)
		rc = cof_meta_snapshot_set(tx, a->sid, a->pinned < 0 ? s->pinned : a->pinned,
					   a->labels ? a->labels : s->labels, err);
	free(s);
	return rc;
}

int cof_snapshot_set_row(cof_meta *m, int64_t vno, const char *sid, int pinned,
			 const char *labels, int max_pinned, cof_err *err)
{
	set_ctx a = { sid, labels, pinned, max_pinned };

	return cof_meta_snapshot_change(m, vno, snapshot_set, &a, err);
}

static json_t *snapshot_json(const cof_volrow *v, const cof_snaprow *s)
{
	json_t *labels = json_loads(s->labels, 0, NULL);

	return json_pack("{s:s, s:s, s:I, s:b, s:o, s:I, s:I, s:o}", "id", s->id, "volumeId",
			 v->id, "seq", (json_int_t)s->seq, "pinned", s->pinned, "labels",
			 labels ? labels : json_object(), "files", (json_int_t)s->files,
			 "bytes", (json_int_t)s->bytes, "createdAt", cof_json_time(s->created_at));
}

/* ------------------------------------------------- snapshot of given files */

typedef struct given_file {
	const char *path;
	unsigned char *data;
	size_t len;
} given_file;

typedef struct given {
	given_file *f;
	size_t n;
} given;

static int given_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	for (size_t i = 0; i < l->nfiles; i++) {
		cof_land_file *f = &l->files[i];
		if (cof_txn_write(tx, f->path, f->sha256, f->size, f->type, f->inl, err))
			return -1;
	}
	return 0;
}

/* Decodes and checks every given file before anything is stored. */
static int given_parse(json_t *files, given *g, cof_err *err)
{
	const char *path;
	json_t *val;
	size_t total = 0;

	if (json_object_size(files) > COF_READALL_FILES)
		return cof_error(err, COF_ETOOLARGE, "'files' has %zu files; the limit is %d",
				 json_object_size(files), COF_READALL_FILES);
	g->f = cof_calloc(json_object_size(files) + 1, sizeof *g->f);
	json_object_foreach(files, path, val) {
		given_file *f = &g->f[g->n++];
		if (cof_path_check(path, strlen(path), "a path in 'files'", &f->path, err))
			return -1;
		/* "a" and "/a" are one path. */
		for (size_t k = 0; k + 1 < g->n; k++)
			if (!strcmp(g->f[k].path, f->path))
				return cof_error(err, COF_EVALIDATION,
						 "'files' names '%.200s' twice", f->path);
		if (json_is_string(val)) {
			f->len = json_string_length(val);
			f->data = cof_malloc(f->len + 1);
			if (f->data)
				memcpy(f->data, json_string_value(val), f->len);
		} else if (json_is_object(val) && json_object_size(val) == 1 &&
			   json_is_string(json_object_get(val, "data"))) {
			json_t *d = json_object_get(val, "data");
			if (cof_base64_decode(json_string_value(d), json_string_length(d), &f->data,
					      &f->len))
				return cof_error(err, COF_EVALIDATION,
						 "'files.%.200s.data' is not valid base64", path);
		} else {
			return cof_error(err, COF_EVALIDATION,
					 "'files.%.200s' must be a string or {\"data\": base64}", path);
		}
		if (!f->data)
			return cof_error(err, COF_EINTERNAL, "out of memory");
		total += f->len;
		if (total > (size_t)COF_READALL_BYTES)
			return cof_error(err, COF_ETOOLARGE,
					 "'files' holds over 16 MiB; the limit is 16 MiB");
	}
	return 0;
}

static void given_release(given *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->f[i].data);
	free(g->f);
}

/* Stores the given files in a hidden volume; the snapshot points at it. */
static int given_store(cof_store *st, const cof_volrow *v, json_t *files, cof_snaprow *s,
		       json_t *contents, cof_err *err)
{
	given g = {0};
	cof_volrow h = {0};
	cof_landing l = {.vol = &h, .apply = given_apply, .quiet = 1};
	int rc = -1;

	if (given_parse(files, &g, err))
		goto out;
	if (!(l.files = cof_calloc(g.n + 1, sizeof *l.files))) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < g.n; i++)
		l.files[l.nfiles++] = (cof_land_file){.kind = COF_LAND_MEMORY, .path = g.f[i].path,
						      .data = g.f[i].data, .len = g.f[i].len};
	cof_id_new("vhid_", h.id, sizeof h.id);
	snprintf(h.org, sizeof h.org, "%s", v->org);
	snprintf(h.name, sizeof h.name, "files of a snapshot of %s", v->id);
	h.capacity = h.ceiling = COF_MAX_CEILING;
	h.created_at = cof_now();
	h.hidden = 1;
	if (cof_meta_volume_add(st->meta, &h, err))
		goto out;
	/* the hidden volume is nobody's to watch: quiet */
	if (cof_land(st, &l, err)) {
		cof_err e2 = {0};
		cof_meta_volume_delete(st->meta, h.vno, &e2);
		cof_err_clear(&e2);
		goto out;
	}
	s->src_vno = h.vno;
	s->seq = l.seq;
	s->files = (int64_t)g.n;
	s->bytes = 0;
	for (size_t i = 0; i < g.n; i++) {
		s->bytes += (int64_t)g.f[i].len;
		json_array_append_new(contents, json_pack("{s:s, s:s}", "path", g.f[i].path,
							  "sha256", l.files[i].sha256));
	}
	rc = 0;
out:
	free(l.files);
	given_release(&g);
	return rc;
}

/* ------------------------------------------------------------- snapshots */

static const cof_jfield snap_fields[] = {
	{"pinned", COF_JBOOL, 0}, {"labels", COF_JOBJ, 0}, {"files", COF_JOBJ, 0},
	{NULL, 0, 0}};

int cof_snapshot_create(cof_store *st, const char *org, const char *vol, json_t *body,
			json_t **out, cof_err *err)
{
	cof_volrow v;
	cof_snaprow *s = cof_calloc(1, sizeof *s);
	json_t *labels, *files, *contents = NULL;
	char dropped[48];
	int rc = -1;

	if (!s)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (cof_json_check(body, snap_fields, err))
		goto out;
	labels = body ? json_object_get(body, "labels") : NULL;
	files = body ? json_object_get(body, "files") : NULL;
	if ((labels && !json_is_null(labels) && cof_labels_check(labels, err)) ||
	    cof_meta_volume_get(st->meta, org, vol, &v, err))
		goto out;
	char *ltxt = labels && json_is_object(labels)
			     ? json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	snprintf(s->labels, sizeof s->labels, "%s", ltxt ? ltxt : "{}");
	free(ltxt);
	cof_id_new("snap_", s->id, sizeof s->id);
	s->vno = v.vno;
	s->src_vno = v.vno;
	s->seq = v.seq;
	s->files = v.files;
	s->bytes = v.bytes;
	s->pinned = cof_json_bool(body, "pinned", 0);
	s->created_at = cof_now();
	if (files && json_is_object(files)) {
		contents = json_array();
		if (given_store(st, &v, files, s, contents, err))
			goto out;
	}
	if (cof_snapshot_add_row(st->meta, s, COF_SNAP_KEEP_UNPINNED, COF_SNAP_MAX_PINNED,
				 dropped, err)) {
		if (s->src_vno != v.vno) {
			cof_err e2 = {0};
			cof_meta_volume_delete(st->meta, s->src_vno, &e2);
			cof_err_clear(&e2);
		}
		goto out;
	}
	*out = snapshot_json(&v, s);
	if (contents) {
		json_object_set_new(*out, "contents", contents);
		contents = NULL;
	}
	if (dropped[0])
		json_object_set_new(*out, "dropped", json_string(dropped));
	cof_hooks_emit(st, org, "snapshot.created", v.id, NULL,
		       json_pack("{s:s, s:O}", "volumeId", v.id, "snapshot", *out));
	rc = 0;
out:
	json_decref(contents);
	free(s);
	return rc;
}

typedef struct list_ctx {
	const cof_volrow *v;
	const char *const *labels;
	size_t nlabels;
	json_t *list;
} list_ctx;

/* True when snapshot labels (JSON text) hold every "k:v" filter. */
static int labels_match(const char *ltxt, const char *const *filters, size_t n)
{
	json_t *l;
	int ok = 1;

	if (n == 0)
		return 1;
	if (!(l = json_loads(ltxt, 0, NULL)))
		return 0;
	for (size_t i = 0; i < n && ok; i++) {
		const char *colon = strchr(filters[i], ':');
		char key[COF_LABEL_KEY_MAX + 1];
		size_t kn = colon ? (size_t)(colon - filters[i]) : 0;
		if (!colon || kn > COF_LABEL_KEY_MAX) {
			ok = 0;
			break;
		}
		memcpy(key, filters[i], kn);
		key[kn] = '\0';
		const char *val = json_string_value(json_object_get(l, key));
		ok = val && !strcmp(val, colon + 1);
	}
	json_decref(l);
	return ok;
}

static int list_add(void *arg, const cof_snaprow *s)
{
	list_ctx *x = arg;

	if (labels_match(s->labels, x->labels, x->nlabels))
		json_array_append_new(x->list, snapshot_json(x->v, s));
	return 0;
}

int cof_snapshot_list(cof_store *st, const char *org, const char *vol,
		      const char *const *labels, size_t nlabels, json_t **out,
		      cof_err *err)
{
	cof_volrow v;
	list_ctx x = {.v = &v, .labels = labels, .nlabels = nlabels};

	for (size_t i = 0; i < nlabels; i++)
		if (!strchr(labels[i], ':'))
			return cof_error(err, COF_EVALIDATION,
					 "'label' must be key:value (got '%.80s')", labels[i]);
	if (cof_meta_volume_get(st->meta, org, vol, &v, err))
		return -1;
	x.list = json_array();
	if (cof_meta_snapshot_list(st->meta, v.vno, list_add, &x, err)) {
		json_decref(x.list);
		return -1;
	}
	*out = json_pack("{s:o}", "snapshots", x.list);
	return 0;
}

int cof_snapshot_get(cof_store *st, const char *org, const char *vol, const char *sid,
		     json_t **out, cof_err *err)
{
	cof_volrow v;
	cof_snaprow *s = cof_malloc(sizeof *s);
	int rc = -1;

	if (!s)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (!cof_meta_volume_get(st->meta, org, vol, &v, err) &&
	    !cof_meta_snapshot_get(st->meta, v.vno, sid, s, err)) {
		*out = snapshot_json(&v, s);
		rc = 0;
	}
	free(s);
	return rc;
}

static const cof_jfield patch_fields[] = {
	{"pinned", COF_JBOOL, 0}, {"labels", COF_JOBJ, 0}, {NULL, 0, 0}};

int cof_snapshot_patch(cof_store *st, const char *org, const char *vol,
		       const char *sid, json_t *body, json_t **out, cof_err *err)
{
	cof_volrow v;
	json_t *labels;
	char *ltxt = NULL;
	int pinned = -1, rc;

	if (cof_json_check(body, patch_fields, err))
		return -1;
	labels = body ? json_object_get(body, "labels") : NULL;
	if (labels && json_is_null(labels))
		labels = NULL;
	if (labels && cof_labels_check(labels, err))
		return -1;
	if (body && json_is_boolean(json_object_get(body, "pinned")))
		pinned = cof_json_bool(body, "pinned", 0);
	if (labels && !(ltxt = json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	rc = cof_meta_volume_get(st->meta, org, vol, &v, err) ||
	     cof_snapshot_set_row(st->meta, v.vno, sid, pinned, ltxt, COF_SNAP_MAX_PINNED, err);
	free(ltxt);
	return rc ? -1 : cof_snapshot_get(st, org, vol, sid, out, err);
}

int cof_snapshot_delete(cof_store *st, const char *org, const char *vol,
			const char *sid, int force, cof_err *err)
{
	cof_volrow v;
	cof_snaprow *s = cof_malloc(sizeof *s);
	int rc = -1;

	if (!s)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (cof_meta_volume_get(st->meta, org, vol, &v, err) ||
	    cof_meta_snapshot_get(st->meta, v.vno, sid, s, err))
		goto out;
	if (s->pinned && !force) {
		cof_error(err, COF_ECONFLICT,
			  "snapshot '%s' is pinned; unpin it or delete with ?force=true", sid);
		goto out;
	}
	rc = cof_meta_snapshot_delete(st->meta, v.vno, sid, err);
out:
	free(s);
	return rc;
}
