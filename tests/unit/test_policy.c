/*
 * test_policy.c — src/policy exclusions (data-driven: each pattern feature,
 * each default, parent folders, negation, limits on patterns, time bound),
 * modes, and session limits at each edge.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "util/util.h"

/* ------------------------------------------------------------ exclusions */

typedef struct excl_case {
	const char *patterns[6]; /* NULL-terminated; the defaults are off */
	const char *path;
	int is_dir;
	int want;
} excl_case;

static cof_excl *build(const char *const *pats, int defaults)
{
	json_t *a = json_array();
	cof_excl *x = NULL;
	cof_err err = {0};

	for (size_t i = 0; pats && pats[i]; i++)
		json_array_append_new(a, json_string(pats[i]));
	if (cof_excl_new(a, defaults, &x, &err) < 0)
		fail_msg("cof_excl_new refused: %s", err.msg);
	json_decref(a);
	return x;
}

static void run_cases(const excl_case *c, size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		cof_excl *x = build(c[i].patterns, 0);
		int got = cof_excl_match(x, c[i].path, c[i].is_dir);
		if (got != c[i].want) {
			print_error("case %zu: '%s'%s against '%s'...: %d, want %d\n", i,
				    c[i].path, c[i].is_dir ? " (folder)" : "",
				    c[i].patterns[0], got, c[i].want);
			bad++;
		}
		cof_excl_free(x);
	}
	if (bad)
		fail_msg("%d of %zu cases wrong", bad, n);
}
#define RUN(cases) run_cases(cases, sizeof cases / sizeof *cases)

static void test_excl_basename(void **state)
{
	static const excl_case cases[] = {
		/* no '/' in the pattern: a name at any depth */
		{{"notes.txt"}, "notes.txt", 0, 1},
		{{"notes.txt"}, "a/b/notes.txt", 0, 1},
		{{"notes.txt"}, "a/notes.txt.bak", 0, 0},
		{{"notes.txt"}, "xnotes.txt", 0, 0},
		{{"*.log"}, "x.log", 0, 1},
		{{"*.log"}, "deep/down/x.log", 0, 1},
		{{"*.log"}, "x.log.gz", 0, 0},
		{{"*.log"}, "logs/x.txt", 0, 0},
		{{"build"}, "build", 1, 1},
		{{"build"}, "build/out.o", 0, 1},        /* through its folder */
		{{"build"}, "src/build/out.o", 0, 1},
		{{"build"}, "rebuild/out.o", 0, 0},
		/* the literal prefilter (has_lit): its first byte before the
		 * match, the match at the very end, a path too short for it */
		{{"*.pem"}, "x..pem", 0, 1},
		{{"*.pem"}, "a.p.pe.pem", 0, 1},
		{{"*.pem"}, "a.pe", 0, 0},
		{{"*.pem"}, ".pem", 0, 1},
		{{"notes.txt"}, "n/notes.tx", 0, 0},
	};
	(void)state;
	RUN(cases);
}

static void test_excl_wildcards(void **state)
{
	static const excl_case cases[] = {
		{{"?.c"}, "a.c", 0, 1},
		{{"?.c"}, "ab.c", 0, 0},
		{{"?.c"}, ".c", 0, 0},
		{{"a*"}, "a/b", 0, 1},                  /* the folder a matches */
		{{"/a/*"}, "a/b", 0, 1},
		{{"/a/*"}, "a/b/c", 0, 1},               /* through a/b */
		{{"/a/*"}, "a", 1, 0},
		{{"*"}, "anything/at/all", 0, 1},
		{{"x*y"}, "x/y", 0, 0},                 /* `*` stays in a name */
		{{"[abc].txt"}, "b.txt", 0, 1},
		{{"[abc].txt"}, "d.txt", 0, 0},
		{{"[a-c].txt"}, "c.txt", 0, 1},
		{{"[a-c].txt"}, "d.txt", 0, 0},
		{{"[!a-c].txt"}, "d.txt", 0, 1},
		{{"[!a-c].txt"}, "a.txt", 0, 0},
		{{"[^a-c].txt"}, "z.txt", 0, 1},
		{{"[^a-c].txt"}, "b.txt", 0, 0},
		{{"file[0-9][0-9]"}, "file42", 0, 1},
		{{"file[0-9][0-9]"}, "file4x", 0, 0},
	};
	(void)state;
	RUN(cases);
}

