/*
 * confine.c — one call's process: `sh -c command` under bubblewrap with a
 * seccomp filter, as an unprivileged uid of the turn's own.
 *
 * What the command sees: fresh user, pid, ipc, uts, cgroup and (unless the
 * agent's sandbox.network is true) net namespaces; / read-only, built from
 * nothing: the system folders, one bind of a copy of /etc's allowed part
 * (etcview.c), the agent's files; the workspace (a tmpfs, noexec) at /tmp,
 * the only writable place, also $HOME and $TMPDIR; the scratch root and the
 * data dir out of reach (covered where /usr would hold them); a minimal /dev
 * made read-only; uid and gid 65534 inside, the turn's own uid outside (so
 * RLIMIT_NPROC bounds the turn's processes); a clean environment. The pid
 * namespace makes the end reliable: when `sh` exits, or bwrap is killed, the
 * kernel kills every process left in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/nsfs.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "turn/turn.h"
#include "util/util.h"

#define BWRAP "/usr/bin/bwrap"
#define FD_SECCOMP 3
#define FD_WS 4

/* Calls a command has no business making: they change the system, reach
 * other processes, or open the kernel's larger attack surface. Names unknown
 * to this kernel/libseccomp are skipped. */
static const char *const denied[] = {
	"mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "ptrace",
	"process_vm_readv", "process_vm_writev", "kcmp", "kexec_load", "kexec_file_load",
	"init_module", "finit_module", "delete_module", "bpf", "perf_event_open",
	"keyctl", "add_key", "request_key", "reboot", "swapon", "swapoff", "unshare",
	"setns", "open_by_handle_at", "name_to_handle_at", "userfaultfd", "acct",
	"quotactl", "quotactl_fd", "settimeofday", "clock_settime", "clock_adjtime",
	"adjtimex", "syslog", "iopl", "ioperm", "uselib", "vhangup", "lookup_dcookie",
	"fanotify_init", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"personality", NULL};

/* SysV IPC that holds memory (semaphores hold next to none); "ipc" is the
 * i386 multiplexer that reaches them too. */
static const char *const ipc_calls[] = {"shmget", "msgget", "ipc", NULL};

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

/* memfd_create: bytes in a memfd could be run (execveat, /proc/self/fd), so
 * one is made only sealed against exec (MFD_NOEXEC_SEAL, Linux 6.3+, the
 * kernel holds the seal) and only when a cgroup counts its pages; any other
 * answers ENOSYS, which programs take as "no memfd here" and fall back. */
static int memfd_rules(scmp_filter_ctx ctx, int bounded)
{
	int nr = seccomp_syscall_resolve_name("memfd_create");

	if (nr == __NR_SCMP_ERROR)
		return 0;
	if (!bounded)
		return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 1,
				  SCMP_A1(SCMP_CMP_MASKED_EQ, MFD_NOEXEC_SEAL, 0));
	return rc ? rc : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 1,
					  SCMP_A1(SCMP_CMP_MASKED_EQ, MFD_EXEC, MFD_EXEC));
}

/* Adds `rule` for the syscall `name` if this system knows it. */
static int deny(scmp_filter_ctx ctx, uint32_t action, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0;
	return seccomp_rule_add(ctx, action, nr, 0);
}

/* The filter: every call allowed except the denied ones (EPERM), clone with
 * a new namespace (EPERM), clone3 (ENOSYS: its flags are out of reach of a
 * filter, and libc falls back to clone), and TIOCSTI/TIOCLINUX ioctls. */
