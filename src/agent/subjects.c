/*
 * subjects.c — subject workspaces: one durable volume per (agent, subject),
 * made on first use, with the reserved top folders memories/ (written only
 * through the memory calls) and skills/ (written when a session starts, from
 * the agent's skills).
 *
 * Storage: the subjects table maps (org, agent, subject) to a volume id. The
 * agent's skills are files NAME.md of one more volume of its own, recorded in
 * the same table under subject "" (never a valid subject id), so skill content
 * is stored, deduplicated and collected like any file. Deleting the agent
 * deletes all these volumes (cof_agent_subjects_delete).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"

#define SUBJECT_ID_MAX 128
#define SKILL_NAME_MAX 100
#define LIST_MAX 10000
#define SKILLS_ROW ""            /* the subjects row naming the skills volume */

/* Who a write in a subject's workspace is by: the caller's key, run and via,
 * this agent and subject (API.md "Who"); `caller` NULL: not said. */
static cof_cond by_cond(cof_by *b, const cof_by *caller, const char *agent,
			const char *subject)
{
	return (cof_cond){.kind = COF_COND_NONE, .version = 0,
			  .by = cof_by_for(b, caller, agent, subject, NULL, NULL)};
}

/* ----------------------------------------------------------- checks */

/* True for the bytes a subject id (with '@') or a skill name (without) may hold. */
static int id_byte(char c, int at_ok)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || (at_ok && c == '@');
}

/* A subject id: 1..128 bytes of [A-Za-z0-9._@-], not '.' or '..'. */
static int subject_check(const char *s, cof_err *err)
{
	size_t n = strlen(s);

	if (n == 0 || n > SUBJECT_ID_MAX)
		return cof_error(err, COF_EVALIDATION, "subject id must be 1 to %d bytes (it is %zu)",
				 SUBJECT_ID_MAX, n);
	/* as agent ids: an id that is a path step would name the wrong folder
	 * wherever ids become path segments (URLs, mounts, logs) */
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return cof_error(err, COF_EVALIDATION, "subject id must not be '.' or '..'");
	for (size_t i = 0; i < n; i++)
		if (!id_byte(s[i], 1))
			return cof_error(err, COF_EVALIDATION, "subject id may hold only letters, "
					 "digits, '.', '_', '@' and '-'");
	return 0;
}

/* Fails with COF_ENOTFOUND naming the agent when it does not exist. */
static int agent_exists(cof_store *st, const char *org, const char *agent, cof_err *err)
{
	cof_agentrow r;

	if (cof_meta_agent_get(st->meta, org, agent, &r, err))
		return -1;
	free(r.settings);
	return 0;
}

/* A path given to a files call: checked, without its one optional leading '/'. */
static int path_arg(const char *path, const char *what, const char **out, cof_err *err)
{
	if (!path)
		return cof_error(err, COF_EVALIDATION, "'%s' is required", what);
	return cof_path_check(path, strlen(path), what, out, err);
}

/* The reserved top folder `p` is in ("memories" or "skills"), or NULL. */
static const char *reserved_in(const char *p)
{
	static const char *const names[] = {"memories", "skills"};

	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(names[i]);
		if (!strncmp(p, names[i], n) && (p[n] == '\0' || p[n] == '/'))
			return names[i];
	}
	return NULL;
}

/* Refuses (COF_EFORBIDDEN) a files call that would change a reserved folder. */
static int changeable(const char *p, cof_err *err)
{
	const char *r = reserved_in(p);

	if (!r)
		return 0;
	return cof_error(err, COF_EFORBIDDEN, "'%.200s' is in %s/, which is reserved: the files "
			 "calls cannot write, move or delete there (%s)", p, r,
			 r[0] == 'm' ? "use the memory calls for USER.md and MEMORY.md"
				     : "skills are written when a session starts");
}

/* ----------------------------------------------------------- volumes */

