/*
 * ops.c — an agent's operation on the user's folder: every check the server
 * makes before forwarding it (path, exclusions, mode, size, guard, counts,
 * time), the wait for the client's answer, and the checks of that answer.
 *
 * Order of the checks (the first that fails answers): the session (404,
 * 410), the body and the path (400), exclusions (403), read-only mode (403), a
 * protected path the user did not allow (403), the file size (413), the guard
 * (422), the counts (429), a connected client (503). A write's checks from
 * the exclusions to the guard are cof_write_check (policy.h), the one the
 * client makes too. Counts are taken when an op is forwarded, so a limit is
 * never crossed; a refused op counts nothing. Every op is logged with its
 * outcome.
 */
#include <stdlib.h>
#include <string.h>
#include "relay/relay.h"

enum { K_READ, K_WRITE, K_LIST, K_SEARCH };
static const char *const kinds[] = {"read_file", "write_file", "list_directory",
				    "search_files", NULL};

typedef struct opreq {
	int kind;
	const char *path;       /* checked; "" = the folder's root */
	const char *encoding;
	unsigned char *data;    /* a write's bytes (decoded) */
	size_t len;
	int blocked;
	int leaves;             /* a write trying to leave the folder (blocked) */
	cof_guard_hit hit;
	cof_err bad;            /* a refusal found before the session was looked up */
	char *trimmed;          /* a folder's path without its trailing '/' (owned) */
} opreq;

static const cof_jfield op_fields[] = {
	{"op", COF_JSTR, 1}, {"path", COF_JSTR, 0}, {"content", COF_JSTR, 0},
	{"encoding", COF_JSTR, 0}, {"pattern", COF_JSTR, 0}, {"glob", COF_JSTR, 0},
	{"maxResults", COF_JINT, 0}, {NULL, 0, 0}};

/* A path in the user's folder: relative, no control characters, and what
 * cof_path_check holds for volume paths. "" only where `folder` (a listing or
 * a search), where the path may also end in '/' (seed 004's
 * `listDirectory('src/')`): it is taken without it (q->trimmed). */
static int path_check(json_t *body, int folder, opreq *q, cof_err *err)
{
	json_t *v = json_object_get(body, "path");
	const char *p = json_string_value(v);
	size_t len = json_string_length(v);
	const char **out = &q->path;

	*out = "";
	if (folder && p && len > 1 && p[len - 1] == '/' && p[len - 2] != '/' &&
	    !memchr(p, '\0', len)) {
		q->trimmed = cof_strdup(p);
		q->trimmed[--len] = '\0';
		p = q->trimmed;
	}
	if (!p || !*p)
		return folder ? 0 : cof_error(err, COF_EVALIDATION, "'path' is required");
	if (p[0] == '/')
		return cof_error(err, COF_EVALIDATION,
				 "'path' must be relative to the shared folder, not start with '/'");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return cof_error(err, COF_EVALIDATION,
					 "'path' has a control character (byte 0x%02x at %zu)",
					 (unsigned char)p[i], i);
	return cof_path_check(p, len, "'path'", out, err);
}

/* A write whose path tries to leave the folder (a `..` segment, a leading
 * '/' or '~') is the guard's to block, like any other blocked write: 422,
 * write_blocked to both sides, logged (seed 004 lists path traversal among
 * the guard's catches). 1 when blocked (q->path, q->hit set). */
static int write_leaves(json_t *body, opreq *q)
{
	json_t *v = json_object_get(body, "path");
	const char *p = json_string_value(v);
	const cof_guard *g;
	cof_err e = {0};

	if (!p || !*p || !(g = cof_guard_default(&e))) {
		cof_err_clear(&e);
		return 0;
	}
	if (cof_guard_scan_name(g, p, json_string_length(v), &q->hit) != 1 ||
	    (strcmp(q->hit.rule, "path-traversal") && strcmp(q->hit.rule, "path-absolute")))
		return 0;
	q->path = p;
	q->blocked = q->leaves = 1;
	return 1;
}

