/*
 * agent.c — `coffer agent get|put|rm|files|download|upload|tool|run`: an
 * agent's settings, its files by the path the agent sees, and its file tools
 * run as the model would (API.md, "Agents"). Every command takes the agent's
 * id first; `--user S` (X-Subject) acts for one subject where the API takes one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"

/* Starts `u` as ".../v1/agents/AGENT" followed by `what` (may be ""). */
static void agent_url(cof_buf *u, const char *agent, const char *what)
{
	cli_url_begin(u);
	cli_url_lit(u, "/v1/agents/");
	cli_url_seg(u, agent);
	cli_url_lit(u, what);
}

/* One JSON request for subject `user` (X-Subject) in run `run` (X-Run-Id),
 * either NULL: cli_http into *resp; releases `u`. */
static int agent_call(const char *method, cof_buf *u, json_t *body, const char *user,
		      const char *run, cli_resp *resp)
{
	struct curl_slist *h = NULL;
	cof_buf b = COF_BUF_INIT;
	int rc;

	if (user) {
		cli_buf_addf(&b, "X-Subject: %s", user);
		h = cli_check_alloc(curl_slist_append(h, b.data));
		cof_buf_release(&b);
	}
	if (run) {
		cli_buf_addf(&b, "X-Run-Id: %s", run);
		h = cli_check_alloc(curl_slist_append(h, b.data));
		cof_buf_release(&b);
	}
	{
		cli_req req = {.method = method, .url = u->data, .body = body, .headers = h,
			       .upload_size = -1};

		rc = cli_http(&req, resp);
	}
	curl_slist_free_all(h);
	cof_buf_release(u);
	return rc;
}

/* Reads a JSON value from `src` ("-" = stdin, else a file name) or, when
 * `src` starts with '{' or '[', takes it as the JSON text itself. CLI_OK with
 * *out owned, else CLI_USAGE/CLI_FAIL printed. */
static int agent_json_arg(const cli_cmd *cmd, const char *src, json_t **out)
{
	json_error_t jerr;

	if (src[0] == '{' || src[0] == '[')
		*out = json_loads(src, 0, &jerr);
	else if (!strcmp(src, "-"))
		*out = json_loadf(stdin, 0, &jerr);
	else
		*out = json_load_file(src, 0, &jerr);
	if (*out)
		return CLI_OK;
	if (src[0] == '{' || src[0] == '[')
		return cli_usage(cmd, "the JSON given is not valid: %s (column %d)", jerr.text,
				 jerr.column);
	return cli_fail("cannot read JSON from '%s': %s (line %d)", src, jerr.text, jerr.line);
}

static void agent_ls_header(void)
{
	printf("%-40s %-26s %s\n", "ID", "WORKSPACE", "CREATED");
}

static void agent_ls_row(json_t *a)
{
	char t1[256], t2[64], t3[64];

	printf("%-40s %-26s %s\n", cli_cell(a, "id", t1, sizeof t1),
	       cli_cell(a, "workspaceVolumeId", t2, sizeof t2),
	       cli_cell(a, "createdAt", t3, sizeof t3));
}

/* coffer agent ls [--prefix P] [--all] [--cursor C] [--limit N]: ID
 * WORKSPACE CREATED rows, one page, or every page with --all. */
