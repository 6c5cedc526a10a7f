/*
 * etcview.c — what a call sees of /etc, prepared once: a copy of the allowed
 * part of the host's /etc (never its secrets) in SCRATCH/etc/gN, which a call
 * gets as ONE bind instead of a bind per allowed name.
 *
 * Why: bubblewrap reads all of /proc/self/mountinfo after each bind it makes
 * (to remount it read-only), so 39 binds of /etc names were half of a
 * confined `true`'s CPU time. A copy is made when the first call starts and
 * again whenever inotify says the host's /etc (or anything copied) changed;
 * the watches are set before the copy is made, so a change during the copy
 * makes another. A generation stays on disk while a call that was given it
 * runs (its files are that call's /etc) and is removed once the last ends.
 * When no copy can be made (no inotify, too large, an error), calls get the
 * binds as before: slower, never wrong.
 *
 * The copy keeps modes and owners (a file only root may read stays so), is
 * owned by root when we are, and is bound read-only: no call can change it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "turn/turn.h"
#include "util/util.h"

/* What a call sees of /etc: what programs read to run (users, names,
 * libraries, certificates, time zone, alternatives), never its secrets
 * (shadow, gshadow, sudoers, ssh keys, ...). A name ending in '*' is a
 * prefix. */
static const char *const etc_allowed[] = {
	"passwd", "group", "hosts", "host.conf", "hostname", "resolv.conf",
	"nsswitch.conf", "gai.conf", "services", "protocols", "networks", "ld.so.cache",
	"ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "ca-certificates",
	"ca-certificates.conf", "pki", "crypto-policies", "alternatives", "mime.types",
	"magic", "magic.mime", "os-release", "debian_version", "lsb-release", "python3*",
	"perl", "fonts", "locale.alias", "locale.conf", "default", "inputrc", "shells",
	"mailcap", "xdg", "environment", "papersize", "gitconfig", "subversion", "vim",
	"ImageMagick*", "R", "java*", "texmf", NULL};

/* Parts of folders whose rest is secret (/etc/ssl/private holds keys). */
static const char *const etc_parts[] = {"ssl/certs", "ssl/openssl.cnf", NULL};

/* Bounds of a copy: past them calls get the binds instead. */
#define ETC_MAX_ENTRIES 20000
#define ETC_MAX_BYTES (64LL << 20)
#define ETC_MAX_DEPTH 16

#define WATCH_MASK (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | \
		    IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF)

/* One copy. */
typedef struct etc_gen {
	char path[PATH_MAX];
	int refs;                /* calls given it that still run */
	struct etc_gen *next;    /* on the list of replaced ones */
} etc_gen;

struct cof_etc_view {
	pthread_mutex_t mu;
	int ino;                 /* inotify of the copy's sources, or -1 */
	int failed;              /* the last copy could not be made: binds */
	int mounted;             /* as root: SCRATCH/etc is our tmpfs */
	unsigned next_gen;
	etc_gen *cur;            /* NULL: none yet, or failed */
	etc_gen *old;            /* replaced, still in use */
};

/* A copy under way: where, what it may still take, the watches. */
typedef struct copy {
	int ino;
	long entries;
	long long bytes;
} copy;

char **cof_etc_list(void)
{
	DIR *d = opendir("/etc");
	struct dirent *e;
	char **v = cof_calloc(256, sizeof *v);
	size_t n = 0;

	if (!v || !d) {
		if (d)
			closedir(d);
		return v;
	}
	while (n < 255 && (e = readdir(d)) != NULL)
		for (size_t i = 0; etc_allowed[i]; i++) {
			size_t k = strlen(etc_allowed[i]);
			int pre = etc_allowed[i][k - 1] == '*';
			if (pre ? !strncmp(e->d_name, etc_allowed[i], k - 1)
				: !strcmp(e->d_name, etc_allowed[i])) {
				v[n++] = cof_strdup(e->d_name);
				break;
			}
		}
	closedir(d);
	for (size_t i = 0; etc_parts[i] && n < 255; i++) {
		char p[64];
		snprintf(p, sizeof p, "/etc/%s", etc_parts[i]);
		if (access(p, F_OK) == 0)
			v[n++] = cof_strdup(etc_parts[i]);
	}
	return v;
}

