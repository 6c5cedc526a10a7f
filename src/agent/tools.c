/*
 * tools.c — the model's file tools read, write, edit and ls. Answers are
 * {ok, output, ...}: `output` is written for a model (no version numbers);
 * the structured fields are for applications. A refusal the model can act
 * on is ok:false; bad arguments are API errors.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hooks/hooks.h"
#include "agent/agent.h"

#define READ_LINES 2000
#define READ_LINES_MAX 10000
#define LINE_CHARS 2000
#define READ_TEXT_MAX (64LL << 20)
#define BASE64_WINDOW (700 * 1024)

int cof_tool_target(const cof_agent *a, json_t *args, const char *key, int required,
		       cof_target *t, json_t **out, cof_err *err)
{
	json_t *p = json_object_get(args, key);
	cof_err e = {0};

	if (p && !json_is_string(p))
		return cof_error(err, COF_EVALIDATION, "'%s' must be a string", key);
	if (!p && required)
		return cof_error(err, COF_EVALIDATION, "'%s' is required", key);
	if (cof_agent_resolve(a, p ? json_string_value(p) : NULL, t, &e)) {
		/* Outside every mount, or excluded: the model can do something else. */
		if (e.code == COF_ENOTFOUND || e.code == COF_EFORBIDDEN) {
			cof_tool_refuse(out, "%s", e.msg);
			cof_err_clear(&e);
			return 1;
		}
		*err = e;
		return -1;
	}
	return 0;
}

/* Reads a file's bytes whole; 1 = read, 0 = absent (or a folder), -1 error. */
static int file_bytes(cof_store *st, const cof_agent *a, const cof_target *t,
		      cof_file *f, unsigned char **data, cof_err *err)
{
	cof_err e = {0};

	*data = NULL;
	if (!t->vpath[0])
		return 0;
	if (cof_file_open(st, a->org, t->mount->vol, t->vpath, NULL, f, &e)) {
		if (e.code == COF_ENOTFOUND) {
			cof_err_clear(&e);
			return 0;
		}
		*err = e;
		return -1;
	}
	if (f->size > READ_TEXT_MAX) {
		cof_file_close(f);
		return 2;
	}
	if (f->data) {
		*data = f->data;
		f->data = NULL;
		return 1;
	}
	unsigned char *buf = cof_malloc((size_t)f->size + 1);
	int64_t got = 0;
	while (buf && got < f->size) {
		size_t n = 0;
		if (cof_file_read_at(f, got, buf + got, (size_t)(f->size - got), &n, &e) || !n)
			break;
		got += (int64_t)n;
	}
	cof_file_close(f);
	if (!buf || got < f->size) {
		free(buf);
		cof_err_clear(&e);
		return cof_error(err, COF_EINTERNAL, "cannot read '%s'", t->apath);
	}
	buf[f->size] = '\0';
	*data = buf;
	return 1;
}

/* True when the target names a folder (files exist under it). */
static int is_folder(cof_store *st, const cof_agent *a, const cof_target *t)
{
	json_t *entries = NULL;
	int more = 0, yes = 0;
	cof_err e = {0};

	if (!cof_agent_children(st, a, t, 1, &entries, &more, &e))
		yes = json_array_size(entries) > 0;
	json_decref(entries);
	cof_err_clear(&e);
	return yes;
}

static int is_text(const unsigned char *d, int64_t n)
{
	return !memchr(d, '\0', (size_t)n) && cof_utf8_valid((const char *)d, (size_t)n);
}

/* ------------------------------------------------------------------ read */

static const cof_jfield read_fields[] = {
	{"path", COF_JSTR, 1}, {"offset", COF_JINT, 0}, {"limit", COF_JINT, 0},
	{"encoding", COF_JSTR, 0}, {NULL, 0, 0}};