static int agent_ls(const cli_cmd *cmd, int argc, char **argv)
{
	const char *prefix = NULL, *cursor = NULL, *pos[1];
	int64_t limit = 0;
	int all = 0, n, rc;
	const cli_opt opts[] = {
		{"prefix", 0, CLI_OPT_STR, &prefix},
		{"cursor", 0, CLI_OPT_STR, &cursor},
		{"limit", 0, CLI_OPT_INT, &limit},
		{"all", 'a', CLI_OPT_FLAG, &all},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/agents");
	cli_url_query(&u, "prefix", prefix);
	if (limit)
		cli_url_query_int(&u, "limit", limit);
	rc = cli_pages(u.data, "agents", cursor, all, "agents", agent_ls_header, agent_ls_row);
	cof_buf_release(&u);
	return rc;
}

/* coffer agent get AGENT */
static int agent_get(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	agent_url(&u, pos[0], "");
	return cli_call_show("GET", &u, NULL);
}

/* coffer agent put AGENT [SETTINGS] [--mount VOL:PATH[:ro]]... [--remount] */
static int agent_put(const cli_cmd *cmd, int argc, char **argv)
{
	cli_list mounts = {{0}, 0};
	int remount = 0, n, rc;
	const char *pos[2];
	const cli_opt opts[] = {
		{"mount", 'm', CLI_OPT_LIST, &mounts},
		{"remount", 0, CLI_OPT_FLAG, &remount},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body = NULL;
	size_t i;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (n == 2 && (rc = agent_json_arg(cmd, pos[1], &body)))
		return rc;
	if (!body)
		body = json_object();
	if (!json_is_object(body)) {
		json_decref(body);
		return cli_usage(cmd, "SETTINGS must be a JSON object");
	}
	if (mounts.n) {
		json_t *arr = json_array();

		for (i = 0; i < mounts.n; i++) {
			const char *m = mounts.items[i], *colon = strchr(m, ':'), *vid;
			char *vol, *path, *mode;
			json_t *one;

			if (!colon || colon == m || colon[1] != '/') {
				json_decref(arr);
				json_decref(body);
				return cli_usage(cmd, "--mount wants VOL:/PATH[:ro], not '%s'", m);
			}
			vol = cli_check_alloc(strndup(m, (size_t)(colon - m)));
			path = cli_check_alloc(strdup(colon + 1));
			mode = strrchr(path, ':');
			if (mode && strcmp(mode, ":ro") && strcmp(mode, ":rw"))
				mode = NULL;
			if (mode)
				*mode++ = '\0';
			if ((rc = cli_volume_id(vol, &vid))) {
				free(vol);
				free(path);
				json_decref(arr);
				json_decref(body);
				return rc;
			}
			one = json_pack("{s:s,s:s,s:s}", "volumeId", vid, "path", path, "mode",
					mode && !strcmp(mode, "ro") ? "ro" : "rw");
			json_array_append_new(arr, one);
			free(vol);
			free(path);
		}
		json_object_set_new(body, "mounts", arr);
	}
	if (remount)
		json_object_set_new(body, "remount", json_true());
	agent_url(&u, pos[0], "");
	return cli_call_show("PUT", &u, body);
}

/* coffer agent rm AGENT */
static int agent_rm(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	agent_url(&u, pos[0], "");
	return cli_call_done("DELETE", &u, "deleted agent %s", pos[0]);
}

/* coffer agent files AGENT [DIR] [--user S]: TYPE SIZE PATH rows. */
static int agent_files(const cli_cmd *cmd, int argc, char **argv)
{
	const char *user = NULL, *pos[2];
	const cli_opt opts[] = {
		{"user", 'u', CLI_OPT_STR, &user},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	cli_resp resp = {0};
	json_t *e;
	size_t i;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	agent_url(&u, pos[0], "/files");
	cli_url_query(&u, "path", n == 2 ? pos[1] : "/workspace");
	if ((rc = agent_call("GET", &u, NULL, user, NULL, &resp)))
		return rc;
	if (cli_g.json || !json_is_array(json_object_get(resp.json, "entries"))) {
		cli_print_json(resp.json);
		json_decref(resp.json);
		return CLI_OK;
	}
	printf("%-4s %6s  %s\n", "TYPE", "SIZE", "PATH");
	json_array_foreach(json_object_get(resp.json, "entries"), i, e) {
		char t1[16], t2[4096], hs[16] = "-";

		if (json_is_integer(json_object_get(e, "size")))
			cli_human_size(cli_int(e, "size", 0), hs, sizeof(hs));
		printf("%-4s %6s  %s\n", cli_cell(e, "type", t1, sizeof(t1)), hs,
		       cli_cell(e, "path", t2, sizeof(t2)));
	}
	if (json_is_true(json_object_get(resp.json, "truncated")))
		fprintf(stderr, "coffer: the listing stops at the server's limit\n");
	json_decref(resp.json);
	return CLI_OK;
}

/* coffer agent download AGENT PATH [-o FILE] */
static int agent_download(const cli_cmd *cmd, int argc, char **argv)
{
	const char *out = NULL, *pos[2];
	const cli_opt opts[] = {
		{"output", 'o', CLI_OPT_STR, &out},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	agent_url(&u, pos[0], "/files/");
	cli_url_path(&u, pos[1]);
	{
		cli_req req = {.method = "GET", .url = u.data, .download = 1, .out_path = out,
			       .progress = 1, .upload_size = -1, .text_tty = cmd};

		rc = cli_http(&req, NULL);
	}
	cof_buf_release(&u);
	return rc;
}

/* coffer agent upload AGENT PATH [FILE|-] */
static int agent_upload(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[3];
	cof_buf u = COF_BUF_INIT;
	cli_resp resp = {0};
	struct stat sb;
	FILE *f;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 2, 3, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if ((rc = cli_upload_source(cmd, n == 3 ? pos[2] : "-", n == 3, &f, &sb)))
		return rc;
	agent_url(&u, pos[0], "/files/");
	cli_url_path(&u, pos[1]);
	{
		cli_req req = {.method = "PUT", .url = u.data, .upload = f, .progress = 1,
			       .upload_size = S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1};

		rc = cli_http(&req, &resp);
	}
	if (f != stdin)
		fclose(f);
	if (rc == CLI_OK)
		cli_print_object(resp.json);
	json_decref(resp.json);
	cof_buf_release(&u);
	return rc;
}

/* coffer agent tool AGENT TOOL [INPUT] [--user S] [--run-id R]: prints the
 * text the model reads; exit 1 when the tool refused (ok false). */
static int agent_tool(const cli_cmd *cmd, int argc, char **argv)
{
	const char *user = NULL, *run = NULL, *pos[3];
	const cli_opt opts[] = {
		{"user", 'u', CLI_OPT_STR, &user},
		{"run-id", 0, CLI_OPT_STR, &run},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	cli_resp resp = {0};
	json_t *body = NULL, *ok;
	const char *text;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 3, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (n == 3 && (rc = agent_json_arg(cmd, pos[2], &body)))
		return rc;
	if (!body)
		body = json_object();
	agent_url(&u, pos[0], "/tools/");
	cli_url_seg(&u, pos[1]);
	rc = agent_call("POST", &u, body, user, run, &resp);
	json_decref(body);
	if (rc)
		return rc;
	ok = json_object_get(resp.json, "ok");
	text = json_string_value(json_object_get(resp.json, "output"));
	if (cli_g.json || !text) {
		cli_print_json(resp.json);
	} else {
		fputs(text, json_is_false(ok) ? stderr : stdout);
		if (*text && text[strlen(text) - 1] != '\n')
			fputc('\n', json_is_false(ok) ? stderr : stdout);
	}
	rc = json_is_false(ok) ? CLI_FAIL : CLI_OK;
	json_decref(resp.json);
	return rc;
}

/* coffer agent run AGENT RUN [--user S]: the files a run wrote and presented. */
static int agent_run(const cli_cmd *cmd, int argc, char **argv)
{
	const char *user = NULL, *pos[2];
	const cli_opt opts[] = {
		{"user", 'u', CLI_OPT_STR, &user},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	cli_resp resp = {0};
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	agent_url(&u, pos[0], "/runs/");
	cli_url_seg(&u, pos[1]);
	rc = agent_call("GET", &u, NULL, user, NULL, &resp);
	if (rc == CLI_OK)
		cli_print_json(resp.json);
	json_decref(resp.json);
	return rc;
}

const cli_cmd cli_agent_cmds[] = {
	{"agent", "ls", "[--prefix P] [--all] [--cursor C] [--limit N]",
	 "list the organization's agents: ID WORKSPACE CREATED",
	 "Options:\n"
	 "  --prefix P           only ids starting with P\n"
	 "  -a, --all            every page (with --json: one object of them all)\n"
	 "  --cursor C           the page after the one that gave C\n"
	 "  --limit N            agents a page (1..1000)\n",
	 agent_ls},
	{"agent", "get", "AGENT", "show an agent's settings, mounts and workspace", NULL,
	 agent_get},
	{"agent", "put", "AGENT [SETTINGS] [--mount VOL:/PATH[:ro|:rw]]... [--remount]",
	 "create or update an agent (SETTINGS: JSON text, a file, or - for stdin)",
	 "Options:\n"
	 "  -m, --mount VOL:/PATH[:ro|:rw]  mount volume VOL (id or name) at /PATH,\n"
	 "                       read-only with :ro (default :rw); repeat for more\n"
	 "                       (replaces SETTINGS' mounts)\n"
	 "  --remount            allow other mounts than the agent has (between turns)\n",
	 agent_put},
	{"agent", "rm", "AGENT", "delete an agent and its own workspace volume", NULL, agent_rm},
	{"agent", "files", "AGENT [DIR] [--user S]",
	 "list a folder as the agent sees it: TYPE SIZE PATH (default /workspace)",
	 "Options:\n"
	 "  -u, --user S         as subject S sees it\n",
	 agent_files},
	{"agent", "download", "AGENT PATH [-o FILE]",
	 "download a file by the agent's path (to stdout, or to FILE)",
	 "Options:\n"
	 "  -o, --output FILE    write to FILE (atomically) instead of stdout\n",
	 agent_download},
	{"agent", "upload", "AGENT PATH [FILE|-]",
	 "upload a file (streamed) to the agent's PATH, with the agent's access", NULL,
	 agent_upload},
	{"agent", "tool", "AGENT TOOL [INPUT] [--user S] [--run-id R]",
	 "run a file tool (read, write, edit, ls, glob, grep, ...) as the model would",
	 "INPUT is the tool's JSON input: text, a file, or - for stdin (default {}).\n"
	 "The text the model would read is printed; a refusal goes to stderr, exit 1.\n"
	 "Options:\n"
	 "  -u, --user S         for subject S\n"
	 "  --run-id R           group the call into run R\n",
	 agent_tool},
	{"agent", "run", "AGENT RUN [--user S]",
	 "show the files a run wrote and presented",
	 "Options:\n"
	 "  -u, --user S         subject S's run of that id\n",
	 agent_run},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
