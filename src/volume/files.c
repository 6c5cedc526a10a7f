/*
 * files.c — writing, reading, removing and moving files of a volume.
 *
 * A write streams the body into the blob store first (hashing as it goes),
 * then commits the metadata in one change; the precondition is checked inside
 * that change, so of many racing writers with one precondition exactly one
 * wins. Nothing is visible before the metadata commits.
 */
#include <ctype.h>
#include <magic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "volume/volume.h"

/* ---------------------------------------------------------- preconditions */

int cof_cond_parse_etag(const char *value, cof_cond *out, cof_err *err)
{
	const char *p = value;
	char *end;
	long long v;

	*out = (cof_cond){.kind = COF_COND_NONE};   /* the whole condition: `by` not said */
	while (*p == ' ')
		p++;
	if (p[0] == '*' && p[strspn(p + 1, " ") + 1] == '\0') {
		out->kind = COF_COND_EXISTS;
		out->version = 0;
		return 0;
	}
	if (!strncmp(p, "W/", 2))
		p += 2;
	int quoted = *p == '"';
	if (quoted)
		p++;
	if (!isdigit((unsigned char)*p))
		return cof_error(err, COF_EVALIDATION,
				 "If-Match must be a version like \"12\" (got '%.40s')", value);
	v = strtoll(p, &end, 10);
	if (quoted && *end++ != '"')
		return cof_error(err, COF_EVALIDATION,
				 "If-Match must be a version like \"12\" (got '%.40s')", value);
	while (*end == ' ')
		end++;
	if (*end || v < 0)
		return cof_error(err, COF_EVALIDATION,
				 "If-Match must be a version like \"12\" (got '%.40s')", value);
	out->kind = v == 0 ? COF_COND_ABSENT : COF_COND_VERSION;
	out->version = v;
	return 0;
}

/* Fills the 412 answer: the file's current {version, sha256}. */
static int cond_failed(cof_err *err, const char *path, const cof_entry *cur, int exists)
{
	if (exists)
		cof_error(err, COF_EPRECONDITION,
			  "file '%.200s' is at version %lld, not the one expected", path,
			  (long long)cur->version);
	else
		cof_error(err, COF_EPRECONDITION, "file '%.200s' does not exist", path);
	cof_err_set(err, "current",
		    exists ? json_pack("{s:I, s:s}", "version", (json_int_t)cur->version,
				       "sha256", cur->sha256)
			   : json_pack("{s:i, s:n}", "version", 0, "sha256"));
	return -1;
}

/* Checks `cond` against the live row; 0 when it holds. */
static int cond_check(cof_cond cond, const char *path, const cof_entry *cur, int exists,
		      cof_err *err)
{
	if (cond.kind == COF_COND_ABSENT && exists)
		return cond_failed(err, path, cur, exists);
	if (cond.kind == COF_COND_VERSION && (!exists || cur->version != cond.version))
		return cond_failed(err, path, cur, exists);
	if (cond.kind == COF_COND_EXISTS && !exists)
		return cond_failed(err, path, cur, exists);
	return 0;
}

/* ---------------------------------------------------------------- uploads */

int cof_upload_begin(cof_store *st, int64_t max_bytes, cof_upload **out, cof_err *err)
{
	cof_upload *up = cof_calloc(1, sizeof *up);

	if (!up)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	up->st = st;
	up->max = max_bytes;
	up->room = -1;
	*out = up;
	return 0;
}

