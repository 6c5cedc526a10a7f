/*
 * source_http.c — the view's source over a cofferd's HTTP API, for
 * `coffer mount --server URL --key KEY`: every read is a request at the
 * view's seq (?seq=N, or ?snapshot=S), folders come in pages of the
 * listing (its cursor), content by Range into a window that grows while a
 * file is read in order (never the whole file in memory), and each DIRECT
 * write is one request: a closed file a PUT streamed from its layer copy
 * with If-Match (412: EIO, the other side's version stays), unlink a
 * DELETE, rename a POST move. libcurl easy handles come from a pool, so
 * each serving thread keeps its connection alive across requests.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "view/view_int.h"
#include "view/vhttp.h"

#define WIN_FIRST (256 * 1024)   /* the first window of a file's bytes */
#define WIN_MAX (2 * 1024 * 1024) /* a window grows to this while read in order */
#define PAGE_FIRST 16            /* a folder's first page (a probe wants one row) */
#define PAGE_MAX 1000
#define FOLLOW_MS 1000           /* --follow asks for the newest seq at most this often */

typedef struct hsrc {
	cof_view_src base;
	cof_vh c;                /* the server, its connections */
	pthread_mutex_t mu;      /* newest */
	int64_t newest[COF_VIEW_ROOTS], newest_ms[COF_VIEW_ROOTS];
} hsrc;

static hsrc *H(cof_vfs *v)
{
	return (hsrc *)v->o.src;
}

/* --------------------------------------------------------------- requests */

/* The URL of root r's volume + `tail` ("/files/" + vpath, "/move", ""). */
static void url_vol(hsrc *h, const vroot *r, cof_vh_req *q, const char *tail, const char *vpath)
{
	cof_buf_adds(&q->url, h->c.url);
	cof_buf_adds(&q->url, "/v1/volumes/");
	cof_vh_enc(&q->url, r->cfg.vol, 0);
	cof_buf_adds(&q->url, tail);
	if (vpath)
		cof_vh_enc(&q->url, vpath, 1);
}

/* Adds the view's read point: ?snapshot=S, or ?seq=at (at >= 0). `sep` is
 * '?' or '&'. */
static void url_at(const vroot *r, cof_vh_req *q, int64_t at, char sep)
{
	if (r->v.snapshot && r->cfg.snapshot) {
		cof_buf_addf(&q->url, "%csnapshot=", sep);
		cof_vh_enc(&q->url, r->cfg.snapshot, 0);
	} else if (at >= 0) {
		cof_buf_addf(&q->url, "%cseq=%" PRId64, sep, at);
	}
}

/* ------------------------------------------------------------------ reads */

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t parse_time(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof tm);
	if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		return 0;
	return (int64_t)timegm(&tm);
}

/* Fills e from a listed file {path, size, version, contentType, sha256, updatedAt}. */
static void entry_of(json_t *f, cof_entry *e)
{
	const char *s;

	memset(e, 0, sizeof *e);
	snprintf(e->path, sizeof e->path, "%s", json_string_value(json_object_get(f, "path")));
	e->size = json_integer_value(json_object_get(f, "size"));
	e->version = json_integer_value(json_object_get(f, "version"));
	if ((s = json_string_value(json_object_get(f, "contentType"))))
		snprintf(e->ctype, sizeof e->ctype, "%s", s);
	if ((s = json_string_value(json_object_get(f, "sha256"))))
		snprintf(e->sha256, sizeof e->sha256, "%s", s);
	e->updated_at = parse_time(json_string_value(json_object_get(f, "updatedAt")));
}

static int http_open(cof_vfs *v, vroot *r, cof_err *err)
{
	hsrc *h = H(v);
	json_t *vol = NULL, *snap = NULL;
	cof_vh_req q;
	int rc;

	memset(&r->v, 0, sizeof r->v);
	cof_vh_req_init(&q, "GET");
	url_vol(h, r, &q, "", NULL);
	rc = cof_vh_json(&h->c, &q, &vol, err);
	cof_vh_req_done(&q);
	if (rc)
		return -1;
	snprintf(r->v.vol.id, sizeof r->v.vol.id, "%s",
		 json_string_value(json_object_get(vol, "id")));
	r->v.vol.seq = r->v.seq = json_integer_value(json_object_get(vol, "seq"));
	r->v.vol.ceiling = json_integer_value(json_object_get(vol, "ceiling"));
	json_decref(vol);
	if (r->cfg.snapshot && *r->cfg.snapshot) {
		cof_vh_req_init(&q, "GET");
		url_vol(h, r, &q, "/snapshots/", NULL);
		cof_vh_enc(&q.url, r->cfg.snapshot, 0);
		rc = cof_vh_json(&h->c, &q, &snap, err);
		cof_vh_req_done(&q);
		if (rc)
			return -1;
		r->v.seq = json_integer_value(json_object_get(snap, "seq"));
		r->v.snapshot = 1;
		json_decref(snap);
	}
	return 0;
}

