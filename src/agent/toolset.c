/*
 * toolset.c — seed 003's file toolset on a subject's workspace (API.md
 * "Subject workspaces"): read_file, write_file, patch and search_files, with
 * paths relative to the subject's root (its /user), enabled by the agent
 * setting `tools: [{"type":"agent_toolset","configs":[{"name":"file",
 * "enabled":true,"permissionPolicy":{"type":"always_allow"}}]}]`.
 *
 * Each is the agent's own file tool (read, write, edit, grep) on /user, so
 * the answers, the stale-write refusal and the read tracking are the same;
 * the paths in the structured answer are given back relative to the root.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "coffer.h"
#include "store/store.h"

#define USER_ROOT "/user"

/* ------------------------------------------------------------ the setting */

static const cof_jfield toolset_fields[] = {
	{"type", COF_JSTR, 1}, {"configs", COF_JARR, 0}, {NULL, 0, 0}};
static const cof_jfield config_fields[] = {
	{"name", COF_JSTR, 1}, {"enabled", COF_JBOOL, 0}, {"permissionPolicy", COF_JOBJ, 0},
	{NULL, 0, 0}};
static const cof_jfield policy_fields[] = {{"type", COF_JSTR, 1}, {NULL, 0, 0}};

int cof_toolset_check(json_t *tools, cof_err *err)
{
	json_t *t, *c;
	size_t i, j;

	if (!tools || json_is_null(tools))
		return 0;
	if (!json_is_array(tools))
		return cof_error(err, COF_EVALIDATION, "'tools' must be an array");
	json_array_foreach(tools, i, t) {
		cof_err e = {0};
		if (!json_is_object(t) || cof_json_check(t, toolset_fields, &e)) {
			cof_error(err, COF_EVALIDATION, "tools[%zu]: %s", i,
				  e.code ? e.msg : "must be an object");
			cof_err_clear(&e);
			return -1;
		}
		if (strcmp(cof_json_str(t, "type"), "agent_toolset"))
			return cof_error(err, COF_EVALIDATION, "tools[%zu]: type '%.100s' is not "
					 "known (known: agent_toolset)", i, cof_json_str(t, "type"));
		json_array_foreach(json_object_get(t, "configs"), j, c) {
			json_t *p;
			if (!json_is_object(c) || cof_json_check(c, config_fields, &e)) {
				cof_error(err, COF_EVALIDATION, "tools[%zu].configs[%zu]: %s", i, j,
					  e.code ? e.msg : "must be an object");
				cof_err_clear(&e);
				return -1;
			}
			if (strcmp(cof_json_str(c, "name"), "file"))
				return cof_error(err, COF_EVALIDATION, "tools[%zu].configs[%zu]: "
						 "toolset '%.100s' is not served here (served: file)",
						 i, j, cof_json_str(c, "name"));
			if (!(p = json_object_get(c, "permissionPolicy")))
				continue;
			if (cof_json_check(p, policy_fields, &e)) {
				cof_error(err, COF_EVALIDATION, "tools[%zu].configs[%zu]."
					  "permissionPolicy: %s", i, j, e.msg);
				cof_err_clear(&e);
				return -1;
			}
			if (strcmp(cof_json_str(p, "type"), "always_allow") &&
			    strcmp(cof_json_str(p, "type"), "always_ask"))
				return cof_error(err, COF_EVALIDATION, "tools[%zu].configs[%zu]."
						 "permissionPolicy.type must be \"always_allow\" or "
						 "\"always_ask\"", i, j);
		}
	}
	return 0;
}

/* The file toolset's config of the agent's settings, or NULL when it is not
 * enabled (no such config, or enabled:false). */
static json_t *file_config(json_t *settings)
{
	json_t *t, *c, *found = NULL;
	size_t i, j;

	json_array_foreach(json_object_get(settings, "tools"), i, t)
		json_array_foreach(json_object_get(t, "configs"), j, c)
			if (!strcmp(cof_json_str(c, "name"), "file"))
				found = c;
	return found && cof_json_bool(found, "enabled", 1) ? found : NULL;
}

/* ----------------------------------------------------------------- calls */

/* args[key] (a path relative to the subject's root; a leading '/' names the
 * root too) as the agent path under /user. Absent: the root itself. */
static void rebase(json_t *args, const char *key)
{
	const char *p = cof_json_str(args, key);
	char *abs = NULL;

	while (p && *p == '/')
		p++;
	if (asprintf(&abs, "%s%s%s", USER_ROOT, p && *p ? "/" : "", p ? p : "") < 0)
		return;
	json_object_set_new(args, key, json_string(abs));
	free(abs);
}