/* The numbered lines [first, first+limit) of text, cat -n style. */
static void number_lines(const char *text, size_t len, int64_t first, int64_t limit,
			 cof_buf *b, int64_t *total, int64_t *last, int *cut_lines)
{
	int64_t line = 1;
	const char *p = text, *end = text + len;

	*last = first - 1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (line >= first && line < first + limit) {
			if (n > LINE_CHARS) {
				cof_buf_addf(b, "%6lld\t%.*s… [line cut: %zu bytes]\n", (long long)line,
					     LINE_CHARS, p, n);
				(*cut_lines)++;
			} else {
				cof_buf_addf(b, "%6lld\t%.*s\n", (long long)line, (int)n, p);
			}
			*last = line;
		}
		line++;
		p += n + 1;
	}
	*total = line - 1;
}

static int read_base64(const cof_target *t, const unsigned char *d, int64_t size,
		       int64_t offset, json_t **out)
{
	int64_t n;
	char *b64;

	if (offset > size)
		return cof_tool_refuse(out, "offset %lld is past the end of %s (%lld bytes)",
				       (long long)offset, t->apath, (long long)size);
	n = size - offset < BASE64_WINDOW ? size - offset : BASE64_WINDOW;
	b64 = cof_base64_encode(d + offset, (size_t)n, NULL);
	*out = json_pack("{s:b, s:s, s:s, s:I, s:I, s:I, s:b}", "ok", 1, "output", b64 ? b64 : "",
			 "path", t->apath, "offset", (json_int_t)offset, "bytes", (json_int_t)n,
			 "size", (json_int_t)size, "eof", offset + n >= size);
	free(b64);
	return 0;
}

int cof_tool_read(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	cof_target t;
	cof_file f;
	unsigned char *d = NULL;
	int64_t offset = 1, limit = READ_LINES, total, last;
	const char *enc;
	int r, cut = 0;

	if (cof_json_check(args, read_fields, err))
		return -1;
	enc = cof_json_str(args, "encoding");
	if (enc && strcmp(enc, "utf-8") && strcmp(enc, "base64"))
		return cof_error(err, COF_EVALIDATION, "'encoding' must be \"utf-8\" or \"base64\"");
	int b64 = enc && !strcmp(enc, "base64");
	if (cof_json_int(args, "offset", &offset) && offset < (b64 ? 0 : 1))
		return cof_error(err, COF_EVALIDATION, "'offset' must be %d or more", b64 ? 0 : 1);
	if (!cof_json_int(args, "offset", &offset))
		offset = b64 ? 0 : 1;
	if (cof_json_int(args, "limit", &limit) && (limit < 1 || limit > READ_LINES_MAX))
		return cof_error(err, COF_EVALIDATION, "'limit' must be 1 to %d lines",
				 READ_LINES_MAX);
	if ((r = cof_tool_target(a, args, "path", 1, &t, out, err)))
		return r < 0 ? -1 : 0;
	r = file_bytes(st, a, &t, &f, &d, err);
	if (r < 0)
		return -1;
	if (r == 0)
		return is_folder(st, a, &t) || !t.vpath[0]
			? cof_tool_refuse(out, "%s is a directory; use ls to see what is in it", t.apath)
			: cof_tool_refuse(out, "no such file: %s", t.apath);
	if (r == 1 && cof_is_symlink(f.content_type)) {
		/* a link is never followed: what it points at is named, not read */
		*out = json_pack("{s:b, s:s+++, s:s, s:s#, s:I}", "ok", 1, "output", t.apath,
				 " is a symbolic link to ", (const char *)d,
				 " (not followed: read that path itself)", "path", t.apath, "target",
				 (const char *)d, (int)f.size, "version", (json_int_t)f.version);
		free(d);
		return *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
	}
	if (r == 2 && cof_media_refuse_large(&t, f.content_type, f.size, out))
		return 0;
	if (r == 2)
		return cof_tool_refuse(out, "%s is %lld bytes; read it in windows with "
				       "encoding \"base64\" and offset", t.apath, (long long)f.size);
	/* What the agent was shown is what later writes are checked against, and
	 * its content stays stored until the agent is deleted. */
	if (cof_agent_seen_put(st, a, &t, f.version, f.sha256, err) ||
	    cof_meta_pin(st->meta, a->org, a->id, f.sha256, err)) {
		free(d);
		return -1;
	}
	if (b64) {
		r = read_base64(&t, d, f.size, offset, out);
		free(d);
		return r;
	}
	if ((r = cof_media_read(&t, &f, d, out, err))) { /* images, PDFs: media.c */
		free(d);
		return r < 0 ? -1 : 0;
	}
	if (!is_text(d, f.size)) {
		free(d);
		return cof_tool_refuse(out, "%s is a binary file (%s, %lld bytes); it cannot be "
				       "shown as text; read it with encoding \"base64\"", t.apath,
				       f.content_type, (long long)f.size);
	}
	cof_buf b = COF_BUF_INIT;
	number_lines((char *)d, (size_t)f.size, offset, limit, &b, &total, &last, &cut);
	free(d);
	if (f.size == 0)
		cof_buf_addf(&b, "(%s is empty)\n", t.apath);
	else if (offset > total)
		cof_buf_addf(&b, "(%s has %lld lines; offset %lld is past the end)\n", t.apath,
			     (long long)total, (long long)offset);
	else if (last < total)
		cof_buf_addf(&b, "[showing lines %lld-%lld of %lld; read on with offset=%lld]\n",
			     (long long)offset, (long long)last, (long long)total,
			     (long long)last + 1);
	if (cut)
		cof_buf_addf(&b, "[%d long lines were cut at %d bytes]\n", cut, LINE_CHARS);
	*out = json_pack("{s:b, s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:b}", "ok", 1, "output",
			 b.data ? b.data : "", "path", t.apath, "version", (json_int_t)f.version,
			 "sha256", f.sha256, "totalLines", (json_int_t)total, "startLine",
			 (json_int_t)offset, "endLine", (json_int_t)last, "truncated",
			 last < total || cut);
	cof_buf_release(&b);
	return 0;
}

