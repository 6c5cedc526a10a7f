/*
 * fuzz_exclude.c — cof_excl_new and cof_excl_match, patterns x paths.
 * Input: FLAGS PATTERNS NUL PATH, where PATTERNS are newline-separated and
 * FLAGS' low bit says the path is a folder, the next one turns on the
 * defaults. Checks, for lists cof_excl_new accepts:
 *  - a match finishes within a second (the matcher stays polynomial);
 *  - a folder that is excluded excludes everything under it;
 *  - the defaults only add exclusions;
 *  - without `!` patterns, the list excludes what any one of them excludes;
 *  - "./", "x/../" and doubled '/' do not change the answer;
 *  - for a valid volume path, the answer equals a slow reference written here
 *    from the documented rules with cof_glob_match on each leading run of
 *    segments (no one-pass prefixes, no literal prefilter);
 *  - a refusal is a validation error with a message.
 */
#include <time.h>
#include "fuzz.h"
#include "policy/policy.h"
#include "util/util.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int timed(const cof_excl *x, const char *path, int is_dir)
{
	double t0 = now();
	int m = cof_excl_match(x, path, is_dir);
	double dt = now() - t0;

	FUZZ_CHECK(dt < 1.0, "one match took %.2f s (path %zu bytes)", dt, strlen(path));
	FUZZ_CHECK(m == 0 || m == 1, "cof_excl_match returned %d", m);
	return m;
}

static cof_excl *build(json_t *pats, int defaults)
{
	cof_excl *x = NULL;
	cof_err err = {0};

	if (cof_excl_new(pats, defaults, &x, &err) < 0) {
		FUZZ_CHECK(err.code == COF_EVALIDATION && err.msg[0] && !x,
			   "bad refusal (code %d)", err.code);
		cof_err_clear(&err);
		return NULL;
	}
	FUZZ_CHECK(x != NULL, "accepted without a matcher");
	return x;
}

/* One pattern by the documented rules against the path's first k segments
 * (`prefix`): -1 no opinion, 1 excluded, 0 re-included. */
static int ref_rule(const char *pat, const char *prefix, int is_dir_prefix)
{
	const char *b = pat;
	int neg = 0, dir_only = 0, anchored = 0, r;
	size_t n;

	if (*b == '!')
		neg = 1, b++;
	n = strlen(b);
	if (n && b[n - 1] == '/' && !(n >= 2 && b[n - 2] == '\\'))
		dir_only = 1, n--;
	if (n && b[0] == '/')
		anchored = 1, b++, n--;
	char *body = strndup(b, n), *glob = malloc(n + 4);
	anchored |= strchr(body, '/') != NULL;
	snprintf(glob, n + 4, "%s%s", anchored ? "" : "**/", body);
	r = cof_glob_match(glob, prefix) && (!dir_only || is_dir_prefix) ? !neg : -1;
	free(body);
	free(glob);
	return r;
}

/* The documented folding of the defaults into `out` (at most as long): ASCII
 * letters, U+017F to 's', U+212A to 'k'. */
static void ref_fold(const char *in, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == 0xc5 && i + 1 < n && (unsigned char)in[i + 1] == 0xbf)
			out[o++] = 's', i++;
		else if (c == 0xe2 && i + 2 < n && (unsigned char)in[i + 1] == 0x84 &&
			 (unsigned char)in[i + 2] == 0xaa)
			out[o++] = 'k', i += 2;
		else
			out[o++] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : (char)c;
	}
	out[o] = '\0';
}

