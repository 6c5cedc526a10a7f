/*
 * uploads.c — files sent to an agent. Without a subject (seed 001): saved at
 * uploads/{requestId}/{name} by the placement rule (cof_agent_place: the
 * workspace wherever mounted, else a read-write /workspace, else the first
 * read-write mount). For a subject (seed 003): kept with the
 * subject's conversation, never on a volume it or anyone's calls write, and
 * seen by that subject alone at /attachments/{requestId}/{name}. At most 20
 * a request and 256 MiB each. A retry of the same upload never writes twice:
 * the first write of a name wins and is answered again.
 *
 * Tool outputs (seed 001: "files tools return under tool-outputs/") follow
 * the same placement rule at tool-outputs/{callId}/{name}; for a subject,
 * its own workspace (/user), where its calls and file tools work. The rule
 * also says where the model keeps scratch files (tmp/): GET /v1/agents/{id}
 * answers the three places, and coffer mcp tells the model.
 */
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"

static const char *const place_folder[] = {"uploads", "tool-outputs", "tmp"};
static const char *const place_what[] = {"uploads", "tool outputs", "scratch files"};

/* The one placement rule (seed 001 "Volumes"). For a subject: its
 * attachments (uploads) or its own workspace, /user (tool outputs, tmp/);
 * never seed 001's place, which others' calls see. Else the workspace
 * wherever it is mounted, else a read-write mount at /workspace (one given
 * in its place), else the first read-write mount. */
const cof_mount *cof_agent_place(const cof_agent *a, cof_place kind, char *dir, size_t dirsz)
{
	const cof_mount *m = NULL;

	for (size_t i = 0; a->subject[0] && !m && i < a->nmounts; i++)
		if (kind == COF_PLACE_UPLOADS ? a->mounts[i].attachments : a->mounts[i].reserved)
			m = &a->mounts[i];
	for (size_t i = 0; !a->subject[0] && !m && i < a->nmounts; i++)
		if (a->mounts[i].workspace)
			m = &a->mounts[i];
	for (size_t i = 0; !a->subject[0] && !m && i < a->nmounts; i++)
		if (a->mounts[i].rw && !strcmp(a->mounts[i].path, "/workspace"))
			m = &a->mounts[i];
	for (size_t i = 0; !a->subject[0] && !m && i < a->nmounts; i++)
		if (a->mounts[i].rw)
			m = &a->mounts[i];
	/* attachments are {request}/{name} of their mount: no folder of ours */
	if (m && (size_t)snprintf(dir, dirsz, "%s%s%s", m->subpath,
				  m->subpath[0] && !m->attachments ? "/" : "",
				  m->attachments ? "" : place_folder[kind]) >= dirsz)
		return NULL; /* never: dirsz is COF_PATH_MAX + 1, subpath shorter */
	return m;
}

json_t *cof_agent_places_json(const cof_agent *a)
{
	json_t *out = json_object();
	static const char *const key[] = {"uploads", "toolOutputs", "tmp"};

	for (int k = COF_PLACE_UPLOADS; k <= COF_PLACE_TMP; k++) {
		char dir[COF_PATH_MAX + 1], ap[COF_AGENT_PATH_MAX + 1];
		const cof_mount *m = cof_agent_place(a, (cof_place)k, dir, sizeof dir);
		if (m)
			cof_agent_path_of(m, dir, ap, sizeof ap);
		json_object_set_new(out, key[k], m ? json_string(ap) : json_null());
	}
	return out;
}

/* A request id or file name: one path segment. */
static int segment_check(const char *s, const char *what, cof_err *err)
{
	const char *ok;

	if (strchr(s, '/'))
		return cof_error(err, COF_EVALIDATION, "%s '%.100s' must not contain '/'", what, s);
	return cof_path_check(s, strlen(s), what, &ok, err);
}

/* A tool call's id (the model's tool_use/call id): 1..128 printable ASCII,
 * one path segment. */
static int call_id_check(const char *s, cof_err *err)
{
	size_t n = strlen(s);

	if (n < 1 || n > COF_CALL_ID_MAX)
		return cof_error(err, COF_EVALIDATION, "call id must be 1 to %d bytes (it is %zu)",
				 COF_CALL_ID_MAX, n);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return cof_error(err, COF_EVALIDATION, "call id must be printable ASCII "
					 "without spaces");
	return segment_check(s, "call id", err);
}