/* ------------------------------------------------------------ write, edit */

/* Checks a write over an existing file against what the agent last saw.
 * 0 = go on; 1 = refused (answer made). */
static int stale_check(cof_store *st, const cof_agent *a, const cof_target *t,
		       const cof_file *cur, json_t **out, cof_err *err)
{
	int64_t seen_version;
	char seen_sha[65];
	int r = cof_agent_seen_get(st, a, t, &seen_version, seen_sha, err);

	if (r < 0)
		return -1;
	if (r == 0) {
		cof_tool_refuse(out, "%s exists and you have not read it; read it first", t->apath);
		return 1;
	}
	/* Only the version moved (same bytes written again): nothing to lose. */
	if (seen_version != cur->version && strcmp(seen_sha, cur->sha256)) {
		cof_tool_refuse(out, "%s changed since you last read it; read it again", t->apath);
		return 1;
	}
	return 0;
}

/* Writes `data` at the target if the file is still at `cond`; records it as
 * seen. A lost race or a folder in the way is a model-facing refusal. */
static int store_text(cof_store *st, const cof_agent *a, const cof_target *t,
		      const char *data, size_t len, cof_cond cond, json_t **res, json_t **out,
		      cof_err *err)
{
	cof_err e = {0};
	int created = 0;

	cond.by = &a->by;
	if (cof_file_put_bytes(st, a->org, t->mount->vol, t->vpath, data, len, NULL, cond, res,
			       &created, &e)) {
		if (e.code == COF_EPRECONDITION) {
			cof_err_clear(&e);
			cof_tool_refuse(out, "%s changed since you last read it; read it again",
					t->apath);
			return 1;
		}
		if (e.code == COF_ECONFLICT || e.code == COF_EVALIDATION) {
			cof_tool_refuse(out, "cannot write %s: %s", t->apath, e.msg);
			cof_err_clear(&e);
			return 1;
		}
		*err = e;
		return -1;
	}
	json_object_set_new(*res, "path", json_string(t->apath));
	json_object_set_new(*res, "created", json_boolean(created));
	cof_agent_own_write(st, a, t->mount->vol,
			    json_integer_value(json_object_get(*res, "seq")));
	if (cof_agent_run_wrote(st, a, t->apath, *res, err))
		return -1;
	return cof_agent_seen_put(st, a, t, json_integer_value(json_object_get(*res, "version")),
				  json_string_value(json_object_get(*res, "sha256")), err);
}

