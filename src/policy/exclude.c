/*
 * exclude.c — gitignore-style exclusions over the one glob matcher of
 * src/util/glob.c. A pattern is turned into a glob once, when the list is
 * built: a pattern with no '/' (other than a trailing one) matches a name at
 * any depth ("**" + "/" + pattern), one with a '/' at the start or in the
 * middle is anchored to the root (the leading '/' dropped); a trailing '/'
 * keeps it to folders; a leading '!' re-includes. Matching asks the glob
 * matcher once per pattern for every leading run of the path's segments
 * (cof_glob_match_prefixes), so a path and all its parent folders are decided
 * in one pass and the time stays O(patterns x pattern segments x path
 * segments), whatever the `**` count.
 *
 * Decisions written down here because git leaves them open or they differ:
 *  - The defaults are a separate list that `!` patterns cannot re-include (the
 *    relay cannot turn them off; an agent turns them off whole with
 *    defaultExclusions:false). They match whatever the case of the path
 *    (".ENV" too), since a case-insensitive file system opens ".env" for it.
 *  - The defaults also fold U+017F and U+212A (see fold()).
 *  - COF_EXCL_NOCASE makes the user's patterns match without regard to ASCII
 *    case too (the relay: a folder on macOS or Windows opens "SECRET.txt" for
 *    "secret.txt", and a user who wrote `secret*` meant both anyway). The
 *    pattern and the path are folded to lower case; classes such as [A-Z]
 *    fold with them.
 *  - A path is normalised before it is matched: empty and "." segments go,
 *    ".." takes the segment before it. A path climbing above the root, or
 *    longer than 4096 bytes, counts as excluded.
 */
#include <stdlib.h>
#include <string.h>
#include "policy/policy.h"
#include "util/util.h"

#define EXCL_MAX_PATTERNS 256
#define EXCL_MAX_BYTES 1024

typedef struct excl_rule {
	char *glob;   /* what the glob matcher sees */
	int negate;   /* `!`: re-includes */
	int dir_only; /* trailing '/' */
	const char *lit; /* the longest literal run of the glob (in `glob`), or NULL */
	size_t litlen;
} excl_rule;

struct cof_excl {
	excl_rule *defaults;
	size_t ndefaults;
	excl_rule *rules;
	size_t nrules;
	int nocase;    /* COF_EXCL_NOCASE: rules folded, paths folded before matching */
	json_t *given; /* the patterns as given (an array), for cof_excl_patterns */
};

static const char *const default_patterns[] = {
	".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "id_ecdsa*",
	"credentials.json", ".netrc", ".npmrc", ".pypirc", ".git-credentials",
	"**/.aws/credentials", ".ssh", "**/.ssh/**", NULL,
};

const char *const *cof_excl_defaults(void)
{
	return default_patterns;
}

/* True when [s, s+n) holds a '/' that is not the escaped char of a '\'. An
 * escaped '/' still separates segments in the glob matcher, so it counts. */
static int has_slash(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n) {
			if (s[i + 1] == '/')
				return 1;
			i++;
			continue;
		}
		if (s[i] == '/')
			return 1;
	}
	return 0;
}

/* Finds the longest run of plain bytes (no metacharacter, escape or '/') in
 * r->glob. Any path the glob matches (or whose leading segments it matches)
 * holds that run verbatim, so a path without it is skipped before the glob
 * matcher runs: most paths skip most patterns for one scan (has_lit). */
static void rule_literal(excl_rule *r)
{
	const char *g = r->glob, *run = NULL;
	size_t best = 0;

	for (const char *p = g; *p;) {
		if (*p == '[') { /* a class matches one byte of a set: skip it whole */
			p++;
			p += *p == '!' || *p == '^';
			p += *p == ']';
			while (*p && *p != ']')
				p += (*p == '\\' && p[1]) ? 2 : 1;
			p += *p == ']';
			continue;
		}
		if (*p == '\\' || *p == '*' || *p == '?' || *p == ']' || *p == '/') {
			p += (*p == '\\' && p[1]) ? 2 : 1;
			continue;
		}
		const char *b = p;
		while (*p && !strchr("\\*?[]/", *p))
			p++;
		if ((size_t)(p - b) > best)
			best = (size_t)(p - b), run = b;
	}
	r->lit = run, r->litlen = best;
}

/* Lower case of s, in place: ASCII letters, and the two code points whose
 * simple case folding is an ASCII letter, U+017F (long s) and U+212A (Kelvin
 * sign), which a case-insensitive disk (APFS, NTFS) opens as "s" and "k": so
 * "id_r\u017Fa" cannot reach what "id_rsa" keeps out. */