/* Serialises first uses, so that one row gets one volume. */
static pthread_mutex_t make_mu = PTHREAD_MUTEX_INITIALIZER;

/* Makes the volume of row `key` and records it; another recorded first wins. */
static int volume_make(cof_store *st, const char *org, const char *agent, const char *key,
		       char vol[48], cof_err *err)
{
	json_t *body, *out = NULL;
	char name[256], made[48];
	int created, r;

	const char *slash = key[0] == '#' ? strchr(key, '/') : NULL;

	if (slash) /* "#NAME/SUBJECT": a row of the subject's, beside its workspace */
		snprintf(name, sizeof name, "%.*s of subject %.100s of agent %.120s",
			 (int)(slash - key - 1), key + 1, slash + 1, agent);
	else if (key[0] == '#') /* a row of the agent's own, named after it */
		snprintf(name, sizeof name, "%.100s of agent %.120s", key + 1, agent);
	else if (key[0])
		snprintf(name, sizeof name, "subject %.100s of agent %.120s", key, agent);
	else
		snprintf(name, sizeof name, "skills of agent %.120s", agent);
	body = json_pack("{s:s}", "name", name);
	r = cof_volume_create(st, org, body, NULL, &out, &created, err);
	json_decref(body);
	if (r)
		return -1;
	snprintf(made, sizeof made, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	r = cof_meta_subject_add(st->meta, org, agent, key, made, err);
	if (r == 1) {
		memcpy(vol, made, sizeof made);
		return 0;
	}
	cof_err e2 = {0};
	cof_volume_delete(st, org, made, &e2);
	cof_err_clear(&e2);
	if (r < 0)
		return -1;
	r = cof_meta_subject_get(st->meta, org, agent, key, vol, err);
	return r == 1 ? 0 : r < 0 ? -1 : cof_error(err, COF_EINTERNAL, "subject row vanished");
}

/* The volume of row `key` of the agent, made on first use. */
static int volume_of(cof_store *st, const char *org, const char *agent, const char *key,
		     char vol[48], cof_err *err)
{
	return cof_agent_own_volume(st, org, agent, key, vol, err);
}

int cof_agent_own_volume(cof_store *st, const char *org, const char *agent, const char *key,
			 char vol[48], cof_err *err)
{
	int r = cof_meta_subject_get(st->meta, org, agent, key, vol, err);

	if (r)
		return r < 0 ? -1 : 0;
	pthread_mutex_lock(&make_mu);
	r = cof_meta_subject_get(st->meta, org, agent, key, vol, err);
	if (r == 0)
		r = volume_make(st, org, agent, key, vol, err);
	pthread_mutex_unlock(&make_mu);
	return r < 0 ? -1 : 0;
}

/* Checks the subject id and the agent, then finds or makes the workspace. */
static int subject_open(cof_store *st, const char *org, const char *agent,
			const char *subject, char vol[48], cof_err *err)
{
	if (subject_check(subject, err) || agent_exists(st, org, agent, err))
		return -1;
	return volume_of(st, org, agent, subject, vol, err);
}

/* ----------------------------------------------------------- acting for one */

/* The row of a subject's conversations volume: "#conversations/SUBJECT" ('/'
 * is in no subject id, so it names no subject's workspace). */
static void conv_row(const char *subject, char *out, size_t outsz)
{
	snprintf(out, outsz, "#conversations/%s", subject);
}

int cof_agent_subject_conv(cof_store *st, const char *org, const char *agent,
			   const char *subject, char vol[48], cof_err *err)
{
	char row[SUBJECT_ID_MAX + 32];

	if (subject_check(subject, err))
		return -1;
	conv_row(subject, row, sizeof row);
	return cof_meta_subject_get(st->meta, org, agent, row, vol, err);
}

/* Appends mount `path` of volume `vol` (under `sub`) to a's mounts, refusing
 * an agent mount at, above or below it. */
static cof_mount *mount_add(cof_agent *a, const char *path, const char *vol, const char *sub,
			    cof_err *err)
{
	size_t pl = strlen(path);
	cof_mount *m;

	for (size_t i = 0; i < a->nmounts; i++) {
		const char *mp = a->mounts[i].path;
		size_t ml = strlen(mp), n = ml < pl ? ml : pl;
		if (!strncmp(mp, path, n) && (ml == pl || (ml < pl ? path[ml] : mp[pl]) == '/')) {
			cof_error(err, COF_ECONFLICT, "agent '%s' has a mount at %s, where a "
				  "subject's %s goes; move that mount to use the agent with "
				  "subjects", a->id, mp, path);
			return NULL;
		}
	}
	if (a->nmounts >= sizeof a->mounts / sizeof *a->mounts) {
		cof_error(err, COF_EINTERNAL, "no room for a subject's mounts");
		return NULL;
	}
	m = &a->mounts[a->nmounts++];
	memset(m, 0, sizeof *m);
	snprintf(m->path, sizeof m->path, "%s", path);
	snprintf(m->vol, sizeof m->vol, "%s", vol);
	snprintf(m->subpath, sizeof m->subpath, "%s", sub);
	return m;
}

int cof_agent_as_subject(cof_store *st, cof_agent *a, const char *subject, int make,
			 cof_err *err)
{
	char user[48], row[SUBJECT_ID_MAX + 32];
	cof_mount *m;
	int has;

	if (!subject || !subject[0])
		return 0;
	if (subject_check(subject, err))
		return -1;
	conv_row(subject, row, sizeof row);
	/* without attachments there is no /attachments: a call then needs no
	 * read-only view for it (turn/views.c) */
	has = make ? volume_of(st, a->org, a->id, row, a->conv, err) == 0 ? 1 : -1
		   : cof_meta_subject_get(st->meta, a->org, a->id, row, a->conv, err);
	if (has < 0 || volume_of(st, a->org, a->id, subject, user, err))
		return -1;
	if (!(m = mount_add(a, "/user", user, "", err)))
		return -1;
	m->rw = 1;
	m->reserved = 1;
	if (has && !(m = mount_add(a, "/" COF_ATTACH_DIR, a->conv, COF_ATTACH_DIR, err))) {
		a->nmounts--; /* all or nothing */
		return -1;
	}
	if (has)
		m->attachments = 1;
	snprintf(a->subject, sizeof a->subject, "%s", subject);
	return 0;
}

int cof_agent_load_as(cof_store *st, const char *org, const char *id, const char *subject,
		      int make, cof_agent *out, cof_err *err)
{
	if (cof_agent_load(st, org, id, out, err))
		return -1;
	if (cof_agent_as_subject(st, out, subject, make, err)) {
		cof_agent_release(out);
		return -1;
	}
	return 0;
}

/* Checks the subject id and the agent, then finds the workspace without
 * making it: a read never makes state (issue 32.10: a read-only key made
 * subject volumes by GET). 1 found, 0 the subject has none yet, -1 error. */
static int subject_find(cof_store *st, const char *org, const char *agent,
			const char *subject, char vol[48], cof_err *err)
{
	if (subject_check(subject, err) || agent_exists(st, org, agent, err))
		return -1;
	return cof_meta_subject_get(st->meta, org, agent, subject, vol, err);
}

/* 1 when `path` is a file of the view, 0 when not. */
static int is_file(cof_store *st, const cof_view *v, const char *path, cof_err *err)
{
	cof_entry *e = cof_malloc(sizeof *e);
	int r;

	if (!e)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	r = cof_meta_entry_get(st->meta, v->vno, path, v->seq, e, err);
	free(e);
	return r;
}

static int stop_at_first(void *ctx, const cof_entry *e)
{
	*(int *)ctx = 1;
	return 1;
}

/* 1 when folder `dir` (no trailing '/') holds a file at any depth, 0 when not. */
static int folder_exists(cof_store *st, const cof_view *v, const char *dir, cof_err *err)
{
	char prefix[COF_PATH_MAX + 2];
	int found = 0;

	snprintf(prefix, sizeof prefix, "%s/", dir);
	if (cof_meta_list(st->meta, v->vno, v->seq, prefix, NULL, stop_at_first, &found, err))
		return -1;
	return found;
}

/* ----------------------------------------------------------- files */

static const cof_jfield put_fields[] = {
	{"path", COF_JSTR, 1}, {"encoding", COF_JSTR, 0}, {"content", COF_JSTR, 1},
	{"createParents", COF_JBOOL, 0}, {NULL, 0, 0}};

/* With createParents false: the parent folder of `path` must exist. */
static int parent_check(cof_store *st, const char *org, const char *vol, const char *path,
			cof_err *err)
{
	const char *slash = strrchr(path, '/');
	char dir[COF_PATH_MAX + 1];
	cof_view v;
	int r;

	if (!slash)
		return 0; /* the root always exists */
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	if (cof_view_open(st, org, vol, NULL, &v, err) || (r = is_file(st, &v, dir, err)) < 0)
		return -1;
	if (r == 1)
		return cof_error(err, COF_ECONFLICT, "'%.200s' is a file, not a folder", dir);
	if ((r = folder_exists(st, &v, dir, err)) < 0)
		return -1;
	if (r == 0)
		return cof_error(err, COF_ENOTFOUND, "folder '%.200s' does not exist and "
				 "createParents is false (omit it or pass true to make folders as "
				 "needed)", dir);
	return 0;
}

int cof_subject_file_put(cof_store *st, const char *org, const char *agent,
			 const char *subject, json_t *body, const cof_by *by, json_t **out,
			 int *created, cof_err *err)
{
	cof_by b;
	cof_cond cond = by_cond(&b, by, agent, subject);
	const char *path, *enc;
	json_t *content;
	unsigned char *dec = NULL;
	const void *data;
	size_t len;
	char vol[48];
	int rc = -1;

	*created = 0;
	if (cof_json_check(body, put_fields, err) ||
	    path_arg(cof_json_str(body, "path"), "path", &path, err) || changeable(path, err))
		return -1;
	enc = cof_json_str(body, "encoding");
	content = json_object_get(body, "content");
	if (!enc || !strcmp(enc, "utf-8")) {
		data = json_string_value(content);
		len = json_string_length(content);
	} else if (!strcmp(enc, "base64")) {
		if (cof_base64_decode(json_string_value(content), json_string_length(content), &dec,
				      &len))
			return cof_error(err, COF_EVALIDATION,
					 "'content' is not valid base64 (standard alphabet, padded)");
		data = dec;
	} else {
		return cof_error(err, COF_EVALIDATION,
				 "'encoding' must be \"utf-8\" or \"base64\", not '%.40s'", enc);
	}
	if (!subject_open(st, org, agent, subject, vol, err) &&
	    (cof_json_bool(body, "createParents", 1) || !parent_check(st, org, vol, path, err)))
		rc = cof_file_put_bytes(st, org, vol, path, data, len, NULL, cond, out, created,
					err);
	free(dec);
	return rc;
}

int cof_subject_file_list(cof_store *st, const char *org, const char *agent,
			  const char *subject, const char *path, json_t **out, cof_err *err)
{
	json_t *entries = NULL;
	char dir[COF_PATH_MAX + 2] = "", prefix[COF_PATH_MAX + 2] = "", vol[48];
	const char *d = "";
	cof_view v;
	int r, more = 0;

	if (path && path[0] && strcmp(path, "/")) {
		size_t n = strlen(path);
		while (n > 1 && path[n - 1] == '/') /* "dir/" names the folder */
			n--;
		if (n > COF_PATH_MAX + 1)
			return cof_error(err, COF_EVALIDATION, "'path' is over %d bytes", COF_PATH_MAX);
		memcpy(dir, path, n);
		dir[n] = '\0';
		if (path_arg(dir, "path", &d, err))
			return -1;
		snprintf(prefix, sizeof prefix, "%s/", d);
	}
	if ((r = subject_find(st, org, agent, subject, vol, err)) < 0)
		return -1;
	if (r == 0) { /* no workspace yet: an empty one */
		if (d[0])
			return cof_error(err, COF_ENOTFOUND, "folder '%.200s' not found", d);
		*out = json_pack("{s:s, s:[]}", "path", d, "entries");
		return 0;
	}
	if (cof_view_open(st, org, vol, NULL, &v, err))
		return -1;
	if (d[0] && (r = is_file(st, &v, d, err)) != 0) {
		if (r == 1)
			cof_error(err, COF_ECONFLICT, "'%.200s' is a file, not a folder", d);
		return -1;
	}
	if (cof_folder_children(st, &v, prefix, LIST_MAX, NULL, NULL, &entries, &more, err))
		return -1;
	if (d[0] && json_array_size(entries) == 0) {
		json_decref(entries);
		return cof_error(err, COF_ENOTFOUND, "folder '%.200s' not found", d);
	}
	*out = json_pack("{s:s, s:o}", "path", d, "entries", entries);
	if (more)
		json_object_set_new(*out, "truncated", json_true());
	return 0;
}

int cof_subject_file_open(cof_store *st, const char *org, const char *agent,
			  const char *subject, const char *path, cof_file *out, cof_err *err)
{
	const char *p;
	char vol[48];

	int r;

	memset(out, 0, sizeof *out);
	if (path_arg(path, "path", &p, err) ||
	    (r = subject_find(st, org, agent, subject, vol, err)) < 0)
		return -1;
	if (r == 0)
		return cof_error(err, COF_ENOTFOUND, "file '%.200s' not found", p);
	return cof_file_open(st, org, vol, p, NULL, out, err);
}

static const cof_jfield move_fields[] = {
	{"from", COF_JSTR, 1}, {"to", COF_JSTR, 1}, {"overwrite", COF_JBOOL, 0}, {NULL, 0, 0}};

/* The subject's volume is /user in the agent's calls, where the agent's
 * exclusions hold (from the volume's root): what a move hides by them. */
static int subject_hidden(const void *ctx, const char *vpath, int is_dir)
{
	static const cof_mount whole; /* no subpath: the volume's root */

	return cof_agent_excluded_vpath(ctx, &whole, vpath, is_dir);
}

int cof_subject_file_move(cof_store *st, const char *org, const char *agent,
			  const char *subject, json_t *body, const cof_by *caller, json_t **out,
			  cof_err *err)
{
	const char *from, *to;
	char vol[48];
	cof_agent a;
	int rc;

	if (cof_json_check(body, move_fields, err) ||
	    path_arg(cof_json_str(body, "from"), "from", &from, err) ||
	    path_arg(cof_json_str(body, "to"), "to", &to, err) || changeable(from, err) ||
	    changeable(to, err) || subject_open(st, org, agent, subject, vol, err) ||
	    cof_agent_load(st, org, agent, &a, err))
		return -1;
	/* an excluded file never moves into the call's sight: a folder's
	 * excluded files stay where they are */
	cof_by by;
	cof_cond cond = by_cond(&by, caller, agent, subject);
	rc = cof_file_move_visible(st, org, vol, body, subject_hidden, &a, cond.by, out, err);
	cof_agent_release(&a);
	return rc;
}

typedef struct remove_ctx {
	const char *path;
	int64_t removed;
} remove_ctx;

/* Removes the file at r->path, or else every file under the folder r->path. */
static int remove_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	remove_ctx *r = l->ctx;
	cof_entry *e = cof_malloc(sizeof *e);
	cof_items under = {0};
	char prefix[COF_PATH_MAX + 2];
	int rc = -1, is;

	r->removed = 0;
	if (!e)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	is = cof_txn_get(tx, r->path, e, err);
	free(e);
	if (is < 0)
		return -1;
	if (is == 1) {
		r->removed = 1;
		return cof_txn_remove(tx, r->path, err);
	}
	snprintf(prefix, sizeof prefix, "%s/", r->path);
	if (cof_txn_list(tx, prefix, cof_items_add, &under, err))
		goto out;
	if (under.over < 0) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (under.n == 0) {
		cof_error(err, COF_ENOTFOUND, "no file or folder '%.200s'", r->path);
		goto out;
	}
	for (size_t i = 0; i < under.n; i++)
		if (cof_txn_remove(tx, under.v[i].path, err))
			goto out;
	r->removed = (int64_t)under.n;
	rc = 0;
out:
	cof_items_release(&under);
	return rc;
}

