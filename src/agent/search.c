/*
 * search.c — glob and grep over the files under an agent path. Both walk the
 * volume's rows at one seq (no filesystem), match paths relative to the
 * folder searched, and cap their answers with a note. grep uses PCRE2 with
 * JIT and skips binary files (saying how many); a pattern that meets a regex
 * limit or the time budget (util/regex.h) ends it with ok:false naming the
 * limit, the file and the line.
 */
#include "util/regex.h"
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"

#define GLOB_CAP 1000
#define GREP_DEFAULT 100
#define GREP_MAX 10000
#define CONTEXT_MAX 20

/* The files under a target folder (or the file itself), with their path
 * relative to the folder checked against `glob` (NULL = all). */
/* A pattern without '/' may match the file name alone, at any depth (as
 * ripgrep's --glob and .gitignore do). */
static int glob_hits(const char *glob, const char *rel, int basename_only)
{
	const char *base = strrchr(rel, '/');

	if (basename_only && !strchr(glob, '/'))
		return cof_glob_match(glob, base ? base + 1 : rel);
	return cof_glob_match(glob, rel);
}

static int files_under(cof_store *st, const cof_agent *a, const cof_target *t,
		       const char *glob, int basename_only, cof_items *it, size_t *strip,
		       cof_err *err)
{
	char prefix[COF_PATH_MAX + 2];
	cof_view view;

	snprintf(prefix, sizeof prefix, "%s%s", t->vpath, t->vpath[0] ? "/" : "");
	*strip = strlen(prefix);
	it->glob = NULL;
	if (cof_view_open(st, a->org, t->mount->vol, NULL, &view, err) ||
	    cof_meta_list(st->meta, view.vno, view.seq, prefix, NULL, cof_items_add, it, err))
		return -1;
	if (it->over < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < it->n; i++) {
		/* Excluded files are skipped as if absent. */
		if ((!glob || glob_hits(glob, it->v[i].path + *strip, basename_only)) &&
		    !cof_agent_excluded_vpath(a, t->mount, it->v[i].path, 0))
			it->v[k++] = it->v[i];
		else
			free(it->v[i].path);
	}
	it->n = k;
	return 0;
}

static const cof_jfield glob_fields[] = {
	{"pattern", COF_JSTR, 1}, {"path", COF_JSTR, 0}, {NULL, 0, 0}};

int cof_tool_glob(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	cof_target t;
	cof_items it = {0};
	cof_buf b = COF_BUF_INIT;
	const char *pattern;
	size_t strip;
	int r;

	if (cof_json_check(args, glob_fields, err))
		return -1;
	pattern = cof_json_str(args, "pattern");
	if (pattern[0] == '/')
		return cof_error(err, COF_EVALIDATION,
				 "'pattern' is relative to 'path' (no leading '/')");
	if (cof_glob_check(pattern, err))
		return -1;
	if ((r = cof_tool_target(a, args, "path", 0, &t, out, err)))
		return r < 0 ? -1 : 0;
	if (cof_agent_excluded(a, t.apath, 1))
		return cof_tool_refuse(out, "%s is excluded: the agent's exclusions keep it out "
				       "of reach", t.apath);
	if (files_under(st, a, &t, pattern, 0, &it, &strip, err)) {
		cof_items_release(&it);
		return -1;
	}
	json_t *paths = json_array();
	char ap[COF_AGENT_PATH_MAX + 1];
	for (size_t i = 0; i < it.n && i < GLOB_CAP; i++) {
		cof_agent_path_of(t.mount, it.v[i].path, ap, sizeof ap);
		json_array_append_new(paths, json_string(ap));
		cof_buf_addf(&b, "%s\n", ap);
	}
	if (it.n == 0)
		cof_buf_addf(&b, "no files under %s match %s\n", t.apath, pattern);
	else if (it.n > GLOB_CAP)
		cof_buf_addf(&b, "[showing the first %d of %zu matches; narrow the pattern or "
			     "the path]\n", GLOB_CAP, it.n);
	*out = json_pack("{s:b, s:s, s:o, s:I, s:b}", "ok", 1, "output", b.data, "paths", paths,
			 "total", (json_int_t)it.n, "truncated", it.n > GLOB_CAP);
	cof_buf_release(&b);
	cof_items_release(&it);
	return 0;
}

