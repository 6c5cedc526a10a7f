/*
 * turn.h — what the files of the turn layer (src/turn/) share: an agent's
 * sandbox settings, the registry of live turns, confinement (bwrap + seccomp)
 * and the disk limits. The public contract is in include/coffer.h ("turns").
 *
 * Locking: one mutex (cof_turns.mu) guards the registry, every turn's fields
 * and the accounting of workspaces. What runs under it: mount/remount/statfs
 * of a tmpfs, mkdir/write in cgroupfs and in the workspace (microseconds);
 * in the measuring loop, removing a breached or ended workspace's files;
 * and, as root, the short-lived child that kills a stopped turn's uid (a
 * fork, then kill(-1)). A call's own fork and exec of bwrap, and the
 * measuring walk, run without it (call.c: call_start, tick).
 */
#ifndef COF_TURN_H
#define COF_TURN_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include "coffer.h"
#include "agent/settings.h"

#define COF_CALL_TIMEOUT_DEFAULT 120     /* seconds */
#define COF_CALL_TIMEOUT_MAX 3600        /* seconds: the ceiling of timeoutSeconds */
#define COF_CALL_OUTPUT_MAX (1 << 20)    /* stdout and stderr kept, each */
#define COF_CALL_STDIN_MAX (8 << 20)     /* stdin fed to a call */
#define COF_TURN_DEADLINE_MAX 86400      /* deadlineSeconds */
#define COF_AGENT_TIMES 4                /* an agent's live turns: 4x a turn's */
#define COF_TURN_CALLS 16                /* calls of one turn running at once */
#define COF_MEASURE_MS 250               /* how often a running call's disk is read */
#define COF_WALK_DEPTH 256               /* deeper than this counts as over */
#define COF_RM_DEPTH 64                  /* removal enters this deep, then moves up */
#define COF_ENTRY_BYTES 1024             /* what a file or folder counts */
#define COF_TURN_UID_BASE 1610612736u    /* outside uids: base + a random 24 bits */
#define COF_TOMBSTONES_MAX 100000        /* ended turns remembered (for 410) */

/* An agent's sandbox settings (cof_sandbox) are parsed in agent/settings.c. */

/* ---- the registry (turns.c) */

typedef struct cof_turn cof_turn;

/* What one workspace holds, as last measured. */
typedef struct cof_usage {
	int64_t blocks;  /* allocated bytes, deleted-but-open files included, and
			    the call layers' files at full length */
	int64_t layers;  /* of blocks, the layers' (not in the workspace's tmpfs) */
	int64_t entries; /* files and folders */
	int over;        /* a tree too deep to measure */
} cof_usage;

