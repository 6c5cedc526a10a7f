/*
 * files.c — an agent's files by the paths it sees, and the tool dispatcher.
 * Everything goes through cof_agent_resolve, then the volume layer. Each call
 * may act for a subject (cof_agent_as_subject): then it also reaches that
 * subject's /user and /attachments, and nothing of another subject's.
 */
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"

/* Loads the agent (acting for `subject`, NULL = none) and resolves `path` to
 * a file (not a mount's root). */
static int file_target(cof_store *st, const char *org, const char *id, const char *subject,
		       const char *path, cof_agent *a, cof_target *t, cof_err *err)
{
	if (cof_agent_load_as(st, org, id, subject, 0, a, err))
		return -1;
	if (cof_agent_resolve(a, path, t, err)) {
		cof_agent_release(a);
		return -1;
	}
	if (!t->vpath[0]) {
		cof_agent_release(a);
		return cof_error(err, COF_EVALIDATION, "'%.200s' is a mount's folder, not a file",
				 t->apath);
	}
	return 0;
}

int cof_agent_file_open(cof_store *st, const char *org, const char *id, const char *subject,
			const char *path, cof_file *out, cof_err *err)
{
	cof_agent a;
	cof_target t;
	int rc;

	memset(out, 0, sizeof *out);
	if (file_target(st, org, id, subject, path, &a, &t, err))
		return -1;
	rc = cof_file_open(st, org, t.mount->vol, t.vpath, NULL, out, err);
	cof_agent_release(&a);
	return rc;
}

/* Rewrites a volume answer's `path` to the agent path. */
static void answer_path(json_t *out, const cof_target *t)
{
	if (out)
		json_object_set_new(out, "path", json_string(t->apath));
}

int cof_agent_file_put(cof_store *st, const char *org, const char *id, const char *subject,
		       const char *path, cof_upload *up, const char *content_type,
		       const cof_by *by, json_t **out, int *created, cof_err *err)
{
	cof_agent a;
	cof_target t;
	cof_cond none = {.kind = COF_COND_NONE, .version = 0};
	int rc;

	if (file_target(st, org, id, subject, path, &a, &t, err)) {
		cof_upload_abort(up);
		return -1;
	}
	if (cof_agent_writable(&t, err)) {
		cof_upload_abort(up);
		cof_agent_release(&a);
		return -1;
	}
	none.by = cof_agent_by_set(&a, by, NULL, NULL);
	rc = cof_file_put(st, org, t.mount->vol, t.vpath, up, content_type, none, out, created,
			  err);
	if (!rc)
		answer_path(*out, &t);
	cof_agent_release(&a);
	return rc;
}

int cof_agent_file_room(cof_store *st, const char *org, const char *id, const char *subject,
			const char *path,
			cof_upload *up, int64_t declared, cof_err *err)
{
	cof_agent a;
	cof_target t;
	int rc;

	if (file_target(st, org, id, subject, path, &a, &t, err))
		return -1;
	rc = cof_agent_writable(&t, err) ||
	     cof_upload_room(up, org, t.mount->vol, t.vpath, declared, err) ? -1 : 0;
	cof_agent_release(&a);
	return rc;
}

int cof_agent_file_remove(cof_store *st, const char *org, const char *id, const char *subject,
			  const char *path, const cof_by *by, json_t **out, cof_err *err)
{
	cof_agent a;
	cof_target t;
	cof_cond none = {.kind = COF_COND_NONE, .version = 0};
	int rc = -1;

	if (file_target(st, org, id, subject, path, &a, &t, err))
		return -1;
	none.by = cof_agent_by_set(&a, by, NULL, NULL);
	if (!cof_agent_writable(&t, err) &&
	    !(rc = cof_file_remove(st, org, t.mount->vol, t.vpath, none, out, err)))
		answer_path(*out, &t);
	cof_agent_release(&a);
	return rc;
}

/* cof_path_map for a mount: volume paths shown as agent paths. */
static void agent_map(const void *mount, const char *vpath, char *out, size_t outsz)
{
	cof_agent_path_of(mount, vpath, out, outsz);
}

int cof_agent_children(cof_store *st, const cof_agent *a, const cof_target *t, size_t cap,
		       json_t **entries, int *more, cof_err *err)
{
	size_t hidden;

	return cof_agent_children_hidden(st, a, t, cap, entries, more, &hidden, err);
}

