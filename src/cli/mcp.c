/*
 * mcp.c — `coffer mcp --agent ID`: an agent's file tools (read, write, edit,
 * ls, glob, grep, present_file) served over the Model Context Protocol on
 * stdio.
 *
 * Transport: JSON-RPC 2.0, one JSON message per line on stdin/stdout (MCP's
 * stdio transport). stdout carries protocol messages only; everything else
 * (errors, --verbose traces) goes to stderr.
 *
 * Two back ends run the tools:
 *   - a cofferd (default): POST /v1/agents/{id}/tools/{tool} through the
 *     CLI's HTTP helper, with --server/--key or $COFFER_URL/$COFFER_KEY;
 *   - --data DIR: the data dir opened with libcoffer (cof_agent_tool), in the
 *     organization "org_default", for a machine without a running cofferd.
 *
 * With a relay session of the agent (docs/api.md "Relay"), read_file,
 * write_file, list_directory and search_files also reach the user's folder.
 *
 * A tool answer {ok, output, ...} becomes the result
 *   {content:[{type:"text", text:output}], isError:!ok,
 *    structuredContent: the answer without `output`};
 * a read of an image adds {type:"image", data, mimeType} to content, a read of
 * a PDF {type:"resource", resource:{uri:"file://PATH", mimeType, blob}} (their
 * base64 then left out of structuredContent);
 * an API error (bad arguments, unknown agent, fileTools off, cofferd not
 * reachable) becomes a result with isError true and the message as text, so
 * the model reads it; JSON-RPC errors are kept for protocol faults.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "coffer.h"

#define MCP_PROTOCOL "2025-06-18"
#define MCP_ORG "org_default"

/* JSON-RPC 2.0 error codes. */
#define RPC_PARSE_ERROR (-32700)
#define RPC_INVALID_REQUEST (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS (-32602)
#define RPC_INTERNAL_ERROR (-32603)

/* Protocol versions this server speaks; a client asking for one of them gets
 * it back (the spec's rule), any other gets MCP_PROTOCOL. */
static const char *const mcp_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

/* ------------------------------------------------------------------ tools */

typedef struct mcp_tool {
	const char *name;
	const char *title;
	const char *description; /* written for the model */
	const char *schema;      /* inputSchema, JSON text */
	int read_only;           /* changes no file */
} mcp_tool;

#define PATH_NOTE                                                                     \
	"Paths are the agent's paths: absolute like /workspace/notes.md, or relative to " \
	"the first mount (the server's instructions list the mounts in order)."

