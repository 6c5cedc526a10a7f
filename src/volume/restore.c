/*
 * restore.c — forks (a new volume sharing rows and content, no bytes copied)
 * and restore (the volume made as a snapshot was, as one change).
 */
#include <stdlib.h>
#include <string.h>
#include "volume/volume.h"

static const cof_jfield fork_fields[] = {
	{"snapshot", COF_JSTR, 0}, {"name", COF_JSTR, 0}, {NULL, 0, 0}};

int cof_volume_fork(cof_store *st, const char *org, const char *vol, json_t *body,
		    json_t **out, cof_err *err)
{
	cof_view view;
	cof_volrow nv = {0};
	const char *name;

	if (cof_json_check(body, fork_fields, err))
		return -1;
	name = cof_json_str(body, "name");
	if (name && (strlen(name) == 0 || strlen(name) > 255 ||
		     !cof_utf8_valid(name, strlen(name))))
		return cof_error(err, COF_EVALIDATION, "'name' must be 1 to 255 bytes of UTF-8");
	if (cof_view_open(st, org, vol, cof_json_str(body, "snapshot"), &view, err))
		return -1;
	cof_id_new("vol_", nv.id, sizeof nv.id);
	snprintf(nv.org, sizeof nv.org, "%s", org);
	if (name)
		snprintf(nv.name, sizeof nv.name, "%s", name);
	else
		snprintf(nv.name, sizeof nv.name, "%.240s (fork)", view.vol.name);
	/* The fork continues the source's seq, so versions keep their meaning;
	 * its own changes feed starts there. */
	nv.seq = view.seq;
	nv.history_from = view.seq;
	nv.ceiling = view.vol.ceiling;
	nv.capacity = view.vol.capacity;
	nv.created_at = cof_now();
	if (cof_meta_volume_fork(st->meta, &nv, view.vno, view.seq, err))
		return -1;
	/* a fork that copied its rows names no parent: a merge finds its base here */
	if (!nv.base_vno) {
		cof_merge_base_save(st, &nv, &view.vol, view.seq, view.seq);
		cof_merge_base_save(st, &view.vol, &nv, view.seq, view.vol.seq);
	}
	*out = cof_volume_json(&nv);
	return 0;
}

typedef struct restore_ctx {
	cof_items target;  /* the snapshot's files, by path */
	int64_t written, removed;
} restore_ctx;

static int same_file(const cof_item *a, const cof_item *b)
{
	return !strcmp(a->sha256, b->sha256) && !strcmp(a->ctype, b->ctype);
}

/* Diffs the live files against the snapshot's (both sorted by path) and
 * writes/removes what differs, inside one change. */
static int restore_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	restore_ctx *r = l->ctx;
	cof_items live = {0};
	size_t i = 0, j = 0;
	int rc = -1;

	r->written = r->removed = 0;
	if (cof_txn_list(tx, "", cof_items_add, &live, err))
		goto out;
	if (live.over < 0) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	while (i < live.n || j < r->target.n) {
		int c = i == live.n ? 1 : j == r->target.n ? -1
			: strcmp(live.v[i].path, r->target.v[j].path);
		if (c < 0) {
			if (cof_txn_remove(tx, live.v[i++].path, err))
				goto out;
			r->removed++;
			continue;
		}
		cof_item *t = &r->target.v[j++];
		if (c == 0 && same_file(&live.v[i++], t))
			continue;
		if (cof_txn_write(tx, t->path, t->sha256, t->size, t->ctype, NULL, err))
			goto out;
		r->written++;
	}
	rc = cof_volume_fit(tx, err);
out:
	cof_items_release(&live);
	return rc;
}

static const cof_jfield restore_fields[] = {{"snapshot", COF_JSTR, 1}, {NULL, 0, 0}};

int cof_volume_restore(cof_store *st, const char *org, const char *vol, json_t *body,
		       const cof_by *by, json_t **out, cof_err *err)
{
	restore_ctx r = {0};
	cof_view view;
	cof_by b = by ? *by : (cof_by){0};
	cof_landing l = {.vol = &view.vol, .apply = restore_apply, .ctx = &r, .by = &b};
	const char *sid;
	int rc = -1;

	if (cof_json_check(body, restore_fields, err))
		return -1;
	sid = cof_json_str(body, "snapshot");
	b.via = "restore";
	if (cof_view_open(st, org, vol, sid, &view, err))
		return -1;
	/* A snapshot's rows never change, so they may be read before the change. */
	if (cof_meta_list(st->meta, view.vno, view.seq, "", NULL, cof_items_add, &r.target, err))
		goto out;
	if (r.target.over < 0) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (cof_land(st, &l, err))
		goto out;
	*out = json_pack("{s:s, s:I, s:I, s:I}", "snapshot", sid, "seq", (json_int_t)l.seq,
			 "written", (json_int_t)r.written, "removed", (json_int_t)r.removed);
	rc = 0;
out:
	cof_items_release(&r.target);
	return rc;
}