int cof_agent_children_hidden(cof_store *st, const cof_agent *a, const cof_target *t,
			      size_t cap, json_t **entries, int *more, size_t *hidden,
			      cof_err *err)
{
	char prefix[COF_PATH_MAX + 2];
	cof_view view;

	snprintf(prefix, sizeof prefix, "%s%s", t->vpath, t->vpath[0] ? "/" : "");
	if (cof_agent_allowed(a, t->apath, 1, err) ||
	    cof_view_open(st, a->org, t->mount->vol, NULL, &view, err) ||
	    cof_folder_children(st, &view, prefix, cap, agent_map, t->mount, entries, more, err))
		return -1;
	*hidden = json_array_size(*entries);
	cof_agent_excl_filter(a, *entries); /* hidden, as if absent */
	*hidden -= json_array_size(*entries);
	return 0;
}

int cof_agent_file_list(cof_store *st, const char *org, const char *id, const char *subject,
			const char *path,
			json_t **out, cof_err *err)
{
	cof_agent a;
	cof_target t;
	json_t *entries;
	int more, rc = -1;

	if (cof_agent_load_as(st, org, id, subject, 0, &a, err))
		return -1;
	if (!cof_agent_resolve(&a, path, &t, err) &&
	    !cof_agent_children(st, &a, &t, 10000, &entries, &more, err)) {
		if (json_array_size(entries) == 0 && t.vpath[0]) {
			cof_entry *e = cof_malloc(sizeof *e);
			cof_view view;
			int r = e && !cof_view_open(st, org, t.mount->vol, NULL, &view, err)
				? cof_meta_entry_get(st->meta, view.vno, t.vpath, -1, e, err) : -1;
			free(e);
			if (r != 0) {
				json_decref(entries);
				cof_agent_release(&a);
				return r < 0 ? -1 : cof_error(err, COF_EVALIDATION,
					"'%.200s' is a file, not a folder; GET it instead", t.apath);
			}
		}
		*out = json_pack("{s:s, s:o}", "path", t.apath, "entries", entries);
		if (more)
			json_object_set_new(*out, "truncated", json_true());
		rc = 0;
	}
	cof_agent_release(&a);
	return rc;
}

/* ------------------------------------------------------------ tools */

static const struct { const char *name; cof_tool_fn fn; } tools[] = {
	{"read", cof_tool_read}, {"write", cof_tool_write}, {"edit", cof_tool_edit},
	{"ls", cof_tool_ls}, {"glob", cof_tool_glob}, {"grep", cof_tool_grep},
	{"present_file", cof_tool_present}, {"move", cof_tool_move},
};

/* The key a run is stored under: a subject's runs are its own, so its run
 * "r" is "SUBJECT\nr" (no X-Run-Id holds a control character). */
static int run_key(const char *subject, const char *run, char *out, size_t outsz,
		   cof_err *err)
{
	size_t n = strlen(run);

	if (n == 0 || n > 128)
		return cof_error(err, COF_EVALIDATION, "X-Run-Id must be 1 to 128 bytes");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)run[i] < 0x20 || run[i] == 0x7f)
			return cof_error(err, COF_EVALIDATION, "X-Run-Id must hold no control "
					 "characters");
	snprintf(out, outsz, "%s%s%s", subject ? subject : "", subject && *subject ? "\n" : "",
		 run);
	return 0;
}

/* A read scope (X-Mcp-Session) is 1 to 128 bytes without control characters. */
static int scope_check(const char *scope, cof_err *err)
{
	size_t n = strlen(scope);

	if (n == 0 || n > 128)
		return cof_error(err, COF_EVALIDATION, "X-Mcp-Session must be 1 to 128 bytes");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)scope[i] < 0x20 || scope[i] == 0x7f)
			return cof_error(err, COF_EVALIDATION, "X-Mcp-Session must hold no control "
					 "characters");
	return 0;
}

int cof_agent_tool(cof_store *st, const char *org, const char *id, const char *subject,
		   const char *tool, json_t *args, const char *run_id, json_t **out,
		   cof_err *err)
{
	return cof_agent_tool_in(st, org, id, subject, tool, args, run_id, NULL, NULL, out, err);
}

int cof_agent_tool_in(cof_store *st, const char *org, const char *id, const char *subject,
		      const char *tool, json_t *args, const char *run_id, const char *scope,
		      const char *key_id, json_t **out, cof_err *err)
{
	char run[300];
	cof_agent a;
	cof_tool_fn fn = NULL;
	int rc;

	if (run_id && run_key(NULL, run_id, run, sizeof run, err)) /* checks it */
		return -1;
	if (scope && scope_check(scope, err))
		return -1;
	if (cof_agent_load_as(st, org, id, subject, 0, &a, err))
		return -1;
	for (size_t i = 0; i < sizeof tools / sizeof *tools; i++)
		if (!strcmp(tool, tools[i].name))
			fn = tools[i].fn;
	if (!a.file_tools || !fn) {
		cof_agent_release(&a);
		return cof_error(err, COF_ENOTFOUND, a.file_tools
				 ? "no tool '%.40s' (tools: read, write, edit, ls, glob, grep, "
				   "present_file, move)"
				 : "agent '%.100s' has fileTools off", a.file_tools ? tool : id);
	}
	if (args && !json_is_object(args)) {
		cof_agent_release(&a);
		return cof_error(err, COF_EVALIDATION, "tool arguments must be a JSON object");
	}
	a.run = run_id;
	a.scope = scope;
	a.by = (cof_by){.key_id = key_id, .agent = a.id, .user = a.subject, .run_id = run_id,
			.tool = tool, .via = "tool"};
	json_t *empty = args ? NULL : json_object();
	rc = fn(st, &a, args ? args : empty, out, err);
	json_decref(empty);
	cof_agent_release(&a);
	return rc;
}