int cof_subject_file_remove(cof_store *st, const char *org, const char *agent,
			    const char *subject, const char *path, const cof_by *by, json_t **out,
			    cof_err *err)
{
	remove_ctx r = {0};
	cof_volrow v;
	cof_by b;
	cof_landing l = {.vol = &v, .apply = remove_apply, .ctx = &r,
			 .by = by_cond(&b, by, agent, subject).by};
	char vol[48];

	if (path_arg(path, "path", &r.path, err) || changeable(r.path, err) ||
	    subject_open(st, org, agent, subject, vol, err) ||
	    cof_meta_volume_get(st->meta, org, vol, &v, err) || cof_land(st, &l, err))
		return -1;
	*out = json_pack("{s:s, s:I, s:I}", "path", r.path, "seq", (json_int_t)l.seq, "removed",
			 (json_int_t)r.removed);
	return 0;
}

/* The workspace's numbers; with `make`, the workspace is made when absent. */
static int subject_volume(cof_store *st, const char *org, const char *agent,
			  const char *subject, int make, json_t **out, cof_err *err)
{
	cof_volrow v;
	char vol[48];
	int r = make ? (subject_open(st, org, agent, subject, vol, err) ? -1 : 1)
		     : subject_find(st, org, agent, subject, vol, err);

	if (r == 0) { /* no workspace yet: what a new one would be, no id */
		*out = json_pack("{s:n, s:i, s:I, s:I, s:i}", "volumeId", "used", 0, "capacity",
				 (json_int_t)COF_DEFAULT_CAPACITY, "ceiling",
				 (json_int_t)COF_DEFAULT_CEILING, "files", 0);
		return 0;
	}
	if (r < 0 || cof_meta_volume_get(st->meta, org, vol, &v, err))
		return -1;
	*out = json_pack("{s:s, s:I, s:I, s:I, s:I}", "volumeId", v.id, "used",
			 (json_int_t)v.bytes, "capacity", (json_int_t)v.capacity, "ceiling",
			 (json_int_t)v.ceiling, "files", (json_int_t)v.files);
	return 0;
}

