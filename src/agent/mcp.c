/*
 * mcp.c — the MCP core (mcp.h): the tool tables, JSON-RPC dispatch and the
 * answer -> content mapping, shared by `coffer mcp` (stdio) and cofferd's
 * /mcp (Streamable HTTP).
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
 *
 * With a relay session of the agent (docs/api.md "Relay"), read_file,
 * write_file, list_directory and search_files also reach the user's folder.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "coffer.h"
#include "util/util.h"
#include "agent/mcp.h"

/* Protocol versions this server speaks; a client asking for one of them gets
 * it back (the spec's rule), any other gets COF_MCP_PROTOCOL. */
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
	{"move", "Move or rename a file",
	 "Move or rename one file. " PATH_NOTE " You must have read the file first and it "
	 "must not have changed since (as for write). The destination must not exist unless "
	 "overwrite is true (then you must have read it too). Files on a read-only mount "
	 "cannot be moved, nor moved onto one. Within one mount's volume the move is one "
	 "change; between two volumes it is a copy then a removal of the source, and if the "
	 "source changed in between it stays and the answer says both exist.",
	 "{\"type\":\"object\",\"properties\":{"
	 "\"from\":{\"type\":\"string\",\"description\":\"The file to move, e.g. "
	 "/workspace/draft.md.\"},"
	 "\"to\":{\"type\":\"string\",\"description\":\"Its new path, e.g. "
	 "/workspace/out/final.md.\"},"
	 "\"overwrite\":{\"type\":\"boolean\",\"description\":\"Replace a file already "
	 "at `to` (default false).\"}},"
	 "\"required\":[\"from\",\"to\"],\"additionalProperties\":false}",
	 0},
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
			fprintf(stderr, "mcp: bad schema for %s: %s at %d\n", t->name,
				jerr.text, jerr.position);
			abort();
		}
		json_array_append_new(arr, json_pack(
			"{s:s, s:s, s:s, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name", t->name,
			"title", t->title, "description", t->description, "inputSchema", schema,
			"annotations", "title", t->title, "readOnlyHint", t->read_only,
			"destructiveHint", !t->read_only, "idempotentHint",
			t->read_only && strcmp(t->name, "present_file") &&
			strcmp(t->name, "relay_sessions"),
			"openWorldHint", 0));
	}
	return arr;
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
 * sessions are looked up again at every call (GET /v1/relay/sessions?agent=ID),
 * so the tools follow the sessions as they start and end. With more than one
 * session the call names one (`session`, from the relay_sessions tool); the
 * server never picks one of several itself. */
#define RELAY_NOTE                                                                     \
	"Paths are relative to the folder the user shared (no leading '/'). When more "  \
	"than one folder is connected, give session (an id from relay_sessions); with "  \
	"one it may be left out."
#define RELAY_SESSION                                                                  \
	"\"session\":{\"type\":\"string\",\"description\":\"Which connected folder: a "   \
	"session id from relay_sessions (needed when more than one is connected).\"}"