/* ------------------------------------------------------------- runs */

int cof_agent_run_wrote(cof_store *st, const cof_agent *a, const char *apath, json_t *put,
			cof_err *err)
{
	cof_run_item it = {
		.kind = "file", .path = apath,
		.version = json_integer_value(json_object_get(put, "version")),
		.size = json_integer_value(json_object_get(put, "size")),
		.ctype = json_string_value(json_object_get(put, "contentType")),
	};

	return cof_agent_run_add(st, a, &it, err);
}

int cof_agent_run_add(cof_store *st, const cof_agent *a, const cof_run_item *it,
		      cof_err *err)
{
	return cof_agent_run_add_many(st, a, it, 1, err);
}

int cof_agent_run_add_many(cof_store *st, const cof_agent *a, const cof_run_item *its,
			   size_t n, cof_err *err)
{
	char key[300];

	if (!a->run || !n)
		return 0;
	if (run_key(a->subject, a->run, key, sizeof key, err))
		return -1;
	if (n == 1)
		return cof_meta_run_add(st->meta, a->org, a->id, key, its, err);
	return cof_meta_run_add_many(st->meta, a->org, a->id, key, its, n, err);
}

#define RUN_FILES_MAX 100

typedef struct run_ctx {
	json_t *files, *presented;
} run_ctx;

static int run_item(void *arg, const cof_run_item *it)
{
	run_ctx *r = arg;

	if (!strcmp(it->kind, "file")) {
		if (json_array_size(r->files) < RUN_FILES_MAX)
			json_array_append_new(r->files, json_pack(
				"{s:s, s:I, s:I, s:s}", "path", it->path, "version",
				(json_int_t)it->version, "size", (json_int_t)it->size,
				"contentType", it->ctype));
	} else {
		json_array_append_new(r->presented, json_pack("{s:s, s:s, s:s}", "path", it->path,
							      "caption", it->caption, "url",
							      it->url));
	}
	return 0;
}

int cof_agent_run_get(cof_store *st, const char *org, const char *id, const char *subject,
		      const char *run, json_t **out, cof_err *err)
{
	cof_agentrow row;
	run_ctx r = {json_array(), json_array()};
	char key[300], vol[48];

	if (run_key(subject, run, key, sizeof key, err) ||
	    (subject && *subject && cof_agent_subject_conv(st, org, id, subject, vol, err) < 0) ||
	    cof_meta_agent_get(st->meta, org, id, &row, err))
		goto fail;
	free(row.settings);
	if (cof_meta_run_list(st->meta, org, id, key, run_item, &r, err))
		goto fail;
	*out = json_pack("{s:s, s:o, s:o}", "runId", run, "files", r.files, "presented",
			 r.presented);
	return 0;
fail:
	json_decref(r.files);
	json_decref(r.presented);
	return -1;
}

/* ------------------------------------------------------------- links */

int cof_agent_link_create(cof_store *st, const char *org, const char *id,
			  const char *subject, json_t *body,
			  const cof_idem *idem, const char *maker, json_t **out, cof_err *err)
{
	const char *path = cof_json_str(body, "path"), *method = cof_json_str(body, "method");
	json_t *vbody;
	cof_agent a;
	cof_target t;
	int rc;

	if (!json_is_object(body))
		return cof_error(err, COF_EVALIDATION, "the body must be a JSON object");
	if (!path)
		return cof_error(err, COF_EVALIDATION, "'path' is required (a string)");
	if (file_target(st, org, id, subject, path, &a, &t, err))
		return -1;
	if (method && !strcmp(method, "PUT") && cof_agent_writable(&t, err)) {
		cof_agent_release(&a);
		return -1;
	}
	/* The volume layer checks every other field; only the path is translated. */
	vbody = json_deep_copy(body);
	json_object_set_new(vbody, "path", json_string(t.vpath));
	rc = cof_link_create(st, org, t.mount->vol, vbody, idem, maker, out, err);
	json_decref(vbody);
	if (!rc)
		answer_path(*out, &t);
	cof_agent_release(&a);
	return rc;
}