int cof_subject_volume(cof_store *st, const char *org, const char *agent,
		       const char *subject, json_t **out, cof_err *err)
{
	return subject_volume(st, org, agent, subject, 1, out, err);
}

int cof_subject_volume_read(cof_store *st, const char *org, const char *agent,
			    const char *subject, json_t **out, cof_err *err)
{
	return subject_volume(st, org, agent, subject, 0, out, err);
}

/* ----------------------------------------------------------- memory */

/* The memory file `name` at memories/{name}; only USER.md and MEMORY.md. */
static int memory_path(const char *name, char *out, size_t outsz, cof_err *err)
{
	if (strcmp(name, "USER.md") && strcmp(name, "MEMORY.md"))
		return cof_error(err, COF_ENOTFOUND, "no memory file '%.100s'; the memory files "
				 "are USER.md and MEMORY.md", name);
	snprintf(out, outsz, "memories/%s", name);
	return 0;
}

int cof_subject_memory_put(cof_store *st, const char *org, const char *agent,
			   const char *subject, const char *name, cof_upload *up,
			   const cof_by *by, json_t **out, int *created, cof_err *err)
{
	char path[32], vol[48];
	cof_by b;
	cof_cond cond = by_cond(&b, by, agent, subject);

	*created = 0;
	if (memory_path(name, path, sizeof path, err) ||
	    subject_open(st, org, agent, subject, vol, err)) {
		cof_upload_abort(up);
		return -1;
	}
	return cof_file_put(st, org, vol, path, up, NULL, cond, out, created, err);
}