/* The seq --follow reads at: the volume's, asked again at most once a
 * second, so that one second's reads see one state. */
static int64_t http_newest(cof_vfs *v, int root)
{
	hsrc *h = H(v);
	vroot *r = &v->roots[root];
	int64_t t = now_ms(), seq;
	json_t *vol = NULL;
	cof_err err = {0};
	cof_vh_req q;

	if (r->v.snapshot)
		return r->v.seq;
	pthread_mutex_lock(&h->mu);
	if (h->newest_ms[root] && t - h->newest_ms[root] < FOLLOW_MS) {
		seq = h->newest[root];
		pthread_mutex_unlock(&h->mu);
		return seq;
	}
	pthread_mutex_unlock(&h->mu);
	cof_vh_req_init(&q, "GET");
	url_vol(h, r, &q, "", NULL);
	if (cof_vh_json(&h->c, &q, &vol, &err) == 0) {
		seq = json_integer_value(json_object_get(vol, "seq"));
		json_decref(vol);
	} else {
		seq = -1; /* unreachable: read at the newest, and fail there */
	}
	cof_vh_req_done(&q);
	cof_err_clear(&err);
	pthread_mutex_lock(&h->mu);
	if (seq >= 0) {
		h->newest[root] = seq;
		h->newest_ms[root] = t;
	}
	pthread_mutex_unlock(&h->mu);
	return seq;
}

/* Rows under prefix after `after`, page by page (the listing's cursor is
 * the last path, base64url: a page may start after any path). */
static int http_list(cof_vfs *v, int root, int64_t at, const char *prefix, const char *after,
		     cof_entry_fn fn, void *ctx)
{
	hsrc *h = H(v);
	vroot *r = &v->roots[root];
	char *cursor = after ? cof_base64url_encode(after, strlen(after)) : NULL;
	int limit = PAGE_FIRST, rc = 0, stop = 0;
	cof_entry *e = malloc(sizeof *e);
	cof_err err = {0};

	if (!e) {
		free(cursor);
		return -1;
	}
	while (!stop && !rc) {
		json_t *page = NULL, *files, *f;
		size_t i;
		cof_vh_req q;
		cof_vh_req_init(&q, "GET");
		url_vol(h, r, &q, "/files", NULL);
		cof_buf_addf(&q.url, "?limit=%d", limit);
		url_at(r, &q, at, '&');
		if (prefix && *prefix) {
			cof_buf_adds(&q.url, "&prefix=");
			cof_vh_enc(&q.url, prefix, 0);
		}
		if (cursor) {
			cof_buf_adds(&q.url, "&cursor=");
			cof_vh_enc(&q.url, cursor, 0);
		}
		rc = cof_vh_json(&h->c, &q, &page, &err);
		cof_vh_req_done(&q);
		if (rc)
			break;
		files = json_object_get(page, "files");
		json_array_foreach(files, i, f) {
			entry_of(f, e);
			if (fn(ctx, e)) {
				stop = 1;
				break;
			}
		}
		free(cursor);
		cursor = NULL;
		const char *next = json_string_value(json_object_get(page, "cursor"));
		if (!stop && next)
			cursor = strdup(next);
		else
			stop = 1;
		json_decref(page);
		limit = limit * 4 > PAGE_MAX ? PAGE_MAX : limit * 4;
	}
	if (rc)
		fprintf(stderr, "coffer mount: cannot list '%s': %s\n", prefix ? prefix : "",
			err.msg);
	cof_err_clear(&err);
	free(cursor);
	free(e);
	return rc;
}