static void test_excl_doublestar(void **state)
{
	static const excl_case cases[] = {
		{{"**/logs"}, "logs", 1, 1},
		{{"**/logs"}, "a/b/logs", 1, 1},
		{{"**/logs/x"}, "a/logs/x", 0, 1},
		{{"/logs/**"}, "logs/a/b", 0, 1},
		{{"/logs/**"}, "logs", 1, 0},            /* what is inside, not logs */
		{{"a/**/b"}, "a/b", 0, 1},               /* zero folders */
		{{"a/**/b"}, "a/x/y/b", 0, 1},
		{{"a/**/b"}, "x/a/b", 0, 0},             /* anchored */
		{{"**"}, "x", 0, 1},
		{{"a**b"}, "aXb", 0, 1},                 /* inside a name: a plain `*` */
		{{"a**b"}, "a/b", 0, 0},
	};
	(void)state;
	RUN(cases);
}

static void test_excl_anchor(void **state)
{
	static const excl_case cases[] = {
		{{"/todo.txt"}, "todo.txt", 0, 1},
		{{"/todo.txt"}, "sub/todo.txt", 0, 0},
		{{"doc/frotz"}, "doc/frotz", 0, 1},       /* a '/' in the middle anchors */
		{{"doc/frotz"}, "a/doc/frotz", 0, 0},
		{{"doc/frotz/"}, "doc/frotz", 1, 1},
		{{"doc/frotz/"}, "a/doc/frotz", 1, 0},
		{{"/*.c"}, "x.c", 0, 1},
		{{"/*.c"}, "src/x.c", 0, 0},
		{{"src/*.c"}, "src/x.c", 0, 1},
		{{"src/*.c"}, "src/a/x.c", 0, 0},
	};
	(void)state;
	RUN(cases);
}

static void test_excl_dir_only(void **state)
{
	static const excl_case cases[] = {
		{{"cache/"}, "cache", 1, 1},
		{{"cache/"}, "cache", 0, 0},              /* a file named cache */
		{{"cache/"}, "a/cache", 1, 1},
		{{"cache/"}, "cache/x", 0, 1},            /* under the folder */
		{{"cache/"}, "a/cache/b/c", 0, 1},
		{{"cache/"}, "cache/", 0, 1},             /* a trailing '/' says folder */
		{{"/out/"}, "out/x", 0, 1},
		{{"/out/"}, "a/out/x", 0, 0},
	};
	(void)state;
	RUN(cases);
}

static void test_excl_negation(void **state)
{
	static const excl_case cases[] = {
		{{"*.log", "!keep.log"}, "keep.log", 0, 0},
		{{"*.log", "!keep.log"}, "a/keep.log", 0, 0},
		{{"*.log", "!keep.log"}, "other.log", 0, 1},
		{{"!keep.log", "*.log"}, "keep.log", 0, 1},          /* later wins */
		{{"*.log", "!keep.log", "*.log"}, "keep.log", 0, 1},
		{{"build/", "!build/keep.txt"}, "build/keep.txt", 0, 1}, /* git: no */
		{{"build/**", "!build/keep.txt"}, "build/keep.txt", 0, 0},
		{{"/*", "!/src"}, "src/main.c", 0, 0},
		{{"/*", "!/src"}, "docs/x.md", 0, 1},
		{{"/*", "!/src"}, "src", 1, 0},
		{{"secret*", "!secret-public/"}, "secret-public", 1, 0},
		{{"secret*", "!secret-public/"}, "secret-public", 0, 1},
	};
	(void)state;
	RUN(cases);
}

