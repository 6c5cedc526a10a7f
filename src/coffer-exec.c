/*
 * coffer-exec — the first program of a call's sandbox when cofferd is not
 * root (src/turn/confine.c). Without root the workspace is a bound folder
 * that bwrap cannot make noexec, so this limits what may be executed to the
 * system's folders with Landlock (Linux 5.13+; bytes the call writes can
 * then never be run), sets RLIMIT_NPROC (counted in the call's own user
 * namespace), and execs the command.
 *
 *   coffer-exec NPROC PROGRAM ARGS...
 *
 * Exits 126 with a message when it cannot do all of that: it fails closed.
 * Plain libc only (it runs inside the sandbox, where only /usr is).
 */
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Where programs may be run from (a link such as /bin -> usr/bin is
 * covered by /usr). */
static const char *const exec_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
					"/libx32", NULL};

static int fail(const char *what)
{
	fprintf(stderr, "coffer: cannot %s\n", what);
	return 126;
}

int main(int argc, char **argv)
{
	struct landlock_ruleset_attr attr = {.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE};
	char *end;
	long n;
	int rs;

	if (argc < 3)
		return fail("start: usage is coffer-exec NPROC PROGRAM ARGS...");
	n = strtol(argv[1], &end, 10);
	struct rlimit r = {(rlim_t)n, (rlim_t)n};
	if (*end || n < 1 || setrlimit(RLIMIT_NPROC, &r))
		return fail("limit processes");
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0)
		return fail("limit what may run (landlock)");
	for (int i = 0; exec_dirs[i]; i++) {
		struct stat sb;
		if (lstat(exec_dirs[i], &sb) || !S_ISDIR(sb.st_mode))
			continue;
		struct landlock_path_beneath_attr pb = {
			.allowed_access = LANDLOCK_ACCESS_FS_EXECUTE,
			.parent_fd = open(exec_dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC)};
		if (pb.parent_fd < 0 ||
		    syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
			return fail("limit what may run (landlock rule)");
		close(pb.parent_fd);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_landlock_restrict_self, rs, 0))
		return fail("limit what may run (landlock)");
	close(rs);
	execv(argv[2], argv + 2);
	return fail("run the command");
}
