/*
 * volume.c — `coffer volume create|ls|get|rm`.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

/* Starts `u` as the URL of volume `id` (".../v1/volumes/ID"). */
static void vol_url(cof_buf *u, const char *id)
{
	cli_url_begin(u);
	cli_url_lit(u, "/v1/volumes/");
	cli_url_seg(u, id);
}

/* coffer volume create NAME [--ceiling SIZE] [--idempotency-key K] */
static int vol_create(const cli_cmd *cmd, int argc, char **argv)
{
	int64_t ceiling = -1;
	const char *idem = NULL, *pos[1];
	const cli_opt opts[] = {
		{"ceiling", 0, CLI_OPT_SIZE, &ceiling},
		{"idempotency-key", 0, CLI_OPT_STR, &idem},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT, h = COF_BUF_INIT;
	struct curl_slist *hdrs = NULL;
	cli_resp resp;
	json_t *body;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_pack("{s:s}", "name", pos[0]);
	if (ceiling >= 0)
		json_object_set_new(body, "ceiling", json_integer(ceiling));
	if (idem) {
		cli_buf_addf(&h, "Idempotency-Key: %s", idem);
		hdrs = cli_check_alloc(curl_slist_append(NULL, h.data));
	}
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/volumes");
	{
		cli_req req = {.method = "POST", .url = u.data, .body = body,
			       .headers = hdrs, .upload_size = -1};

		rc = cli_http(&req, &resp);
	}
	if (rc == CLI_OK)
		cli_print_object(resp.json);
	json_decref(resp.json);
	json_decref(body);
	curl_slist_free_all(hdrs);
	cof_buf_release(&h);
	cof_buf_release(&u);
	return rc;
}

/* GET /v1/volumes of the ids in `ids` ("" = every volume of the
 * organization, following the cursor page by page). *out is {volumes:[...]}. */
static int vol_fetch(const char *ids, json_t **out)
{
	json_t *all = json_array(), *ans = NULL;
	char *cursor = NULL;
	int rc;

	do {
		cof_buf u = COF_BUF_INIT;
		cli_url_begin(&u);
		cli_url_lit(&u, "/v1/volumes");
		if (*ids)
			cli_url_query(&u, "ids", ids);
		if (cursor)
			cli_url_query(&u, "cursor", cursor);
		free(cursor);
		cursor = NULL;
		rc = cli_call("GET", u.data, NULL, &ans);
		cof_buf_release(&u);
		if (rc)
			break;
		json_array_extend(all, json_object_get(ans, "volumes"));
		if (json_is_string(json_object_get(ans, "cursor")))
			cursor = cof_strdup(json_string_value(json_object_get(ans, "cursor")));
		json_decref(ans);
	} while (cursor);
	if (rc) {
		json_decref(all);
		return rc;
	}
	*out = json_pack("{s:o}", "volumes", all);
	return CLI_OK;
}

/* True when `s` has the form of a volume id: "vol_" and 20 of [a-z2-7]. */
static int vol_looks_like_id(const char *s)
{
	size_t i;

	if (strncmp(s, "vol_", 4) || strlen(s) != 24)
		return 0;
	for (i = 4; i < 24; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '2' && s[i] <= '7')))
			return 0;
	return 1;
}

/* The id a name resolved to, kept for the rest of the run (a command
 * resolves one volume; a second lookup replaces it). */
static char *vol_resolved;

