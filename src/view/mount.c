/*
 * mount.c — a view's life: open its roots at their seqs, mount the FUSE
 * session, serve it from a thread (or the caller's), and end it: a lazy
 * unmount, then the serving loop is woken and ends whoever still holds a
 * copy of the mount (cof_view_detach). What a crashed process left is
 * swept by cof_view_sweep.
 */
#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "view/view_int.h"

const struct fuse_operations *cof_view_ops_for(const cof_vfs *v);

/* Removes every file of the (flat) layer folder open at `dirfd`. */
static void layer_empty(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			unlinkat(dirfd, e->d_name, 0);
	closedir(d);
}

int64_t cof_view_seq(const cof_vfs *v, int i)
{
	return v->roots[i].v.seq;
}

int64_t cof_view_touched(cof_vfs *v)
{
	int64_t n;

	pthread_mutex_lock(&v->mu);
	n = v->nnodes;
	pthread_mutex_unlock(&v->mu);
	return n;
}

/* Opens every root: its volume (and snapshot) at the seq the view reads. */
static int roots_open(cof_vfs *v, cof_err *err)
{
	for (int i = 0; i < v->o.nroots; i++) {
		vroot *r = &v->roots[i];
		r->cfg = v->o.roots[i];
		r->sublen = strlen(r->cfg.subpath);
		if (VSRC(v)->open(v, r, err))
			return -1;
		if (r->v.snapshot)
			r->cfg.rw = 0; /* a snapshot is read-only */
	}
	return 0;
}

/* The signal that wakes a serving thread out of fuse_session_loop_mt's wait (see
 * cof_view_detach); its handler does nothing, what matters is the EINTR. */
static int wake_sig;

static void wake_noop(int sig)
{
	(void)sig;
}

static void wake_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = wake_noop; /* no SA_RESTART: sem_wait returns EINTR */
	sigemptyset(&sa.sa_mask);
	wake_sig = SIGRTMIN + 4;
	sigaction(wake_sig, &sa, NULL);
}

/* libfuse's multi-threaded loop (its own config is freed after: the 3.1
 * way, fuse_session_loop_mt_31, leaks the one it makes). A view read in
 * process answers each request on the CPU, so it runs at most two workers a
 * core (at least 4): each more one waiting on /dev/fuse is one more woken
 * and put back to sleep for nothing, and they contend for the device's lock
 * (a cold `grep -r` of 5,000 files: 2.05x tmpfs with 10, 1.86x with 4, on 2
 * cores, medians of 6). Where each close lands a version (DIRECT: the
 * FLUSH waits on a store commit), all of them stay once started (idle =
 * max): with fewer kept idle, libfuse's workers churned, one thread made and
 * ended per request that found no other waiting (a `echo > f` loop in
 * `coffer mount`: a clone3 a file; 6.3 -> 3.4 ms a file with all kept, issue
 * 38 item 3). A call's view keeps half idle, as measured before (no gain
 * seen there within the noise). Through --server each request waits on
 * HTTP, so that way keeps libfuse's 10. */