int cof_subject_memory_open(cof_store *st, const char *org, const char *agent,
			    const char *subject, const char *name, cof_file *out, cof_err *err)
{
	char path[32], vol[48];
	cof_err e2 = {0};
	int r;

	memset(out, 0, sizeof *out);
	if (memory_path(name, path, sizeof path, err) ||
	    (r = subject_find(st, org, agent, subject, vol, err)) < 0)
		return -1;
	if (r == 0)
		return cof_error(err, COF_ENOTFOUND, "subject '%.128s' has no %s yet", subject,
				 name);
	if (!cof_file_open(st, org, vol, path, NULL, out, &e2))
		return 0;
	if (e2.code != COF_ENOTFOUND) {
		*err = e2;
		return -1;
	}
	cof_err_clear(&e2);
	return cof_error(err, COF_ENOTFOUND, "subject '%.128s' has no %s yet", subject, name);
}

/* ----------------------------------------------------------- skills */

static int count_file(void *ctx, const cof_entry *e)
{
	(*(int64_t *)ctx)++;
	return 0;
}

int cof_agent_skill_put(cof_store *st, const char *org, const char *agent, const char *file,
			cof_upload *up, const cof_by *by, json_t **out, int *created,
			cof_err *err)
{
	cof_by b;
	cof_cond cond = by_cond(&b, by, agent, NULL);
	size_t n = strlen(file);
	char vol[48];
	cof_view v;
	int64_t count = 0;
	json_t *put = NULL;
	int r;

	*created = 0;
	if (n < 3 || strcmp(file + n - 3, ".md")) {
		cof_upload_abort(up);
		return cof_error(err, COF_ENOTFOUND, "a skill is named NAME.md, not '%.120s'", file);
	}
	int bad = n == 3 || n - 3 > SKILL_NAME_MAX;
	for (size_t i = 0; i < n - 3; i++)
		bad |= !id_byte(file[i], 0);
	if (bad) {
		cof_upload_abort(up);
		return cof_error(err, COF_EVALIDATION, "a skill name must be 1 to %d bytes of "
				 "letters, digits, '.', '_' and '-'", SKILL_NAME_MAX);
	}
	if (agent_exists(st, org, agent, err) || volume_of(st, org, agent, SKILLS_ROW, vol, err) ||
	    cof_view_open(st, org, vol, NULL, &v, err) || (r = is_file(st, &v, file, err)) < 0 ||
	    (r == 0 && cof_meta_list(st->meta, v.vno, v.seq, "", NULL, count_file, &count, err))) {
		cof_upload_abort(up);
		return -1;
	}
	if (r == 0 && count >= COF_SKILLS_MAX) {
		cof_upload_abort(up);
		return cof_error(err, COF_ECONFLICT, "agent '%.120s' has %lld skills; the limit is %d",
				 agent, (long long)count, COF_SKILLS_MAX);
	}
	if (cof_file_put(st, org, vol, file, up, NULL, cond, &put, created, err))
		return -1;
	*out = json_pack("{s:s%, s:O, s:O, s:O}", "name", file, n - 3, "size",
			 json_object_get(put, "size"), "sha256", json_object_get(put, "sha256"),
			 "version", json_object_get(put, "version"));
	json_decref(put);
	return 0;
}