/* Reads and checks the body into q (q->bad on a refusal). */
static void op_parse(json_t *body, opreq *q)
{
	const char *op = cof_json_str(body, "op"), *content = cof_json_str(body, "content");
	cof_err *err = &q->bad;

	if (cof_json_check(body, op_fields, err))
		return;
	for (q->kind = 0; kinds[q->kind] && strcmp(kinds[q->kind], op); q->kind++)
		;
	if (!kinds[q->kind]) {
		cof_error(err, COF_EVALIDATION, "unknown op '%.64s'; known: read_file, write_file, "
			  "list_directory, search_files", op);
		return;
	}
	if (path_check(body, q->kind == K_LIST || q->kind == K_SEARCH, q, err)) {
		if (q->kind != K_WRITE || !write_leaves(body, q))
			return;
		cof_err_clear(err); /* blocked by the guard instead (its path as sent) */
	}
	if (q->kind == K_SEARCH && !(cof_json_str(body, "pattern") &&
				     *cof_json_str(body, "pattern"))) {
		cof_error(err, COF_EVALIDATION, "'pattern' is required for search_files");
		return;
	}
	if (cof_json_str(body, "glob") && cof_glob_check(cof_json_str(body, "glob"), err))
		return;
	if (q->kind != K_WRITE)
		return;
	q->encoding = cof_json_str(body, "encoding") ? cof_json_str(body, "encoding") : "utf-8";
	if (!content) {
		cof_error(err, COF_EVALIDATION, "'content' is required for write_file");
	} else if (!strcmp(q->encoding, "utf-8")) {
		q->len = json_string_length(json_object_get(body, "content"));
		q->data = cof_malloc(q->len + 1);
		if (q->data)
			memcpy(q->data, content, q->len);
		else
			cof_error(err, COF_EINTERNAL, "out of memory");
	} else if (!strcmp(q->encoding, "base64")) {
		if (cof_base64_decode(content, strlen(content), &q->data, &q->len))
			cof_error(err, COF_EVALIDATION, "'content' is not valid base64");
	} else {
		cof_error(err, COF_EVALIDATION, "'encoding' must be \"utf-8\" or \"base64\"");
	}
}

/* The guard's scan of a write (outside the registry's lock: it reads it all). */
static void op_scan(cof_relay *r, opreq *q)
{
	const cof_guard *g;
	int rc;

	(void)r;
	if (q->bad.code || q->kind != K_WRITE || q->blocked || !(g = cof_guard_default(&q->bad)))
		return;
	rc = cof_guard_scan(g, q->path, q->data, q->len, &q->hit, &q->bad);
	q->blocked = rc == 1;
}

static void size_text(int64_t n, char *out, size_t outsz)
{
	snprintf(out, outsz, "%lld bytes", (long long)n);
}

/* The checks that need the session, in their order. 0 or -1 with err. */
static int op_allowed(cof_relay *r, rsession *s, opreq *q, cof_err *err)
{
	const cof_limits *l = &s->limits;
	char a[48], b[48];

	if (q->kind == K_WRITE) {
		/* the same check as the client's (policy.h); the guard scanned
		 * before the lock (op_scan) */
		cof_write_rules w = {.mode = s->mode, .excl = s->excl, .prot = s->prot,
				     .file_bytes = l->file_bytes, .scanned = 1,
				     .blocked = q->blocked, .leaves = q->leaves};
		if (cof_write_check(&w, q->path, q->data, q->len, &q->hit, err))
			return -1;
	} else if (q->path[0] && cof_excl_match(s->excl, q->path, q->kind == K_LIST ||
						q->kind == K_SEARCH)) {
		return cof_error(err, COF_EFORBIDDEN,
				 "'%s' is excluded (the user's or the default exclusions)", q->path);
	}
	if (q->kind == K_WRITE && s->writes + 1 > l->writes) {
		cof_error(err, COF_ERATELIMIT, "%lld writes used; the limit is %lld (writes)",
			  (long long)s->writes, (long long)l->writes);
		cof_err_set(err, "limit", json_string("writes"));
		return -1;
	}
	if (q->kind == K_WRITE && s->bytes_written + (int64_t)q->len > l->bytes_written) {
		size_text(s->bytes_written, a, sizeof a);
		size_text(l->bytes_written, b, sizeof b);
		cof_error(err, COF_ERATELIMIT, "%s written, this write is %lld bytes more; the "
			  "limit is %s (bytesWritten)", a, (long long)q->len, b);
		cof_err_set(err, "limit", json_string("bytesWritten"));
		return -1;
	}
	if (q->kind != K_WRITE && s->reads + 1 > l->reads) {
		cof_error(err, COF_ERATELIMIT, "%lld reads used; the limit is %lld (reads)",
			  (long long)s->reads, (long long)l->reads);
		cof_err_set(err, "limit", json_string("reads"));
		return -1;
	}
	if (!s->attached)
		return cof_error(err, COF_EUNAVAILABLE, "the user's folder is not connected "
				 "(session %s)", s->status == RS_WAITING ? "waiting for the user"
				 : "paused");
	(void)r;
	return 0;
}

