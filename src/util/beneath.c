/*
 * beneath.c — opening and making paths strictly beneath a directory fd, for
 * every place where a path could have been shaped by someone else: a confined
 * call's own workspace (its /tmp) seen from cofferd, the user's folder seen
 * from `coffer connect`. openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS) resolves the whole path; on a kernel without openat2
 * (ENOSYS, remembered for the process) a walk opens one component at a time
 * with O_NOFOLLOW (O_DIRECTORY for the folders on the way). Either way no
 * symlink is ever followed and `..` never leaves: a swap between a check and
 * a use ends in ELOOP/ENOTDIR, never in an open through a link.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "util/util.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static atomic_int no_openat2; /* the kernel said ENOSYS once */

/* 1 when `name` in the folder open at `dfd` is a symlink. */
static int is_link(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/* Takes the next segment of *p into `name` and moves *p past it and its '/'.
 * 0, *last set when no '/' follows; -1 with errno for an empty, `.` or `..`
 * segment (EXDEV: it would not stay beneath) or one over 255 bytes. */
static int segment(const char **p, char name[COF_SEGMENT_MAX + 1], int *last)
{
	const char *slash = strchr(*p, '/');
	size_t n = slash ? (size_t)(slash - *p) : strlen(*p);

	if (n == 0 || n > COF_SEGMENT_MAX || (n <= 2 && !memcmp(*p, "..", n))) {
		errno = n > COF_SEGMENT_MAX ? ENAMETOOLONG : EXDEV;
		return -1;
	}
	memcpy(name, *p, n);
	name[n] = '\0';
	*last = !slash;
	*p = slash ? slash + 1 : *p + n;
	return 0;
}

int cof_open_beneath_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	int cur = dirfd;
	const char *p = path;

	flags |= O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
	if (!path[0])
		return openat(dirfd, ".", flags & ~(O_CREAT | O_EXCL | O_TRUNC), 0);
	for (;;) {
		char name[COF_SEGMENT_MAX + 1];
		int next, e, last;

		if (segment(&p, name, &last)) {
			e = errno;
			if (cur != dirfd)
				close(cur);
			errno = e;
			return -1;
		}
		if (!last)
			next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else
			next = openat(cur, name, flags, mode);
		e = errno;
		if (next < 0 && is_link(cur, name))
			e = ELOOP; /* O_DIRECTORY | O_NOFOLLOW on a symlink says ENOTDIR */
		if (cur != dirfd)
			close(cur);
		errno = e;
		if (next < 0 || last)
			return next;
		cur = next;
	}
}

/* 1 when the last component of `path` (beneath `dirfd`) is a symlink:
 * O_PATH | O_NOFOLLOW opens the link itself even under RESOLVE_NO_SYMLINKS. */
static int last_is_link(int dirfd, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how), link;

	if (fd < 0)
		return 0;
	link = fstat(fd, &st) == 0 && S_ISLNK(st.st_mode);
	close(fd);
	return link;
}

int cof_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	flags |= O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
	if (!path[0])
		return openat(dirfd, ".", flags & ~(O_CREAT | O_EXCL | O_TRUNC), 0);
	if (!atomic_load_explicit(&no_openat2, memory_order_relaxed)) {
		struct open_how how = {
			.flags = (uint64_t)flags,
			.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
		if (fd < 0 && errno == ENOTDIR && (flags & O_DIRECTORY) &&
		    last_is_link(dirfd, path))
			errno = ELOOP;
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		atomic_store_explicit(&no_openat2, 1, memory_order_relaxed);
	}
	return cof_open_beneath_walk(dirfd, path, flags, mode);
}

int cof_mkdirs_beneath(int dirfd, const char *dir, mode_t mode, long owner)
{
	int cur = dup(dirfd);
	const char *p = dir;

	if (cur < 0)
		return -1;
	while (*p) {
		char name[COF_SEGMENT_MAX + 1];
		int next, made, e, last;

		if (segment(&p, name, &last)) {
			e = errno;
			close(cur);
			errno = e;
			return -1;
		}
		made = mkdirat(cur, name, mode) == 0;
		if (!made && errno != EEXIST) {
			e = errno;
			close(cur);
			errno = e;
			return -1;
		}
		/* whatever is at `name` now (ours, or swapped in since) is opened
		 * only if it is a real folder here: a link is refused */
		next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		e = errno;
		if (next < 0 && is_link(cur, name))
			e = ELOOP;
		close(cur);
		if (next < 0) {
			errno = e;
			return -1;
		}
		/* owned through the fd we hold, never by name */
		if (made && owner >= 0 && fchown(next, (uid_t)owner, (gid_t)owner)) {
			e = errno;
			close(next);
			errno = e;
			return -1;
		}
		cur = next;
	}
	return cur;
}
