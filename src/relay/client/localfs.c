/*
 * localfs.c — the user's folder, reached only beneath one directory fd (see
 * localfs.h). Every open goes through cof_lfs_open_beneath: openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, or, where the
 * kernel has no openat2 (ENOSYS), a walk that opens one component at a time
 * with O_NOFOLLOW (and O_DIRECTORY for the folders on the way). Single names
 * inside an already opened folder are opened with openat(O_NOFOLLOW), which
 * cannot leave it. So a symlink is never followed, whichever side made it and
 * whenever: a swap between a check and a use ends in ELOOP or in a rename that
 * replaces the link itself, never in a write through it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "relay/client/lfs_int.h"

int cof_lfs_open(const char *dir, cof_excl *excl, const cof_limits *limits, cof_lfs **out,
		 cof_err *err)
{
	cof_lfs *fs = cof_calloc(1, sizeof *fs);
	int fd;

	if (!fs) {
		cof_excl_free(excl);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(fs);
		cof_excl_free(excl);
		return cof_error(err, e == ENOENT ? COF_ENOTFOUND : COF_EVALIDATION,
				 "cannot open folder '%s': %s", dir, strerror(e));
	}
	fs->dirfd = fd;
	fs->excl = excl;
	if (limits)
		fs->limits = *limits;
	else
		cof_limits_default(&fs->limits);
	*out = fs;
	return 0;
}

void cof_lfs_close(cof_lfs *fs)
{
	if (!fs)
		return;
	close(fs->dirfd);
	cof_excl_free(fs->excl);
	free(fs);
}

void cof_lfs_force_walk(cof_lfs *fs, int on)
{
	fs->walk_only = on;
}

int cof_lfs_path(const char *path, size_t len, int allow_root, const char **out,
		 cof_err *err)
{
	if (!path)
		path = "", len = 0;
	if (allow_root && (len == 0 || (len == 1 && path[0] == '.'))) {
		*out = "";
		return 0;
	}
	if (len > 0 && path[0] == '/')
		return cof_error(err, COF_EVALIDATION,
				 "path '%.200s' is absolute; paths are relative to the connected "
				 "folder", path);
	return cof_path_check(path, len, "path", out, err);
}

void cof_lfs_limits(const cof_lfs *fs, cof_limits *out)
{
	*out = fs->limits;
}

int cof_lfs_excluded(const cof_lfs *fs, const char *path, int is_dir)
{
	return fs->excl && path[0] && cof_excl_match(fs->excl, path, is_dir);
}

/* The API error for an errno of an open or a walk under the folder. */
int cof_lfs_errno(int e, const char *path, cof_err *err)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return cof_error(err, COF_ENOTFOUND, "no file or folder '%.300s' in the "
				 "connected folder", path);
	case ELOOP:
	case EXDEV:
		return cof_error(err, COF_EFORBIDDEN, "'%.300s' goes through a symbolic link; "
				 "symlinks are never followed", path);
	case EACCES:
	case EPERM:
		return cof_error(err, COF_EFORBIDDEN, "'%.300s': permission denied", path);
	case EISDIR:
		return cof_error(err, COF_EVALIDATION, "'%.300s' is a folder", path);
	case ENAMETOOLONG:
		return cof_error(err, COF_EVALIDATION, "'%.300s' is too long", path);
	case ENXIO:
	case ETXTBSY:
		return cof_error(err, COF_EFORBIDDEN, "'%.300s' is not a regular file", path);
	case EFBIG:
	case ENOSPC:
	case EDQUOT:
		return cof_error(err, COF_ETOOLARGE, "'%.300s': %s", path, strerror(e));
	default:
		return cof_error(err, COF_EINTERNAL, "'%.300s': %s", path, strerror(e));
	}
}

/* Opens `path` (checked; "" = the folder) beneath `dirfd`, never following a
 * symlink (util's cof_open_beneath; the walk alone when a test asked, or the
 * kernel has no openat2). Returns the fd or -1 with errno. */