/* ------------------------------------------------------------------ grep */

static const cof_jfield grep_fields[] = {
	{"pattern", COF_JSTR, 1}, {"path", COF_JSTR, 0}, {"glob", COF_JSTR, 0},
	{"ignoreCase", COF_JBOOL, 0}, {"context", COF_JINT, 0}, {"outputMode", COF_JSTR, 0},
	{"limit", COF_JINT, 0}, {NULL, 0, 0}};

enum { MODE_CONTENT, MODE_FILES, MODE_COUNT };

typedef struct grep_run {
	cof_regex rx;
	int mode;
	int64_t context, limit, shown, files_matched, skipped;
	int cut;
	int stopped;            /* a regex limit: where, in stop_path and stop_line */
	char stop_path[COF_AGENT_PATH_MAX + 1];
	int64_t stop_line;
	cof_buf out;
	json_t *matches;
} grep_run;

/* Searches one text file; appends what the mode asks for. */
static void grep_file(grep_run *g, const char *apath, const char *text, size_t len)
{
	int64_t line = 1, count = 0, last_shown = 0;
	const char *p = text, *end = text + len;
	const char *starts[CONTEXT_MAX + 1];
	size_t lens[CONTEXT_MAX + 1];
	int64_t after = 0;

	while (p < end && !g->cut) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		int hit = cof_regex_match(&g->rx, p, n);
		if (hit < 0) {
			g->stopped = g->cut = 1;
			snprintf(g->stop_path, sizeof g->stop_path, "%s", apath);
			g->stop_line = line;
			return;
		}
		if (hit) {
			count++;
			if (g->mode == MODE_CONTENT) {
				if (g->shown >= g->limit) {
					g->cut = 1;
					break;
				}
				/* Context before, not shown yet. */
				for (int64_t k = g->context; k >= 1; k--) {
					int64_t ln = line - k;
					if (ln >= 1 && ln > last_shown)
						cof_buf_addf(&g->out, "%s-%lld-%.*s\n", apath, (long long)ln,
							     (int)(lens[ln % (CONTEXT_MAX + 1)] < 500 ?
								   lens[ln % (CONTEXT_MAX + 1)] : 500),
							     starts[ln % (CONTEXT_MAX + 1)]);
				}
				cof_buf_addf(&g->out, "%s:%lld:%.*s\n", apath, (long long)line,
					     (int)(n < 500 ? n : 500), p);
				json_array_append_new(g->matches, json_pack(
					"{s:s, s:I, s:s%}", "path", apath, "line", (json_int_t)line,
					"text", p, n < 500 ? n : 500));
				g->shown++;
				last_shown = line;
				after = g->context;
			}
		} else if (after > 0 && g->mode == MODE_CONTENT) {
			cof_buf_addf(&g->out, "%s-%lld-%.*s\n", apath, (long long)line,
				     (int)(n < 500 ? n : 500), p);
			last_shown = line;
			after--;
		}
		starts[line % (CONTEXT_MAX + 1)] = p;
		lens[line % (CONTEXT_MAX + 1)] = n;
		line++;
		p += n + 1;
	}
	if (!count)
		return;
	g->files_matched++;
	if (g->mode == MODE_FILES || g->mode == MODE_COUNT) {
		if (g->shown >= g->limit) {
			g->cut = 1;
			return;
		}
		if (g->mode == MODE_FILES)
			cof_buf_addf(&g->out, "%s\n", apath);
		else
			cof_buf_addf(&g->out, "%s:%lld\n", apath, (long long)count);
		json_array_append_new(g->matches, json_pack("{s:s, s:I}", "path", apath, "count",
							    (json_int_t)count));
		g->shown++;
	}
}