static void test_excl_escape(void **state)
{
	static const excl_case cases[] = {
		{{"\\!important"}, "!important", 0, 1},
		{{"\\!important"}, "important", 0, 0},
		{{"\\*"}, "*", 0, 1},
		{{"\\*"}, "a", 0, 0},
		{{"a\\?"}, "a?", 0, 1},
		{{"a\\?"}, "ab", 0, 0},
		{{"\\[x]"}, "[x]", 0, 1},
		{{"\\[x]"}, "x", 0, 0},
		{{"\\#notes"}, "#notes", 0, 1},
	};
	(void)state;
	RUN(cases);
}

static void test_excl_normalise(void **state)
{
	static const excl_case cases[] = {
		{{"/a/b"}, "a//b", 0, 1},
		{{"/a/b"}, "./a/./b", 0, 1},
		{{"/a/b"}, "x/../a/b", 0, 1},
		{{"/a/b"}, "/a/b", 0, 1},                 /* one leading '/' is the root */
		{{"nothing"}, "../x", 0, 1},              /* above the root: excluded */
		{{"nothing"}, "a/../../x", 0, 1},
		{{"nothing"}, "", 1, 0},                  /* the root itself */
		{{"nothing"}, "a/..", 1, 0},
	};
	(void)state;
	RUN(cases);
}

/* Each default, at the root and deeper, and what must stay visible. */
static void test_excl_defaults(void **state)
{
	static const struct {
		const char *path;
		int is_dir, want;
	} cases[] = {
		{".env", 0, 1}, {"app/.env", 0, 1}, {".env.local", 0, 1},
		{"a/.env.production", 0, 1}, {"server.pem", 0, 1}, {"certs/ca.pem", 0, 1},
		{"tls.key", 0, 1}, {"id_rsa", 0, 1}, {"id_rsa.pub", 0, 1},
		{"keys/id_ed25519", 0, 1}, {"id_ecdsa", 0, 1}, {"id_ecdsa_sk.pub", 0, 1},
		{"credentials.json", 0, 1}, {"gcp/credentials.json", 0, 1},
		{".netrc", 0, 1}, {".npmrc", 0, 1}, {"web/.npmrc", 0, 1}, {".pypirc", 0, 1},
		{".aws/credentials", 0, 1}, {"home/.aws/credentials", 0, 1},
		{".ssh", 1, 1}, {".ssh/config", 0, 1}, {".ssh/keys/x", 0, 1},
		{"u/.ssh/authorized_keys", 0, 1}, {".git-credentials", 0, 1},
		/* any case: a case-insensitive disk opens .env for .ENV */
		{".ENV", 0, 1}, {"Server.PEM", 0, 1}, {".SSH/config", 0, 1},
		/* ordinary files stay */
		{"env.txt", 0, 0}, {".envrc", 0, 0}, {"src/env.c", 0, 0}, {"keys.txt", 0, 0},
		{"key.c", 0, 0}, {"pem.md", 0, 0}, {"credentials.yaml", 0, 0},
		{".aws/config", 0, 0}, {"README.md", 0, 0}, {"ssh/config", 0, 0},
		{"my_rsa", 0, 0}, {"monkey", 0, 0},
	};
	cof_excl *x = build(NULL, 1), *off = build(NULL, 0);
	int bad = 0;
	(void)state;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int got = cof_excl_match(x, cases[i].path, cases[i].is_dir);
		if (got != cases[i].want) {
			print_error("default on '%s': %d, want %d\n", cases[i].path, got,
				    cases[i].want);
			bad++;
		}
		if (cof_excl_match(off, cases[i].path, cases[i].is_dir)) {
			print_error("'%s' excluded with the defaults off\n", cases[i].path);
			bad++;
		}
	}
	/* Every listed default is matched by itself (its own text as a path). */
	for (const char *const *d = cof_excl_defaults(); *d; d++) {
		char p[128];
		snprintf(p, sizeof p, "%s", *d);
		for (char *c = p; *c; c++)
			if (*c == '*')
				*c = 'x';
		if (!cof_excl_match(x, p, 0)) {
			print_error("default '%s' does not exclude '%s'\n", *d, p);
			bad++;
		}
	}
	if (bad)
		fail_msg("%d default cases wrong", bad);
	cof_excl_free(x);
	cof_excl_free(off);
}