/* Frees a list of cof_etc_list. */
static void list_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Gives what was made at `name` in `dir` the owner, times and mode of `sb`
 * (the set-id bits dropped), without following a link. 0 or -1. */
static int attrs(int dir, const char *name, const struct stat *sb, int root)
{
	if (root && fchownat(dir, name, sb->st_uid, sb->st_gid, AT_SYMLINK_NOFOLLOW))
		return -1;
	/* the host's times: a program comparing them sees what it would */
	struct timespec ts[2] = {sb->st_atim, sb->st_mtim};
	if (utimensat(dir, name, ts, AT_SYMLINK_NOFOLLOW))
		return -1;
	if (S_ISLNK(sb->st_mode))
		return 0;
	return fchmodat(dir, name, sb->st_mode & 01777, 0);
}

/* Copies the regular file open at `in` (described by `sb`) to `name` in `dir`.
 * 0 or -1. */
static int copy_file(int in, const struct stat *sb, int dir, const char *name, copy *c,
		     int root)
{
	char buf[65536];
	int out;
	ssize_t n = 0;

	c->bytes += sb->st_size;
	if (c->bytes > ETC_MAX_BYTES)
		return -1;
	if ((out = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  0600)) < 0)
		return -1;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	if (close(out) || n < 0)
		return -1;
	return attrs(dir, name, sb, root);
}

static int copy_entry(int sdir, const char *name, int ddir, const char *spath, int depth,
		      int follow, copy *c, int root);

/* Copies the folder open at `in` into the new folder `name` of `ddir`,
 * watching it. 0 or -1. */
