/*
 * prompt.c — what the model sees (API.md "What the model sees: prompt"): a
 * user message with its files, as content blocks of the Anthropic Messages
 * API or content parts of OpenAI's Chat Completions.
 *
 * A prompt is checked whole first (fields, limits, every path resolved, every
 * inline file decoded and compared with what its request already saved), then
 * its inline files are saved as uploads (uploads.c: same place, same limits),
 * then it is recorded. The record keeps references, never bytes: each file's
 * agent path, type, size, version and SHA-256, and the kind its first bytes
 * told (image, PDF or neither); the content itself is pinned to the agent, so
 * a file overwritten or deleted later still shows as it was.
 *
 * Records are small JSON files in the agent's own conversations volume
 * (subjects row "#conversations"): prompts/{requestId}, and for a prompt
 * of a conversation the same content at conversations/{id}/{requestId}
 * (stored once). A prompt for a subject (`user`) is the subject's own: its
 * records are in the subject's conversations volume, and its inline files
 * are kept there too, as its attachments (uploads.c), never on a volume its
 * calls or another subject's reach but at its /attachments. A prompt's place in its conversation is the version of that
 * file. A record found for the request id makes the call a retry: nothing is
 * written and the answer is rebuilt from it.
 *
 * Rendering, against the request's budget, is prompt_render.c.
 */
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"

#define PROMPT_FILES_MAX 20
#define PROMPT_INLINE_MAX (4LL << 20)
#define PROMPT_TEXT_MAX (1LL << 20)
#define CONV_ID_MAX 128
#define CONV_PROMPTS_MAX 1000
#define CONV_TEXT_MAX (24LL << 20) /* a rebuilt request's text, newest first */
#define CONV_ROW "#conversations"

/* One entry of `files` as asked, then resolved. */
typedef struct pentry {
	const char *path;       /* {path}: as given, else NULL */
	const char *name;       /* inline: the name */
	const char *ctype;      /* inline: contentType or NULL */
	unsigned char *data;    /* inline: decoded bytes (owned) */
	size_t len;
	char sha[65];           /* inline: of data */
	cof_target t;           /* where it is (inline: its upload) */
	int exists;             /* inline: already saved with these bytes */
	char url_type[128];     /* inline given as a data: URL: its media type */
} pentry;

typedef struct preq {
	const char *text, *rid, *conv;
	int openai;
	pentry *e;
	size_t n;
} preq;

/* A string field of a record, "" when absent (records are ours, but read back
 * from a volume anyone in the organization may write). */
static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static void preq_release(preq *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->e[i].data);
	free(r->e);
}

static const cof_jfield prompt_fields[] = {
	{"text", COF_JSTR, 1}, {"requestId", COF_JSTR, 1}, {"files", COF_JARR, 0},
	{"conversation", COF_JSTR, 0}, {"format", COF_JSTR, 0}, {"user", COF_JSTR, 0},
	{NULL, 0, 0}};
static const cof_jfield path_fields[] = {{"path", COF_JSTR, 1}, {NULL, 0, 0}};
static const cof_jfield inline_fields[] = {
	{"name", COF_JSTR, 1}, {"data", COF_JSTR, 1}, {"contentType", COF_JSTR, 0},
	{NULL, 0, 0}};

/* `format`: NULL or "anthropic" = 0, "openai" = 1, else -1 with err. */
static int format_of(const char *f, cof_err *err)
{
	if (!f || !strcmp(f, "anthropic"))
		return 0;
	if (!strcmp(f, "openai"))
		return 1;
	return cof_error(err, COF_EVALIDATION, "'format' must be \"anthropic\" or \"openai\"");
}

/* A conversation id: 1..128 bytes of [A-Za-z0-9._@-], not "." or "..". */
static int conv_check(const char *c, cof_err *err)
{
	size_t n = strlen(c);

	if (n == 0 || n > CONV_ID_MAX)
		return cof_error(err, COF_EVALIDATION, "conversation id must be 1 to %d bytes "
				 "(it is %zu)", CONV_ID_MAX, n);
	if (!strcmp(c, ".") || !strcmp(c, ".."))
		return cof_error(err, COF_EVALIDATION, "conversation id must not be '.' or '..'");
	for (size_t i = 0; i < n; i++)
		if (!((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= 'A' && c[i] <= 'Z') ||
		      (c[i] >= '0' && c[i] <= '9') || strchr("._@-", c[i])))
			return cof_error(err, COF_EVALIDATION, "conversation id may hold only "
					 "letters, digits, '.', '_', '@' and '-'");
	return 0;
}