static int http_entry(cof_vfs *v, int root, const char *vpath, int64_t at, cof_entry *e)
{
	hsrc *h = H(v);
	cof_vh_req q;
	int r = -1;

	cof_vh_req_init(&q, "HEAD");
	url_vol(h, &v->roots[root], &q, "/files/", vpath);
	url_at(&v->roots[root], &q, at, '?');
	if (cof_vh_run(&h->c, &q) == 0) {
		if (q.status == 200) {
			memset(e, 0, sizeof *e);
			snprintf(e->path, sizeof e->path, "%s", vpath);
			e->size = strtoll(q.clen, NULL, 10);
			e->version = strtoll(q.etag + (q.etag[0] == '"'), NULL, 10);
			snprintf(e->ctype, sizeof e->ctype, "%s", q.ctype);
			e->updated_at = (int64_t)curl_getdate(q.lastmod, NULL);
			r = 1;
		} else if (q.status == 404) {
			r = 0;
		}
	}
	cof_vh_req_done(&q);
	return r;
}

/* An open file's bytes over HTTP: its URL at one seq, and a window of them. */
typedef struct hbytes {
	hsrc *h;
	char *url;
	pthread_mutex_t mu;
	char *win;
	int64_t win_off;
	size_t win_len, win_cap, want;
} hbytes;

/* Fetches bytes [off, off+len) into the window. 0, or -1 (errno EIO). */
static int fetch(hbytes *x, int64_t off, size_t len)
{
	char range[64];
	cof_vh_req q;
	int rc = -1;

	if (len > x->win_cap) {
		char *w = realloc(x->win, len);
		if (!w) {
			errno = ENOMEM;
			return -1;
		}
		x->win = w;
		x->win_cap = len;
	}
	cof_vh_req_init(&q, "GET");
	cof_buf_adds(&q.url, x->url);
	snprintf(range, sizeof range, "Range: bytes=%" PRId64 "-%" PRId64, off,
		 off + (int64_t)len - 1);
	q.hdr[0] = range;
	q.dst = x->win;
	q.cap = len;
	if (cof_vh_run(&x->h->c, &q) == 0 && q.status == 206 && q.got == len) {
		x->win_off = off;
		x->win_len = len;
		rc = 0;
	} else {
		fprintf(stderr, "coffer mount: cannot read %s at byte %" PRId64 ": %s\n", x->url,
			off, q.errbuf[0] ? q.errbuf : "the answer was cut or refused");
		errno = EIO;
	}
	cof_vh_req_done(&q);
	return rc;
}

/* Opens the file at vpath at `at` (content by hash is not asked over HTTP:
 * a renamed file is read at its path, at the newest). The first window
 * comes with the answer that tells the size. */
static int http_bytes_open(cof_vfs *v, int root, const char *vpath, const char *sha,
			   int64_t at, cof_vbytes *b)
{
	hsrc *h = H(v);
	vroot *r = &v->roots[root];
	hbytes *x = calloc(1, sizeof *x);
	char range[64], *end;
	const char *slash;
	int64_t pinned;
	cof_vh_req q;

	if (!x) {
		errno = ENOMEM;
		return -1;
	}
	x->h = h;
	pthread_mutex_init(&x->mu, NULL);
	cof_vh_req_init(&q, "GET");
	url_vol(h, r, &q, "/files/", vpath);
	url_at(r, &q, sha ? -1 : at, '?');
	snprintf(range, sizeof range, "Range: bytes=0-%d", WIN_FIRST - 1);
	q.hdr[0] = range;
	if (!(x->win = malloc(WIN_FIRST)))
		goto fail;
	x->win_cap = WIN_FIRST;
	q.dst = x->win;
	q.cap = WIN_FIRST;
	if (cof_vh_run(&h->c, &q)) {
		fprintf(stderr, "coffer mount: cannot reach cofferd at %s: %s\n", h->c.url, q.errbuf);
		errno = EIO;
		goto out;
	}
	if (q.status == 404) {
		errno = ENOENT;
		goto out;
	}
	/* 206 "bytes 0-N/SIZE"; an empty file is 416 "bytes * /0" */
	slash = strchr(q.crange, '/');
	if ((q.status != 206 && q.status != 416) || !slash) {
		errno = EIO;
		goto out;
	}
	b->size = strtoll(slash + 1, &end, 10);
	pinned = q.vseq[0] ? strtoll(q.vseq, NULL, 10) : -1;
	x->win_off = 0;
	x->win_len = q.status == 206 ? q.got : 0;
	x->want = WIN_FIRST;
	/* later windows at the seq this answer was read at (--follow too) */
	cof_vh_req_done(&q);
	cof_vh_req_init(&q, "GET");
	url_vol(h, r, &q, "/files/", vpath);
	url_at(r, &q, pinned, '?');
	x->url = cof_buf_detach(&q.url, NULL);
	cof_vh_req_done(&q);
	b->src = VSRC(v);
	b->h = x;
	return 0;
fail:
	errno = ENOMEM;
out:
	cof_vh_req_done(&q);
	free(x->win);
	pthread_mutex_destroy(&x->mu);
	free(x);
	return -1;
}