static int ref_match(json_t *arr, int defaults, const char *path, int is_dir)
{
	size_t n = strlen(path);
	char *prefix = malloc(n + 1);
	for (size_t end = 0; end <= n; end++) {
		if (end < n && path[end] != '/')
			continue;
		int last = end == n, state = 0;
		memcpy(prefix, path, end);
		prefix[end] = '\0';
		for (size_t i = 0; i < json_array_size(arr); i++) {
			int r = ref_rule(json_string_value(json_array_get(arr, i)), prefix,
					 !last || is_dir);
			if (r >= 0)
				state = r;
		}
		ref_fold(path, end, prefix);
		for (const char *const *d = cof_excl_defaults(); defaults && *d; d++)
			state |= ref_rule(*d, prefix, !last || is_dir) == 1;
		if (state) {
			free(prefix);
			return 1;
		}
	}
	free(prefix);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int flags = data[0], is_dir = flags & 1, defaults = (flags >> 1) & 1;
	data++, size--;
	const uint8_t *nul = memchr(data, 0, size);
	char *pats = fuzz_dup_str(data, nul ? (size_t)(nul - data) : size);
	char *path = nul ? fuzz_dup_str(nul + 1, size - (size_t)(nul - data) - 1)
			 : fuzz_dup_str((const uint8_t *)"a/b", 3);
	json_t *arr = json_array();
	int negations = 0;
	char *save = NULL;

	for (char *p = strtok_r(pats, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		json_t *s = json_string(p);
		if (!s)
			continue; /* not UTF-8: JSON cannot carry it */
		negations |= p[0] == '!';
		json_array_append_new(arr, s);
	}
	cof_excl *x = build(arr, defaults);
	if (!x)
		goto out;

	int m = timed(x, path, is_dir);
	size_t n = strlen(path);

	/* A folder excluded excludes what is under it. */
	if (n && n < 3000 && timed(x, path, 1)) {
		char *child = malloc(n + 8);
		snprintf(child, n + 8, "%s/c", path);
		FUZZ_CHECK(timed(x, child, 0), "'%s' excluded as a folder, '%s' not", path, child);
		free(child);
	}
	/* The defaults only add. */
	if (!defaults && m) {
		cof_excl *d = build(arr, 1);
		FUZZ_CHECK(d && timed(d, path, is_dir), "the defaults re-included '%s'", path);
		cof_excl_free(d);
	}
	/* Without negation: the union of the single patterns. */
	if (!negations && json_array_size(arr) <= 16) {
		int any = 0;
		for (size_t i = 0; i < json_array_size(arr) && !any; i++) {
			json_t *one = json_array();
			json_array_append(one, json_array_get(arr, i));
			cof_excl *o = build(one, defaults);
			FUZZ_CHECK(o != NULL, "pattern %zu refused alone, accepted in a list", i);
			any |= timed(o, path, is_dir);
			cof_excl_free(o);
			json_decref(one);
		}
		if (!json_array_size(arr)) {
			cof_excl *o = build(NULL, defaults);
			any = timed(o, path, is_dir);
			cof_excl_free(o);
		}
		FUZZ_CHECK(any == m, "'%s': the list says %d, its patterns one by one %d", path,
			   m, any);
	}
	/* The slow reference, on valid volume paths. */
	cof_err perr = {0};
	const char *vp;
	if (n && n <= 300 && json_array_size(arr) <= 16 &&
	    cof_path_check(path, n, "path", &vp, &perr) == 0 && vp == path)
		FUZZ_CHECK(ref_match(arr, defaults, path, is_dir) == m,
			   "'%s'%s: cof_excl_match says %d, the rules say %d", path,
			   is_dir ? " (folder)" : "", m, !m);
	cof_err_clear(&perr);
	/* Spellings of the same path. */
	if (n && n < 3000 && path[0] != '/') {
		char *alt = malloc(n + 16);
		snprintf(alt, n + 16, "./%s", path);
		FUZZ_CHECK(timed(x, alt, is_dir) == m, "'./%s' differs", path);
		snprintf(alt, n + 16, "zz/../%s", path);
		FUZZ_CHECK(timed(x, alt, is_dir) == m, "'zz/../%s' differs", path);
		free(alt);
	}
	cof_excl_free(x);
out:
	json_decref(arr);
	free(pats);
	free(path);
	return 0;
}