/* Opens the live file at the target: 1 found (f filled, bytes in *d if
 * want_bytes), 0 absent; answers ro/folder refusals itself (returns 2). */
static int current(cof_store *st, const cof_agent *a, const cof_target *t, cof_file *f,
		   unsigned char **d, json_t **out, cof_err *err)
{
	cof_err e = {0};

	if (cof_agent_writable(t, &e)) {
		cof_tool_refuse(out, "%s; it cannot be changed", e.msg);
		cof_err_clear(&e);
		return 2;
	}
	if (!t->vpath[0]) {
		cof_tool_refuse(out, "%s is a mount's folder, not a file", t->apath);
		return 2;
	}
	int r = file_bytes(st, a, t, f, d, &e);
	if (r < 0) {
		*err = e;
		return -1;
	}
	if (r == 2) {
		cof_tool_refuse(out, "%s is too large to edit as text", t->apath);
		return 2;
	}
	return r;
}

static const cof_jfield write_fields[] = {
	{"path", COF_JSTR, 1}, {"content", COF_JSTR, 1}, {NULL, 0, 0}};

int cof_tool_write(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	cof_target t;
	cof_file f;
	unsigned char *d = NULL;
	json_t *res = NULL;
	int r;

	if (cof_json_check(args, write_fields, err))
		return -1;
	if ((r = cof_tool_target(a, args, "path", 1, &t, out, err)))
		return r < 0 ? -1 : 0;
	if ((r = current(st, a, &t, &f, &d, out, err)) != 0 && r != 1)
		return r < 0 ? -1 : 0;
	free(d);
	cof_cond cond = {.kind = COF_COND_ABSENT, .version = 0};
	if (r == 1) {
		int s = stale_check(st, a, &t, &f, out, err);
		if (s)
			return s < 0 ? -1 : 0;
		cond = (cof_cond){.kind = COF_COND_VERSION, .version = f.version};
	}
	json_t *content = json_object_get(args, "content");
	r = store_text(st, a, &t, json_string_value(content), json_string_length(content), cond,
		       &res, out, err);
	if (r) {
		json_decref(res);
		return r < 0 ? -1 : 0;
	}
	char msg[COF_AGENT_PATH_MAX + 96];
	snprintf(msg, sizeof msg, "%s %s (%zu bytes)", json_is_true(json_object_get(res, "created"))
		 ? "created" : "wrote", t.apath, json_string_length(content));
	json_object_set_new(res, "ok", json_true());
	json_object_set_new(res, "output", json_string(msg));
	*out = res;
	return 0;
}

/* Counts non-overlapping occurrences of `needle` in `hay`. */
static size_t count_matches(const char *hay, const char *needle, size_t nlen)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += nlen)
		n++;
	return n;
}

/* For a failed edit: the lines of the file most like oldString's first line
 * (by shared words), with numbers, so the model can correct itself. */
static void nearest_lines(const char *text, const char *old, cof_buf *b)
{
	char first[256];
	const char *nl = strchr(old, '\n');
	size_t fl = nl ? (size_t)(nl - old) : strlen(old);
	int64_t best_line = 0, line = 1;
	size_t best = 0;

	snprintf(first, sizeof first, "%.*s", (int)(fl < 255 ? fl : 255), old);
	for (const char *p = text; *p; line++) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p), score = 0;
		/* Score: bytes of oldString's first line found as 3-byte pieces. */
		for (size_t i = 0; i + 3 <= strlen(first); i += 3)
			if (memmem(p, n, first + i, 3))
				score += 3;
		if (score > best) {
			best = score;
			best_line = line;
		}
		if (!e)
			break;
		p = e + 1;
	}
	if (!best_line) {
		cof_buf_adds(b, "no line of the file looks like it; read the file again\n");
		return;
	}
	cof_buf_adds(b, "the closest lines in the file are:\n");
	line = 1;
	for (const char *p = text; *p; line++) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (line >= best_line - 1 && line <= best_line + 1)
			cof_buf_addf(b, "%6lld\t%.*s\n", (long long)line, (int)(n < 500 ? n : 500), p);
		if (!e)
			break;
		p = e + 1;
	}
}