static scmp_filter_ctx filter_build(int bounded)
{
	static const uint64_t ns[] = {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID,
				      CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
				      CLONE_NEWCGROUP, CLONE_NEWTIME};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = 0;

	if (!ctx)
		return NULL;
#if defined(__x86_64__)
	seccomp_arch_add(ctx, SCMP_ARCH_X86); /* 32-bit calls are filtered too */
#endif
	/* a binary tree of the syscall numbers, not a list: the kernel runs the
	 * filter once for each number when bwrap loads it (to cache what is
	 * always allowed), and then on every system call of the sandbox */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	for (size_t i = 0; denied[i] && rc == 0; i++)
		rc = deny(ctx, SCMP_ACT_ERRNO(EPERM), denied[i]);
	for (size_t i = 0; i < sizeof ns / sizeof ns[0] && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, ns[i], ns[i]));
	if (rc == 0)
		rc = deny(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3");
	if (rc == 0)
		rc = memfd_rules(ctx, bounded);
	/* SysV shared memory and queues: bounded by the IPC namespace's
	 * sysctls and the turn's cgroup only; without those, refused */
	for (size_t i = 0; !bounded && ipc_calls[i] && rc == 0; i++)
		rc = deny(ctx, SCMP_ACT_ERRNO(ENOSYS), ipc_calls[i]);
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
	if (rc != 0) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

/* Without root: coffer-exec next to our own binary, if it is there and this
 * kernel has Landlock (ts->exec_helper, else ""). */
static void helper_find(cof_turns *ts)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash;

	ts->exec_helper[0] = '\0';
	if (ts->root_user || n <= 0)
		return;
	self[n] = '\0';
	if (!(slash = strrchr(self, '/')))
		return;
	*slash = '\0';
	snprintf(ts->exec_helper, sizeof ts->exec_helper, "%.4000s/coffer-exec", self);
	/* LANDLOCK_CREATE_RULESET_VERSION (1): the ABI version, or an error */
	if (access(ts->exec_helper, X_OK) || syscall(SYS_landlock_create_ruleset, NULL, 0, 1) < 1)
		ts->exec_helper[0] = '\0';
}