static const mcp_tool mcp_tools[] = {
	{"read", "Read a file",
	 "Read a file. " PATH_NOTE " Text comes back as numbered lines (line number, a tab, "
	 "then the line), 2,000 lines by default; when the file has more, the answer says "
	 "which lines it showed and the offset to read on from. Lines over 2,000 bytes are "
	 "cut. Use offset (first line, from 1) and limit (number of lines, up to 10,000) to "
	 "read part of a long file. An image (PNG, JPEG, GIF, WebP) comes back as a picture, "
	 "scaled down to at most 1,568 px a side (the file is unchanged); a PDF comes back "
	 "as a document; images over 5 MiB or 8,000 px a side and PDFs over 16 MiB or 100 "
	 "pages are refused with why. Another binary file cannot be shown as text: read it with "
	 "encoding \"base64\", which returns up to 700 KiB of raw bytes base64-encoded, "
	 "starting at the byte offset (from 0). Reading a file is what allows you to change "
	 "it afterwards with write or edit.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\",\"description\":\"The file to read, e.g. "
	 "/workspace/report.md.\"},"
	 "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"The first line to "
	 "show, counting from 1 (default 1). With encoding base64: the first byte, counting "
	 "from 0 (default 0).\"},"
	 "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,\"description\":"
	 "\"How many lines to show (default 2000).\"},"
	 "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],\"description\":"
	 "\"utf-8 (default) shows text as numbered lines; base64 returns raw bytes, for "
	 "binary files.\"}},"
	 "\"required\":[\"path\"],\"additionalProperties\":false}",
	 1},
	{"write", "Write a file",
	 "Create a file, or replace the whole content of one, with the given text. " PATH_NOTE
	 " Missing folders are created. To replace an existing file you must have read it "
	 "first, and it must not have changed since you read it; if it has, read it again "
	 "and redo your change on what it holds now. To change part of a file, prefer edit. "
	 "Files on a read-only mount cannot be written.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\",\"description\":\"The file to write, e.g. "
	 "/workspace/out/summary.md.\"},"
	 "\"content\":{\"type\":\"string\",\"description\":\"The complete new content of "
	 "the file (UTF-8 text).\"}},"
	 "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
	 0},
	{"edit", "Edit a file",
	 "Replace exact text in a file. " PATH_NOTE " oldString must appear in the file "
	 "exactly as written, with the same whitespace and indentation and without the line "
	 "numbers that read shows, and, unless replaceAll is true, only once: include more "
	 "of the surrounding lines to make it unique. You must have read the file first, and "
	 "it must not have changed since; if it has, read it again. When oldString is not "
	 "found, the answer shows the lines of the file that look most like it.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\",\"description\":\"The file to edit.\"},"
	 "\"oldString\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The exact "
	 "text to replace.\"},"
	 "\"newString\":{\"type\":\"string\",\"description\":\"The text to put in its place "
	 "(must differ from oldString; may be empty to delete).\"},"
	 "\"replaceAll\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence "
	 "instead of requiring exactly one (default false).\"}},"
	 "\"required\":[\"path\",\"oldString\",\"newString\"],\"additionalProperties\":false}",
	 0},
	{"ls", "List a folder",
	 "List what a folder holds: files with their size in bytes, subfolders with a "
	 "trailing '/'. " PATH_NOTE " Without path, lists the first mount. Shows at most 1,000 entries.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\",\"description\":\"The folder to list (default: the "
	 "first mount).\"}},"
	 "\"additionalProperties\":false}",
	 1},
	{"glob", "Find files by name",
	 "Find files whose path matches a glob pattern, under a folder (path, default the "
	 "first mount). The pattern is matched against the whole path "
	 "relative to that folder: '*' and '?' stay within one folder level, '**' spans any "
	 "number of levels, [abc] and [a-z] match one character; e.g. '**/*.py', 'src/*.c', "
	 "'docs/**'. Returns the absolute paths, at most 1,000.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"pattern\":{\"type\":\"string\",\"description\":\"The glob, relative to path (no "
	 "leading '/'), e.g. **/*.md.\"},"
	 "\"path\":{\"type\":\"string\",\"description\":\"The folder to search (default: the "
	 "first mount).\"}},"
	 "\"required\":[\"pattern\"],\"additionalProperties\":false}",
	 1},
	{"grep", "Search file contents",
	 "Search the text of files with a regular expression (PCRE syntax, matched line by "
	 "line) under a folder or in one file (path, default the first mount). glob limits the files searched; a glob without '/' matches file names "
	 "at any depth (e.g. '*.md'). outputMode \"content\" (default) lists matching lines "
	 "as path:line:text, with `context` lines around them as path-line-text; \"files\" "
	 "lists the files that match; \"count\" gives path:count. At most `limit` results "
	 "(default 100); the answer says when it stopped. Binary files are skipped.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"pattern\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The regular "
	 "expression, e.g. 'error|warning' or 'def \\\\w+\\\\('.\"},"
	 "\"path\":{\"type\":\"string\",\"description\":\"The folder or file to search "
	 "(default: the first mount).\"},"
	 "\"glob\":{\"type\":\"string\",\"description\":\"Only search files matching this "
	 "glob, e.g. '*.py' or 'src/**/*.c'.\"},"
	 "\"ignoreCase\":{\"type\":\"boolean\",\"description\":\"Match regardless of case "
	 "(default false).\"},"
	 "\"context\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":20,\"description\":"
	 "\"Lines to show before and after each match, in content mode (default 0).\"},"
	 "\"outputMode\":{\"type\":\"string\",\"enum\":[\"content\",\"files\",\"count\"],"
	 "\"description\":\"content: matching lines (default); files: names of matching "
	 "files; count: matches per file.\"},"
	 "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,\"description\":"
	 "\"The most results to return (default 100).\"}},"
	 "\"required\":[\"pattern\"],\"additionalProperties\":false}",
	 1},
	{"present_file", "Show a file to the user",
	 "Show a file to the user: a report, chart, image or document you made or found that "
	 "they should see or download. " PATH_NOTE " The user gets a link to the file (valid "
	 "15 minutes) with your caption; the answer gives you the link too. Use it for "
	 "results meant for the user, not for files you only read yourself.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"path\":{\"type\":\"string\",\"description\":\"The file to show, e.g. "
	 "/workspace/out/chart.png.\"},"
	 "\"caption\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"A short "
	 "line telling the user what the file is (at most 1000 bytes).\"}},"
	 "\"required\":[\"path\"],\"additionalProperties\":false}",
	 1},
	{NULL, NULL, NULL, NULL, 0},
};