static void fold(char *s)
{
	char *o = s;

	while (*s) {
		unsigned char c = (unsigned char)*s;
		if (c == 0xc5 && (unsigned char)s[1] == 0xbf) {
			*o++ = 's', s += 2;
		} else if (c == 0xe2 && (unsigned char)s[1] == 0x84 && (unsigned char)s[2] == 0xaa) {
			*o++ = 'k', s += 3;
		} else {
			*o++ = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : (char)c;
			s++;
		}
	}
	*o = '\0';
}

/* Compiles one pattern into *r (folded to lower case when `nocase`). Errors
 * name the pattern. */
static int rule_compile(const char *pat, int nocase, excl_rule *r, cof_err *err)
{
	size_t len = strlen(pat), n;
	const char *b = pat;
	int anchored = 0;
	cof_err ge = {0};

	memset(r, 0, sizeof *r);
	if (len == 0)
		return cof_error(err, COF_EVALIDATION, "an exclude pattern is empty");
	if (len > EXCL_MAX_BYTES)
		return cof_error(err, COF_EVALIDATION,
				 "exclude pattern '%.40s...' is %zu bytes; the limit is %d bytes",
				 pat, len, EXCL_MAX_BYTES);
	if (*b == '!')
		r->negate = 1, b++;
	n = strlen(b);
	/* A trailing '/' (not an escaped one) keeps the pattern to folders. */
	if (n && b[n - 1] == '/' && !(n >= 2 && b[n - 2] == '\\'))
		r->dir_only = 1, n--;
	if (n && b[0] == '/')
		anchored = 1, b++, n--;
	if (n == 0)
		return cof_error(err, COF_EVALIDATION,
				 "exclude pattern '%s' names nothing", pat);
	if (b[n - 1] == '/' || b[0] == '/' || memmem(b, n, "//", 2))
		return cof_error(err, COF_EVALIDATION,
				 "exclude pattern '%s' has an empty folder name", pat);
	anchored |= has_slash(b, n);

	cof_buf g = COF_BUF_INIT;
	if ((!anchored && cof_buf_adds(&g, "**/") < 0) || cof_buf_add(&g, b, n) < 0) {
		cof_buf_release(&g);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	if (cof_glob_check(g.data + (anchored ? 0 : 3), &ge) < 0) {
		cof_error(err, COF_EVALIDATION, "exclude pattern '%.200s': %s", pat, ge.msg);
		cof_err_clear(&ge);
		cof_buf_release(&g);
		return -1;
	}
	r->glob = cof_buf_detach(&g, NULL);
	if (nocase)
		fold(r->glob);
	rule_literal(r);
	return 0;
}

static void rules_free(excl_rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(r[i].glob);
	free(r);
}

void cof_excl_free(cof_excl *x)
{
	if (!x)
		return;
	rules_free(x->defaults, x->ndefaults);
	rules_free(x->rules, x->nrules);
	json_decref(x->given);
	free(x);
}

int cof_excl_new(const json_t *patterns, int flags, cof_excl **out, cof_err *err)
{
	int defaults = flags & COF_EXCL_DEFAULTS;
	cof_excl *x;
	size_t n = 0;

	*out = NULL;
	if (patterns && !json_is_null(patterns)) {
		if (!json_is_array(patterns))
			return cof_error(err, COF_EVALIDATION,
					 "'exclude' must be an array of patterns");
		n = json_array_size(patterns);
		if (n > EXCL_MAX_PATTERNS)
			return cof_error(err, COF_EVALIDATION,
					 "'exclude' has %zu patterns; the limit is %d", n,
					 EXCL_MAX_PATTERNS);
	}
	x = cof_calloc(1, sizeof *x);
	if (!x || !(x->given = json_array()) ||
	    !(x->rules = cof_calloc(n ? n : 1, sizeof *x->rules)))
		goto oom;
	x->nocase = !!(flags & COF_EXCL_NOCASE);
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array_get(patterns, i);
		if (!json_is_string(p)) {
			cof_excl_free(x);
			return cof_error(err, COF_EVALIDATION,
					 "exclude pattern %zu is not a string", i + 1);
		}
		if (strlen(json_string_value(p)) != json_string_length(p)) {
			cof_excl_free(x);
			return cof_error(err, COF_EVALIDATION,
					 "exclude pattern %zu holds a NUL byte", i + 1);
		}
		if (rule_compile(json_string_value(p), x->nocase, &x->rules[i], err) < 0) {
			cof_excl_free(x);
			return -1;
		}
		x->nrules++;
		json_array_append(x->given, p);
	}
	if (defaults) {
		size_t nd = 0;
		while (default_patterns[nd])
			nd++;
		if (!(x->defaults = cof_calloc(nd, sizeof *x->defaults)))
			goto oom;
		for (size_t i = 0; i < nd; i++) {
			if (rule_compile(default_patterns[i], 0, &x->defaults[i], err) < 0) {
				cof_excl_free(x);
				return -1;
			}
			x->ndefaults++;
		}
	}
	*out = x;
	return 0;
oom:
	cof_excl_free(x);
	return cof_error(err, COF_EINTERNAL, "out of memory");
}