/* Logs a refusal before forwarding; a guard block also tells both sides. */
static void op_refused(cof_relay *r, rsession *s, json_t *body, opreq *q, cof_err *err)
{
	const char *op = cof_json_str(body, "op");
	json_t *entry = json_pack("{s:s, s:s, s:s, s:i, s:s}", "op", op ? op : "", "path",
				  q->path ? q->path : "", "outcome", cof_code_type(err->code),
				  "status", cof_code_status(err->code), "message", err->msg);

	if (q->kind == K_WRITE && q->data)
		json_object_set_new(entry, "size", json_integer((json_int_t)q->len));
	if (err->code == COF_EBLOCKED) {
		json_t *hit = json_pack("{s:s, s:s, s:s, s:I, s:s}", "path", q->path, "rule",
					q->hit.rule, "category", q->hit.category, "offset",
					(json_int_t)q->hit.offset, "by", "server");
		if (q->hit.layer[0])
			json_object_set_new(hit, "layer", json_string(q->hit.layer));
		json_object_set(entry, "blocked", hit);
		cof_relay_event(r, s, EV_AGENT | EV_CLIENT, "write_blocked", hit);
	}
	cof_relay_log_add(r, s, entry);
}

void cof_relay_protect_json(const rsession *s, json_t *obj)
{
	json_t *rules = json_array();

	for (const char *const *d = cof_protect_defaults(); *d; d++)
		json_array_append_new(rules, json_string(*d));
	json_object_set_new(obj, "protected", rules);
	json_object_set_new(obj, "allowWrite", cof_protect_allowances(s->prot));
}

/* A new op for the client. */
static rop *op_new(rsession *s, json_t *body, opreq *q, int wait)
{
	rop *op = cof_calloc(1, sizeof *op);
	int64_t max = s->limits.search_results;

	if (!op || !(op->path = cof_strdup(q->path))) {
		free(op);
		return NULL;
	}
	cof_id_new("op_", op->id, sizeof op->id);
	snprintf(op->op, sizeof op->op, "%s", kinds[q->kind]);
	op->is_write = q->kind == K_WRITE;
	op->supervised = op->is_write && s->mode == COF_MODE_SUPERVISED;
	op->waiter = !(op->supervised && !wait);
	op->gen = s->gen;
	op->size = (int64_t)q->len;
	if (op->is_write && cof_sha256_hex(q->data ? (const void *)q->data : "", q->len,
					   op->sha256)) {
		free(op->path);
		free(op);
		return NULL;
	}
	if (cof_json_int(body, "maxResults", &op->max_results) && op->max_results > 0 &&
	    op->max_results < max)
		max = op->max_results;
	op->max_results = max;
	op->msg = json_pack("{s:s, s:s}", "id", op->id, "op", op->op);
	if (q->path[0])
		json_object_set_new(op->msg, "path", json_string(q->path));
	if (op->is_write) {
		json_object_set(op->msg, "content", json_object_get(body, "content"));
		json_object_set_new(op->msg, "encoding", json_string(q->encoding));
	}
	if (q->kind == K_SEARCH) {
		json_object_set(op->msg, "pattern", json_object_get(body, "pattern"));
		json_object_set_new(op->msg, "maxResults", json_integer((json_int_t)max));
	}
	if (json_object_get(body, "glob"))
		json_object_set(op->msg, "glob", json_object_get(body, "glob"));
	return op;
}

