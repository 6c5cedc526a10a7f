/*
 * test_lock.c — the data dir's locks between processes (store/lock.c): a
 * collector in one process waits while a write in another holds content, and
 * a second server of one data dir is refused naming the first one's pid.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "store/store.h"

static char dir[] = "/tmp/coffer-lock-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd);
}

/* The child holds content for a moment, marks that it let go, then lets go;
 * the parent's collector must not get in before the mark. */
static void collector_waits_for_another_process(void **state)
{
	int ready[2];
	char mark[300];
	cof_store *st = NULL;
	cof_err err = {0};

	(void)state;
	snprintf(mark, sizeof mark, "%s/released", dir);
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		cof_store *cst = NULL;
		if (cof_store_open(dir, NULL, &cst, &err))
			_exit(2);
		cof_store_hold_content(cst);
		if (write(ready[1], "x", 1) != 1)
			_exit(3);
		usleep(400 * 1000);
		int fd = open(mark, O_WRONLY | O_CREAT, 0600);
		close(fd);
		cof_store_release_content(cst);
		cof_store_close(cst);
		_exit(fd >= 0 ? 0 : 4);
	}
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(cof_store_open(dir, NULL, &st, &err), 0);
	assert_int_equal(cof_store_collect_begin(st, &err), 0);
	assert_int_equal(access(mark, F_OK), 0); /* the child had let go */
	cof_store_collect_end(st);
	/* and a write of ours can hold content again at once */
	cof_store_hold_content(st);
	cof_store_release_content(st);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cof_store_close(st);
}

static void second_server_refused(void **state)
{
	cof_store *a = NULL, *b = NULL, *c = NULL;
	cof_store_opts so = {.serve = 1};
	cof_err err = {0};
	char want[64];

	(void)state;
	assert_int_equal(cof_store_open(dir, &so, &a, &err), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = cof_store_open(dir, &so, &b, &err);
		snprintf(want, sizeof want, "(pid %ld)", (long)getppid());
		_exit(rc == -1 && err.code == COF_ECONFLICT && strstr(err.msg, want) ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* a tool (not serving) opens it beside the server */
	assert_int_equal(cof_store_open(dir, NULL, &c, &err), 0);
	cof_store_close(c);
	cof_store_close(a);
	/* once the server closed, another may serve */
	assert_int_equal(cof_store_open(dir, &so, &b, &err), 0);
	cof_store_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(collector_waits_for_another_process),
		cmocka_unit_test(second_server_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