static ssize_t http_bytes_read(const cof_vbytes *b, void *buf, size_t n, int64_t off)
{
	hbytes *x = b->h;
	size_t done = 0;

	if (off >= b->size)
		return 0;
	if ((int64_t)n > b->size - off)
		n = (size_t)(b->size - off);
	pthread_mutex_lock(&x->mu);
	while (done < n) {
		int64_t at = off + (int64_t)done;
		if (at < x->win_off || at >= x->win_off + (int64_t)x->win_len) {
			/* read in order: the window doubles, up to WIN_MAX */
			if (at == x->win_off + (int64_t)x->win_len && x->want < WIN_MAX)
				x->want *= 2;
			else if (at != x->win_off + (int64_t)x->win_len)
				x->want = WIN_FIRST;
			size_t len = x->want > n - done ? x->want : n - done;
			if ((int64_t)len > b->size - at)
				len = (size_t)(b->size - at);
			if (fetch(x, at, len)) {
				pthread_mutex_unlock(&x->mu);
				return done ? (ssize_t)done : -1;
			}
		}
		size_t k = (size_t)(x->win_off + (int64_t)x->win_len - at);
		if (k > n - done)
			k = n - done;
		memcpy((char *)buf + done, x->win + (at - x->win_off), k);
		done += k;
	}
	pthread_mutex_unlock(&x->mu);
	return (ssize_t)done;
}

static void http_bytes_close(cof_vbytes *b)
{
	hbytes *x = b->h;

	if (x) {
		free(x->win);
		free(x->url);
		pthread_mutex_destroy(&x->mu);
		free(x);
	}
	b->h = NULL;
}

/* ----------------------------------------------------------------- writes */

static int http_put(cof_vfs *v, vnode *n)
{
	hsrc *h = H(v);
	vroot *r = &v->roots[n->root];
	char vp[COF_PATH_MAX + 1], cond[48], msg[512], link[COF_SYMLINK_MAX + 20];
	struct stat sb;
	json_t *out = NULL;
	cof_vh_req q;
	int rc = -EIO;

	cof_vbase_vpath(r, n->path, vp, sizeof vp);
	cof_vh_req_init(&q, "PUT");
	if ((q.up_fd = cof_layer_open(v, n->lid, O_RDONLY)) < 0 || fstat(q.up_fd, &sb)) {
		fprintf(stderr, "coffer mount: cannot read the written bytes of '%s': %s\n", vp,
			strerror(errno));
		goto out;
	}
	q.up_len = sb.st_size;
	if (cof_is_symlink(n->ctype)) {
		/* a link is made by its header; its target is the layer's bytes */
		ssize_t k = sb.st_size <= COF_SYMLINK_MAX
			? pread(q.up_fd, link + 18, (size_t)sb.st_size, 0) : -1;
		if (k != sb.st_size) {
			fprintf(stderr, "coffer mount: cannot read the link '%s'\n", vp);
			goto out;
		}
		memcpy(link, "X-Coffer-Symlink: ", 18);
		link[18 + k] = '\0';
		q.hdr[1] = link;
		q.up_len = 0;
	}
	url_vol(h, r, &q, "/files/", vp);
	if (n->seen)
		snprintf(cond, sizeof cond, "If-Match: \"%" PRId64 "\"", n->seen);
	else
		snprintf(cond, sizeof cond, "If-None-Match: *");
	q.hdr[0] = cond;
	if (cof_vh_run(&h->c, &q)) {
		fprintf(stderr, "coffer mount: cannot write '%s': cannot reach cofferd at %s: %s\n",
			vp, h->c.url, q.errbuf);
		goto out;
	}
	if (q.status / 100 != 2) {
		cof_vh_msg(&q, msg, sizeof msg);
		fprintf(stderr, "coffer mount: cannot write '%s': %s%s\n", vp, msg,
			q.status == 412 ? " (changed by someone else since it was opened; "
			"their version stays)" : "");
		rc = q.status == 400 && strstr(msg, "ceiling") ? -ENOSPC : -EIO;
		n->refused = q.status / 100 == 4; /* an answer, not a failure to reach */
		goto out;
	}
	out = json_loadb(q.body.data ? q.body.data : "", q.body.len, 0, NULL);
	n->seen = json_integer_value(json_object_get(out, "version"));
	n->dirty = 0;
	snprintf(n->sha, sizeof n->sha, "%s",
		 json_string_value(json_object_get(out, "sha256")) ?: "");
	n->size = json_integer_value(json_object_get(out, "size"));
	snprintf(n->ctype, sizeof n->ctype, "%s",
		 json_string_value(json_object_get(out, "contentType")) ?: "");
	rc = n->seen > 0 ? 0 : -EIO;
out:
	if (q.up_fd >= 0)
		close(q.up_fd);
	json_decref(out);
	cof_vh_req_done(&q);
	return rc;
}

