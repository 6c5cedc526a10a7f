/*
 * quota.c — the scratch root and the disk limits of workspaces.
 *
 * What counts: allocated blocks (a sparse file counts what it allocates, so a
 * hole cannot hide data), 1 KB per file or folder, files deleted but still
 * open. Limits: a turn at most turnDisk, all live workspaces of one (agent,
 * user) at most userDisk, all live workspaces of the agent at most scratch,
 * and one inode per KB of scratch.
 *
 * Kernel way (cofferd is root): each workspace is a tmpfs (noexec, nosuid,
 * nodev, owned by the turn's uid, mode 0700) whose size= is the least of what
 * the turn, its user and the agent's scratch still allow, and whose
 * nr_inodes= is what the inode limit allows; the kernel answers ENOSPC at the
 * edge. As workspaces grow and shrink the others are resized (MS_REMOUNT).
 * statfs reads the tmpfs: real blocks, deleted-but-open files included.
 *
 * Measuring loop (no root, or the mount fails): workspaces are folders; a
 * walk sums st_blocks and entries, and the call's processes' open files
 * (/proc/PID/fd) add what is deleted but held open. A tree deeper than
 * COF_WALK_DEPTH, or a folder that cannot be opened (out of fds, no
 * access), counts as over. Removal enters COF_RM_DEPTH levels and moves
 * what is deeper up, so any depth goes with a bounded number of fds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include "turn/turn.h"
#include "view/view.h"
#include "util/util.h"

#define TMPFS_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)
#define PAGE 4096

/* ------------------------------------------------------------ removing */

static int rm_children(int dirfd, int top, int depth, int *moved);

/* Removes `name` in dirfd, and everything under it when it is a folder;
 * never follows a link, never crosses into a mount (those are unmounted
 * first by the callers). A folder at COF_RM_DEPTH below `top` is not
 * entered: it is moved up into `top` (*moved is set) and removed from there
 * on a later pass, so a tree of any depth goes with at most 2 fds a level
 * for COF_RM_DEPTH levels. */
static int rm_entry(int dirfd, const char *name, int top, int depth, int *moved)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth >= COF_RM_DEPTH) {
		char up[48];
		if (top < 0)
			return -1;
		static unsigned seq;
		snprintf(up, sizeof up, ".coffer-deep-%u-%u", (unsigned)getpid(),
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
		if (renameat(dirfd, name, top, up))
			return -1;
		*moved = 1;
		return 0;
	}
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = rm_children(fd, top, depth + 1, moved);
	close(fd);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0)
		return 0;
	/* what was moved up left the folder non-empty until the next pass */
	return rc == 0 && errno == ENOTEMPTY && *moved ? 0 : -1;
}

/* One pass over the folder open at `dirfd`, `depth` levels below `top`. */
static int rm_children(int dirfd, int top, int depth, int *moved)
{
	int fd = dup(dirfd), rc = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (rm_entry(dirfd, e->d_name, top, depth, moved))
			rc = -1;
	}
	closedir(d);
	return rc;
}

int cof_rm_children(int dirfd)
{
	int moved, rc;

	/* each pass removes COF_RM_DEPTH levels and moves what is deeper up
	 * here; a pass that moves nothing is the last */
	do {
		moved = 0;
		rc = rm_children(dirfd, dirfd, 0, &moved);
	} while (moved);
	return rc;
}

/* Unmounts whatever is mounted at `path` (stacked mounts too). */
static void unmount_all(const char *path)
{
	for (int i = 0; i < 16 && umount2(path, MNT_DETACH) == 0; i++)
		;
}

/* Removes `path` and what is under it (after unmounting it). */
static void rm_path(const char *path)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash)
		return;
	snprintf(parent, sizeof parent, "%.*s", (int)(slash - path), path);
	int fd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	int moved = 0, sub = openat(fd, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				   O_CLOEXEC);
	if (sub >= 0) {
		cof_rm_children(sub);
		close(sub);
	}
	rm_entry(fd, slash + 1, -1, 0, &moved);
	close(fd);
}

/* ------------------------------------------------------------ opening */

