/*
 * confine.c — one call's process: `sh -c command` under bubblewrap with a
 * seccomp filter, as an unprivileged uid of the turn's own.
 *
 * What the command sees: fresh user, pid, ipc, uts, cgroup and (unless the
 * agent's sandbox.network is true) net namespaces; / read-only; the workspace
 * (a tmpfs, noexec) at /tmp, the only writable place, also $HOME and $TMPDIR;
 * the scratch root and the data dir covered by empty tmpfs; a minimal /dev
 * made read-only; uid and gid 65534 inside, the turn's own uid outside (so
 * RLIMIT_NPROC bounds the turn's processes); a clean environment. The pid
 * namespace makes the end reliable: when `sh` exits, or bwrap is killed, the
 * kernel kills every process left in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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
static scmp_filter_ctx filter_build(void)
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
	for (size_t i = 0; denied[i] && rc == 0; i++)
		rc = deny(ctx, SCMP_ACT_ERRNO(EPERM), denied[i]);
	for (size_t i = 0; i < sizeof ns / sizeof ns[0] && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, ns[i], ns[i]));
	if (rc == 0)
		rc = deny(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3");
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

int cof_confine_init(cof_turns *ts, cof_err *err)
{
	scmp_filter_ctx ctx = filter_build();
	struct stat sb;
	int fd;

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
	ts->bpf = malloc((size_t)sb.st_size);
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

/* bwrap's arguments. As root the child has already covered the data dir and
 * the scratch root and put the workspace at /tmp in a mount namespace of its
 * own (paths under a folder only root may enter cannot be bound by an
 * unprivileged bwrap); otherwise bwrap does it, and `hide` gets the indexes
 * of the "--tmpfs" pairs the child drops when it cannot reach them. */
static void argv_build(const cof_turns *ts, const cof_turn *t, const char *command,
		       const char **av, int *hide)
{
	int n = 0;

	av[n++] = BWRAP;
	av[n++] = "--unshare-user";
	av[n++] = "--unshare-pid";
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
	av[n++] = "--ro-bind";
	av[n++] = "/";
	av[n++] = "/";
	hide[0] = hide[1] = -1;
	if (!ts->root_user) {
		hide[0] = n;
		av[n++] = "--tmpfs";
		av[n++] = ts->root;
		hide[1] = n;
		av[n++] = "--tmpfs";
		av[n++] = ts->data;
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
	av[n++] = "--setenv";
	av[n++] = "LANG";
	av[n++] = "C.UTF-8";
	av[n++] = "--seccomp";
	av[n++] = "3";
	av[n++] = "--info-fd";
	av[n++] = "5";
	av[n++] = "--";
	av[n++] = "/bin/sh";
	av[n++] = "-c";
	av[n++] = command;
	av[n] = NULL;
}

/* As root, in the child: a mount namespace of its own where the workspace
 * is at /tmp and the scratch root and the data dir are covered by empty
 * read-only tmpfs (a path that the workspace at /tmp now covers is out of
 * sight already). 0 or -1. */
static int child_mounts(const cof_turns *ts, const cof_turn *t)
{
	const unsigned long ro = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY;
	const char *hide[2] = {ts->root, ts->data};

	/* noexec,nosuid,nodev on the bind too: a tmpfs has them already, a
	 * folder of the measuring loop gets them here */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount(t->ws, "/tmp", NULL, MS_BIND, NULL) ||
	    mount(NULL, "/tmp", NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL))
		return -1;
	for (int i = 0; i < 2; i++)
		if (mount("tmpfs", hide[i], "tmpfs", ro, "size=4k,nr_inodes=2,mode=0755") &&
		    errno != ENOENT)
			return -1;
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

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child(const cof_turns *ts, const cof_turn *t, const char **av, const int *hide,
		  int in, int out, int errfd, int bpf, int ws, int info)
{
	static const char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
	sigset_t none;
	int fds[6] = {in, out, errfd, bpf, ws, info};

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
		struct rlimit nproc = {COF_TURN_PROCS, COF_TURN_PROCS};
		if (child_mounts(ts, t))
			child_fail("prepare the mounts");
		if (setgroups(0, NULL) || setresgid(t->uid, t->uid, t->uid) ||
		    setrlimit(RLIMIT_NPROC, &nproc) || setresuid(t->uid, t->uid, t->uid))
			child_fail("drop privileges");
	}
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

int cof_confine_wait_gone(cof_proc *p, int timeout_ms)
{
	pid_t pid = sandbox_pid(p->info);
	int fd, rc = 0;

	close(p->info);
	p->info = -1;
	/* bwrap answers as soon as the command exits; its init may still be
	 * tearing the namespace down. Once it is gone, so is every process. */
	if (pid <= 0 || (fd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0)
		return 0;
	struct pollfd pf = {fd, POLLIN, 0};
	if (poll(&pf, 1, timeout_ms) <= 0)
		rc = -1;
	close(fd);
	return rc;
}

int cof_confine_spawn(cof_turns *ts, const cof_turn *t, const char *command, cof_proc *p,
		      cof_err *err)
{
	const char *av[80];
	int hide[2], pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	int pinfo[2] = {-1, -1};
	int bpf = -1, ws = -1, rc = -1;
	pid_t pid;

	argv_build(ts, t, command, av, hide);
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC) ||
	    pipe2(pinfo, O_CLOEXEC | O_NONBLOCK) ||
	    (bpf = bpf_fd(ts)) < 0 ||
	    (ws = open(t->ws, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		cof_error(err, COF_EINTERNAL, "cannot prepare the call: %s", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		cof_error(err, COF_EINTERNAL, "cannot start the call: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(ts, t, av, hide, pin[0], pout[1], perr[1], bpf, ws, pinfo[1]);
	p->pid = pid;
	p->in = pin[1];
	p->out = pout[0];
	p->errfd = perr[0];
	p->info = pinfo[0];
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
	return rc;
}
