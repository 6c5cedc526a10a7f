/*
 * limits.c — memory and processes of a turn (sandbox.memory, .processes)
 * and of an agent's live turns together (4x those), in three layers:
 *
 *   cgroup v2, when our cgroup is delegated to us (memory and pids in its
 *   cgroup.controllers and writable): OURS/coffer-NS-PID/a-AGENT/TURN with
 *   memory.max, memory.swap.max 0, pids.max; counted by memory.events
 *   oom_kill and pids.events max.
 *   cgroup v1 (as root): the same tree under our memory cgroup and under our
 *   pids cgroup, with memory.limit_in_bytes (and memory.memsw.limit_in_bytes
 *   where swap is accounted) and pids.max; counted by memory.oom_control
 *   oom_kill and pids.events max.
 *   Otherwise rlimits only (confine.c): RLIMIT_AS per process and
 *   RLIMIT_NPROC per call (the count of the call's own user namespace) or,
 *   as root, per turn (its own uid); no agent-wide cap, and memfd and SysV
 *   shared memory are refused, since nothing would bound them.
 *
 * A cgroup's memory includes the pages of tmpfs files its processes wrote
 * (the workspace too), memfd and SysV shared memory: the kernel charges
 * them to the writer's cgroup. The workspace's pages are bounded by the disk
 * limits already, so a turn's cgroup holds memory + turnDisk and an agent's
 * 4 x memory + scratch: a full workspace leaves the processes their memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include "turn/turn.h"
#include "util/util.h"

/* Writes `text` to DIR/NAME. 0 or -1. */
static int put(const char *dir, const char *name, const char *text)
{
	char p[PATH_MAX + 64];
	int fd, rc;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	if ((fd = open(p, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	rc = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return rc;
}

/* Reads DIR/NAME into buf (NUL-terminated). 0 or -1. */
static int get(const char *dir, const char *name, char *buf, size_t size)
{
	char p[PATH_MAX + 64];
	int fd;
	ssize_t n;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* The number after "KEY " at the start of a line of the cgroup file open
 * at `fd` (read from its start: a seq_file shows it afresh), or 0. */
static int64_t counter(int fd, const char *key)
{
	char buf[4096];
	size_t k = strlen(key);
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;

	if (n < 0)
		return 0;
	buf[n] = '\0';
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, k) && l[k] == ' ')
			return strtoll(l + k + 1, NULL, 10);
	return 0;
}

/* True when the comma-separated `list` holds `word` ("cpu,cpuacct"). */
static int has_word(const char *list, const char *word)
{
	size_t k = strlen(word);

	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, k) && (p[k] == ',' || !p[k]))
			return 1;
	return 0;
}

/* Our own cgroup path for `ctl` ("memory", "pids", or "" for v2) from
 * /proc/self/cgroup. 0 or -1. */
static int own_path(const char *ctl, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 64];
	int rc = -1;

	if (!f)
		return -1;
	while (rc && fgets(line, sizeof line, f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*b = '\0';
		b[strcspn(b + 1, "\n") + 1] = '\0';
		int hit = ctl[0] ? has_word(a + 1, ctl) : !strcmp(line, "0") && !a[1];
		if (hit && snprintf(out, size, "%s", b + 1) < (int)size)
			rc = 0;
	}
	fclose(f);
	return rc;
}

