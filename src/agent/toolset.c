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
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"
#include "coffer.h"

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
	if (writes && policy && !strcmp(policy, "always_ask")) {
		cof_error(err, COF_ELOCKED, "writes of agent '%.100s' wait for an approval "
			  "(permissionPolicy always_ask), which this server does not take yet",
			  agent);
		goto out;
	}
	call = args ? json_deep_copy(args) : json_object();
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
