/*
 * blob_local.c — the blob store in a local directory.
 *
 * Layout: blobs/<first 2 hex>/<remaining 62 hex>. A writer streams into
 * tmp/<random>, hashing as it goes; commit fsyncs the file, renames it into
 * place (or drops it if that content is already stored, refreshing the stored
 * copy's mtime so the garbage collector's grace starts again) and fsyncs the
 * directory, so the blob survives power loss before any metadata names it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "util/metrics.h"
#include "store/blob.h"
#include "util/util.h"

typedef struct local_store {
	cof_blobstore base;
	char *dir;      /* DIR/blobs */
	char *tmpdir;   /* DIR/tmp */
	int no_fd;      /* $COFFER_BLOB_NO_FD=1: readers offer no fd (as S3's) */
} local_store;

struct cof_blob_writer {
	local_store *st;
	int fd;
	int64_t size;
	EVP_MD_CTX *md;
	char tmp[4200];
};

static int local_begin(cof_blobstore *bs, cof_blob_writer **out, cof_err *err)
{
	local_store *st = (local_store *)bs;
	cof_blob_writer *w = cof_calloc(1, sizeof *w);
	char id[40];

	if (!w)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	w->st = st;
	cof_id_new("up_", id, sizeof id);
	snprintf(w->tmp, sizeof w->tmp, "%s/%s", st->tmpdir, id);
	w->fd = cof_blob_tmp_create(w->tmp, O_WRONLY);
	w->md = EVP_MD_CTX_new();
	if (w->fd < 0 || !w->md || !EVP_DigestInit_ex(w->md, EVP_sha256(), NULL)) {
		int e = errno;
		if (w->fd >= 0) {
			close(w->fd);
			unlink(w->tmp);
		}
		EVP_MD_CTX_free(w->md);
		free(w);
		return cof_blob_io_error(err, e, "storing the upload");
	}
	*out = w;
	return 0;
}

static int local_write(cof_blob_writer *w, const void *data, size_t len, cof_err *err)
{
	if (cof_write_full(w->fd, data, len) < 0)
		return cof_blob_io_error(err, errno, "storing the upload");
	EVP_DigestUpdate(w->md, data, len);
	w->size += (int64_t)len;
	return 0;
}

static void local_abort(cof_blob_writer *w)
{
	if (!w)
		return;
	close(w->fd);
	unlink(w->tmp);
	EVP_MD_CTX_free(w->md);
	free(w);
}

static void blob_path(local_store *st, const char *sha, char *out, size_t outsz,
		      char *dir, size_t dirsz)
{
	snprintf(dir, dirsz, "%s/%.2s", st->dir, sha);
	snprintf(out, outsz, "%s/%.2s/%s", st->dir, sha, sha + 2);
}

static int local_commit(cof_blob_writer *w, char sha[65], int64_t *size, cof_err *err)
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	char path[4300], dir[4300];
	int rc = -1, made;

	EVP_DigestFinal_ex(w->md, md, &mdlen);
	cof_hex(md, 32, sha);
	*size = w->size;
	int64_t t0 = cof_mono_us();
	if (fsync(w->fd) < 0) {
		cof_blob_io_error(err, errno, "storing the upload");
		goto out;
	}
	cof_metric_observe(COF_H_FSYNC, cof_mono_us() - t0);
	blob_path(w->st, sha, path, sizeof path, dir, sizeof dir);
	made = mkdir(dir, 0700) == 0;
	if (!made && errno != EEXIST) {
		cof_blob_io_error(err, errno, "storing the upload");
		goto out;
	}
	if (access(path, F_OK) == 0) {
		/* Same content already stored: keep one copy, restart its grace. */
		utimensat(AT_FDCWD, path, NULL, 0);
		rc = 0;
		goto out;
	}
	/* The file's entry in its folder, and a folder made just now in its
	 * parent: both durable before the metadata naming the blob commits. */
	if (rename(w->tmp, path) < 0 || cof_fsync_dir(dir) < 0 ||
	    (made && cof_fsync_dir(w->st->dir) < 0)) {
		cof_blob_io_error(err, errno, "storing the upload");
		goto out;
	}
	w->tmp[0] = '\0';
	rc = 0;
out:
	close(w->fd);
	if (w->tmp[0])
		unlink(w->tmp);
	EVP_MD_CTX_free(w->md);
	free(w);
	return rc;
}

