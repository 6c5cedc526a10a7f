/*
 * content.c — content by hash, wherever it is kept: small content inline in the
 * metadata store, the rest in the blob store. Readers always get an fd, so the
 * HTTP layer can send either with the same zero-copy path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
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

/* An fd over bytes held in memory: a memfd sealed against writes and resizing
 * once filled, so whoever reads it (sendfile, mmap) sees exactly these bytes. */
static int memory_fd(const unsigned char *data, size_t len, int *fd, cof_err *err)
{
	size_t off = 0;

	*fd = memfd_create("coffer-inline", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0)
		return cof_error(err, COF_EINTERNAL, "memfd_create: %s", strerror(errno));
	while (off < len) {
		ssize_t n = write(*fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(*fd);
			*fd = -1;
			return cof_error(err, COF_EINTERNAL, "memfd write: %s", strerror(errno));
		}
		off += (size_t)n;
	}
	if (fcntl(*fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL)) {
		cof_error(err, COF_EINTERNAL, "memfd seal: %s", strerror(errno));
		close(*fd);
		*fd = -1;
		return -1;
	}
	lseek(*fd, 0, SEEK_SET);
	return 0;
}

int cof_content_open(cof_store *st, const char *sha, int *fd, cof_err *err)
{
	unsigned char *data = NULL;
	size_t len = 0;
	int r = cof_meta_blob_inline(st->meta, sha, &data, &len, err);

	if (r < 0)
		return -1;
	if (r == 1) {
		r = memory_fd(data, len, fd, err);
		free(data);
		return r;
	}
	return st->blobs->open(st->blobs, sha, fd, err);
}

int cof_content_read(cof_store *st, const char *sha, int64_t size, unsigned char **out,
		     cof_err *err)
{
	unsigned char *buf;
	size_t len = 0;
	int64_t got = 0;
	int fd, r;

	/* Inline content comes straight from the metadata: no fd at all. */
	r = cof_meta_blob_inline(st->meta, sha, out, &len, err);
	if (r < 0)
		return -1;
	if (r == 1) {
		(*out)[len] = '\0';
		return 0;
	}
	if (!(buf = cof_malloc((size_t)size + 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (st->blobs->open(st->blobs, sha, &fd, err)) {
		free(buf);
		return -1;
	}
	while (got < size) {
		ssize_t n = pread(fd, buf + got, (size_t)(size - got), got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			free(buf);
			return cof_error(err, COF_EINTERNAL, "content %.12s is shorter than recorded",
					 sha);
		}
		got += n;
	}
	close(fd);
	buf[size] = '\0';
	*out = buf;
	return 0;
}
