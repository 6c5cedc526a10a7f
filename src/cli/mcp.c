/*
 * mcp.c — `coffer mcp --agent ID`: an agent's file tools (read, write, edit,
 * ls, glob, grep, present_file) served over the Model Context Protocol on
 * stdio. The protocol itself (tools, dispatch, content) is the library's
 * (src/agent/mcp.c); this file is the stdio transport and two back ends.
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
 * notifications/tools/list_changed: against a cofferd, once the client has
 * sent notifications/initialized, the tools it would list are looked at
 * every MCP_LOOK_MS while stdin is quiet (and between messages once that
 * long has passed), and the notification is written when they changed (a
 * relay session of the agent connected or ended). Polling, because nothing
 * streams it: the agent's events stream carries stored events only, a relay
 * session's events stream exists only once the session does, and one loop
 * keeps stdout and the one HTTP connection (cli_http) to a single thread.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"
#include "coffer.h"
#include "agent/mcp.h"

#define MCP_ORG "org_default"
#define MCP_LOOK_MS 2000 /* how often the tools are looked at for list_changed */

static int mcp_quiet; /* the looks' calls: a failure is not the client's business */

/* ------------------------------------------------------------- back ends */

typedef struct mcp_ctx {
	const char *agent;  /* --agent */
	const char *run_id; /* --run-id, or NULL */
	const char *user;   /* --user: the subject it acts for, or NULL */
	cof_store *st;      /* --data mode; NULL = talk to a cofferd */
	char scope[40];     /* this process's read scope: "stdio:" + random hex */
} mcp_ctx;


/* One call to the cofferd. Returns 0 with *out the 2xx answer, or -1 with
 * *msg (malloc'd): "MESSAGE (TYPE)" of the API error, or why there was no
 * answer. cli_http also logs the error on stderr. */