/* Reads files[i] into e: {path} or {name, data, contentType?}; *inline_total
 * grows by the decoded size. */
static int entry_parse(json_t *f, size_t i, pentry *e, int64_t *inline_total, cof_err *err)
{
	cof_err e2 = {0};

	if (!json_is_object(f))
		return cof_error(err, COF_EVALIDATION, "files[%zu] must be an object: {path} or "
				 "{name, data, contentType?}", i);
	if (json_object_get(f, "path")) {
		if (cof_json_check(f, path_fields, &e2))
			goto bad;
		e->path = cof_json_str(f, "path");
		return 0;
	}
	if (cof_json_check(f, inline_fields, &e2))
		goto bad;
	e->name = cof_json_str(f, "name");
	e->ctype = cof_json_str(f, "contentType");
	if (e->ctype && cof_media_type_check(e->ctype, "contentType", &e2))
		goto bad;
	const char *d = cof_json_str(f, "data");
	if (cof_is_data_url(d, strlen(d))) { /* seed 003's data_url attachments */
		const char *why = NULL;
		if (cof_data_url_decode(d, strlen(d), e->url_type, sizeof e->url_type, &e->data,
					&e->len, &why))
			return cof_error(err, COF_EVALIDATION, "files[%zu] ('%.100s'): 'data' is a "
					 "data: URL, but %s", i, e->name, why);
		if (!e->ctype) {
			if (cof_media_type_check(e->url_type, "the data: URL's media type", &e2)) {
				cof_error(err, e2.code, "files[%zu] ('%.100s'): %s", i, e->name,
					  e2.msg);
				cof_err_clear(&e2);
				return -1;
			}
			e->ctype = e->url_type;
		}
	} else if (cof_base64_decode(d, strlen(d), &e->data, &e->len))
		return cof_error(err, COF_EVALIDATION, "files[%zu] ('%.100s'): 'data' is not "
				 "valid base64 or a data: URL", i, e->name);
	*inline_total += (int64_t)e->len;
	return cof_sha256_hex(e->data, e->len, e->sha)
		? cof_error(err, COF_EINTERNAL, "cannot hash files[%zu]", i) : 0;
bad:
	cof_error(err, e2.code, "files[%zu]: %s", i, e2.msg);
	cof_err_clear(&e2);
	return -1;
}

/* Checks the body and reads it into r (everything borrowed from `body`
 * except the decoded inline bytes). */
static int preq_parse(json_t *body, preq *r, cof_err *err)
{
	json_t *files, *f;
	int64_t inline_total = 0;
	const char *ok;
	size_t i;

	if (cof_json_check(body, prompt_fields, err))
		return -1;
	r->text = cof_json_str(body, "text");
	r->rid = cof_json_str(body, "requestId");
	r->conv = cof_json_str(body, "conversation");
	if ((r->openai = format_of(cof_json_str(body, "format"), err)) < 0)
		return -1;
	if (strlen(r->text) > PROMPT_TEXT_MAX)
		return cof_error(err, COF_ETOOLARGE, "text is %zu bytes; the limit is %lld (1 MiB)",
				 strlen(r->text), PROMPT_TEXT_MAX);
	if (strchr(r->rid, '/'))
		return cof_error(err, COF_EVALIDATION, "request id '%.100s' must not contain '/'",
				 r->rid);
	if (cof_path_check(r->rid, strlen(r->rid), "request id", &ok, err) ||
	    (r->conv && conv_check(r->conv, err)))
		return -1;
	files = json_object_get(body, "files");
	/* An empty message is refused by both providers (no blocks at all). */
	if (!r->text[0] && !json_array_size(files))
		return cof_error(err, COF_EVALIDATION, "a prompt needs text or at least one file");
	if (json_array_size(files) > PROMPT_FILES_MAX)
		return cof_error(err, COF_EVALIDATION, "files has %zu entries; the limit is %d",
				 json_array_size(files), PROMPT_FILES_MAX);
	r->e = cof_calloc(json_array_size(files) + 1, sizeof *r->e);
	json_array_foreach(files, i, f) {
		r->n = i + 1;
		if (entry_parse(f, i, &r->e[i], &inline_total, err))
			return -1;
		for (size_t j = 0; r->e[i].name && j < i; j++)
			if (r->e[j].name && !strcmp(r->e[j].name, r->e[i].name))
				return cof_error(err, COF_EVALIDATION, "files[%zu]: the name '%.100s' "
						 "is given twice", i, r->e[i].name);
	}
	if (inline_total > PROMPT_INLINE_MAX)
		return cof_error(err, COF_ETOOLARGE, "the inline files are %lld bytes in all; the "
				 "limit is %lld (4 MiB)", (long long)inline_total, PROMPT_INLINE_MAX);
	return 0;
}