static int loop_mt(cof_vfs *v)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	if (!cfg)
		return -1;
	if (!v->o.src) {
		unsigned max = cores > 2 ? (unsigned)(2 * cores) : 4;
		fuse_loop_cfg_set_max_threads(cfg, max);
		fuse_loop_cfg_set_idle_threads(cfg, v->o.way == COF_VIEW_DIRECT ? max : max / 2);
	} else
		fuse_loop_cfg_set_idle_threads(cfg, 10);
	rc = fuse_session_loop_mt(v->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

static void *serve_thread(void *arg)
{
	cof_vfs *v = arg;
	sigset_t s;

	/* the thread that made us may block it; libfuse's workers inherit this */
	sigemptyset(&s);
	sigaddset(&s, wake_sig);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	loop_mt(v);
	return NULL;
}

/* `fusermount3 -u -z DIR`: what libfuse cannot do for a mount it was handed
 * as /dev/fd/N. */
static void fusermount_u(const char *dir)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		execl("/usr/bin/fusermount3", "fusermount3", "-u", "-z", "--", dir, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
}

/* Runs `fusermount3 -o OPTS -- DIR` and takes the /dev/fuse fd it passes
 * back over a socket (_FUSE_COMMFD): the way in when /dev/fuse cannot be
 * opened by this uid (libfuse does not fall back to fusermount3 then). The
 * fd, or -1. */
static int fusermount_fd(const char *dir, const char *opts)
{
	int sv[2], fd = -1, status;
	char num[16], buf[1];
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {buf, 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof ctl};
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	fcntl(sv[1], F_SETFD, FD_CLOEXEC);
	pid = fork();
	if (pid == 0) {
		snprintf(num, sizeof num, "%d", sv[0]);
		setenv("_FUSE_COMMFD", num, 1);
		execl("/usr/bin/fusermount3", "fusermount3", "-o", opts, "--", dir, (char *)NULL);
		_exit(127);
	}
	close(sv[0]);
	if (pid > 0 && recvmsg(sv[1], &mh, 0) > 0) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
	}
	close(sv[1]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return fd;
}

/* Mounts the view at `dir`: libfuse's own way, else (this uid cannot open
 * /dev/fuse) through fusermount3, handing libfuse the fd as /dev/fd/N. */
static int mount_fuse(cof_vfs *v, const char *dir, const char *opts)
{
	char fdpath[32];
	int fd;

	if (geteuid() == 0 || access("/dev/fuse", R_OK | W_OK) == 0)
		return fuse_session_mount(v->se, dir);
	/* fusermount3 takes only the kernel's options and its own */
	char o[256];
	snprintf(o, sizeof o, "%s", opts);
	if ((fd = fusermount_fd(dir, o)) < 0)
		return -1;
	snprintf(fdpath, sizeof fdpath, "/dev/fd/%d", fd);
	if (fuse_session_mount(v->se, fdpath)) {
		close(fd);
		return -1;
	}
	v->by_fusermount = 1;
	return 0;
}

int cof_view_mount(const cof_view_opts *opts, const char *dir, cof_vfs **out,
		   cof_err *err)
{
	static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
	char optstr[256];
	char *argv[] = {"coffer", "-o", optstr, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	cof_vfs *v;

	*out = NULL;
	pthread_once(&wake_once, wake_install);
	if (opts->nroots < 1 || opts->nroots > COF_VIEW_ROOTS)
		return cof_error(err, COF_EINTERNAL, "a view has 1 to %d volumes", COF_VIEW_ROOTS);
	if (!(v = cof_calloc(1, sizeof *v)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	static uint64_t next_id;
	v->o = *opts;
	v->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	v->layer = -1;
	v->uid = getuid();
	v->gid = getgid();
	pthread_mutex_init(&v->mu, NULL);
	pthread_mutex_init(&v->wmu, NULL);
	pthread_mutex_init(&v->files_mu, NULL);
	pthread_cond_init(&v->copied, NULL);
	if (roots_open(v, err))
		goto fail;
	if (opts->layer_dir &&
	    (v->layer = open(opts->layer_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		cof_error(err, COF_EINTERNAL, "cannot open the layer '%s': %s", opts->layer_dir,
			  strerror(errno));
		goto fail;
	}
	snprintf(optstr, sizeof optstr, "fsname=coffer,subtype=coffer,nosuid,nodev,noatime%s%s%s",
		 opts->noexec ? ",noexec" : "", opts->allow_other ? ",allow_other" : "",
		 v->layer < 0 ? ",ro" : "");
	if ((v->dir = cof_strdup(dir)) != NULL)
		v->se = cof_vll_new(v, &args, cof_view_ops_for(v));
	fuse_opt_free_args(&args); /* the session may have grown them */
	if (!v->dir || !v->se) {
		cof_error(err, COF_EINTERNAL, "cannot start the view of '%s'", dir);
		goto fail;
	}
	if (mount_fuse(v, dir, optstr)) {
		cof_error(err, COF_EINTERNAL, "cannot mount a view at '%s' (FUSE: /dev/fuse, "
			  "fusermount3)", dir);
		goto fail;
	}
	v->mounted = 1;
	*out = v;
	return 0;
fail:
	cof_view_unmount(v);
	return -1;
}

/* Starts the serving thread (calls). */
int cof_view_start(cof_vfs *v, cof_err *err)
{
	if (pthread_create(&v->thread, NULL, serve_thread, v))
		return cof_error(err, COF_EINTERNAL, "cannot start the view's thread");
	v->threaded = 1;
	return 0;
}

int cof_view_serve(cof_vfs *v)
{
	struct fuse_session *se = v->se;
	int rc;

	/* Ctrl-C, SIGTERM, SIGHUP end the loop; the caller then unmounts */
	if (fuse_set_signal_handlers(se))
		return -1;
	rc = loop_mt(v);
	fuse_remove_signal_handlers(se);
	return rc;
}

void cof_view_stop(cof_vfs *v)
{
	fuse_session_exit(v->se);
}

/* Ends the serving of a mounted view, then waits for its thread.
 *
 * Neither the lazy unmount nor an abort through /sys/fs/fuse/connections
 * can be relied on to end the loop: every sandbox started (by us or any
 * other process on the host) while this view was mounted holds a copy of
 * the mount in its own mount namespace (unshare, bwrap; the host's mounts
 * are private, so our unmount never reaches the copy), the superblock then
 * lives on, and the kernel never fails the loop's read; fusectl is often
 * not mounted (containers), so the abort does nothing. The loop then idles
 * in fuse_dev_do_read until the other sandbox ends: the hang of calls seen
 * under load. So the loop is woken directly: fuse_session_exit sets its
 * flag, and wake_sig interrupts its sem_wait (never restarted), after which
 * libfuse cancels its workers (cancellable only while waiting for a
 * request) and returns. Closing /dev/fuse in fuse_session_destroy then
 * aborts the connection, so a copy left elsewhere fails with ENOTCONN
 * rather than blocking. The
 * signal is repeated because one sent before the loop reaches sem_wait is
 * lost. */
void cof_view_detach(cof_vfs *v)
{
	if (!v || !v->mounted)
		return;
	cof_vll_quiesce(v->ll);
	fuse_session_exit(v->se);
	fuse_session_unmount(v->se); /* lazy: MNT_DETACH, or fusermount3 -u -z */
	if (v->by_fusermount)
		fusermount_u(v->dir);
	v->mounted = 0;
	if (!v->threaded)
		return;
	for (;;) {
		struct timespec until;
		pthread_kill(v->thread, wake_sig);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 20 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_timedjoin_np(v->thread, NULL, &until) == 0)
			break;
	}
	v->threaded = 0;
}

void cof_view_unmount(cof_vfs *v)
{
	if (!v)
		return;
	cof_view_detach(v);
	cof_vll_free(v->ll); /* and the session */
	cof_vfile_free_all(v);
	if (v->layer >= 0) {
		layer_empty(v->layer);
		close(v->layer);
	}
	cof_vnode_free_all(v);
	pthread_mutex_destroy(&v->mu);
	pthread_mutex_destroy(&v->wmu);
	pthread_mutex_destroy(&v->files_mu);
	pthread_cond_destroy(&v->copied);
	free(v->dir);
	free(v);
}

int cof_view_usable(const char *dir, char *why, size_t whysz)
{
	char probe[4200];
	int fd;

	if ((fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) >= 0) {
		close(fd);
		return 1;
	}
	if (errno == ENOENT || errno == ENODEV || geteuid() == 0) {
		snprintf(why, whysz, "the agent's files are not shown in calls: cannot open "
			 "/dev/fuse (%s)", strerror(errno));
		return 0;
	}
	snprintf(probe, sizeof probe, "%s/.probe", dir);
	if (mkdir(probe, 0700) && errno != EEXIST) {
		snprintf(why, whysz, "the agent's files are not shown in calls: %s", strerror(errno));
		return 0;
	}
	fd = fusermount_fd(probe, "nosuid,nodev,noexec");
	if (fd >= 0) {
		close(fd);
		fusermount_u(probe);
	}
	rmdir(probe);
	if (fd < 0)
		snprintf(why, whysz, "the agent's files are not shown in calls: FUSE needs "
			 "/dev/fuse or a working fusermount3 (setuid) for this user");
	return fd >= 0;
}

void cof_view_sweep(const char *dir)
{
	FILE *f = fopen("/proc/self/mounts", "re");
	char line[8192], *paths[256];
	size_t n = 0, len = strlen(dir);

	if (!f)
		return;
	while (n < 256 && fgets(line, sizeof line, f)) {
		char src[4096], mnt[4096], type[64];
		if (sscanf(line, "%4095s %4095s %63s", src, mnt, type) != 3 ||
		    strncmp(type, "fuse", 4) || strncmp(mnt, dir, len) ||
		    (mnt[len] != '/' && mnt[len]))
			continue;
		paths[n++] = cof_strdup(mnt);
	}
	fclose(f);
	while (n > 0) {
		char *p = paths[--n];
		if (p && umount2(p, MNT_DETACH)) {
			char cmd[4200];
			/* without root only fusermount3 may unmount it */
			snprintf(cmd, sizeof cmd, "fusermount3 -u -z '%s' 2>/dev/null", p);
			if (!strchr(p, '\''))
				(void)!system(cmd);
		}
		free(p);
	}
}
