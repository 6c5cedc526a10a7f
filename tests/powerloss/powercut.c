/*
 * powercut.c — an LD_PRELOAD library that simulates a power cut in the
 * process it is loaded into: what was not made durable by fsync/fdatasync is
 * undone on disk, then the process is killed (tests/blackbox/test_powerloss.py).
 *
 * The model (pessimistic, as a disk cache that loses everything unsynced):
 *   - file data: bytes written to a regular file after its last fsync are lost;
 *     each write and truncate saves the durable bytes it replaces, and the cut
 *     restores them and truncates the file back to its durable size;
 *   - names: a file or folder created (open O_CREAT, mkdir, rename's target)
 *     exists only once its parent folder was fsynced; the cut removes the names
 *     made since (a folder with all it holds) and moves a renamed file back.
 * Removals are taken as durable at once (what coffer must survive is losing
 * what it made, not regaining what it dropped).
 *
 * Environment:
 *   COFFER_POWERCUT_FILE=PATH    the cut happens within ~5 ms of PATH appearing
 *   COFFER_POWERCUT_IGNORE=GLOB  fsync/fdatasync of a file or folder whose path
 *                                matches GLOB (fnmatch) return 0 but make nothing
 *                                durable: the test's way to remove one fsync of
 *                                the code and see the test catch it
 * Children do not inherit the library (LD_PRELOAD is cleared at load). Every
 * interposed call on a regular file or folder runs under one lock, so the cut
 * sees a still state: slow, and for tests only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

typedef struct undo { off_t off; size_t len; char *old; struct undo *prev; } undo;

/* A regular file written since its last fsync: a descriptor of our own (the
 * caller's may be closed and the file renamed before the cut). */
typedef struct track {
	dev_t dev;
	ino_t ino;
	int fd;
	off_t durable;
	undo *log;
	struct track *next;
} track;

/* A name made since its folder's last fsync. */
typedef struct name {
	char path[PATH_MAX], from[PATH_MAX], dir[PATH_MAX];
	struct name *prev;
} name;

/* recursive: the cut itself calls the wrapped rename/pwrite/ftruncate */
static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static track *files;
static name *names;
static const char *ignore;
static const char *trigger;
static int cut_done;

#define REAL(ret, fn, ...) \
	static ret (*real_##fn)(__VA_ARGS__); \
	if (!real_##fn) \
		real_##fn = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #fn)

static void fd_path(int fd, char *out)
{
	char p[64];

	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(p, out, PATH_MAX - 1);
	out[n > 0 ? n : 0] = '\0';
}

/* The absolute path of `path` relative to `dirfd`, without resolving the last
 * part (it may not exist yet). */
static void abs_path(int dirfd, const char *path, char *out)
{
	char base[PATH_MAX];

	if (path[0] == '/') {
		snprintf(out, PATH_MAX, "%s", path);
		return;
	}
	if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof base))
			base[0] = '\0';
	} else {
		fd_path(dirfd, base);
	}
	snprintf(out, PATH_MAX, "%s/%s", base, path);
}

static void parent_of(const char *path, char *out)
{
	snprintf(out, PATH_MAX, "%s", path);
	char *s = strrchr(out, '/');
	if (s && s != out)
		*s = '\0';
	else
		snprintf(out, PATH_MAX, "/");
}

static void name_made(const char *path, const char *from)
{
	name *n = calloc(1, sizeof *n);

	if (!n)
		abort();
	snprintf(n->path, sizeof n->path, "%s", path);
	snprintf(n->from, sizeof n->from, "%s", from ? from : "");
	/* as fsync will name it (readlink of its descriptor): resolved */
	char dir[PATH_MAX];
	parent_of(path, dir);
	if (!realpath(dir, n->dir))
		snprintf(n->dir, sizeof n->dir, "%s", dir);
	n->prev = names;
	names = n;
}

static int is_reg(int fd, struct stat *sb)
{
	return fstat(fd, sb) == 0 && S_ISREG(sb->st_mode);
}

