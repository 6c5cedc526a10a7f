/*
 * fuzz_relay.c — one relay op end to end in the library: the agent's op body
 * (checks before forwarding) and the user's side's answer to it (checks of
 * what comes back), both from the input, on a fresh session with small limits
 * and a client thread that answers every op it is sent.
 *
 * Input: byte 0 picks the mode (standard/supervised/readonly) and whether the
 * op waits; then the op body (JSON), a NUL byte, the client's answer (JSON).
 * Invariants: the counts never pass their limits; nothing is forwarded for a
 * refused op; an answered listing holds no excluded entry and a search no
 * more results than its cap, none excluded; a read answered is not over
 * fileBytes; no op is accepted on a read-only session as a write, nor a
 * write to a protected path (the client sends no allowance).
 */
#include <pthread.h>
#include <unistd.h>
#include "fuzz.h"
#include "coffer.h"
#include "policy/policy.h"

#define ORG "org_default"
static cof_store *st;
static cof_relay *relay;   /* one per input, so that each input frees what it made */
static const cof_principal who = {.org = ORG};
static cof_excl *excl;

typedef struct client {
	cof_relay_stream *x;
	const char *uid, *token;
	json_t *answer;     /* the client's answer body, or NULL = not JSON */
	int forwarded;
	int stop;
} client;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("COFFER_FUZZ_TMP");
	char dir[512];
	cof_err err = {0};
	json_t *out = NULL, *body = json_pack("{s:{s:b}}", "relay", "capability", 1);
	int created;

	snprintf(dir, sizeof dir, "%s/relay-XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(dir) || cof_store_open(dir, NULL, &st, &err) ||
	    cof_agent_put(st, ORG, "fz", body, &out, &created, &err)) {
		fprintf(stderr, "fuzz_relay: setup: %s\n", err.msg);
		abort();
	}
	if (!cof_guard_default(&err)) /* compiled once here, not in the first input's time */
		abort();
	json_t *pats = json_pack("[s, s]", "secret/", "*.log");
	if (cof_excl_new(pats, COF_EXCL_DEFAULTS | COF_EXCL_NOCASE, &excl, &err))
		abort();
	json_decref(pats);
	json_decref(out);
	json_decref(body);
	return 0;
}

/* The user's side: answers each op with the input's answer. */
static void *client_main(void *arg)
{
	client *c = arg;

	while (!__atomic_load_n(&c->stop, __ATOMIC_SEQ_CST)) {
		json_t *evs = NULL, *ev;
		cof_err err = {0};
		size_t i;
		int done = cof_relay_stream_next(c->x, 50, &evs, &err);
		json_array_foreach(evs, i, ev) {
			const char *type = json_string_value(json_object_get(ev, "type"));
			const char *id = json_string_value(json_object_get(json_object_get(ev, "data"),
									   "id"));
			if (strcmp(type, "op") || !id)
				continue;
			__atomic_add_fetch(&c->forwarded, 1, __ATOMIC_SEQ_CST);
			/* a malformed answer is refused and ends the op itself: were it
			 * left waiting, the op's caller would hang and the run time out */
			cof_relay_result(relay, c->uid, c->token, id, c->answer, NULL, &err);
			cof_err_clear(&err);
		}
		json_decref(evs);
		if (done)
			break;
	}
	return NULL;
}

