/*
 * blob.h — the blob store: content addressed by SHA-256, each content stored once.
 *
 * A narrow interface so that another backend (S3) can replace the local
 * directory without touching the layers above. A blob is written through a
 * writer (hashing as it goes); commit makes it durable (fsync + rename) before
 * returning, so metadata that names it may commit afterwards.
 */
#ifndef COF_BLOB_H
#define COF_BLOB_H

#include <stdint.h>
#include "coffer.h"

typedef struct cof_blobstore cof_blobstore;
typedef struct cof_blob_writer cof_blob_writer;

/* Called for each stored blob by cof_blob_each; return nonzero to stop. */
typedef int (*cof_blob_each_fn)(void *ctx, const char *sha256, int64_t size,
				int64_t mtime);

struct cof_blobstore {
	/* Starts a new blob. */
	int (*begin)(cof_blobstore *bs, cof_blob_writer **out, cof_err *err);
	/* Appends bytes (hashing them). */
	int (*write)(cof_blob_writer *w, const void *data, size_t len, cof_err *err);
	/* Makes the blob durable under its hash; frees `w` in every case. */
	int (*commit)(cof_blob_writer *w, char sha256[65], int64_t *size, cof_err *err);
	/* Drops an unfinished blob; frees `w`. NULL is fine. */
	void (*abort)(cof_blob_writer *w);
	/* Opens a blob for reading; the caller closes *fd. COF_ENOTFOUND if absent. */
	int (*open)(cof_blobstore *bs, const char *sha256, int *fd, cof_err *err);
	/* Deletes a blob; absent is not an error. */
	int (*remove)(cof_blobstore *bs, const char *sha256, cof_err *err);
	/* Calls fn for every stored blob. */
	int (*each)(cof_blobstore *bs, cof_blob_each_fn fn, void *ctx, cof_err *err);
	/* Frees the store. */
	void (*close)(cof_blobstore *bs);
};

/* The local-directory backend: DIR/blobs/ab/cdef..., temp files in DIR/tmp. */
int cof_blobstore_local_open(const char *dir, cof_blobstore **out, cof_err *err);

#endif
