/*
 * agent.c — agents: settings, mounts, the resolver of agent paths, and read
 * tracking. An agent is stored as one row: its own workspace volume id and
 * its settings (mounts normalised) as JSON.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include "agent/agent.h"
#include "agent/settings.h"
#include "policy/policy.h"

#define WORKSPACE_PATH "/workspace"

/* Mount order (seed 001, API.md "Agents"): the mounts given come first, the
 * implicit workspace after them. Agents stored before that rule kept their
 * workspace first: their stored settings lack this key, and every later
 * normalisation of their mounts (an upsert with mounts, a remount, PUT
 * .../mounts) keeps putting the implicit workspace first, so such an agent
 * works on as it did, and an upsert repeating its mounts is still no change
 * (no 409). Agents made since carry the key. It is internal: never accepted
 * from a caller (agent_fields), never shown (agent_json). */
#define GIVEN_FIRST_KEY "_mountsGivenFirst"

static int given_first(json_t *settings)
{
	return json_is_true(json_object_get(settings, GIVEN_FIRST_KEY));
}

/* Checks an agent id: 1..120 bytes of [A-Za-z0-9._-]. */
static int id_check(const char *id, cof_err *err)
{
	size_t n = strlen(id);

	if (n == 0 || n > 120)
		return cof_error(err, COF_EVALIDATION, "agent id must be 1 to 120 bytes");
	if (!strcmp(id, ".") || !strcmp(id, ".."))
		return cof_error(err, COF_EVALIDATION, "agent id must not be '.' or '..'");
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return cof_error(err, COF_EVALIDATION,
					 "agent id may hold only letters, digits, '.', '_' and '-'");
	}
	return 0;
}

/* Checks a mount path: absolute, normalised, below "/". */
static int mount_path_check(const char *path, cof_err *err)
{
	const char *rel;

	if (path[0] != '/')
		return cof_error(err, COF_EVALIDATION,
				 "mount path '%.200s' must be absolute (start with '/')", path);
	if (!path[1])
		return cof_error(err, COF_EVALIDATION,
				 "a mount path must name a folder below '/'");
	if (strlen(path) > COF_AGENT_PATH_MAX)
		return cof_error(err, COF_EVALIDATION, "mount path is over %d bytes",
				 COF_AGENT_PATH_MAX);
	cof_err e2 = {0};
	if (cof_path_check(path + 1, strlen(path + 1), "mount path", &rel, &e2)) {
		cof_error(err, COF_EVALIDATION, "mount path '%.200s' is not normalised: %s", path,
			  e2.msg);
		cof_err_clear(&e2);
		return -1;
	}
	return 0;
}

/* True when mount path a contains b or b contains a (segment-wise). */
static int overlaps(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), n = la < lb ? la : lb;

	if (strncmp(a, b, n))
		return 0;
	return la == lb || (la < lb ? b[la] == '/' : a[lb] == '/');
}

static const cof_jfield mount_fields[] = {
	{"volumeId", COF_JSTR, 0}, {"path", COF_JSTR, 0}, {"mode", COF_JSTR, 0},
	{"subpath", COF_JSTR, 0}, {"notify", COF_JBOOL, 0}, {"workspace", COF_JBOOL, 0},
	{NULL, 0, 0}};

/* Checks one mount object and appends its normalised form to `list`. Sets
 * *ws to 1 for {workspace:true}, 0 for {workspace:false}. */
