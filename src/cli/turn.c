/*
 * turn.c — `coffer turn create|get|call|file|end`: a turn's scratch workspace
 * and its confined calls (API.md, "Turns"). `turn call` prints the call's
 * stdout and stderr where they belong and exits with the call's exit code, so
 * it composes in a shell the way the command itself would.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

/* Starts `u` as ".../v1/turns/TURN" followed by `what` (may be ""). */
static void turn_url(cof_buf *u, const char *turn, const char *what)
{
	cli_url_begin(u);
	cli_url_lit(u, "/v1/turns/");
	cli_url_seg(u, turn);
	cli_url_lit(u, what);
}

/* --accept TYPE... as a JSON array into body.field; nothing when none. */
static void turn_modes(json_t *body, const char *field, const cli_list *l)
{
	json_t *arr;
	size_t i;

	if (!l->n)
		return;
	arr = json_array();
	for (i = 0; i < l->n; i++)
		json_array_append_new(arr, json_string(l->items[i]));
	json_object_set_new(body, field, arr);
}

/* coffer turn create AGENT USER [--deadline SECONDS] [--accept TYPE]... */
static int turn_create(const cli_cmd *cmd, int argc, char **argv)
{
	int64_t deadline = 3600;
	cli_list accept = {{0}, 0};
	const char *pos[2];
	const cli_opt opts[] = {
		{"deadline", 0, CLI_OPT_INT, &deadline},
		{"accept", 0, CLI_OPT_LIST, &accept},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_pack("{s:s,s:s,s:I}", "agent", pos[0], "user", pos[1], "deadlineSeconds",
			 (json_int_t)deadline);
	turn_modes(body, "acceptedOutputModes", &accept);
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/turns");
	return cli_call_show("POST", &u, body);
}

/* coffer turn get TURN */
static int turn_get(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	turn_url(&u, pos[0], "");
	return cli_call_show("GET", &u, NULL);
}

/* Reads all of `path` ("-" = stdin) as text into *out (owned). */
static int turn_read_all(const char *path, char **out)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	cof_buf b = COF_BUF_INIT;
	char chunk[65536];
	size_t got;

	if (!f)
		return cli_fail("cannot open '%s': %s", path, strerror(errno));
	while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
		cli_buf_add(&b, chunk, got);
	if (ferror(f)) {
		if (f != stdin)
			fclose(f);
		cof_buf_release(&b);
		return cli_fail("cannot read '%s'", path);
	}
	if (f != stdin)
		fclose(f);
	cli_buf_add(&b, "", 1);
	if (strlen(b.data) != b.len - 1) {
		cof_buf_release(&b);
		return cli_fail("'%s' holds a NUL byte: a call's stdin is text", path);
	}
	*out = b.data;
	return CLI_OK;
}

/* coffer turn call TURN COMMAND [--stdin FILE] [--timeout S] [--call-id ID]
 * [--accept TYPE]...: runs `sh -c COMMAND` confined; exit code = the call's. */