static const mcp_tool mcp_relay_tools[] = {
	{"read_file", "Read a file in the user's folder",
	 "Read a whole file in the folder the user shared with you through coffer connect. "
	 RELAY_NOTE " Text comes back as it is; a binary file as base64. Files over the "
	 "session's size limit and excluded files are refused.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":"
	 "\"The file, e.g. src/main.c.\"}," RELAY_SESSION "},\"required\":[\"path\"],"
	 "\"additionalProperties\":false}", 1},
	{"write_file", "Write a file in the user's folder",
	 "Create or replace a file in the folder the user shared. " RELAY_NOTE " Every "
	 "write is scanned first and may be refused; in supervised mode the user approves "
	 "each write; a read-only session refuses writes.",
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{"
	 "\"type\":\"string\",\"description\":\"The complete new content (UTF-8 text).\"},"
	 RELAY_SESSION "},"
	 "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}", 0},
	{"list_directory", "List a folder of the user's folder",
	 "List a folder in the folder the user shared (default: its top). " RELAY_NOTE,
	 "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	 RELAY_SESSION "},\"additionalProperties\":false}", 1},
	{"search_files", "Search the user's folder",
	 "Search the text of the files in the folder the user shared with a regular "
	 "expression, line by line, under path (default: everything). " RELAY_NOTE
	 " glob limits the files searched. The answer says when it stopped at the limit.",
	 "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\",\"minLength\":1},"
	 "\"path\":{\"type\":\"string\"},\"glob\":{\"type\":\"string\"},\"maxResults\":{"
	 "\"type\":\"integer\",\"minimum\":1}," RELAY_SESSION "},\"required\":[\"pattern\"],"
	 "\"additionalProperties\":false}", 1},
	{"relay_sessions", "List the user's connected folders",
	 "List the folders users have connected to you with coffer connect: each session's "
	 "id, status (active, or paused while its client reconnects), mode and when it "
	 "started. Give the id as session to read_file, write_file, list_directory and "
	 "search_files when more than one is connected.",
	 "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", 1},
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
static int mcp_subject_on(cof_mcp *c)
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

/* "N bytes" of an integer field of `obj` (0 when absent). */
static const char *count_text(json_t *obj, const char *field, const char *noun, char *out,
			      size_t outsz)
{
	json_int_t v = json_integer_value(json_object_get(obj, field));

	snprintf(out, outsz, "%" JSON_INTEGER_FORMAT " %s%s", v, noun, v == 1 ? "" : "s");
	return out;
}

/* The agent's live relay sessions (an array, owned; empty when none or a
 * back end without a relay). */
static json_t *mcp_relay_live(cof_mcp *c)
{
	json_t *list = c->be->relay_sessions ? c->be->relay_sessions(c->cls) : NULL;
	json_t *live = cof_mcp_relay_live(list);

	json_decref(list);
	return live;
}

/* "uid (status, mode), ..." of the live sessions, for the model. */
static void mcp_relay_names(json_t *live, cof_buf *t)
{
	json_t *it;
	size_t i;

	json_array_foreach(live, i, it)
		cof_buf_addf(t, "%s%s (%s, %s)", i ? ", " : "", cof_json_str(it, "uid"),
			     cof_json_str(it, "status"), cof_json_str(it, "mode"));
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
			cof_buf_addf(t, "(binary file, %s, base64)\n",
				     count_text(ans, "size", "byte", n, sizeof(n)));
		cof_buf_adds(t, content ? content : "");
	} else if (!strcmp(tool, "write_file")) {
		cof_buf_addf(t, "wrote %s (%s)", json_string_value(json_object_get(ans, "path")),
			     count_text(ans, "size", "byte", n, sizeof(n)));
	} else if (!strcmp(tool, "list_directory")) {
		json_array_foreach(json_object_get(ans, "entries"), i, it) {
			const char *type = json_string_value(json_object_get(it, "type"));
			int dir = type && (!strcmp(type, "directory") || !strcmp(type, "dir"));
			cof_buf_addf(t, "%s%s", json_string_value(json_object_get(it, "name")),
				     dir ? "/\n" : "");
			if (!dir)
				cof_buf_addf(t, "  %lld\n",
					     (long long)json_integer_value(json_object_get(it, "size")));
		}
		if (!t->len)
			cof_buf_adds(t, "(empty folder)");
	} else {
		json_array_foreach(json_object_get(ans, "results"), i, it)
			cof_buf_addf(t, "%s:%lld:%s\n", json_string_value(json_object_get(it, "file")),
				     (long long)json_integer_value(json_object_get(it, "line")),
				     json_string_value(json_object_get(it, "content")));
		if (!t->len)
			cof_buf_adds(t, "no matches");
		if (json_is_true(json_object_get(ans, "truncated")))
			cof_buf_adds(t, "(stopped at the result limit; narrow the search)\n");
	}
}

/* tools/call of a relay tool: the op through the session the call names,
 * or the only one; relay_sessions lists them. */
static json_t *mcp_relay_call(cof_mcp *c, json_t *id, const char *tool, json_t *args)
{
	cof_buf t = COF_BUF_INIT;
	char *msg = NULL;
	const char *uid = NULL;
	json_t *body = args ? json_deep_copy(args) : json_object(), *ans = NULL, *res, *it;
	json_t *live = mcp_relay_live(c), *want = json_object_get(body, "session");
	size_t i;

	json_object_set_new(body, "op", json_string(tool));
	json_incref(want);
	json_object_del(body, "session");
	if (want && !json_is_string(want)) {
		cof_buf_adds(&t, "session must be a string: a session id from relay_sessions");
	} else if (!json_array_size(live)) {
		cof_buf_addf(&t, "agent '%s' has no active relay session: the user's folder is "
			     "not connected", c->agent);
	} else if (!strcmp(tool, "relay_sessions")) {
		ans = json_pack("{s:O}", "sessions", live);
		cof_buf_addf(&t, "%zu connected: ", json_array_size(live));
		mcp_relay_names(live, &t);
	} else {
		json_array_foreach(live, i, it)
			if (want ? !strcmp(cof_json_str(it, "uid"), json_string_value(want))
				 : json_array_size(live) == 1)
				uid = cof_json_str(it, "uid");
		if (!uid && want)
			cof_buf_addf(&t, "no connected session '%.80s'; the sessions: ",
				     json_string_value(want));
		else if (!uid)
			cof_buf_addf(&t, "%zu folders are connected: give session, one of: ",
				     json_array_size(live));
		if (!uid)
			mcp_relay_names(live, &t);
	}
	if (!uid) {
		/* answered above */
	} else if (c->be->relay_op(c->cls, uid, body, &ans, &msg)) {
		json_decref(ans);
		ans = NULL;
		cof_buf_adds(&t, msg ? msg : "the relay gave no answer");
	} else {
		mcp_relay_text(tool, ans, &t);
	}
	res = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
			t.data ? t.data : "", "isError", ans == NULL);
	if (ans)
		json_object_set_new(res, "structuredContent", ans);
	free(msg);
	json_decref(want);
	json_decref(live);
	json_decref(body);
	cof_buf_release(&t);
	return rpc_result(id, res);
}