json_t *cof_excl_patterns(const cof_excl *x)
{
	return x ? json_deep_copy(x->given) : json_array();
}

/* Normalises `path` into `out` (COF_PATH_MAX + 1 bytes): no empty or "."
 * segments, ".." applied. 0, or -1 when it climbs above the root or is too
 * long. Sets *trailing when it ended in '/' (a folder). */
static int normalise(const char *path, char *out, int *trailing)
{
	size_t len = strlen(path), o = 0;
	const char *p = path, *end = path + len;

	if (len > COF_PATH_MAX)
		return -1;
	*trailing = len && path[len - 1] == '/';
	while (p < end) {
		const char *s = memchr(p, '/', (size_t)(end - p));
		size_t n = s ? (size_t)(s - p) : (size_t)(end - p);
		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (o == 0)
				return -1;
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else {
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p += n + 1;
	}
	out[o] = '\0';
	return 0;
}

/* Whether [lit, lit+n) occurs in [s, s+len). Paths are short and most hold
 * none of a literal's first byte: memchr skips to each candidate, where
 * glibc's memmem first builds a table for each needle (a 15-rule check of
 * a listing's 5,000 names spent 2 ms in it). */
static int has_lit(const char *s, size_t len, const char *lit, size_t n)
{
	const char *end = s + len, *p = s;

	if (n > len)
		return 0;
	while ((p = memchr(p, lit[0], (size_t)(end - p) - n + 1))) {
		if (!memcmp(p + 1, lit + 1, n - 1))
			return 1;
		if (++p > end - n)
			return 0;
	}
	return 0;
}

/* Applies `rules` in order to every leading run of path's segments: state[k]
 * ends 1 (excluded), 0 (re-included) or stays as it was. Folders are the runs
 * shorter than the path, and the path itself when is_dir. */
static void apply(const excl_rule *rules, size_t n, const char *path, int is_dir,
		  unsigned char *state)
{
	unsigned char hit[COF_GLOB_SEGS_MAX + 1];

	size_t plen = strlen(path);

	for (size_t i = 0; i < n; i++) {
		if (rules[i].litlen && !has_lit(path, plen, rules[i].lit, rules[i].litlen))
			continue; /* cannot match: a literal part of it is not in the path */
		int ns = cof_glob_match_prefixes(rules[i].glob, path, hit);
		for (int k = 1; k <= ns; k++) {
			if (!hit[k] || (rules[i].dir_only && k == ns && !is_dir))
				continue;
			state[k] = rules[i].negate ? 0 : 1;
		}
	}
}

int cof_excl_match(const cof_excl *x, const char *path, int is_dir)
{
	char norm[COF_PATH_MAX + 1], lower[COF_PATH_MAX + 1];
	unsigned char state[COF_GLOB_SEGS_MAX + 1];
	int trailing, ns = 1;

	if (!x || (!x->nrules && !x->ndefaults))
		return 0;
	if (normalise(path, norm, &trailing) < 0)
		return 1;
	if (!norm[0])
		return 0; /* the root itself */
	is_dir |= trailing;
	for (const char *c = norm; *c; c++)
		ns += *c == '/';
	memcpy(lower, norm, strlen(norm) + 1);
	fold(lower);
	if (x->ndefaults) {
		unsigned char dstate[COF_GLOB_SEGS_MAX + 1];
		memset(dstate, 0, (size_t)ns + 1);
		apply(x->defaults, x->ndefaults, lower, is_dir, dstate);
		if (memchr(dstate + 1, 1, (size_t)ns))
			return 1; /* no `!` among the defaults: any hit is final */
	}
	memset(state, 0, (size_t)ns + 1);
	apply(x->rules, x->nrules, x->nocase ? lower : norm, is_dir, state);
	for (int k = 1; k <= ns; k++)
		if (state[k])
			return 1;
	return 0;
}