/* Replaces the first (or every) occurrence; returns the new text (malloc'd). */
static char *replace(const char *text, const char *old, const char *new_, int all)
{
	cof_buf b = COF_BUF_INIT;
	size_t ol = strlen(old);
	const char *p = text, *m;

	while ((m = strstr(p, old))) {
		cof_buf_add(&b, p, (size_t)(m - p));
		cof_buf_adds(&b, new_);
		p = m + ol;
		if (!all)
			break;
	}
	cof_buf_adds(&b, p);
	return cof_buf_detach(&b, NULL);
}

static const cof_jfield edit_fields[] = {
	{"path", COF_JSTR, 1}, {"oldString", COF_JSTR, 1}, {"newString", COF_JSTR, 1},
	{"replaceAll", COF_JBOOL, 0}, {NULL, 0, 0}};

int cof_tool_edit(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	cof_target t;
	cof_file f;
	unsigned char *d = NULL;
	json_t *res = NULL;
	const char *old = cof_json_str(args, "oldString"), *new_ = cof_json_str(args, "newString");
	int all = cof_json_bool(args, "replaceAll", 0), r;

	if (cof_json_check(args, edit_fields, err))
		return -1;
	old = cof_json_str(args, "oldString");
	new_ = cof_json_str(args, "newString");
	if (!*old)
		return cof_error(err, COF_EVALIDATION, "'oldString' is empty");
	if (!strcmp(old, new_))
		return cof_error(err, COF_EVALIDATION, "'oldString' and 'newString' are the same");
	if ((r = cof_tool_target(a, args, "path", 1, &t, out, err)))
		return r < 0 ? -1 : 0;
	if ((r = current(st, a, &t, &f, &d, out, err)) != 1)
		return r < 0 ? -1 : r == 0 ? cof_tool_refuse(out, "no such file: %s", t.apath) : 0;
	if (cof_is_symlink(f.content_type)) { /* never followed, nor edited as text */
		r = cof_tool_refuse(out, "%s is a symbolic link to %.*s; edit the file it points "
				    "at by its own path, or write %s to replace the link", t.apath,
				    (int)f.size, (const char *)d, t.apath);
		free(d);
		return r;
	}
	if ((r = stale_check(st, a, &t, &f, out, err)) || !is_text(d, f.size)) {
		free(d);
		return r < 0 ? -1 : r ? 0 : cof_tool_refuse(out, "%s is not a text file", t.apath);
	}
	size_t n = count_matches((char *)d, old, strlen(old));
	if (n != 1 && !(n > 1 && all)) {
		cof_buf b = COF_BUF_INIT;
		if (n == 0) {
			cof_buf_addf(&b, "oldString was not found in %s; ", t.apath);
			nearest_lines((char *)d, old, &b);
		} else {
			cof_buf_addf(&b, "oldString matches %zu places in %s; include more of the "
				     "surrounding lines to pick one, or set replaceAll", n, t.apath);
		}
		*out = json_pack("{s:b, s:s, s:I}", "ok", 0, "output", b.data, "matches",
				 (json_int_t)n);
		cof_buf_release(&b);
		free(d);
		return 0;
	}
	char *text = replace((char *)d, old, new_, all);
	free(d);
	if (!text)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	r = store_text(st, a, &t, text, strlen(text), (cof_cond){.kind = COF_COND_VERSION, .version = f.version},
		       &res, out, err);
	free(text);
	if (r) {
		json_decref(res);
		return r < 0 ? -1 : 0;
	}
	char msg[COF_AGENT_PATH_MAX + 96];
	snprintf(msg, sizeof msg, "edited %s: replaced %zu occurrence%s", t.apath, n,
		 n == 1 ? "" : "s");
	json_object_set_new(res, "ok", json_true());
	json_object_set_new(res, "output", json_string(msg));
	json_object_set_new(res, "replacements", json_integer((json_int_t)n));
	*out = res;
	return 0;
}