static void test_excl_defaults_not_reincluded(void **state)
{
	const char *pats[] = {"!.env", "!*.pem", "!.ssh/", NULL};
	cof_excl *x = build(pats, 1);
	(void)state;

	assert_int_equal(cof_excl_match(x, ".env", 0), 1);
	assert_int_equal(cof_excl_match(x, "a.pem", 0), 1);
	assert_int_equal(cof_excl_match(x, ".ssh/config", 0), 1);
	cof_excl_free(x);
}

static void test_excl_defaults_with_own(void **state)
{
	const char *pats[] = {"secret/", NULL};
	cof_excl *x = build(pats, 1);
	json_t *given = cof_excl_patterns(x);
	(void)state;

	assert_int_equal(cof_excl_match(x, "secret/a.txt", 0), 1);
	assert_int_equal(cof_excl_match(x, ".env", 0), 1);
	assert_int_equal(cof_excl_match(x, "public/a.txt", 0), 0);
	/* the patterns as given, without the defaults */
	assert_int_equal(json_array_size(given), 1);
	assert_string_equal(json_string_value(json_array_get(given, 0)), "secret/");
	json_decref(given);
	cof_excl_free(x);
	assert_int_equal(cof_excl_match(NULL, ".env", 0), 0);
}

/* Builds from `a` (stolen); returns the error code (COF_OK on success). */
static cof_code try_new(json_t *a, char *msg, size_t msgsz)
{
	cof_excl *x = NULL;
	cof_err err = {0};
	int rc = cof_excl_new(a, 1, &x, &err);
	cof_code code = err.code;

	json_decref(a);
	if (msg)
		snprintf(msg, msgsz, "%s", err.msg);
	if (rc == 0) {
		assert_non_null(x);
		assert_int_equal(code, COF_OK);
	} else {
		assert_null(x);
		assert_int_not_equal(code, COF_OK);
	}
	cof_excl_free(x);
	cof_err_clear(&err);
	return code;
}

static json_t *one(const char *p)
{
	json_t *a = json_array();
	json_array_append_new(a, json_string(p));
	return a;
}

static void test_excl_limits(void **state)
{
	char msg[512], pat[1100];
	json_t *a;
	(void)state;

	/* 256 patterns pass, 257 do not */
	a = json_array();
	for (int i = 0; i < 256; i++)
		json_array_append_new(a, json_string("x*"));
	assert_int_equal(try_new(a, NULL, 0), COF_OK);
	a = json_array();
	for (int i = 0; i < 257; i++)
		json_array_append_new(a, json_string("x*"));
	assert_int_equal(try_new(a, msg, sizeof msg), COF_EVALIDATION);
	assert_non_null(strstr(msg, "257"));
	assert_non_null(strstr(msg, "256"));

	/* 1024 bytes pass, 1025 do not */
	memset(pat, 'a', 1024);
	pat[1024] = '\0';
	assert_int_equal(try_new(one(pat), NULL, 0), COF_OK);
	pat[1024] = 'a';
	pat[1025] = '\0';
	assert_int_equal(try_new(one(pat), msg, sizeof msg), COF_EVALIDATION);
	assert_non_null(strstr(msg, "1025 bytes"));
	assert_non_null(strstr(msg, "1024 bytes"));
	assert_non_null(strstr(msg, "aaaa"));
}

static void test_excl_bad(void **state)
{
	static const char *const bad[] = {"", "!", "/", "!/", "a[", "x/[a-", "a\\",
					  "a//", "//a", "a//b", "[a/b]"};
	char msg[512];
	json_t *a;
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		if (try_new(one(bad[i]), msg, sizeof msg) != COF_EVALIDATION)
			fail_msg("pattern '%s' accepted", bad[i]);
		if (bad[i][0] && !strstr(msg, bad[i]))
			fail_msg("refusal of '%s' does not name it: %s", bad[i], msg);
	}
	a = json_array();
	json_array_append_new(a, json_integer(3));
	assert_int_equal(try_new(a, NULL, 0), COF_EVALIDATION);
	assert_int_equal(try_new(json_string("*.c"), NULL, 0), COF_EVALIDATION);
	assert_int_equal(try_new(json_stringn("a\0b", 3), NULL, 0), COF_EVALIDATION);
	a = json_array();
	json_array_append_new(a, json_stringn("a\0b", 3));
	assert_int_equal(try_new(a, NULL, 0), COF_EVALIDATION);
	assert_int_equal(try_new(NULL, NULL, 0), COF_OK);
	assert_int_equal(try_new(json_array(), NULL, 0), COF_OK);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The worst shapes allowed: many `**` and stars against a deep path. */
