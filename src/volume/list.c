/*
 * list.c — listing (pages, prefix, glob), read-all at one seq, and the changes
 * feed with long-poll.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "volume/volume.h"

typedef struct page_ctx {
	json_t *files;
	const char *glob;
	int64_t limit, n;
	char last[COF_PATH_MAX + 1];
	int more;
} page_ctx;

static int page_add(void *arg, const cof_entry *e)
{
	page_ctx *p = arg;

	if (p->glob && !cof_glob_match(p->glob, e->path))
		return 0;
	if (p->n == p->limit) {
		p->more = 1;
		return 1;
	}
	json_array_append_new(p->files, cof_entry_json(e));
	snprintf(p->last, sizeof p->last, "%s", e->path);
	p->n++;
	return 0;
}

/* The offset of the first byte of s[i..n) that a JSON string must escape
 * (below 0x20, '"', '\\'), or n. Eight bytes at a time: read-all is mostly
 * this scan. In a word, the lowest byte flagged is always one to escape
 * (a borrow can only flag bytes above one), and that is the one taken. */
static size_t next_escape(const unsigned char *s, size_t i, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;

	for (; i + 8 <= n; i += 8) {
		uint64_t w, q, b;
		memcpy(&w, s + i, 8);
		q = w ^ (ones * '"');
		b = w ^ (ones * '\\');
		uint64_t m = ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b);
		if (m & high)
			return i + (size_t)(__builtin_ctzll(m & high) >> 3);
	}
#endif
	for (; i < n; i++)
		if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\')
			return i;
	return n;
}

/* Appends `s` (n bytes, valid UTF-8) as a JSON string. Runs of bytes that
 * need no escape are copied whole. */
static int json_str_add(cof_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t start = 0;

	if (cof_buf_add(b, "\"", 1))
		return -1;
	for (size_t i = next_escape(u, 0, n); i < n; i = next_escape(u, start, n)) {
		char esc[7] = "\\u00";
		const char *e = esc;
		size_t elen = 2;
		switch (u[i]) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			esc[4] = hex[u[i] >> 4];
			esc[5] = hex[u[i] & 15];
			elen = 6;
		}
		if (cof_buf_add(b, s + start, i - start) || cof_buf_add(b, e, elen))
			return -1;
		start = i + 1;
	}
	return cof_buf_add(b, s + start, n - start) || cof_buf_add(b, "\"", 1) ? -1 : 0;
}

/* Appends one file of a read-all answer, with its contents. */
static int read_all_file(cof_store *st, const cof_item *x, cof_buf *b, cof_err *err)
{
	unsigned char *data = NULL;
	char when[32];
	int rc = 0;

	if (cof_content_read(st, x->sha256, x->size, &data, err))
		return -1;
	cof_time_fmt(x->updated_at, when, sizeof when);
	rc |= cof_buf_adds(b, "{\"path\":");
	rc |= json_str_add(b, x->path, strlen(x->path));
	rc |= cof_buf_addf(b, ",\"size\":%lld,\"version\":%lld,\"contentType\":",
			   (long long)x->size, (long long)x->version);
	rc |= json_str_add(b, x->ctype, strlen(x->ctype));
	rc |= cof_buf_addf(b, ",\"sha256\":\"%s\",\"updatedAt\":\"%s\",", x->sha256, when);
	if (cof_utf8_valid((char *)data, (size_t)x->size) && !memchr(data, '\0', (size_t)x->size)) {
		rc |= cof_buf_adds(b, "\"text\":");
		rc |= json_str_add(b, (char *)data, (size_t)x->size);
	} else {
		char *b64 = cof_base64_encode(data, (size_t)x->size, NULL);
		rc |= !b64 || cof_buf_addf(b, "\"data\":\"%s\"", b64);
		free(b64);
	}
	rc |= cof_buf_add(b, "}", 1);
	free(data);
	return rc ? cof_error(err, COF_EINTERNAL, "out of memory") : 0;
}

/* read-all: every matching file with its contents, at the view's seq, written
 * straight as JSON text (no tree of 16 MiB of strings to copy and escape). */