static int mount_normalise(cof_store *st, const char *org, json_t *m, json_t *list,
			   int *ws, cof_err *err)
{
	const char *path, *vol, *mode, *sub = NULL;
	json_t *w = json_object_get(m, "workspace");

	if (cof_json_check(m, mount_fields, err))
		return -1;
	path = cof_json_str(m, "path");
	vol = cof_json_str(m, "volumeId");
	if (w) {
		if (vol || json_object_get(m, "mode") || json_object_get(m, "subpath"))
			return cof_error(err, COF_EVALIDATION,
					 "a workspace mount takes only 'workspace' and 'path'");
		*ws = json_is_true(w);
		if (!*ws) {
			if (path)
				return cof_error(err, COF_EVALIDATION,
						 "{\"workspace\": false} takes no 'path'");
			return 0;
		}
		if (!path)
			path = WORKSPACE_PATH;
		if (mount_path_check(path, err))
			return -1;
		json_array_append_new(list, json_pack("{s:b, s:s}", "workspace", 1, "path", path));
		return 0;
	}
	if (!vol || !path)
		return cof_error(err, COF_EVALIDATION,
				 "a mount needs 'volumeId' and 'path' (or 'workspace')");
	mode = cof_json_str(m, "mode");
	if (!mode || (strcmp(mode, "ro") && strcmp(mode, "rw")))
		return cof_error(err, COF_EVALIDATION,
				 "mount '%.200s' needs 'mode': \"ro\" or \"rw\"", path);
	if (mount_path_check(path, err))
		return -1;
	if (cof_json_str(m, "subpath") && *cof_json_str(m, "subpath")) {
		const char *s = cof_json_str(m, "subpath");
		if (cof_path_check(s, strlen(s), "'subpath'", &sub, err))
			return -1;
	}
	cof_volrow v;
	if (cof_meta_volume_get(st->meta, org, vol, &v, err))
		return -1;
	json_t *n = json_pack("{s:s, s:s, s:s, s:b}", "volumeId", vol, "path", path, "mode",
			      mode, "notify", cof_json_bool(m, "notify", 0));
	if (sub)
		json_object_set_new(n, "subpath", json_string(sub));
	json_array_append_new(list, n);
	return 0;
}

/* Normalises a mounts array: checks each, adds the workspace at /workspace
 * unless a workspace entry or a mount at /workspace says otherwise (after the
 * mounts given, or first for an agent stored before that rule: `ws_last` 0),
 * refuses overlaps. `mounts` NULL = the default. */
static int mounts_normalise(cof_store *st, const char *org, json_t *mounts, int ws_last,
			    json_t **out, cof_err *err)
{
	json_t *list = json_array();
	int ws = -1, at_workspace = 0;
	size_t i;
	json_t *m;

	if (mounts && !json_is_array(mounts)) {
		json_decref(list);
		return cof_error(err, COF_EVALIDATION, "'mounts' must be an array");
	}
	if (mounts && json_array_size(mounts) > COF_MOUNTS_MAX - 1) {
		json_decref(list);
		return cof_error(err, COF_EVALIDATION, "'mounts' has %zu mounts; the limit is %d",
				 json_array_size(mounts), COF_MOUNTS_MAX - 1);
	}
	json_array_foreach(mounts, i, m) {
		int w = -1;
		if (!json_is_object(m)) {
			json_decref(list);
			return cof_error(err, COF_EVALIDATION, "each mount must be an object");
		}
		if (mount_normalise(st, org, m, list, &w, err)) {
			json_decref(list);
			return -1;
		}
		if (w >= 0) {
			if (ws >= 0) {
				json_decref(list);
				return cof_error(err, COF_EVALIDATION,
						 "the workspace is named twice in 'mounts'");
			}
			ws = w;
		}
	}
	json_array_foreach(list, i, m)
		at_workspace |= !strcmp(cof_json_str(m, "path"), WORKSPACE_PATH);
	if (ws < 0 && !at_workspace)
		json_array_insert_new(list, ws_last ? json_array_size(list) : 0,
				      json_pack("{s:b, s:s}", "workspace", 1, "path",
						WORKSPACE_PATH));
	for (size_t a = 0; a < json_array_size(list); a++)
		for (size_t b = a + 1; b < json_array_size(list); b++) {
			const char *pa = cof_json_str(json_array_get(list, a), "path");
			const char *pb = cof_json_str(json_array_get(list, b), "path");
			if (overlaps(pa, pb)) {
				cof_error(err, COF_EVALIDATION,
					  "mounts '%.200s' and '%.200s' overlap; mount paths must be "
					  "clear of each other", pa, pb);
				json_decref(list);
				return -1;
			}
		}
	*out = list;
	return 0;
}

/* ----------------------------------------------------------- put / get */