static int local_open(cof_blobstore *bs, const char *sha, cof_blob_reader **out,
		      int64_t *size, cof_err *err)
{
	char path[4300], dir[4300];
	struct stat sb;
	int fd;

	blob_path((local_store *)bs, sha, path, sizeof path, dir, sizeof dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return cof_error(err, COF_ENOTFOUND, "content %.12s is missing", sha);
		return cof_error(err, COF_EINTERNAL, "cannot open content %.12s: %s",
				 sha, strerror(errno));
	}
	if (fstat(fd, &sb) < 0) {
		close(fd);
		return cof_error(err, COF_EINTERNAL, "cannot open content %.12s: %s", sha,
				 strerror(errno));
	}
	*size = (int64_t)sb.st_size;
	return cof_blob_reader_fd(fd, !((local_store *)bs)->no_fd, out, err);
}

static int local_remove(cof_blobstore *bs, const char *sha, cof_err *err)
{
	char path[4300], dir[4300];

	blob_path((local_store *)bs, sha, path, sizeof path, dir, sizeof dir);
	if (unlink(path) < 0 && errno != ENOENT)
		return cof_error(err, COF_EINTERNAL, "cannot delete content %.12s: %s",
				 sha, strerror(errno));
	return 0;
}

static int local_each(cof_blobstore *bs, cof_blob_each_fn fn, void *ctx, cof_err *err)
{
	local_store *st = (local_store *)bs;
	DIR *top = opendir(st->dir);
	struct dirent *d;
	int stop = 0;

	if (!top)
		return cof_error(err, COF_EINTERNAL, "cannot read '%s': %s", st->dir,
				 strerror(errno));
	while (!stop && (d = readdir(top))) {
		char sub[4300];
		DIR *dd;
		struct dirent *e;
		if (strlen(d->d_name) != 2)
			continue;
		snprintf(sub, sizeof sub, "%s/%s", st->dir, d->d_name);
		if (!(dd = opendir(sub)))
			continue;
		while (!stop && (e = readdir(dd))) {
			char sha[65], path[4400];
			struct stat sb;
			if (strlen(e->d_name) != 62)
				continue;
			snprintf(sha, sizeof sha, "%s%s", d->d_name, e->d_name);
			snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
			if (stat(path, &sb) < 0)
				continue;
			stop = fn(ctx, sha, (int64_t)sb.st_size, (int64_t)sb.st_mtime);
		}
		closedir(dd);
	}
	closedir(top);
	return 0;
}

static void local_close(cof_blobstore *bs)
{
	local_store *st = (local_store *)bs;

	if (!st)
		return;
	free(st->dir);
	free(st->tmpdir);
	free(st);
}

int cof_blobstore_local_open(const char *dir, cof_blobstore **out, cof_err *err)
{
	local_store *st = cof_calloc(1, sizeof *st);
	cof_buf a = COF_BUF_INIT, b = COF_BUF_INIT;
	int made = 0, ok = 0;

	if (!st || cof_buf_addf(&a, "%s/blobs", dir) || cof_buf_addf(&b, "%s/tmp", dir)) {
		free(st);
		cof_buf_release(&a);
		cof_buf_release(&b);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	st->dir = cof_buf_detach(&a, NULL);
	st->tmpdir = cof_buf_detach(&b, NULL);
	if (mkdir(dir, 0700) == 0 || errno == EEXIST) {
		made = mkdir(st->dir, 0700) == 0;
		ok = made || errno == EEXIST;
	}
	/* a blobs/ made just now is made durable in the store's root */
	if (!ok || (mkdir(st->tmpdir, 0700) < 0 && errno != EEXIST) ||
	    (made && cof_fsync_dir(dir) < 0)) {
		int e = errno;
		local_close(&st->base);
		return cof_error(err, COF_EINTERNAL, "cannot create '%s/blobs': %s", dir,
				 strerror(e));
	}
	cof_blob_tmp_sweep(st->tmpdir, "");
	/* For tests and diagnosis: serve every download through read_at, the
	 * path a backend without local files takes, instead of sendfile. */
	st->no_fd = getenv("COFFER_BLOB_NO_FD") && !strcmp(getenv("COFFER_BLOB_NO_FD"), "1");
	st->base.name = "local";
	st->base.remote = 0;
	st->base.begin = local_begin;
	st->base.write = local_write;
	st->base.commit = local_commit;
	st->base.abort = local_abort;
	st->base.open = local_open;
	st->base.remove = local_remove;
	st->base.each = local_each;
	st->base.close = local_close;
	*out = &st->base;
	return 0;
}