static int read_all(cof_store *st, const cof_view *view, const char *prefix,
		    const char *glob, cof_buf *out, cof_err *err)
{
	cof_items it = {.max = COF_READALL_FILES + 1, .glob = glob};
	int rc = -1;

	if (cof_meta_list(st->meta, view->vno, view->seq, prefix, NULL, cof_items_add, &it, err))
		goto out;
	if (it.over < 0) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (it.n > COF_READALL_FILES || it.bytes > COF_READALL_BYTES) {
		cof_error(err, COF_ETOOLARGE,
			  "read-all returns at most %d files and 16 MiB; this selection has %s%zu "
			  "files and %lld bytes; narrow 'prefix' or 'glob'", COF_READALL_FILES,
			  it.over ? "more than " : "", it.n, (long long)it.bytes);
		goto out;
	}
	/* the answer's size, about: the bytes, their escapes, each file's fields;
	 * one allocation instead of doubling through 16 MiB */
	cof_buf_reserve(out, (size_t)it.bytes + (size_t)it.bytes / 8 + it.n * 320 + 64);
	if (cof_buf_addf(out, "{\"seq\":%lld,\"files\":[", (long long)view->seq))
		goto oom;
	for (size_t i = 0; i < it.n; i++) {
		if (i && cof_buf_add(out, ",", 1))
			goto oom;
		if (read_all_file(st, &it.v[i], out, err))
			goto out;
	}
	if (cof_buf_adds(out, "]}"))
		goto oom;
	rc = 0;
	goto out;
oom:
	cof_error(err, COF_EINTERNAL, "out of memory");
out:
	cof_items_release(&it);
	return rc;
}

/* Checks list options and opens the view; *walk is the prefix to walk
 * (narrowed to the glob's literal folder when that says more). */
static int list_prepare(cof_store *st, const char *org, const char *vol,
			const cof_list_opts *opts, cof_view *view, const char **glob,
			char walk[COF_PATH_MAX + 1], cof_err *err)
{
	const char *prefix;
	char gpre[COF_PATH_MAX + 1] = "";

	if (cof_prefix_check(opts->prefix, "'prefix'", &prefix, err) ||
	    (opts->glob && *opts->glob && cof_glob_check(opts->glob, err)))
		return -1;
	*glob = opts->glob && *opts->glob ? opts->glob : NULL;
	if (*glob) {
		cof_glob_literal_prefix(*glob, gpre, sizeof gpre);
		if (strncmp(gpre, prefix, strlen(prefix)))
			gpre[0] = '\0';
	}
	snprintf(walk, COF_PATH_MAX + 1, "%s", strlen(gpre) > strlen(prefix) ? gpre : prefix);
	if (cof_view_open(st, org, vol, opts->snapshot, view, err))
		return -1;
	return opts->at ? cof_view_at(st, view, opts->seq, err) : 0;
}

int cof_file_read_all(cof_store *st, const char *org, const char *vol,
		      const cof_list_opts *opts, char **text, size_t *len, cof_err *err)
{
	cof_buf b = COF_BUF_INIT;
	cof_view view;
	const char *glob;
	char walk[COF_PATH_MAX + 1];

	if (list_prepare(st, org, vol, opts, &view, &glob, walk, err))
		return -1;
	if (read_all(st, &view, walk, glob, &b, err)) {
		cof_buf_release(&b);
		return -1;
	}
	*text = cof_buf_detach(&b, len);
	return *text ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
}

