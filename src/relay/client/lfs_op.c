/*
 * lfs_op.c — one operation of the relay wire protocol with the rules the
 * client enforces itself (localfs.h): mode, exclusions, protected paths, the
 * size limit and the write guard, in that order, before anything reaches the
 * folder; and the short unified diff the supervised prompt shows.
 */
#include <stdlib.h>
#include <string.h>
#include "relay/client/lfs_int.h"

/* "1.2 KB", "512 B", "3.4 MB" for the log lines. */
static void lfs_human(int64_t n, char *out, size_t outsz)
{
	if (n < 1024)
		snprintf(out, outsz, "%lld B", (long long)n);
	else if (n < 1024 * 1024)
		snprintf(out, outsz, "%.1f KB", n / 1024.0);
	else
		snprintf(out, outsz, "%.1f MB", n / (1024.0 * 1024.0));
}

/* A string field of the op, or NULL when absent; *len its byte length (JSON
 * strings may hold NUL). A field of another type is COF_EVALIDATION. */
static int op_str(json_t *op, const char *name, const char **out, size_t *len, cof_err *err)
{
	json_t *v = json_object_get(op, name);

	*out = NULL;
	if (len)
		*len = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return cof_error(err, COF_EVALIDATION, "'%s' must be a string", name);
	*out = json_string_value(v);
	if (len)
		*len = json_string_length(v);
	return 0;
}

/* The op's path checked (see cof_lfs_path). */
static int op_path(json_t *op, int allow_root, const char **out, cof_err *err)
{
	const char *p;
	size_t n;

	if (op_str(op, "path", &p, &n, err))
		return -1;
	if (!p && !allow_root)
		return cof_error(err, COF_EVALIDATION, "'path' is missing");
	return cof_lfs_path(p, n, allow_root, out, err);
}

/* The bytes a write_file carries: `content` as text (encoding absent or
 * "utf-8") or base64. *data malloc'd. */
static int op_content(json_t *op, unsigned char **data, size_t *len, cof_err *err)
{
	const char *c, *enc;
	size_t n;

	if (op_str(op, "content", &c, &n, err) || op_str(op, "encoding", &enc, NULL, err))
		return -1;
	if (!c)
		return cof_error(err, COF_EVALIDATION, "'content' is missing");
	if (!enc || !strcmp(enc, "utf-8")) {
		if (!(*data = cof_malloc(n + 1)))
			return cof_error(err, COF_EINTERNAL, "out of memory");
		memcpy(*data, c, n);
		(*data)[n] = '\0';
		*len = n;
		return 0;
	}
	if (strcmp(enc, "base64"))
		return cof_error(err, COF_EVALIDATION,
				 "'encoding' must be \"utf-8\" or \"base64\", not '%.40s'", enc);
	if (cof_base64_decode(c, n, data, len))
		return cof_error(err, COF_EVALIDATION, "'content' is not valid base64");
	return 0;
}

/* The path as an event carries it: at most EVENT_PATH_MAX bytes (cut on a
 * UTF-8 boundary), as cofferd refuses event data over 4 KiB. */
#define EVENT_PATH_MAX 1024
static json_t *event_path(const char *path)
{
	size_t n = strlen(path);

	if (n > EVENT_PATH_MAX) {
		n = EVENT_PATH_MAX;
		while (n > 0 && ((unsigned char)path[n] & 0xC0) == 0x80)
			n--;
	}
	return json_stringn(path, n);
}

static void op_event(const cof_lfs_rules *r, const char *type, json_t *data)
{
	if (r->hooks.event && data)
		r->hooks.event(r->hooks.ud, type, data);
	json_decref(data);
}

/* Asks the user (supervised mode). 0 = go ahead, -1 = refused (err set). */
static int op_confirm(cof_lfs *fs, const cof_lfs_rules *r, const char *path,
		      const unsigned char *d, size_t n, cof_err *err)
{
	unsigned char *old = NULL;
	size_t oldlen = 0;
	int exists = 0, yes;

	if (!r->hooks.confirm)
		return cof_error(err, COF_EFORBIDDEN, "supervised mode and no terminal to ask "
				 "the user; the write was refused");
	if (cof_lfs_slurp(fs, path, &old, &oldlen, &exists, err))
		return -1;
	yes = r->hooks.confirm(r->hooks.ud, path, old, oldlen, exists, d, n);
	free(old);
	if (yes != 1)
		return cof_error(err, COF_EFORBIDDEN, "the user refused the write to '%.300s'",
				 path);
	return 0;
}