/* ------------------------------------------------------------ records */

/* The entry at `path` of volume `vol`: 1 = *e filled, 0 = absent. */
static int entry_at(cof_store *st, const char *org, const char *vol, const char *path,
		    cof_entry *e, int64_t *vno, cof_err *err)
{
	cof_view v;

	if (cof_view_open(st, org, vol, NULL, &v, err))
		return -1;
	if (vno)
		*vno = v.vno;
	return cof_meta_entry_get(st->meta, v.vno, path, -1, e, err);
}

/* A record's JSON from its content. */
static int record_load(cof_store *st, const char *sha, int64_t size, json_t **rec,
		       cof_err *err)
{
	unsigned char *d = NULL;
	json_error_t je;

	if (cof_content_read(st, sha, size, &d, err))
		return -1;
	*rec = json_loadb((const char *)d, (size_t)size, JSON_REJECT_DUPLICATES, &je);
	free(d);
	if (!cof_prompt_record_ok(*rec)) {
		json_decref(*rec);
		*rec = NULL;
		return cof_error(err, COF_EINTERNAL, "prompt record %.12s is damaged", sha);
	}
	return 0;
}

/* The record of request `rid`: 1 = *rec, 0 = none yet. */
static int record_get(cof_store *st, const char *org, const char *vol, const char *rid,
		      json_t **rec, cof_err *err)
{
	cof_entry *e = cof_malloc(sizeof *e);
	char path[COF_PATH_MAX + 1];
	int r;

	snprintf(path, sizeof path, "prompts/%s", rid);
	r = entry_at(st, org, vol, path, e, NULL, err);
	if (r == 1)
		r = record_load(st, e->sha256, e->size, rec, err) ? -1 : 1;
	free(e);
	return r;
}

/* Writes `rec` at `path` unless something is there: 0 written, 1 there. */
static int record_put(cof_store *st, const char *org, const char *vol, const char *path,
		      json_t *rec, const cof_by *by, cof_err *err)
{
	cof_cond absent = {.kind = COF_COND_ABSENT, .version = 0, .by = by};
	char *text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *out = NULL;
	cof_err e2 = {0};
	int created, rc;

	if (!text)
		return cof_error(err, COF_EINTERNAL, "cannot write the prompt record");
	rc = cof_file_put_bytes(st, org, vol, path, text, strlen(text), "application/json",
				absent, &out, &created, &e2);
	free(text);
	json_decref(out);
	if (rc && e2.code == COF_EPRECONDITION) {
		cof_err_clear(&e2);
		return 1;
	}
	if (rc)
		*err = e2;
	return rc;
}

static int count_entry(void *ctx, const cof_entry *e)
{
	(void)e;
	(*(int64_t *)ctx)++;
	return 0;
}

/* Refuses (409) a conversation that holds its limit of prompts already. */
static int conv_room(cof_store *st, const char *org, const char *vol, const char *conv,
		     cof_err *err)
{
	cof_view v;
	char dir[COF_PATH_MAX + 1];
	int64_t n = 0;

	snprintf(dir, sizeof dir, "conversations/%s/", conv);
	if (cof_view_open(st, org, vol, NULL, &v, err) ||
	    cof_meta_list(st->meta, v.vno, v.seq, dir, NULL, count_entry, &n, err))
		return -1;
	if (n >= CONV_PROMPTS_MAX)
		return cof_error(err, COF_ECONFLICT, "conversation '%s' has %lld prompts; the limit "
				 "is %d", conv, (long long)n, CONV_PROMPTS_MAX);
	return 0;
}