/* The id segment of what is placed: a request id, or a call id. */
static int id_check(int kind, const char *s, cof_err *err);

static int count_file(void *ctx, const cof_entry *e)
{
	(*(int64_t *)ctx)++;
	return 0;
}

/* The existing upload as the answer of a retry. */
static int answer_existing(cof_store *st, const cof_agent *a, const cof_target *t,
			   json_t **out, cof_err *err)
{
	cof_file f;

	if (cof_file_open(st, a->org, t->mount->vol, t->vpath, NULL, &f, err))
		return -1;
	*out = json_pack("{s:s, s:I, s:I, s:s, s:s, s:b}", "path", t->apath, "version",
			 (json_int_t)f.version, "size", (json_int_t)f.size, "contentType",
			 f.content_type, "sha256", f.sha256, "replayed", 1);
	cof_file_close(&f);
	return 0;
}

/* Where a file lands: t->mount and t->vpath = {place}/{request}/{name}
 * (cof_agent_place) and the folder `dir`. 0, or -1 with err (409 without a
 * writable place, 400 past the path limit). */
static int place_target(const cof_agent *a, const char *id, int kind, const char *request,
			const char *name, cof_target *t, char dir[COF_PATH_MAX + 1], cof_err *err)
{
	char folder[COF_PATH_MAX + 1];
	const cof_mount *m = cof_agent_place(a, (cof_place)kind, folder, sizeof folder);

	if (!m)
		return cof_error(err, COF_ECONFLICT, "agent '%s' has no writable place for %s "
				 "(no workspace and no read-write mount)", id, place_what[kind]);
	t->mount = m;
	if ((size_t)snprintf(dir, COF_PATH_MAX + 1, "%s%s%s/", folder, folder[0] ? "/" : "",
			     request) >= COF_PATH_MAX + 1 ||
	    (size_t)snprintf(t->vpath, sizeof t->vpath, "%s%s", dir, name) >= sizeof t->vpath)
		return cof_error(err, COF_EVALIDATION, "the file's path is over %d bytes",
				 COF_PATH_MAX);
	cof_agent_path_of(m, t->vpath, t->apath, sizeof t->apath);
	return 0;
}

static int id_check(int kind, const char *s, cof_err *err)
{
	return kind == COF_PLACE_UPLOADS ? segment_check(s, "request id", err) : call_id_check(s, err);
}

static int upload_target(const cof_agent *a, const char *id, const char *request,
			 const char *name, cof_target *t, char dir[COF_PATH_MAX + 1],
			 cof_err *err)
{
	return place_target(a, id, COF_PLACE_UPLOADS, request, name, t, dir, err);
}

int cof_agent_upload_target(const cof_agent *a, const char *request, const char *name,
			    cof_target *t, cof_err *err)
{
	char dir[COF_PATH_MAX + 1];

	if (segment_check(request, "request id", err) || segment_check(name, "file name", err) ||
	    upload_target(a, a->id, request, name, t, dir, err))
		return -1;
	return cof_agent_allowed(a, t->apath, 0, err);
}

int cof_agent_upload_count(cof_store *st, const cof_agent *a, const cof_target *t,
			   int64_t *n, cof_err *err)
{
	cof_view view;
	char dir[COF_PATH_MAX + 1];
	const char *slash = strrchr(t->vpath, '/');
	size_t len = slash ? (size_t)(slash - t->vpath) + 1 : 0;

	*n = 0;
	memcpy(dir, t->vpath, len);
	dir[len] = '\0';
	if (cof_view_open(st, a->org, t->mount->vol, NULL, &view, err))
		return -1;
	return cof_meta_list(st->meta, view.vno, view.seq, dir, NULL, count_file, n, err);
}

static int place_room(cof_store *st, const char *org, const char *id, const char *subject,
		      int kind, const char *request, const char *name, cof_upload *up,
		      int64_t declared, cof_err *err)
{
	cof_agent a;
	cof_target t = {0};
	char dir[COF_PATH_MAX + 1];
	int rc;

	if (id_check(kind, request, err) || segment_check(name, "file name", err) ||
	    cof_agent_load_as(st, org, id, subject, 1, &a, err))
		return -1;
	rc = place_target(&a, id, kind, request, name, &t, dir, err) ||
	     cof_upload_room(up, org, t.mount->vol, t.vpath, declared, err) ? -1 : 0;
	cof_agent_release(&a);
	return rc;
}