static void op_unlink(rsession *s, rop *op)
{
	for (rop **pp = &s->ops; *pp; pp = &(*pp)->next)
		if (*pp == op) {
			*pp = op->next;
			s->nops--;
			return;
		}
}

/* Waits for op's answer; on time out a supervised write is left to the user
 * (COF_ELOCKED with its id), any other op fails and the stuck client is
 * detached. Sets *out or err. */
static int op_wait(cof_relay *r, rsession *s, rop *op, json_t **out, cof_err *err)
{
	int64_t deadline = cof_mono_ms() + r->op_wait_ms;
	int rc;

	while (!op->done) {
		int64_t now = cof_mono_ms();
		cof_relay_tick(r, s);
		if (op->done)
			break;
		if (r->closing && op->supervised) {
			/* stored, it waits for the user across the restart (oprec.c) */
			op->waiter = 0;
			cof_error(err, COF_ELOCKED, "cofferd is stopping; the write to '%s' waits for "
				  "the user's decision: GET /v1/relay/sessions/%s/ops/%s gives its "
				  "result", op->path, s->uid, op->id);
			cof_err_set(err, "opId", json_string(op->id));
			return -1;
		} else if (r->closing) {
			cof_err e = {0};
			cof_error(&e, COF_EUNAVAILABLE, "cofferd is stopping");
			cof_relay_op_finish(r, s, op, NULL, &e);
			cof_err_clear(&e);
		} else if (now >= deadline && op->supervised) {
			op->waiter = 0;
			cof_error(err, COF_ELOCKED, "the write to '%s' waits for the user's decision; "
				  "GET /v1/relay/sessions/%s/ops/%s gives its result", op->path,
				  s->uid, op->id);
			cof_err_set(err, "opId", json_string(op->id));
			return -1;
		} else if (now >= deadline) {
			cof_err e = {0};
			cof_error(&e, COF_EUNAVAILABLE, "the user's side did not answer within %lld s",
				  (long long)(r->op_wait_ms / 1000));
			cof_relay_op_finish(r, s, op, NULL, &e);
			cof_err_clear(&e);
			if (s->attached && s->gen == op->gen)
				cof_relay_detach(r, s, "idle");
		} else {
			cof_relay_wait(r, s, now + 1000 < deadline ? now + 1000 : deadline);
		}
	}
	if (op->result) {
		*out = json_incref(op->result);
		rc = 0;
	} else {
		err->code = op->error.code;
		memcpy(err->msg, op->error.msg, sizeof err->msg);
		err->extra = op->error.extra;
		op->error.extra = NULL;
		rc = -1;
	}
	op_unlink(s, op);
	cof_relay_op_forget(r, s, op); /* its caller has the answer */
	cof_relay_op_free(op);
	return rc;
}

/* 429 when the session has RELAY_OPS_INFLIGHT ops not finished (each has a
 * stored record: what is kept stays bounded). */
static int room_for_op(const rsession *s, cof_err *err)
{
	size_t n = 0;

	for (const rop *op = s->ops; op; op = op->next)
		n += !op->done;
	if (n < RELAY_OPS_INFLIGHT)
		return 0;
	cof_error(err, COF_ERATELIMIT, "%zu operations of the session are not finished; the "
		  "limit is %d (opsInFlight)", n, RELAY_OPS_INFLIGHT);
	cof_err_set(err, "limit", json_string("opsInFlight"));
	return -1;
}