/* Adds the record to its conversation (a retry finds it there already). */
static int conv_add(cof_store *st, const char *org, const char *vol, json_t *rec,
		    const cof_by *by, cof_err *err)
{
	const char *conv = json_string_value(json_object_get(rec, "conversation"));
	const char *rid = json_string_value(json_object_get(rec, "requestId"));
	char path[COF_PATH_MAX + 1];

	if (!conv)
		return 0;
	snprintf(path, sizeof path, "conversations/%s/%s", conv, rid);
	return record_put(st, org, vol, path, rec, by, err) < 0 ? -1 : 0;
}

/* True when the record is of this same prompt: the same text and
 * conversation, and file for file the same path (and for inline files the
 * same bytes). */
static int record_same(json_t *rec, const preq *r)
{
	json_t *files = json_object_get(rec, "files");
	const char *conv = json_string_value(json_object_get(rec, "conversation"));

	if (strcmp(jstr(rec, "text"), r->text) ||
	    (!conv != !r->conv) || (conv && strcmp(conv, r->conv)) ||
	    json_array_size(files) != r->n)
		return 0;
	for (size_t i = 0; i < r->n; i++) {
		json_t *f = json_array_get(files, i);
		const char *p = json_string_value(json_object_get(f, "path"));
		const char *s = json_string_value(json_object_get(f, "sha256"));
		if (!p || strcmp(p, r->e[i].t.apath) ||
		    (r->e[i].data && (!s || strcmp(s, r->e[i].sha))))
			return 0;
	}
	return 1;
}

/* ------------------------------------------------------------ attaching */

/* Resolves every entry and checks it can be attached; writes nothing. */
static int entries_check(cof_store *st, const cof_agent *a, preq *r, cof_err *err)
{
	int64_t have = 0, fresh = 0;
	cof_entry *cur = cof_malloc(sizeof *cur);
	int rc = -1;

	for (size_t i = 0; i < r->n; i++) {
		pentry *e = &r->e[i];
		if (e->path) {
			if (cof_agent_resolve(a, e->path, &e->t, err))
				goto out;
			continue;
		}
		if (cof_agent_upload_target(a, r->rid, e->name, &e->t, err))
			goto out;
		int got = entry_at(st, a->org, e->t.mount->vol, e->t.vpath, cur, NULL, err);
		if (got < 0)
			goto out;
		if (got == 1 && strcmp(cur->sha256, e->sha)) {
			cof_error(err, COF_ECONFLICT, "request '%s' already saved '%s' with other "
				  "content; a retry must send the same bytes (nothing was written)",
				  r->rid, e->name);
			goto out;
		}
		e->exists = got == 1;
		fresh += !e->exists;
		if (fresh == 1 && !e->exists &&
		    cof_agent_upload_count(st, a, &e->t, &have, err))
			goto out;
	}
	if (fresh && have + fresh > COF_UPLOADS_PER_REQUEST) {
		cof_error(err, COF_ECONFLICT, "request '%s' would have %lld files; the limit is %d "
			  "(nothing was written)", r->rid, (long long)(have + fresh),
			  COF_UPLOADS_PER_REQUEST);
		goto out;
	}
	rc = 0;
out:
	free(cur);
	return rc;
}

/* The record's entry of a file: {path, contentType, size, sha256, version}. */
static json_t *file_ref(const char *apath, const char *ctype, int64_t size, const char *sha,
			int64_t version)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:I}", "path", apath, "contentType", ctype,
			 "size", (json_int_t)size, "sha256", sha, "version", (json_int_t)version);
}

/* One {path} file as it is now: its reference, its content pinned. */
static int attach_path(cof_store *st, const cof_agent *a, const pentry *e, json_t **ref,
		       cof_err *err)
{
	cof_file f;
	cof_err e2 = {0};

	if (!e->t.vpath[0])
		return cof_error(err, COF_EVALIDATION, "%s is a folder, not a file", e->t.apath);
	if (cof_file_open(st, a->org, e->t.mount->vol, e->t.vpath, NULL, &f, &e2)) {
		if (e2.code != COF_ENOTFOUND) {
			*err = e2;
			return -1;
		}
		cof_err_clear(&e2);
		return cof_error(err, COF_ENOTFOUND, "no such file: %s", e->t.apath);
	}
	*ref = file_ref(e->t.apath, f.content_type, f.size, f.sha256, f.version);
	cof_file_close(&f);
	/* What the agent was sent stays stored until the agent is deleted. */
	return cof_meta_pin(st->meta, a->org, a->id,
			    json_string_value(json_object_get(*ref, "sha256")), err);
}

