/*
 * relay.c — `coffer relay open|ls|get|op|log|end|abort`: the agent's side of
 * relay sessions (API.md, "Relay"). The user's side is `coffer connect`
 * (connect_cmd.c); these are what an operator or a script on the agent's side
 * runs: open a session, hand its connect token to the user, relay one op,
 * read the session's log, end it.
 */
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

/* Starts `u` as ".../v1/relay/sessions[/UID]" followed by `what`. */
static void relay_url(cof_buf *u, const char *uid, const char *what)
{
	cli_url_begin(u);
	cli_url_lit(u, "/v1/relay/sessions");
	if (uid) {
		cli_url_lit(u, "/");
		cli_url_seg(u, uid);
	}
	cli_url_lit(u, what);
}

/* coffer relay open AGENT: prints the uid and the connect token (shown once). */
static int relay_open(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	relay_url(&u, NULL, "");
	return cli_call_show("POST", &u, json_pack("{s:s}", "agent", pos[0]));
}

/* coffer relay ls [--agent A] [--all]: UID AGENT STATUS MODE STARTED rows. */
static int relay_ls(const cli_cmd *cmd, int argc, char **argv)
{
	const char *agent = NULL, *pos[1];
	int all = 0, n, rc;
	const cli_opt opts[] = {
		{"agent", 0, CLI_OPT_STR, &agent},
		{"all", 'a', CLI_OPT_FLAG, &all},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *ans = NULL, *s;
	size_t i;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	relay_url(&u, NULL, "");
	cli_url_query(&u, "agent", agent);
	if (all)
		cli_url_query(&u, "all", "true");
	rc = cli_call("GET", u.data, NULL, &ans);
	cof_buf_release(&u);
	if (rc)
		return rc;
	if (cli_g.json || !json_is_array(json_object_get(ans, "sessions"))) {
		cli_print_json(ans);
		json_decref(ans);
		return CLI_OK;
	}
	printf("%-24s %-20s %-8s %-10s %s\n", "UID", "AGENT", "STATUS", "MODE", "STARTED");
	json_array_foreach(json_object_get(ans, "sessions"), i, s) {
		char t1[128], t2[256], t3[32], t4[32], t5[64];

		printf("%-24s %-20s %-8s %-10s %s\n", cli_cell(s, "uid", t1, sizeof t1),
		       cli_cell(s, "agent", t2, sizeof t2), cli_cell(s, "status", t3, sizeof t3),
		       cli_cell(s, "mode", t4, sizeof t4), cli_cell(s, "startedAt", t5, sizeof t5));
	}
	json_decref(ans);
	return CLI_OK;
}

/* coffer relay get UID */
static int relay_get(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	relay_url(&u, pos[0], "");
	return cli_call_show("GET", &u, NULL);
}

/* coffer relay op UID OP [PATH] [--content TEXT] [--pattern P] [--glob G]
 * [--no-wait]: one op relayed to the user's side; a read's text (utf-8) is
 * printed as it is, other answers (base64 reads too) as JSON. */
static int relay_op(const cli_cmd *cmd, int argc, char **argv)
{
	const char *content = NULL, *pattern = NULL, *glob = NULL, *pos[3];
	int64_t max = -1;
	int nowait = 0, n, rc;
	const cli_opt opts[] = {
		{"content", 0, CLI_OPT_STR, &content},
		{"pattern", 0, CLI_OPT_STR, &pattern},
		{"glob", 0, CLI_OPT_STR, &glob},
		{"max-results", 0, CLI_OPT_INT, &max},
		{"no-wait", 0, CLI_OPT_FLAG, &nowait},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body, *ans = NULL, *text;
	cli_resp resp = {0};

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 3, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_pack("{s:s}", "op", pos[1]);
	if (n == 3)
		json_object_set_new(body, "path", json_string(pos[2]));
	cli_body_str(body, "content", content);
	cli_body_str(body, "pattern", pattern);
	cli_body_str(body, "glob", glob);
	if (max >= 0)
		json_object_set_new(body, "maxResults", json_integer(max));
	relay_url(&u, pos[0], "/ops");
	cli_url_query(&u, "wait", nowait ? "false" : "true");
	{
		cli_req req = {.method = "POST", .url = u.data, .body = body, .upload_size = -1,
			       .want_error = 1};

		rc = cli_http(&req, &resp);
	}
	json_decref(body);
	cof_buf_release(&u);
	if (rc && resp.status == 423 && resp.error) {
		/* --no-wait on a supervised write: the op id to poll is the answer */
		char t[128];

		if (cli_g.json)
			cli_print_json(resp.error);
		else
			printf("op %s waits for the user's answer: GET /v1/relay/sessions/%s/ops/%s\n",
			       cli_cell(resp.error, "opId", t, sizeof t), pos[0], t);
		json_decref(resp.error);
		return CLI_FAIL;
	}
	json_decref(resp.error);
	if (rc)
		return rc;
	ans = resp.json;
	text = json_object_get(ans, "content");
	if (!cli_g.json && !strcmp(pos[1], "read_file") && json_is_string(text) &&
	    !strcmp(json_string_value(json_object_get(ans, "encoding")) ?: "", "utf-8"))
		fputs(json_string_value(text), stdout);
	else
		cli_print_json(ans);
	json_decref(ans);
	return CLI_OK;
}

/* coffer relay log UID: one line an entry (JSON Lines). */
static int relay_log(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	json_t *ans = NULL, *e;
	size_t i;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	relay_url(&u, pos[0], "/log");
	rc = cli_call("GET", u.data, NULL, &ans);
	cof_buf_release(&u);
	if (rc)
		return rc;
	if (cli_g.json || !json_is_array(json_object_get(ans, "entries"))) {
		cli_print_json(ans);
	} else {
		json_array_foreach(json_object_get(ans, "entries"), i, e)
			cli_print_json_line(e);
		if (json_is_true(json_object_get(ans, "truncated")))
			fprintf(stderr, "coffer: older entries are no longer kept\n");
	}
	json_decref(ans);
	return CLI_OK;
}

/* coffer relay end|abort UID */
static int relay_end(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	int abort = !strcmp(cmd->name, "abort"), n, rc;
	cof_buf u = COF_BUF_INIT;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	relay_url(&u, pos[0], abort ? "/abort" : "");
	return cli_call_done(abort ? "POST" : "DELETE", &u, "%s relay session %s",
			     abort ? "aborted" : "ended", pos[0]);
}

const cli_cmd cli_relay_cmds[] = {
	{"relay", "open", "AGENT",
	 "open a relay session for an agent (prints the user's connect token, once)",
	 "The user serves a folder to it with coffer connect, given the uid and the token.\n",
	 relay_open},
	{"relay", "ls", "[--agent A] [--all]", "list relay sessions: UID AGENT STATUS MODE",
	 "Options:\n"
	 "  --agent A            only agent A's sessions\n"
	 "  -a, --all            ended sessions too\n",
	 relay_ls},
	{"relay", "get", "UID", "show a relay session: status, mode, exclusions, counts", NULL,
	 relay_get},
	{"relay", "op",
	 "UID OP [PATH] [--content TEXT] [--pattern P] [--glob G] [--max-results N] [--no-wait]",
	 "relay one op (read_file, write_file, list_directory, search_files)",
	 "A read's text is printed as it is; other answers as JSON.\n"
	 "Options:\n"
	 "  --content TEXT       what write_file writes\n"
	 "  --pattern P          what search_files looks for\n"
	 "  --glob G             search_files: only paths matching G\n"
	 "  --max-results N      search_files: at most N results\n"
	 "  --no-wait            a supervised write answers at once with its op id\n",
	 relay_op},
	{"relay", "log", "UID", "print a relay session's log (JSON Lines)", NULL, relay_log},
	{"relay", "end", "UID", "end a relay session (the agent's job is done)", NULL, relay_end},
	{"relay", "abort", "UID", "abort a relay session: access stops at once", NULL,
	 relay_end},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