int cof_upload_room(cof_upload *up, const char *org, const char *vol, const char *path,
		    int64_t declared, cof_err *err)
{
	const char *p;
	cof_entry *e;
	int r;

	if (!(up->vol = cof_malloc(sizeof *up->vol)) || !(e = cof_malloc(sizeof *e)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (cof_path_check(path, strlen(path), "path", &p, err) ||
	    cof_meta_volume_get(up->st->meta, org, vol, up->vol, err) ||
	    (r = cof_meta_entry_get(up->st->meta, up->vol->vno, p, -1, e, err)) < 0) {
		free(e);
		return -1;
	}
	/* an overwrite frees what the file holds now */
	up->room_base = up->vol->bytes - (r == 1 ? e->size : 0);
	up->room = up->vol->ceiling - up->room_base;
	free(e);
	if (up->room < 0)
		up->room = 0;
	if (declared > up->room)
		return cof_ceiling_error(up->vol, up->room_base + declared, err);
	return 0;
}

int cof_upload_write(cof_upload *up, const void *data, size_t len, cof_err *err)
{
	char a[32];

	if (up->max && up->size + (int64_t)len > up->max) {
		cof_size_fmt(up->max, a, sizeof a);
		return cof_error(err, COF_ETOOLARGE,
				 "the body is larger than the limit of %s (%lld bytes)", a,
				 (long long)up->max);
	}
	/* refused before the bytes are written anywhere: the blob store never
	 * holds more than the ceiling allows */
	if (up->room >= 0 && up->size + (int64_t)len > up->room)
		return cof_ceiling_error(up->vol, up->room_base + up->size + (int64_t)len, err);
	if (!up->w && up->headlen + len <= COF_INLINE_MAX) {
		if (len)
			memcpy(up->head + up->headlen, data, len);
		up->headlen += len;
		up->size += (int64_t)len;
		return 0;
	}
	if (!up->w && (up->st->blobs->begin(up->st->blobs, &up->w, err) ||
		       up->st->blobs->write(up->w, up->head, up->headlen, err)))
		return -1;
	if (up->st->blobs->write(up->w, data, len, err))
		return -1;
	up->size += (int64_t)len;
	return 0;
}

int64_t cof_upload_size(const cof_upload *up)
{
	return up->size;
}

void cof_upload_abort(cof_upload *up)
{
	if (!up)
		return;
	if (up->w)
		up->st->blobs->abort(up->w);
	free(up->vol);
	free(up);
}

/* ------------------------------------------------------------ content type */

static const struct { const char *ext, *type; } ext_types[] = {
	{"txt", "text/plain"}, {"md", "text/markdown"}, {"csv", "text/csv"},
	{"json", "application/json"}, {"html", "text/html"}, {"htm", "text/html"},
	{"css", "text/css"}, {"js", "text/javascript"}, {"mjs", "text/javascript"},
	{"xml", "application/xml"}, {"svg", "image/svg+xml"}, {"yaml", "application/yaml"},
	{"yml", "application/yaml"}, {"py", "text/x-python"}, {"c", "text/x-c"},
	{"h", "text/x-c"}, {"sh", "application/x-sh"}, {"ts", "text/typescript"},
	{"png", "image/png"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"},
	{"gif", "image/gif"}, {"webp", "image/webp"}, {"pdf", "application/pdf"},
	{"zip", "application/zip"}, {"gz", "application/gzip"}, {"tar", "application/x-tar"},
	{"wasm", "application/wasm"}, {"toml", "application/toml"}, {"log", "text/plain"},
};

static const char *type_by_name(const char *path)
{
	const char *base = strrchr(path, '/');
	const char *dot = strrchr(base ? base : path, '.');

	if (!dot || !dot[1])
		return NULL;
	for (size_t i = 0; i < sizeof ext_types / sizeof *ext_types; i++)
		if (!strcasecmp(dot + 1, ext_types[i].ext))
			return ext_types[i].type;
	return NULL;
}

/* 1 when the head reads as text: UTF-8 (a character cut at the end is fine),
 * no NUL, and no control character but tab, newlines, form feed and escape. */
static int looks_text(const unsigned char *p, size_t len)
{
	size_t cut = len;

	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r' &&
		    p[i] != '\f' && p[i] != 0x1b)
			return 0;
	/* a multi-byte character the head's end cut in two is still text */
	for (size_t k = 1; k <= 3 && k <= len; k++) {
		unsigned char c = p[len - k];
		if ((c & 0xc0) == 0x80)
			continue;
		size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		if (need > k)
			cut = len - k;
		break;
	}
	return cof_utf8_valid((const char *)p, cut);
}

/* libmagic's answers by the SHA-256 of the bytes it was given, so the same
 * bytes (a LICENSE in every package, a file written again or copied) are
 * read by libmagic once: its soft magic costs 0.15 ms for 2 bytes of text and
 * 1-1.3 ms for 4 KiB (dozens of case-blind searches over the whole head, one
 * top-level entry after another; bench/results.md, "Sniffing untyped files").
 * Process-wide: every store's handles load the same database with the same
 * flags (cof_store_magic_take: MAGIC_MIME_TYPE), and libmagic's answer for a
 * buffer depends on nothing else. Direct-mapped and bounded (4,096 slots,
 * 528 KB, each page touched only once a slot in it is used): a new answer
 * takes its slot from whatever was there; enough for a clone of a repository
 * of a few thousand untyped files to be sniffed once. */
#define SNIFF_SLOTS 4096
#define SNIFF_KEPT 64     /* longer answers (OOXML's 71 bytes) are answered, not kept */
#define SNIFF_TYPE 128    /* as cof_land_file's type: what a longer answer is cut to */

typedef struct sniff_slot {
	char key[65];              /* sha256 hex of the bytes; "" = empty slot */
	char type[SNIFF_KEPT];     /* libmagic's answer */
} sniff_slot;

static sniff_slot sniff_cache[SNIFF_SLOTS];
static pthread_mutex_t sniff_mu = PTHREAD_MUTEX_INITIALIZER;

static sniff_slot *sniff_slot_of(const char key[65])
{
	return &sniff_cache[strtoul((char[]){key[0], key[1], key[2], key[3], '\0'}, NULL, 16) %
			    SNIFF_SLOTS];
}

/* libmagic's answer for head[0..len) (len > 0) into type, or 0 when it has
 * none (no database). Asked once for the same bytes while their slot holds. */
static int sniff_bytes(cof_store *st, const void *head, size_t len, char type[SNIFF_TYPE])
{
	char key[65];
	sniff_slot *s = NULL;
	const char *got = NULL;
	void *magic;
	int hashed = !cof_sha256_hex(head, len, key);

	if (hashed) {
		s = sniff_slot_of(key);
		pthread_mutex_lock(&sniff_mu);
		if (!strcmp(s->key, key)) {
			memcpy(type, s->type, SNIFF_KEPT);
			pthread_mutex_unlock(&sniff_mu);
			return 1;
		}
		pthread_mutex_unlock(&sniff_mu);
	}
	if (!(magic = cof_store_magic_take(st)))
		return 0;
	got = magic_buffer(magic, head, len);
	if (got)   /* copied before the handle goes back: the answer lives in it */
		snprintf(type, SNIFF_TYPE, "%s", got);
	cof_store_magic_give(st, magic);
	if (got && hashed && strlen(type) < SNIFF_KEPT) {
		pthread_mutex_lock(&sniff_mu);
		memcpy(s->key, key, sizeof key);
		memcpy(s->type, type, SNIFF_KEPT);
		pthread_mutex_unlock(&sniff_mu);
	}
	return got != NULL;
}

void cof_sniff_type(cof_store *st, const char *path, const void *head, size_t len,
		    char *out, size_t outsz)
{
	const char *byname = type_by_name(path), *bybytes = NULL;
	char got[SNIFF_TYPE];

	/* Text with a name that says its type: the name wins for text (below),
	 * so libmagic (milliseconds of regex tests on text) is not asked. */
	if (byname && len && looks_text(head, len)) {
		snprintf(out, outsz, "%s", byname);
		return;
	}
	if (len && sniff_bytes(st, head, len, got))
		bybytes = got;
	/* Binary signatures (PNG, PDF, ...) win over the name; for text the name
	 * says more (libmagic calls JavaScript "text/x-c" and JSON "text/plain"). */
	int generic = !bybytes || !strncmp(bybytes, "text/", 5) ||
		      !strcmp(bybytes, "application/octet-stream") ||
		      !strncmp(bybytes, "inode/", 6) || !strcmp(bybytes, "application/x-empty");
	if (bybytes && !generic)
		snprintf(out, outsz, "%s", bybytes);
	else if (byname)
		snprintf(out, outsz, "%s", byname);
	else if (bybytes && !strncmp(bybytes, "text/", 5))
		snprintf(out, outsz, "%s", bybytes);
	else
		snprintf(out, outsz, "application/octet-stream");
}

/* ------------------------------------------------------------------- put */

typedef struct put_ctx {
	const char *path;
	cof_cond cond;
	int created;
} put_ctx;

static int put_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	put_ctx *p = l->ctx;
	cof_land_file *f = &l->files[0];
	cof_entry *cur = cof_malloc(sizeof *cur);
	int exists, rc = -1;

	if (!cur)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	exists = cof_txn_get(tx, p->path, cur, err);
	if (exists >= 0 && !cond_check(p->cond, p->path, cur, exists, err) &&
	    (exists || !cof_volume_path_free(tx, p->path, err)) &&
	    !cof_txn_write_s3(tx, p->path, f->sha256, f->size, f->type, f->inl, f->s3meta, err))
		rc = cof_volume_fit(tx, err);
	p->created = exists == 0;
	free(cur);
	return rc;
}

int cof_is_symlink(const char *ctype)
{
	size_t k = strlen(COF_SYMLINK_TYPE);

	return ctype && !strncasecmp(ctype, COF_SYMLINK_TYPE, k) &&
	       (!ctype[k] || ctype[k] == ';' || ctype[k] == ' ');
}

int cof_symlink_check(const void *target, size_t len, cof_err *err)
{
	if (len == 0)
		return cof_error(err, COF_EVALIDATION, "a symlink's target is empty");
	if (len > COF_SYMLINK_MAX)
		return cof_error(err, COF_EVALIDATION, "a symlink's target is %zu bytes; the "
				 "limit is %d", len, COF_SYMLINK_MAX);
	if (memchr(target, '\0', len))
		return cof_error(err, COF_EVALIDATION, "a symlink's target holds a NUL byte");
	/* listings and read-all carry it as JSON text, as paths are */
	if (!cof_utf8_valid(target, len))
		return cof_error(err, COF_EVALIDATION, "a symlink's target is not valid UTF-8");
	return 0;
}

int cof_file_put(cof_store *st, const char *org, const char *vol, const char *path,
		 cof_upload *up, const char *content_type, cof_cond cond,
		 json_t **out, int *created, cof_err *err)
{
	cof_volrow v;
	put_ctx p = {.cond = cond};
	cof_land_file f = {.kind = COF_LAND_UPLOAD, .up = up, .ctype = content_type,
			   .s3meta = cond.s3meta};
	cof_landing l = {.vol = &v, .files = &f, .nfiles = 1, .apply = put_apply, .ctx = &p,
			 .by = cond.by};

	if (!up)
		return cof_error(err, COF_EINTERNAL, "no upload");
	if (cof_path_check(path, strlen(path), "path", &p.path, err) ||
	    (content_type && cof_media_type_check(content_type, "Content-Type", err)) ||
	    /* a link's target is small: it is always in up->head */
	    (cof_is_symlink(content_type) &&
	     cof_symlink_check(up->head, up->w ? (size_t)COF_SYMLINK_MAX + 1 : up->headlen,
			       err)) ||
	    cof_meta_volume_get(st->meta, org, vol, &v, err)) {
		cof_upload_abort(up);
		return -1;
	}
	/* Early refusal of what can never fit; the exact check (an overwrite frees
	 * the old size) is made inside the change. */
	if (up->size > v.ceiling) {
		int64_t after = v.bytes + up->size;
		cof_upload_abort(up);
		return cof_ceiling_error(&v, after, err);
	}
	f.path = p.path;
	if (cof_land(st, &l, err))
		return -1;
	if (created)
		*created = p.created;
	*out = json_pack("{s:s, s:I, s:I, s:s, s:s, s:I}", "path", p.path, "version",
			 (json_int_t)l.seq, "size", (json_int_t)f.size, "contentType", f.type,
			 "sha256", f.sha256, "seq", (json_int_t)l.seq);
	return 0;
}

int cof_file_put_bytes(cof_store *st, const char *org, const char *vol,
		       const char *path, const void *data, size_t len,
		       const char *content_type, cof_cond cond, json_t **out,
		       int *created, cof_err *err)
{
	cof_upload *up = NULL;

	if (cof_upload_begin(st, 0, &up, err))
		return -1;
	if (cof_upload_write(up, data, len, err)) {
		cof_upload_abort(up);
		return -1;
	}
	return cof_file_put(st, org, vol, path, up, content_type, cond, out, created, err);
}

/* The same content named at another path (maybe of another volume): no
 * byte is read or stored again for content in the blob store; inline
 * content is small and written inline again (the same hash). */
int cof_file_copy(cof_store *st, const char *org, const char *from_vol, const char *from_path,
		  const char *vol, const char *path, const char *content_type, cof_cond cond,
		  json_t **out, cof_err *err)
{
	cof_volrow v;
	cof_file f = {0};
	put_ctx p = {.cond = cond};
	cof_land_file lf = {.kind = COF_LAND_KNOWN, .s3meta = cond.s3meta};
	char *src_s3 = NULL;
	cof_landing l = {.vol = &v, .files = &lf, .nfiles = 1, .apply = put_apply, .ctx = &p,
			 .held = 1, .by = cond.by};
	int rc;

	if (cof_path_check(path, strlen(path), "path", &p.path, err) ||
	    (content_type && cof_media_type_check(content_type, "Content-Type", err)) ||
	    cof_meta_volume_get(st->meta, org, vol, &v, err))
		return -1;
	/* held from the read of the source's row to the change naming its
	 * content again: no collector deletes it in between */
	cof_store_hold_content(st);
	if (cof_file_open(st, org, from_vol, from_path, NULL, &f, err)) {
		cof_store_release_content(st);
		return -1;
	}
	/* the same bytes: the source's S3 text (its MD5 still holds) goes along */
	if (!cond.s3meta) {
		if (cof_file_s3meta(st, org, from_vol, from_path, f.version, &src_s3, err)) {
			cof_store_release_content(st);
			cof_file_close(&f);
			return -1;
		}
		lf.s3meta = src_s3;
	}
	if (!f.reader) {
		lf.kind = COF_LAND_MEMORY;
		lf.data = f.data;
		lf.len = (size_t)f.size;
		lf.ctype = content_type ? content_type : f.content_type;
	} else {
		snprintf(lf.sha256, sizeof lf.sha256, "%s", f.sha256);
		lf.size = f.size;
		lf.ctype = content_type ? content_type : f.content_type;
	}
	lf.path = p.path;
	rc = cof_land(st, &l, err);
	cof_store_release_content(st);
	cof_file_close(&f);
	free(src_s3);
	if (rc)
		return -1;
	*out = json_pack("{s:s, s:I, s:I, s:s, s:s, s:I}", "path", p.path, "version",
			 (json_int_t)l.seq, "size", (json_int_t)lf.size, "contentType", lf.type,
			 "sha256", lf.sha256, "seq", (json_int_t)l.seq);
	return 0;
}

/* ------------------------------------------------------------------- read */

typedef struct s3metas {
	json_t *files;
	size_t i;
} s3metas;

/* cof_s3meta_fn: both in path order, so one pass matches them. */
static int s3metas_set(void *ctx, const char *path, const char *s3meta)
{
	s3metas *s = ctx;
	size_t n = json_array_size(s->files);

	for (; s->i < n; s->i++) {
		json_t *f = json_array_get(s->files, s->i);
		int d = strcmp(json_string_value(json_object_get(f, "path")) ?: "", path);
		if (d > 0)
			return 0;
		if (d == 0) {
			json_object_set_new(f, "s3meta", json_string(s3meta));
			s->i++;
			return 0;
		}
	}
	return 1;
}

int cof_file_s3metas(cof_store *st, const char *org, const char *vol, json_t *files,
		     cof_err *err)
{
	cof_view view;
	size_t n = json_array_size(files);
	s3metas s = {.files = files};

	if (!n)
		return 0;
	if (cof_view_open(st, org, vol, NULL, &view, err))
		return -1;
	if (!view.vol.base_vno)
		return cof_meta_s3meta_range(st->meta, view.vno,
			json_string_value(json_object_get(json_array_get(files, 0), "path")) ?: "",
			json_string_value(json_object_get(json_array_get(files, n - 1), "path")) ?: "",
			s3metas_set, &s, err);
	for (size_t i = 0; i < n; i++) { /* a fork's rows may be its parents' */
		json_t *f = json_array_get(files, i);
		const char *p = json_string_value(json_object_get(f, "path"));
		char *t = NULL;
		if (p && cof_meta_entry_s3meta(st->meta, view.vno, p, -1, &t, err) < 0)
			return -1;
		if (t)
			json_object_set_new(f, "s3meta", json_string(t));
		free(t);
	}
	return 0;
}

int cof_file_s3meta(cof_store *st, const char *org, const char *vol, const char *path,
		    int64_t version, char **out, cof_err *err)
{
	cof_view view;
	const char *p;

	*out = NULL;
	if (cof_path_check(path, strlen(path), "path", &p, err) ||
	    cof_view_open(st, org, vol, NULL, &view, err))
		return -1;
	return cof_meta_entry_s3meta(st->meta, view.vno, p, version, out, err) < 0 ? -1 : 0;
}

int cof_file_open(cof_store *st, const char *org, const char *vol, const char *path,
		  const char *snapshot, cof_file *out, cof_err *err)
{
	return cof_file_open_at(st, org, vol, path, snapshot, -1, out, err);
}

int cof_file_open_at(cof_store *st, const char *org, const char *vol, const char *path,
		     const char *snapshot, int64_t seq, cof_file *out, cof_err *err)
{
	cof_view view;
	cof_entry *e;
	const char *p;
	int r;

	memset(out, 0, sizeof *out);
	if (cof_path_check(path, strlen(path), "path", &p, err))
		return -1;
	if (!(e = cof_malloc(sizeof *e)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	/* the volume's row and the file's in one read transaction */
	int held = cof_meta_read_hold(st->meta);
	if (cof_view_open(st, org, vol, snapshot, &view, err) ||
	    cof_view_at(st, &view, seq, err)) {
		cof_meta_read_release(st->meta, held);
		free(e);
		return -1;
	}
	/* One query gives the row and, for small content, the bytes themselves. */
	r = cof_meta_entry_read(st->meta, view.vno, p, COF_VIEW_READ_SEQ(&view), e,
				&out->data, err);
	cof_meta_read_release(st->meta, held);
	if (r == 0)
		cof_error(err, COF_ENOTFOUND, "file '%.200s' not found%s", p,
			  view.snapshot ? " in that snapshot" : view.at ? " at that seq" : "");
	if (r == 1 && (out->data || !cof_content_reader(st, e->sha256, e->size, p, &out->reader,
							  err))) {
		out->version = e->version;
		out->size = e->size;
		/* A write may land between reading the seq and the row: the seq
		 * answered is never older than the version read. */
		out->vol_seq = view.seq > e->version ? view.seq : e->version;
		memcpy(out->sha256, e->sha256, sizeof out->sha256);
		snprintf(out->content_type, sizeof out->content_type, "%s", e->ctype);
		out->updated_at = e->updated_at;
		free(e);
		return 0;
	}
	free(out->data);
	out->data = NULL;
	free(e);
	return -1;
}

void cof_file_close(cof_file *f)
{
	if (!f)
		return;
	cof_blob_close(f->reader);
	f->reader = NULL;
	free(f->data);
	f->data = NULL;
}

int cof_file_read_at(const cof_file *f, int64_t off, void *buf, size_t len, size_t *got,
		     cof_err *err)
{
	*got = 0;
	if (f->reader)
		return cof_blob_read_at(f->reader, off, buf, len, got, err);
	if (off < 0 || off >= f->size || !f->data)
		return 0;
	*got = (size_t)(f->size - off) < len ? (size_t)(f->size - off) : len;
	memcpy(buf, f->data + off, *got);
	return 0;
}

int cof_file_fd(const cof_file *f)
{
	return f->reader ? cof_blob_fd(f->reader) : -1;
}

int cof_file_verify(cof_file *f, const char *name, cof_err *err)
{
	unsigned char *buf;
	char sha[65];
	cof_err e = {0};

	if (!f->reader || !f->sha256[0] || f->size > COF_VERIFY_MAX)
		return 0; /* inline (checked by SQLite), no hash (a turn's file), or large */
	if (!(buf = cof_malloc((size_t)f->size + 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (cof_blob_read_full(f->reader, 0, buf, (size_t)f->size, f->sha256, &e) ||
	    cof_sha256_hex(buf, (size_t)f->size, sha) || strcmp(sha, f->sha256)) {
		free(buf);
		cof_err_clear(&e);
		return cof_error(err, COF_EINTERNAL, "the content of '%.200s' is damaged: its "
				 "bytes do not hash to its sha256 %.12s (run coffer fsck)",
				 name ? name : "", f->sha256);
	}
	cof_blob_close(f->reader);
	f->reader = NULL;
	f->data = buf;
	return 0;
}

/* ----------------------------------------------------------------- remove */

typedef struct remove_ctx {
	const char *path;
	cof_cond cond;
} remove_ctx;

static int remove_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	remove_ctx *r = l->ctx;
	cof_entry *cur = cof_malloc(sizeof *cur);
	int exists, rc = -1;

	if (!cur)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	exists = cof_txn_get(tx, r->path, cur, err);
	if (exists == 0)
		cof_error(err, COF_ENOTFOUND, "file '%.200s' not found", r->path);
	else if (exists == 1 && !cond_check(r->cond, r->path, cur, exists, err))
		rc = cof_txn_remove(tx, r->path, err);
	free(cur);
	return rc;
}

int cof_file_remove(cof_store *st, const char *org, const char *vol,
		    const char *path, cof_cond cond, json_t **out, cof_err *err)
{
	remove_ctx r = {.cond = cond};
	cof_volrow v;
	cof_landing l = {.vol = &v, .apply = remove_apply, .ctx = &r, .by = cond.by};

	if (cof_path_check(path, strlen(path), "path", &r.path, err) ||
	    cof_meta_volume_get(st->meta, org, vol, &v, err) || cof_land(st, &l, err))
		return -1;
	*out = json_pack("{s:s, s:I}", "path", r.path, "seq", (json_int_t)l.seq);
	return 0;
}

/* ------------------------------------------------------------------- move */

typedef struct move_ctx {
	const char *from, *to;
	int overwrite;
	int64_t moved;
	cof_hidden_fn hidden;   /* NULL = nothing is hidden */
	const void *hidden_ctx;
} move_ctx;

/* Moves one file `src` (a live row) to `dst` inside the change. */
static int move_one(cof_txn *tx, const cof_item *src, const char *dst, int overwrite,
		    cof_err *err)
{
	cof_entry *cur = cof_malloc(sizeof *cur);
	int exists, rc = -1;

	if (!cur)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	exists = cof_txn_get(tx, dst, cur, err);
	if (exists == 1 && !overwrite)
		cof_error(err, COF_ECONFLICT,
			  "'%.200s' exists; pass \"overwrite\": true to replace it", dst);
	else if (exists >= 0 && !cof_txn_remove(tx, src->path, err) &&
		 (exists || !cof_volume_path_free(tx, dst, err)))
		rc = cof_txn_write(tx, dst, src->sha256, src->size, src->ctype, NULL, err);
	free(cur);
	return rc;
}

static int move_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	move_ctx *m = l->ctx;
	cof_items it = {0};
	cof_buf dst = COF_BUF_INIT, dir = COF_BUF_INIT;
	int rc = -1;

	/* A file named `from`, else every file under `from/`. */
	if (cof_buf_addf(&dir, "%s/", m->from))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	cof_entry *e = cof_malloc(sizeof *e);
	int r = e ? cof_txn_get(tx, m->from, e, err) : -1;
	if (r == 1)
		cof_items_add(&it, e);
	free(e);
	if (r == 0 && cof_txn_list(tx, dir.data, cof_items_add, &it, err))
		r = -1;
	if (r < 0 || it.over < 0)
		goto out;
	if (it.n > 0 && m->hidden && m->hidden(m->hidden_ctx, m->from, r == 0)) {
		cof_error(err, COF_EFORBIDDEN, "'%.200s' is excluded: the exclusions keep it out "
			  "of reach, so it cannot be moved", m->from);
		goto out;
	}
	size_t seen = it.n;
	if (m->hidden) { /* a hidden file never moves with its folder: it stays */
		size_t k = 0;
		for (size_t i = 0; i < it.n; i++) {
			if (m->hidden(m->hidden_ctx, it.v[i].path, 0))
				free(it.v[i].path);
			else
				it.v[k++] = it.v[i];
		}
		it.n = k;
	}
	if (it.n == 0) {
		if (seen)
			cof_error(err, COF_EFORBIDDEN, "every file under '%.200s' is excluded: the "
				  "exclusions keep them out of reach, so nothing moves", m->from);
		else
			cof_error(err, COF_ENOTFOUND, "'%.200s' not found (no file or folder)",
				  m->from);
		goto out;
	}
	if (r == 0 && !strncmp(m->to, dir.data, dir.len)) {
		cof_error(err, COF_EVALIDATION, "cannot move folder '%.200s' into itself", m->from);
		goto out;
	}
	for (size_t i = 0; i < it.n; i++) {
		const char *rest = it.v[i].path + strlen(m->from);
		cof_buf_reset(&dst);
		cof_buf_addf(&dst, "%s%s", m->to, rest);
		if (dst.len > COF_PATH_MAX) {
			cof_error(err, COF_EVALIDATION,
				  "moving would make '%.100s...' %zu bytes; the limit is %d bytes",
				  dst.data, dst.len, COF_PATH_MAX);
			goto out;
		}
		if (move_one(tx, &it.v[i], dst.data, m->overwrite, err))
			goto out;
	}
	m->moved = (int64_t)it.n;
	rc = cof_volume_fit(tx, err);
out:
	cof_items_release(&it);
	cof_buf_release(&dst);
	cof_buf_release(&dir);
	return rc;
}

static const cof_jfield move_fields[] = {
	{"from", COF_JSTR, 1}, {"to", COF_JSTR, 1}, {"overwrite", COF_JBOOL, 0}, {NULL, 0, 0}};

int cof_file_move(cof_store *st, const char *org, const char *vol, json_t *body,
		  const cof_by *by, json_t **out, cof_err *err)
{
	return cof_file_move_visible(st, org, vol, body, NULL, NULL, by, out, err);
}

int cof_file_move_visible(cof_store *st, const char *org, const char *vol, json_t *body,
			  cof_hidden_fn hidden, const void *hidden_ctx, const cof_by *by,
			  json_t **out, cof_err *err)
{
	move_ctx m = {.hidden = hidden, .hidden_ctx = hidden_ctx};
	cof_volrow v;
	cof_landing l = {.vol = &v, .apply = move_apply, .ctx = &m, .by = by};
	const char *from, *to;

	if (cof_json_check(body, move_fields, err))
		return -1;
	from = cof_json_str(body, "from");
	to = cof_json_str(body, "to");
	if (cof_path_check(from, strlen(from), "'from'", &m.from, err) ||
	    cof_path_check(to, strlen(to), "'to'", &m.to, err))
		return -1;
	if (!strcmp(m.from, m.to))
		return cof_error(err, COF_EVALIDATION, "'from' and 'to' are the same path");
	m.overwrite = cof_json_bool(body, "overwrite", 0);
	if (cof_meta_volume_get(st->meta, org, vol, &v, err) || cof_land(st, &l, err))
		return -1;
	*out = json_pack("{s:s, s:s, s:I, s:I}", "from", m.from, "to", m.to, "seq",
			 (json_int_t)l.seq, "moved", (json_int_t)m.moved);
	return 0;
}