/* Who the prompt's writes are by (cof_agent_by_set at its start). */
static const cof_by *prompt_by(const cof_agent *a)
{
	return a->by.via ? &a->by : NULL;
}

/* One inline file, saved as an upload (a retry's is answered again). */
static int attach_inline(cof_store *st, const cof_agent *a, const preq *r, const pentry *e,
			 json_t **ref, cof_err *err)
{
	cof_upload *up;
	json_t *put = NULL;
	int created;

	if (cof_upload_begin(st, COF_UPLOAD_MAX, &up, err))
		return -1;
	if (cof_upload_write(up, e->data, e->len, err)) {
		cof_upload_abort(up);
		return -1;
	}
	if (cof_agent_upload(st, a->org, a->id, a->subject[0] ? a->subject : NULL, r->rid,
			     e->name, up, e->ctype, prompt_by(a), &put, &created, err))
		return -1;
	*ref = file_ref(e->t.apath, json_string_value(json_object_get(put, "contentType")),
			(int64_t)e->len, json_string_value(json_object_get(put, "sha256")),
			json_integer_value(json_object_get(put, "version")));
	json_decref(put);
	return 0;
}

/* The POST answer for one record, alone in its request. */
static int prompt_answer(cof_store *st, json_t *rec, int openai, json_t **out, cof_err *err)
{
	cof_budget b = {0};
	json_t *content, *files;

	if (cof_prompt_render(st, rec, openai, &b, &content, &files, err)) {
		json_decref(content);
		json_decref(files);
		return -1;
	}
	*out = json_pack("{s:O, s:O, s:o, s:o}", "requestId", json_object_get(rec, "requestId"),
			 "text", json_object_get(rec, "text"), "files", files, "content", content);
	return 0;
}

