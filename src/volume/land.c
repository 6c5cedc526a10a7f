/*
 * land.c — the one write path (volume.h, "the write path"): bytes stored as
 * content, then named by one change, under the collector's lock throughout.
 * A blob stored here is marked pending before the change; a change that is
 * refused, fails, or leaves the file unnamed abandons that mark, so its bytes
 * are collected as a cut-off upload's are (meta.h, blob_abandoned).
 * A file the caller asks to merge (a call's write of a path someone else
 * changed meanwhile) is merged by lines here, before its bytes are stored.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "volume/volume.h"

#define SNIFF_BYTES 4096
/* Files a landing sniffs on the caller's thread alone; past this, helper
 * threads sniff beside it (libmagic costs ~0.5-1 ms a small text file). */
#define SNIFF_ALONE 32
#define SNIFF_THREADS_MAX 8

static int read_error(const cof_land_file *f, cof_err *err)
{
	return cof_error(err, COF_EINTERNAL, "cannot read the bytes of '%.200s' to store them: %s",
			 f->name ? f->name : f->path, strerror(errno ? errno : EIO));
}

/* Commits writer w as f's blob and marks it pending. 0 or -1. */
static int commit_blob(cof_store *st, cof_land_file *f, cof_blob_writer *w, cof_err *err)
{
	if (st->blobs->commit(w, f->sha256, &f->size, err))
		return -1;
	f->pending_ = 1;   /* from here on the mark is ours to abandon */
	return cof_content_pending(st, f->sha256, f->size, err);
}

/* Stores an fd's bytes: whole into memory when inline, else streamed into a
 * blob. 0 or -1. */
static int store_fd(cof_store *st, cof_land_file *f, cof_err *err)
{
	char buf[65536];
	cof_blob_writer *w = NULL;
	struct stat sb;
	ssize_t k = 0;
	int64_t off = 0;

	errno = 0;
	if (fstat(f->fd, &sb))
		return read_error(f, err);
	f->size = sb.st_size;
	if (f->size <= COF_INLINE_MAX) {
		if (!(f->own_ = cof_malloc((size_t)f->size + 1)))
			return read_error(f, err);
		while (off < f->size &&
		       (k = pread(f->fd, f->own_ + off, (size_t)(f->size - off), off)) > 0)
			off += k;
		if (off != f->size || cof_sha256_hex(f->own_, (size_t)f->size, f->sha256))
			return read_error(f, err);
		f->inl = f->own_;
		return 0;
	}
	if (st->blobs->begin(st->blobs, &w, err))
		return -1;
	while ((k = pread(f->fd, buf, sizeof buf, off)) > 0) {
		if (st->blobs->write(w, buf, (size_t)k, err)) {
			st->blobs->abort(w);
			return -1;
		}
		off += k;
	}
	if (k < 0) {
		st->blobs->abort(w);
		return read_error(f, err);
	}
	return commit_blob(st, f, w, err);
}

/* Stores an upload: the head inline, or the blob its writer holds. */
static int store_upload(cof_store *st, cof_land_file *f, cof_err *err)
{
	cof_upload *up = f->up;
	cof_blob_writer *w = up->w;

	if (!w) {
		f->size = up->size;
		f->inl = up->head;
		return cof_sha256_hex(up->head, up->headlen, f->sha256)
			       ? cof_error(err, COF_EINTERNAL, "cannot hash the upload") : 0;
	}
	up->w = NULL;   /* committed or aborted by the commit: not the upload's now */
	return commit_blob(st, f, w, err);
}