/* An agent path under /user as the path relative to the root ("" = the root). */
static const char *relative(const char *apath)
{
	size_t n = strlen(USER_ROOT);

	if (apath && !strncmp(apath, USER_ROOT, n) && (apath[n] == '/' || !apath[n]))
		return apath[n] ? apath + n + 1 : "";
	return apath;
}

/* Rewrites the structured paths of an answer relative to the root. */
static void unbase(json_t *out)
{
	json_t *m;
	size_t i;
	const char *p = cof_json_str(out, "path");

	if (p)
		json_object_set_new(out, "path", json_string(relative(p)));
	json_array_foreach(json_object_get(out, "matches"), i, m)
		if ((p = cof_json_str(m, "path")))
			json_object_set_new(m, "path", json_string(relative(p)));
	json_array_foreach(json_object_get(out, "files"), i, m)
		if (json_is_string(m))
			json_array_set_new(json_object_get(out, "files"), i,
					   json_string(relative(json_string_value(m))));
}

static const cof_jfield read_file_fields[] = {
	{"path", COF_JSTR, 1}, {"offset", COF_JINT, 0}, {"limit", COF_JINT, 0}, {NULL, 0, 0}};
static const cof_jfield write_file_fields[] = {
	{"path", COF_JSTR, 1}, {"content", COF_JSTR, 1}, {"createParents", COF_JBOOL, 0},
	{NULL, 0, 0}};
static const cof_jfield patch_fields[] = {
	{"path", COF_JSTR, 1}, {"oldString", COF_JSTR, 1}, {"newString", COF_JSTR, 1},
	{"replaceAll", COF_JBOOL, 0}, {NULL, 0, 0}};
static const cof_jfield search_files_fields[] = {
	{"pattern", COF_JSTR, 1}, {"path", COF_JSTR, 0}, {"glob", COF_JSTR, 0}, {NULL, 0, 0}};

static const struct {
	const char *name;
	const cof_jfield *fields;
	cof_tool_fn fn;
	int writes;
} toolset[] = {
	{"read_file", read_file_fields, cof_tool_read, 0},
	{"write_file", write_file_fields, cof_tool_write, 1},
	{"patch", patch_fields, cof_tool_edit, 1},
	{"search_files", search_files_fields, cof_tool_grep, 0},
};

/* write_file with createParents:false: the folder must be there already (a
 * folder of a volume is there when it holds a file). 1 = refused in *out. */
static int parents_missing(cof_store *st, const cof_agent *a, const char *apath, json_t **out,
			   cof_err *err)
{
	char dir[COF_AGENT_PATH_MAX + 1];
	const char *slash = strrchr(apath, '/');
	json_t *entries = NULL;
	cof_target t;
	int more = 0, none;

	if (!slash || (size_t)(slash - apath) <= strlen(USER_ROOT))
		return 0; /* in the root */
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - apath), apath);
	if (cof_agent_resolve(a, dir, &t, err) ||
	    cof_agent_children(st, a, &t, 1, &entries, &more, err)) {
		cof_err_clear(err);
		return 0; /* the write says why */
	}
	none = json_array_size(entries) == 0;
	json_decref(entries);
	if (none)
		cof_tool_refuse(out, "folder '%s' does not exist (pass createParents: true to "
				"make it)", relative(dir));
	return none;
}

/* ------------------------------------------------------------ approvals */

/* permissionPolicy always_ask: a write waits for a person's decision. The
 * call is named by what it asks (organization, agent, subject, tool and its
 * arguments), so the model's retry of the same call finds its approval and
 * nothing else does: a record (state kind "approval", id "ap_" + 32 hex of
 * the SHA-256 of that) goes pending -> approved|denied by
 * cof_subject_approve, and is used up by the one call it lets through (or
 * tells it was denied). Status changes are compare-and-swap on the record's
 * body, so two identical calls never both run on one approval. */
#define APPROVAL_KIND "approval"