static void test_excl_bounded(void **state)
{
	const char *pats[] = {"**/a/**/a/**/a/**/a/**/c", "*a*a*a*a*a*a*a*a*a*a*c",
			      "!**/a/**/b/", "a/**/**/**/**/**/**/**/x", NULL};
	cof_excl *x = build(pats, 1);
	char *path = malloc(4200);
	double t0;
	(void)state;

	path[0] = '\0';
	for (int i = 0; i < 2000; i++)
		strcat(path, "a/");
	strcat(path, "b");
	t0 = now();
	assert_int_equal(cof_excl_match(x, path, 0), 0);
	if (now() - t0 > 5)
		fail_msg("one match over a 2,001-segment path took %.1f s", now() - t0);
	cof_excl_free(x);
	/* ... and the answers stay right. */
	const char *hit[] = {"a/**/**/**/**/**/**/**/b", NULL};
	x = build(hit, 0);
	assert_int_equal(cof_excl_match(x, path, 0), 1);
	cof_excl_free(x);
	free(path);
}

/* ---------------------------------------------------------------- modes */

static void test_modes(void **state)
{
	static const char *const names[] = {"standard", "supervised", "readonly"};
	cof_err err = {0};
	cof_mode m;
	(void)state;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(cof_mode_parse(names[i], &m, &err), 0);
		assert_int_equal((int)m, i);
		assert_string_equal(cof_mode_name(m), names[i]);
	}
	assert_int_equal(cof_mode_parse("Standard", &m, &err), -1);
	assert_int_equal(err.code, COF_EVALIDATION);
	assert_non_null(strstr(err.msg, "Standard"));
	cof_err_clear(&err);
	assert_int_equal(cof_mode_parse("", &m, &err), -1);
	cof_err_clear(&err);
	assert_int_equal(cof_mode_parse(NULL, &m, &err), -1);
	cof_err_clear(&err);
	assert_int_equal(cof_mode_parse("read-only", &m, &err), -1);
	cof_err_clear(&err);
}

/* --------------------------------------------------------------- limits */

static const struct {
	const char *name;
	int64_t ceiling;
	size_t off;
} limit_rows[] = {
	{"fileBytes", 10LL * 1048576, offsetof(cof_limits, file_bytes)},
	{"reads", 500, offsetof(cof_limits, reads)},
	{"writes", 100, offsetof(cof_limits, writes)},
	{"bytesWritten", 500LL * 1048576, offsetof(cof_limits, bytes_written)},
	{"seconds", 14400, offsetof(cof_limits, seconds)},
	{"searchResults", 100, offsetof(cof_limits, search_results)},
};

static int64_t field_of(const cof_limits *l, size_t off)
{
	return *(const int64_t *)(const void *)((const char *)l + off);
}

static void test_limits_default(void **state)
{
	cof_limits l;
	cof_err err = {0};
	json_t *j;
	(void)state;

	cof_limits_default(&l);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(field_of(&l, limit_rows[i].off), limit_rows[i].ceiling);
	memset(&l, 0, sizeof l);
	assert_int_equal(cof_limits_parse(NULL, &l, &err), 0);
	j = cof_limits_json(&l);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(json_integer_value(json_object_get(j, limit_rows[i].name)),
				 limit_rows[i].ceiling);
	assert_int_equal(json_object_size(j), 6);
	json_decref(j);
	json_t *empty = json_object();
	assert_int_equal(cof_limits_parse(empty, &l, &err), 0);
	assert_int_equal(l.reads, 500);
	json_decref(empty);
}

