/*
 * held.c — content kept outside any volume (coffer.h, cof_upload_hold): an S3
 * multipart upload's parts, stored in the shared blob store as they arrive,
 * on whichever node gets them, and kept from the collector by pins under the
 * holder's name until the upload is completed or aborted.
 */
#include <stdlib.h>
#include "store/blob.h"
#include "volume/volume.h"

#define APPEND_BLOCK (1 << 20)

int cof_upload_hold(cof_upload *up, const char *org, const char *holder, char sha[65],
		    int64_t *size, cof_err *err)
{
	cof_store *st = up->st;
	cof_blob_writer *w = up->w;
	int rc = -1;

	/* small bytes too go to the blob store: no row names them inline */
	if (!w && (st->blobs->begin(st->blobs, &w, err) ||
		   st->blobs->write(w, up->head, up->headlen, err))) {
		if (w)
			st->blobs->abort(w);
		cof_upload_abort(up);
		return -1;
	}
	up->w = NULL;
	cof_upload_abort(up);
	/* held from the blob's commit to the pin's, as a write holds it to its change */
	cof_store_hold_content(st);
	if (!st->blobs->commit(w, sha, size, err) &&
	    !cof_content_pending(st, sha, *size, err) &&
	    !cof_meta_hold(st->meta, org, holder, sha, *size, err))
		rc = 0;
	cof_store_release_content(st);
	return rc;
}

int cof_held_append(cof_store *st, const char *sha, int64_t size, cof_upload *into,
		    cof_err *err)
{
	cof_blob_reader *r = NULL;
	unsigned char *buf = cof_malloc(APPEND_BLOCK);
	int64_t off = 0;
	int rc = 0;

	if (!buf)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (cof_content_reader(st, sha, size, "a held content", &r, err)) {
		free(buf);
		return -1;
	}
	while (off < size && !rc) {
		size_t got = 0;
		size_t want = size - off < APPEND_BLOCK ? (size_t)(size - off) : APPEND_BLOCK;
		if (cof_blob_read_at(r, off, buf, want, &got, err))
			rc = -1;
		else if (!got)
			rc = cof_error(err, COF_EINTERNAL, "the held content %.12s ends at %lld of "
				       "%lld bytes", sha, (long long)off, (long long)size);
		else if (cof_upload_write(into, buf, got, err))
			rc = -1;
		off += (int64_t)got;
	}
	cof_blob_close(r);
	free(buf);
	return rc;
}

int cof_held_release(cof_store *st, const char *org, const char *holder, cof_err *err)
{
	return cof_meta_unhold(st->meta, org, holder, err);
}