static int approval_id(const char *org, const cof_agent *a, const char *tool, json_t *args,
		       char id[48], cof_err *err)
{
	json_t *what = json_pack("{s:s, s:s, s:s, s:s, s:O}", "org", org, "agent", a->id,
				 "subject", a->subject, "tool", tool, "args", args);
	char *text = what ? json_dumps(what, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	char sha[65];

	json_decref(what);
	if (!text || cof_sha256_hex(text, strlen(text), sha)) {
		free(text);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	free(text);
	snprintf(id, 48, "ap_%.32s", sha);
	return 0;
}

static int locked(cof_err *err, const char *id, const cof_agent *a, const char *tool)
{
	cof_error(err, COF_ELOCKED, "%s waits for an approval (permissionPolicy always_ask):"
		  " POST /v1/agents/%.100s/users/%.100s/approvals/%s {\"approve\": true} lets"
		  " this call through when it is made again", tool, a->id, a->subject, id);
	cof_err_set(err, "approvalId", json_string(id));
	return -1;
}

/* The gate of one write: 0 = go ahead (an approval was used up), 1 = denied
 * (*out says so, as a tool answer), -1 = COF_ELOCKED with approvalId, or an
 * error. */
static int approval_gate(cof_store *st, const char *org, const cof_agent *a, const char *tool,
			 json_t *args, json_t **out, cof_err *err)
{
	char id[48];
	cof_staterow row = {.kind = APPROVAL_KIND};
	json_t *b;
	const char *status;
	int rc;

	if (approval_id(org, a, tool, args, id, err))
		return -1;
	rc = cof_meta_state_get(st->meta, APPROVAL_KIND, id, &row, err);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		json_t *nb = json_pack("{s:s, s:s, s:s, s:O, s:s, s:I}", "agent", a->id, "subject",
				       a->subject, "tool", tool, "args", args, "status", "pending",
				       "createdAt", (json_int_t)cof_now());
		char *text = nb ? json_dumps(nb, JSON_COMPACT) : NULL;
		cof_staterow add = {.kind = APPROVAL_KIND, .body = text};
		json_decref(nb);
		if (!text)
			return cof_error(err, COF_EINTERNAL, "out of memory");
		snprintf(add.id, sizeof add.id, "%s", id);
		snprintf(add.org, sizeof add.org, "%s", org);
		rc = cof_meta_state_add(st->meta, &add, err);
		free(text);
		return rc < 0 ? -1 : locked(err, id, a, tool);
	}
	b = json_loads(row.body, 0, NULL);
	status = cof_json_str(b, "status");
	rc = -1;
	if (!status || !strcmp(status, "pending") || !strcmp(status, "used")) {
		locked(err, id, a, tool); /* "used": another call is taking it right now */
	} else {
		int denied = !strcmp(status, "denied"); /* before the status is replaced */
		/* used up: only the call that swaps it away goes on */
		json_object_set_new(b, "status", json_string("used"));
		char *text = json_dumps(b, JSON_COMPACT);
		cof_staterow used = {.kind = APPROVAL_KIND, .body = text};
		snprintf(used.id, sizeof used.id, "%s", id);
		snprintf(used.org, sizeof used.org, "%s", org);
		int won = text ? cof_meta_state_swap(st->meta, &used, row.body, err) : -1;
		free(text);
		if (won > 0) {
			cof_err e = {0};
			(void)cof_meta_state_delete(st->meta, APPROVAL_KIND, id, &e);
			cof_err_clear(&e);
			if (denied) {
				cof_tool_refuse(out, "this %s was denied (approval %s): do not make it"
						" again without asking the user", tool, id);
				rc = 1;
			} else {
				rc = 0;
			}
		} else if (won == 0) {
			cof_error(err, COF_ECONFLICT, "approval %s was used by another call of the "
				  "same %s", id, tool);
		}
	}
	json_decref(b);
	free(row.body);
	return rc;
}

int cof_subject_approve(cof_store *st, const char *org, const char *agent, const char *subject,
			const char *id, json_t *body, json_t **out, cof_err *err)
{
	static const cof_jfield fields[] = {{"approve", COF_JBOOL, 1}, {NULL, 0, 0}};
	cof_staterow row;
	json_t *b = NULL;
	const char *status;
	int found, rc = -1;

	*out = NULL;
	if (!body || cof_json_check(body, fields, err))
		return body ? -1 : cof_error(err, COF_EVALIDATION, "'approve' is required");
	found = strncmp(id, "ap_", 3) || strlen(id) != 35 ? 0
		: cof_meta_state_get(st->meta, APPROVAL_KIND, id, &row, err);
	if (found < 0)
		return -1;
	if (found)
		b = json_loads(row.body, 0, NULL);
	/* another organization's, agent's or subject's reads as absent */
	if (!found || strcmp(row.org, org) || !b || strcmp(cof_json_str(b, "agent"), agent) ||
	    strcmp(cof_json_str(b, "subject"), subject)) {
		cof_error(err, COF_ENOTFOUND, "approval '%.64s' not found", id);
		goto out;
	}
	status = cof_json_str(b, "status");
	if (!status || strcmp(status, "pending")) {
		cof_error(err, COF_ECONFLICT, "approval %s was decided already (%s)", id,
			  status ? status : "?");
		goto out;
	}
	json_object_set_new(b, "status", json_string(json_is_true(json_object_get(body, "approve"))
						     ? "approved" : "denied"));
	json_object_set_new(b, "decidedAt", json_integer(cof_now()));
	char *text = json_dumps(b, JSON_COMPACT);
	cof_staterow upd = {.kind = APPROVAL_KIND, .body = text};
	snprintf(upd.id, sizeof upd.id, "%s", id);
	snprintf(upd.org, sizeof upd.org, "%s", org);
	int won = text ? cof_meta_state_swap(st->meta, &upd, row.body, err) : -1;
	free(text);
	if (won == 0)
		cof_error(err, COF_ECONFLICT, "approval %s was decided meanwhile", id);
	if (won > 0) {
		*out = json_pack("{s:s, s:O, s:O, s:O}", "id", id, "status",
				 json_object_get(b, "status"), "tool", json_object_get(b, "tool"),
				 "args", json_object_get(b, "args"));
		rc = 0;
	}
out:
	json_decref(b);
	if (found > 0)
		free(row.body);
	return rc;
}

typedef struct pending_ctx {
	const char *org, *agent, *subject;
	json_t *list;
} pending_ctx;

static int pending_one(void *arg, const cof_staterow *r)
{
	pending_ctx *p = arg;
	json_t *b;

	if (strcmp(r->org, p->org) || !(b = json_loads(r->body, 0, NULL)))
		return 0;
	if (!strcmp(cof_json_str(b, "agent") ? cof_json_str(b, "agent") : "", p->agent) &&
	    !strcmp(cof_json_str(b, "subject") ? cof_json_str(b, "subject") : "", p->subject) &&
	    cof_json_str(b, "status") && !strcmp(cof_json_str(b, "status"), "pending"))
		json_array_append_new(p->list, json_pack("{s:s, s:O, s:O, s:O}", "id", r->id,
							 "tool", json_object_get(b, "tool"),
							 "args", json_object_get(b, "args"),
							 "createdAt",
							 json_object_get(b, "createdAt")));
	json_decref(b);
	return 0;
}

int cof_subject_approvals(cof_store *st, const char *org, const char *agent,
			  const char *subject, json_t **out, cof_err *err)
{
	pending_ctx p = {org, agent, subject, json_array()};

	if (cof_meta_state_list(st->meta, APPROVAL_KIND, 0, pending_one, &p, err)) {
		json_decref(p.list);
		return -1;
	}
	*out = json_pack("{s:o}", "approvals", p.list);
	return 0;
}

int cof_subject_tool(cof_store *st, const char *org, const char *agent, const char *subject,
		     const char *tool, json_t *args, const char *run_id, json_t **out,
		     cof_err *err)
{
	const cof_jfield *fields = NULL;
	cof_tool_fn fn = NULL;
	json_t *call = NULL, *conf;
	cof_agent a;
	int rc = -1, writes = 0;

	*out = NULL;
	for (size_t i = 0; i < sizeof toolset / sizeof *toolset; i++)
		if (!strcmp(tool, toolset[i].name)) {
			fields = toolset[i].fields;
			fn = toolset[i].fn;
			writes = toolset[i].writes;
		}
	if (!fn)
		return cof_error(err, COF_ENOTFOUND, "no tool '%.40s' in the file toolset "
				 "(read_file, write_file, patch, search_files)", tool);
	if (args && !json_is_object(args))
		return cof_error(err, COF_EVALIDATION, "tool arguments must be a JSON object");
	if (args && cof_json_check(args, fields, err))
		return -1;
	if (!args && fields[0].required)
		return cof_error(err, COF_EVALIDATION, "'%s' is required", fields[0].name);
	if (cof_agent_load_as(st, org, agent, subject, 0, &a, err))
		return -1;
	if (!a.subject[0]) {
		cof_error(err, COF_EVALIDATION, "the file toolset acts for a subject");
		goto out;
	}
	if (!(conf = file_config(a.settings))) {
		cof_error(err, COF_ENOTFOUND, "agent '%.100s' has no file toolset enabled (set "
			  "tools: [{\"type\":\"agent_toolset\",\"configs\":[{\"name\":\"file\","
			  "\"enabled\":true}]}])", agent);
		goto out;
	}
	const char *policy = cof_json_str(json_object_get(conf, "permissionPolicy"), "type");
	call = args ? json_deep_copy(args) : json_object();
	if (writes && policy && !strcmp(policy, "always_ask")) {
		int gate = approval_gate(st, org, &a, tool, call, out, err);
		if (gate) {
			rc = gate > 0 ? 0 : -1;
			goto out;
		}
	}
	rebase(call, "path");
	if (!strcmp(tool, "write_file")) {
		int make = cof_json_bool(call, "createParents", 1);
		json_object_del(call, "createParents");
		if (!make && parents_missing(st, &a, cof_json_str(call, "path"), out, err)) {
			rc = 0;
			goto out;
		}
	}
	a.run = run_id;
	rc = fn(st, &a, call, out, err);
	if (!rc)
		unbase(*out);
out:
	json_decref(call);
	cof_agent_release(&a);
	return rc;
}