int cli_volume_id(const char *arg, const char **id)
{
	cof_buf u = COF_BUF_INIT, ids = COF_BUF_INIT;
	cli_req req = {.method = "GET", .upload_size = -1, .quiet = 1};
	cli_resp resp = {0};
	json_t *v;
	size_t i, found = 0;
	int rc = CLI_OK;

	*id = arg;
	if (vol_looks_like_id(arg) || !*arg)
		return CLI_OK;
	/* names sort first among those they are a prefix of: one page holds them */
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/volumes");
	cli_url_query(&u, "prefix", arg);
	cli_url_query(&u, "limit", "1000");
	req.url = u.data;
	/* a lookup that fails (no server, a bad key) leaves `arg` as it is: the
	 * command's own request then says what is wrong */
	if (cli_http(&req, &resp) == CLI_OK) {
		json_array_foreach(json_object_get(resp.json, "volumes"), i, v) {
			const char *name = json_string_value(json_object_get(v, "name"));
			const char *vid = json_string_value(json_object_get(v, "id"));

			if (!name || !vid || strcmp(name, arg))
				continue;
			if (!found++) {
				free(vol_resolved);
				*id = vol_resolved = cli_check_alloc(cof_strdup(vid));
			}
			cli_buf_addf(&ids, "%s%s", found > 1 ? ", " : "", vid);
		}
	}
	json_decref(resp.json);
	cof_buf_release(&u);
	if (found > 1) {
		*id = arg;
		rc = cli_fail("%zu volumes are named '%s': give one of their ids (%s)", found,
			      arg, ids.data);
	}
	cof_buf_release(&ids);
	return rc;
}

/* coffer volume ls [IDS...]: GET /v1/volumes?ids=a,b in one request, or
 * every volume of the organization by name. */
static int vol_ls(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[50];
	cof_buf ids = COF_BUF_INIT;
	json_t *ans = NULL, *vols, *v;
	size_t i;
	int n, rc, k;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 0, 50, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	for (k = 0; k < n; k++) {
		if (strchr(pos[k], ','))
			return cli_usage(cmd, "volume id '%s' has a comma", pos[k]);
		cli_buf_addf(&ids, "%s%s", k ? "," : "", pos[k]);
	}
	rc = vol_fetch(n ? ids.data : "", &ans);
	cof_buf_release(&ids);
	if (rc)
		return rc;
	vols = json_object_get(ans, "volumes");
	if (cli_g.json || !json_is_array(vols)) {
		cli_print_json(ans);
		json_decref(ans);
		return CLI_OK;
	}
	printf("%-26s %8s %8s %8s  %s\n", "ID", "SEQ", "FILES", "BYTES", "NAME");
	json_array_foreach(vols, i, v) {
		char t1[64], t2[64], t3[64], t4[4096], hs[16];

		cli_human_size(cli_int(v, "bytes", 0), hs, sizeof(hs));
		printf("%-26s %8s %8s %8s  %s\n", cli_cell(v, "id", t1, sizeof(t1)),
		       cli_cell(v, "seq", t2, sizeof(t2)), cli_cell(v, "files", t3, sizeof(t3)),
		       json_object_get(v, "bytes") ? hs : "-",
		       json_object_get(v, "name") ? cli_cell(v, "name", t4, sizeof(t4)) : "");
	}
	json_decref(ans);
	return CLI_OK;
}

/* coffer volume get VOL */
static int vol_get(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	vol_url(&u, pos[0]);
	return cli_call_show("GET", &u, NULL);
}

/* coffer volume rm VOL */
static int vol_rm(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	vol_url(&u, pos[0]);
	return cli_call_done("DELETE", &u, "deleted volume %s", pos[0]);
}

const cli_cmd cli_volume_cmds[] = {
	{"volume", "create", "NAME [--ceiling SIZE] [--idempotency-key K]",
	 "create a volume",
	 "Options:\n"
	 "  --ceiling SIZE          the most the volume may grow to, in bytes or as 512M,\n"
	 "                          4G, 1TiB (default 4 GiB)\n"
	 "  --idempotency-key K     a retry with the same key answers the same volume\n"
	 "                          (for 24 hours) instead of making another\n",
	 vol_create},
	{"volume", "ls", "[IDS...]", "show volumes (seq, files, bytes)",
	 "Without ids: every volume of the organization, by name. With ids: asks for\n"
	 "them (at most 50) in one request; ids that do not exist are left out.\n"
	 "Compare SEQ with an earlier run to tell which changed.\n",
	 vol_ls},
	{"volume", "get", "VOL", "show one volume (VOL: its id or its name)", NULL, vol_get},
	{"volume", "rm", "VOL", "delete a volume and all its snapshots, pinned ones too",
	 NULL, vol_rm},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