static int op_write(cof_lfs *fs, const cof_lfs_rules *r, json_t *op, json_t **result,
		    char *summary, size_t summarysz, cof_err *err)
{
	const char *path;
	unsigned char *d = NULL;
	size_t n = 0;
	int rc = -1;
	char hs[32];

	if (op_path(op, 0, &path, err))
		return -1;
	snprintf(summary, summarysz, "write refused  %s", path);
	if (op_content(op, &d, &n, err))
		return -1;
	/* the server's own check (policy.h), made again here */
	cof_write_rules w = {.mode = r->mode, .excl = fs->excl, .prot = r->protect,
			     .file_bytes = fs->limits.file_bytes, .guard = r->guard};
	cof_guard_hit hit = {0};
	switch (cof_write_check(&w, path, d, n, &hit, err)) {
	case COF_WC_OK:
		break;
	case COF_WC_PROTECTED:
		snprintf(summary, summarysz, "write refused  %s  (protected)", path);
		goto done;
	case COF_WC_GUARD:
		op_event(r, "write_blocked", json_pack("{s:o, s:s, s:s}", "path",
						       event_path(path), "rule", hit.rule,
						       "category", hit.category));
		snprintf(summary, summarysz, "write blocked  %s  %s", path, hit.rule);
		goto done;
	default:
		goto done;
	}
	if (r->mode == COF_MODE_SUPERVISED && op_confirm(fs, r, path, d, n, err)) {
		snprintf(summary, summarysz, "write refused by you  %s", path);
		goto done;
	}
	if (cof_lfs_write(fs, path, d, n, result, err)) {
		if (err->code == COF_EBLOCKED) { /* through a link: the guard's block */
			op_event(r, "write_blocked",
				 json_pack("{s:o, s:s, s:s}", "path", event_path(path), "rule",
					   "path-symlink", "category", "path"));
			snprintf(summary, summarysz, "write blocked  %s  path-symlink", path);
		}
		goto done;
	}
	if (r->mode == COF_MODE_SUPERVISED)
		op_event(r, "accept", json_pack("{s:o}", "path", event_path(path)));
	lfs_human((int64_t)n, hs, sizeof hs);
	snprintf(summary, summarysz, "write  %s  %s", path, hs);
	rc = 0;
done:
	free(d);
	return rc;
}

int cof_lfs_op(cof_lfs *fs, const cof_lfs_rules *rules, json_t *op, json_t **result,
	       char *summary, size_t summarysz, cof_err *err)
{
	const char *name, *path, *pattern, *glob;
	char scratch[8], hs[32];
	json_int_t max = 0;

	if (!summary)
		summary = scratch, summarysz = sizeof scratch;
	snprintf(summary, summarysz, "bad operation");
	*result = NULL;
	if (!json_is_object(op))
		return cof_error(err, COF_EVALIDATION, "an operation must be a JSON object");
	if (op_str(op, "op", &name, NULL, err))
		return -1;
	if (!name)
		return cof_error(err, COF_EVALIDATION, "'op' is missing");
	snprintf(summary, summarysz, "%.20s refused", name);
	if (!strcmp(name, "read_file")) {
		if (op_path(op, 0, &path, err))
			return -1;
		snprintf(summary, summarysz, "read refused  %s", path);
		if (cof_lfs_read(fs, path, result, err))
			return -1;
		lfs_human(json_integer_value(json_object_get(*result, "size")), hs, sizeof hs);
		snprintf(summary, summarysz, "read  %s  %s", path, hs);
		return 0;
	}
	if (!strcmp(name, "write_file"))
		return op_write(fs, rules, op, result, summary, summarysz, err);
	if (!strcmp(name, "list_directory")) {
		if (op_path(op, 1, &path, err))
			return -1;
		snprintf(summary, summarysz, "list refused  %s", path[0] ? path : ".");
		if (cof_lfs_list(fs, path, result, err))
			return -1;
		snprintf(summary, summarysz, "list  %s  %zu entries", path[0] ? path : ".",
			 json_array_size(json_object_get(*result, "entries")));
		return 0;
	}
	if (!strcmp(name, "search_files")) {
		json_t *m = json_object_get(op, "maxResults");
		if (op_path(op, 1, &path, err) || op_str(op, "pattern", &pattern, NULL, err) ||
		    op_str(op, "glob", &glob, NULL, err))
			return -1;
		if (m && !json_is_null(m)) {
			if (!json_is_integer(m) || (max = json_integer_value(m)) < 1)
				return cof_error(err, COF_EVALIDATION,
						 "'maxResults' must be a positive integer");
		}
		snprintf(summary, summarysz, "search refused  %.200s", pattern ? pattern : "");
		if (cof_lfs_search(fs, path, pattern, glob, max, result, err))
			return -1;
		snprintf(summary, summarysz, "search  %.200s  %zu results%s", pattern,
			 json_array_size(json_object_get(*result, "results")),
			 json_is_true(json_object_get(*result, "truncated")) ? " (truncated)" : "");
		return 0;
	}
	return cof_error(err, COF_EVALIDATION, "unknown op '%.40s'", name);
}