static int http_remove(cof_vfs *v, int root, const char *vpath, int64_t seen)
{
	hsrc *h = H(v);
	char cond[48], msg[512];
	cof_vh_req q;
	int rc = -EIO;

	cof_vh_req_init(&q, "DELETE");
	url_vol(h, &v->roots[root], &q, "/files/", vpath);
	snprintf(cond, sizeof cond, "If-Match: \"%" PRId64 "\"", seen);
	q.hdr[0] = cond;
	if (cof_vh_run(&h->c, &q))
		snprintf(msg, sizeof msg, "cannot reach cofferd at %s: %s", h->c.url, q.errbuf);
	else if (q.status / 100 == 2 || q.status == 404)
		rc = 0;
	else
		cof_vh_msg(&q, msg, sizeof msg);
	if (rc)
		fprintf(stderr, "coffer mount: cannot remove '%s': %s\n", vpath, msg);
	cof_vh_req_done(&q);
	return rc;
}

static int http_move(cof_vfs *v, int root, const char *from, const char *to, int64_t *seq)
{
	hsrc *h = H(v);
	json_t *body = json_pack("{s:s, s:s, s:b}", "from", from, "to", to, "overwrite", 1);
	json_t *out = NULL;
	cof_err err = {0};
	cof_vh_req q;
	int rc;

	cof_vh_req_init(&q, "POST");
	url_vol(h, &v->roots[root], &q, "/move", NULL);
	q.json = body ? json_dumps(body, JSON_COMPACT) : NULL;
	rc = q.json ? cof_vh_json(&h->c, &q, &out, &err) : cof_error(&err, COF_EINTERNAL, "out of memory");
	if (rc)
		fprintf(stderr, "coffer mount: cannot move '%s' to '%s': %s\n", from, to, err.msg);
	else
		*seq = json_integer_value(json_object_get(out, "seq"));
	free((char *)q.json);
	json_decref(body);
	json_decref(out);
	cof_err_clear(&err);
	cof_vh_req_done(&q);
	return rc ? -EIO : 0;
}

/* A listing's first page is PAGE_FIRST rows: one request of a few rows
 * answers what two would. */
static int http_walk_stops(cof_vfs *v)
{
	(void)v;
	return 1;
}

static const cof_vsrc_ops http_ops = {
	.open = http_open,
	.newest = http_newest,
	.entry = http_entry,
	.list = http_list,
	.walk_stops = http_walk_stops,
	.bytes_open = http_bytes_open,
	.bytes_read = http_bytes_read,
	.bytes_close = http_bytes_close,
	.put = http_put,
	.remove = http_remove,
	.move = http_move,
};

/* ------------------------------------------------------------------ setup */

cof_view_src *cof_view_src_http(const char *url, const char *key, cof_err *err)
{
	hsrc *h;

	if (!url || !*url) {
		cof_error(err, COF_EVALIDATION, "the server URL is missing");
		return NULL;
	}
	if (!(h = calloc(1, sizeof *h)) || cof_vh_init(&h->c, url, key)) {
		if (h)
			cof_vh_release(&h->c);
		free(h);
		cof_error(err, COF_EINTERNAL, "out of memory");
		return NULL;
	}
	h->base.ops = &http_ops;
	pthread_mutex_init(&h->mu, NULL);
	return &h->base;
}

int cof_view_src_check(cof_view_src *s, const char *vol, cof_err *err)
{
	cof_vfs *v = calloc(1, sizeof *v);
	int rc;

	if (!v)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	v->o.src = s;
	snprintf(v->roots[0].cfg.vol, sizeof v->roots[0].cfg.vol, "%s", vol);
	rc = http_open(v, &v->roots[0], err);
	free(v);
	return rc;
}

void cof_view_src_free(cof_view_src *s)
{
	hsrc *h = (hsrc *)s;

	if (!h)
		return;
	cof_vh_release(&h->c);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
