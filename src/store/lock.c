/*
 * lock.c — what keeps processes that share one data dir out of each other's way.
 *
 * Two locks, both flock(2) on files in the data dir, so they hold between
 * processes (cofferd beside `coffer gc`/`fsck`/`--data` commands) and vanish
 * with the process that held them, even after kill -9:
 *
 *   DATA/lock     held exclusively by the one cofferd serving the dir (its pid
 *                 written in it); a second cofferd is refused, naming the pid.
 *   DATA/gc.lock  the content lock. A write holds it shared from its blob's
 *                 commit to the commit of the metadata naming the blob; the
 *                 collector holds it exclusively while it forgets and deletes.
 *                 So no collector in any process deletes content that a write
 *                 in another is about to name (a re-upload of an orphan's bytes,
 *                 say). Within a process a rwlock does the same between threads:
 *                 flock locks belong to an open file, which threads share, so the
 *                 process takes the file lock shared when its first writer
 *                 enters and drops it when its last one leaves.
 *   DATA/tmp/...  a blob writer's temp file is locked while it is written
 *                 (cof_blob_tmp_create), and the sweep of crash leftovers
 *                 removes only files it can lock (cof_blob_tmp_sweep).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "store/store.h"
#include "util/util.h"

/* How long the collector waits for writes in other processes to pause. */
#define COLLECT_WAIT_MS 60000

static int open_lock_file(const char *dir, const char *name, cof_err *err)
{
	char path[4200];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		cof_error(err, COF_EINTERNAL, "cannot open '%s': %s", path, strerror(errno));
	return fd;
}

int cof_store_locks_open(cof_store *st, int serve, cof_err *err)
{
	pthread_rwlock_init(&st->gc_lock, NULL);
	pthread_mutex_init(&st->hold_mu, NULL);
	st->serve_fd = -1;
	if ((st->gc_fd = open_lock_file(st->dir, "gc.lock", err)) < 0)
		return -1;
	if (!serve)
		return 0;
	if ((st->serve_fd = open_lock_file(st->dir, "lock", err)) < 0)
		return -1;
	if (flock(st->serve_fd, LOCK_EX | LOCK_NB) < 0) {
		char pid[32] = "";
		ssize_t n = pread(st->serve_fd, pid, sizeof pid - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		return cof_error(err, COF_ECONFLICT, "data dir '%s' is in use by another cofferd "
				 "(pid %s): one server serves a data dir", st->dir,
				 pid[0] ? pid : "unknown");
	}
	char pid[32];
	int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(st->serve_fd, 0) || pwrite(st->serve_fd, pid, (size_t)n, 0) != n)
		return cof_error(err, COF_EINTERNAL, "cannot write '%s/lock': %s", st->dir,
				 strerror(errno));
	return 0;
}

void cof_store_locks_close(cof_store *st)
{
	if (st->serve_fd >= 0)
		close(st->serve_fd); /* drops the lock; the stale pid is harmless */
	if (st->gc_fd >= 0)
		close(st->gc_fd);
	pthread_rwlock_destroy(&st->gc_lock);
	pthread_mutex_destroy(&st->hold_mu);
}

void cof_store_hold_content(cof_store *st)
{
	pthread_rwlock_rdlock(&st->gc_lock);
	pthread_mutex_lock(&st->hold_mu);
	/* blocks only while another process's collector is deleting */
	if (st->holders++ == 0)
		while (flock(st->gc_fd, LOCK_SH) < 0 && errno == EINTR)
			;
	pthread_mutex_unlock(&st->hold_mu);
}

void cof_store_release_content(cof_store *st)
{
	pthread_mutex_lock(&st->hold_mu);
	if (--st->holders == 0)
		flock(st->gc_fd, LOCK_UN);
	pthread_mutex_unlock(&st->hold_mu);
	pthread_rwlock_unlock(&st->gc_lock);
}

int cof_store_collect_begin(cof_store *st, cof_err *err)
{
	/* no writer of ours holds the file lock once we hold the rwlock */
	pthread_rwlock_wrlock(&st->gc_lock);
	int64_t until = cof_mono_ms() + COLLECT_WAIT_MS;
	while (flock(st->gc_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			pthread_rwlock_unlock(&st->gc_lock);
			return cof_error(err, COF_EINTERNAL, "cannot lock '%s/gc.lock': %s",
					 st->dir, strerror(errno));
		}
		if (cof_mono_ms() > until) {
			pthread_rwlock_unlock(&st->gc_lock);
			return cof_error(err, COF_EUNAVAILABLE, "writes to '%s' by another process "
					 "did not pause for %d s: nothing deleted, try again",
					 st->dir, COLLECT_WAIT_MS / 1000);
		}
		nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
	}
	return 0;
}

void cof_store_collect_end(cof_store *st)
{
	flock(st->gc_fd, LOCK_UN);
	pthread_rwlock_unlock(&st->gc_lock);
}

int cof_blob_tmp_create(const char *path, int how)
{
	int fd = open(path, how | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	/* locked while it is written, so no sweep by any process removes it */
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		int e = errno;
		close(fd);
		unlink(path);
		errno = e;
		return -1;
	}
	return fd;
}

/* Removes temp files left by uploads that were under way at a crash. An
 * upload under way (in this or another process sharing the dir: cofferd
 * beside `coffer fsck`) holds a lock on its file, and a file younger than a
 * minute may be one whose writer has not taken it yet: both are left. */
void cof_blob_tmp_sweep(const char *tmpdir, const char *prefix)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	struct stat sb;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &sb) == 0 &&
		    sb.st_mtime < time(NULL) - 60)
			unlinkat(dirfd(d), e->d_name, 0);
		close(fd); /* drops our lock */
	}
	closedir(d);
}