/* The type the change names: given, kept (same bytes), or sniffed. */
static void choose_type(cof_store *st, cof_land_file *f)
{
	size_t max = f->sniff ? f->sniff : SNIFF_BYTES, len = 0;
	unsigned char head[SNIFF_BYTES];
	const void *p = head;

	if (f->ctype && f->ctype[0]) {
		snprintf(f->type, sizeof f->type, "%s", f->ctype);
		return;
	}
	if (f->keep_ctype && f->keep_ctype[0] && f->keep_sha && !strcmp(f->keep_sha, f->sha256)) {
		snprintf(f->type, sizeof f->type, "%s", f->keep_ctype);
		return;
	}
	if (max > SNIFF_BYTES)
		max = SNIFF_BYTES;
	if (f->kind == COF_LAND_UPLOAD) {
		p = f->up->head;
		len = f->up->headlen;
	} else if (f->kind == COF_LAND_MEMORY) {
		p = f->data;
		len = f->len;
	} else if (f->inl) {   /* an fd's bytes read whole to keep inline: not read again */
		p = f->inl;
		len = (size_t)f->size;
	} else if (f->kind == COF_LAND_FD) {
		ssize_t h = pread(f->fd, head, max, 0);
		len = h > 0 ? (size_t)h : 0;
	}
	cof_sniff_type(st, f->path, p, len < max ? len : max, f->type, sizeof f->type);
}

static int store_one(cof_store *st, cof_land_file *f, cof_err *err)
{
	int r;

	f->inl = NULL;
	f->unnamed = 0;
	f->typed_ = 0;
	f->type[0] = '\0';
	switch (f->kind) {
	case COF_LAND_UPLOAD:
		if (store_upload(st, f, err))
			return -1;
		break;
	case COF_LAND_MEMORY:
		f->size = (int64_t)f->len;
		if ((r = cof_content_put(st, f->data, f->len, f->sha256, err)) < 0)
			return -1;
		if (r == 1)
			f->inl = f->data;
		else
			f->pending_ = 1;
		break;
	case COF_LAND_FD:
		if (f->open_fd) {
			errno = 0;
			if ((f->fd = f->open_fd(f->open_arg)) < 0)
				return read_error(f, err);
		}
		r = store_fd(st, f, err);
		/* before the fd it may read is closed; bytes kept inline are
		 * sniffed with the others' (sniff_all) */
		if (!r && !f->inl) {
			choose_type(st, f);
			f->typed_ = 1;
		}
		if (f->open_fd) {
			close(f->fd);
			f->fd = -1;
		}
		return r;
	case COF_LAND_KNOWN:
		snprintf(f->type, sizeof f->type, "%s", f->ctype ? f->ctype : "");
		f->typed_ = 1;
		return 0;
	}
	return 0;   /* typed by sniff_all, with the bytes still held */
}

/* ------------------------------------------------------------ sniffing */

typedef struct sniff_run {
	cof_store *st;
	cof_landing *l;
	atomic_size_t next;
} sniff_run;

/* Types the files not typed yet, taking them one at a time from r->next. */
static void *sniff_work(void *arg)
{
	sniff_run *r = arg;
	size_t i;

	while ((i = atomic_fetch_add(&r->next, 1)) < r->l->nfiles) {
		cof_land_file *f = &r->l->files[i];
		if (!f->typed_) {
			choose_type(r->st, f);
			f->typed_ = 1;
		}
	}
	return NULL;
}

/* Chooses the type of every stored file not typed yet (their bytes are in
 * memory: inline, given, an upload's head). A change of many files sniffs
 * them on one thread a core (libmagic's pool has a handle each), so a commit
 * of thousands of small untyped files is not one core's libmagic time. The
 * types are what one thread would choose: each file's alone. */
static void sniff_all(cof_store *st, cof_landing *l)
{
	pthread_t t[SNIFF_THREADS_MAX];
	sniff_run r = {st, l, 0};
	size_t todo = 0, nt = 0;
	long cores;

	for (size_t i = 0; i < l->nfiles; i++)
		todo += !l->files[i].typed_;
	cores = todo > SNIFF_ALONE ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
	for (; nt + 1 < (size_t)(cores > 0 ? cores : 1) && nt < SNIFF_THREADS_MAX; nt++)
		if (pthread_create(&t[nt], NULL, sniff_work, &r))
			break;   /* fewer helpers: the caller's thread sniffs the rest */
	sniff_work(&r);
	for (size_t k = 0; k < nt; k++)
		pthread_join(t[k], NULL);
}