int cof_lfs_open_beneath(cof_lfs *fs, int dirfd, const char *path, int flags, mode_t mode)
{
	if (fs->walk_only)
		return cof_open_beneath_walk(dirfd, path, flags, mode);
	return cof_open_beneath(dirfd, path, flags, mode);
}

int cof_lfs_openat(cof_lfs *fs, const char *path, int flags, cof_err *err)
{
	int fd = cof_lfs_open_beneath(fs, fs->dirfd, path, flags, 0);

	if (fd < 0)
		return cof_lfs_errno(errno, path[0] ? path : ".", err), -1;
	return fd;
}

/* "file is 11 MB; the limit is 10 MB". */
static int lfs_too_large(const cof_lfs *fs, const char *path, int64_t size, cof_err *err)
{
	char have[32], lim[32];

	cof_size_fmt(size, have, sizeof have);
	cof_size_fmt(fs->limits.file_bytes, lim, sizeof lim);
	return cof_error(err, COF_ETOOLARGE, "'%.300s' is %s; the limit is %s", path, have, lim);
}

/* Reads a regular file open at `fd` whole (at most the size limit, told by
 * fstat on this fd and checked again while reading, as it may grow). */
int cof_lfs_read_fd(const cof_lfs *fs, int fd, const char *path, unsigned char **data,
		       size_t *len, cof_err *err)
{
	struct stat st;
	size_t cap, n = 0;
	unsigned char *buf;

	if (fstat(fd, &st))
		return cof_lfs_errno(errno, path, err);
	if (S_ISDIR(st.st_mode))
		return cof_error(err, COF_EVALIDATION, "'%.300s' is a folder", path);
	if (!S_ISREG(st.st_mode))
		return cof_error(err, COF_EFORBIDDEN, "'%.300s' is not a regular file", path);
	if (st.st_size > fs->limits.file_bytes)
		return lfs_too_large(fs, path, st.st_size, err);
	cap = (size_t)st.st_size + 1;
	if (!(buf = cof_malloc(cap + 1)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return cof_lfs_errno(e, path, err);
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap) { /* it grew since fstat */
			if ((int64_t)n > fs->limits.file_bytes) {
				free(buf);
				return lfs_too_large(fs, path, (int64_t)n, err);
			}
			unsigned char *nb = cof_realloc(buf, cap * 2 + 1);
			buf = nb;
			cap *= 2;
		}
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}

int cof_lfs_slurp(cof_lfs *fs, const char *path, unsigned char **data, size_t *len,
		  int *exists, cof_err *err)
{
	int fd = cof_lfs_open_beneath(fs, fs->dirfd, path, O_RDONLY | O_NONBLOCK, 0);
	int rc;

	*exists = 0;
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return cof_lfs_errno(errno, path, err);
	rc = cof_lfs_read_fd(fs, fd, path, data, len, err);
	close(fd);
	if (rc == 0)
		*exists = 1;
	return rc;
}

int cof_lfs_read(cof_lfs *fs, const char *path, json_t **out, cof_err *err)
{
	unsigned char *d;
	size_t n;
	int exists;
	json_t *content;
	const char *enc = "utf-8";

	if (cof_lfs_excluded(fs, path, 0))
		return cof_error(err, COF_EFORBIDDEN, "'%.300s' is excluded", path);
	if (cof_lfs_slurp(fs, path, &d, &n, &exists, err))
		return -1;
	if (!exists)
		return cof_lfs_errno(ENOENT, path, err);
	if (!memchr(d, '\0', n) && cof_utf8_valid((char *)d, n)) {
		content = json_stringn((char *)d, n);
	} else {
		char *b = cof_base64_encode(d, n, NULL);
		content = b ? json_string(b) : NULL;
		free(b);
		enc = "base64";
	}
	free(d);
	if (!content)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	*out = json_pack("{s:s, s:o, s:s, s:I}", "path", path, "content", content, "encoding",
			 enc, "size", (json_int_t)n);
	return *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
}

/* ----------------------------------------------------------------- write */

/* A write's errno: one that goes through a symbolic link (ELOOP) or out of
 * the folder (EXDEV) is a write trying to leave the folder, which the guard
 * blocks like any other blocked write (seed 004: rule path-symlink). */
static int lfs_write_errno(int e, const char *path, cof_err *err)
{
	if (e != ELOOP && e != EXDEV)
		return cof_lfs_errno(e, path, err);
	cof_error(err, COF_EBLOCKED, "the write to '%.300s' was blocked by the guard: "
		  "path-symlink (path): it goes through a symbolic link, and symlinks are "
		  "never followed", path);
	cof_err_set(err, "rule", json_string("path-symlink"));
	cof_err_set(err, "category", json_string("path"));
	return -1;
}

/* Opens the folder `dir` ("" = the top), making each missing component
 * (cof_mkdirs_beneath: a symlink on the way, made before or between the
 * mkdir and the open, is refused). */
static int lfs_mkdirs(cof_lfs *fs, const char *dir, cof_err *err)
{
	int fd = cof_mkdirs_beneath(fs->dirfd, dir, 0777, -1);

	if (fd < 0 && errno == ENOTDIR)
		return cof_error(err, COF_EVALIDATION, "'%.300s' is not a folder", dir), -1;
	if (fd < 0)
		return lfs_write_errno(errno, dir, err), -1;
	return fd;
}

/* Makes the temp file in the folder open at `pfd`: a random name, O_EXCL so
 * nothing that exists (a symlink planted under a guessed name included) is
 * ever opened. Fills `tmp` with its name. */
static int lfs_tmp_open(int pfd, char tmp[40])
{
	for (int tries = 0; tries < 16; tries++) {
		unsigned char rnd[8];
		char hex[17];

		if (cof_random(rnd, sizeof rnd))
			return -1;
		cof_hex(rnd, sizeof rnd, hex);
		snprintf(tmp, 40, ".coffer-%s.tmp", hex);
		int fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0666);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

int cof_lfs_write(cof_lfs *fs, const char *path, const void *data, size_t len,
		  json_t **out, cof_err *err)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char dir[COF_PATH_MAX + 1], tmp[40], sha[65];
	struct stat st;
	int pfd, fd, keep_mode = 0, e = 0;
	mode_t mode = 0;

	if (!path[0])
		return cof_error(err, COF_EVALIDATION, "path is empty");
	if (cof_lfs_excluded(fs, path, 0))
		return cof_error(err, COF_EFORBIDDEN, "'%.300s' is excluded", path);
	if ((int64_t)len > fs->limits.file_bytes)
		return lfs_too_large(fs, path, (int64_t)len, err);
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 0, path);
	if ((pfd = lfs_mkdirs(fs, dir, err)) < 0)
		return -1;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			e = ELOOP;
		else if (S_ISDIR(st.st_mode))
			e = EISDIR;
		else if (!S_ISREG(st.st_mode))
			e = ENXIO;
		keep_mode = 1;
		mode = st.st_mode & 07777;
	}
	if (e) {
		close(pfd);
		return lfs_write_errno(e, path, err);
	}
	if ((fd = lfs_tmp_open(pfd, tmp)) < 0) {
		e = errno;
		close(pfd);
		return lfs_write_errno(e, path, err);
	}
	if (cof_write_full(fd, data, len) || (keep_mode && fchmod(fd, mode)) || fsync(fd))
		e = errno;
	if (close(fd) && !e)
		e = errno;
	/* renameat replaces whatever is at `name` now without following it: a
	 * symlink swapped in since the check is replaced, not written through. */
	if (!e && renameat(pfd, tmp, pfd, name))
		e = errno;
	if (e) {
		unlinkat(pfd, tmp, 0);
		close(pfd);
		return lfs_write_errno(e, path, err);
	}
	fsync(pfd); /* the rename itself durable; a failure here loses nothing written */
	close(pfd);
	cof_sha256_hex(data, len, sha);
	*out = json_pack("{s:s, s:I, s:s}", "path", path, "size", (json_int_t)len, "sha256", sha);
	return *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
}

