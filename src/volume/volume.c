/*
 * volume.c — volumes: create (idempotent), get, batch get, delete; the view
 * that every read goes through; capacity growth toward the ceiling.
 */
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include "volume/volume.h"

json_t *cof_volume_json(const cof_volrow *v)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "id", v->id, "name",
			 v->name, "seq", (json_int_t)v->seq, "files", (json_int_t)v->files,
			 "bytes", (json_int_t)v->bytes, "capacity", (json_int_t)v->capacity,
			 "ceiling", (json_int_t)v->ceiling, "createdAt",
			 cof_json_time(v->created_at));
}

json_t *cof_entry_json(const cof_entry *e)
{
	return json_pack("{s:s, s:I, s:I, s:s, s:s, s:o}", "path", e->path, "size",
			 (json_int_t)e->size, "version", (json_int_t)e->version,
			 "contentType", e->ctype, "sha256", e->sha256, "updatedAt",
			 cof_json_time(e->updated_at));
}

int cof_view_open(cof_store *st, const char *org, const char *vol, const char *snapshot,
		  cof_view *out, cof_err *err)
{
	memset(out, 0, sizeof *out);
	if (!vol || !*vol)
		return cof_error(err, COF_EVALIDATION, "volume id is missing");
	if (cof_meta_volume_get(st->meta, org, vol, &out->vol, err))
		return -1;
	out->vno = out->vol.vno;
	out->seq = out->vol.seq;
	if (snapshot && *snapshot) {
		cof_snaprow *s = cof_malloc(sizeof *s);
		int rc = cof_meta_snapshot_get(st->meta, out->vol.vno, snapshot, s, err);
		if (!rc) {
			out->vno = s->src_vno;
			out->seq = s->seq;
			out->snapshot = 1;
		}
		free(s);
		return rc;
	}
	return 0;
}

int cof_view_at(cof_store *st, cof_view *view, int64_t seq, cof_err *err)
{
	int64_t oldest = 0;

	if (seq < 0)
		return 0;
	if (view->snapshot)
		return cof_error(err, COF_EVALIDATION, "'seq' and 'snapshot' cannot be given "
				 "together: a snapshot is read at its own seq");
	if (seq > view->vol.seq)
		return cof_error(err, COF_EVALIDATION, "'seq' %lld is past the seq of volume '%s' (%lld)",
				 (long long)seq, view->vol.id, (long long)view->vol.seq);
	if (cof_meta_history_kept(st->meta, view->vno, cof_now() - st->opts.gc_grace_seconds,
				  &oldest, err))
		return -1;
	if (seq < oldest && seq < view->vol.seq) {
		cof_error(err, COF_EGONE, "volume '%s' is no longer kept as it was at seq %lld: "
			  "the oldest seq still read is %lld", view->vol.id, (long long)seq,
			  (long long)(oldest < view->vol.seq ? oldest : view->vol.seq));
		cof_err_set(err, "oldest", json_integer(oldest < view->vol.seq ? oldest
								 : view->vol.seq));
		return -1;
	}
	view->seq = seq;
	view->at = 1;
	return 0;
}

int cof_ceiling_error(const cof_volrow *v, int64_t bytes, cof_err *err)
{
	char a[32], b[32];

	cof_size_fmt(bytes, a, sizeof a);
	cof_size_fmt(v->ceiling, b, sizeof b);
	cof_error(err, COF_EVALIDATION,
		  "the write would bring volume '%s' to %s (%lld bytes); its ceiling is %s "
		  "(%lld bytes)", v->id, a, (long long)bytes, b, (long long)v->ceiling);
	cof_err_set(err, "ceiling", json_integer(v->ceiling));
	return -1;
}

int cof_volume_fit(cof_txn *tx, cof_err *err)
{
	cof_volrow *v = cof_txn_volume(tx);

	if (v->bytes > v->ceiling)
		return cof_ceiling_error(v, v->bytes, err);
	/* Grow before the volume is three quarters full, doubling, never past the
	 * ceiling. */
	while (v->bytes > v->capacity / 4 * 3 && v->capacity < v->ceiling)
		v->capacity = v->capacity > v->ceiling / 2 ? v->ceiling : v->capacity * 2;
	return 0;
}

static int stop_at_first(void *ctx, const cof_entry *e)
{
	*(int *)ctx = 1;
	return 1;
}