int cof_relay_op(cof_relay *r, const cof_principal *who, const char *uid, json_t *body,
		 int wait, json_t **out, cof_err *err)
{
	opreq q = {.path = ""};
	rsession *s;
	rop *op = NULL;
	int rc = -1;

	op_parse(body, &q);
	op_scan(r, &q);
	pthread_mutex_lock(&r->mu);
	s = cof_relay_find(r, who, uid, err);
	if (!s)
		goto out;
	s->refs++;
	if (s->status == RS_ENDED)
		cof_relay_gone(s, err);
	else if (q.bad.code)
		*err = q.bad, q.bad.extra = NULL, q.bad.code = COF_OK;
	else if (!op_allowed(r, s, &q, err) && !room_for_op(s, err) &&
		 !(op = op_new(s, body, &q, wait)))
		cof_error(err, COF_EINTERNAL, "out of memory");
	if (!op) {
		op_refused(r, s, body, &q, err);
	} else {
		if (op->is_write)
			s->writes++, s->bytes_written += op->size;
		else
			s->reads++;
		cof_relay_persist(r, s);
		rop **pp = &s->ops;
		while (*pp)
			pp = &(*pp)->next;
		*pp = op;
		s->nops++;
		/* pending: a restart says what became of it; the client gets the op
		 * once this is stored (wqueue.c) */
		op->rec_seq = cof_relay_op_store(r, s, op);
		cof_relay_wake(r, s);
		if (!op->waiter) {
			cof_error(err, COF_ELOCKED, "the write to '%s' waits for the user's decision; "
				  "GET /v1/relay/sessions/%s/ops/%s gives its result", op->path,
				  s->uid, op->id);
			cof_err_set(err, "opId", json_string(op->id));
		} else {
			rc = op_wait(r, s, op, out, err);
		}
		cof_relay_ops_prune(r, s);
	}
	cof_relay_unref(s);
	cof_relay_forget_done(r, s);
out:
	cof_relay_unlock(r);
	cof_err_clear(&q.bad);
	free(q.data);
	free(q.trimmed);
	return rc;
}

int cof_relay_op_get(cof_relay *r, const cof_principal *who, const char *uid,
		     const char *op_id, json_t **out, cof_err *err)
{
	rsession *s;
	rop *op = NULL;

	pthread_mutex_lock(&r->mu);
	s = cof_relay_find(r, who, uid, err);
	for (rop *o = s ? s->ops : NULL; o && !op; o = o->next)
		if (!strcmp(o->id, op_id) && !o->waiter)
			op = o;
	if (s && !op && s->status == RS_ENDED)
		cof_relay_gone(s, err); /* its ops' records went with it */
	else if (s && !op)
		cof_error(err, COF_ENOTFOUND, "no operation '%.64s' in relay session '%s'", op_id,
			  s->uid);
	if (op && op->lost) {
		cof_relay_op_lost(s, op, err);
		op = NULL;
	} else if (op) {
		*out = json_pack("{s:s, s:s, s:s, s:s}", "opId", op->id, "op", op->op, "path",
				 op->path, "status", op->done ? "done" : "pending");
		if (op->done && op->result) {
			json_object_set_new(*out, "ok", json_true());
			json_object_set(*out, "result", op->result);
		} else if (op->done) {
			json_t *e = op->error.extra ? json_deep_copy(op->error.extra) : json_object();
			json_object_set_new(e, "type", json_string(cof_code_type(op->error.code)));
			json_object_set_new(e, "message", json_string(op->error.msg));
			json_object_set_new(*out, "ok", json_false());
			json_object_set_new(*out, "error", e);
		}
	}
	cof_relay_unlock(r);
	return op ? 0 : -1;
}

/* ------------------------------------------------- what comes back */

/* Drops the items of `arr` (listing entries {name, type:"file"|"dir"|...}
 * under op->path, or search results {file}) whose path is excluded. */
static size_t filter(const rsession *s, json_t *arr, const rop *op, int listing)
{
	size_t dropped = 0;

	for (size_t i = 0; i < json_array_size(arr);) {
		json_t *it = json_array_get(arr, i);
		const char *name = cof_json_str(it, listing ? "name" : "file");
		cof_buf p = COF_BUF_INIT;
		const char *type = cof_json_str(it, "type");
		int is_dir = listing && type && (!strcmp(type, "dir") || !strcmp(type, "directory"));
		if (listing && op->path[0])
			cof_buf_addf(&p, "%s/", op->path);
		cof_buf_adds(&p, name ? name : "");
		if (!name || !p.data || cof_excl_match(s->excl, p.data, is_dir)) {
			json_array_remove(arr, i);
			dropped++;
		} else {
			i++;
		}
		cof_buf_release(&p);
	}
	return dropped;
}