int cof_confine_init(cof_turns *ts, cof_err *err)
{
	scmp_filter_ctx ctx = filter_build(ts->cg != 0);
	struct stat sb;
	int fd;

	helper_find(ts);
	if (cof_etc_open(ts)) {
		seccomp_release(ctx);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	if (access(BWRAP, X_OK))
		return cof_error(err, COF_EINTERNAL, "'%s' is missing: install bubblewrap", BWRAP);
	if (!ctx)
		return cof_error(err, COF_EINTERNAL, "cannot build the seccomp filter");
	fd = memfd_create("coffer-seccomp", MFD_CLOEXEC);
	if (fd < 0 || seccomp_export_bpf(ctx, fd) || fstat(fd, &sb) || sb.st_size <= 0) {
		if (fd >= 0)
			close(fd);
		seccomp_release(ctx);
		return cof_error(err, COF_EINTERNAL, "cannot export the seccomp filter");
	}
	seccomp_release(ctx);
	ts->bpf = cof_malloc((size_t)sb.st_size);
	ts->bpf_len = (size_t)sb.st_size;
	if (!ts->bpf || pread(fd, ts->bpf, ts->bpf_len, 0) != (ssize_t)ts->bpf_len) {
		close(fd);
		return cof_error(err, COF_EINTERNAL, "cannot read the seccomp filter");
	}
	close(fd);
	return 0;
}

/* A fresh copy of the filter for one bwrap (it reads the fd to its end, so
 * calls cannot share one). -1 on failure. */
static int bpf_fd(const cof_turns *ts)
{
	int fd = memfd_create("coffer-seccomp", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (write(fd, ts->bpf, ts->bpf_len) != (ssize_t)ts->bpf_len ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

#define ARGV_MAX 1024

/* The system's programs and libraries: a folder is bound read-only, a link
 * (/bin -> usr/bin on a merged /usr) is made again as a link. */
static const char *const system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32",
					  "/lib64", "/libx32", NULL};

/* True when `path` is at or under `dir`. */
static int under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

/* The call's root, built from nothing (not the host's /): system_dirs,
 * the allowed part of /etc (the copy `etc` in one bind, or without one a
 * bind per name), its own /proc and /dev, the workspace at /tmp; then made
 * read-only. `keep` (size bytes, and 128 more after them for
 * argv_build) holds the strings it makes (link targets, /etc paths) for as
 * long as av is used. */
static int argv_root(const cof_turns *ts, const char *etc, const char **av, int n, char *keep,
		     size_t size)
{
	size_t used = 0;

	for (int i = 0; system_dirs[i]; i++) {
		struct stat sb;
		if (lstat(system_dirs[i], &sb))
			continue;
		if (S_ISLNK(sb.st_mode)) {
			ssize_t k = readlink(system_dirs[i], keep + used, size - used - 1);
			if (k <= 0 || (size_t)k >= size - used - 1)
				continue;
			keep[used + (size_t)k] = '\0';
			av[n++] = "--symlink";
			av[n++] = keep + used;
			av[n++] = system_dirs[i];
			used += (size_t)k + 1;
		} else if (S_ISDIR(sb.st_mode)) {
			av[n++] = "--ro-bind";
			av[n++] = system_dirs[i];
			av[n++] = system_dirs[i];
		}
	}
	if (etc) {
		/* as root the child has bound it at /etc (cof_etc_take's folder
		 * is under the scratch root, which it hides) */
		av[n++] = "--ro-bind";
		av[n++] = ts->root_user ? "/etc" : etc;
		av[n++] = "/etc";
		return n;
	}
	av[n++] = "--dir";
	av[n++] = "/etc";
	for (int i = 0; ts->etc[i] && n < ARGV_MAX - 80; i++) {
		int k = snprintf(keep + used, size - used, "/etc/%s", ts->etc[i]);
		if (k < 0 || (size_t)k >= size - used)
			break;
		av[n++] = "--ro-bind-try";
		av[n++] = keep + used;
		av[n++] = keep + used;
		used += (size_t)k + 1;
	}
	return n;
}

/* The agent's files: each folder of the call's view at its agent path
 * (read-only mounts --ro-bind: EROFS). */
static int argv_views(const cof_call_see *see, const char **av, int n)
{
	if (!see)
		return n;
	for (int i = 0; i < see->nbinds && n < ARGV_MAX - 120; i++) {
		av[n++] = see->binds[i].ro ? "--ro-bind" : "--bind";
		av[n++] = see->binds[i].src;
		av[n++] = see->binds[i].dst;
	}
	return n;
}

/* bwrap's arguments. As root the child has already put the workspace at
 * /tmp in a mount namespace of its own (paths under a folder only root may
 * enter cannot be bound by an unprivileged bwrap); otherwise bwrap binds it
 * from fd 4. The scratch root and the data dir are not in the call's root;
 * should one be under /usr, `hide` gets the indexes of the "--tmpfs" pairs
 * that cover it (the child drops one it cannot reach). */
static void argv_build(const cof_turns *ts, const cof_turn *t, const char *command,
		       const cof_call_see *see, const char *etc, const char **av, int *hide,
		       char *keep, size_t keep_size)
{
	int n = 0;

	av[n++] = BWRAP;
	av[n++] = "--unshare-user";
	av[n++] = "--unshare-pid";
	if (!ts->root_user) /* as root the child made it, with its limits */
		av[n++] = "--unshare-ipc";
	av[n++] = "--unshare-uts";
	av[n++] = "--unshare-cgroup-try";
	if (!t->sb.network)
		av[n++] = "--unshare-net";
	av[n++] = "--die-with-parent";
	av[n++] = "--new-session";
	av[n++] = "--uid";
	av[n++] = "65534";
	av[n++] = "--gid";
	av[n++] = "65534";
	av[n++] = "--hostname";
	av[n++] = "sandbox";
	n = argv_root(ts, etc, av, n, keep, keep_size);
	hide[0] = hide[1] = -1;
	for (int i = 0; i < 2 && !ts->root_user; i++)
		if (under(i ? ts->data : ts->root, "/usr")) {
			hide[i] = n;
			av[n++] = "--tmpfs";
			av[n++] = i ? ts->data : ts->root;
		}
	av[n++] = "--proc";
	av[n++] = "/proc";
	av[n++] = "--dev";
	av[n++] = "/dev";
	av[n++] = "--remount-ro";
	av[n++] = "/dev";
	if (ts->root_user) {
		av[n++] = "--bind";
		av[n++] = "/tmp";
	} else {
		av[n++] = "--bind-fd";
		av[n++] = "4";
	}
	av[n++] = "/tmp";
	n = argv_views(see, av, n);
	if (ts->exec_helper[0]) {
		av[n++] = "--ro-bind";
		av[n++] = ts->exec_helper;
		av[n++] = "/.coffer-exec";
	}
	av[n++] = "--remount-ro";
	av[n++] = "/";
	av[n++] = "--chdir";
	av[n++] = "/tmp";
	av[n++] = "--clearenv";
	av[n++] = "--setenv";
	av[n++] = "PATH";
	av[n++] = "/usr/local/bin:/usr/bin:/bin";
	av[n++] = "--setenv";
	av[n++] = "HOME";
	av[n++] = "/tmp";
	av[n++] = "--setenv";
	av[n++] = "TMPDIR";
	av[n++] = "/tmp";
	av[n++] = "--setenv";
	av[n++] = "OUTBOX";
	av[n++] = "/tmp/outbox";
	av[n++] = "--setenv"; /* seed 000's name for the same folder */
	av[n++] = "VESSEL_OUTBOX";
	av[n++] = "/tmp/outbox";
	av[n++] = "--setenv";
	av[n++] = "LANG";
	av[n++] = "C.UTF-8";
	av[n++] = "--seccomp";
	av[n++] = "3";
	av[n++] = "--info-fd";
	av[n++] = "5";
	av[n++] = "--";
	/* no uid of its own: RLIMIT_NPROC set inside counts the call's own
	 * user namespace (Linux 5.14+), so it bounds this call; coffer-exec
	 * sets it and limits what may run to /usr (landlock), else sh does */
	char *num = keep + keep_size; /* the 128 bytes past what argv_root may use */
	if (ts->exec_helper[0]) {
		snprintf(num, 128, "%lld", (long long)t->sb.processes);
		av[n++] = "/.coffer-exec";
		av[n++] = num;
	}
	av[n++] = "/bin/sh";
	av[n++] = "-c";
	if (!ts->root_user && !ts->exec_helper[0]) {
		snprintf(num, 128, "ulimit -p %lld || exit 126; exec /bin/sh -c \"$1\"",
			 (long long)t->sb.processes);
		av[n++] = num;
		av[n++] = "sh";
	}
	av[n++] = command;
	av[n] = NULL;
}

static void child_fail(const char *what) __attribute__((noreturn));

/* As root, in the child: the mount namespace bwrap starts in
 * (confine_root.c). 0, or exits saying which step failed. */
static int child_mounts(const cof_turns *ts, const cof_turn *t, const cof_call_see *see,
			const char *etc)
{
	const char *hide[2] = {ts->root, ts->data};
	const char *view[2] = {see ? see->view_rw : NULL, see ? see->view_ro : NULL};
	const char *failed = cof_confine_child_root(t->ws, view, etc, hide);

	if (failed)
		child_fail(failed);
	return 0;
}

/* Drops the pair at av[i] (a "--tmpfs PATH" the uid cannot reach anyway). */
static void argv_drop2(const char **av, int i)
{
	for (; av[i + 2]; i++)
		av[i] = av[i + 2];
	av[i] = NULL;
	av[i + 1] = NULL;
}

/* Says on the call's stderr which step failed, and exits 127. */
static void child_fail(const char *what)
{
	char num[16];
	int e = errno, n = 0;
	char digits[16];

	do {
		digits[n++] = (char)('0' + e % 10);
		e /= 10;
	} while (e && n < 15);
	for (int i = 0; i < n; i++)
		num[i] = digits[n - 1 - i];
	(void)!write(2, "coffer: cannot ", 15);
	(void)!write(2, what, strlen(what));
	(void)!write(2, " (errno ", 8);
	(void)!write(2, num, (size_t)n);
	(void)!write(2, ")\n", 2);
	_exit(127);
}

/* What the child sets up as root, made ready before the fork. */
typedef struct kid {
	int cg[2];             /* cgroup.procs of the turn (memory, pids) or -1 */
	char shmmax[24];       /* sandbox.memory in bytes */
	char shmall[24];       /* sandbox.memory in pages */
	const char *etc;       /* the copy of /etc it binds at /etc, or NULL */
	int ns;                /* the turn's kept mount namespace to enter, or -1 */
} kid;

/* Writes `text` to the file at `path` (async-signal-safe). 0 or -1. */
static int put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return rc;
}

/* As root, in the child: an IPC namespace of the call's own whose SysV
 * limits fit the turn (the defaults let one segment take the host's
 * memory): shared memory at most sandbox.memory in all, 64 segments, 16
 * message queues. 0 or -1. */
static int child_ipc(const kid *k)
{
	if (unshare(CLONE_NEWIPC) || put_file("/proc/sys/kernel/shmmax", k->shmmax) ||
	    put_file("/proc/sys/kernel/shmall", k->shmall) ||
	    put_file("/proc/sys/kernel/shmmni", "64") ||
	    put_file("/proc/sys/kernel/msgmni", "16"))
		return -1;
	return 0;
}

/* As root, in the child: memory and processes. With cgroups the child
 * joins the turn's; else RLIMIT_NPROC counts the turn's own uid. */
static void child_limits(const cof_turns *ts, const cof_turn *t, const kid *k)
{
	for (int i = 0; i < 2; i++)
		if (k->cg[i] >= 0 && write(k->cg[i], "0", 1) != 1)
			child_fail("join the turn's cgroup");
	if (child_ipc(k))
		child_fail("limit SysV IPC");
	if (!ts->cg) {
		struct rlimit nproc = {(rlim_t)t->sb.processes, (rlim_t)t->sb.processes};
		if (setrlimit(RLIMIT_NPROC, &nproc))
			child_fail("limit processes");
	}
}

/* In the child, between clone and exec: only async-signal-safe calls. It
 * runs in our memory (spawn), so first every signal we catch goes back to
 * its default: a handler of ours must not run in it (all are blocked until
 * then, and unblocked below). */
static void child(const cof_turns *ts, const cof_turn *t, const cof_call_see *see,
		  const char **av, const int *hide, const kid *k, int in, int out, int errfd,
		  int bpf, int ws, int info)
{
	static const char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
	struct sigaction dfl = {.sa_handler = SIG_DFL}, was;
	sigset_t none;
	int fds[6] = {in, out, errfd, bpf, ws, info};

	for (int sig = 1; sig < NSIG; sig++)
		if (!sigaction(sig, NULL, &was) && was.sa_handler != SIG_DFL &&
		    was.sa_handler != SIG_IGN)
			sigaction(sig, &dfl, NULL);

	if (ts->root_user)
		child_limits(ts, t, k);
	/* the turn's kept namespace holds what child_mounts would make */
	if (ts->root_user && k->ns >= 0 && setns(k->ns, CLONE_NEWNS))
		child_fail("enter the turn's mount namespace");

	for (int i = 0; i < 6; i++)
		if ((fds[i] = fcntl(fds[i], F_DUPFD, 10)) < 0)
			_exit(127);
	for (int i = 0; i < 6; i++)
		if (dup2(fds[i], i) != i)
			_exit(127);
	close_range(6, ~0u, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (ts->root_user) {
		if (k->ns < 0 && child_mounts(ts, t, see, k->etc))
			child_fail("prepare the mounts");
		/* the system calls themselves: libc's wrappers would make every
		 * thread of cofferd, whose memory this child runs in, change too
		 * (they signal each; a tgkill and a getpid a thread a call) */
		if (syscall(SYS_setgroups, 0, NULL) ||
		    syscall(SYS_setresgid, t->uid, t->uid, t->uid) ||
		    syscall(SYS_setresuid, t->uid, t->uid, t->uid))
			child_fail("drop privileges");
	}
	/* no cgroup: each process at most sandbox.memory of address space */
	struct rlimit as = {(rlim_t)t->sb.memory, (rlim_t)t->sb.memory};
	if (!ts->cg && setrlimit(RLIMIT_AS, &as))
		child_fail("limit memory");
	/* the measuring loop falls behind a fast writer: there no one file may
	 * pass turnDisk (a bound the kernel holds; the tmpfs way needs none, and
	 * keeps sparse files free to be large) */
	struct rlimit fsize = {(rlim_t)t->sb.turn_disk, (rlim_t)t->sb.turn_disk};
	if (!ts->kernel && setrlimit(RLIMIT_FSIZE, &fsize))
		child_fail("limit file sizes");
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* later index first, so the earlier one stays where it was */
	if (hide[1] >= 0 && access(ts->data, X_OK))
		argv_drop2(av, hide[1]);
	if (hide[0] >= 0 && access(ts->root, X_OK))
		argv_drop2(av, hide[0]);
	execve(BWRAP, (char *const *)av, (char *const *)envp);
	child_fail("run " BWRAP);
}

/* The sandbox's first process (bwrap's init, pid 1 of its namespace) as bwrap
 * wrote it on --info-fd, or 0. */
static pid_t sandbox_pid(int info)
{
	char buf[512];
	ssize_t n = read(info, buf, sizeof buf - 1);
	const char *k;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (!(k = strstr(buf, "\"child-pid\"")) || !(k = strchr(k, ':')))
		return 0;
	return (pid_t)strtol(k + 1, NULL, 10);
}

void cof_confine_note_sandbox(cof_proc *p)
{
	pid_t pid;

	if (p->sandbox >= 0 || p->info < 0)
		return;
	if ((pid = sandbox_pid(p->info)) > 0)
		p->sandbox = (int)syscall(SYS_pidfd_open, pid, 0);
}

void cof_confine_kill_sandbox(cof_proc *p)
{
	cof_confine_note_sandbox(p);
	if (p->sandbox >= 0)
		syscall(SYS_pidfd_send_signal, p->sandbox, SIGKILL, NULL, 0);
}

int cof_confine_wait_gone(cof_proc *p, int timeout_ms)
{
	int rc = 0;

	cof_confine_note_sandbox(p);
	close(p->info);
	p->info = -1;
	/* bwrap answers as soon as the command exits; its init may still be
	 * tearing the namespace down. Once it is gone, so is every process. */
	if (p->sandbox < 0)
		return 0;
	struct pollfd pf = {p->sandbox, POLLIN, 0};
	if (poll(&pf, 1, timeout_ms) <= 0) {
		/* still there: the pidfd names that very process, so this kill
		 * reaches the call's namespace and nothing else */
		syscall(SYS_pidfd_send_signal, p->sandbox, SIGKILL, NULL, 0);
		rc = -1;
	}
	close(p->sandbox);
	p->sandbox = -1;
	return rc;
}

/* What child() is called with, through clone. */
typedef struct spawn_args {
	const cof_turns *ts;
	const cof_turn *t;
	const cof_call_see *see;
	const char **av;
	const int *hide;
	const kid *k;
	int fd[6];
} spawn_args;

static int spawn_main(void *arg)
{
	const spawn_args *a = arg;

	child(a->ts, a->t, a->see, a->av, a->hide, a->k, a->fd[0], a->fd[1], a->fd[2], a->fd[3],
	      a->fd[4], a->fd[5]);
	return 127;
}

#define SPAWN_STACK (256 * 1024)
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_FORK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_FORK 1
#endif
#endif

#ifndef SPAWN_FORK
/* The child's stack, one a thread that spawns, kept for its next call:
 * a map and unmap a call cost page faults and, unmapping from a process
 * with many threads, a TLB flush on every CPU that runs one of them. Given
 * back when the thread ends (streamed calls run on threads of their own). */
static pthread_key_t stack_key;
static pthread_once_t stack_once = PTHREAD_ONCE_INIT;

static void stack_free(void *stack)
{
	munmap(stack, SPAWN_STACK);
}

static void stack_key_make(void)
{
	if (pthread_key_create(&stack_key, stack_free))
		stack_key = (pthread_key_t)-1;
}

/* This thread's spawn stack, or NULL. */
static void *stack_get(void)
{
	void *stack;

	pthread_once(&stack_once, stack_key_make);
	if (stack_key != (pthread_key_t)-1 && (stack = pthread_getspecific(stack_key)))
		return stack;
	stack = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return NULL;
	if (stack_key == (pthread_key_t)-1 || pthread_setspecific(stack_key, stack)) {
		munmap(stack, SPAWN_STACK);
		return NULL;
	}
	return stack;
}
#endif

/* Starts child() as posix_spawn does: in our memory on a stack of its own,
 * this thread waiting until it has run bwrap (or failed), so no copy of our
 * page tables (a fork of cofferd cost about a millisecond of each call).
 * The stack is free again once the clone returns (the child has run bwrap,
 * in memory of its own, or has ended). Every signal stays blocked from
 * before the clone until child() has put our handlers back to the default.
 * Under ASan a plain fork: the shadow of the child's stack would outlive it. */
static pid_t spawn(const spawn_args *a)
{
#ifdef SPAWN_FORK
	pid_t pid = fork();
	if (pid == 0)
		spawn_main((void *)a);
	return pid;
#else
	sigset_t all, was;
	void *stack = stack_get();
	pid_t pid;

	if (!stack)
		return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	pid = clone(spawn_main, (char *)stack + SPAWN_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD,
		    (void *)a);
	int e = errno;
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	errno = e;
	return pid;
#endif
}

/* ------------------------------------------------ the turn's kept namespace
 *
 * As root a call's child builds the mount namespace its bwrap starts in
 * (confine_root.c: unshare, a tmpfs, a dozen binds, pivot_root, the host's
 * tree detached), the largest part of what a call costs over bwrap by hand.
 * What it binds is the turn's: the workspace, the copy of /etc, the turn's
 * kept views; so the namespace of a call that saw only those is kept (the
 * outer bwrap's, which stays in it: it mounts nothing there, running as the
 * turn's uid) and a later call that would bind the very same enters it with
 * setns. Each call's bwrap still makes its own namespaces from there, as
 * before; the kept one is never writable by a call (owned by our user
 * namespace, its mounts private). It is let go when its workspace is renewed
 * (cof_quota_ws_empty: a fresh tmpfs), when the turn ends, or when a call
 * with other binds replaces it. */

/* True when the kept namespace of `t` binds what a call given the copy of
 * /etc at `etc` and `see` would (under mu). */
static int ns_same(const cof_turn *t, const char *etc, const cof_call_see *see)
{
	const char *v[2] = {see ? see->view_rw : NULL, see ? see->view_ro : NULL};

	if (!t->ns_have || strcmp(t->ns_etc, etc))
		return 0;
	for (int i = 0; i < 2; i++)
		if (!v[i] != !t->ns_view[i] || (v[i] && strcmp(v[i], t->ns_view[i])))
			return 0;
	return 1;
}

void cof_confine_ns_drop(cof_turns *ts, cof_turn *t)
{
	if (!t->ns_have)
		return;
	close(t->ns_fd);
	free(t->ns_etc);
	free(t->ns_view[0]);
	free(t->ns_view[1]);
	t->ns_have = 0;
	t->ns_fd = -1;
	t->ns_etc = NULL;
	t->ns_view[0] = t->ns_view[1] = NULL;
}

/* A descriptor of the turn's kept namespace for this call (its own: the
 * namespace may be replaced meanwhile), or -1 to build one. */
static int ns_take(cof_turns *ts, const cof_turn *t, const char *etc, const cof_call_see *see)
{
	int fd = -1;

	if (!ts->root_user || !etc)
		return -1;
	pthread_mutex_lock(&ts->mu);
	if (ns_same(t, etc, see))
		fd = fcntl(t->ns_fd, F_DUPFD_CLOEXEC, 3);
	pthread_mutex_unlock(&ts->mu);
	return fd;
}

/* True when the mount namespace open at `fd` belongs to our own user
 * namespace: the one the child built, never one of a sandbox's (owned by
 * the user namespace bwrap makes for the call, where the call may mount). */
static int owned_by_us(int fd)
{
	struct stat ours, its;
	int user = ioctl(fd, NS_GET_USERNS);
	int ok = user >= 0 && fstat(user, &its) == 0 && stat("/proc/self/ns/user", &ours) == 0 &&
		 its.st_ino == ours.st_ino && its.st_dev == ours.st_dev;

	if (user >= 0)
		close(user);
	return ok;
}

/* After a call's child built its namespace and ran bwrap (`pid`): keeps
 * that namespace for the turn's next calls when all it binds outlives the
 * call. Best effort. */
static void ns_keep(cof_turns *ts, const cof_turn *tc, pid_t pid, const char *etc,
		    const cof_call_see *see)
{
	cof_turn *t = (cof_turn *)tc; /* its ns_* fields are under mu */
	char path[64], *v[2] = {NULL, NULL}, *e = NULL;
	struct stat ours, its;
	int fd;

	if (!ts->root_user || !etc || (see && !see->kept))
		return;
	/* not yet reaped, so the pid is still our child's; a child that failed
	 * or a bwrap gone already has no namespace left to open */
#ifdef SPAWN_FORK
	/* a plain fork returns before the child built its namespace (the
	 * clone waits for its exec): kept only once it runs bwrap, so never
	 * one half made; waited for here (sanitizer builds only) */
	char st[128];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	for (int tries = 0;; tries++) {
		ssize_t got = -1;
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			got = read(fd, st, sizeof st - 1);
			close(fd);
		}
		st[got > 0 ? got : 0] = '\0';
		const char *end = strrchr(st, ')');
		/* gone, a zombie (it failed before its exec), or too long */
		if (got <= 0 || !end || end[1] != ' ' || end[2] == 'Z' || tries == 50000)
			return;
		if (strstr(st, "(bwrap)"))
			break;
		usleep(100);
	}
#endif
	snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (fstat(fd, &its) || stat("/proc/self/ns/mnt", &ours) || its.st_ino == ours.st_ino ||
	    !owned_by_us(fd) || !(e = cof_strdup(etc)) ||
	    (see && see->view_rw && !(v[0] = cof_strdup(see->view_rw))) ||
	    (see && see->view_ro && !(v[1] = cof_strdup(see->view_ro)))) {
		close(fd);
		free(e);
		free(v[0]);
		free(v[1]);
		return;
	}
	pthread_mutex_lock(&ts->mu);
	if (t->ended || ns_same(t, etc, see)) { /* another call kept it first */
		pthread_mutex_unlock(&ts->mu);
		close(fd);
		free(e);
		free(v[0]);
		free(v[1]);
		return;
	}
	cof_confine_ns_drop(ts, t);
	t->ns_have = 1;
	t->ns_fd = fd;
	t->ns_etc = e;
	t->ns_view[0] = v[0];
	t->ns_view[1] = v[1];
	pthread_mutex_unlock(&ts->mu);
}

int cof_confine_spawn(cof_turns *ts, const cof_turn *t, const char *command,
		      const cof_call_see *see, cof_proc *p, cof_err *err)
{
	static __thread const char *av[ARGV_MAX];
	static __thread char keep[32768];
	int hide[2], pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	int pinfo[2] = {-1, -1};
	int bpf = -1, ws = -1, rc = -1;
	static __thread kid k;
	pid_t pid;

	void *etc_ref = NULL;
	const char *etc = cof_etc_take(ts, &etc_ref);

	k = (kid){{-1, -1}, "", "", ts->root_user ? etc : NULL, -1};
	k.ns = ns_take(ts, t, etc, see);
	p->etc = NULL;
	argv_build(ts, t, command, see, etc, av, hide, keep, sizeof keep - 128);
	snprintf(k.shmmax, sizeof k.shmmax, "%lld", (long long)t->sb.memory);
	snprintf(k.shmall, sizeof k.shmall, "%lld", (long long)(t->sb.memory / 4096));
	cof_limits_procs_fds(ts, t, k.cg); /* the turn's: not closed here */
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC) ||
	    pipe2(pinfo, O_CLOEXEC | O_NONBLOCK) ||
	    (bpf = bpf_fd(ts)) < 0 ||
	    (ws = open(t->ws, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		cof_error(err, COF_EINTERNAL, "cannot prepare the call: %s", strerror(errno));
		goto out;
	}
	spawn_args sa = {ts, t, see, av, hide, &k, {pin[0], pout[1], perr[1], bpf, ws, pinfo[1]}};
	pid = spawn(&sa);
	if (pid < 0) {
		cof_error(err, COF_EINTERNAL, "cannot start the call: %s", strerror(errno));
		goto out;
	}
	if (k.ns < 0)
		ns_keep(ts, t, pid, etc, see);
	p->pid = pid;
	p->in = pin[1];
	p->out = pout[0];
	p->errfd = perr[0];
	p->info = pinfo[0];
	p->sandbox = -1;
	p->etc = etc_ref;
	etc_ref = NULL;
	pin[1] = pout[0] = perr[0] = pinfo[0] = -1;
	fcntl(p->in, F_SETFL, O_NONBLOCK);
	fcntl(p->out, F_SETFL, O_NONBLOCK);
	fcntl(p->errfd, F_SETFL, O_NONBLOCK);
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
		if (pinfo[i] >= 0)
			close(pinfo[i]);
	}
	if (bpf >= 0)
		close(bpf);
	if (ws >= 0)
		close(ws);
	if (k.ns >= 0)
		close(k.ns);
	cof_etc_drop(ts, etc_ref);
	return rc;
}