static track *track_of(int fd, const struct stat *sb)
{
	for (track *t = files; t; t = t->next)
		if (t->dev == sb->st_dev && t->ino == sb->st_ino)
			return t;
	track *t = calloc(1, sizeof *t);
	if (!t || (t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		/* the cut could not undo this file: say so rather than lie */
		static const char msg[] = "powercut: cannot keep a descriptor of a written "
					  "file (out of descriptors or memory)\n";
		/* the raw call: our own write() would come back here */
		if (syscall(SYS_write, 2, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
		abort();
	}
	t->dev = sb->st_dev, t->ino = sb->st_ino, t->durable = sb->st_size;
	t->next = files;
	files = t;
	return t;
}

/* Saves the durable bytes in [off, off+len) that are about to change. */
static void save(track *t, off_t off, size_t len)
{
	if (off >= t->durable)
		return;
	if ((off_t)len > t->durable - off)
		len = (size_t)(t->durable - off);
	undo *u = calloc(1, sizeof *u);
	if (!u || !(u->old = malloc(len)))
		abort();
	ssize_t got = pread(t->fd, u->old, len, off);
	u->off = off, u->len = got > 0 ? (size_t)got : 0;
	u->prev = t->log;
	t->log = u;
}

static void rm_tree(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb))
		return;
	if (S_ISDIR(sb.st_mode)) {
		char cmd[PATH_MAX + 32];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
		if (system(cmd)) { /* the folder may hold what we cannot remove */ }
	} else {
		unlink(path);
	}
}

/* In the cut's child: closes every descriptor but the tracked files' and
 * `keep`, so no lock or socket of the dead server outlives it. */
static void close_others(int keep)
{
	int fds[4096], n = 0;
	char p[64];

	for (int fd = 0; fd < 65536; fd++) {
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		if (fd == keep || access(p, F_OK))
			continue;
		int tracked = 0;
		for (track *t = files; t && !tracked; t = t->next)
			tracked = t->fd == fd;
		if (!tracked && n < 4096)
			fds[n++] = fd;
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* The cut. With `mu` held no thread can start another file operation; a
 * child (one thread, the same descriptors and lists) waits for the server to
 * be killed, then undoes everything not durable, syncs, and says it is done
 * by making TRIGGER.done. Undoing in the server itself could be cut short by
 * a thread touching a mapping of a file being truncated (SIGBUS). */
static void cut(void)
{
	int p[2];

	cut_done = 1;
	if (pipe(p))
		abort();
	pid_t c = fork();
	if (c != 0) {
		kill(getpid(), SIGKILL);
		for (;;)
			pause();
	}
	/* the lock's owner is the parent's thread id: a fresh one for the child */
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	memcpy(&mu, &fresh, sizeof mu);
	close(p[1]);
	close_others(p[0]);
	char x;
	while (read(p[0], &x, 1) < 0 && errno == EINTR)
		;
	for (track *t = files; t; t = t->next) {
		for (undo *u = t->log; u; u = u->prev)
			if (pwrite(t->fd, u->old, u->len, u->off) < 0) { /* best effort */ }
		if (ftruncate(t->fd, t->durable)) { /* best effort */ }
	}
	for (name *n = names; n; n = n->prev) {
		if (n->from[0] && rename(n->path, n->from) == 0)
			continue;
		rm_tree(n->path);
	}
	sync();
	char done[PATH_MAX];
	snprintf(done, sizeof done, "%s.done", trigger);
	close(open(done, O_WRONLY | O_CREAT, 0600));
	_exit(0);
}

static void *watch(void *arg)
{
	(void)arg;
	for (;;) {
		if (access(trigger, F_OK) == 0) {
			pthread_mutex_lock(&mu);
			cut();
		}
		nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
	}
	return NULL;
}

__attribute__((constructor)) static void powercut_init(void)
{
	pthread_t th;

	unsetenv("LD_PRELOAD");
	/* a file never synced keeps a descriptor of ours until the cut: with a
	 * sync made a no-op, one per file written (1,024 is a user's usual soft
	 * limit) */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	ignore = getenv("COFFER_POWERCUT_IGNORE");
	if (ignore && !*ignore)
		ignore = NULL;
	trigger = getenv("COFFER_POWERCUT_FILE");
	if (trigger && pthread_create(&th, NULL, watch, NULL) == 0)
		pthread_detach(th);
}

/* ---- opening and naming */

static int opened(int dirfd, const char *path, int flags, int fd, int existed)
{
	if (fd >= 0 && (flags & O_CREAT) && !existed) {
		char p[PATH_MAX];
		abs_path(dirfd, path, p);
		name_made(p, NULL);
	}
	return fd;
}

static int open_common(int dirfd, const char *path, int flags, mode_t mode)
{
	REAL(int, openat, int, const char *, int, ...);
	struct stat sb;

	if (!(flags & O_CREAT))
		return real_openat(dirfd, path, flags, mode);
	pthread_mutex_lock(&mu);
	int existed = fstatat(dirfd, path, &sb, 0) == 0;
	int fd = real_openat(dirfd, path, flags, mode);
	int e = errno;
	opened(dirfd, path, flags, fd, existed);
	pthread_mutex_unlock(&mu);
	errno = e;
	return fd;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_common(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_common(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_common(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_common(dirfd, path, flags, mode);
}

int mkdir(const char *path, mode_t mode)
{
	REAL(int, mkdir, const char *, mode_t);
	pthread_mutex_lock(&mu);
	int r = real_mkdir(path, mode), e = errno;
	if (r == 0) {
		char p[PATH_MAX];
		abs_path(AT_FDCWD, path, p);
		name_made(p, NULL);
	}
	pthread_mutex_unlock(&mu);
	errno = e;
	return r;
}

int rename(const char *from, const char *to)
{
	REAL(int, rename, const char *, const char *);
	struct stat sb;
	pthread_mutex_lock(&mu);
	int existed = lstat(to, &sb) == 0;
	int r = real_rename(from, to), e = errno;
	if (r == 0 && !existed && !cut_done) {
		char p[PATH_MAX], f[PATH_MAX];
		abs_path(AT_FDCWD, to, p);
		abs_path(AT_FDCWD, from, f);
		name_made(p, f);
	}
	pthread_mutex_unlock(&mu);
	errno = e;
	return r;
}

/* ---- writing */

static ssize_t pwrite_common(int fd, const void *buf, size_t len, off_t off, int append)
{
	REAL(ssize_t, pwrite64, int, const void *, size_t, off_t);
	REAL(ssize_t, write, int, const void *, size_t);
	struct stat sb;

	if (!is_reg(fd, &sb))
		return append ? real_write(fd, buf, len) : real_pwrite64(fd, buf, len, off);
	pthread_mutex_lock(&mu);
	if (append)
		off = lseek(fd, 0, SEEK_CUR);
	if (off >= 0 && !cut_done)
		save(track_of(fd, &sb), off, len);
	ssize_t r = append ? real_write(fd, buf, len) : real_pwrite64(fd, buf, len, off);
	int e = errno;
	pthread_mutex_unlock(&mu);
	errno = e;
	return r;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	return pwrite_common(fd, buf, len, 0, 1);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite_common(fd, buf, len, off, 0);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return pwrite_common(fd, buf, len, off, 0);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	REAL(ssize_t, writev, int, const struct iovec *, int);
	struct stat sb;

	if (!is_reg(fd, &sb))
		return real_writev(fd, iov, n);
	pthread_mutex_lock(&mu);
	track *t = track_of(fd, &sb);
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	off_t off = lseek(fd, 0, SEEK_CUR);
	if (off >= 0)
		save(t, off, len);
	ssize_t r = real_writev(fd, iov, n);
	int e = errno;
	pthread_mutex_unlock(&mu);
	errno = e;
	return r;
}

static int truncate_common(int fd, off_t len)
{
	REAL(int, ftruncate64, int, off_t);
	struct stat sb;

	if (!is_reg(fd, &sb))
		return real_ftruncate64(fd, len);
	pthread_mutex_lock(&mu);
	if (!cut_done) {
		track *t = track_of(fd, &sb);
		if (len < sb.st_size)
			save(t, len, (size_t)(sb.st_size - len));
	}
	int r = real_ftruncate64(fd, len), e = errno;
	pthread_mutex_unlock(&mu);
	errno = e;
	return r;
}

int ftruncate(int fd, off_t len)
{
	return truncate_common(fd, len);
}

int ftruncate64(int fd, off_t len)
{
	return truncate_common(fd, len);
}

/* ---- making durable */

static void drop_log(track *t)
{
	while (t->log) {
		undo *u = t->log;
		t->log = u->prev;
		free(u->old);
		free(u);
	}
}

static int sync_common(int fd, int data_only)
{
	REAL(int, fsync, int);
	REAL(int, fdatasync, int);
	char p[PATH_MAX];
	struct stat sb;

	pthread_mutex_lock(&mu);
	fd_path(fd, p);
	int ignored = ignore && fnmatch(ignore, p, 0) == 0;
	int r = ignored ? 0 : (data_only ? real_fdatasync(fd) : real_fsync(fd));
	int e = errno;
	if (r == 0 && !ignored && fstat(fd, &sb) == 0) {
		if (S_ISDIR(sb.st_mode)) {
			/* the names made in this folder are durable now */
			name **pp = &names;
			while (*pp) {
				name *n = *pp;
				if (!strcmp(n->dir, p)) {
					*pp = n->prev;
					free(n);
				} else {
					pp = &n->prev;
				}
			}
		} else if (S_ISREG(sb.st_mode)) {
			/* all of it is durable: forget it until it is written again */
			for (track **tp = &files; *tp; tp = &(*tp)->next)
				if ((*tp)->dev == sb.st_dev && (*tp)->ino == sb.st_ino) {
					track *t = *tp;
					*tp = t->next;
					drop_log(t);
					close(t->fd);
					free(t);
					break;
				}
		}
	}
	pthread_mutex_unlock(&mu);
	errno = e;
	return r;
}

int fsync(int fd)
{
	return sync_common(fd, 0);
}

int fdatasync(int fd)
{
	return sync_common(fd, 1);
}