/* ------------------------------------------------------------------ diff */

typedef struct lfs_lines {
	const char **p;
	size_t *n;
	size_t count;
} lfs_lines;

/* Splits text into lines (without their '\n'); a last line without '\n'
 * counts. */
static int lfs_split(const char *t, size_t len, lfs_lines *l)
{
	size_t cap = 16;
	const char *p = t, *end = t + len;

	l->count = 0;
	l->p = cof_malloc(cap * sizeof *l->p);
	l->n = cof_malloc(cap * sizeof *l->n);
	if (!l->p || !l->n)
		return -1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (l->count == cap) {
			cap *= 2;
			const char **np = cof_realloc(l->p, cap * sizeof *np);
			if (np)
				l->p = np;
			size_t *nn = cof_realloc(l->n, cap * sizeof *nn);
			if (nn)
				l->n = nn;
			if (!np || !nn)
				return -1;
		}
		l->p[l->count] = p;
		l->n[l->count++] = n;
		p += n + 1;
	}
	return 0;
}

static int lfs_same(const lfs_lines *a, size_t i, const lfs_lines *b, size_t j)
{
	return a->n[i] == b->n[j] && !memcmp(a->p[i], b->p[j], a->n[i]);
}

int cof_lfs_diff(const char *path, const char *old, size_t oldlen, const char *neu,
		 size_t newlen, int max_lines, cof_buf *out)
{
	lfs_lines a = {0}, b = {0};
	size_t pre = 0, suf = 0, ctx = 3, shown = 0, total;
	int rc = -1;

	if (lfs_split(old ? old : "", old ? oldlen : 0, &a) || lfs_split(neu, newlen, &b))
		goto done;
	while (pre < a.count && pre < b.count && lfs_same(&a, pre, &b, pre))
		pre++;
	while (suf < a.count - pre && suf < b.count - pre &&
	       lfs_same(&a, a.count - 1 - suf, &b, b.count - 1 - suf))
		suf++;
	size_t s = pre > ctx ? pre - ctx : 0;          /* first line of the hunk */
	size_t ae = a.count - suf, be = b.count - suf; /* ends of the changes */
	size_t tail = suf > ctx ? ctx : suf;
	size_t acount = ae + tail - s, bcount = be + tail - s;

	if (cof_buf_addf(out, "--- %s%s\n+++ b/%s\n", old ? "a/" : "/dev/null",
			 old ? path : "", path) ||
	    cof_buf_addf(out, "@@ -%zu,%zu +%zu,%zu @@\n", acount ? s + 1 : s, acount,
			 bcount ? s + 1 : s, bcount))
		goto done;
	total = (pre - s) + (ae - pre) + (be - pre) + tail;
#define LINE(sign, L, i)                                                                    \
	do {                                                                                \
		if (shown++ < (size_t)max_lines &&                                          \
		    cof_buf_addf(out, "%c%.*s\n", sign, (int)((L).n[i] > 300 ? 300 : (L).n[i]), \
				 (L).p[i]))                                                 \
			goto done;                                                          \
	} while (0)
	for (size_t i = s; i < pre; i++)
		LINE(' ', a, i);
	for (size_t i = pre; i < ae; i++)
		LINE('-', a, i);
	for (size_t i = pre; i < be; i++)
		LINE('+', b, i);
	for (size_t i = ae; i < ae + tail; i++)
		LINE(' ', a, i);
#undef LINE
	if (total > (size_t)max_lines &&
	    cof_buf_addf(out, "... %zu more lines\n", total - (size_t)max_lines))
		goto done;
	rc = 0;
done:
	free(a.p);
	free(a.n);
	free(b.p);
	free(b.n);
	return rc;
}