static int turn_call(const cli_cmd *cmd, int argc, char **argv)
{
	int64_t timeout = -1;
	const char *in = NULL, *call_id = NULL, *pos[2];
	cli_list accept = {{0}, 0};
	const cli_opt opts[] = {
		{"stdin", 0, CLI_OPT_STR, &in},
		{"timeout", 0, CLI_OPT_INT, &timeout},
		{"call-id", 0, CLI_OPT_STR, &call_id},
		{"accept", 0, CLI_OPT_LIST, &accept},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body, *ans = NULL, *v, *f;
	char *text = NULL;
	size_t i;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (in && (rc = turn_read_all(in, &text)))
		return rc;
	body = json_pack("{s:s}", "command", pos[1]);
	if (text)
		json_object_set_new(body, "stdin", json_string(text));
	free(text);
	if (timeout >= 0)
		json_object_set_new(body, "timeoutSeconds", json_integer(timeout));
	cli_body_str(body, "callId", call_id);
	turn_modes(body, "acceptedOutputModes", &accept);
	turn_url(&u, pos[0], "/calls");
	rc = cli_call("POST", u.data, body, &ans);
	json_decref(body);
	cof_buf_release(&u);
	if (rc)
		return rc;
	if (cli_g.json) {
		cli_print_json(ans);
		json_decref(ans);
		return CLI_OK;
	}
	fputs(json_string_value(json_object_get(ans, "stdout")) ?: "", stdout);
	fflush(stdout);
	fputs(json_string_value(json_object_get(ans, "stderr")) ?: "", stderr);
	json_array_foreach(json_object_get(ans, "files"), i, f) {
		char t1[1024], t2[256], hs[16];
		const char *name = cli_cell(f, "name", t1, sizeof t1);

		cli_human_size(cli_int(f, "size", 0), hs, sizeof hs);
		fprintf(stderr, "coffer: file %s (%s, %s): coffer turn file %s %s %s\n", name,
			cli_cell(f, "mediaType", t2, sizeof t2), hs, pos[0],
			json_string_value(json_object_get(ans, "callId")) ?: "?", name);
	}
	json_array_foreach(json_object_get(ans, "notes"), i, v)
		fprintf(stderr, "coffer: %s\n", json_is_string(v) ? json_string_value(v) : "?");
	if ((v = json_object_get(ans, "limit")) && !json_is_null(v)) {
		char t[1024];

		fprintf(stderr, "coffer: limit reached: %s\n", cli_cell(ans, "limit", t, sizeof t));
	}
	json_array_foreach(json_object_get(ans, "conflicts"), i, v) {
		char t1[4096], t2[256];

		fprintf(stderr, "coffer: not committed: %s (%s)\n", cli_cell(v, "path", t1, sizeof t1),
			cli_cell(v, "reason", t2, sizeof t2));
	}
	v = json_object_get(ans, "exitCode");
	rc = json_is_integer(v) ? (int)(json_integer_value(v) & 0xff) : CLI_FAIL;
	json_decref(ans);
	return rc;
}

/* coffer turn file TURN CALL NAME [-o FILE]: a file a call returned. */
static int turn_file(const cli_cmd *cmd, int argc, char **argv)
{
	const char *out = NULL, *pos[3];
	const cli_opt opts[] = {
		{"output", 'o', CLI_OPT_STR, &out},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 3, 3, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	turn_url(&u, pos[0], "/files/");
	cli_url_seg(&u, pos[1]);
	cli_url_lit(&u, "/");
	cli_url_seg(&u, pos[2]);
	{
		cli_req req = {.method = "GET", .url = u.data, .download = 1, .out_path = out,
			       .progress = 1, .upload_size = -1, .text_tty = cmd};

		rc = cli_http(&req, NULL);
	}
	cof_buf_release(&u);
	return rc;
}

/* coffer turn end TURN: stops its calls, deletes its workspace. */
static int turn_end(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	turn_url(&u, pos[0], "");
	return cli_call_done("DELETE", &u, "ended turn %s", pos[0]);
}

const cli_cmd cli_turn_cmds[] = {
	{"turn", "create", "AGENT USER [--deadline SECONDS] [--accept TYPE]...",
	 "start a turn: a scratch workspace for confined calls (prints its id)",
	 "Options:\n"
	 "  --deadline SECONDS   the turn ends by itself after this (1..86400, default 3600)\n"
	 "  --accept TYPE        only files of this media type come back; repeat for more\n",
	 turn_create},
	{"turn", "get", "TURN", "show a turn: its limits, calls and disk use", NULL, turn_get},
	{"turn", "call",
	 "TURN COMMAND [--stdin FILE] [--timeout S] [--call-id ID] [--accept TYPE]...",
	 "run `sh -c COMMAND` confined in the turn; exits with its exit code",
	 "The call's stdout and stderr are printed to ours; the files it returned, its\n"
	 "notes, a limit it reached and paths not committed are listed on stderr.\n"
	 "Options:\n"
	 "  --stdin FILE         the call's standard input (text; - for ours)\n"
	 "  --timeout S          stop the call after S seconds\n"
	 "  --call-id ID         the model's tool-call id (made when absent)\n"
	 "  --accept TYPE        only files of this media type come back; repeat for more\n",
	 turn_call},
	{"turn", "file", "TURN CALL NAME [-o FILE]",
	 "download a file a call returned (to stdout, or to FILE)",
	 "Options:\n"
	 "  -o, --output FILE    write to FILE (atomically) instead of stdout\n",
	 turn_file},
	{"turn", "end", "TURN", "end a turn: its calls stop, its workspace is deleted", NULL,
	 turn_end},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