/* -------------------------------------------------------------------- ls */

static const cof_jfield ls_fields[] = {{"path", COF_JSTR, 0}, {NULL, 0, 0}};

int cof_tool_ls(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	cof_target t;
	json_t *entries, *e;
	cof_buf b = COF_BUF_INIT;
	size_t i;
	int more, r;

	if (cof_json_check(args, ls_fields, err))
		return -1;
	if ((r = cof_tool_target(a, args, "path", 0, &t, out, err)))
		return r < 0 ? -1 : 0;
	if (cof_agent_excluded(a, t.apath, 1))
		return cof_tool_refuse(out, "%s is excluded: the agent's exclusions keep it out "
				       "of reach", t.apath);
	size_t hidden;
	if (cof_agent_children_hidden(st, a, &t, 1000, &entries, &more, &hidden, err))
		return -1;
	if (json_array_size(entries) == 0) {
		json_decref(entries);
		cof_file f;
		cof_err e2 = {0};
		if (t.vpath[0] && !cof_file_open(st, a->org, t.mount->vol, t.vpath, NULL, &f, &e2)) {
			cof_file_close(&f);
			return cof_tool_refuse(out, "%s is a file, not a folder; use read", t.apath);
		}
		cof_err_clear(&e2);
		if (t.vpath[0] && strcmp(t.apath, t.mount->path) && !hidden)
			return cof_tool_refuse(out, "no such folder: %s", t.apath);
		*out = json_pack("{s:b, s:s, s:s, s:[]}", "ok", 1, "output", "(empty folder)",
				 "path", t.apath, "entries");
		return 0;
	}
	json_array_foreach(entries, i, e) {
		if (!strcmp(cof_json_str(e, "type"), "dir"))
			cof_buf_addf(&b, "%s/\n", cof_json_str(e, "name"));
		else
			cof_buf_addf(&b, "%s (%lld bytes)\n", cof_json_str(e, "name"),
				     (long long)json_integer_value(json_object_get(e, "size")));
	}
	if (more)
		cof_buf_addf(&b, "[showing the first %zu entries]\n", json_array_size(entries));
	*out = json_pack("{s:b, s:s, s:s, s:o, s:b}", "ok", 1, "output", b.data, "path", t.apath,
			 "entries", entries, "truncated", more);
	cof_buf_release(&b);
	return 0;
}

/* ---------------------------------------------------------- present_file */

static const cof_jfield present_fields[] = {
	{"path", COF_JSTR, 1}, {"caption", COF_JSTR, 0}, {NULL, 0, 0}};

