/*
 * blob.c — the blob store's front: picks a backend from a URL, dispatches
 * reads through a reader's table, and a reader over bytes in memory (content
 * kept inline in the metadata, read like any blob).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "store/blob.h"
#include "store/blob_s3.h"
#include "util/util.h"

int cof_blobstore_open_url(const char *url, const char *data_dir, cof_blobstore **out,
			   cof_err *err)
{
	*out = NULL;
	if (!url || !*url)
		return cof_blobstore_local_open(data_dir, out, err);
	if (!strncmp(url, "s3://", 5))
		return cof_blobstore_s3_open(url, data_dir, out, err);
	if (!strncmp(url, "file:", 5))
		url += 5;
	if (!*url)
		return cof_error(err, COF_EVALIDATION, "--blobs: the directory is empty");
	if (strstr(url, "://"))
		return cof_error(err, COF_EVALIDATION,
				 "--blobs '%s': unknown blob backend (a directory, file:DIR or "
				 "s3://BUCKET/PREFIX)", url);
	return cof_blobstore_local_open(url, out, err);
}

int cof_blob_read_at(cof_blob_reader *r, int64_t off, void *buf, size_t len, size_t *got,
		     cof_err *err)
{
	return r->ops->read_at(r, off, buf, len, got, err);
}

int cof_blob_read_full(cof_blob_reader *r, int64_t off, void *buf, size_t len,
		       const char *sha, cof_err *err)
{
	size_t done = 0;

	while (done < len) {
		size_t got = 0;
		if (r->ops->read_at(r, off + (int64_t)done, (char *)buf + done, len - done, &got,
				    err))
			return -1;
		if (got == 0)
			return cof_error(err, COF_EINTERNAL, "content %.12s is shorter than recorded",
					 sha ? sha : "");
		done += got;
	}
	return 0;
}

int cof_blob_fd(cof_blob_reader *r)
{
	return r->ops->fd(r);
}

void cof_blob_close(cof_blob_reader *r)
{
	if (r)
		r->ops->close(r);
}

/* ---- a reader over memory */

typedef struct mem_reader {
	cof_blob_reader base;
	unsigned char *data;
	size_t len;
} mem_reader;

/* Copies what lies at `off`; past the end is *got = 0. */
static int mem_read_at(cof_blob_reader *r, int64_t off, void *buf, size_t len, size_t *got,
		       cof_err *err)
{
	mem_reader *m = (mem_reader *)r;

	*got = 0;
	if (off < 0)
		return cof_error(err, COF_EINTERNAL, "read at a negative offset");
	if ((uint64_t)off >= m->len)
		return 0;
	*got = m->len - (size_t)off < len ? m->len - (size_t)off : len;
	memcpy(buf, m->data + off, *got);
	return 0;
}

/* Memory has no file descriptor. */
static int mem_fd(cof_blob_reader *r)
{
	(void)r;
	return -1;
}

static void mem_close(cof_blob_reader *r)
{
	mem_reader *m = (mem_reader *)r;

	free(m->data);
	free(m);
}

static const cof_blob_reader_ops mem_ops = {mem_read_at, mem_fd, mem_close};

int cof_blob_reader_memory(unsigned char *data, size_t len, cof_blob_reader **out,
			   cof_err *err)
{
	mem_reader *m = cof_calloc(1, sizeof *m);

	if (!m) {
		free(data);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	m->base.ops = &mem_ops;
	m->data = data;
	m->len = len;
	*out = &m->base;
	return 0;
}

/* ---- a reader over a local file */

typedef struct fd_reader {
	cof_blob_reader base;
	int fd;
	int offer;               /* offered for sendfile */
} fd_reader;

static int fd_read_at(cof_blob_reader *r, int64_t off, void *buf, size_t len, size_t *got,
		      cof_err *err)
{
	ssize_t n;

	*got = 0;
	do
		n = pread(((fd_reader *)r)->fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return cof_error(err, COF_EINTERNAL, "reading content failed: %s", strerror(errno));
	*got = (size_t)n;
	return 0;
}

static int fd_fd(cof_blob_reader *r)
{
	return ((fd_reader *)r)->offer ? ((fd_reader *)r)->fd : -1;
}

static void fd_close(cof_blob_reader *r)
{
	close(((fd_reader *)r)->fd);
	free(r);
}

static const cof_blob_reader_ops fd_ops = {fd_read_at, fd_fd, fd_close};

int cof_blob_reader_fd(int fd, int offer, cof_blob_reader **out, cof_err *err)
{
	fd_reader *r = cof_calloc(1, sizeof *r);

	if (!r) {
		close(fd);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	r->base.ops = &fd_ops;
	r->fd = fd;
	r->offer = offer;
	*out = &r->base;
	return 0;
}

int cof_blob_io_error(cof_err *err, int e, const char *what)
{
	if (e == ENOSPC || e == EDQUOT)
		return cof_error(err, COF_EUNAVAILABLE,
				 "the server's disk is full; %s refused", what);
	return cof_error(err, COF_EINTERNAL, "%s failed: %s", what, strerror(e));
}