/* ------------------------------------------------------------ merging */

/* The bytes of fd-kind file f whole (malloc'd, *len bytes), or NULL when
 * they cannot be read or are more than text is merged at. */
static unsigned char *fd_bytes(cof_land_file *f, size_t *len)
{
	unsigned char *b = NULL;
	struct stat sb;
	size_t off = 0;
	ssize_t k = 0;
	int fd = f->open_fd ? f->open_fd(f->open_arg) : f->fd;

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &sb) && sb.st_size <= COF_MERGE_TEXT_MAX &&
	    (b = malloc((size_t)sb.st_size + 1))) {
		while (off < (size_t)sb.st_size &&
		       (k = pread(fd, b + off, (size_t)sb.st_size - off, (off_t)off)) > 0)
			off += (size_t)k;
		if (off != (size_t)sb.st_size) {
			free(b);
			b = NULL;
		}
	}
	if (f->open_fd)
		close(fd);
	*len = off;
	return b;
}

/* Whether f may be merged at all: asked, made from a version (a file both
 * created is a conflict), bytes the caller gives, not a link. */
static int mergeable(const cof_land_file *f)
{
	return f->merge && f->seen > 0 && (f->kind == COF_LAND_FD || f->kind == COF_LAND_MEMORY) &&
	       !cof_is_symlink(f->ctype);
}

/* Merges f by lines when the path moved on since f->seen (volume.h,
 * cof_land_file.merge). Whatever does not merge clean, f is left as given:
 * the caller's apply finds the path at another version, a conflict. `held`:
 * the merged bytes this landing holds until its change, bounded as one
 * merge's are (COF_MERGE_TEXT_TOTAL). */
static void merge_one(cof_store *st, int64_t vno, cof_land_file *f, int64_t *held)
{
	cof_entry *cur = cof_malloc(sizeof *cur), *base = cof_malloc(sizeof *base);
	unsigned char *b = NULL, *o = NULL, *t = NULL, *m = NULL;
	size_t tlen = 0, mlen = 0;
	const void *tp;
	cof_err e = {0};

	if (!cur || !base)
		goto out;
	/* now another version, and the one seen still known (history kept) */
	if (cof_meta_entry_get(st->meta, vno, f->path, -1, cur, &e) != 1 ||
	    cur->version == f->seen ||
	    cof_meta_entry_get(st->meta, vno, f->path, f->seen, base, &e) != 1 ||
	    base->version != f->seen)
		goto out;
	if (cof_is_symlink(cur->ctype) || cof_is_symlink(base->ctype) ||
	    cur->size > COF_MERGE_TEXT_MAX || base->size > COF_MERGE_TEXT_MAX)
		goto out;                       /* binary: a conflict */
	if (f->kind == COF_LAND_MEMORY) {
		tp = f->data;
		tlen = f->len;
	} else if (!(tp = t = fd_bytes(f, &tlen))) {
		goto out;
	}
	if (!cof_merge_is_text(tp, tlen) ||
	    cof_content_read(st, base->sha256, base->size, &b, &e) ||
	    cof_content_read(st, cur->sha256, cur->size, &o, &e) ||
	    !cof_merge_is_text(b, (size_t)base->size) || !cof_merge_is_text(o, (size_t)cur->size))
		goto out;
	if (cof_merge_text(b, (size_t)base->size, o, (size_t)cur->size, tp, tlen, &m, &mlen,
			   &e) != 1 ||
	    (int64_t)mlen > COF_MERGE_TEXT_MAX || *held + (int64_t)mlen > COF_MERGE_TEXT_TOTAL)
		goto out;                       /* an overlap (or too much): a conflict */
	*held += (int64_t)mlen;
	f->merged_ = m;
	m = NULL;
	f->kind = COF_LAND_MEMORY;
	f->data = f->merged_;
	f->len = mlen;
	f->seen = cur->version;
	f->merged = 1;
out:
	/* not merged is a conflict, never a lost write: the caller keeps its bytes */
	if (e.code != COF_OK)
		fprintf(stderr, "cofferd: '%s' is not merged (left a conflict): %s\n",
			f->name ? f->name : f->path, e.msg);
	cof_err_clear(&e);
	free(cur);
	free(base);
	free(b);
	free(o);
	free(t);
	free(m);
}