/* Shows a file to the user: a signed link to it, recorded in the run. */
int cof_tool_present(cof_store *st, const cof_agent *a, json_t *args, json_t **out,
		     cof_err *err)
{
	cof_target t;
	cof_file f;
	json_t *link = NULL;
	const char *caption = cof_json_str(args, "caption");
	cof_err e = {0};
	int r;

	if (cof_json_check(args, present_fields, err))
		return -1;
	if (caption && strlen(caption) > 1000)
		return cof_error(err, COF_EVALIDATION, "'caption' is over 1000 bytes");
	if ((r = cof_tool_target(a, args, "path", 1, &t, out, err)))
		return r < 0 ? -1 : 0;
	if (!t.vpath[0] || cof_file_open(st, a->org, t.mount->vol, t.vpath, NULL, &f, &e)) {
		if (e.code && e.code != COF_ENOTFOUND) {
			*err = e;
			return -1;
		}
		cof_err_clear(&e);
		return cof_tool_refuse(out, "no such file: %s", t.apath);
	}
	/* The link serves the bytes as presented, even after the file changes. */
	r = cof_link_create_pinned(st, a->org, t.mount->vol, t.vpath, f.sha256, f.content_type,
				   f.size, f.version, &link, err);
	if (r) {
		cof_file_close(&f);
		return -1;
	}
	const char *url = json_string_value(json_object_get(link, "url"));
	if (cof_meta_pin(st->meta, a->org, a->id, f.sha256, err)) {
		cof_file_close(&f);
		json_decref(link);
		return -1;
	}
	cof_run_item it = {.kind = "presented", .path = t.apath, .version = f.version,
			   .size = f.size, .ctype = f.content_type, .caption = caption,
			   .url = url};
	if (cof_agent_run_add(st, a, &it, err)) {
		cof_file_close(&f);
		json_decref(link);
		return -1;
	}
	cof_agent_event_push(st, a, "file_presented",
			     json_pack("{s:s, s:s, s:s, s:s, s:I}", "path", t.apath, "caption",
				       caption ? caption : "", "url", url, "contentType",
				       f.content_type, "size", (json_int_t)f.size));
	cof_hooks_emit(st, a->org, "file.presented", NULL, a->id,
		       json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "agent", a->id, "path", t.apath,
				 "caption", caption ? caption : "", "url", url, "contentType",
				 f.content_type, "size", (json_int_t)f.size));
	char msg[COF_AGENT_PATH_MAX + 64];
	snprintf(msg, sizeof msg, "presented %s to the user", t.apath);
	*out = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I}", "ok", 1, "output", msg, "path",
			 t.apath, "caption", caption ? caption : "", "url", url, "contentType",
			 f.content_type, "size", (json_int_t)f.size);
	cof_file_close(&f);
	json_decref(link);
	return 0;
}

/* ------------------------------------------------------------------ move */

static const cof_jfield move_fields[] = {
	{"from", COF_JSTR, 1}, {"to", COF_JSTR, 1}, {"overwrite", COF_JBOOL, 0}, {NULL, 0, 0}};

/* Moves a file. Within one volume it is the volume's move: one change, no
 * bytes copied. Across two volumes it is a copy into the destination (one
 * change there, by reference: no bytes copied) then the source's removal at
 * the version checked (one change there): not atomic across the two; when
 * the removal fails (the source changed in between) the copy stays and the
 * answer says both are there. The source must have been read and be
 * unchanged since, as for write; so must a destination replaced with
 * overwrite. */
