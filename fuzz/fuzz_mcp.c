/*
 * fuzz_mcp.c — the MCP core (src/agent/mcp.c) on untrusted messages, as
 * `coffer mcp` reads them from stdin and cofferd's /mcp from a POST body,
 * behind a back end that answers from memory; and cof_mcp_origin_refused on
 * untrusted Host and Origin headers.
 *
 * Input: the first byte picks the back end's behaviour (fails or answers,
 * relay session or none, a subject with seed 003's toolset or not); the rest
 * is the message text. Invariants, from the JSON-RPC 2.0 spec and docs/mcp.md:
 * every answer is an object (or, for a batch, an array of them) with
 * "jsonrpc":"2.0", an id, and exactly one of result or error (error: an
 * integer code and a string message); a request (string or integer id, a
 * method) is answered with its own id; a notification (a method, no id) is
 * never answered; text that is not JSON is a -32700 error with a null id.
 * Origin: a refusal always says why; no Origin and a server not on loopback
 * is never refused; an Origin naming the Host's own site is refused only for
 * the Host rule.
 */
#include "fuzz.h"
#include <jansson.h>
#include "agent/mcp.h"

typedef struct fake {
	unsigned mode;
} fake;

static int fake_agent(void *cls, json_t **out, char **msg)
{
	fake *f = cls;

	*out = NULL;
	*msg = NULL;
	if (f->mode & 1) {
		*msg = strdup("agent 'a' not found (not_found)");
		return -1;
	}
	*out = json_pack("{s:b, s:[{s:s, s:b}]}", "fileTools", !(f->mode & 2), "mounts", "path",
			 "/workspace", "workspace", 1);
	return 0;
}

static int fake_tool(void *cls, const char *tool, int subject, json_t *args, json_t **out,
		     char **msg)
{
	fake *f = cls;

	*out = NULL;
	*msg = NULL;
	FUZZ_CHECK(json_is_object(args), "a tool's arguments are an object");
	if (f->mode & 4) {
		*msg = strdup("'path' is required (validation_error)");
		return -1;
	}
	*out = json_pack("{s:b, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "ok", !(f->mode & 8),
			 "output", tool, "path", "/workspace/a", "image", "data", "AAAA",
			 "mediaType", "image/png", "document", "data", "AAAA", "mediaType",
			 "application/pdf");
	return 0;
}

static json_t *fake_relay_sessions(void *cls)
{
	fake *f = cls;

	if (!(f->mode & 16))
		return NULL;
	/* two sessions with bit 64: a call must then name one */
	return json_pack("{s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "sessions", "uid", "rs_1",
			 "status", "active", "mode", "standard", "uid", "rs_2", "status",
			 (f->mode & 64) ? "paused" : "ended", "mode", "standard");
}

static char *fake_volume_name(void *cls, const char *vol)
{
	(void)cls;
	return strdup(vol);
}

static int fake_relay_op(void *cls, const char *uid, json_t *body, json_t **out, char **msg)
{
	fake *f = cls;

	*out = NULL;
	*msg = NULL;
	FUZZ_CHECK(json_is_string(json_object_get(body, "op")), "a relay op names its op");
	if (f->mode & 32) {
		*msg = strdup("the session ended (gone)");
		return -1;
	}
	*out = json_pack("{s:s, s:s, s:i, s:[]}", "content", "x", "path", "a", "size", 1,
			 "entries");
	return 0;
}

static const cof_mcp_backend fake_backend = {
	.agent_get = fake_agent,
	.tool = fake_tool,
	.relay_sessions = fake_relay_sessions,
	.volume_name = fake_volume_name,
	.relay_op = fake_relay_op,
};

/* One answer object's shape. */
static void check_answer(json_t *a)
{
	json_t *err = json_object_get(a, "error");

	FUZZ_CHECK(json_is_object(a), "an answer is an object");
	FUZZ_CHECK(json_is_string(json_object_get(a, "jsonrpc")) &&
			   !strcmp(json_string_value(json_object_get(a, "jsonrpc")), "2.0"),
		   "jsonrpc is \"2.0\"");
	FUZZ_CHECK(json_object_get(a, "id") != NULL, "an answer has an id");
	FUZZ_CHECK(!json_object_get(a, "result") != !err, "exactly one of result and error");
	if (err)
		FUZZ_CHECK(json_is_integer(json_object_get(err, "code")) &&
				   json_is_string(json_object_get(err, "message")),
			   "an error has an integer code and a message");
}

