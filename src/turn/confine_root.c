/*
 * confine_root.c — as root, the mount namespace a call's bwrap starts in:
 * only what it binds from (the system folders, the copy of /etc, /proc,
 * /dev, the workspace at /tmp, the call's views at /mnt) on a tmpfs of its
 * own, pivoted to, the host's other mounts let go.
 *
 * Why: bwrap reads all of /proc/self/mountinfo after each of its binds (a
 * dozen a call), and the host's table grows with every workspace tmpfs and
 * every view of every running call: formatting it was the largest part of
 * a confined call's CPU time and grew with the host's load. From this
 * namespace bwrap reads a dozen lines, however many the host has.
 *
 * Runs in the call's child between clone and exec: system calls only (no
 * allocation, no locks), paths in buffers on the stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "turn/turn.h"

/* Where the new root is made before the pivot: a folder every Debian has
 * (COF_VIEW_INNER is inside the new root, not here). */
#define STAGE "/mnt"

static const char *const sys_dirs[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64",
				       "libx32", NULL};

/* "/proc/self/fd/N" of `fd` in `buf`. */
static const char *fd_path(char *buf, size_t size, int fd)
{
	snprintf(buf, size, "/proc/self/fd/%d", fd);
	return buf;
}

/* Binds `src` at STAGE/`name` (made first, a folder or, for a file, an
 * empty file). 0 or -1. */
static int bind_at(const char *src, const char *name, unsigned long flags)
{
	char dst[64];

	snprintf(dst, sizeof dst, STAGE "/%s", name);
	if (mkdir(dst, 0755) && errno != EEXIST)
		return -1;
	return mount(src, dst, NULL, MS_BIND | flags, NULL);
}

/* The system folders: a folder bound (with what is mounted under it, such
 * as a cover of the data dir), a link made again. 0 or -1. */
static int sys_binds(void)
{
	for (int i = 0; sys_dirs[i]; i++) {
		char host[16], dst[64], target[256];
		struct stat sb;
		snprintf(host, sizeof host, "/%s", sys_dirs[i]);
		if (lstat(host, &sb))
			continue;
		if (S_ISDIR(sb.st_mode)) {
			if (bind_at(host, sys_dirs[i], MS_REC))
				return -1;
			continue;
		}
		ssize_t n = S_ISLNK(sb.st_mode) ? readlink(host, target, sizeof target - 1) : -1;
		if (n <= 0)
			continue;
		target[n] = '\0';
		snprintf(dst, sizeof dst, STAGE "/%s", sys_dirs[i]);
		if (symlink(target, dst))
			return -1;
	}
	return 0;
}

/* Opens `path` as a handle to bind from. -1 on failure. */
static int handle(const char *path)
{
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

const char *cof_confine_child_root(const char *ws, const char *const view[2], const char *etc,
				   const char *const hide[2])
{
	static const char *const sub[2] = {"rw", "ro"};
	const unsigned long ro = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY;
	char p[64], at[64];
	int fws, fview[2] = {-1, -1}, fetc = -1;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return "make a mount namespace";
	/* handles first: the stage, or a cover below, may be over their paths */
	if ((fws = handle(ws)) < 0 || (etc && (fetc = handle(etc)) < 0))
		return "open what the call sees";
	for (int i = 0; i < 2; i++)
		if (view[i] && (fview[i] = handle(view[i])) < 0)
			return "open what the call sees";
	/* the call's root has of the host only the system folders: only there
	 * could it reach the scratch root or the data dir */
	for (int i = 0; i < 2; i++)
		for (int k = 0; sys_dirs[k]; k++) {
			char d[16];
			snprintf(d, sizeof d, "/%s", sys_dirs[k]);
			size_t n = strlen(d);
			if (!strncmp(hide[i], d, n) && (hide[i][n] == '/' || !hide[i][n]) &&
			    mount("tmpfs", hide[i], "tmpfs", ro, "size=4k,nr_inodes=2,mode=0755") &&
			    errno != ENOENT)
				return "cover the data dir";
		}
	if (mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=64,mode=0755"))
		return "mount the call's first root";
	if (sys_binds())
		return "bind the system folders";
	/* without a copy of /etc the host's, for bwrap's bind per name */
	if (bind_at(etc ? fd_path(p, sizeof p, fetc) : "/etc", "etc", etc ? 0 : MS_REC))
		return "bind /etc";
	if (bind_at("/proc", "proc", MS_REC) || bind_at("/dev", "dev", MS_REC))
		return "bind /proc and /dev";
	/* noexec,nosuid,nodev on the bind too: a tmpfs has them already, a
	 * folder of the measuring loop gets them here */
	if (bind_at(fd_path(p, sizeof p, fws), "tmp", 0) ||
	    mount(NULL, STAGE "/tmp", NULL,
		  MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return "bind the workspace";
	/* each view bound from where it is mounted, the call's own or a kept
	 * one: a call that uses the turn's kept views makes no folder and no
	 * mount outside this namespace (each cost a mkdir and an rmdir on the
	 * scratch disk, the largest part of cofferd's own CPU in a call) */
	if ((fview[0] >= 0 || fview[1] >= 0) && mkdir(STAGE COF_VIEW_INNER, 0755))
		return "bind the call's view";
	for (int i = 0; i < 2; i++) {
		snprintf(at, sizeof at, "%s/%s", &COF_VIEW_INNER[1], sub[i]);
		if (fview[i] >= 0 && bind_at(fd_path(p, sizeof p, fview[i]), at, MS_REC))
			return "bind the call's view";
	}
	close(fws);
	for (int i = 0; i < 2; i++)
		if (fview[i] >= 0)
			close(fview[i]);
	if (fetc >= 0)
		close(fetc);
	if (mkdir(STAGE "/.old", 0700) || syscall(SYS_pivot_root, STAGE, STAGE "/.old") ||
	    chdir("/") || umount2("/.old", MNT_DETACH) || rmdir("/.old"))
		return "pivot to the call's first root";
	return NULL;
}
