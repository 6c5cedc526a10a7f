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

int cof_links_json(cof_store *st, json_t *files, cof_err *err)
{
	size_t i;
	json_t *f;

	json_array_foreach(files, i, f) {
		unsigned char *t = NULL;
		if (!cof_is_symlink(json_string_value(json_object_get(f, "contentType"))))
			continue;
		if (cof_content_read(st, json_string_value(json_object_get(f, "sha256")),
				     json_integer_value(json_object_get(f, "size")), &t, err))
			return -1;
		json_object_set_new(f, "type", json_string("symlink"));
		json_object_set_new(f, "target", json_stringn((const char *)t,
			(size_t)json_integer_value(json_object_get(f, "size"))));
		free(t);
	}
	return 0;
}

/* Checks list options and opens the view; *walk is the prefix to walk
 * (narrowed to the glob's literal folder when that says more). */
int cof_list_prepare(cof_store *st, const char *org, const char *vol,
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
	if (cof_list_prepare(st, org, vol, opts, &view, &p.glob, walk, err)) {
		free(after);
		return -1;
	}
	p.files = json_array();
	rc = cof_meta_list(st->meta, view.vno, view.seq, walk, (char *)after, page_add, &p, err);
	free(after);
	if (!rc)
		rc = cof_links_json(st, p.files, err);
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
	int64_t first_seq, last_seq;   /* of the rows read (kept or not) */
	int64_t n;                     /* rows read */
} changes_ctx;

/* A change as the feed and the history show it; `by` null when not recorded. */
json_t *cof_change_json(const cof_change_row *c)
{
	json_t *by = c->by ? json_loads(c->by, 0, NULL) : NULL;

	return json_pack("{s:I, s:s, s:s, s:I, s:I, s:s, s:o, s:o}", "seq", (json_int_t)c->seq,
			 "op", c->removed ? "remove" : "write", "path", c->path, "version",
			 (json_int_t)c->version, "size", (json_int_t)c->size, "sha256", c->sha256,
			 "at", cof_json_time(c->at), "by", by ? by : json_null());
}

static int change_add(void *arg, const cof_change_row *c)
{
	changes_ctx *x = arg;

	json_array_append_new(x->list, cof_change_json(c));
	if (!x->n)
		x->first_seq = c->seq;
	x->last_seq = c->seq;
	x->n++;
	return 0;
}

/* Reads changes after `since`. A page never ends inside one seq: if the limit
 * cut a seq, that seq is left for the next page, unless it is the only one, in
 * which case all of it is returned. */
static int changes_page(cof_store *st, int64_t vno, int64_t since, const char *prefix,
			const cof_change_filter *f, changes_ctx *x, int *more, cof_err *err)
{
	*more = 0;
	x->list = json_array();
	x->n = 0;
	if (cof_meta_changes_where(st->meta, vno, since, prefix, f, CHANGES_MAX + 1, change_add,
				   x, err))
		return -1;
	if (x->n <= CHANGES_MAX)
		return 0;
	*more = 1;
	int64_t cut = x->last_seq;
	if (x->first_seq != cut) {
		size_t keep = json_array_size(x->list);
		while (keep > 0 && json_integer_value(json_object_get(
					json_array_get(x->list, keep - 1), "seq")) == cut)
			keep--;
		while (json_array_size(x->list) > keep)
			json_array_remove(x->list, keep);
		x->last_seq = cut - 1;   /* the next page starts at the cut seq */
		return 0;
	}
	json_array_clear(x->list);
	x->n = 0;
	return cof_meta_changes_where(st->meta, vno, cut - 1, prefix, f, INT64_MAX, change_add,
				      x, err);
}

int cof_changes(cof_store *st, const char *org, const char *vol, int64_t since,
		const char *prefix, const cof_change_filter *f, int wait_seconds,
		json_t **out, cof_err *err)
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
		if (changes_page(st, v.vno, since, pre, f, &x, &more, err))
			goto out;
		if (x.n > 0 || wait_seconds == 0)
			break;
		/* Nothing yet: sleep until the next commit or the deadline. */
		json_decref(x.list);
		x.list = NULL;
		int moved = cof_sub_wait(sub, gen, deadline) != gen;
		if (cof_notify_closing(st->notify) || (!moved && cof_mono_ms() >= deadline)) {
			if (cof_meta_volume_get(st->meta, org, vol, &v, err) ||
			    changes_page(st, v.vno, since, pre, f, &x, &more, err))
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