int cof_volume_path_free(cof_txn *tx, const char *path, cof_err *err)
{
	cof_buf b = COF_BUF_INIT;
	cof_entry *e = cof_malloc(sizeof *e);
	int found = 0, rc = -1;

	if (!e || cof_buf_adds(&b, path) || cof_buf_add(&b, "/", 1)) {
		free(e);
		cof_buf_release(&b);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	/* A file may not sit under another file... */
	for (size_t i = 0; i + 1 < b.len; i++) {
		if (b.data[i] != '/')
			continue;
		b.data[i] = '\0';
		int r = cof_txn_get(tx, b.data, e, err);
		if (r != 0) {
			if (r > 0)
				cof_error(err, COF_ECONFLICT,
					  "'%.200s' is a file, so '%.200s' cannot be made under it",
					  b.data, path);
			goto out;
		}
		b.data[i] = '/';
	}
	/* ...nor take the name of a folder. */
	if (cof_txn_list(tx, b.data, stop_at_first, &found, err))
		goto out;
	if (found) {
		cof_error(err, COF_ECONFLICT, "'%.200s' is a folder; a file cannot take its name",
			  path);
		goto out;
	}
	rc = 0;
out:
	free(e);
	cof_buf_release(&b);
	return rc;
}

int cof_items_add(void *ctx, const cof_entry *e)
{
	cof_items *it = ctx;

	if (it->glob && !cof_glob_match(it->glob, e->path))
		return 0;
	if (it->max && it->n >= it->max) {
		it->over = 1;
		return 1;
	}
	if (it->n == it->cap) {
		size_t cap = it->cap ? it->cap * 2 : 256;
		cof_item *v = cof_realloc(it->v, cap * sizeof *v);
		it->v = v;
		it->cap = cap;
	}
	cof_item *x = &it->v[it->n];
	if (!(x->path = cof_strdup(e->path))) {
		it->over = -1;
		return 1;
	}
	x->size = e->size;
	x->version = e->version;
	x->updated_at = e->updated_at;
	memcpy(x->sha256, e->sha256, sizeof x->sha256);
	memcpy(x->ctype, e->ctype, sizeof x->ctype);
	it->n++;
	it->bytes += e->size;
	return 0;
}

void cof_items_release(cof_items *it)
{
	for (size_t i = 0; i < it->n; i++)
		free(it->v[i].path);
	free(it->v);
	it->v = NULL;
	it->n = it->cap = 0;
}

/* ---------------------------------------------------------------- create */

static const cof_jfield create_fields[] = {
	{"name", COF_JSTR, 1}, {"ceiling", COF_JINT, 0}, {NULL, 0, 0}};

/* Idempotent creates with one key must not race into two volumes. */
static pthread_mutex_t create_mu = PTHREAD_MUTEX_INITIALIZER;

static int volume_new(cof_store *st, const char *org, json_t *body, cof_volrow *v,
		      cof_err *err)
{
	const char *name;
	int64_t ceiling = COF_DEFAULT_CEILING;

	if (cof_json_check(body, create_fields, err))
		return -1;
	name = cof_json_str(body, "name");
	size_t n = strlen(name);
	if (n == 0 || n > 255 || !cof_utf8_valid(name, n))
		return cof_error(err, COF_EVALIDATION,
				 "'name' must be 1 to 255 bytes of UTF-8 (it is %zu bytes)", n);
	if (cof_json_int(body, "ceiling", &ceiling) &&
	    (ceiling < 1 || ceiling > COF_MAX_CEILING))
		return cof_error(err, COF_EVALIDATION,
				 "'ceiling' must be between 1 and %lld bytes (1 TiB)",
				 (long long)COF_MAX_CEILING);
	memset(v, 0, sizeof *v);
	cof_id_new("vol_", v->id, sizeof v->id);
	snprintf(v->org, sizeof v->org, "%s", org);
	snprintf(v->name, sizeof v->name, "%s", name);
	v->ceiling = ceiling;
	v->capacity = ceiling < COF_DEFAULT_CAPACITY ? ceiling : COF_DEFAULT_CAPACITY;
	v->created_at = cof_now();
	return cof_meta_volume_add(st->meta, v, err);
}

int cof_volume_create(cof_store *st, const char *org, json_t *body,
		      const cof_idem *idem, json_t **out, int *created, cof_err *err)
{
	cof_volrow v;
	char *prev = NULL;
	int rc;

	*created = 0;
	if (!idem || !idem->key || !*idem->key) {
		if (volume_new(st, org, body, &v, err))
			return -1;
		*created = 1;
		*out = cof_volume_json(&v);
		return 0;
	}
	pthread_mutex_lock(&create_mu);
	rc = cof_idem_lookup(st, org, idem, "POST /v1/volumes", body, &prev, err);
	if (rc == 1) {
		pthread_mutex_unlock(&create_mu);
		rc = cof_volume_get(st, org, prev, out, err);
		free(prev);
		return rc;
	}
	if (rc == 0 && (rc = volume_new(st, org, body, &v, err)) == 0)
		rc = cof_idem_record(st, org, idem, "POST /v1/volumes", body, v.id, err);
	pthread_mutex_unlock(&create_mu);
	if (rc)
		return -1;
	*created = 1;
	*out = cof_volume_json(&v);
	return 0;
}

int cof_volume_get(cof_store *st, const char *org, const char *id, json_t **out,
		   cof_err *err)
{
	cof_volrow v;

	if (cof_meta_volume_get(st->meta, org, id, &v, err))
		return -1;
	*out = cof_volume_json(&v);
	return 0;
}

int cof_volume_get_many(cof_store *st, const char *org, const char *ids,
			json_t **out, cof_err *err)
{
	json_t *list;
	size_t count = 1;

	if (!ids || !*ids)
		return cof_error(err, COF_EVALIDATION, "'ids' is required (comma-separated)");
	for (const char *p = ids; *p; p++)
		count += *p == ',';
	if (count > 50)
		return cof_error(err, COF_EVALIDATION,
				 "'ids' has %zu ids; the limit is 50", count);
	list = json_array();
	for (const char *p = ids; *p;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char id[64];
		cof_volrow v;
		cof_err miss = {0};
		if (n > 0 && n < sizeof id) {
			memcpy(id, p, n);
			id[n] = '\0';
			if (cof_meta_volume_get(st->meta, org, id, &v, &miss) == 0)
				json_array_append_new(list, json_pack(
					"{s:s, s:s, s:I, s:I, s:I}", "id", v.id, "name",
					v.name, "seq", (json_int_t)v.seq, "files",
					(json_int_t)v.files, "bytes", (json_int_t)v.bytes));
			else if (miss.code != COF_ENOTFOUND) {
				*err = miss;
				json_decref(list);
				return -1;
			}
			cof_err_clear(&miss);
		}
		p += n + (e ? 1 : 0);
	}
	*out = json_pack("{s:o}", "volumes", list);
	return 0;
}

/* ---------------------------------------------------------------- listing */

#define VOLUME_PAGE_MAX 1000

typedef struct vlist {
	json_t *arr;
	cof_volrow last;  /* the last row taken (for the cursor) */
	int64_t n, limit;
	int more;
} vlist;

static int vlist_add(void *ctx, const cof_volrow *v)
{
	vlist *l = ctx;

	if (l->n == l->limit) {
		l->more = 1;
		return 1;
	}
	json_array_append_new(l->arr, json_pack(
		"{s:s, s:s, s:I, s:I, s:I, s:o}", "id", v->id, "name", v->name, "seq",
		(json_int_t)v->seq, "files", (json_int_t)v->files, "bytes",
		(json_int_t)v->bytes, "createdAt", cof_json_time(v->created_at)));
	l->last = *v;
	l->n++;
	return 0;
}

/* Reads a cursor (base64url of ["name","id"]) into name and id. */
static int cursor_parse(const char *cursor, char *name, size_t namesz, char *id,
			size_t idsz, cof_err *err)
{
	unsigned char *raw = NULL;
	size_t len = 0;
	json_t *j = NULL;
	int ok = 0;

	if (cof_base64url_decode(cursor, strlen(cursor), &raw, &len) == 0)
		j = json_loadb((const char *)raw, len, 0, NULL);
	free(raw);
	if (json_is_array(j) && json_array_size(j) == 2 &&
	    json_is_string(json_array_get(j, 0)) && json_is_string(json_array_get(j, 1)) &&
	    strlen(json_string_value(json_array_get(j, 0))) < namesz &&
	    strlen(json_string_value(json_array_get(j, 1))) < idsz) {
		snprintf(name, namesz, "%s", json_string_value(json_array_get(j, 0)));
		snprintf(id, idsz, "%s", json_string_value(json_array_get(j, 1)));
		ok = 1;
	}
	json_decref(j);
	return ok ? 0 : cof_error(err, COF_EVALIDATION,
				  "query parameter 'cursor' is not one this server gave");
}

int cof_volume_list(cof_store *st, const char *org, const char *prefix,
		    const char *cursor, int64_t limit, json_t **out, cof_err *err)
{
	char name[256] = "", id[64] = "";
	vlist l = { .limit = limit ? limit : VOLUME_PAGE_MAX };

	if (l.limit < 1 || l.limit > VOLUME_PAGE_MAX)
		return cof_error(err, COF_EVALIDATION, "'limit' is %lld; it must be from 1 to %d",
				 (long long)limit, VOLUME_PAGE_MAX);
	if (prefix && strlen(prefix) > 255)
		return cof_error(err, COF_EVALIDATION,
				 "'prefix' is %zu bytes; volume names are at most 255", strlen(prefix));
	if (cursor && *cursor && cursor_parse(cursor, name, sizeof name, id, sizeof id, err))
		return -1;
	if (!(l.arr = json_array()))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	/* one row past the page tells whether there is another page */
	if (cof_meta_volume_list(st->meta, org, prefix, name, id, l.limit + 1, vlist_add, &l,
				 err)) {
		json_decref(l.arr);
		return -1;
	}
	*out = json_pack("{s:o}", "volumes", l.arr);
	if (l.more) {
		json_t *c = json_pack("[s, s]", l.last.name, l.last.id);
		char *text = c ? json_dumps(c, JSON_COMPACT) : NULL;
		char *enc = text ? cof_base64url_encode(text, strlen(text)) : NULL;
		if (enc)
			json_object_set_new(*out, "cursor", json_string(enc));
		free(enc);
		free(text);
		json_decref(c);
		if (!enc) {
			json_decref(*out);
			return cof_error(err, COF_EINTERNAL, "out of memory");
		}
	}
	return 0;
}

int cof_volume_delete(cof_store *st, const char *org, const char *id, cof_err *err)
{
	cof_volrow v;

	if (cof_meta_volume_get(st->meta, org, id, &v, err) ||
	    cof_meta_volume_delete(st->meta, v.vno, err))
		return -1;
	cof_store_changed(st, &v);
	return 0;
}