/* Makes DIR (0755), fine if it is there. 0 or -1. */
static int mkcg(const char *dir)
{
	return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Where cgroup v2 is mounted: /sys/fs/cgroup (unified), or
 * /sys/fs/cgroup/unified (hybrid, next to v1), or NULL. */
static const char *v2_mount(void)
{
	static const char *const at[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
	struct statfs sf;

	for (int i = 0; i < 2; i++)
		if (statfs(at[i], &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
			return at[i];
	return NULL;
}

/* Our cgroup folders' name: coffer-NS-PID, NS the inode of our pid namespace,
 * so that cofferds in other pid namespaces sharing the cgroup file system (a
 * container, a test root) never take, or clean up as stale, each other's. */
static void self_name(char *out, size_t size)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st))
		st.st_ino = 0;
	snprintf(out, size, "coffer-%llu-%d", (unsigned long long)st.st_ino, (int)getpid());
}

/* cgroup v2: OURS/coffer-NS-PID with memory and pids enabled for its
 * children. Our own process may have to move into a leaf first (a cgroup
 * with processes cannot hand controllers down). 0 or -1. */
static int open_v2(cof_turns *ts)
{
	char own[PATH_MAX], base[PATH_MAX], ctl[256], leaf[PATH_MAX + 16], pid[24], name[64];

	const char *mnt = v2_mount();

	if (!mnt || own_path("", own, sizeof own))
		return -1;
	snprintf(base, sizeof base, "%s%.3800s", mnt, strcmp(own, "/") ? own : "");
	if (get(base, "cgroup.controllers", ctl, sizeof ctl) || !strstr(ctl, "memory") ||
	    !strstr(ctl, "pids"))
		return -1;
	if (put(base, "cgroup.subtree_control", "+memory +pids")) {
		snprintf(leaf, sizeof leaf, "%s/cofferd", base);
		snprintf(pid, sizeof pid, "%d", (int)getpid());
		if (mkcg(leaf) || put(leaf, "cgroup.procs", pid) ||
		    put(base, "cgroup.subtree_control", "+memory +pids"))
			return -1;
	}
	self_name(name, sizeof name);
	snprintf(ts->cg_mem, sizeof ts->cg_mem, "%.3900s/%s", base, name);
	if (mkcg(ts->cg_mem) || put(ts->cg_mem, "cgroup.subtree_control", "+memory +pids")) {
		rmdir(ts->cg_mem);
		return -1;
	}
	snprintf(ts->cg_pids, sizeof ts->cg_pids, "%s", ts->cg_mem);
	ts->cg = 2;
	return 0;
}

/* cgroup v1: coffer-NS-PID under our memory cgroup and under our pids cgroup.
 * 0 or -1. */
static int open_v1(cof_turns *ts)
{
	char mem[PATH_MAX], pids[PATH_MAX], name[64];

	if (own_path("memory", mem, sizeof mem) || own_path("pids", pids, sizeof pids))
		return -1;
	self_name(name, sizeof name);
	snprintf(ts->cg_mem, sizeof ts->cg_mem, "/sys/fs/cgroup/memory%.3800s/%s",
		 strcmp(mem, "/") ? mem : "", name);
	snprintf(ts->cg_pids, sizeof ts->cg_pids, "/sys/fs/cgroup/pids%.3800s/%s",
		 strcmp(pids, "/") ? pids : "", name);
	if (mkcg(ts->cg_mem) || mkcg(ts->cg_pids)) {
		rmdir(ts->cg_mem);
		ts->cg_mem[0] = ts->cg_pids[0] = '\0';
		return -1;
	}
	ts->cg = 1;
	return 0;
}

/* Removes the empty folders under `dir` and then `dir` (a cgroup tree
 * whose processes are gone); `depth` bounds the walk (ours is 3 deep). */
static void rm_tree(const char *dir, int depth)
{
	DIR *d = depth > 0 ? opendir(dir) : NULL;
	struct dirent *e;

	while (d && (e = readdir(d)) != NULL) {
		char sub[PATH_MAX];
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) < (int)sizeof sub)
			rm_tree(sub, depth - 1);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Removes the coffer-NS-PID cgroups (under `parent`) of cofferds that are gone
 * (killed, they could not remove their own). */
static void rm_stale(const char *parent)
{
	char dir[PATH_MAX];
	char mine[64];
	unsigned long long ns;
	const char *slash = strrchr(parent, '/');
	DIR *d;
	struct dirent *e;

	if (!slash || snprintf(dir, sizeof dir, "%.*s", (int)(slash - parent), parent) >=
		      (int)sizeof dir || !(d = opendir(dir)))
		return;
	self_name(mine, sizeof mine);
	ns = strtoull(mine + strlen("coffer-"), NULL, 10);
	while ((e = readdir(d)) != NULL) {
		char sub[PATH_MAX];
		unsigned long long their_ns;
		int pid;
		/* only ours to judge: a pid of our own namespace that is gone */
		if (sscanf(e->d_name, "coffer-%llu-%d", &their_ns, &pid) != 2 || pid <= 0 ||
		    their_ns != ns || (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) < (int)sizeof sub)
			rm_tree(sub, 3);
	}
	closedir(d);
}

int cof_limits_open(cof_turns *ts, int no_cgroup)
{
	ts->cg = 0;
	ts->cg_mem[0] = ts->cg_pids[0] = '\0';
	if (no_cgroup)
		return 0;
	if (open_v2(ts) == 0 || open_v1(ts) == 0) {
		rm_stale(ts->cg_mem);
		if (ts->cg == 1)
			rm_stale(ts->cg_pids);
		return 0;
	}
	ts->cg_mem[0] = ts->cg_pids[0] = '\0';
	return 0;
}

/* The cgroup folders of `t`'s agent (sub = NULL) or of `t` itself, in the
 * memory (which 0) or pids (which 1) tree. */
static void cg_dir(const cof_turns *ts, const cof_turn *t, int which, int turn, char *out,
		   size_t size)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a of org/agent */

	for (const char *p = t->org; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *p = t->agent; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	snprintf(out, size, "%s/a-%016llx%s%s", which ? ts->cg_pids : ts->cg_mem,
		 (unsigned long long)h, turn ? "/" : "", turn ? t->id : "");
}

/* Sets the memory and process limits of the cgroup pair at (mem, pids). */
static int set_limits(const cof_turns *ts, const char *mem, const char *pids, int64_t bytes,
		      int64_t procs)
{
	char b[32], n[32];

	snprintf(b, sizeof b, "%lld", (long long)bytes);
	snprintf(n, sizeof n, "%lld", (long long)procs);
	if (put(pids, "pids.max", n))
		return -1;
	if (ts->cg == 2)
		return put(mem, "memory.max", b) ? -1 : (put(mem, "memory.swap.max", "0"), 0);
	/* memsw (memory + swap) must stay >= the memory limit: raise it first
	 * when it is below, lower it after */
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/memory.memsw.limit_in_bytes", mem);
	int memsw = access(p, F_OK) == 0;
	if (memsw)
		put(mem, "memory.memsw.limit_in_bytes", "-1");
	if (put(mem, "memory.limit_in_bytes", b))
		return -1;
	if (memsw && put(mem, "memory.memsw.limit_in_bytes", b))
		return -1;
	return 0;
}

static void fds_close(cof_turn *t)
{
	for (int i = 0; i < 4; i++) {
		if (t->cg_fd[i] >= 0)
			close(t->cg_fd[i]);
		t->cg_fd[i] = -1;
	}
}

/* Opens the turn's cgroup files its calls use (t->cg_fd), so a call walks
 * no cgroupfs path. 0, or -1 (errno set) with none left open. */
static int fds_open(const cof_turns *ts, cof_turn *t)
{
	/* v1: `tasks`. The call's child is single-threaded when it writes "0"
	 * there, so that moves the whole process, and the kernel moves a
	 * thread that moves itself without the global threadgroup lock,
	 * whose RCU grace period made a write to cgroup.procs cost
	 * milliseconds of each call. */
	const char *join = ts->cg == 1 ? "tasks" : "cgroup.procs";
	const char *name[4] = {join, ts->cg == 1 ? join : NULL,
			       ts->cg == 2 ? "memory.events" : "memory.oom_control",
			       "pids.events"};
	const int which[4] = {0, 1, 0, 1}, flags[4] = {O_WRONLY, O_WRONLY, O_RDONLY, O_RDONLY};
	char d[PATH_MAX + 64], p[PATH_MAX + 96];

	for (int i = 0; i < 4; i++) {
		t->cg_fd[i] = -1;
		if (!name[i])
			continue;
		cg_dir(ts, t, which[i], 1, d, sizeof d);
		snprintf(p, sizeof p, "%s/%s", d, name[i]);
		if ((t->cg_fd[i] = open(p, flags[i] | O_CLOEXEC)) < 0) {
			int e = errno;
			fds_close(t);
			errno = e;
			return -1;
		}
	}
	return 0;
}

int cof_limits_turn(cof_turns *ts, cof_turn *t, cof_err *err)
{
	char am[PATH_MAX + 64], ap[PATH_MAX + 64], tm[PATH_MAX + 64], tp[PATH_MAX + 64];

	if (!ts->cg || t->cg_made)
		return 0;
	cg_dir(ts, t, 0, 0, am, sizeof am);
	cg_dir(ts, t, 1, 0, ap, sizeof ap);
	cg_dir(ts, t, 0, 1, tm, sizeof tm);
	cg_dir(ts, t, 1, 1, tp, sizeof tp);
	int fresh = access(am, F_OK) != 0;
	if (mkcg(am) || (ts->cg == 1 && mkcg(ap)))
		return cof_error(err, COF_EINTERNAL, "cannot make the agent's cgroup: %s",
				 strerror(errno));
	/* the agent's cap follows the newest turn's settings; lowering it under
	 * what its live turns use may be refused (EBUSY): then it stays */
	if (set_limits(ts, am, ap, t->sb.memory * COF_AGENT_TIMES + t->sb.scratch,
		       t->sb.processes * COF_AGENT_TIMES) && fresh)
		return cof_error(err, COF_EINTERNAL, "cannot set the agent's memory and process "
				 "limits (cgroup v%d): %s", ts->cg, strerror(errno));
	if ((ts->cg == 2 && put(am, "cgroup.subtree_control", "+memory +pids")) ||
	    mkcg(tm) || (ts->cg == 1 && mkcg(tp)) ||
	    set_limits(ts, tm, tp, t->sb.memory + t->sb.turn_disk, t->sb.processes))
		return cof_error(err, COF_EINTERNAL, "cannot set the turn's memory and process "
				 "limits (cgroup v%d): %s", ts->cg, strerror(errno));
	if (fds_open(ts, t))
		return cof_error(err, COF_EINTERNAL, "cannot open the turn's cgroup files "
				 "(cgroup v%d): %s", ts->cg, strerror(errno));
	t->cg_made = 1;
	return 0;
}

void cof_limits_procs_fds(const cof_turns *ts, const cof_turn *t, int fds[2])
{
	int made = ts->cg && t->cg_made;

	fds[0] = made ? t->cg_fd[0] : -1;
	fds[1] = made ? t->cg_fd[1] : -1;
}

void cof_limits_counts(const cof_turns *ts, const cof_turn *t, int64_t *oom, int64_t *forks)
{
	*oom = *forks = 0;
	if (!ts->cg || !t->cg_made)
		return;
	*oom = counter(t->cg_fd[2], "oom_kill");
	*forks = counter(t->cg_fd[3], "max");
}

/* Removes the cgroup folder `d`, killing what is left in it first. */
static void cg_remove(const char *d)
{
	char buf[4096];

	for (int i = 0; i < 20 && rmdir(d) && errno == EBUSY; i++) {
		if (get(d, "cgroup.procs", buf, sizeof buf) == 0)
			for (char *l = buf; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
				if (atoi(l) > 0)
					kill(atoi(l), SIGKILL);
		usleep(10000);
	}
}

void cof_limits_drop(const cof_turns *ts, cof_turn *t)
{
	char d[PATH_MAX + 64];

	if (!t->cg_made)
		return;
	fds_close(t);
	for (int i = 0; i < (ts->cg == 1 ? 2 : 1); i++) {
		cg_dir(ts, t, i, 1, d, sizeof d);
		cg_remove(d);
		cg_dir(ts, t, i, 0, d, sizeof d);
		rmdir(d); /* busy while the agent has other live turns */
	}
	t->cg_made = 0;
}

void cof_limits_close(cof_turns *ts)
{
	if (ts->cg_mem[0])
		rmdir(ts->cg_mem);
	if (ts->cg == 1 && ts->cg_pids[0])
		rmdir(ts->cg_pids);
}