/* cof_txn_fn: the caller's apply, each file named unless it says otherwise
 * (a change may run more than once). */
static int land_apply(cof_txn *tx, void *arg, cof_err *err)
{
	cof_landing *l = arg;

	for (size_t i = 0; i < l->nfiles; i++)
		l->files[i].unnamed = 0;
	tx->by = l->by_text_;
	return l->apply(tx, l, err);
}

json_t *cof_by_json(const cof_by *by)
{
	static const char *const keys[] = {"keyId", "agent", "user", "runId", "callId",
					   "relaySession", "tool", "via"};
	json_t *o;

	if (!by)
		return NULL;
	const char *vals[] = {by->key_id, by->agent, by->user, by->run_id, by->call_id,
			      by->relay_session, by->tool, by->via};
	o = json_object();
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (vals[i] && vals[i][0])
			json_object_set_new(o, keys[i], json_string(vals[i]));
	return o;
}

int cof_land(cof_store *st, cof_landing *l, cof_err *err)
{
	int rc = 0;
	size_t i;
	json_t *by = cof_by_json(l->by);

	/* the text each changes row records */
	l->by_text_ = by ? json_dumps(by, JSON_COMPACT) : NULL;
	json_decref(by);
	/* Held from the first blob's commit to the metadata's, so the collector
	 * never deletes content a write is about to name. */
	if (!l->held)
		cof_store_hold_content(st);
	/* merged before any byte is stored: the merge is what gets stored */
	int64_t held = 0;
	for (i = 0; i < l->nfiles; i++) {
		l->files[i].merged = 0;
		if (mergeable(&l->files[i]))
			merge_one(st, l->vno ? l->vno : l->vol->vno, &l->files[i], &held);
	}
	for (i = 0; i < l->nfiles && !rc; i++) {
		l->files[i].pending_ = 0;
		rc = store_one(st, &l->files[i], err);
	}
	if (!rc)
		sniff_all(st, l);
	if (!rc)
		rc = cof_meta_change_many(st->meta, l->vno ? l->vno : l->vol->vno, l->nfiles,
					  land_apply, l, &l->seq, err);
	for (size_t j = 0; j < i; j++) {
		cof_land_file *f = &l->files[j];
		/* refused, or unnamed: the bytes are as a cut-off upload's */
		if (f->pending_ && (rc || f->unnamed)) {
			cof_err e2 = {0};
			cof_meta_blob_abandoned(st->meta, f->sha256, &e2);
			cof_err_clear(&e2);
		}
		f->pending_ = 0;
	}
	if (!l->held)
		cof_store_release_content(st);
	for (i = 0; i < l->nfiles; i++) {
		cof_land_file *f = &l->files[i];
		if (f->kind == COF_LAND_UPLOAD) {
			cof_upload_abort(f->up);   /* its writer, if never committed */
			f->up = NULL;
		}
		free(f->own_);
		f->own_ = NULL;
		free(f->merged_);   /* (f->data pointed at it) */
		f->merged_ = NULL;
		if (f->merged)
			f->data = NULL;
		f->inl = NULL;
	}
	free(l->by_text_);
	l->by_text_ = NULL;
	if (rc)
		return -1;
	if (!l->quiet) {
		/* l->vol is the row as read before the change: told with its seq */
		cof_volrow v = *l->vol;
		if (l->seq > v.seq)
			v.seq = l->seq;
		cof_store_changed(st, &v);
	}
	return 0;
}
