/*
 * snapshot.c — `coffer snapshot create|ls|get|rm|pin|unpin`, `coffer fork`
 * and `coffer restore`.
 */
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

/* Starts `u` as ".../v1/volumes/VOL/WHAT[SID]" (sid NULL = none). */
static void snap_url(cof_buf *u, const char *vol, const char *what, const char *sid)
{
	cli_url_begin(u);
	cli_url_lit(u, "/v1/volumes/");
	cli_url_seg(u, vol);
	cli_url_lit(u, what);
	if (sid)
		cli_url_seg(u, sid);
}

/* Turns "k:v" labels into {k: v}; CLI_USAGE (printed) when one lacks ':'. */
static int snap_labels(const cli_cmd *cmd, const cli_list *l, json_t **out)
{
	json_t *labels = json_object();
	size_t i;

	for (i = 0; i < l->n; i++) {
		const char *colon = strchr(l->items[i], ':');
		char *key;

		if (!colon || colon == l->items[i]) {
			json_decref(labels);
			return cli_usage(cmd, "--label wants KEY:VALUE, not '%s'", l->items[i]);
		}
		key = cli_check_alloc(strndup(l->items[i], (size_t)(colon - l->items[i])));
		json_object_set_new(labels, key, json_string(colon + 1));
		free(key);
	}
	*out = labels;
	return 0;
}