int cof_quota_open(cof_turns *ts, int force_walk, cof_err *err)
{
	char ws[PATH_MAX + 8], kept[PATH_MAX + 8], views[PATH_MAX + 8], layers[PATH_MAX + 8];
	char probe[PATH_MAX + 16];
	DIR *d;
	struct dirent *e;

	snprintf(ws, sizeof ws, "%s/ws", ts->root);
	snprintf(kept, sizeof kept, "%s/kept", ts->root);
	if ((mkdir(ts->root, 0711) && errno != EEXIST) || chmod(ts->root, 0711))
		return cof_error(err, COF_EINTERNAL, "cannot make the scratch root '%s': %s",
				 ts->root, strerror(errno));
	/* leftovers of a previous run: unmount every workspace, then remove */
	if ((d = opendir(ws)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			char p[PATH_MAX + 300];
			if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
				continue;
			snprintf(p, sizeof p, "%s/%s", ws, e->d_name);
			unmount_all(p);
		}
		closedir(d);
	}
	/* the views of calls a crashed run was serving: FUSE mounts whose
	 * server is gone (ENOTCONN), unmounted before anything is removed */
	snprintf(views, sizeof views, "%s/views", ts->root);
	snprintf(layers, sizeof layers, "%s/layers", ts->root);
	cof_view_sweep(views);
	rm_path(views);
	if ((d = opendir(layers)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			char p[PATH_MAX + 300];
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof p, "%s/%s", layers, e->d_name);
			unmount_all(p);
		}
		closedir(d);
	}
	rm_path(layers);
	rm_path(ws);
	rm_path(kept);
	if (mkdir(ws, 0711) || mkdir(kept, 0700) || mkdir(views, 0711) || mkdir(layers, 0700))
		return cof_error(err, COF_EINTERNAL, "cannot prepare the scratch root '%s': %s",
				 ts->root, strerror(errno));
	ts->kernel = 0;
	if (force_walk || geteuid() != 0)
		return 0;
	snprintf(probe, sizeof probe, "%s/.probe", ws);
	if (mkdir(probe, 0700) == 0 &&
	    mount("tmpfs", probe, "tmpfs", TMPFS_FLAGS, "size=4k,nr_inodes=4,mode=0700") == 0) {
		ts->kernel = 1;
		umount2(probe, MNT_DETACH);
	}
	rmdir(probe);
	return 0;
}

/* ------------------------------------------------------------ measuring */

/* Adds what is under the folder open at `fd` to *u; with `full`, a file
 * counts at least its length (holes included). */
static void walk(int fd, cof_usage *u, int depth, int full)
{
	DIR *d;
	struct dirent *e;
	struct stat sb;

	if (depth > COF_WALK_DEPTH) {
		u->over = 1;
		close(fd);
		return;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while (!u->over && (e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			continue;
		u->entries++;
		u->blocks += (int64_t)sb.st_blocks * 512;
		if (full && S_ISREG(sb.st_mode) && sb.st_size > (int64_t)sb.st_blocks * 512)
			u->blocks += sb.st_size - (int64_t)sb.st_blocks * 512;
		if (S_ISDIR(sb.st_mode)) {
			int sub = openat(fd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				walk(sub, u, depth + 1, full);
			else if (errno != ENOENT && errno != ENOTDIR)
				u->over = 1; /* what cannot be measured counts as over */
		}
	}
	closedir(d);
}

void cof_quota_walk(int dirfd, cof_usage *u)
{
	int fd = dup(dirfd);

	memset(u, 0, sizeof *u);
	if (fd >= 0)
		walk(fd, u, 0, 0);
}

/* Adds the blocks of files on device `dev` that the processes under `roots`
 * (and their descendants) hold open though deleted. */
static void deleted_open(dev_t dev, const pid_t *roots, int n, cof_usage *u)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;
	ino_t seen[256];
	int nseen = 0;

	if (!proc)
		return;
	while ((e = readdir(proc)) != NULL) {
		pid_t pid = (pid_t)atoi(e->d_name), cur = pid;
		int mine = 0;
		if (pid <= 0)
			continue;
		/* a descendant of one of the roots? (walk up the parents) */
		for (int hop = 0; hop < 64 && cur > 1 && !mine; hop++) {
			char p[64], buf[512];
			for (int i = 0; i < n; i++)
				mine |= cur == roots[i];
			snprintf(p, sizeof p, "/proc/%d/stat", (int)cur);
			FILE *f = fopen(p, "re");
			if (!f || !fgets(buf, sizeof buf, f)) {
				if (f)
					fclose(f);
				break;
			}
			fclose(f);
			const char *rp = strrchr(buf, ')');
			int ppid = 0;
			if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1)
				break;
			cur = ppid;
		}
		if (!mine)
			continue;
		char fdp[64];
		snprintf(fdp, sizeof fdp, "/proc/%d/fd", (int)pid);
		DIR *fds = opendir(fdp);
		struct dirent *fe;
		while (fds && (fe = readdir(fds)) != NULL) {
			struct stat sb;
			if (fe->d_name[0] == '.' || fstatat(dirfd(fds), fe->d_name, &sb, 0))
				continue;
			if (sb.st_dev != dev || sb.st_nlink != 0 || !S_ISREG(sb.st_mode))
				continue;
			int dup_ino = 0;
			for (int i = 0; i < nseen; i++)
				dup_ino |= seen[i] == sb.st_ino;
			if (dup_ino)
				continue;
			if (nseen < 256)
				seen[nseen++] = sb.st_ino;
			u->blocks += (int64_t)sb.st_blocks * 512;
		}
		if (fds)
			closedir(fds);
	}
	closedir(proc);
}

/* Adds the files of the turn's view layers (ROOT/layers/TURN/CALL/...: the
 * bytes its calls wrote under the agent's mounts) to *u, each at its full
 * length: the commit stores it whole, so a sparse 1 GiB file there is 1 GiB
 * against the limits (holes in the layer would hide it). The folders of the
 * layer are bookkeeping and do not count. */
static void layers_add(const cof_turns *ts, const cof_turn *t, cof_usage *u)
{
	char p[PATH_MAX + 128];
	struct dirent *e;
	DIR *d;

	snprintf(p, sizeof p, "%s/layers/%s", ts->root, t->id);
	if (!(d = opendir(p)))
		return;
	while ((e = readdir(d)) != NULL) {
		int fd;
		if (e->d_name[0] == '.')
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			cof_usage lu = {0};
			walk(fd, &lu, 0, 1); /* walk closes fd */
			u->blocks += lu.blocks;
			u->layers += lu.blocks;
			u->entries += lu.entries;
			u->over |= lu.over;
		}
	}
	closedir(d);
}