struct cof_turn {
	cof_turn *next;
	char id[40];
	char org[48];
	char agent[128];
	char user[256];
	cof_sandbox sb;
	unsigned types;          /* COF_OUT_* that may come back */
	int64_t created, deadline;  /* wall clock, shown */
	int64_t deadline_ms;        /* cof_mono_ms() at the deadline: what the sweep measures
				       (the record stores it as wall clock: records.c) */
	uid_t uid;               /* outside uid of its processes */
	int refs;                /* calls and requests holding it */
	int ended;               /* deleted or expired: no new calls */
	int ncalls;              /* calls running */
	pid_t pids[COF_TURN_CALLS];
	int stop_gen;            /* bumped to stop every call (breach, end) */
	const char *stop_why;    /* limit name of the last breach, NULL after an end */
	int dirty;               /* a breach: the workspace is emptied once every
				    call of the turn has stopped */
	int call_seq;
	/* workspace */
	int ws_made;
	char ws[PATH_MAX + 64];  /* the tmpfs (or folder) at ROOT/ws/ID */
	int64_t size_set;        /* tmpfs size= now (kernel way), 0 = not set */
	int64_t inodes_set;      /* tmpfs nr_inodes= now */
	const char *size_by;     /* the limit that set size= ("turn_disk", ...) */
	const char *inodes_by;   /* the limit that set nr_inodes= */
	cof_usage used;
	cof_usage base;          /* what it held when its running calls began:
				    a shared limit stops only a turn that grew */
	/* outbox */
	int cg_made;             /* its cgroups (and its agent's) are made */
	int cg_fd[4];            /* while cg_made, kept open for its calls (a path
				    walk of cgroupfs each fewer a call):
				    [0] [1] what a child writes to join the
				    memory and the pids cgroup (-1: no second),
				    [2] the memory count, [3] the pids count */
	int kept_files;
	int64_t kept_bytes;
	int collecting;          /* a call is taking the outbox: calls of one turn
				    share $OUTBOX and the turn's file budget, so
				    they take it one at a time */
	/* as root: the mount namespace a call's bwrap starts in, kept from
	 * the turn's last call whose views were all kept ones (confine.c):
	 * what it binds (the workspace, the copy of /etc, the views) stays
	 * the same from call to call, so a later call showing the same enters
	 * it (setns) instead of building it again */
	int ns_have;
	int ns_fd;               /* /proc/PID/ns/mnt of that call's bwrap */
	char *ns_etc;            /* the copy of /etc bound in it: its folder, a
				    name no later copy takes (no reference
				    held: a replaced copy goes once no call
				    uses it, the kept namespace with it) */
	char *ns_view[2];        /* the view folders bound in it (NULL: none) */
};

struct cof_turns {
	cof_store *st;
	char node[64];           /* this node's name: the turns whose workspace is here */
	char root[PATH_MAX];     /* scratch root */
	char data[PATH_MAX];     /* the data dir (hidden from calls) */
	int kernel;              /* 1: a tmpfs per workspace; 0: the measuring loop */
	int root_user;           /* cofferd runs as root: a uid per turn */
	int64_t grace;           /* seconds after the deadline a turn is dropped */
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* a call ended, or the sweeper should look */
	cof_turn *list;
	char (*tomb)[40];        /* ids of ended turns, a ring */
	size_t ntomb, tomb_next;
	unsigned uid_next;
	int stop;
	pthread_t sweeper;
	unsigned char *bpf;      /* the seccomp program, as bwrap reads it */
	size_t bpf_len;
	int cg;                  /* memory and processes kept by cgroup v2, v1 or
				    (0) rlimits only (limits.c) */
	char cg_mem[PATH_MAX];   /* our coffer-NS-PID cgroup: memory (v1) or both (v2) */
	char cg_pids[PATH_MAX];  /* our coffer-NS-PID cgroup: pids (v1) */
	char **etc;              /* the names under /etc a call sees (at start) */
	struct cof_etc_view *etcv; /* their copy, one bind for a call (etcview.c) */
	char how[1024];          /* how limits are kept, for the log */
	int views_ok;            /* FUSE works: calls see the agent's files */
	char views_why[200];     /* else why not, for the log */
	char exec_helper[PATH_MAX]; /* coffer-exec next to our binary, used without
				    root (landlock: nothing written runs); "" = none */
};

/* Turns' records in the store (records.c). Saves t's record: ended or not,
 * the node holding its workspace; a failure is said on stderr. */
void cof_turn_record_save(cof_turns *ts, const cof_turn *t);
/* At start: the live turns of this node's records come back (their
 * workspaces start empty at their next call), ended ones become tombstones.
 * Under no lock: before the sweeper starts serving. */
int cof_turns_load(cof_turns *ts, cof_err *err);
/* A turn not in memory, from its record: COF_EGONE when it ended or its node
 * is not this one (naming the node), COF_ENOTFOUND when unknown. Always -1. */
int cof_turn_record_miss(cof_turns *ts, const cof_principal *who, const char *id,
			 cof_err *err);
/* Makes a turn in memory (under mu): the list, a uid. */
void cof_turn_add(cof_turns *ts, cof_turn *t);
/* The sandbox's start at POST /v1/turns (call.c): what its first call would
 * make, made now. Under no lock; the caller holds a reference to t. */