int cof_agent_upload_room(cof_store *st, const char *org, const char *id,
			  const char *subject, const char *request, const char *name,
			  cof_upload *up, int64_t declared, cof_err *err)
{
	return place_room(st, org, id, subject, COF_PLACE_UPLOADS, request, name, up, declared, err);
}

int cof_agent_tool_output_room(cof_store *st, const char *org, const char *id,
			       const char *subject, const char *call, const char *name,
			       cof_upload *up, int64_t declared, cof_err *err)
{
	return place_room(st, org, id, subject, COF_PLACE_TOOL_OUTPUTS, call, name, up, declared,
			  err);
}

static int place_save(cof_store *st, const char *org, const char *id, const char *subject,
		      int kind, const char *request, const char *name, cof_upload *up,
		      const char *content_type, const cof_by *by, json_t **out, int *created,
		      cof_err *err)
{
	cof_agent a;
	cof_target t = {0};
	const cof_mount *m;
	cof_view view;
	char dir[COF_PATH_MAX + 1];
	int64_t n = 0;
	int rc = -1;

	*created = 0;
	if (id_check(kind, request, err) || segment_check(name, "file name", err) ||
	    cof_agent_load_as(st, org, id, subject, 1, &a, err)) {
		cof_upload_abort(up);
		return -1;
	}
	if (place_target(&a, id, kind, request, name, &t, dir, err))
		goto out;
	m = t.mount;
	if (cof_agent_allowed(&a, t.apath, 0, err))
		goto out;
	if (cof_view_open(st, org, m->vol, NULL, &view, err) ||
	    cof_meta_list(st->meta, view.vno, view.seq, dir, NULL, count_file, &n, err))
		goto out;
	cof_entry *e = cof_malloc(sizeof *e);
	int r = e ? cof_meta_entry_get(st->meta, view.vno, t.vpath, -1, e, err) : -1;
	free(e);
	if (r < 0)
		goto out;
	if (r == 1) { /* a retry: the first write stands */
		rc = answer_existing(st, &a, &t, out, err);
		goto out;
	}
	if (n >= COF_UPLOADS_PER_REQUEST) {
		cof_error(err, COF_ECONFLICT, "%s '%s' already has %lld files; the limit is %d",
			  kind == COF_PLACE_UPLOADS ? "request" : "call", request, (long long)n,
			  COF_UPLOADS_PER_REQUEST);
		goto out;
	}
	/* an upload's request id is its run's id (seed 001: uploads/<run id>/) */
	cof_cond absent = {.kind = COF_COND_ABSENT, .version = 0,
			   .by = cof_agent_by_set(&a, by, kind == COF_PLACE_UPLOADS ? request : NULL,
						  kind == COF_PLACE_TOOL_OUTPUTS ? request : NULL)};
	cof_err e2 = {0};
	rc = cof_file_put(st, org, m->vol, t.vpath, up, content_type, absent, out, created, &e2);
	up = NULL;
	if (rc && e2.code == COF_EPRECONDITION) { /* a concurrent retry won */
		cof_err_clear(&e2);
		rc = answer_existing(st, &a, &t, out, err);
	} else if (rc) {
		*err = e2;
	} else {
		json_object_set_new(*out, "path", json_string(t.apath));
		/* What the agent was sent stays stored until the agent is deleted. */
		rc = cof_meta_pin(st->meta, org, id,
				  json_string_value(json_object_get(*out, "sha256")), err);
	}
out:
	cof_upload_abort(up);
	cof_agent_release(&a);
	return rc;
}

int cof_agent_upload(cof_store *st, const char *org, const char *id, const char *subject,
		     const char *request, const char *name, cof_upload *up,
		     const char *content_type, const cof_by *by, json_t **out, int *created,
		     cof_err *err)
{
	return place_save(st, org, id, subject, COF_PLACE_UPLOADS, request, name, up, content_type,
			  by, out, created, err);
}

int cof_agent_tool_output(cof_store *st, const char *org, const char *id, const char *subject,
			  const char *call, const char *name, cof_upload *up,
			  const char *content_type, const cof_by *by, json_t **out, int *created,
			  cof_err *err)
{
	return place_save(st, org, id, subject, COF_PLACE_TOOL_OUTPUTS, call, name, up,
			  content_type, by, out, created, err);
}
