/*
 * fsynclog.c — an LD_PRELOAD shim for durability tests: every fsync and
 * fdatasync of the process is logged, in order, as "fsync PATH" (the fd's
 * path from /proc/self/fd) to the file $COFFER_FSYNC_LOG, then done, after
 * $COFFER_FSYNC_DELAY_MS milliseconds if that is set (a slow disk: writers
 * that arrive meanwhile queue for the next commit, test_group_commit.py).
 * Built by the tests that use it (test_durability.py, test_group_commit.py).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void note(const char *what, int fd)
{
	const char *log = getenv("COFFER_FSYNC_LOG");
	char link[64], path[4096], line[4200];
	ssize_t n;
	int lf;

	if (!log)
		return;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	path[n > 0 ? n : 0] = '\0';
	n = snprintf(line, sizeof line, "%s %s\n", what, path);
	lf = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (lf >= 0) {
		if (write(lf, line, (size_t)n) < 0) {
			/* nothing to do: the test sees a line missing */
		}
		close(lf);
	}
}

static void delay(void)
{
	const char *ms = getenv("COFFER_FSYNC_DELAY_MS");

	if (ms && atoi(ms) > 0)
		usleep((useconds_t)atoi(ms) * 1000);
}

int fsync(int fd)
{
	note("fsync", fd);
	delay();
	return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd)
{
	note("fsync", fd);
	delay();
	return (int)syscall(SYS_fdatasync, fd);
}