void cof_turn_prepare(cof_turns *ts, cof_turn *t);
/* Adds an ended turn's id to the tombstones (under mu). */
void cof_turn_tomb_add(cof_turns *ts, const char *org, const char *id);

/* Reads the outside uid for a new turn (under mu). */
uid_t cof_turns_uid_new(cof_turns *ts);
/* Sweeps expired turns, then finds `id` for `who` with a reference taken
 * (drop it with cof_turn_release): COF_ENOTFOUND, COF_EFORBIDDEN, COF_EGONE. */
int cof_turn_sweep_and_find(cof_turns *ts, const cof_principal *who, const char *id,
			    cof_turn **out, cof_err *err);
void cof_turn_release(cof_turns *ts, cof_turn *t);
/* Stops every call of `t`: SIGKILL to their bwrap (the pid namespace takes
 * the rest) and, as root, to every process of the turn's uid. Under mu. */
void cof_turn_kill_calls(cof_turns *ts, cof_turn *t);
/* As root: kills every process of the turn's uid (kill(-1) from a child of
 * that uid). This reaches a sandbox whose bwrap was killed before it could
 * tie the sandbox's life to its own. */
void cof_turn_kill_uid(const cof_turns *ts, const cof_turn *t);

/* ---- quota.c: the scratch root and the disk limits */

/* Prepares the scratch root: unmounts and removes what a previous run left,
 * makes ROOT/ws and ROOT/kept, and finds which way limits are kept (sets
 * ts->kernel). 0, or -1 with err. */
int cof_quota_open(cof_turns *ts, int force_walk, cof_err *err);
/* Makes the workspace of `t` (under mu). 0, or -1 with err. */
int cof_quota_ws_make(cof_turns *ts, cof_turn *t, cof_err *err);
/* Empties the workspace of `t`, no process of the turn running (under mu). */
int cof_quota_ws_empty(cof_turns *ts, cof_turn *t, cof_err *err);
/* Unmounts and removes the workspace and kept files of `t` (under mu). */
void cof_quota_ws_drop(cof_turns *ts, cof_turn *t);
/* Measures `t` (or takes `fresh`, measured without mu by cof_quota_measure)
 * and, the kernel way, every other live workspace of its agent, resizes the
 * tmpfs of each, and returns the limit `t` reached ("turn_disk",
 * "user_disk", "scratch", "inodes") or NULL. Under mu. */
const char *cof_quota_check(cof_turns *ts, cof_turn *t, const cof_usage *fresh);
/* Notes what `t` holds as its first running call starts (under mu): a
 * shared limit (user_disk, scratch, inodes) stops only a turn that grew since
 * and holds more than its share. */
void cof_quota_base(cof_turns *ts, cof_turn *t);
/* Measures the workspace of `t` into *u without touching `t`: statfs the
 * kernel way; the measuring loop walks it and adds what the processes under
 * `pids` (n of them, may be 0) hold open though deleted. Safe without mu
 * while a call of `t` runs (its workspace stays). */
void cof_quota_measure(const cof_turns *ts, const cof_turn *t, const pid_t *pids, int n,
		       cof_usage *u);
/* Measures a folder by walking it (st_blocks, 1 KB per entry), without
 * following links or crossing mounts. Exposed for the benchmark. */
void cof_quota_walk(int dirfd, cof_usage *u);
/* Removes everything under the folder open at `dirfd` (not the folder). */
int cof_rm_children(int dirfd);

/* ---- limits.c: memory and processes (cgroup v2, v1, or rlimits) */

/* Finds how memory and processes are kept (sets ts->cg): cgroup v2 if ours is
 * delegated, else v1 as root, else 0 (rlimits). `no_cgroup`: rlimits only. */