/* The instructions: the tools, then the agent's mounts in their order (seed
 * 001: the mounts given first, the workspace after them unless placed), the
 * first being where relative paths resolve. */
static char *mcp_instructions(cof_mcp *c)
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
			int ws = json_is_true(json_object_get(m, "workspace"));
			const char *vol = cof_json_str(ws ? c->info : m, ws ? "workspaceVolumeId"
							 : "volumeId");
			char *name = vol && c->be->volume_name ? c->be->volume_name(c->cls, vol)
				     : NULL;
			cof_buf_addf(&t, "%s %s (", i ? "," : "",
				     json_string_value(json_object_get(m, "path")));
			if (name)
				cof_buf_addf(&t, "volume \"%s\", ", name);
			else if (vol)
				cof_buf_addf(&t, "volume %s, ", vol);
			cof_buf_addf(&t, "%s)", ws ? "the agent's workspace, read-write"
				     : mode && !strcmp(mode, "ro") ? "read-only" : "read-write");
			free(name);
		}
		cof_buf_addf(&t, "; relative paths resolve against %s.", json_string_value(
				     json_object_get(json_array_get(mounts, 0), "path")));
	}
	/* where uploads, tool outputs and scratch go: the server's placement
	 * rule (GET /v1/agents/{id} answers `places`); a subject's are its own */
	json_t *pl = json_object_get(c->info, "places");
	const char *up = json_string_value(json_object_get(pl, "uploads")),
		   *to = json_string_value(json_object_get(pl, "toolOutputs")),
		   *tmp = json_string_value(json_object_get(pl, "tmp"));
	if (!c->user && up && to && tmp)
		cof_buf_addf(&t, " Attachments are under %s/, tools' file outputs under %s/; keep "
			     "scratch files under %s/.", up, to, tmp);
	if (c->user)
		cof_buf_adds(&t, " Acting for one user: /user is that user's workspace (memories/ "
			     "and skills/ read-only; tools' file outputs under /user/tool-outputs/, "
			     "scratch files under /user/tmp/) and /attachments the files they "
			     "attached (read-only).");
	return cof_buf_detach(&t, NULL);
}

static json_t *mcp_initialize(cof_mcp *c, json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *version = COF_MCP_PROTOCOL;

	for (size_t i = 0; asked && mcp_versions[i]; i++)
		if (!strcmp(asked, mcp_versions[i]))
			version = mcp_versions[i];
	return json_pack(
		"{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version,
		"capabilities", "tools", "listChanged", 1, "serverInfo", "name", "coffer",
		"title", "coffer agent files", "version", COFFER_VERSION, "instructions",
		"");
}

/* The tools tools/list answers: the file tools unless the agent has
 * fileTools off, then the subject's toolset or, with a relay session live,
 * the relay tools. NULL with *msg (malloc'd) when the agent cannot be had. */
static json_t *mcp_listing(cof_mcp *c, char **msg)
{
	json_t *agent = NULL, *tools, *live;
	int on;

	if (c->be->agent_get(c->cls, &agent, msg))
		return NULL;
	on = !json_is_false(json_object_get(agent, "fileTools"));
	json_decref(agent);
	tools = on ? mcp_tool_list(mcp_tools) : json_array();
	if (mcp_subject_on(c)) {
		json_t *more = mcp_tool_list(mcp_subject_tools);
		json_array_extend(tools, more);
		json_decref(more);
	} else if (json_array_size(live = mcp_relay_live(c))) {
		json_t *more = mcp_tool_list(mcp_relay_tools);
		json_array_extend(tools, more);
		json_decref(more);
		json_decref(live);
	} else {
		json_decref(live);
	}
	return tools;
}