/* The bytes a read_file answer carries, measured from its content (text as
 * it is, base64 decoded), never the size it declares. A base64 text whose
 * shortest decoding is already over `limit` is not decoded. */
static int read_size(const rop *op, json_t *result, int64_t limit, int64_t *out,
		     cof_err *err)
{
	json_t *c = json_object_get(result, "content");
	const char *enc = cof_json_str(result, "encoding");
	size_t n = json_string_length(c), len = 0;
	unsigned char *bytes = NULL;

	if (!json_is_string(c))
		return cof_error(err, COF_EINTERNAL,
				 "the user's side answered read_file without 'content'");
	if (!enc || !strcmp(enc, "utf-8")) {
		*out = (int64_t)n;
		return 0;
	}
	if (strcmp(enc, "base64"))
		return cof_error(err, COF_EINTERNAL, "the user's side answered read_file of '%s' "
				 "with encoding '%.40s'", op->path, enc);
	if (n / 4 * 3 > (size_t)limit + 2) {
		*out = (int64_t)(n / 4 * 3 - 2);
		return 0;
	}
	if (cof_base64_decode(json_string_value(c), n, &bytes, &len))
		return cof_error(err, COF_EINTERNAL, "the user's side answered read_file of '%s' "
				 "with content that is not valid base64", op->path);
	free(bytes);
	*out = (int64_t)len;
	return 0;
}

int cof_relay_result_check(rsession *s, rop *op, json_t *result, cof_err *err)
{
	char a[48], b[48];

	if (!strcmp(op->op, "read_file")) {
		int64_t size = 0;
		if (read_size(op, result, s->limits.file_bytes, &size, err))
			return -1;
		if (size > s->limits.file_bytes) {
			size_text(size, a, sizeof a);
			size_text(s->limits.file_bytes, b, sizeof b);
			cof_error(err, COF_ETOOLARGE, "'%s' is %s; the limit is %s (fileBytes)",
				  op->path, a, b);
			cof_err_set(err, "limit", json_string("fileBytes"));
			return -1;
		}
		/* what the agent is told is what was measured */
		json_object_set_new(result, "size", json_integer((json_int_t)size));
		json_object_set_new(result, "path", json_string(op->path));
	} else if (!strcmp(op->op, "write_file")) {
		const char *sha = cof_json_str(result, "sha256");
		if (sha && strcmp(sha, op->sha256))
			return cof_error(err, COF_EINTERNAL, "the user's side reports sha256 %.64s "
					 "for '%s', but the bytes sent have %s", sha, op->path,
					 op->sha256);
		json_object_set_new(result, "size", json_integer((json_int_t)op->size));
		json_object_set_new(result, "sha256", json_string(op->sha256));
		json_object_set_new(result, "path", json_string(op->path));
	} else if (!strcmp(op->op, "list_directory")) {
		json_t *e = json_object_get(result, "entries");
		if (!json_is_array(e))
			return cof_error(err, COF_EINTERNAL,
					 "the user's side answered list_directory without 'entries'");
		filter(s, e, op, 1);
	} else if (!strcmp(op->op, "search_files")) {
		json_t *res = json_object_get(result, "results");
		int trunc = json_is_true(json_object_get(result, "truncated"));
		if (!json_is_array(res))
			return cof_error(err, COF_EINTERNAL,
					 "the user's side answered search_files without 'results'");
		filter(s, res, op, 0);
		while ((int64_t)json_array_size(res) > op->max_results) {
			json_array_remove(res, json_array_size(res) - 1);
			trunc = 1;
		}
		json_object_set_new(result, "truncated", json_boolean(trunc));
	}
	return 0;
}