static const mcp_tool *mcp_tool_find(const char *name)
{
	for (const mcp_tool *t = mcp_tools; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

/* The `tools` array of tools/list for one table. */
static json_t *mcp_tool_list(const mcp_tool *table)
{
	json_t *arr = json_array();

	for (const mcp_tool *t = table; t->name; t++) {
		json_error_t jerr;
		json_t *schema = json_loads(t->schema, 0, &jerr);

		if (!schema) { /* a typo in the table above: say where, loudly */
			fprintf(stderr, "coffer mcp: bad schema for %s: %s at %d\n", t->name,
				jerr.text, jerr.position);
			abort();
		}
		json_array_append_new(arr, json_pack(
			"{s:s, s:s, s:s, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name", t->name,
			"title", t->title, "description", t->description, "inputSchema", schema,
			"annotations", "title", t->title, "readOnlyHint", t->read_only,
			"destructiveHint", !t->read_only, "idempotentHint",
			t->read_only && strcmp(t->name, "present_file"),
			"openWorldHint", 0));
	}
	return arr;
}

/* ------------------------------------------------------------- back ends */

typedef struct mcp_ctx {
	const char *agent;  /* --agent */
	const char *run_id; /* --run-id, or NULL */
	const char *user;   /* --user: the subject it acts for, or NULL */
	cof_store *st;      /* --data mode; NULL = talk to a cofferd */
	json_t *info;       /* the agent as looked up at start (its mounts) */
} mcp_ctx;


/* One call to the cofferd. Returns 0 with *out the 2xx answer, or -1 with
 * *msg (malloc'd): "MESSAGE (TYPE)" of the API error, or why there was no
 * answer. cli_http also logs the error on stderr. */
static int mcp_http(const char *method, const char *url, json_t *body,
		    struct curl_slist *hdrs, json_t **out, char **msg)
{
	cli_req req = {.method = method, .url = url, .body = body, .headers = hdrs,
		       .upload_size = -1, .want_error = 1};
	cli_resp resp;
	cof_buf m = COF_BUF_INIT;
	const char *text, *type;

	*out = NULL;
	*msg = NULL;
	if (cli_http(&req, &resp) == CLI_OK) {
		*out = resp.json;
		json_decref(resp.error);
		return 0;
	}
	json_decref(resp.json);
	text = json_string_value(json_object_get(resp.error, "message"));
	type = json_string_value(json_object_get(resp.error, "type"));
	if (text)
		cli_buf_addf(&m, "%s (%s)", text, type ? type : "error");
	else if (resp.status)
		cli_buf_addf(&m, "cofferd answered HTTP %ld", resp.status);
	else
		cli_buf_addf(&m, "cannot reach cofferd");
	json_decref(resp.error);
	*msg = cof_buf_detach(&m, NULL);
	return -1;
}

/* "MESSAGE (TYPE)", as the HTTP back end reports an API error; clears err. */
static char *mcp_err_text(cof_err *err)
{
	cof_buf m = COF_BUF_INIT;

	cli_buf_addf(&m, "%s (%s)", err->msg, cof_code_type(err->code));
	cof_err_clear(err);
	return cof_buf_detach(&m, NULL);
}

/* The agent's settings: GET /v1/agents/{id} or cof_agent_get. 0, or -1 with
 * *msg (malloc'd) saying why. */
static int mcp_agent_get(mcp_ctx *c, json_t **out, char **msg)
{
	cof_buf u = COF_BUF_INIT;
	int rc;

	if (c->st) {
		cof_err err = {0};

		*out = NULL;
		*msg = NULL;
		if (cof_agent_get(c->st, MCP_ORG, c->agent, out, &err)) {
			*msg = mcp_err_text(&err);
			return -1;
		}
		return 0;
	}
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/agents/");
	cli_url_seg(&u, c->agent);
	rc = mcp_http("GET", u.data, NULL, NULL, out, msg);
	cof_buf_release(&u);
	return rc;
}

/* Runs one tool: 0 with *out the answer {ok, output, ...}, or -1 with *msg
 * (malloc'd) for an API error. */
static int mcp_run_tool(mcp_ctx *c, const char *tool, int subject_toolset, json_t *args,
			json_t **out, char **msg)
{
	cof_buf u = COF_BUF_INIT, h = COF_BUF_INIT;
	struct curl_slist *hdrs = NULL;
	int rc;

	if (c->st) {
		cof_err err = {0};

		*out = NULL;
		*msg = NULL;
		if (subject_toolset
		    ? cof_subject_tool(c->st, MCP_ORG, c->agent, c->user, tool, args, c->run_id,
				       out, &err)
		    : cof_agent_tool(c->st, MCP_ORG, c->agent, c->user, tool, args, c->run_id, out,
				     &err)) {
			json_decref(*out);
			*out = NULL;
			*msg = mcp_err_text(&err);
			return -1;
		}
		return 0;
	}
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/agents/");
	cli_url_seg(&u, c->agent);
	if (subject_toolset) {
		cli_url_lit(&u, "/users/");
		cli_url_seg(&u, c->user);
	}
	cli_url_lit(&u, "/tools/");
	cli_url_seg(&u, tool);
	if (c->run_id) {
		cli_buf_addf(&h, "X-Run-Id: %s", c->run_id);
		hdrs = cli_check_alloc(curl_slist_append(NULL, h.data));
	}
	if (c->user && !subject_toolset) {
		cof_buf_reset(&h);
		cli_buf_addf(&h, "X-Subject: %s", c->user);
		hdrs = cli_check_alloc(curl_slist_append(hdrs, h.data));
	}
	rc = mcp_http("POST", u.data, args, hdrs, out, msg);
	curl_slist_free_all(hdrs);
	cof_buf_release(&h);
	cof_buf_release(&u);
	return rc;
}

/* --------------------------------------------------------------- JSON-RPC */

static json_t *rpc_result(json_t *id, json_t *result);

/* An error answer; steals nothing (id is copied). */
static json_t *rpc_error(json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static json_t *rpc_error(json_t *id, int code, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
			 id ? id : json_null(), "error", "code", code, "message", msg);
}

/* A result answer; steals `result`. */
static json_t *rpc_result(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

/* ------------------------------------------------------------------ relay */

/* When the agent has a relay session that is active or paused (over a
 * cofferd only), four more tools reach the folder the user shared with
 * `coffer connect`; each call is POST /v1/relay/sessions/{uid}/ops, and the
 * session is looked up again at every call (GET /v1/relay/sessions?agent=ID),
 * so the tools follow the sessions as they start and end. */
#define RELAY_NOTE "Paths are relative to the folder the user shared (no leading '/')."
static const mcp_tool mcp_relay_tools[] = {
	{"read_file", "Read a file in the user's folder",
	 "Read a whole file in the folder the user shared with you through coffer connect. "
	 RELAY_NOTE " Text comes back as it is; a binary file as base64. Files over the "
	 "session's size limit and excluded files are refused.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
	 "\"The file, e.g. src/main.c.\"}},\"required\":[\"path\"],"
	 "\"additionalProperties\":false}", 1},
	{"write_file", "Write a file in the user's folder",
	 "Create or replace a file in the folder the user shared. " RELAY_NOTE " Every "
	 "write is scanned first and may be refused; in supervised mode the user approves "
	 "each write; a read-only session refuses writes.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{"
	 "\"type\":\"string\",\"description\":\"The complete new content (UTF-8 text).\"}},"
	 "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}", 0},
	{"list_directory", "List a folder of the user's folder",
	 "List a folder in the folder the user shared (default: its top). " RELAY_NOTE,
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
	 "\"additionalProperties\":false}", 1},
	{"search_files", "Search the user's folder",
	 "Search the text of the files in the folder the user shared with a regular "
	 "expression, line by line, under path (default: everything). " RELAY_NOTE
	 " glob limits the files searched. The answer says when it stopped at the limit.",
	 "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\",\"minLength\":1},"
	 "\"path\":{\"type\":\"string\"},\"glob\":{\"type\":\"string\"},\"maxResults\":{"
	 "\"type\":\"integer\",\"minimum\":1}},\"required\":[\"pattern\"],"
	 "\"additionalProperties\":false}", 1},
	{NULL, NULL, NULL, NULL, 0},
};

/* Seed 003's file toolset on the subject's workspace (--user, with the agent
 * setting `tools` enabling the `file` config): POST /v1/agents/{a}/users/
 * {s}/tools/{name}, or cof_subject_tool with --data. While it is served, the
 * relay's tools of the same names are not (read_file and the rest are the
 * subject's, as seed 003 names them). */
#define USER_NOTE "Paths are relative to the user's workspace (its root; no leading '/' needed)."
static const mcp_tool mcp_subject_tools[] = {
	{"read_file", "Read a file in the user's workspace",
	 "Read a file in the user's workspace. " USER_NOTE " Text comes back as numbered "
	 "lines, 2,000 by default (offset: the first line, from 1; limit: how many). Reading "
	 "a file is what allows you to change it afterwards with write_file or patch.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	 "\"offset\":{\"type\":\"integer\",\"minimum\":0},\"limit\":{\"type\":\"integer\","
	 "\"minimum\":1,\"maximum\":10000}},\"required\":[\"path\"],"
	 "\"additionalProperties\":false}", 1},
	{"write_file", "Write a file in the user's workspace",
	 "Create a file in the user's workspace, or replace one you have read, with the "
	 "given text. " USER_NOTE " Missing folders are made unless createParents is false. "
	 "memories/ and skills/ are read-only.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	 "\"content\":{\"type\":\"string\"},\"createParents\":{\"type\":\"boolean\"}},"
	 "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}", 0},
	{"patch", "Patch a file in the user's workspace",
	 "Replace exact text in a file of the user's workspace. " USER_NOTE " oldString must "
	 "appear exactly, and once unless replaceAll is true. Read the file first.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	 "\"oldString\":{\"type\":\"string\",\"minLength\":1},\"newString\":{\"type\":"
	 "\"string\"},\"replaceAll\":{\"type\":\"boolean\"}},\"required\":[\"path\","
	 "\"oldString\",\"newString\"],\"additionalProperties\":false}", 0},
	{"search_files", "Search the user's workspace",
	 "Search the text of the files of the user's workspace with a regular expression, "
	 "line by line, under path (default: everything). " USER_NOTE " glob limits the "
	 "files searched.",
	 "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\","
	 "\"minLength\":1},\"path\":{\"type\":\"string\"},\"glob\":{\"type\":\"string\"}},"
	 "\"required\":[\"pattern\"],\"additionalProperties\":false}", 1},
	{NULL, NULL, NULL, NULL, 0},
};

/* 1 when seed 003's toolset is served: --user and the agent's `file` config
 * enabled (as looked up at start). */
static int mcp_subject_on(mcp_ctx *c)
{
	json_t *t, *cf;
	size_t i, j;
	int on = 0;

	if (!c->user)
		return 0;
	json_array_foreach(json_object_get(c->info, "tools"), i, t)
		json_array_foreach(json_object_get(t, "configs"), j, cf) {
			const char *n = json_string_value(json_object_get(cf, "name"));
			if (n && !strcmp(n, "file"))
				on = !json_is_false(json_object_get(cf, "enabled"));
		}
	return on;
}

static const mcp_tool *mcp_subject_find(const char *name)
{
	for (const mcp_tool *t = mcp_subject_tools; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

static const mcp_tool *mcp_relay_find(const char *name)
{
	for (const mcp_tool *t = mcp_relay_tools; t->name; t++)
		if (!strcmp(t->name, name))
			return t;
	return NULL;
}

/* The uid (malloc'd) of the agent's newest relay session that is active or
 * paused, or NULL (none, or no cofferd). */
static char *mcp_relay_session(mcp_ctx *c)
{
	cof_buf u = COF_BUF_INIT;
	json_t *out = NULL, *s;
	char *msg = NULL, *uid = NULL;
	size_t i;

	if (c->st)
		return NULL;
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/relay/sessions");
	cli_url_query(&u, "agent", c->agent);
	if (mcp_http("GET", u.data, NULL, NULL, &out, &msg) == 0)
		json_array_foreach(json_object_get(out, "sessions"), i, s) {
			const char *st = json_string_value(json_object_get(s, "status"));
			if (!uid && st && (!strcmp(st, "active") || !strcmp(st, "paused")))
				uid = cof_strdup(json_string_value(json_object_get(s, "uid")));
		}
	free(msg);
	json_decref(out);
	cof_buf_release(&u);
	return uid;
}

/* The text the model reads for a relay op's answer. */
static void mcp_relay_text(const char *tool, json_t *ans, cof_buf *t)
{
	json_t *it;
	size_t i;

	char n[48];

	if (!strcmp(tool, "read_file")) {
		const char *enc = json_string_value(json_object_get(ans, "encoding"));
		const char *content = json_string_value(json_object_get(ans, "content"));
		if (enc && !strcmp(enc, "base64"))
			cli_buf_addf(t, "(binary file, %s, base64)\n",
				     cli_count(cli_int(ans, "size", 0), "byte", n, sizeof(n)));
		cof_buf_adds(t, content ? content : "");
	} else if (!strcmp(tool, "write_file")) {
		cli_buf_addf(t, "wrote %s (%s)", json_string_value(json_object_get(ans, "path")),
			     cli_count(cli_int(ans, "size", 0), "byte", n, sizeof(n)));
	} else if (!strcmp(tool, "list_directory")) {
		json_array_foreach(json_object_get(ans, "entries"), i, it) {
			const char *type = json_string_value(json_object_get(it, "type"));
			int dir = type && (!strcmp(type, "directory") || !strcmp(type, "dir"));
			cli_buf_addf(t, "%s%s", json_string_value(json_object_get(it, "name")),
				     dir ? "/\n" : "");
			if (!dir)
				cli_buf_addf(t, "  %lld\n",
					     (long long)json_integer_value(json_object_get(it, "size")));
		}
		if (!t->len)
			cof_buf_adds(t, "(empty folder)");
	} else {
		json_array_foreach(json_object_get(ans, "results"), i, it)
			cli_buf_addf(t, "%s:%lld:%s\n", json_string_value(json_object_get(it, "file")),
				     (long long)json_integer_value(json_object_get(it, "line")),
				     json_string_value(json_object_get(it, "content")));
		if (!t->len)
			cof_buf_adds(t, "no matches");
		if (json_is_true(json_object_get(ans, "truncated")))
			cof_buf_adds(t, "(stopped at the result limit; narrow the search)\n");
	}
}

/* tools/call of a relay tool: the op through the agent's session. */
static json_t *mcp_relay_call(mcp_ctx *c, json_t *id, const char *tool, json_t *args)
{
	cof_buf u = COF_BUF_INIT, t = COF_BUF_INIT;
	char *uid = mcp_relay_session(c), *msg = NULL;
	json_t *body = args ? json_deep_copy(args) : json_object(), *ans = NULL, *res;

	json_object_set_new(body, "op", json_string(tool));
	if (!uid) {
		cli_buf_addf(&t, "agent '%s' has no active relay session: the user's folder is "
			     "not connected", c->agent);
	} else {
		cli_url_begin(&u);
		cli_url_lit(&u, "/v1/relay/sessions/");
		cli_url_seg(&u, uid);
		cli_url_lit(&u, "/ops");
		if (mcp_http("POST", u.data, body, NULL, &ans, &msg))
			cof_buf_adds(&t, msg);
		else
			mcp_relay_text(tool, ans, &t);
	}
	res = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
			t.data ? t.data : "", "isError", ans == NULL);
	if (ans)
		json_object_set_new(res, "structuredContent", ans);
	free(uid);
	free(msg);
	json_decref(body);
	cof_buf_release(&u);
	cof_buf_release(&t);
	return rpc_result(id, res);
}

/* The instructions: the tools, then the agent's mounts in their order (seed
 * 001: the mounts given first, the workspace after them unless placed), the
 * first being where relative paths resolve. */
static char *mcp_instructions(mcp_ctx *c)
{
	cof_buf t = COF_BUF_INIT;
	json_t *m;
	size_t i;

	cof_buf_adds(&t, "File tools over this agent's coffer files (its workspace and mounted "
		     "volumes): read, write, edit, ls, glob, grep, and present_file to show a "
		     "result to the user. Read a file before changing it: write and edit "
		     "refuse a file you have not read, or one that changed since you read it.");
	json_t *mounts = json_object_get(c->info, "mounts");
	if (json_array_size(mounts)) {
		cof_buf_adds(&t, " The mounts, in order:");
		json_array_foreach(mounts, i, m) {
			const char *mode = json_string_value(json_object_get(m, "mode"));
			cli_buf_addf(&t, "%s %s (%s)", i ? "," : "",
				     json_string_value(json_object_get(m, "path")),
				     json_is_true(json_object_get(m, "workspace")) ? "the workspace"
				     : mode && !strcmp(mode, "ro") ? "read-only" : "read-write");
		}
		cli_buf_addf(&t, "; relative paths resolve against %s.", json_string_value(
				     json_object_get(json_array_get(mounts, 0), "path")));
		/* seed 001's placement: uploads, tool outputs and scratch go to the
		 * workspace wherever it is mounted, else the first read-write mount */
		const char *home = NULL;
		json_array_foreach(mounts, i, m)
			if (!home && json_is_true(json_object_get(m, "workspace")))
				home = json_string_value(json_object_get(m, "path"));
		json_array_foreach(mounts, i, m) {
			const char *mode = json_string_value(json_object_get(m, "mode"));
			if (!home && !(mode && !strcmp(mode, "ro")))
				home = json_string_value(json_object_get(m, "path"));
		}
		if (home)
			cli_buf_addf(&t, " Attachments are under %s/uploads/, tools' file outputs "
				     "under %s/tool-outputs/; keep scratch files under %s/tmp/.",
				     home, home, home);
	}
	if (c->user)
		cof_buf_adds(&t, " Acting for one user: /user is that user's workspace (memories/ "
			     "and skills/ read-only) and /attachments the files they attached "
			     "(read-only).");
	return cof_buf_detach(&t, NULL);
}

static json_t *mcp_initialize(mcp_ctx *c, json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = MCP_PROTOCOL;

	for (size_t i = 0; asked && mcp_versions[i]; i++)
		if (!strcmp(asked, mcp_versions[i]))
			version = mcp_versions[i];
	return json_pack(
		"{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version,
		"capabilities", "tools", "listChanged", 0, "serverInfo", "name", "coffer",
		"title", "coffer agent files", "version", COFFER_VERSION, "instructions",
		"");
}

/* tools/list: every tool, or none when the agent has fileTools off. */
static json_t *mcp_tools_list(mcp_ctx *c, json_t *id)
{
	json_t *agent = NULL, *tools;
	char *msg = NULL, *uid = NULL;
	int on;

	if (mcp_agent_get(c, &agent, &msg)) {
		json_t *e = rpc_error(id, RPC_INTERNAL_ERROR, "cannot look up agent '%s': %s",
				      c->agent, msg);
		free(msg);
		return e;
	}
	on = !json_is_false(json_object_get(agent, "fileTools"));
	json_decref(agent);
	tools = on ? mcp_tool_list(mcp_tools) : json_array();
	if (mcp_subject_on(c)) {
		json_t *more = mcp_tool_list(mcp_subject_tools);
		json_array_extend(tools, more);
		json_decref(more);
	} else if ((uid = mcp_relay_session(c))) {
		json_t *more = mcp_tool_list(mcp_relay_tools);
		json_array_extend(tools, more);
		json_decref(more);
	}
	free(uid);
	return rpc_result(id, json_pack("{s:o}", "tools", tools));
}

/* A read of an image or PDF: the image as MCP image content, a PDF as an
 * embedded resource (blob); their base64 is left out of structuredContent so
 * it is not sent twice. */
static void mcp_media_content(json_t *ans, json_t *content, json_t *structured)
{
	json_t *img = json_object_get(ans, "image"), *doc = json_object_get(ans, "document");
	const char *path = json_string_value(json_object_get(ans, "path"));

	if (json_is_object(img) && json_is_string(json_object_get(img, "data"))) {
		json_array_append_new(content, json_pack("{s:s, s:O, s:O}", "type", "image", "data",
							 json_object_get(img, "data"), "mimeType",
							 json_object_get(img, "mediaType")));
		json_object_del(json_object_get(structured, "image"), "data");
	}
	if (json_is_object(doc) && json_is_string(json_object_get(doc, "data"))) {
		char *uri = NULL;
		if (asprintf(&uri, "file://%s", path ? path : "/") < 0)
			return;
		json_array_append_new(content, json_pack("{s:s, s:{s:s, s:O, s:O}}", "type",
							 "resource", "resource", "uri", uri,
							 "mimeType", json_object_get(doc, "mediaType"),
							 "blob", json_object_get(doc, "data")));
		free(uri);
		json_object_del(json_object_get(structured, "document"), "data");
	}
}

/* tools/call {name, arguments?}: the tool's answer as a CallToolResult. */
static json_t *mcp_tools_call(mcp_ctx *c, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments"), *ans = NULL, *res;
	char *msg = NULL;

	if (!name)
		return rpc_error(id, RPC_INVALID_PARAMS, "tools/call needs params.name (a string)");
	int subject_toolset = mcp_subject_on(c) && mcp_subject_find(name);
	if (!subject_toolset && mcp_relay_find(name) &&
	    (!args || json_is_object(args) || json_is_null(args)))
		return mcp_relay_call(c, id, name, json_is_object(args) ? args : NULL);
	if (!subject_toolset && !mcp_tool_find(name))
		return rpc_error(id, RPC_INVALID_PARAMS,
				 "Unknown tool: %.100s (tools: read, write, edit, ls, glob, grep, "
				 "present_file)",
				 name);
	if (args && !json_is_null(args) && !json_is_object(args))
		return rpc_error(id, RPC_INVALID_PARAMS, "params.arguments must be an object");
	if (json_is_null(args))
		args = NULL;
	args = args ? json_incref(args) : json_object();
	if (mcp_run_tool(c, name, subject_toolset, args, &ans, &msg)) {
		res = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", msg,
				"isError", 1);
		free(msg);
		json_decref(args);
		return rpc_result(id, res);
	}
	json_decref(args);
	if (!json_is_object(ans)) {
		json_decref(ans);
		return rpc_result(id, json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
						"text", "the tool gave no answer", "isError", 1));
	}
	const char *out = json_string_value(json_object_get(ans, "output"));
	json_t *structured = json_deep_copy(ans);

	json_object_del(structured, "output");
	res = json_pack("{s:[{s:s, s:s%}], s:b, s:o}", "content", "type", "text", "text",
			out ? out : "", out ? json_string_length(json_object_get(ans, "output")) : 0,
			"isError", !json_is_true(json_object_get(ans, "ok")), "structuredContent",
			structured);
	mcp_media_content(ans, json_object_get(res, "content"), structured);
	json_decref(ans);
	return rpc_result(id, res);
}

/* Handles one message; returns the answer, or NULL when none is due (a
 * notification, or a response from the client). */
static json_t *mcp_handle(mcp_ctx *c, json_t *m)
{
	json_t *id, *params;
	const char *method;

	if (!json_is_object(m))
		return rpc_error(NULL, RPC_INVALID_REQUEST, "a message must be a JSON object");
	id = json_object_get(m, "id");
	method = json_string_value(json_object_get(m, "method"));
	if (!method) {
		if (json_object_get(m, "result") || json_object_get(m, "error"))
			return NULL; /* a response to us: we send no requests */
		return rpc_error(id && (json_is_string(id) || json_is_integer(id)) ? id : NULL,
				 RPC_INVALID_REQUEST, "the message has no method");
	}
	if (!id) { /* a notification: never answered */
		if (cli_g.verbose)
			fprintf(stderr, "coffer mcp: notification %s\n", method);
		return NULL;
	}
	if (!json_is_string(id) && !json_is_integer(id))
		return rpc_error(NULL, RPC_INVALID_REQUEST, "id must be a string or an integer");
	if (!json_is_string(json_object_get(m, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0"))
		return rpc_error(id, RPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
	params = json_object_get(m, "params");
	if (params && !json_is_object(params))
		return rpc_error(id, RPC_INVALID_PARAMS, "params must be an object");
	if (cli_g.verbose)
		fprintf(stderr, "coffer mcp: request %s\n", method);
	if (!strcmp(method, "initialize")) {
		json_t *res = mcp_initialize(c, params);
		char *text = mcp_instructions(c);
		json_object_set_new(res, "instructions", json_string(text));
		free(text);
		return rpc_result(id, res);
	}
	if (!strcmp(method, "ping"))
		return rpc_result(id, json_object());
	if (!strcmp(method, "tools/list"))
		return mcp_tools_list(c, id);
	if (!strcmp(method, "tools/call"))
		return mcp_tools_call(c, id, params);
	return rpc_error(id, RPC_METHOD_NOT_FOUND, "Method not found: %.200s", method);
}

/* Writes one message as a line on stdout. -1 when stdout is gone. */
static int mcp_send(json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	int rc;

	if (!s)
		cli_check_alloc(NULL);
	rc = fputs(s, stdout) < 0 || fputc('\n', stdout) == EOF || fflush(stdout) ? -1 : 0;
	free(s);
	return rc;
}

/* One line from stdin: a message or a batch of them. -1 when stdout is gone. */
static int mcp_line(mcp_ctx *c, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *m = json_loadb(line, len, JSON_ALLOW_NUL, &jerr), *ans;
	int rc = 0;

	if (!m) {
		ans = rpc_error(NULL, RPC_PARSE_ERROR, "Parse error: %s (line %d, column %d)",
				jerr.text, jerr.line, jerr.column);
		rc = mcp_send(ans);
		json_decref(ans);
		return rc;
	}
	if (json_is_array(m)) { /* a JSON-RPC batch (MCP before 2025-06-18) */
		json_t *all = json_array(), *one;
		size_t i;

		if (!json_array_size(m))
			json_array_append_new(all, rpc_error(NULL, RPC_INVALID_REQUEST,
							     "an empty batch"));
		json_array_foreach(m, i, one) {
			if ((ans = mcp_handle(c, one)))
				json_array_append_new(all, ans);
		}
		if (json_array_size(all))
			rc = mcp_send(all);
		json_decref(all);
	} else if ((ans = mcp_handle(c, m))) {
		rc = mcp_send(ans);
		json_decref(ans);
	}
	json_decref(m);
	return rc;
}

/* coffer mcp --agent ID [--data DIR] [--run-id ID] [--user SUBJECT] */
static int mcp_main(const cli_cmd *cmd, int argc, char **argv)
{
	const char *data = NULL, *pos[1];
	mcp_ctx c = {0};
	const cli_opt opts[] = {
		{"agent", 'a', CLI_OPT_STR, &c.agent},
		{"data", 0, CLI_OPT_STR, &data},
		{"run-id", 0, CLI_OPT_STR, &c.run_id},
		{"user", 0, CLI_OPT_STR, &c.user},
		{NULL, 0, 0, NULL},
	};
	json_t *agent = NULL;
	char *line = NULL, *msg = NULL;
	size_t cap = 0;
	ssize_t n;
	int npos, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &npos)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!c.agent || !*c.agent)
		return cli_usage(cmd, "--agent ID is required");
	if (data && (rc = cli_open_data(data, &(cof_store_opts){.content_cache =
						COF_CONTENT_CACHE_DEFAULT}, &c.st)))
		return rc;
	/* Fail at start, where the person wiring the client sees it, rather than
	 * at the model's first call. */
	if (mcp_agent_get(&c, &agent, &msg)) {
		rc = cli_fail("cannot serve agent '%s': %s", c.agent, msg);
		free(msg);
		if (c.st)
			cof_store_close(c.st);
		return rc;
	}
	c.info = agent;
	signal(SIGPIPE, SIG_IGN); /* a client gone away ends the loop, not us */
	if (cli_g.verbose)
		fprintf(stderr, "coffer mcp: serving agent '%s' from %s%s\n", c.agent,
			c.st ? "data dir " : "cofferd", c.st ? data : "");
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		size_t len = (size_t)n;

		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		if (strspn(line, " \t") >= len)
			continue;
		if (mcp_line(&c, line, len))
			break;
	}
	free(line);
	json_decref(c.info);
	if (c.st)
		cof_store_close(c.st);
	return CLI_OK;
}

const cli_cmd cli_mcp_cmds[] = {
	{NULL, "mcp", "--agent ID [--data DIR] [--run-id ID] [--user SUBJECT]",
	 "serve an agent's file tools over MCP (stdio)",
	 "Speaks the Model Context Protocol (JSON-RPC 2.0, one message per line) on\n"
	 "stdin/stdout and offers the agent's file tools read, write, edit, ls, glob,\n"
	 "grep and present_file to the model. Add it to an MCP client as a stdio\n"
	 "server, e.g.\n"
	 "  coffer mcp --agent my-agent --server http://127.0.0.1:7700 --key KEY\n"
	 "stdout carries protocol messages only; errors go to stderr.\n"
	 "\n"
	 "Options:\n"
	 "  -a, --agent ID   the agent whose files the tools reach (required)\n"
	 "  --data DIR       use the data dir DIR directly (organization org_default)\n"
	 "                   instead of a cofferd; do not point it at a dir that a\n"
	 "                   running cofferd serves\n"
	 "  --run-id ID      group the calls into run ID (sent as X-Run-Id)\n"
	 "  --user SUBJECT   act for that subject: its /user and /attachments too (X-Subject)\n",
	 mcp_main},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
