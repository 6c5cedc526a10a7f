/*
 * blob.h — the blob store: content addressed by SHA-256, each content stored once.
 *
 * A narrow interface so that another backend (S3) can replace the local
 * directory without touching the layers above. A blob is written through a
 * writer (hashing as it goes); commit makes it durable (fsync + rename) before
 * returning, so metadata that names it may commit afterwards. A blob is read
 * through a reader at any offset (ranged reads: an S3 GET with Range); a
 * reader may also offer a local file descriptor, which downloads hand to
 * sendfile, but nothing above this interface needs one.
 */
#ifndef COF_BLOB_H
#define COF_BLOB_H

#include <stdint.h>
#include <sys/types.h>
#include "coffer.h"

typedef struct cof_blobstore cof_blobstore;
typedef struct cof_blob_writer cof_blob_writer;
typedef struct cof_blob_reader cof_blob_reader;
typedef struct cof_blob_reader_ops cof_blob_reader_ops;

/* Called for each stored blob by cof_blob_each; return nonzero to stop. */
typedef int (*cof_blob_each_fn)(void *ctx, const char *sha256, int64_t size,
				int64_t mtime);

/* What a reader does; each backend has one table. */
struct cof_blob_reader_ops {
	/* Reads up to `len` bytes at `off` into buf; *got is how many (fewer
	 * than asked is fine; 0 only at or past the end). -1 with err on a
	 * failure (the backend's I/O, the peer, memory). */
	int (*read_at)(cof_blob_reader *r, int64_t off, void *buf, size_t len, size_t *got,
		       cof_err *err);
	/* A local file descriptor holding the blob (for sendfile), owned by the
	 * reader (do not close it), or -1 when the backend has none. */
	int (*fd)(cof_blob_reader *r);
	/* Frees the reader. */
	void (*close)(cof_blob_reader *r);
};

/* The base of every backend's reader (its first member). */
struct cof_blob_reader {
	const cof_blob_reader_ops *ops;
};

struct cof_blobstore {
	const char *name;        /* "local", "s3" */
	int remote;              /* 1 when its bytes are on another host (S3) */
	/* Starts a new blob. */
	int (*begin)(cof_blobstore *bs, cof_blob_writer **out, cof_err *err);
	/* Appends bytes (hashing them). */
	int (*write)(cof_blob_writer *w, const void *data, size_t len, cof_err *err);
	/* Makes the blob durable under its hash; frees `w` in every case. */
	int (*commit)(cof_blob_writer *w, char sha256[65], int64_t *size, cof_err *err);
	/* Drops an unfinished blob; frees `w`. NULL is fine. */
	void (*abort)(cof_blob_writer *w);
	/* Opens a blob for reading: *r (close with cof_blob_close) and *size, the
	 * size the backend holds. COF_ENOTFOUND if absent. */
	int (*open)(cof_blobstore *bs, const char *sha256, cof_blob_reader **r, int64_t *size,
		    cof_err *err);
	/* Deletes a blob; absent is not an error. */
	int (*remove)(cof_blobstore *bs, const char *sha256, cof_err *err);
	/* Calls fn for every stored blob. */
	int (*each)(cof_blobstore *bs, cof_blob_each_fn fn, void *ctx, cof_err *err);
	/* Frees the store. */
	void (*close)(cof_blobstore *bs);
};

/* Opens the blob store `url` names: NULL or "" = the local directory
 * `data_dir`; a plain path (or "file:PATH") = a local directory there;
 * "s3://BUCKET/PREFIX?..." = S3 where built in (else a clear COF_EVALIDATION). */
int cof_blobstore_open_url(const char *url, const char *data_dir, cof_blobstore **out,
			   cof_err *err);
/* The local-directory backend: DIR/blobs/ab/cdef..., temp files in DIR/tmp. */
int cof_blobstore_local_open(const char *dir, cof_blobstore **out, cof_err *err);

/* ---- readers (blob.c) */
/* r->ops->read_at. */
int cof_blob_read_at(cof_blob_reader *r, int64_t off, void *buf, size_t len, size_t *got,
		     cof_err *err);
/* Reads exactly `len` bytes at `off`: a blob that ends before is COF_EINTERNAL
 * "content SHA is shorter than recorded" (`sha` names it; may be NULL). */
int cof_blob_read_full(cof_blob_reader *r, int64_t off, void *buf, size_t len,
		       const char *sha, cof_err *err);
/* r->ops->fd: a local fd owned by the reader, or -1. */
int cof_blob_fd(cof_blob_reader *r);
/* Frees the reader; NULL is fine. */
void cof_blob_close(cof_blob_reader *r);
/* A reader over `len` bytes at `data`, which it takes (free()d at close). */
int cof_blob_reader_memory(unsigned char *data, size_t len, cof_blob_reader **out,
			   cof_err *err);
/* A reader over the local file `fd`, which it takes (closed at close); it
 * offers `fd` for sendfile when `offer` (else its fd op says -1). */
int cof_blob_reader_fd(int fd, int offer, cof_blob_reader **out, cof_err *err);

/* Blob writers' temp files in DATA/tmp, shared by the processes of a data dir
 * (store/lock.c): made exclusive (O_EXCL) and locked while written, and swept
 * after a crash only when unlocked and older than a minute. _create returns
 * the fd (`how`: O_WRONLY or O_RDWR) or -1 with errno. */
int cof_blob_tmp_create(const char *path, int how);
/* Maps errno `e` of storing bytes to the API: a full disk is 503 with a clear
 * cause, anything else 500 naming `what`. Returns -1. */
int cof_blob_io_error(cof_err *err, int e, const char *what);
void cof_blob_tmp_sweep(const char *tmpdir, const char *prefix);

#endif