static const cof_jfield agent_fields[] = {
	{"mounts", COF_JARR, 0}, {"fileTools", COF_JBOOL, 0}, {"exclude", COF_JARR, 0},
	{"defaultExclusions", COF_JBOOL, 0}, {"sandbox", COF_JOBJ, 0},
	{"output", COF_JOBJ, 0}, {"relay", COF_JOBJ, 0}, {"remount", COF_JBOOL, 0},
	{"workspace", COF_JOBJ, 0}, /* seed 004's name for `relay` */
	{"tools", COF_JARR, 0},     /* seed 003's agent_toolset (toolset.c) */
	{NULL, 0, 0}};

static const cof_jfield relay_fields[] = {
	{"capability", COF_JBOOL, 0}, {"defaultMode", COF_JSTR, 0}, {NULL, 0, 0}};

/* `relay: {capability?, defaultMode?}`: the mode must be one cof_mode_parse knows. */
static int relay_check(json_t *relay, cof_err *err)
{
	cof_mode m;
	cof_err e = {0};
	const char *mode = cof_json_str(relay, "defaultMode");

	if (!relay || json_is_null(relay))
		return 0;
	if (!cof_json_check(relay, relay_fields, &e) && !(mode && cof_mode_parse(mode, &m, &e)))
		return 0;
	cof_error(err, COF_EVALIDATION, "relay: %s", e.msg);
	cof_err_clear(&e);
	return -1;
}

/* The stored mounts of `settings` into a->mounts (a->workspace set first). */
static void mounts_load(cof_agent *a, json_t *settings)
{
	json_t *m;
	size_t i;

	json_array_foreach(json_object_get(settings, "mounts"), i, m) {
		cof_mount *x = &a->mounts[a->nmounts];
		if (a->nmounts == COF_MOUNTS_MAX)
			break;
		memset(x, 0, sizeof *x);
		snprintf(x->path, sizeof x->path, "%s", cof_json_str(m, "path"));
		x->workspace = cof_json_bool(m, "workspace", 0);
		snprintf(x->vol, sizeof x->vol, "%s",
			 x->workspace ? a->workspace : cof_json_str(m, "volumeId"));
		snprintf(x->subpath, sizeof x->subpath, "%s",
			 cof_json_str(m, "subpath") ? cof_json_str(m, "subpath") : "");
		x->rw = x->workspace || !strcmp(cof_json_str(m, "mode"), "rw");
		x->notify = cof_json_bool(m, "notify", 0);
		a->nmounts++;
	}
}

static json_t *agent_json(const cof_agentrow *r, json_t *settings)
{
	json_t *out = json_deep_copy(settings);

	if (!out)
		return NULL;
	json_object_set_new(out, "id", json_string(r->id));
	json_object_set_new(out, "workspaceVolumeId", json_string(r->workspace));
	json_object_set_new(out, "createdAt", cof_json_time(r->created_at));
	if (!json_object_get(out, "fileTools"))
		json_object_set_new(out, "fileTools", json_true());
	json_object_del(out, GIVEN_FIRST_KEY);
	/* seed 000: the agent card lists the file types a call may give back
	 * among its defaultOutputModes (from output.files; all four by default) */
	unsigned types = COF_OUT_ALL;
	cof_err e = {0};
	if (cof_outbox_types_parse(json_object_get(settings, "output"), &types, &e))
		cof_err_clear(&e); /* stored settings were checked when put */
	json_t *modes = json_array();
	for (unsigned bit = 1; bit & COF_OUT_ALL; bit <<= 1)
		if (types & bit)
			json_array_append_new(modes, json_string(cof_outbox_media_type(bit)));
	json_object_set_new(out, "defaultOutputModes", modes);
	/* seed 001: where uploads, tools' file outputs and scratch files go,
	 * by the one placement rule (a caller's subject has its own: see
	 * docs/api.md) */
	cof_agent *a = cof_calloc(1, sizeof *a);
	if (!a) { /* NULL: its callers answer "out of memory" */
		json_decref(out);
		return NULL;
	}
	snprintf(a->workspace, sizeof a->workspace, "%s", r->workspace);
	mounts_load(a, settings);
	json_object_set_new(out, "places", cof_agent_places_json(a));
	free(a);
	return out;
}