static int mcp_http(const char *method, const char *url, json_t *body,
		    struct curl_slist *hdrs, json_t **out, char **msg)
{
	cli_req req = {.method = method, .url = url, .body = body, .headers = hdrs,
		       .upload_size = -1, .want_error = 1, .quiet = mcp_quiet};
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

/* The agent's settings: GET /v1/agents/{id} or cof_agent_get. 0, or -1 with
 * *msg (malloc'd) saying why. */
static int mcp_agent_get(void *cls, json_t **out, char **msg)
{
	mcp_ctx *c = cls;
	cof_buf u = COF_BUF_INIT;
	int rc;

	if (c->st) {
		cof_err err = {0};

		*out = NULL;
		*msg = NULL;
		if (cof_agent_get(c->st, MCP_ORG, c->agent, out, &err)) {
			*msg = cof_mcp_err_text(&err);
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
static int mcp_run_tool(void *cls, const char *tool, int subject_toolset, json_t *args,
			json_t **out, char **msg)
{
	mcp_ctx *c = cls;
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
		    : cof_agent_tool_in(c->st, MCP_ORG, c->agent, c->user, tool, args, c->run_id,
					c->scope, NULL, out, &err)) {
			json_decref(*out);
			*out = NULL;
			*msg = cof_mcp_err_text(&err);
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
	if (!subject_toolset) { /* this process is one MCP session: its read scope */
		cof_buf_reset(&h);
		cli_buf_addf(&h, "X-Mcp-Session: %s", c->scope);
		hdrs = cli_check_alloc(curl_slist_append(hdrs, h.data));
	}
	rc = mcp_http("POST", u.data, args, hdrs, out, msg);
	curl_slist_free_all(hdrs);
	cof_buf_release(&h);
	cof_buf_release(&u);
	return rc;
}

/* The agent's relay sessions (GET /v1/relay/sessions?agent=ID), or NULL
 * (none reached, or no cofferd). */
static json_t *mcp_relay_sessions(void *cls)
{
	mcp_ctx *c = cls;
	cof_buf u = COF_BUF_INIT;
	json_t *out = NULL;
	char *msg = NULL;

	if (c->st)
		return NULL;
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/relay/sessions");
	cli_url_query(&u, "agent", c->agent);
	if (mcp_http("GET", u.data, NULL, NULL, &out, &msg)) {
		json_decref(out);
		out = NULL;
	}
	free(msg);
	cof_buf_release(&u);
	return out;
}

/* A volume's name: GET /v1/volumes/{id} or cof_volume_get; NULL when it
 * cannot be had (the instructions then give the id). */
static char *mcp_volume_name(void *cls, const char *vol)
{
	mcp_ctx *c = cls;
	cof_buf u = COF_BUF_INIT;
	json_t *out = NULL;
	char *msg = NULL, *name = NULL;
	cof_err err = {0};

	if (c->st) {
		if (cof_volume_get(c->st, MCP_ORG, vol, &out, &err))
			cof_err_clear(&err);
	} else {
		cli_url_begin(&u);
		cli_url_lit(&u, "/v1/volumes/");
		cli_url_seg(&u, vol);
		if (mcp_http("GET", u.data, NULL, NULL, &out, &msg)) {
			json_decref(out);
			out = NULL;
		}
		free(msg);
		cof_buf_release(&u);
	}
	if (cof_json_str(out, "name"))
		name = cof_strdup(cof_json_str(out, "name"));
	json_decref(out);
	return name;
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

/* Writes one message given as text (one line) on stdout. -1 when stdout is
 * gone. */
static int mcp_send_text(const char *text)
{
	return fputs(text, stdout) < 0 || fputc('\n', stdout) == EOF || fflush(stdout) ? -1 : 0;
}

/* One op through relay session `uid`: POST /v1/relay/sessions/{uid}/ops. */
static int mcp_relay_op(void *cls, const char *uid, json_t *body, json_t **out, char **msg)
{
	cof_buf u = COF_BUF_INIT;
	int rc;

	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/relay/sessions/");
	cli_url_seg(&u, uid);
	cli_url_lit(&u, "/ops");
	rc = mcp_http("POST", u.data, body, NULL, out, msg);
	cof_buf_release(&u);
	return rc;
}

static const cof_mcp_backend mcp_backend = {
	.agent_get = mcp_agent_get,
	.tool = mcp_run_tool,
	.relay_sessions = mcp_relay_sessions,
	.relay_op = mcp_relay_op,
	.volume_name = mcp_volume_name,
};

/* Handles one line of stdin (len bytes, without its newline): -1 when
 * stdout is gone. */
static int mcp_line(cof_mcp *m, const char *line, size_t len)
{
	size_t blank = 0;

	while (len && line[len - 1] == '\r')
		len--;
	while (blank < len && (line[blank] == ' ' || line[blank] == '\t'))
		blank++;
	if (blank == len)
		return 0;
	json_t *ans = cof_mcp_handle_text(m, line, len);
	int gone = ans && mcp_send(ans);

	json_decref(ans);
	return gone;
}

/* When the time has come (and the client is initialized): looks at the
 * tools and writes list_changed when they changed. -1 when stdout is gone. */
static int mcp_look(cof_mcp *m, int64_t *next)
{
	if (!m->ready || cof_mono_ms() < *next)
		return 0;
	mcp_quiet = 1;
	int changed = cof_mcp_list_changed(m);
	mcp_quiet = 0;
	*next = cof_mono_ms() + MCP_LOOK_MS;
	return changed && mcp_send_text(COF_MCP_LIST_CHANGED);
}

/* coffer mcp --agent ID [--data DIR] [--run-id ID] [--user SUBJECT] */
static int mcp_main(const cli_cmd *cmd, int argc, char **argv)
{
	const char *data = NULL, *pos[1];
	mcp_ctx c = {0};
	cof_mcp m = {.be = &mcp_backend, .cls = &c, .name = "coffer mcp"};
	const cli_opt opts[] = {
		{"agent", 'a', CLI_OPT_STR, &c.agent},
		{"data", 0, CLI_OPT_STR, &data},
		{"run-id", 0, CLI_OPT_STR, &c.run_id},
		{"user", 0, CLI_OPT_STR, &c.user},
		{NULL, 0, 0, NULL},
	};
	json_t *agent = NULL;
	char *msg = NULL;
	cof_buf in = COF_BUF_INIT; /* stdin's bytes not handled yet */
	int npos, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &npos)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!c.agent || !*c.agent)
		return cli_usage(cmd, "--agent ID is required");
	unsigned char rnd[12];
	if (cof_random(rnd, sizeof rnd))
		return cli_fail("cannot make a session id: no random bytes");
	snprintf(c.scope, sizeof c.scope, "stdio:");
	for (size_t i = 0; i < sizeof rnd; i++)
		snprintf(c.scope + 6 + 2 * i, 3, "%02x", rnd[i]);
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
	m.info = agent;
	signal(SIGPIPE, SIG_IGN); /* a client gone away ends the loop, not us */
	m.agent = c.agent;
	m.user = c.user;
	m.trace = cli_g.verbose ? stderr : NULL;
	if (cli_g.verbose)
		fprintf(stderr, "coffer mcp: serving agent '%s' from %s%s\n", c.agent,
			c.st ? "data dir " : "cofferd", c.st ? data : "");
	int64_t next_look = cof_mono_ms() + MCP_LOOK_MS;
	int eof = 0, gone = 0;

	while (!gone) {
		size_t off = 0;
		char *nl;

		/* the whole lines read, then (at the end of input) the last one */
		while (!gone && in.len > off && ((nl = memchr(in.data + off, '\n', in.len - off)) ||
						 eof)) {
			size_t len = nl ? (size_t)(nl - (in.data + off)) : in.len - off;

			gone = mcp_line(&m, in.data + off, len) ||
			       (!c.st && mcp_look(&m, &next_look));
			off += len + (nl != NULL);
		}
		if (eof || gone)
			break;
		if (off) { /* the lines handled go */
			memmove(in.data, in.data + off, in.len - off);
			in.len -= off;
		}
		if (!c.st && mcp_look(&m, &next_look))
			break;
		int64_t wait = next_look - cof_mono_ms();
		struct pollfd p = {.fd = 0, .events = POLLIN};
		int r = poll(&p, 1, c.st || !m.ready ? -1 : wait < 0 ? 0 : (int)wait);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (cof_buf_reserve(&in, 65536)) /* out of memory */
			break;
		ssize_t got = read(0, in.data + in.len, 65536);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			eof = 1;
		else
			in.len += (size_t)got;
	}
	cof_buf_release(&in);
	json_decref(m.info);
	free(m.listed);
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