/*
 * content.c — content by hash, wherever it is kept: small content inline in the
 * metadata store, the rest in the blob store. Either is read through a
 * cof_blob_reader (blob.h), so nothing here needs a file descriptor.
 */
#include <stdlib.h>
#include <string.h>
#include "volume/volume.h"

int cof_content_put(cof_store *st, const void *data, size_t len, char sha[65],
		    cof_err *err)
{
	cof_blob_writer *w;
	int64_t size;

	if (len <= COF_INLINE_MAX) {
		if (cof_sha256_hex(data, len, sha))
			return cof_error(err, COF_EINTERNAL, "cannot hash content");
		return 1;
	}
	/* Twice at most: when a collector on another node deleted these bytes as
	 * they were stored, storing them again brings them back. */
	for (int attempt = 0; attempt < 2; attempt++) {
		int r;
		if (st->blobs->begin(st->blobs, &w, err))
			return -1;
		if (st->blobs->write(w, data, len, err)) {
			st->blobs->abort(w);
			return -1;
		}
		if (st->blobs->commit(w, sha, &size, err))
			return -1;
		r = cof_meta_blob_pending(st->meta, sha, size, err);
		if (r <= 0)
			return r;
	}
	return cof_error(err, COF_EUNAVAILABLE, "the content was being collected as it was "
			 "written; retry");
}

int cof_content_pending(cof_store *st, const char *sha, int64_t size, cof_err *err)
{
	int r = cof_meta_blob_pending(st->meta, sha, size, err);

	if (r > 0)
		return cof_error(err, COF_EUNAVAILABLE, "the content was being collected as it "
				 "was written; retry the write");
	return r;
}

int cof_content_reader(cof_store *st, const char *sha, int64_t size, const char *name,
		       cof_blob_reader **r, cof_err *err)
{
	int64_t stored = -1;

	if (st->blobs->open(st->blobs, sha, r, &stored, err))
		return -1;
	if (size >= 0 && stored != size) {
		cof_blob_close(*r);
		*r = NULL;
		return cof_error(err, COF_EINTERNAL,
				 "the content of %s%.200s%s is damaged: %lld bytes stored, %lld "
				 "recorded (content %.12s; run coffer fsck)", name ? "'" : "",
				 name ? name : "a file", name ? "'" : "", (long long)stored,
				 (long long)size, sha);
	}
	return 0;
}

int cof_content_open(cof_store *st, const char *sha, int64_t size, const char *name,
		     cof_blob_reader **r, cof_err *err)
{
	unsigned char *data = NULL;
	size_t len = 0;
	int rc = cof_meta_blob_inline(st->meta, sha, &data, &len, err);

	if (rc < 0)
		return -1;
	if (rc == 1)
		return cof_blob_reader_memory(data, len, r, err);
	return cof_content_reader(st, sha, size, name, r, err);
}

int cof_content_read(cof_store *st, const char *sha, int64_t size, unsigned char **out,
		     cof_err *err)
{
	cof_blob_reader *r;
	unsigned char *buf;
	size_t len = 0;
	int rc;

	/* Inline content comes straight from the metadata: no reader at all. */
	rc = cof_meta_blob_inline(st->meta, sha, out, &len, err);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		(*out)[len] = '\0';
		return 0;
	}
	if (!(buf = cof_malloc((size_t)size + 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (cof_content_reader(st, sha, size, NULL, &r, err)) {
		free(buf);
		return -1;
	}
	rc = cof_blob_read_full(r, 0, buf, (size_t)size, sha, err);
	cof_blob_close(r);
	if (rc) {
		free(buf);
		return -1;
	}
	buf[size] = '\0';
	*out = buf;
	return 0;
}