typedef struct session_ctx {
	cof_items skills;     /* NAME.md of the skills volume, in path order */
} session_ctx;

#define SKILLS_DIR "skills/"

/* Makes skills/ of the subject exactly the agent's skills. */
static int session_apply(cof_txn *tx, cof_landing *l, cof_err *err)
{
	session_ctx *s = l->ctx;
	cof_items live = {0};
	char path[COF_PATH_MAX + 1];
	size_t i = 0, j = 0, dl = strlen(SKILLS_DIR);
	int rc = -1;

	if (cof_txn_list(tx, SKILLS_DIR, cof_items_add, &live, err))
		goto out;
	if (live.over < 0) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	while (i < live.n || j < s->skills.n) {
		int c = i == live.n ? 1 : j == s->skills.n ? -1
			: strcmp(live.v[i].path + dl, s->skills.v[j].path);
		if (c < 0) {
			if (cof_txn_remove(tx, live.v[i++].path, err))
				goto out;
			continue;
		}
		cof_item *k = &s->skills.v[j++];
		if (c == 0 && !strcmp(live.v[i++].sha256, k->sha256))
			continue;
		snprintf(path, sizeof path, SKILLS_DIR "%s", k->path);
		if ((c != 0 && cof_volume_path_free(tx, path, err)) ||
		    cof_txn_write(tx, path, k->sha256, k->size, k->ctype, NULL, err))
			goto out;
	}
	rc = cof_volume_fit(tx, err);
out:
	cof_items_release(&live);
	return rc;
}