/* The names of `tools`, comma-separated (malloc'd): what c->listed holds. */
static char *mcp_listed_names(json_t *tools)
{
	cof_buf t = COF_BUF_INIT;
	json_t *one;
	size_t i;

	json_array_foreach(tools, i, one)
		cof_buf_addf(&t, "%s%s", i ? "," : "", cof_json_str(one, "name"));
	return cof_buf_detach(&t, NULL);
}

/* tools/list: every tool, or none when the agent has fileTools off. */
static json_t *mcp_tools_list(cof_mcp *c, json_t *id)
{
	char *msg = NULL;
	json_t *tools = mcp_listing(c, &msg);

	if (!tools) {
		json_t *e = rpc_error(id, COF_RPC_INTERNAL_ERROR, "cannot look up agent '%s': %s",
				      c->agent, msg);
		free(msg);
		return e;
	}
	free(c->listed); /* what the client knows now: list_changed compares with it */
	c->listed = mcp_listed_names(tools);
	return rpc_result(id, json_pack("{s:o}", "tools", tools));
}

int cof_mcp_list_changed(cof_mcp *c)
{
	char *msg = NULL, *now;
	json_t *tools = mcp_listing(c, &msg);
	int changed;

	free(msg);
	if (!tools)
		return 0; /* not reachable now: looked at again at the next wake */
	now = mcp_listed_names(tools);
	json_decref(tools);
	changed = c->listed && now && strcmp(c->listed, now);
	free(c->listed);
	c->listed = now;
	return changed;
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
static json_t *mcp_tools_call(cof_mcp *c, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments"), *ans = NULL, *res;
	char *msg = NULL;

	if (!name)
		return rpc_error(id, COF_RPC_INVALID_PARAMS, "tools/call needs params.name (a string)");
	int subject_toolset = mcp_subject_on(c) && mcp_subject_find(name);
	if (!subject_toolset && mcp_relay_find(name) &&
	    (!args || json_is_object(args) || json_is_null(args)))
		return mcp_relay_call(c, id, name, json_is_object(args) ? args : NULL);
	if (!subject_toolset && !mcp_tool_find(name))
		return rpc_error(id, COF_RPC_INVALID_PARAMS,
				 "Unknown tool: %.100s (tools: read, write, edit, ls, glob, grep, "
				 "present_file, move)",
				 name);
	if (args && !json_is_null(args) && !json_is_object(args))
		return rpc_error(id, COF_RPC_INVALID_PARAMS, "params.arguments must be an object");
	if (json_is_null(args))
		args = NULL;
	args = args ? json_incref(args) : json_object();
	if (c->be->tool(c->cls, name, subject_toolset, args, &ans, &msg)) {
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
static json_t *mcp_handle_one(cof_mcp *c, json_t *m)
{
	json_t *id, *params;
	const char *method;

	if (!json_is_object(m))
		return rpc_error(NULL, COF_RPC_INVALID_REQUEST, "a message must be a JSON object");
	id = json_object_get(m, "id");
	method = json_string_value(json_object_get(m, "method"));
	if (!method) {
		if (json_object_get(m, "result") || json_object_get(m, "error"))
			return NULL; /* a response to us: we send no requests */
		return rpc_error(id && (json_is_string(id) || json_is_integer(id)) ? id : NULL,
				 COF_RPC_INVALID_REQUEST, "the message has no method");
	}
	if (!id) { /* a notification: never answered */
		if (!strcmp(method, "notifications/initialized"))
			c->ready = 1;
		if (c->trace)
			fprintf(c->trace, "%s: notification %s\n", c->name ? c->name : "mcp", method);
		return NULL;
	}
	if (!json_is_string(id) && !json_is_integer(id))
		return rpc_error(NULL, COF_RPC_INVALID_REQUEST, "id must be a string or an integer");
	if (!json_is_string(json_object_get(m, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0"))
		return rpc_error(id, COF_RPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
	params = json_object_get(m, "params");
	if (params && !json_is_object(params))
		return rpc_error(id, COF_RPC_INVALID_PARAMS, "params must be an object");
	if (c->trace)
		fprintf(c->trace, "%s: request %s\n", c->name ? c->name : "mcp", method);
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
	return rpc_error(id, COF_RPC_METHOD_NOT_FOUND, "Method not found: %.200s", method);
}

json_t *cof_mcp_handle(cof_mcp *c, json_t *m)
{
	json_t *all, *one, *ans;
	size_t i;

	if (!json_is_array(m))
		return mcp_handle_one(c, m);
	all = json_array(); /* a JSON-RPC batch (MCP before 2025-06-18) */
	if (!json_array_size(m))
		json_array_append_new(all, rpc_error(NULL, COF_RPC_INVALID_REQUEST,
						     "an empty batch"));
	json_array_foreach(m, i, one) {
		if ((ans = mcp_handle_one(c, one)))
			json_array_append_new(all, ans);
	}
	if (json_array_size(all))
		return all;
	json_decref(all);
	return NULL;
}

json_t *cof_mcp_handle_text(cof_mcp *c, const char *text, size_t len)
{
	json_error_t jerr;
	json_t *m = json_loadb(text, len, JSON_ALLOW_NUL, &jerr), *ans;

	if (!m)
		return rpc_error(NULL, COF_RPC_PARSE_ERROR, "Parse error: %s (line %d, column %d)",
				 jerr.text, jerr.line, jerr.column);
	ans = cof_mcp_handle(c, m);
	json_decref(m);
	return ans;
}

char *cof_mcp_err_text(cof_err *err)
{
	cof_buf m = COF_BUF_INIT;

	cof_buf_addf(&m, "%s (%s)", err->msg, cof_code_type(err->code));
	cof_err_clear(err);
	return cof_buf_detach(&m, NULL);
}

json_t *cof_mcp_relay_live(json_t *list)
{
	json_t *s, *live = json_array();
	size_t i;

	json_array_foreach(json_object_get(list, "sessions"), i, s) {
		const char *st = json_string_value(json_object_get(s, "status"));
		const char *uid = json_string_value(json_object_get(s, "uid"));
		if (!uid || !st || (strcmp(st, "active") && strcmp(st, "paused")))
			continue;
		json_t *one = json_pack("{s:s, s:s, s:s}", "uid", uid, "status", st, "mode",
					cof_json_str(s, "mode") ? cof_json_str(s, "mode") : "");
		if (!one)
			continue;
		if (json_is_string(json_object_get(s, "startedAt")))
			json_object_set(one, "startedAt", json_object_get(s, "startedAt"));
		if (json_is_string(json_object_get(s, "client")))
			json_object_set(one, "client", json_object_get(s, "client"));
		json_array_append_new(live, one);
	}
	return live;
}

int cof_mcp_version_known(const char *version)
{
	for (size_t i = 0; version && mcp_versions[i]; i++)
		if (!strcmp(version, mcp_versions[i]))
			return 1;
	return 0;
}


/* The host part of "host[:port]" (len bytes; IPv6 in brackets) is a loopback
 * name: localhost, [::1] or 127.x.y.z. */
static int loopback_host(const char *hp, size_t len)
{
	static const char *const names[] = {"localhost", "[::1]", NULL};
	size_t n = len;

	if (len && hp[0] == '[') {
		const char *close = memchr(hp, ']', len);
		n = close ? (size_t)(close - hp) + 1 : len;
	} else {
		const char *colon = memchr(hp, ':', len);
		n = colon ? (size_t)(colon - hp) : len;
	}
	for (size_t i = 0; names[i]; i++)
		if (n == strlen(names[i]) && !strncasecmp(hp, names[i], n))
			return 1;
	if (n <= 4 || strncmp(hp, "127.", 4))
		return 0;
	for (size_t i = 4; i < n; i++)
		if (!(hp[i] == '.' || (hp[i] >= '0' && hp[i] <= '9')))
			return 0;
	return 1;
}

int cof_mcp_origin_refused(const char *listen, int proxied, const char *host,
			   const char *origin, const char **why)
{
	int local = listen && loopback_host(listen, strlen(listen));

	if (local && !proxied && (!host || !loopback_host(host, strlen(host)))) {
		*why = "Host must name this machine (localhost, 127.0.0.1 or [::1]) when "
		       "cofferd listens on a loopback address";
		return 1;
	}
	if (!origin)
		return 0;
	if (!strcmp(origin, "null")) {
		if (!local)
			return 0;
		*why = "an opaque Origin (null) is refused";
		return 1;
	}
	const char *sep = strstr(origin, "://");
	const char *oh = sep ? sep + 3 : origin;
	size_t ohlen = strcspn(oh, "/");
	if (host && strlen(host) == ohlen && !strncasecmp(oh, host, ohlen))
		return 0; /* the same site */
	if (local && loopback_host(oh, ohlen))
		return 0; /* a page of this machine (an inspector on another port) */
	*why = "the Origin is another site's: requests from web pages of other sites are "
	       "refused";
	return 1;
}