int cof_file_list(cof_store *st, const char *org, const char *vol,
		  const cof_list_opts *opts, json_t **out, cof_err *err)
{
	page_ctx p = {0};
	cof_view view;
	unsigned char *after = NULL;
	size_t afterlen = 0;
	char walk[COF_PATH_MAX + 1];
	int rc;

	if (opts->content) {
		/* One implementation of read-all: its text, parsed for callers that
		 * want the tree. HTTP sends the text as it is. */
		char *text;
		size_t len;
		if (cof_file_read_all(st, org, vol, opts, &text, &len, err))
			return -1;
		*out = json_loadb(text, len, 0, NULL);
		free(text);
		return *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
	}
	p.limit = opts->limit ? opts->limit : COF_LIST_MAX;
	if (p.limit < 1 || p.limit > COF_LIST_MAX)
		return cof_error(err, COF_EVALIDATION, "'limit' must be 1 to %d", COF_LIST_MAX);
	if (opts->cursor && *opts->cursor &&
	    (cof_base64url_decode(opts->cursor, strlen(opts->cursor), &after, &afterlen) ||
	     memchr(after, '\0', afterlen) || afterlen > COF_PATH_MAX)) {
		free(after);
		return cof_error(err, COF_EVALIDATION, "'cursor' is not one this server gave");
	}
	if (after)
		after[afterlen] = '\0';
	if (list_prepare(st, org, vol, opts, &view, &p.glob, walk, err)) {
		free(after);
		return -1;
	}
	p.files = json_array();
	rc = cof_meta_list(st->meta, view.vno, view.seq, walk, (char *)after, page_add, &p, err);
	free(after);
	if (rc) {
		json_decref(p.files);
		return -1;
	}
	*out = json_pack("{s:I, s:o}", "seq", (json_int_t)view.seq, "files", p.files);
	if (p.more) {
		char *c = cof_base64url_encode(p.last, strlen(p.last));
		json_object_set_new(*out, "cursor", c ? json_string(c) : json_null());
		free(c);
	}
	return 0;
}

/* ---------------------------------------------------------- folder view */

typedef struct children {
	size_t plen;          /* bytes of the folder's prefix */
	json_t *entries;
	char lastdir[COF_PATH_MAX + 1];
	size_t n, cap;
	int more;
	cof_path_map map;
	const void *map_ctx;
} children;

/* Shows `vpath` through the caller's map. */
static void shown(const children *c, const char *vpath, char *out, size_t outsz)
{
	if (c->map)
		c->map(c->map_ctx, vpath, out, outsz);
	else
		snprintf(out, outsz, "%s", vpath);
}

static int child_add(void *arg, const cof_entry *e)
{
	children *c = arg;
	const char *rest = e->path + c->plen;
	const char *slash = strchr(rest, '/');
	char path[COF_PATH_MAX + 512];

	if (c->n >= c->cap) {
		c->more = 1;
		return 1;
	}
	if (slash) {
		/* Rows are sorted, so a folder's files come together: one entry. */
		size_t dl = (size_t)(slash - rest);
		if (strlen(c->lastdir) == dl && !strncmp(c->lastdir, rest, dl))
			return 0;
		snprintf(c->lastdir, sizeof c->lastdir, "%.*s", (int)dl, rest);
		char vdir[COF_PATH_MAX + 1];
		snprintf(vdir, sizeof vdir, "%.*s", (int)(c->plen + dl), e->path);
		shown(c, vdir, path, sizeof path);
		json_array_append_new(c->entries, json_pack("{s:s, s:s, s:s}", "name", c->lastdir,
							    "path", path, "type", "dir"));
	} else {
		shown(c, e->path, path, sizeof path);
		json_array_append_new(c->entries, json_pack(
			"{s:s, s:s, s:s, s:I, s:s}", "name", rest, "path", path, "type", "file",
			"size", (json_int_t)e->size, "contentType", e->ctype));
	}
	c->n++;
	return 0;
}

int cof_folder_children(cof_store *st, const cof_view *view, const char *prefix,
			size_t cap, cof_path_map map, const void *map_ctx, json_t **entries,
			int *more, cof_err *err)
{
	children c = {.plen = strlen(prefix), .entries = json_array(), .cap = cap,
		      .map = map, .map_ctx = map_ctx};

	if (cof_meta_list(st->meta, view->vno, view->seq, prefix, NULL, child_add, &c, err)) {
		json_decref(c.entries);
		return -1;
	}
	*entries = c.entries;
	*more = c.more;
	return 0;
}

/* ---------------------------------------------------------------- changes */

#define CHANGES_MAX 10000

typedef struct changes_ctx {
	json_t *list;
	int64_t last_seq;
	int64_t n;
} changes_ctx;