/* coffer snapshot create VOL [--pin] [--label k:v]... */
static int snap_create(const cli_cmd *cmd, int argc, char **argv)
{
	int pin = 0, n, rc;
	cli_list labels = {{0}, 0};
	const char *pos[1];
	const cli_opt opts[] = {
		{"pin", 0, CLI_OPT_FLAG, &pin},
		{"label", 'l', CLI_OPT_LIST, &labels},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body, *lab = NULL;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if ((rc = snap_labels(cmd, &labels, &lab)))
		return rc;
	body = json_pack("{s:b}", "pinned", pin);
	if (labels.n)
		json_object_set(body, "labels", lab);
	json_decref(lab);
	snap_url(&u, pos[0], "/snapshots", NULL);
	return cli_call_show("POST", &u, body);
}

/* Labels as "k:v,k2:v2" into out ("" when none); returns out. */
static const char *snap_labels_text(json_t *labels, char *out, size_t outsz)
{
	const char *k;
	json_t *v;
	size_t used = 0;

	out[0] = '\0';
	json_object_foreach(labels, k, v) {
		int n = snprintf(out + used, outsz - used, "%s%s:%s", used ? "," : "", k,
				 json_is_string(v) ? json_string_value(v) : "?");

		if (n < 0 || (size_t)n >= outsz - used)
			break;
		used += (size_t)n;
	}
	return out;
}

/* coffer snapshot ls VOL [--label k:v]... */
static int snap_ls(const cli_cmd *cmd, int argc, char **argv)
{
	cli_list labels = {{0}, 0};
	const char *pos[1];
	const cli_opt opts[] = {
		{"label", 'l', CLI_OPT_LIST, &labels},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *ans = NULL, *list, *s;
	size_t i;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	snap_url(&u, pos[0], "/snapshots", NULL);
	for (i = 0; i < labels.n; i++) {
		if (!strchr(labels.items[i], ':'))
			return cli_usage(cmd, "--label wants KEY:VALUE, not '%s'", labels.items[i]);
		cli_url_query(&u, "label", labels.items[i]);
	}
	rc = cli_call("GET", u.data, NULL, &ans);
	cof_buf_release(&u);
	if (rc)
		return rc;
	list = json_is_array(ans) ? ans : json_object_get(ans, "snapshots");
	if (cli_g.json || !json_is_array(list)) {
		cli_print_json(ans);
		json_decref(ans);
		return CLI_OK;
	}
	printf("%-26s %8s %-6s %8s %6s  %-20s  %s\n", "ID", "SEQ", "PINNED", "FILES", "SIZE",
	       "CREATED", "LABELS");
	json_array_foreach(list, i, s) {
		char t1[64], t2[32], t3[32], t4[64], t5[1024], hs[16];

		cli_human_size(cli_int(s, "bytes", 0), hs, sizeof(hs));
		printf("%-26s %8s %-6s %8s %6s  %-20s  %s\n", cli_cell(s, "id", t1, sizeof(t1)),
		       cli_cell(s, "seq", t2, sizeof(t2)),
		       json_is_true(json_object_get(s, "pinned")) ? "yes" : "no",
		       cli_cell(s, "files", t3, sizeof(t3)), hs,
		       cli_cell(s, "createdAt", t4, sizeof(t4)),
		       snap_labels_text(json_object_get(s, "labels"), t5, sizeof(t5)));
	}
	json_decref(ans);
	return CLI_OK;
}

/* coffer snapshot get VOL SID */
static int snap_get(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[2];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	snap_url(&u, pos[0], "/snapshots/", pos[1]);
	return cli_call_show("GET", &u, NULL);
}

/* coffer snapshot rm VOL SID [--force] */
static int snap_rm(const cli_cmd *cmd, int argc, char **argv)
{
	int force = 0, n, rc;
	const char *pos[2];
	const cli_opt opts[] = {
		{"force", 'f', CLI_OPT_FLAG, &force},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	snap_url(&u, pos[0], "/snapshots/", pos[1]);
	if (force)
		cli_url_query(&u, "force", "true");
	return cli_call_done("DELETE", &u, "deleted snapshot %s", pos[1]);
}

/* coffer snapshot pin|unpin VOL SID: PATCH {pinned}. */
static int snap_pin(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[2];
	cof_buf u = COF_BUF_INIT;
	json_t *body;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_pack("{s:b}", "pinned", !strcmp(cmd->name, "pin"));
	snap_url(&u, pos[0], "/snapshots/", pos[1]);
	return cli_call_show("PATCH", &u, body);
}

/* coffer fork VOL [--snapshot S] [--name N] */
static int snap_fork(const cli_cmd *cmd, int argc, char **argv)
{
	const char *snap = NULL, *name = NULL, *pos[1];
	const cli_opt opts[] = {
		{"snapshot", 0, CLI_OPT_STR, &snap},
		{"name", 0, CLI_OPT_STR, &name},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_object();
	cli_body_str(body, "snapshot", snap);
	cli_body_str(body, "name", name);
	snap_url(&u, pos[0], "/fork", NULL);
	return cli_call_show("POST", &u, body);
}

/* coffer restore VOL SNAPSHOT */
static int snap_restore(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[2];
	cof_buf u = COF_BUF_INIT;
	json_t *body;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_pack("{s:s}", "snapshot", pos[1]);
	snap_url(&u, pos[0], "/restore", NULL);
	return cli_call_show("POST", &u, body);
}

const cli_cmd cli_snapshot_cmds[] = {
	{"snapshot", "create", "VOL [--pin] [--label KEY:VALUE]...",
	 "snapshot a volume (metadata only, instant)",
	 "Options:\n"
	 "  --pin                keep it until unpinned (else only the newest 100\n"
	 "                       unpinned snapshots are kept)\n"
	 "  -l, --label K:V      attach a label; repeat for more (at most 16)\n",
	 snap_create},
	{"snapshot", "ls", "VOL [--label KEY:VALUE]...", "list a volume's snapshots",
	 "Options:\n"
	 "  -l, --label K:V      only snapshots carrying this label; repeat: all must hold\n",
	 snap_ls},
	{"snapshot", "get", "VOL SID", "show one snapshot", NULL, snap_get},
	{"snapshot", "rm", "VOL SID [--force]", "delete a snapshot",
	 "Options:\n"
	 "  -f, --force          delete it even if it is pinned\n",
	 snap_rm},
	{"snapshot", "pin", "VOL SID", "keep a snapshot until it is unpinned", NULL, snap_pin},
	{"snapshot", "unpin", "VOL SID", "let a snapshot age out again", NULL, snap_pin},
	{NULL, "fork", "VOL [--snapshot S] [--name N]",
	 "make a new volume sharing VOL's content (no bytes copied)",
	 "Options:\n"
	 "  --snapshot S         fork from snapshot S (default: the volume now)\n"
	 "  --name N             the new volume's name\n",
	 snap_fork},
	{NULL, "restore", "VOL SNAPSHOT",
	 "make VOL as SNAPSHOT was, in place, as one change", NULL, snap_restore},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