/* Parses {name: v}; returns the error code, the parsed value in *got. */
static cof_code parse_one(const char *name, json_t *v, int64_t *got, size_t off, char *msg)
{
	json_t *o = json_object();
	cof_limits l;
	cof_err err = {0};
	cof_code code;

	json_object_set_new(o, name, v);
	cof_limits_default(&l);
	code = cof_limits_parse(o, &l, &err) == 0 ? COF_OK : err.code;
	if (code == COF_OK && got)
		*got = field_of(&l, off);
	if (msg)
		snprintf(msg, 480, "%s", err.msg);
	cof_err_clear(&err);
	json_decref(o);
	return code;
}

static void test_limits_edges(void **state)
{
	char msg[480], ceil[32];
	int64_t got;
	(void)state;

	for (size_t i = 0; i < 6; i++) {
		const char *n = limit_rows[i].name;
		int64_t c = limit_rows[i].ceiling;
		size_t off = limit_rows[i].off;
		assert_int_equal(parse_one(n, json_integer(c), &got, off, NULL), COF_OK);
		assert_int_equal(got, c);
		assert_int_equal(parse_one(n, json_integer(1), &got, off, NULL), COF_OK);
		assert_int_equal(got, 1);
		assert_int_equal(parse_one(n, json_integer(c - 1), &got, off, NULL), COF_OK);
		assert_int_equal(got, c - 1);
		assert_int_equal(parse_one(n, json_integer(c + 1), NULL, off, msg),
				 COF_EVALIDATION);
		snprintf(ceil, sizeof ceil, "%lld", (long long)c);
		if (!strstr(msg, n) || !strstr(msg, ceil) || !strstr(msg, "ceiling"))
			fail_msg("over the ceiling of %s: '%s'", n, msg);
		assert_int_equal(parse_one(n, json_integer(0), NULL, off, msg), COF_EVALIDATION);
		assert_non_null(strstr(msg, n));
		assert_int_equal(parse_one(n, json_integer(-1), NULL, off, NULL),
				 COF_EVALIDATION);
		assert_int_equal(parse_one(n, json_string("5"), NULL, off, NULL),
				 COF_EVALIDATION);
		assert_int_equal(parse_one(n, json_real(1.5), NULL, off, NULL), COF_EVALIDATION);
		assert_int_equal(parse_one(n, json_null(), &got, off, NULL), COF_OK);
		assert_int_equal(got, c);
	}
}

static void test_limits_bad(void **state)
{
	cof_limits l;
	cof_err err = {0};
	json_t *o = json_pack("{s:i, s:i}", "reads", 3, "maxReads", 3);
	(void)state;

	assert_int_equal(cof_limits_parse(o, &l, &err), -1);
	assert_int_equal(err.code, COF_EVALIDATION);
	assert_non_null(strstr(err.msg, "maxReads"));
	cof_err_clear(&err);
	json_decref(o);
	o = json_array();
	assert_int_equal(cof_limits_parse(o, &l, &err), -1);
	cof_err_clear(&err);
	json_decref(o);
	/* several at once; the others stay at their defaults */
	o = json_pack("{s:i, s:i}", "reads", 7, "seconds", 60);
	assert_int_equal(cof_limits_parse(o, &l, &err), 0);
	assert_int_equal(l.reads, 7);
	assert_int_equal(l.seconds, 60);
	assert_int_equal(l.writes, 100);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_excl_basename),
		cmocka_unit_test(test_excl_wildcards),
		cmocka_unit_test(test_excl_doublestar),
		cmocka_unit_test(test_excl_anchor),
		cmocka_unit_test(test_excl_dir_only),
		cmocka_unit_test(test_excl_negation),
		cmocka_unit_test(test_excl_escape),
		cmocka_unit_test(test_excl_normalise),
		cmocka_unit_test(test_excl_defaults),
		cmocka_unit_test(test_excl_defaults_not_reincluded),
		cmocka_unit_test(test_excl_defaults_with_own),
		cmocka_unit_test(test_excl_limits),
		cmocka_unit_test(test_excl_bad),
		cmocka_unit_test(test_excl_bounded),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_limits_default),
		cmocka_unit_test(test_limits_edges),
		cmocka_unit_test(test_limits_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