static void check_messages(unsigned mode, const char *text, size_t len)
{
	fake f = {.mode = mode};
	json_t *info = json_pack("{s:[{s:s, s:[{s:s, s:b}]}]}", "tools", "type", "agent_toolset",
				 "configs", "name", "file", "enabled", !!(mode & 64));
	cof_mcp m = {.be = &fake_backend, .cls = &f, .agent = "a",
		     .user = (mode & 128) ? "alice" : NULL, .info = info};
	json_error_t jerr;
	json_t *in = json_loadb(text, len, JSON_ALLOW_NUL, &jerr);
	json_t *ans = cof_mcp_handle_text(&m, text, len), *one;
	size_t i;

	if (!in) {
		FUZZ_CHECK(ans != NULL, "text that is not JSON is answered");
		check_answer(ans);
		FUZZ_CHECK(json_integer_value(json_object_get(json_object_get(ans, "error"),
							      "code")) == COF_RPC_PARSE_ERROR,
			   "a parse error is -32700");
		FUZZ_CHECK(json_is_null(json_object_get(ans, "id")), "a parse error has a null id");
	} else if (json_is_array(in)) {
		if (ans) {
			FUZZ_CHECK(json_is_array(ans) && json_array_size(ans) > 0,
				   "a batch is answered with a non-empty array");
			json_array_foreach(ans, i, one)
				check_answer(one);
		}
	} else if (json_is_object(in)) {
		json_t *id = json_object_get(in, "id");
		int method = json_is_string(json_object_get(in, "method"));

		if (method && !id)
			FUZZ_CHECK(ans == NULL, "a notification is never answered");
		if (method && (json_is_string(id) || json_is_integer(id))) {
			FUZZ_CHECK(ans != NULL, "a request is answered");
			check_answer(ans);
			FUZZ_CHECK(json_equal(json_object_get(ans, "id"), id),
				   "the answer carries the request's id");
		}
		if (ans)
			check_answer(ans);
	} else if (ans) {
		check_answer(ans);
	}
	/* a tools/list records what it listed; looking again changes nothing */
	FUZZ_CHECK(!m.listed || cof_mcp_list_changed(&m) == 0,
		   "the tools just listed are not a change");
	free(m.listed);
	json_decref(ans);
	json_decref(in);
	json_decref(info);
}

/* Host and Origin: the rest of the input split at the first NUL. */
static void check_origin(unsigned mode, const char *text, size_t len)
{
	const char *nul = memchr(text, '\0', len);
	char *host = fuzz_dup_str((const uint8_t *)text, nul ? (size_t)(nul - text) : len);
	char *origin = nul ? fuzz_dup_str((const uint8_t *)nul + 1, len - (size_t)(nul - text) - 1)
			   : NULL;
	const char *listen = (mode & 1) ? "127.0.0.1" : (mode & 2) ? "[::1]" : "10.0.0.7";
	int proxied = !!(mode & 4), local = (mode & 3) != 0;
	const char *why = NULL;
	int refused = cof_mcp_origin_refused(listen, proxied, host, origin, &why);

	FUZZ_CHECK(!refused || (why && *why), "a refusal says why");
	if (!local && !origin)
		FUZZ_CHECK(!refused, "no Origin and a server not on loopback: never refused");
	if (!local && origin) {
		char *same = malloc(strlen(host) + 8);
		if (!same)
			abort();
		sprintf(same, "http://%s", host);
		FUZZ_CHECK(!strchr(host, '/') ? !cof_mcp_origin_refused(listen, proxied, host, same,
									 &why) : 1,
			   "an Origin of the Host's own site is not refused");
		free(same);
	}
	free(host);
	free(origin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned mode = data[0];
	char *text = fuzz_dup_exact(data + 1, size - 1);

	check_messages(mode, text, size - 1);
	check_origin(mode, text, size - 1);
	free(text);
	return 0;
}