/* Every image or PDF shown counts as read by the agent, as `read` of it would. */
static int note_seen(cof_store *st, const cof_agent *a, const preq *r, json_t *rec,
		     json_t *answer, cof_err *err)
{
	json_t *shown = json_object_get(answer, "files");

	for (size_t i = 0; i < r->n; i++) {
		json_t *rf = json_array_get(json_object_get(rec, "files"), i);
		if (!json_is_true(json_object_get(json_array_get(shown, i), "shown")))
			continue;
		if (cof_agent_seen_put(st, a, &r->e[i].t,
				       json_integer_value(json_object_get(rf, "version")),
				       json_string_value(json_object_get(rf, "sha256")), err))
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ the calls */

/* A new prompt: attach its files, render it, record it. */
static int prompt_fresh(cof_store *st, const cof_agent *a, const char *vol, preq *r,
			json_t **out, cof_err *err)
{
	json_t *files = json_array(), *rec = NULL, *ref;
	char path[COF_PATH_MAX + 1];
	int rc = -1, w;

	if (entries_check(st, a, r, err) || (r->conv && conv_room(st, a->org, vol, r->conv, err)))
		goto out;
	for (size_t i = 0; i < r->n; i++) {
		ref = NULL;
		if (r->e[i].path ? attach_path(st, a, &r->e[i], &ref, err)
				 : attach_inline(st, a, r, &r->e[i], &ref, err)) {
			json_decref(ref);
			goto out;
		}
		json_array_append_new(files, ref);
	}
	rec = json_pack("{s:s, s:s, s:O, s:I}", "requestId", r->rid, "text", r->text, "files",
			files, "at", (json_int_t)cof_now());
	if (r->conv)
		json_object_set_new(rec, "conversation", json_string(r->conv));
	if (prompt_answer(st, rec, r->openai, out, err) ||
	    note_seen(st, a, r, rec, *out, err))
		goto out;
	snprintf(path, sizeof path, "prompts/%s", r->rid);
	if ((w = record_put(st, a->org, vol, path, rec, prompt_by(a), err)) < 0)
		goto out;
	if (w == 1) { /* a concurrent retry recorded it first */
		json_t *won = NULL;
		int same = record_get(st, a->org, vol, r->rid, &won, err) == 1 && record_same(won, r);
		json_decref(won);
		if (!same) {
			cof_error(err, COF_ECONFLICT, "request '%s' was just recorded with another "
				  "prompt", r->rid);
			goto out;
		}
	}
	rc = conv_add(st, a->org, vol, rec, prompt_by(a), err);
out:
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	json_decref(rec);
	json_decref(files);
	return rc;
}

int cof_agent_prompt(cof_store *st, const char *org, const char *id, json_t *body,
		     const cof_idem *idem, const cof_by *by, json_t **out, int *replayed,
		     cof_err *err)
{
	preq r = {0};
	cof_agent a;
	json_t *rec = NULL;
	char vol[48], *prev = NULL;
	int rc = -1, loaded = 0, got;

	*out = NULL;
	*replayed = 0;
	if (preq_parse(body, &r, err) ||
	    (idem && cof_idem_lookup(st, org, idem, "prompt", body, &prev, err) < 0))
		goto out;
	if (cof_agent_load_as(st, org, id, cof_json_str(body, "user"), 1, &a, err))
		goto out;
	loaded = 1;
	cof_agent_by_set(&a, by, r.rid, NULL);
	if (a.subject[0]) /* the subject's own records, beside its attachments */
		memcpy(vol, a.conv, sizeof vol);
	else if (cof_agent_own_volume(st, org, id, CONV_ROW, vol, err))
		goto out;
	if ((got = record_get(st, org, vol, r.rid, &rec, err)) < 0)
		goto out;
	if (got == 0) {
		rc = prompt_fresh(st, &a, vol, &r, out, err);
	} else {
		/* Resolved only to compare: a retry names the same paths. */
		for (size_t i = 0; i < r.n; i++)
			if (r.e[i].path ? cof_agent_resolve(&a, r.e[i].path, &r.e[i].t, err)
					: cof_agent_upload_target(&a, r.rid, r.e[i].name, &r.e[i].t, err))
				goto out;
		if (!record_same(rec, &r)) {
			cof_error(err, COF_ECONFLICT, "request '%s' was recorded with another prompt "
				  "(text, files or conversation); nothing was done", r.rid);
			cof_err_set(err, "requestId", json_string(r.rid));
			goto out;
		}
		*replayed = 1;
		rc = conv_add(st, org, vol, rec, prompt_by(&a), err) || prompt_answer(st, rec, r.openai, out, err);
	}
	if (rc == 0 && idem && !prev)
		rc = cof_idem_record(st, org, idem, "prompt", body, r.rid, err);
out:
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	free(prev);
	json_decref(rec);
	if (loaded)
		cof_agent_release(&a);
	preq_release(&r);
	return rc ? -1 : 0;
}

/* The text a prompt puts in a request: its `text` and its files' lines
 * (counted by their paths and types, the bulk of a line). */
static int64_t prompt_text_size(json_t *rec)
{
	json_t *f;
	size_t i;
	int64_t n = (int64_t)strlen(jstr(rec, "text"));

	json_array_foreach(json_object_get(rec, "files"), i, f)
		n += (int64_t)(strlen(jstr(f, "path")) + strlen(jstr(f, "contentType")));
	return n;
}

#define TEXT_CUT_WHY "past the request's text budget: at most 24 MiB of text (prompts' " \
	"text and their files' paths and types) in one model request, newest first"

/* A prompt past the text budget, named only: one line for the model, and
 * its entry of `prompts` without its text; its files are not read. */
static void prompt_named(json_t *rec, int64_t size, json_t **content, json_t **prompt)
{
	json_t *files = json_array(), *f;
	size_t i, n = json_array_size(json_object_get(rec, "files"));
	cof_buf line = COF_BUF_INIT;

	cof_buf_addf(&line, "[Prompt %s (%lld bytes of text, %zu file%s); not shown: %s]",
		     jstr(rec, "requestId"), (long long)size, n, n == 1 ? "" : "s", TEXT_CUT_WHY);
	*content = json_pack("[{s:s, s:s}]", "type", "text", "text", line.data);
	cof_buf_release(&line);
	json_array_foreach(json_object_get(rec, "files"), i, f)
		json_array_append_new(files, json_pack("{s:s, s:s, s:O, s:s, s:b, s:s}", "path",
			jstr(f, "path"), "contentType", jstr(f, "contentType"), "size",
			json_object_get(f, "size"), "sha256", jstr(f, "sha256"), "shown", 0,
			"reason", TEXT_CUT_WHY));
	*prompt = json_pack("{s:s, s:b, s:I, s:s, s:o}", "requestId", jstr(rec, "requestId"),
			    "shown", 0, "textBytes", (json_int_t)size, "reason", TEXT_CUT_WHY,
			    "files", files);
}

/* Orders a conversation's prompts by the version of their entries. */
static int by_version(const void *x, const void *y)
{
	const cof_item *a = x, *b = y;

	return (a->version > b->version) - (a->version < b->version);
}

int cof_agent_conversation_request(cof_store *st, const char *org, const char *id,
				   const char *subject, const char *conv, const char *format,
				   json_t **out, cof_err *err)
{
	cof_items it = {0};
	cof_view v;
	cof_agentrow row;
	json_t *msgs = NULL, *prompts = NULL;
	char vol[48], dir[COF_PATH_MAX + 1];
	cof_budget b = {0};
	int64_t text = 0;
	int openai, rc = -1, text_cut = 0;

	*out = NULL;
	if ((openai = format_of(format, err)) < 0 || conv_check(conv, err) ||
	    cof_meta_agent_get(st->meta, org, id, &row, err))
		return -1;
	free(row.settings);
	snprintf(dir, sizeof dir, "conversations/%s/", conv);
	rc = subject && *subject ? cof_agent_subject_conv(st, org, id, subject, vol, err)
				 : cof_meta_subject_get(st->meta, org, id, CONV_ROW, vol, err);
	if (rc != 1) {
		if (rc == 0)
			cof_error(err, COF_ENOTFOUND, "agent '%s' has no conversation '%s'", id, conv);
		return -1;
	}
	rc = -1;
	if (cof_view_open(st, org, vol, NULL, &v, err) ||
	    cof_meta_list(st->meta, v.vno, v.seq, dir, NULL, cof_items_add, &it, err))
		goto out;
	if (it.n == 0) {
		cof_error(err, COF_ENOTFOUND, "agent '%s' has no conversation '%s'", id, conv);
		goto out;
	}
	qsort(it.v, it.n, sizeof *it.v, by_version);
	msgs = json_array();
	prompts = json_array();
	for (size_t i = 0; i < it.n; i++) {
		json_array_append_new(msgs, json_null());
		json_array_append_new(prompts, json_null());
	}
	/* Newest first against the budgets; answered oldest first. From the
	 * first prompt whose text does not fit, it and every older one is
	 * named only (and its files never read). */
	for (size_t i = it.n; i-- > 0;) {
		json_t *rec = NULL, *content = NULL, *files = NULL, *pj;
		if (record_load(st, it.v[i].sha256, it.v[i].size, &rec, err))
			goto out;
		int64_t tsize = prompt_text_size(rec);
		if (!text_cut && text + tsize > CONV_TEXT_MAX)
			text_cut = 1;
		if (text_cut) {
			prompt_named(rec, tsize, &content, &pj);
		} else {
			if (cof_prompt_render(st, rec, openai, &b, &content, &files, err)) {
				json_decref(rec);
				json_decref(content);
				json_decref(files);
				goto out;
			}
			text += tsize;
			pj = json_pack("{s:O, s:O, s:b, s:o}", "requestId",
				       json_object_get(rec, "requestId"), "text",
				       json_object_get(rec, "text"), "shown", 1, "files", files);
		}
		json_array_set_new(msgs, i, json_pack("{s:s, s:o}", "role", "user", "content",
						      content));
		json_array_set_new(prompts, i, pj);
		json_decref(rec);
	}
	*out = json_pack("{s:s, s:s, s:O, s:O}", "conversation", conv, "format",
			 openai ? "openai" : "anthropic", "messages", msgs, "prompts", prompts);
	rc = 0;
out:
	json_decref(msgs);
	json_decref(prompts);
	cof_items_release(&it);
	return rc;
}