static int copy_dir(int in, const struct stat *sb, int ddir, const char *name,
		    const char *spath, int depth, copy *c, int root)
{
	DIR *d;
	struct dirent *e;
	int out, rc = 0;

	if (depth > ETC_MAX_DEPTH || mkdirat(ddir, name, 0700))
		return -1;
	if (inotify_add_watch(c->ino, spath, WATCH_MASK | IN_ONLYDIR) < 0)
		return -1;
	if ((out = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	int dup_in = dup(in);
	if (dup_in < 0 || !(d = fdopendir(dup_in))) {
		if (dup_in >= 0)
			close(dup_in);
		close(out);
		return -1;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char sub[PATH_MAX];
		if (snprintf(sub, sizeof sub, "%s/%s", spath, e->d_name) >= (int)sizeof sub)
			rc = -1;
		else
			rc = copy_entry(dirfd(d), e->d_name, out, sub, depth + 1, 0, c, root);
	}
	closedir(d);
	close(out);
	return rc ? rc : attrs(ddir, name, sb, root);
}

/* Copies `name` of the folder `sdir` (whose path is `spath`) to `ddir`: a
 * folder with what is in it, a file, a link as a link; other kinds are left
 * out. `follow`: a link at the top is copied as what it names (as a bind of
 * it would show). 0 or -1. */
static int copy_entry(int sdir, const char *name, int ddir, const char *spath, int depth,
		      int follow, copy *c, int root)
{
	struct stat sb;
	int fd, rc;

	if (++c->entries > ETC_MAX_ENTRIES)
		return -1;
	if (fstatat(sdir, name, &sb, follow ? 0 : AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -1; /* gone meanwhile: inotify says so */
	if (S_ISLNK(sb.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(sdir, name, target, sizeof target - 1);
		if (n < 0)
			return -1;
		target[n] = '\0';
		return symlinkat(target, ddir, name) ? -1 : attrs(ddir, name, &sb, root);
	}
	if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
		return 0;
	/* O_NONBLOCK: should it have become a FIFO since, no wait on it */
	fd = openat(sdir, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW) |
				    (S_ISDIR(sb.st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return errno == ENOENT || (!root && errno == EACCES) ? 0 : -1;
	if (fstat(fd, &sb) || (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))) {
		close(fd);
		return 0;
	}
	/* a file at the top is watched itself: a bind-mounted /etc/hosts is
	 * written through another folder than ours */
	if (depth == 0 && S_ISREG(sb.st_mode) &&
	    inotify_add_watch(c->ino, spath, WATCH_MASK) < 0)
		rc = -1;
	else if (S_ISDIR(sb.st_mode))
		rc = copy_dir(fd, &sb, ddir, name, spath, depth, c, root);
	else
		rc = copy_file(fd, &sb, ddir, name, c, root);
	close(fd);
	return rc;
}

/* Makes the copy in the new folder `path` with its watches on `ino`. 0 or
 * -1 (the caller removes what was made). */
static int copy_make(const char *path, int ino, int root)
{
	char **names = cof_etc_list();
	int etc = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), dst = -1, rc = -1;
	copy c = {ino, 0, 0};
	struct stat sb;

	if (!names || etc < 0 || fstat(etc, &sb) || mkdir(path, 0700) ||
	    (dst = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    inotify_add_watch(ino, "/etc", WATCH_MASK | IN_ONLYDIR) < 0)
		goto out;
	rc = 0;
	for (size_t i = 0; names[i] && rc == 0; i++) {
		char spath[PATH_MAX];
		const char *slash = strchr(names[i], '/');
		snprintf(spath, sizeof spath, "/etc/%s", names[i]);
		if (!slash) {
			rc = copy_entry(etc, names[i], dst, spath, 0, 1, &c, root);
			continue;
		}
		/* a part (ssl/certs): its folder made as the host's, watched */
		char parent[64];
		struct stat ps;
		snprintf(parent, sizeof parent, "%.*s", (int)(slash - names[i]), names[i]);
		int pd = openat(etc, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		int dd = -1;
		char ppath[PATH_MAX];
		snprintf(ppath, sizeof ppath, "/etc/%s", parent);
		if (pd < 0)
			rc = errno == ENOENT ? 0 : -1;
		else if (fstat(pd, &ps) || (mkdirat(dst, parent, 0700) && errno != EEXIST) ||
			 attrs(dst, parent, &ps, root) ||
			 (dd = openat(dst, parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						  O_CLOEXEC)) < 0 ||
			 inotify_add_watch(ino, ppath, WATCH_MASK | IN_ONLYDIR) < 0)
			rc = -1;
		else
			rc = copy_entry(pd, slash + 1, dd, spath, 0, 1, &c, root);
		if (pd >= 0)
			close(pd);
		if (dd >= 0)
			close(dd);
	}
	if (rc == 0 && fchmod(dst, 0755))
		rc = -1;
out:
	if (etc >= 0)
		close(etc);
	if (dst >= 0)
		close(dst);
	list_free(names);
	return rc;
}

/* Removes a copy from disk and frees it. */
static void gen_free(etc_gen *g)
{
	int fd = open(g->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) {
		cof_rm_children(fd);
		close(fd);
	}
	rmdir(g->path);
	free(g);
}

/* True when inotify reported a change (or lost count) since the copy was
 * made: drains what it has. */
static int changed(cof_etc_view *v)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int any = 0;

	while (read(v->ino, buf, sizeof buf) > 0)
		any = 1;
	return any;
}

/* Takes the current copy out of use (under v->mu): removed now, or by the
 * last call that still has it. */
static void retire(cof_etc_view *v)
{
	if (!v->cur)
		return;
	if (v->cur->refs) {
		v->cur->next = v->old;
		v->old = v->cur;
	} else {
		gen_free(v->cur);
	}
	v->cur = NULL;
}

/* As root, SCRATCH/etc is a tmpfs of its own: what a call's mountinfo says
 * of its /etc is then "/gN" of a tmpfs, never the path of the data dir or the
 * scratch root (nosuid, nodev; exec as the host's /etc allows). 0 or -1. */
static int holder(cof_turns *ts, cof_etc_view *v, const char *dir)
{
	char opts[64];

	if (!ts->root_user || v->mounted)
		return 0;
	snprintf(opts, sizeof opts, "size=%lld,nr_inodes=%d,mode=0700",
		 (long long)ETC_MAX_BYTES + (16LL << 20), 2 * ETC_MAX_ENTRIES);
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts))
		return -1;
	v->mounted = 1;
	return 0;
}

/* Makes a new copy the current one (under v->mu); on failure calls get the
 * binds until /etc changes again (its watches stay). */
static void refresh(cof_turns *ts, cof_etc_view *v)
{
	char dir[PATH_MAX];
	etc_gen *g = cof_calloc(1, sizeof *g);
	int ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	retire(v);
	v->failed = 1;
	snprintf(dir, sizeof dir, "%.4000s/etc", ts->root);
	if (!g || ino < 0 || (mkdir(dir, 0700) && errno != EEXIST) || holder(ts, v, dir)) {
		free(g);
		if (ino >= 0)
			close(ino);
		return;
	}
	if (v->ino >= 0)
		close(v->ino);
	v->ino = ino;
	snprintf(g->path, sizeof g->path, "%.4000s/g%u", dir, ++v->next_gen);
	if (copy_make(g->path, ino, ts->root_user)) {
		gen_free(g);
		return;
	}
	v->failed = 0;
	v->cur = g;
}

int cof_etc_open(cof_turns *ts)
{
	cof_etc_view *v = cof_calloc(1, sizeof *v);

	if (!(ts->etc = cof_etc_list()) || !v) {
		free(v);
		return -1;
	}
	pthread_mutex_init(&v->mu, NULL);
	v->ino = -1;
	ts->etcv = v;
	return 0;
}

const char *cof_etc_take(cof_turns *ts, void **ref)
{
	cof_etc_view *v = ts->etcv;
	const char *path = NULL;

	*ref = NULL;
	if (!v)
		return NULL;
	pthread_mutex_lock(&v->mu);
	if (v->next_gen == 0) {
		/* the first call: what a previous run left goes first */
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%.4000s/etc", ts->root);
		for (int i = 0; i < 16 && ts->root_user && umount2(dir, MNT_DETACH) == 0; i++)
			;
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			cof_rm_children(fd);
			close(fd);
		}
	}
	if (v->ino < 0 ? !v->failed : changed(v))
		refresh(ts, v);
	if (v->cur) {
		v->cur->refs++;
		*ref = v->cur;
		path = v->cur->path;
	}
	pthread_mutex_unlock(&v->mu);
	return path;
}

void cof_etc_drop(cof_turns *ts, void *ref)
{
	cof_etc_view *v = ts->etcv;
	etc_gen *g = ref, **pp;

	if (!v || !g)
		return;
	pthread_mutex_lock(&v->mu);
	if (--g->refs == 0 && g != v->cur)
		for (pp = &v->old; *pp; pp = &(*pp)->next)
			if (*pp == g) {
				*pp = g->next;
				gen_free(g);
				break;
			}
	pthread_mutex_unlock(&v->mu);
}

void cof_etc_close(cof_turns *ts)
{
	cof_etc_view *v = ts->etcv;

	list_free(ts->etc);
	ts->etc = NULL;
	if (!v)
		return;
	while (v->old) {
		etc_gen *g = v->old;
		v->old = g->next;
		gen_free(g);
	}
	if (v->cur)
		gen_free(v->cur);
	if (v->ino >= 0)
		close(v->ino);
	if (v->mounted) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%.4000s/etc", ts->root);
		umount2(dir, MNT_DETACH);
		rmdir(dir);
	}
	pthread_mutex_destroy(&v->mu);
	free(v);
	ts->etcv = NULL;
}