int cof_limits_open(cof_turns *ts, int no_cgroup);
/* Makes the cgroups of `t` and of its agent with their limits (under mu;
 * writes to cgroupfs only). 0, or -1 with err. */
int cof_limits_turn(cof_turns *ts, cof_turn *t, cof_err *err);
/* The files of `t`'s cgroups (memory, pids; -1 where none) that a call's
 * single-threaded child writes "0" to, to join: cgroup.procs (v2), tasks
 * (v1). The turn's own descriptors, open while it is (the caller holds a
 * reference): not to be closed. */
void cof_limits_procs_fds(const cof_turns *ts, const cof_turn *t, int fds[2]);
/* The turn's counts so far: processes the memory limit killed, forks it
 * refused. */
void cof_limits_counts(const cof_turns *ts, const cof_turn *t, int64_t *oom, int64_t *forks);
/* Removes the cgroups of `t` (and its agent's when no other turn uses them). */
void cof_limits_drop(const cof_turns *ts, cof_turn *t);
/* Removes our coffer-NS-PID cgroups. */
void cof_limits_close(cof_turns *ts);

/* ---- confine.c: bwrap and seccomp */

/* Builds the seccomp program once (ts->bpf; memfd without MFD_NOEXEC_SEAL
 * always refused, memfd and SysV shm and msg refused unless ts->cg bounds
 * them) and the list of /etc a call sees. Call after cof_limits_open. 0, or
 * -1 with err. */
int cof_confine_init(cof_turns *ts, cof_err *err);

/* One confined process. */
typedef struct cof_proc {
	pid_t pid;               /* the outer bwrap */
	int in, out, errfd;      /* our ends of its stdin, stdout, stderr */
	int info;                /* bwrap's --info-fd (the sandbox's pid) */
	int sandbox;             /* pidfd of the sandbox's pid 1 once read, or -1 */
	void *etc;               /* the copy of /etc it was given (etcview.c) */
} cof_proc;

/* A folder of the call's view bound at an agent path. */
typedef struct cof_bind {
	char src[PATH_MAX + 128];  /* as bwrap sees it */
	const char *dst;           /* the agent path ("/workspace") */
	int ro;                    /* read-only (EROFS) */
} cof_bind;

/* What a call sees of the agent's files (views.c), for cof_confine_spawn. */
typedef struct cof_call_see {
	const cof_bind *binds;
	int nbinds;
	/* as root: the folders of the read-write and read-only roots (a view's
	 * mount point, the call's own or a kept one), which the child binds at
	 * COF_VIEW_INNER/rw and /ro of its namespace first; NULL = none */
	const char *view_rw, *view_ro;
	/* every view named is one the turn keeps (or there is none): the
	 * call's namespace may be kept for the next call (turn.h ns_*) */
	int kept;
} cof_call_see;

/* Starts `sh -c command` confined in the workspace of `t`; `see` (NULL =
 * nothing) adds the agent's files. 0, or -1 with err. */
int cof_confine_spawn(cof_turns *ts, const cof_turn *t, const char *command,
		      const cof_call_see *see, cof_proc *p, cof_err *err);

/* Lets go of the turn's kept mount namespace (under mu): what it binds
 * changed (the workspace renewed) or the turn ends. */
void cof_confine_ns_drop(cof_turns *ts, cof_turn *t);

/* As root, in a call's child (between clone and exec): a mount namespace
 * of its own whose root has only the system folders, `etc` (the copy of
 * /etc, or NULL: the host's) at /etc, /proc, /dev, the workspace `ws` at
 * /tmp and the folders of the call's view `view[0]` (read-write roots) and
 * `view[1]` (read-only ones), each NULL for none, at COF_VIEW_INNER/rw and
 * /ro; `hide` (the scratch root, the data dir) covered where a system folder
 * holds them. NULL, or the step that failed (errno says why). */
const char *cof_confine_child_root(const char *ws, const char *const view[2], const char *etc,
				   const char *const hide[2]);