static int change_add(void *arg, const cof_change_row *c)
{
	changes_ctx *x = arg;

	json_array_append_new(x->list, json_pack(
		"{s:I, s:s, s:s, s:I, s:I, s:s}", "seq", (json_int_t)c->seq, "op",
		c->removed ? "remove" : "write", "path", c->path, "version",
		(json_int_t)c->version, "size", (json_int_t)c->size, "sha256", c->sha256));
	x->last_seq = c->seq;
	x->n++;
	return 0;
}

/* Reads changes after `since`. A page never ends inside one seq: if the limit
 * cut a seq, that seq is left for the next page, unless it is the only one, in
 * which case all of it is returned. */
static int changes_page(cof_store *st, int64_t vno, int64_t since, const char *prefix,
			changes_ctx *x, int *more, cof_err *err)
{
	*more = 0;
	x->list = json_array();
	x->n = 0;
	if (cof_meta_changes(st->meta, vno, since, prefix, CHANGES_MAX + 1, change_add, x, err))
		return -1;
	if (x->n <= CHANGES_MAX)
		return 0;
	*more = 1;
	int64_t cut = x->last_seq;
	size_t keep = json_array_size(x->list);
	while (keep > 0 && json_integer_value(json_object_get(
				json_array_get(x->list, keep - 1), "seq")) == cut)
		keep--;
	if (keep > 0) {
		while (json_array_size(x->list) > keep)
			json_array_remove(x->list, keep);
		x->last_seq = json_integer_value(json_object_get(
			json_array_get(x->list, keep - 1), "seq"));
		return 0;
	}
	json_array_clear(x->list);
	x->n = 0;
	return cof_meta_changes(st->meta, vno, cut - 1, prefix, INT64_MAX, change_add, x, err);
}

int cof_changes(cof_store *st, const char *org, const char *vol, int64_t since,
		const char *prefix, int wait_seconds, json_t **out, cof_err *err)
{
	changes_ctx x = {0};
	cof_volrow v;
	cof_sub *sub = NULL;
	const char *pre;
	int64_t deadline;
	int more, rc = -1;

	if (since < 0)
		return cof_error(err, COF_EVALIDATION, "'since' must be 0 or more");
	if (wait_seconds < 0 || wait_seconds > 60)
		return cof_error(err, COF_EVALIDATION, "'wait' must be 0 to 60 seconds");
	if (cof_prefix_check(prefix, "'prefix'", &pre, err))
		return -1;
	deadline = cof_mono_ms() + wait_seconds * 1000;
	/* Subscribed before the first read: a commit after it wakes the wait. */
	if (wait_seconds > 0) {
		cof_topic t = cof_topic_volume(org, vol);
		if (cof_notify_subscribe(st->notify, &t, 1, &sub, err))
			return -1;
	}
	for (;;) {
		uint64_t gen = sub ? cof_sub_gen(sub) : 0;
		if (cof_meta_volume_get(st->meta, org, vol, &v, err))
			goto out;
		if (since < v.history_from) {
			cof_error(err, COF_EGONE,
				  "changes before seq %lld are no longer kept; list the volume "
				  "and follow from its seq", (long long)v.history_from);
			cof_err_set(err, "oldest", json_integer(v.history_from));
			goto out;
		}
		if (changes_page(st, v.vno, since, pre, &x, &more, err))
			goto out;
		if (x.n > 0 || wait_seconds == 0)
			break;
		/* Nothing yet: sleep until the next commit or the deadline. */
		json_decref(x.list);
		x.list = NULL;
		int moved = cof_sub_wait(sub, gen, deadline) != gen;
		if (cof_notify_closing(st->notify) || (!moved && cof_mono_ms() >= deadline)) {
			if (cof_meta_volume_get(st->meta, org, vol, &v, err) ||
			    changes_page(st, v.vno, since, pre, &x, &more, err))
				goto out;
			break;
		}
	}
	int64_t seq = more ? x.last_seq : (x.last_seq > v.seq ? x.last_seq : v.seq);
	*out = json_pack("{s:I, s:o}", "seq", (json_int_t)seq,
			 "changes", x.list);
	if (more)
		json_object_set_new(*out, "more", json_true());
	x.list = NULL;
	rc = 0;
out:
	json_decref(x.list);
	cof_notify_unsubscribe(sub);
	return rc;
}