int cof_subject_session_start(cof_store *st, const char *org, const char *agent,
			      const char *subject, const cof_by *by, json_t **out, cof_err *err)
{
	session_ctx s = {.skills = {.glob = "*.md"}}; /* NAME.md at the root */
	char vol[48], skvol[48];
	cof_volrow v;
	cof_by b;
	cof_landing l = {.vol = &v, .apply = session_apply, .ctx = &s, .held = 1,
			 .by = by_cond(&b, by, agent, subject).by};
	cof_view sk;
	int r, rc = -1;

	if (subject_open(st, org, agent, subject, vol, err) ||
	    cof_meta_volume_get(st->meta, org, vol, &v, err) ||
	    (r = cof_meta_subject_get(st->meta, org, agent, SKILLS_ROW, skvol, err)) < 0)
		return -1;
	/* The skills' content is named by the skills volume until the change that
	 * names it again commits; holding the content from before the list is
	 * read keeps a replaced one alive (cof_land is told: held). */
	cof_store_hold_content(st);
	if (r == 1 && (cof_view_open(st, org, skvol, NULL, &sk, err) ||
		       cof_meta_list(st->meta, sk.vno, sk.seq, "", NULL, cof_items_add, &s.skills,
				     err)))
		goto out;
	if (s.skills.over < 0) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto out;
	}
	if (cof_land(st, &l, err))
		goto out;
	json_t *names = json_array();
	for (size_t i = 0; i < s.skills.n; i++)
		json_array_append_new(names, json_stringn(s.skills.v[i].path,
							  strlen(s.skills.v[i].path) - 3));
	*out = json_pack("{s:s, s:o}", "volumeId", vol, "skills", names);
	rc = 0;
out:
	cof_store_release_content(st);
	cof_items_release(&s.skills);
	return rc;
}

/* ----------------------------------------------------------- deletion */

static int collect_vol(void *ctx, const char *subject, const char *vol)
{
	json_array_append_new(ctx, json_string(vol));
	return 0;
}

int cof_agent_subjects_delete(cof_store *st, const char *org, const char *agent,
			      cof_err *err)
{
	json_t *vols = json_array(), *v;
	size_t i;
	int rc = -1;

	if (cof_meta_subject_list(st->meta, org, agent, collect_vol, vols, err))
		goto out;
	json_array_foreach(vols, i, v) {
		cof_err e2 = {0};
		if (cof_volume_delete(st, org, json_string_value(v), &e2) &&
		    e2.code != COF_ENOTFOUND) {
			*err = e2;
			goto out;
		}
		cof_err_clear(&e2);
	}
	rc = cof_meta_subject_delete_all(st->meta, org, agent, err);
out:
	json_decref(vols);
	return rc;
}