/* ---- etcview.c: the allowed part of /etc, copied for calls */

typedef struct cof_etc_view cof_etc_view;
/* The names under /etc a call may see, as they are now (NULL-terminated,
 * "ssl/certs" style parts last; NULL without memory). */
char **cof_etc_list(void);
/* Sets ts->etc (the names, for binds when no copy can be made) and ts->etcv.
 * 0, or -1 without memory. */
int cof_etc_open(cof_turns *ts);
/* The folder to bind at a call's /etc, copied anew first when the host's
 * changed (inotify), with a reference in *ref that cof_etc_drop gives back
 * once the call's processes are gone; NULL (and *ref NULL) when there is no
 * copy: then the call binds ts->etc name by name. */
const char *cof_etc_take(cof_turns *ts, void **ref);
void cof_etc_drop(cof_turns *ts, void *ref);
/* Frees ts->etc and removes the copies (no call running). */
void cof_etc_close(cof_turns *ts);

/* ---- views.c: the agent's files in a call */

typedef struct cof_call_views cof_call_views;
/* Mounts the call's view of the agent's mounts (as they are now) and of the
 * turn user's volume at /user, and serves it. *out is NULL-free on success
 * (it may hold no view when the agent has no mounts). 0, or -1 with err. */
int cof_call_views_open(cof_turns *ts, cof_turn *t, const char *call, cof_call_views **out,
			cof_err *err);
/* What the call sees of them: the binds bwrap makes (at most `max`, in `b`)
 * and, as root, the folders its child binds first (see->view_rw, view_ro). */
void cof_call_views_see(const cof_turns *ts, cof_call_views *cv, cof_call_see *see,
			cof_bind *b, int max);
/* As root, where the call's child binds its view (in its own mount
 * namespace) for the turn's uid to reach: a folder every Debian has and no
 * call sees (its root is built from nothing). */
#define COF_VIEW_INNER "/mnt"
/* After the call's processes are gone: stops the view and, when `commit`,
 * lands its layer (one change per volume), adding `committed` and
 * `conflicts` to `answer` and notes to `notes`. `run`: X-Run-Id or NULL;
 * `by`: who the changes are by (the call; NULL = not said). */
void cof_call_views_end(cof_turns *ts, cof_turn *t, cof_call_views *cv, int commit,
			const char *run, const cof_by *by, json_t *answer, json_t *notes);
/* Unmounts the view, removes its layer and lets go of `cv`: from here it is
 * not the caller's. cv is about 450 KB: a few closed ones are kept by
 * views.c, process-wide, and given to the next opens (no mmap, page faults
 * and munmap a call); the others are freed. NULL is fine. */
void cof_call_views_close(cof_call_views *cv);
/* Ends the read-only views kept for the next call of turn `t` (NULL: of
 * every turn of ts, and the closed cof_call_views kept for reuse are freed)
 * once no call uses them. */
void cof_call_views_turn_end(cof_turns *ts, const cof_turn *t);

/* Kills the sandbox's pid 1 (and with it every process of the call) by the
 * pidfd taken from bwrap's --info-fd: what ends a call whose bwrap was killed
 * before it tied the sandbox's life to its own, also without root (where
 * there is no uid of the turn's own to kill). Does nothing before bwrap has
 * said the pid. */
void cof_confine_kill_sandbox(cof_proc *p);
/* Takes the sandbox's pid from --info-fd as a pidfd as soon as bwrap has
 * written it; called on every turn of the call's loop, so the pidfd is taken
 * while that process lives (a pid read later could name another process). */
void cof_confine_note_sandbox(cof_proc *p);

/* After bwrap was reaped: waits up to `timeout_ms` for the sandbox's pid 1
 * to be gone (then every process of the call is). Closes p->info. 0, or -1
 * when it was still there (it is then killed by its pidfd). */
int cof_confine_wait_gone(cof_proc *p, int timeout_ms);

#endif /* COF_TURN_H */