void cof_quota_measure(const cof_turns *ts, const cof_turn *t, const pid_t *pids, int n,
		       cof_usage *u)
{
	struct stat sb;
	int fd;

	*u = t->used;
	if (ts->kernel) {
		struct statfs sf;
		if (statfs(t->ws, &sf) == 0) {
			u->blocks = (int64_t)(sf.f_blocks - sf.f_bfree) * sf.f_bsize;
			u->entries = (int64_t)(sf.f_files - sf.f_ffree) - 1; /* its root */
			u->over = 0;
			u->layers = 0;
			layers_add(ts, t, u);
		}
		return;
	}
	if ((fd = open(t->ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	cof_quota_walk(fd, u);
	if (n > 0 && fstat(fd, &sb) == 0)
		deleted_open(sb.st_dev, pids, n, u);
	close(fd);
	layers_add(ts, t, u);
}

/* Measures the workspace of `t` into t->used. */
static void measure(cof_turns *ts, cof_turn *t, const pid_t *pids, int n)
{
	cof_usage u;

	cof_quota_measure(ts, t, pids, n, &u);
	t->used = u;
}

static int64_t bytes_of(const cof_usage *u)
{
	return u->blocks + u->entries * COF_ENTRY_BYTES;
}

/* What `t` may still hold, given the other workspaces of its agent: bytes
 * (and which limit says so) and entries. */
static void allowance(cof_turns *ts, const cof_turn *t, int64_t *bytes, const char **by,
		      int64_t *entries)
{
	int64_t user = 0, all = 0, ents = 0;

	for (cof_turn *o = ts->list; o; o = o->next) {
		if (o == t || !o->ws_made || strcmp(o->org, t->org) || strcmp(o->agent, t->agent))
			continue;
		all += bytes_of(&o->used);
		ents += o->used.entries;
		if (!strcmp(o->user, t->user))
			user += bytes_of(&o->used);
	}
	*bytes = t->sb.turn_disk;
	*by = "turn_disk";
	if (t->sb.user_disk - user < *bytes) {
		*bytes = t->sb.user_disk - user;
		*by = "user_disk";
	}
	if (t->sb.scratch - all < *bytes) {
		*bytes = t->sb.scratch - all;
		*by = "scratch";
	}
	*entries = t->sb.scratch / COF_ENTRY_BYTES - ents;
	if (*bytes < 0)
		*bytes = 0;
	if (*entries < 0)
		*entries = 0;
}

/* The tmpfs options for what `t` may hold now: its data may take what it is
 * allowed less 1 KB for each entry it has (so blocks + entries stay within
 * the limit), never below what it holds (the kernel refuses to shrink a
 * tmpfs under its use). Records which limit set each. */
static void tmpfs_size(cof_turns *ts, cof_turn *t, int64_t *size, int64_t *inodes)
{
	int64_t bytes, entries;
	const char *by;

	allowance(ts, t, &bytes, &by, &entries);
	*size = (bytes - t->used.entries * COF_ENTRY_BYTES) / PAGE * PAGE;
	/* the floor is the tmpfs's own use: the layers are not in it */
	if (*size < t->used.blocks - t->used.layers)
		*size = (t->used.blocks - t->used.layers + PAGE - 1) / PAGE * PAGE;
	if (*size < PAGE)
		*size = PAGE;
	t->size_by = by;
	t->inodes_by = entries < bytes / COF_ENTRY_BYTES ? "inodes" : by;
	*inodes = entries < bytes / COF_ENTRY_BYTES ? entries : bytes / COF_ENTRY_BYTES;
	if (*inodes < t->used.entries)
		*inodes = t->used.entries;
	*inodes += 1; /* the root folder */
}

/* Mounts (remount = 0) or resizes the tmpfs of `t`. 0 or -1 (errno). */
static int tmpfs_set(cof_turns *ts, cof_turn *t, int remount)
{
	int64_t size, inodes;
	char opts[160];

	tmpfs_size(ts, t, &size, &inodes);
	if (remount && size == t->size_set && inodes == t->inodes_set)
		return 0;
	if (remount)
		snprintf(opts, sizeof opts, "size=%lld,nr_inodes=%lld", (long long)size,
			 (long long)inodes);
	else
		snprintf(opts, sizeof opts, "size=%lld,nr_inodes=%lld,uid=%u,gid=%u,mode=0700",
			 (long long)size, (long long)inodes, (unsigned)t->uid, (unsigned)t->uid);
	if (mount("tmpfs", t->ws, "tmpfs", TMPFS_FLAGS | (remount ? MS_REMOUNT : 0), opts))
		return -1;
	t->size_set = size;
	t->inodes_set = inodes;
	return 0;
}

/* ------------------------------------------------------------ workspaces */

/* The folder of the turn's view layers (ROOT/layers/TURN); the kernel way,
 * a tmpfs of at most turnDisk (the layer's bytes then never touch the disk,
 * and the kernel bounds them too). Best effort: a plain folder otherwise. */
static void layers_make(cof_turns *ts, cof_turn *t)
{
	char p[PATH_MAX + 128], opts[96];

	snprintf(p, sizeof p, "%s/layers/%s", ts->root, t->id);
	if (mkdir(p, 0700) && errno != EEXIST)
		return;
	snprintf(opts, sizeof opts, "size=%lld,nr_inodes=%lld,mode=0700",
		 (long long)t->sb.turn_disk, (long long)(t->sb.turn_disk / COF_ENTRY_BYTES + 1));
	if (ts->kernel)
		mount("tmpfs", p, "tmpfs", TMPFS_FLAGS, opts);
}

/* Gives the folder `path` (ours, under ROOT/ws) to `uid` through an fd opened
 * without following a link. 0 or -1 with errno. */
static int own_dir(const char *path, uid_t uid)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = fchown(fd, uid, uid);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

int cof_quota_ws_make(cof_turns *ts, cof_turn *t, cof_err *err)
{
	snprintf(t->ws, sizeof t->ws, "%s/ws/%s", ts->root, t->id);
	memset(&t->used, 0, sizeof t->used);
	/* its size depends on what the others hold now */
	for (cof_turn *o = ts->list; ts->kernel && o; o = o->next)
		if (o != t && o->ws_made && !strcmp(o->org, t->org) && !strcmp(o->agent, t->agent))
			measure(ts, o, NULL, 0);
	if (mkdir(t->ws, 0700) && errno != EEXIST)
		return cof_error(err, COF_EINTERNAL, "cannot make the workspace: %s",
				 strerror(errno));
	if (ts->kernel ? tmpfs_set(ts, t, 0) : own_dir(t->ws, t->uid)) {
		int e = errno;
		rmdir(t->ws);
		return cof_error(err, COF_EINTERNAL, "cannot make the workspace: %s", strerror(e));
	}
	t->ws_made = 1;
	layers_make(ts, t);
	return 0;
}

int cof_quota_ws_empty(cof_turns *ts, cof_turn *t, cof_err *err)
{
	/* a kept namespace binds the workspace as it was (and would keep a
	 * replaced tmpfs alive) */
	cof_confine_ns_drop(ts, t);
	if (ts->kernel) {
		/* a fresh tmpfs: quicker than removing, and it drops whatever a
		 * process may have left open */
		unmount_all(t->ws);
		memset(&t->used, 0, sizeof t->used);
		if (tmpfs_set(ts, t, 0))
			return cof_error(err, COF_EINTERNAL, "cannot renew the workspace: %s",
					 strerror(errno));
		return 0;
	}
	int fd = open(t->ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc = fd >= 0 ? cof_rm_children(fd) : -1;
	if (fd >= 0)
		close(fd);
	memset(&t->used, 0, sizeof t->used);
	return rc ? cof_error(err, COF_EINTERNAL, "cannot empty the workspace") : 0;
}

void cof_quota_ws_drop(cof_turns *ts, cof_turn *t)
{
	char kept[PATH_MAX + 64];

	cof_confine_ns_drop(ts, t); /* it holds the workspace and views */
	if (t->ws_made) {
		unmount_all(t->ws);
		rm_path(t->ws);
		t->ws_made = 0;
		memset(&t->used, 0, sizeof t->used);
	}
	snprintf(kept, sizeof kept, "%s/kept/%s", ts->root, t->id);
	rm_path(kept);
	snprintf(kept, sizeof kept, "%s/layers/%s", ts->root, t->id);
	unmount_all(kept);
	rm_path(kept);
}

void cof_quota_base(cof_turns *ts, cof_turn *t)
{
	if (ts->kernel && t->ws_made)
		measure(ts, t, NULL, 0);
	t->base = t->used;
}

/* What `o` counts toward a shared limit: entries for "inodes", else bytes. */
static int64_t amount(const cof_usage *u, int inodes)
{
	return inodes ? u->entries : bytes_of(u);
}

/* A turn with a call running that holds more than when its calls began. */
static int grew(const cof_turn *o, int inodes)
{
	return o->ncalls > 0 && amount(&o->used, inodes) > amount(&o->base, inodes);
}

/* True when the shared limit `by` must not stop `t`: it did not grow since
 * its calls began, or it holds less than its share, the room the turns at
 * rest leave under the limit split evenly among the turns that grew (when
 * the limit is reached, at least one that grew holds its share or more,
 * to the page).
 * turn_disk is its own: never spared. */
static int spared(cof_turns *ts, const cof_turn *t, const char *by)
{
	int user = !strcmp(by, "user_disk"), inodes = !strcmp(by, "inodes");
	int64_t growing = 0, room = user ? t->sb.user_disk : t->sb.scratch;

	if (!strcmp(by, "turn_disk"))
		return 0;
	if (!grew(t, inodes))
		return 1;
	if (inodes)
		room /= COF_ENTRY_BYTES;
	for (cof_turn *o = ts->list; o; o = o->next) {
		if (!o->ws_made || strcmp(o->org, t->org) || strcmp(o->agent, t->agent) ||
		    (user && strcmp(o->user, t->user)))
			continue;
		if (grew(o, inodes))
			growing++;
		else
			room -= amount(&o->used, inodes);
	}
	/* less a page (an entry): the kernel's edge stops a write that far
	 * below the size it set */
	return amount(&t->used, inodes) + (inodes ? 1 : PAGE) < room / (growing > 0 ? growing : 1);
}

/* `by` unless spared(): what cof_quota_check answers for a limit reached. */
static const char *reached(cof_turns *ts, const cof_turn *t, const char *by)
{
	return spared(ts, t, by) ? NULL : by;
}

const char *cof_quota_check(cof_turns *ts, cof_turn *t, const cof_usage *fresh)
{
	int64_t bytes, entries;
	const char *by;

	if (!t->ws_made)
		return NULL;
	if (fresh) {
		t->used = *fresh;
	} else if (ts->kernel) {
		for (cof_turn *o = ts->list; o; o = o->next)
			if (o->ws_made && !strcmp(o->org, t->org) && !strcmp(o->agent, t->agent))
				measure(ts, o, NULL, 0);
		for (cof_turn *o = ts->list; o; o = o->next)
			if (o->ws_made && !strcmp(o->org, t->org) && !strcmp(o->agent, t->agent))
				tmpfs_set(ts, o, 1);
	} else {
		measure(ts, t, NULL, 0);
	}
	allowance(ts, t, &bytes, &by, &entries);
	if (t->used.over)
		return "turn_disk";
	/* every entry also counts 1 KB, so this is reached first only when the
	 * workspace holds nothing but entries up to the whole scratch */
	if (t->used.entries >= entries && reached(ts, t, "inodes"))
		return "inodes";
	if (bytes_of(&t->used) >= bytes && reached(ts, t, by))
		return by;
	/* the kernel's edge (to the page): the write it stopped with ENOSPC
	 * breached the limit that set the size */
	if (ts->kernel && t->size_set > 0 && t->used.blocks >= t->size_set &&
	    reached(ts, t, t->size_by))
		return t->size_by;
	if (ts->kernel && t->inodes_set > 0 && t->used.entries + 1 >= t->inodes_set &&
	    reached(ts, t, t->inodes_by))
		return t->inodes_by;
	return NULL;
}
