/*
 * history.c — `coffer merge`, `coffer log` and `coffer revert` (API.md
 * "Merge, history, who changed what, revert").
 */
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

static void vol_url(cof_buf *u, const char *vol, const char *what)
{
	cli_url_begin(u);
	cli_url_lit(u, "/v1/volumes/");
	cli_url_seg(u, vol);
	cli_url_lit(u, what);
}

/* Who made a change, as one cell: via, then whichever of key, agent, user,
 * run and call it names; "-" for a change made before it was recorded. */
static const char *by_cell(json_t *by, char *out, size_t outsz)
{
	static const char *const keys[] = {"keyId", "agent", "user", "runId", "callId", "tool"};
	size_t n;

	if (!json_is_object(by))
		return "-";
	n = (size_t)snprintf(out, outsz, "%s", json_string_value(json_object_get(by, "via"))
			     ? json_string_value(json_object_get(by, "via")) : "?");
	for (size_t i = 0; i < sizeof keys / sizeof *keys && n < outsz; i++) {
		const char *v = json_string_value(json_object_get(by, keys[i]));
		if (v)
			n += (size_t)snprintf(out + n, outsz - n, " %s=%s", keys[i], v);
	}
	return out;
}

/* POSTs a merge or revert body; prints the answer (paths and where each came
 * from), or on 409 each conflict on stderr. */
static int post_merge_like(cof_buf *u, json_t *body, const char *list)
{
	cli_req req = {.method = "POST", .url = u->data, .body = body, .upload_size = -1,
		       .want_error = 1};
	cli_resp resp = {0};
	int rc = cli_http(&req, &resp);
	json_t *v;
	size_t i;

	if (rc != CLI_OK) {
		json_array_foreach(json_object_get(resp.error, "conflicts"), i, v)
			fprintf(stderr, "conflict  %s  (%s)\n",
				json_string_value(json_object_get(v, "path")),
				json_string_value(json_object_get(v, "kind")));
	} else if (cli_g.json) {
		cli_print_json(resp.json);
	} else {
		json_array_foreach(json_object_get(resp.json, list), i, v)
			printf("%s  %s\n", json_string_value(json_object_get(v, "from")),
			       json_string_value(json_object_get(v, "path")));
		json_array_foreach(json_object_get(resp.json, "conflicts"), i, v)
			printf("conflict  %s  (%s)\n", json_string_value(json_object_get(v, "path")),
			       json_string_value(json_object_get(v, "kind")));
		printf("%s seq %lld\n", json_is_true(json_object_get(resp.json, "dryRun"))
		       ? "would be at" : "at", (long long)cli_int(resp.json, "seq", 0));
	}
	json_decref(resp.json);
	json_decref(resp.error);
	json_decref(body);
	cof_buf_release(u);
	return rc;
}

/* coffer merge VOL --from OTHER [--dry-run] [--strategy ours|theirs] */
static int cmd_merge(const cli_cmd *cmd, int argc, char **argv)
{
	const char *from = NULL, *strategy = NULL, *pos[1], *fid;
	int dry = 0, n, rc;
	const cli_opt opts[] = {
		{"from", 0, CLI_OPT_STR, &from},
		{"dry-run", 0, CLI_OPT_FLAG, &dry},
		{"strategy", 0, CLI_OPT_STR, &strategy},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!from)
		return cli_usage(cmd, "missing --from OTHER");
	if (strategy && strcmp(strategy, "ours") && strcmp(strategy, "theirs"))
		return cli_usage(cmd, "--strategy takes ours or theirs");
	/* the URL first: cli_volume_id may reuse the string pos[0] is */
	vol_url(&u, pos[0], "/merge");
	if ((rc = cli_volume_id(from, &fid))) {
		cof_buf_release(&u);
		return rc;
	}
	body = json_pack("{s:s}", "from", fid);
	cli_body_str(body, "strategy", strategy);
	if (dry)
		json_object_set_new(body, "dryRun", json_true());
	return post_merge_like(&u, body, "merged");
}

/* coffer revert VOL --run R | --call C | --seq N [--dry-run] */
static int cmd_revert(const cli_cmd *cmd, int argc, char **argv)
{
	const char *run = NULL, *call = NULL, *pos[1];
	int64_t seq = -1;
	int dry = 0, n, rc;
	const cli_opt opts[] = {
		{"run", 0, CLI_OPT_STR, &run},
		{"call", 0, CLI_OPT_STR, &call},
		{"seq", 0, CLI_OPT_INT, &seq},
		{"dry-run", 0, CLI_OPT_FLAG, &dry},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!!run + !!call + (seq >= 0) != 1)
		return cli_usage(cmd, "give exactly one of --run, --call and --seq");
	body = json_object();
	cli_body_str(body, "runId", run);
	cli_body_str(body, "callId", call);
	if (seq >= 0)
		json_object_set_new(body, "seq", json_integer(seq));
	if (dry)
		json_object_set_new(body, "dryRun", json_true());
	vol_url(&u, pos[0], "/revert");
	return post_merge_like(&u, body, "reverted");
}

static void log_header(void)
{
	printf("%-8s %-8s %-6s %10s  %-20s  %s\n", "SEQ", "VERSION", "OP", "SIZE", "AT", "BY");
}

static void log_row(json_t *v)
{
	char by[600];

	printf("%-8lld %-8lld %-6s %10lld  %-20s  %s\n", (long long)cli_int(v, "seq", 0),
	       (long long)cli_int(v, "version", 0), json_string_value(json_object_get(v, "op")),
	       (long long)cli_int(v, "size", 0), json_string_value(json_object_get(v, "at")),
	       by_cell(json_object_get(v, "by"), by, sizeof by));
}

/* coffer log VOL PATH: every page of the path's history, newest first. */
static int cmd_log(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[2];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	vol_url(&u, pos[0], "/history");
	cli_url_query(&u, "path", pos[1]);
	cli_url_query_int(&u, "limit", 1000);
	rc = cli_pages(u.data, "versions", NULL, 1, NULL, log_header, log_row);
	cof_buf_release(&u);
	return rc;
}

const cli_cmd cli_history_cmds[] = {
	{NULL, "merge", "VOL --from OTHER [--dry-run] [--strategy ours|theirs]",
	 "bring OTHER's changes since the common base into VOL, as one change",
	 "Options:\n"
	 "  --from OTHER         the volume (id or name) whose changes come in\n"
	 "  --dry-run            say what would happen; change nothing\n"
	 "  --strategy S         settle every conflict with ours or theirs\n"
	 "Conflicts left unsettled are listed on stderr (exit 1); nothing changes.\n",
	 cmd_merge},
	{NULL, "log", "VOL PATH", "every version of PATH, newest first, and who made it",
	 NULL, cmd_log},
	{NULL, "revert", "VOL --run R|--call C|--seq N [--dry-run]",
	 "put back what a run, a turn call or one seq changed, as one change",
	 "Options:\n"
	 "  --run R              what the run R (X-Run-Id) changed\n"
	 "  --call C             what the turn call C committed\n"
	 "  --seq N              what seq N changed\n"
	 "  --dry-run            say what would happen; change nothing\n"
	 "A path changed again since is a conflict, listed on stderr (exit 1).\n",
	 cmd_revert},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