int cof_tool_move(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	cof_target from, to;
	cof_file f = {0}, g = {0};
	unsigned char *d = NULL;
	json_t *res = NULL;
	cof_err e = {0};
	int r, overwrite;

	if (cof_json_check(args, move_fields, err))
		return -1;
	overwrite = json_is_true(json_object_get(args, "overwrite"));
	if ((r = cof_tool_target(a, args, "from", 1, &from, out, err)) ||
	    (r = cof_tool_target(a, args, "to", 1, &to, out, err)))
		return r < 0 ? -1 : 0;
	if (!strcmp(from.apath, to.apath))
		return cof_tool_refuse(out, "from and to are the same path (%s)", from.apath);
	/* the source: a file that can be removed, read and unchanged since */
	if ((r = current(st, a, &from, &f, &d, out, err)) != 1) {
		if (r == 0)
			return is_folder(st, a, &from)
				? cof_tool_refuse(out, "%s is a folder; move moves one file at a "
						  "time", from.apath)
				: cof_tool_refuse(out, "no such file: %s", from.apath);
		return r < 0 ? -1 : 0;
	}
	free(d);
	if ((r = stale_check(st, a, &from, &f, out, err)))
		return r < 0 ? -1 : 0;
	/* the destination: writable; absent unless overwrite, then read too */
	if ((r = current(st, a, &to, &g, &d, out, err)) != 0 && r != 1)
		return r < 0 ? -1 : 0;
	free(d);
	if (r == 0 && is_folder(st, a, &to))
		return cof_tool_refuse(out, "%s is a folder; give the new file's whole path",
				       to.apath);
	cof_cond tocond = {.kind = COF_COND_ABSENT, .version = 0, .by = &a->by};
	if (r == 1 && !overwrite)
		return cof_tool_refuse(out, "%s exists; give another path, or overwrite: true to "
				       "replace it", to.apath);
	if (r == 1) {
		if ((r = stale_check(st, a, &to, &g, out, err)))
			return r < 0 ? -1 : 0;
		tocond = (cof_cond){.kind = COF_COND_VERSION, .version = g.version, .by = &a->by};
	}
	int same = !strcmp(from.mount->vol, to.mount->vol), left = 0;
	if (same) {
		json_t *body = json_pack("{s:s, s:s, s:b}", "from", from.vpath, "to", to.vpath,
					 "overwrite", overwrite);
		json_t *mv = NULL;
		r = cof_file_move(st, a->org, from.mount->vol, body, &a->by, &mv, &e);
		json_decref(body);
		json_decref(mv);
		/* the moved file keeps its content: its new version is read back */
		if (!r && (r = cof_file_open(st, a->org, to.mount->vol, to.vpath, NULL, &g, &e)) == 0) {
			res = json_pack("{s:I, s:s, s:I}", "version", (json_int_t)g.version, "sha256",
					g.sha256, "size", (json_int_t)g.size);
			cof_file_close(&g);
		}
	} else {
		r = cof_file_copy(st, a->org, from.mount->vol, from.vpath, to.mount->vol, to.vpath,
				  NULL, tocond, &res, &e);
		if (!r) {
			json_t *rm = NULL;
			cof_err e2 = {0};
			cof_agent_own_write(st, a, to.mount->vol,
					    json_integer_value(json_object_get(res, "seq")));
			if (cof_file_remove(st, a->org, from.mount->vol, from.vpath,
					    (cof_cond){.kind = COF_COND_VERSION, .version = f.version,
					     .by = &a->by}, &rm, &e2)) {
				left = 1; /* changed meanwhile: the copy stays, and so does it */
				cof_err_clear(&e2);
			} else {
				cof_agent_own_write(st, a, from.mount->vol,
						    json_integer_value(json_object_get(rm, "seq")));
			}
			json_decref(rm);
		}
	}
	if (r) {
		json_decref(res);
		if (e.code == COF_EPRECONDITION || e.code == COF_ECONFLICT ||
		    e.code == COF_ENOTFOUND || e.code == COF_EVALIDATION) {
			cof_tool_refuse(out, "cannot move %s to %s: %s", from.apath, to.apath, e.msg);
			cof_err_clear(&e);
			return 0;
		}
		*err = e;
		return -1;
	}
	json_object_set_new(res, "path", json_string(to.apath));
	if (cof_agent_run_wrote(st, a, to.apath, res, err) ||
	    cof_agent_seen_put(st, a, &to, json_integer_value(json_object_get(res, "version")),
			       json_string_value(json_object_get(res, "sha256")), err)) {
		json_decref(res);
		return -1;
	}
	cof_buf msg = COF_BUF_INIT;
	if (left)
		cof_buf_addf(&msg, "copied %s to %s, but %s changed meanwhile and was left in "
			     "place: both exist now", from.apath, to.apath, from.apath);
	else
		cof_buf_addf(&msg, "moved %s to %s", from.apath, to.apath);
	*out = json_pack("{s:b, s:s, s:s, s:s, s:O, s:O, s:b, s:b}", "ok", !left, "output", msg.data,
			 "from", from.apath, "to", to.apath, "version",
			 json_object_get(res, "version"), "sha256", json_object_get(res, "sha256"),
			 "sameVolume", same, "sourceRemoved", !left);
	cof_buf_release(&msg);
	json_decref(res);
	return *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
}
