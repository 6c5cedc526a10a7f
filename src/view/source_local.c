/*
 * source_local.c — the view's source in process: the metadata store's
 * queries at a seq, content through the blob store, and DIRECT writes as
 * the library's own file operations. What base.c, ops_tree.c and commit.c
 * ask of a volume when the view has no other source (cof_view_opts.src).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "view/view_int.h"

/* Loads the volume (and snapshot) of root r. */
static int local_open(cof_vfs *v, vroot *r, cof_err *err)
{
	return cof_view_open(v->o.st, v->o.org, r->cfg.vol, r->cfg.snapshot, &r->v, err);
}

/* In process `follow` reads each time at the newest. */
static int64_t local_newest(cof_vfs *v, int root)
{
	(void)v;
	(void)root;
	return -1;
}

static int local_entry(cof_vfs *v, int root, const char *vpath, int64_t at, cof_entry *e)
{
	cof_err err = {0};
	int r = cof_meta_entry_get(v->o.st->meta, v->roots[root].v.vno, vpath, at, e, &err);

	cof_err_clear(&err);
	return r;
}

static int local_list(cof_vfs *v, int root, int64_t at, const char *prefix, const char *after,
		      cof_entry_fn fn, void *ctx)
{
	cof_err err = {0};
	int r = cof_meta_list(v->o.st->meta, v->roots[root].v.vno, at, prefix, after, fn, ctx,
			      &err);

	cof_err_clear(&err);
	return r ? -1 : 0;
}

/* Whether the store's listing stops where it is told (meta.h list_streams). */
static int local_walk_stops(cof_vfs *v)
{
	return v->o.st->meta->ops->list_streams;
}

/* Opens content `sha` (a file the view renamed; `vpath` is then the root's
 * path, for messages), or the file at vpath at `at`: one query gives the row
 * and, for small content, its bytes. */
static int local_bytes_open(cof_vfs *v, int root, const char *vpath, const char *sha,
			    int64_t at, cof_vbytes *b)
{
	cof_err err = {0};
	cof_entry *e;
	int r;

	if (sha) {
		/* inline content comes as a memory reader */
		r = cof_content_open(v->o.st, sha, -1, vpath, &b->r, &err);
		cof_err_clear(&err);
		errno = EIO;
		return r ? -1 : 0;
	}
	if (!(e = malloc(sizeof *e))) {
		errno = ENOMEM;
		return -1;
	}
	r = cof_meta_entry_read(v->o.st->meta, v->roots[root].v.vno, vpath, at, e, &b->data,
				&err);
	if (r == 1) {
		b->size = e->size;
		if (!b->data &&
		    cof_content_reader(v->o.st, e->sha256, e->size, vpath, &b->r, &err))
			r = -1;
	}
	cof_err_clear(&err);
	free(e);
	errno = r == 0 ? ENOENT : EIO;
	return r == 1 ? 0 : -1;
}

static ssize_t local_bytes_read(const cof_vbytes *b, void *buf, size_t n, int64_t off)
{
	if (b->r) {
		cof_err err = {0};
		size_t got = 0;
		int rc = cof_blob_read_at(b->r, off, buf, n, &got, &err);
		cof_err_clear(&err);
		if (rc) {
			errno = EIO;
			return -1;
		}
		return (ssize_t)got;
	}
	if (off >= b->size)
		return 0;
	if ((int64_t)n > b->size - off)
		n = (size_t)(b->size - off);
	memcpy(buf, b->data + off, n);
	return (ssize_t)n;
}

static void local_bytes_close(cof_vbytes *b)
{
	cof_blob_close(b->r);
	free(b->data);
	b->r = NULL;
	b->data = NULL;
}

static int local_inline_many(cof_vfs *v, const char *const *shas, size_t n, cof_inline_fn fn,
			     void *ctx)
{
	cof_err err = {0};
	int r = cof_meta_blob_inline_many(v->o.st->meta, shas, n, fn, ctx, &err);

	cof_err_clear(&err);
	return r ? -1 : 0;
}

static int local_remove(cof_vfs *v, int root, const char *vpath, int64_t seen)
{
	static const cof_by by = {.via = "mount"};
	cof_cond cond = {.kind = COF_COND_VERSION, .version = seen, .by = &by};
	cof_err err = {0};
	json_t *out = NULL;
	int rc = cof_file_remove(v->o.st, v->o.org, v->roots[root].cfg.vol, vpath, cond, &out,
				 &err);

	if (rc && err.code != COF_ENOTFOUND) {
		fprintf(stderr, "coffer mount: cannot remove '%s': %s\n", vpath, err.msg);
		cof_err_clear(&err);
		return -EIO;
	}
	cof_err_clear(&err);
	json_decref(out);
	return 0;
}

static int local_move(cof_vfs *v, int root, const char *from, const char *to, int64_t *seq)
{
	cof_err err = {0};
	json_t *body, *out = NULL;
	int rc;

	static const cof_by by = {.via = "mount"};

	body = json_pack("{s:s, s:s, s:b}", "from", from, "to", to, "overwrite", 1);
	rc = cof_file_move(v->o.st, v->o.org, v->roots[root].cfg.vol, body, &by, &out, &err);
	json_decref(body);
	if (rc) {
		fprintf(stderr, "coffer mount: cannot move '%s' to '%s': %s\n", from, to, err.msg);
		cof_err_clear(&err);
		return -EIO;
	}
	*seq = json_integer_value(json_object_get(out, "seq"));
	json_decref(out);
	return 0;
}

const cof_vsrc_ops cof_vsrc_local = {
	.open = local_open,
	.newest = local_newest,
	.entry = local_entry,
	.list = local_list,
	.walk_stops = local_walk_stops,
	.bytes_open = local_bytes_open,
	.bytes_read = local_bytes_read,
	.bytes_close = local_bytes_close,
	.inline_many = local_inline_many,
	.put = cof_view_land_local,
	.remove = local_remove,
	.move = local_move,
};