/* The invariants on an op's 200 answer (`dir` the op's path). */
static void check_answer(const char *op, const char *dir, json_t *out, const json_t *sess)
{
	json_t *it, *lim = json_object_get(sess, "limits");
	size_t i;

	if (!strcmp(op, "list_directory"))
		json_array_foreach(json_object_get(out, "entries"), i, it) {
			const char *name = json_string_value(json_object_get(it, "name"));
			const char *type = json_string_value(json_object_get(it, "type"));
			int is_dir = type && (!strcmp(type, "dir") || !strcmp(type, "directory"));
			char full[8192];
			FUZZ_CHECK(name, "an entry without a name");
			snprintf(full, sizeof full, "%s%s%s", dir, *dir ? "/" : "", name);
			FUZZ_CHECK(!cof_excl_match(excl, full, is_dir), "listing has excluded '%s'",
				   full);
		}
	if (!strcmp(op, "search_files")) {
		FUZZ_CHECK((json_int_t)json_array_size(json_object_get(out, "results")) <=
				   json_integer_value(json_object_get(lim, "searchResults")),
			   "search over its cap");
		json_array_foreach(json_object_get(out, "results"), i, it) {
			const char *f = json_string_value(json_object_get(it, "file"));
			FUZZ_CHECK(f && !cof_excl_match(excl, f, 0), "search has excluded '%s'",
				   f ? f : "(null)");
		}
	}
	if (!strcmp(op, "read_file")) {
		json_t *sz = json_object_get(out, "size");
		FUZZ_CHECK(!json_is_integer(sz) || json_integer_value(sz) <= 64,
			   "a read over fileBytes");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const modes[] = {"standard", "supervised", "readonly"};
	json_t *sess = NULL, *body, *conn, *out = NULL, *info = NULL;
	cof_err err = {0};
	client c = {0};
	pthread_t tid;
	const uint8_t *nul;
	size_t blen;

	cof_relay_opts o = {.op_wait_ms = 2000};

	if (size < 1 || cof_relay_open(st, &o, &relay, &err))
		return 0;
	nul = memchr(data + 1, 0, size - 1);
	blen = nul ? (size_t)(nul - data - 1) : size - 1;
	body = json_loadb((const char *)data + 1, blen, 0, NULL);
	c.answer = nul ? json_loadb((const char *)nul + 1, size - blen - 2, 0, NULL) : NULL;
	if (!c.answer)
		c.answer = json_pack("{s:b}", "ok", 1);
	json_t *limits = json_pack("{s:i, s:i, s:i, s:i, s:i}", "fileBytes", 64, "reads", 2,
				   "writes", 1, "bytesWritten", 80, "searchResults", 3);
	json_t *cb = json_pack("{s:s, s:o}", "agent", "fz", "limits", limits);
	if (cof_relay_create(relay, &who, cb, &sess, &err))
		abort();
	c.uid = json_string_value(json_object_get(sess, "uid"));
	c.token = json_string_value(json_object_get(sess, "connectToken"));
	conn = json_pack("{s:s, s:[s, s]}", "mode", modes[data[0] % 3], "exclusions", "secret/",
			 "*.log");
	if (cof_relay_connect(relay, c.uid, c.token, conn, &c.x, &err))
		abort();
	pthread_create(&tid, NULL, client_main, &c);
	for (int round = 0; round < 3 && body; round++) {
		int rc = cof_relay_op(relay, &who, c.uid, body, !(data[0] & 4), &out, &err);
		const char *op = json_string_value(json_object_get(body, "op"));
		if (rc == 0 && op) {
			FUZZ_CHECK(!(data[0] % 3 == 2 && !strcmp(op, "write_file")),
				   "a write accepted on a read-only session");
			json_decref(info);
			cof_relay_get(relay, &who, c.uid, &info, NULL);
			const char *dir = json_string_value(json_object_get(body, "path"));
			FUZZ_CHECK(strcmp(op, "write_file") || !cof_protect_rule(dir ? dir : ""),
				   "a write accepted to protected '%s' (no allowance)", dir);
			check_answer(op, dir ? dir : "", out, info);
		}
		json_decref(out);
		out = NULL;
		cof_err_clear(&err);
	}
	json_decref(info);
	info = NULL;
	cof_relay_get(relay, &who, c.uid, &info, NULL);
	json_t *counts = json_object_get(info, "counts");
	FUZZ_CHECK(json_integer_value(json_object_get(counts, "reads")) <= 2 &&
			   json_integer_value(json_object_get(counts, "writes")) <= 1 &&
			   json_integer_value(json_object_get(counts, "bytesWritten")) <= 80,
		   "counts past their limits");
	FUZZ_CHECK(c.forwarded <= json_integer_value(json_object_get(counts, "reads")) +
					json_integer_value(json_object_get(counts, "writes")),
		   "an op was forwarded without being counted");
	cof_relay_end(relay, &who, c.uid, "closed", &err);
	cof_err_clear(&err);
	__atomic_store_n(&c.stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(tid, NULL);
	cof_relay_stream_close(c.x);
	json_decref(info);
	json_decref(conn);
	json_decref(cb);
	json_decref(sess);
	json_decref(body);
	json_decref(c.answer);
	cof_relay_close(relay);
	return 0;
}