static int grep_args(json_t *args, grep_run *g, cof_err *err)
{
	const char *mode = cof_json_str(args, "outputMode");

	g->limit = GREP_DEFAULT;
	if (cof_json_int(args, "limit", &g->limit) && (g->limit < 1 || g->limit > GREP_MAX))
		return cof_error(err, COF_EVALIDATION, "'limit' must be 1 to %d", GREP_MAX);
	if (cof_json_int(args, "context", &g->context) &&
	    (g->context < 0 || g->context > CONTEXT_MAX))
		return cof_error(err, COF_EVALIDATION, "'context' must be 0 to %d lines",
				 CONTEXT_MAX);
	if (!mode || !strcmp(mode, "content"))
		g->mode = MODE_CONTENT;
	else if (!strcmp(mode, "files"))
		g->mode = MODE_FILES;
	else if (!strcmp(mode, "count"))
		g->mode = MODE_COUNT;
	else
		return cof_error(err, COF_EVALIDATION,
				 "'outputMode' must be \"content\", \"files\" or \"count\"");
	const char *glob = cof_json_str(args, "glob");
	return glob ? cof_glob_check(glob, err) : 0;
}

int cof_tool_grep(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	grep_run g = {0};
	cof_target t;
	cof_items it = {0};
	size_t strip;
	int r, rc = -1;

	if (cof_json_check(args, grep_fields, err) || grep_args(args, &g, err))
		return -1;
	if (!*cof_json_str(args, "pattern"))
		return cof_error(err, COF_EVALIDATION, "'pattern' is empty");
	if (cof_regex_open(&g.rx, cof_json_str(args, "pattern"),
			   cof_json_bool(args, "ignoreCase", 0), 0, err)) {
		cof_regex_close(&g.rx);
		return -1;
	}
	g.matches = json_array();
	if ((r = cof_tool_target(a, args, "path", 0, &t, out, err))) {
		rc = r < 0 ? -1 : 0;
		goto done;
	}
	if (cof_agent_excluded(a, t.apath, 1)) {
		rc = cof_tool_refuse(out, "%s is excluded: the agent's exclusions keep it out of "
				     "reach", t.apath);
		goto done;
	}
	if (files_under(st, a, &t, cof_json_str(args, "glob"), 1, &it, &strip, err))
		goto done;
	if (it.n == 0 && t.vpath[0]) {
		/* The path may name one file. */
		cof_entry *e = calloc(1, sizeof *e);
		cof_view view;
		if (e && !cof_view_open(st, a->org, t.mount->vol, NULL, &view, err) &&
		    cof_meta_entry_get(st->meta, view.vno, t.vpath, view.seq, e, err) == 1)
			cof_items_add(&it, e);
		free(e);
	}
	for (size_t i = 0; i < it.n && !g.cut; i++) {
		unsigned char *d;
		char ap[COF_AGENT_PATH_MAX + 1];
		if (cof_content_read(st, it.v[i].sha256, it.v[i].size, &d, err))
			goto done;
		if (memchr(d, '\0', (size_t)it.v[i].size) ||
		    !cof_utf8_valid((char *)d, (size_t)it.v[i].size)) {
			g.skipped++;
		} else {
			cof_agent_path_of(t.mount, it.v[i].path, ap, sizeof ap);
			grep_file(&g, ap, (char *)d, (size_t)it.v[i].size);
		}
		free(d);
	}
	if (g.stopped) {
		char lim[96];
		rc = cof_tool_refuse(out, "grep stopped at %s on %s line %lld, before the search "
				     "ended; use a simpler pattern (nested or overlapping "
				     "repeats such as (a|aa)+ backtrack without end) or a "
				     "narrower path or glob", cof_regex_limit(&g.rx, lim, sizeof lim),
				     g.stop_path, (long long)g.stop_line);
		json_object_set_new(*out, "limit", json_string(cof_regex_limit_key(&g.rx)));
		goto done;
	}
	if (g.shown == 0)
		cof_buf_addf(&g.out, "no matches under %s\n", t.apath);
	if (g.cut)
		cof_buf_addf(&g.out, "[stopped at %lld results; narrow the pattern, path or glob, "
			     "or raise limit]\n", (long long)g.limit);
	if (g.skipped)
		cof_buf_addf(&g.out, "[%lld binary files skipped]\n", (long long)g.skipped);
	*out = json_pack("{s:b, s:s, s:O, s:I, s:b, s:I}", "ok", 1, "output", g.out.data,
			 "matches", g.matches, "filesMatched", (json_int_t)g.files_matched,
			 "truncated", g.cut, "binarySkipped", (json_int_t)g.skipped);
	rc = 0;
done:
	cof_items_release(&it);
	cof_buf_release(&g.out);
	json_decref(g.matches);
	cof_regex_close(&g.rx);
	return rc;
}