/* Makes the agent's own workspace volume. */
static int workspace_new(cof_store *st, const char *org, const char *id, char vol[48],
			 cof_err *err)
{
	json_t *body = json_pack("{s:s}", "name", "workspace"), *out = NULL;
	int created, rc;
	char name[160];

	snprintf(name, sizeof name, "workspace of agent %s", id);
	json_object_set_new(body, "name", json_string(name));
	rc = cof_volume_create(st, org, body, NULL, &out, &created, err);
	if (!rc)
		snprintf(vol, 48, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(body);
	json_decref(out);
	return rc;
}

int cof_agent_put(cof_store *st, const char *org, const char *id, json_t *body,
		  json_t **out, int *created, cof_err *err)
{
	cof_agentrow old = {0}, row = {0};
	json_t *settings = NULL, *mounts = NULL;
	cof_err miss = {0};
	int exists, rc = -1;

	cof_sandbox sb;
	unsigned types;
	/* seed 004 calls the relay settings `workspace`: the same, stored as `relay` */
	json_t *relay = json_object_get(body, "relay"), *alias = json_object_get(body, "workspace");
	if (relay && alias)
		return cof_error(err, COF_EVALIDATION, "give 'relay' or 'workspace' (seed 004's "
				 "name for the same settings), not both");
	if (id_check(id, err) || cof_json_check(body, agent_fields, err) ||
	    cof_sandbox_parse(json_object_get(body, "sandbox"), &sb, err) ||
	    cof_outbox_types_parse(json_object_get(body, "output"), &types, err) ||
	    relay_check(relay ? relay : alias, err) ||
	    cof_toolset_check(json_object_get(body, "tools"), err))
		return -1;
	cof_excl *x = NULL; /* the patterns must compile; the matcher is built per call */
	if (cof_excl_new(json_object_get(body, "exclude"), 0, &x, err))
		return -1;
	cof_excl_free(x);
	exists = cof_meta_agent_get(st->meta, org, id, &old, &miss) == 0;
	if (!exists && miss.code != COF_ENOTFOUND) {
		*err = miss;
		return -1;
	}
	cof_err_clear(&miss);
	settings = body ? json_deep_copy(body) : json_object();
	json_object_del(settings, "remount");
	if (alias) {
		json_object_set(settings, "relay", json_object_get(settings, "workspace"));
		json_object_del(settings, "workspace");
	}
	json_t *given = json_object_get(body, "mounts");
	int ws_last = 1;
	if (exists) { /* an agent stored before the rule keeps its order */
		json_t *prev = json_loads(old.settings, 0, NULL);
		ws_last = given_first(prev);
		json_decref(prev);
	}
	if (ws_last)
		json_object_set_new(settings, GIVEN_FIRST_KEY, json_true());
	if (given || !exists) {
		if (mounts_normalise(st, org, given, ws_last, &mounts, err))
			goto out;
	} else {
		json_t *prev = json_loads(old.settings, 0, NULL);
		mounts = json_incref(json_object_get(prev, "mounts"));
		json_decref(prev);
	}
	if (exists && given && !cof_json_bool(body, "remount", 0)) {
		json_t *prev = json_loads(old.settings, 0, NULL);
		int same = json_equal(json_object_get(prev, "mounts"), mounts);
		json_decref(prev);
		if (!same) {
			cof_error(err, COF_ECONFLICT,
				  "agent '%s' has other mounts; pass \"remount\": true to change "
				  "them (or PUT /v1/agents/%s/mounts)", id, id);
			goto out;
		}
	}
	json_object_set(settings, "mounts", mounts ? mounts : json_array());
	snprintf(row.org, sizeof row.org, "%s", org);
	snprintf(row.id, sizeof row.id, "%s", id);
	if (exists) {
		memcpy(row.workspace, old.workspace, sizeof row.workspace);
		row.created_at = old.created_at;
	} else {
		if (workspace_new(st, org, id, row.workspace, err))
			goto out;
		row.created_at = cof_now();
	}
	row.settings = json_dumps(settings, JSON_COMPACT);
	if (!row.settings) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (cof_meta_agent_put(st->meta, &row, err))
		goto out;
	*created = !exists;
	if (!(*out = agent_json(&row, settings))) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	rc = 0;
out:
	free(row.settings);
	free(old.settings);
	json_decref(settings);
	json_decref(mounts);
	return rc;
}

int cof_agent_get(cof_store *st, const char *org, const char *id, json_t **out,
		  cof_err *err)
{
	cof_agentrow r;
	json_t *settings;

	if (cof_meta_agent_get(st->meta, org, id, &r, err))
		return -1;
	settings = json_loads(r.settings, 0, NULL);
	*out = agent_json(&r, settings ? settings : json_object());
	json_decref(settings);
	free(r.settings);
	return *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
}

#define AGENT_PAGE_MAX 1000

/* A page of cof_agent_list being built: one row past `limit` says there is
 * another page. */
typedef struct {
	json_t *arr;
	int64_t limit, n;
	char last[128];
	int more;
} agent_page;

/* cof_agent_row_fn: one agent into the page. */
static int agent_page_add(void *ctx, const char *id, const char *workspace, int64_t created_at)
{
	agent_page *p = ctx;

	if (p->n == p->limit) {
		p->more = 1;
		return 0;
	}
	json_array_append_new(p->arr, json_pack("{s:s, s:s, s:o}", "id", id, "workspaceVolumeId",
						workspace, "createdAt",
						cof_json_time(created_at)));
	snprintf(p->last, sizeof p->last, "%s", id);
	p->n++;
	return 1;
}

int cof_agent_list(cof_store *st, const char *org, const char *prefix, const char *cursor,
		   int64_t limit, json_t **out, cof_err *err)
{
	agent_page p = { .limit = limit ? limit : AGENT_PAGE_MAX };

	if (p.limit < 1 || p.limit > AGENT_PAGE_MAX)
		return cof_error(err, COF_EVALIDATION, "'limit' is %lld; it must be from 1 to %d",
				 (long long)limit, AGENT_PAGE_MAX);
	if (prefix && strlen(prefix) > 120)
		return cof_error(err, COF_EVALIDATION,
				 "'prefix' is %zu bytes; agent ids are at most 120", strlen(prefix));
	/* the cursor is the last id of the page before */
	if (cursor && *cursor && id_check(cursor, err)) {
		cof_err_clear(err);
		return cof_error(err, COF_EVALIDATION, "'cursor' is not one this server gave");
	}
	if (!(p.arr = json_array()))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (cof_meta_agent_list(st->meta, org, prefix, cursor, p.limit + 1, agent_page_add, &p,
				err)) {
		json_decref(p.arr);
		return -1;
	}
	*out = json_pack("{s:o}", "agents", p.arr);
	if (p.more)
		json_object_set_new(*out, "cursor", json_string(p.last));
	return 0;
}

int cof_agent_delete(cof_store *st, const char *org, const char *id, cof_err *err)
{
	cof_agentrow r;
	cof_err e2 = {0};

	if (cof_meta_agent_get(st->meta, org, id, &r, err))
		return -1;
	free(r.settings);
	if (cof_meta_agent_delete(st->meta, org, id, err))
		return -1;
	/* Its own workspace goes with it; volumes it only mounted stay. */
	if (cof_volume_delete(st, org, r.workspace, &e2) && e2.code != COF_ENOTFOUND) {
		*err = e2;
		return -1;
	}
	cof_err_clear(&e2);
	/* So do its subjects' workspaces and its skills (subjects.c). */
	return cof_agent_subjects_delete(st, org, id, err);
}

int cof_agent_set_mounts(cof_store *st, const char *org, const char *id, json_t *mounts,
			 json_t **out, cof_err *err)
{
	cof_agentrow r;
	json_t *settings, *norm = NULL;
	int rc = -1;

	if (!json_is_array(mounts))
		return cof_error(err, COF_EVALIDATION, "the body must be a JSON array of mounts");
	if (cof_meta_agent_get(st->meta, org, id, &r, err))
		return -1;
	settings = json_loads(r.settings, 0, NULL);
	free(r.settings);
	r.settings = NULL;
	if (!settings || mounts_normalise(st, org, mounts, given_first(settings), &norm, err))
		goto out;
	json_object_set_new(settings, "mounts", norm);
	r.settings = json_dumps(settings, JSON_COMPACT);
	if (!r.settings || cof_meta_agent_put(st->meta, &r, err))
		goto out;
	if (!(*out = agent_json(&r, settings)))
		rc = cof_error(err, COF_EINTERNAL, "out of memory");
	else
		rc = 0;
out:
	free(r.settings);
	json_decref(settings);
	return rc;
}

/* ----------------------------------------------------------- loading */

int cof_agent_load(cof_store *st, const char *org, const char *id, cof_agent *out,
		   cof_err *err)
{
	cof_agentrow r;

	/* all but the mounts, which are set as they are added: the array is
	 * most of the struct (290 KB), and zeroing it touched every page of it
	 * for each call and tool use */
	memset(out, 0, offsetof(cof_agent, mounts));
	memset((char *)out + offsetof(cof_agent, nmounts), 0,
	       sizeof *out - offsetof(cof_agent, nmounts));
	if (cof_meta_agent_get(st->meta, org, id, &r, err))
		return -1;
	out->settings = json_loads(r.settings, 0, NULL);
	free(r.settings);
	if (!out->settings)
		return cof_error(err, COF_EINTERNAL, "agent '%s' has damaged settings", id);
	snprintf(out->org, sizeof out->org, "%s", org);
	snprintf(out->id, sizeof out->id, "%s", id);
	memcpy(out->workspace, r.workspace, sizeof out->workspace);
	out->file_tools = cof_json_bool(out->settings, "fileTools", 1);
	mounts_load(out, out->settings);
	if (cof_agent_excl_load(out, err)) {
		cof_agent_release(out);
		return -1;
	}
	return 0;
}

const cof_by *cof_by_for(cof_by *out, const cof_by *caller, const char *agent,
			 const char *subject, const char *run_id, const char *call_id)
{
	if (!caller) {
		*out = (cof_by){0};
		return NULL;
	}
	*out = (cof_by){.key_id = caller->key_id, .agent = agent,
			.user = subject && subject[0] ? subject : NULL,
			.run_id = run_id ? run_id : caller->run_id,
			.call_id = call_id ? call_id : caller->call_id, .tool = caller->tool,
			.via = caller->via};
	return out;
}

const cof_by *cof_agent_by_set(cof_agent *a, const cof_by *caller, const char *run_id,
			       const char *call_id)
{
	return cof_by_for(&a->by, caller, a->id, a->subject, run_id, call_id);
}

void cof_agent_release(cof_agent *a)
{
	json_decref(a->settings);
	a->settings = NULL;
	cof_excl_free(a->excl);
	a->excl = NULL;
}

/* ----------------------------------------------------------- resolver */

/* Lists the mounts for a message: "/workspace, /data". */
static void mount_names(const cof_agent *a, char *out, size_t outsz)
{
	size_t n = 0;

	out[0] = '\0';
	for (size_t i = 0; i < a->nmounts && n + 1 < outsz; i++)
		n += (size_t)snprintf(out + n, outsz - n, "%s%s", i ? ", " : "", a->mounts[i].path);
}

int cof_agent_resolve(const cof_agent *a, const char *path, cof_target *out, cof_err *err)
{
	char abs[COF_AGENT_PATH_MAX + 2];
	size_t n;

	memset(out, 0, sizeof *out);
	if (!path || !*path)
		path = a->nmounts ? a->mounts[0].path : "/";
	if (!a->nmounts)
		return cof_error(err, COF_ENOTFOUND, "the agent has no mounts");
	if (path[0] == '/')
		n = (size_t)snprintf(abs, sizeof abs, "%s", path);
	else
		n = (size_t)snprintf(abs, sizeof abs, "%s/%s", a->mounts[0].path, path);
	if (n >= sizeof abs - 1)
		return cof_error(err, COF_EVALIDATION, "path is over %d bytes", COF_AGENT_PATH_MAX);
	while (n > 1 && abs[n - 1] == '/') /* "dir/" names the folder */
		abs[--n] = '\0';
	if (n > 1) {
		const char *rel;
		if (cof_path_check(abs + 1, n - 1, "path", &rel, err))
			return -1;
	}
	for (size_t i = 0; i < a->nmounts; i++) {
		const cof_mount *m = &a->mounts[i];
		size_t ml = strlen(m->path);
		if (strncmp(abs, m->path, ml) || (abs[ml] && abs[ml] != '/'))
			continue;
		const char *rest = abs[ml] ? abs + ml + 1 : "";
		int k = snprintf(out->vpath, sizeof out->vpath, "%s%s%s", m->subpath,
				 m->subpath[0] && rest[0] ? "/" : "", rest);
		if (k < 0 || (size_t)k >= sizeof out->vpath)
			return cof_error(err, COF_EVALIDATION, "path is over %d bytes in its volume",
					 COF_PATH_MAX);
		out->mount = m;
		memcpy(out->apath, abs, n + 1); /* n <= COF_AGENT_PATH_MAX, checked above */
		return cof_agent_allowed(a, out->apath, 0, err);
	}
	char names[1024];
	mount_names(a, names, sizeof names);
	return cof_error(err, COF_ENOTFOUND, "'%.200s' is outside every mount (the mounts are: %s)",
			 abs, names);
}

void cof_agent_path_of(const cof_mount *m, const char *vpath, char *out, size_t outsz)
{
	size_t sl = strlen(m->subpath);
	const char *rest = vpath;

	if (sl) {
		rest = vpath + sl;
		if (*rest == '/')
			rest++;
	}
	if ((size_t)snprintf(out, outsz, "%s%s%s", m->path, *rest ? "/" : "", rest) >= outsz)
		out[outsz - 1] = '\0'; /* cannot happen: outsz covers mount + volume path */
}

int cof_agent_writable(const cof_target *t, cof_err *err)
{
	static const char *const reserved[] = {"memories", "skills"};
	const char *rest = t->vpath + strlen(t->mount->subpath);

	if (!t->mount->rw)
		return cof_error(err, COF_EFORBIDDEN, "'%.200s' is on a read-only mount (%s)",
				 t->apath, t->mount->path);
	while (t->mount->reserved && *rest == '/')
		rest++;
	for (size_t i = 0; t->mount->reserved && i < 2; i++) {
		size_t n = strlen(reserved[i]);
		if (!strncmp(rest, reserved[i], n) && (!rest[n] || rest[n] == '/'))
			return cof_error(err, COF_EFORBIDDEN, "'%.200s' is in %s/%s/, which is "
					 "read-only (%s)", t->apath, t->mount->path, reserved[i],
					 i ? "skills come from the agent's settings"
					   : "the memory calls write it");
	}
	return 0;
}

/* What each read scope (an MCP session: agent.h) last read or wrote, in
 * memory, per organization: scoped[org]["agent US scope US vol US path"] ->
 * [version, sha256, used_ms]. Bounded per organization, so that one that
 * makes many sessions pushes out only its own records: past SCOPED_PER_ORG
 * entries its least recently used half goes (a scope that lost its entry is
 * told "read it first" again); past SCOPED_MAX in all, the largest
 * organization's half goes. */
#define SCOPED_PER_ORG 100000
#define SCOPED_MAX 400000
static pthread_mutex_t scoped_mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *scoped;
static size_t scoped_n; /* entries of every organization */

static char *scoped_key(const cof_agent *a, const cof_target *t)
{
	char *k = NULL;

	if (asprintf(&k, "%s\x1f%s\x1f%s\x1f%s", a->id, a->scope, t->mount->vol, t->vpath) < 0)
		return NULL;
	return k;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

/* Drops the least recently used half of one organization's entries (under
 * scoped_mu). */
static void scoped_trim(json_t *org)
{
	size_t n = json_object_size(org), i = 0;
	int64_t *used = n ? malloc(n * sizeof *used) : NULL;
	const char *k;
	json_t *v;
	void *tmp;

	if (!used)
		return;
	json_object_foreach(org, k, v)
		used[i++] = json_integer_value(json_array_get(v, 2));
	qsort(used, n, sizeof *used, cmp_i64);
	int64_t cut = used[n / 2];
	free(used);
	json_object_foreach_safe(org, tmp, k, v)
		if (json_integer_value(json_array_get(v, 2)) <= cut) {
			json_object_del(org, k);
			scoped_n--;
		}
}

/* The largest organization's entries (under scoped_mu). */
static json_t *scoped_largest(void)
{
	json_t *big = NULL, *o;
	const char *k;

	json_object_foreach(scoped, k, o)
		if (!big || json_object_size(o) > json_object_size(big))
			big = o;
	return big;
}

int cof_agent_seen_get(cof_store *st, const cof_agent *a, const cof_target *t,
		       int64_t *version, char sha[65], cof_err *err)
{
	if (!a->scope)
		return cof_meta_seen_get(st->meta, a->org, a->id, t->mount->vol, t->vpath,
					 version, sha, err);
	char *k = scoped_key(a, t);
	int found = 0;

	if (!k)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	pthread_mutex_lock(&scoped_mu);
	json_t *org = scoped ? json_object_get(scoped, a->org) : NULL;
	json_t *v = org ? json_object_get(org, k) : NULL;
	if (v) {
		*version = json_integer_value(json_array_get(v, 0));
		snprintf(sha, 65, "%s", json_string_value(json_array_get(v, 1)));
		json_array_set_new(v, 2, json_integer(cof_mono_ms()));
		found = 1;
	}
	pthread_mutex_unlock(&scoped_mu);
	free(k);
	return found;
}

/* Records for a->scope (in memory) what the agent saw of t. */
static int scoped_put(const cof_agent *a, const cof_target *t, int64_t version,
		      const char *sha, cof_err *err)
{
	char *k = scoped_key(a, t);
	json_t *v = json_pack("[I, s, I]", (json_int_t)version, sha ? sha : "",
			      (json_int_t)cof_mono_ms());
	json_t *org = NULL;
	int rc = 0;

	pthread_mutex_lock(&scoped_mu);
	if (!scoped)
		scoped = json_object();
	if (scoped && !(org = json_object_get(scoped, a->org)) && (org = json_object()) &&
	    json_object_set_new(scoped, a->org, org))
		org = NULL;
	if (!k || !v || !org) {
		rc = cof_error(err, COF_EINTERNAL, "out of memory");
	} else {
		if (json_object_size(org) >= SCOPED_PER_ORG)
			scoped_trim(org);
		else if (scoped_n >= SCOPED_MAX)
			scoped_trim(scoped_largest());
		scoped_n += !json_object_get(org, k);
		json_object_set_new(org, k, v);
		v = NULL;
	}
	pthread_mutex_unlock(&scoped_mu);
	json_decref(v);
	free(k);
	return rc;
}

int cof_agent_seen_put(cof_store *st, const cof_agent *a, const cof_target *t,
		       int64_t version, const char *sha, cof_err *err)
{
	/* the agent-wide record is kept whatever the scope */
	if (cof_meta_seen_put(st->meta, a->org, a->id, t->mount->vol, t->vpath, version, sha,
			      err))
		return -1;
	return a->scope ? scoped_put(a, t, version, sha, err) : 0;
}

int cof_agent_seen_put_many(cof_store *st, const cof_agent *a, const cof_mount *mount,
			    const cof_seen_row *rows, size_t n, cof_err *err)
{
	cof_target *t;
	int rc = 0;

	if (cof_meta_seen_put_many(st->meta, a->org, a->id, mount->vol, rows, n, err))
		return -1;
	if (!a->scope || !n)
		return 0;
	if (!(t = cof_calloc(1, sizeof *t)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	t->mount = mount;
	for (size_t i = 0; !rc && i < n; i++) {
		snprintf(t->vpath, sizeof t->vpath, "%s", rows[i].path);
		rc = scoped_put(a, t, rows[i].version, rows[i].sha, err);
	}
	free(t);
	return rc;
}

int cof_tool_refuse(json_t **out, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	*out = json_pack("{s:b, s:s}", "ok", 0, "output", msg);
	return 0;
}