/* ------------------------------------------------------------------ list */

static int lfs_name_cmp(const void *a, const void *b)
{
	return strcmp((*(lfs_name *const *)a)->name, (*(lfs_name *const *)b)->name);
}

int cof_lfs_names(int dfd, lfs_name ***names, size_t *n)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	lfs_name **v = NULL;
	size_t cnt = 0, cap = 0;

	if (!d) {
		int e = errno;
		close(dfd);
		errno = e;
		return -1;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (cnt == cap) {
			lfs_name **nv = cof_realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
			v = nv;
		}
		if (!(v[cnt] = cof_malloc(sizeof *v[cnt] + len + 1)))
			goto oom;
		v[cnt]->type = de->d_type;
		memcpy(v[cnt]->name, de->d_name, len + 1);
		cnt++;
	}
	closedir(d);
	qsort(v, cnt, sizeof *v, lfs_name_cmp);
	*names = v;
	*n = cnt;
	return 0;
oom:
	closedir(d);
	cof_lfs_names_free(v, cnt);
	errno = ENOMEM;
	return -1;
}

void cof_lfs_names_free(lfs_name **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* `dir` + "/" + `name` (or `name` at the top) into `b`, reset first. */
const char *cof_lfs_join(cof_buf *b, const char *dir, const char *name)
{
	cof_buf_reset(b);
	if (dir[0] && (cof_buf_adds(b, dir) || cof_buf_adds(b, "/")))
		return NULL;
	return cof_buf_adds(b, name) ? NULL : b->data;
}

int cof_lfs_list(cof_lfs *fs, const char *path, json_t **out, cof_err *err)
{
	lfs_name **names;
	size_t n, shown = 0;
	int dfd;
	json_t *entries;
	cof_buf rel = COF_BUF_INIT;

	if (cof_lfs_excluded(fs, path, 1))
		return cof_error(err, COF_EFORBIDDEN, "'%.300s' is excluded", path);
	if ((dfd = cof_lfs_open_beneath(fs, fs->dirfd, path, O_RDONLY | O_DIRECTORY, 0)) < 0) {
		if (errno == ENOTDIR)
			return cof_error(err, COF_EVALIDATION, "'%.300s' is not a folder", path);
		return cof_lfs_errno(errno, path[0] ? path : ".", err);
	}
	int keep = dup(dfd);
	if (keep < 0 || cof_lfs_names(dfd, &names, &n)) {
		int e = errno;
		if (keep >= 0)
			close(keep);
		return cof_lfs_errno(e, path, err);
	}
	entries = json_array();
	int truncated = 0;
	for (size_t i = 0; i < n && entries; i++) {
		struct stat st;
		const char *type = "other", *r;
		int64_t size = 0;

		if (fstatat(keep, names[i]->name, &st, AT_SYMLINK_NOFOLLOW))
			continue; /* gone meanwhile */
		if (!cof_utf8_valid(names[i]->name, strlen(names[i]->name)))
			continue; /* not UTF-8: no path of the protocol can name it */
		if (S_ISREG(st.st_mode))
			type = "file", size = st.st_size;
		else if (S_ISDIR(st.st_mode))
			type = "dir";
		else if (S_ISLNK(st.st_mode))
			type = "symlink";
		if (!(r = cof_lfs_join(&rel, path, names[i]->name)))
			break;
		if (cof_lfs_excluded(fs, r, S_ISDIR(st.st_mode)))
			continue;
		if (shown == COF_LFS_LIST_MAX) {
			truncated = 1;
			break;
		}
		json_array_append_new(entries, json_pack("{s:s, s:s, s:I}", "name", names[i]->name,
							 "type", type, "size", (json_int_t)size));
		shown++;
	}
	close(keep);
	cof_lfs_names_free(names, n);
	cof_buf_release(&rel);
	if (!entries)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	*out = json_pack("{s:o}", "entries", entries);
	if (*out && truncated)
		json_object_set_new(*out, "truncated", json_true());
	return *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
}
