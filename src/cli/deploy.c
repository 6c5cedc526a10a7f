/*
 * deploy.c — `coffer deploy FILE`: seed 000's deployment.toml applied through
 * the API. Every agent of the file is checked first (the TOML, the keys it
 * may hold, its sandbox sizes and their rule 0 < turn_disk <= user_disk <=
 * scratch, its output types), and nothing changes unless all pass (exit 2
 * naming what is wrong); then each agent is upserted with PUT
 * /v1/agents/{id}, and what changed is printed. Mounts and relay settings
 * are passed on as given and checked by cofferd when its agent is applied.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/settings.h"
#include "cli/cli.h"
#include "util/toml.h"

/* The keys an [[agents]] entry may have, and how each goes into the agent's
 * settings (NULL: read here only). */
static const struct {
	const char *toml, *api;
} agent_keys[] = {
	{"id", NULL}, {"package", NULL}, {"sandbox", "sandbox"}, {"output", "output"},
	{"relay", "relay"}, {"mounts", "mounts"}, {"exclude", "exclude"},
	{"file_tools", "fileTools"}, {"default_exclusions", "defaultExclusions"},
	{"tools", "tools"},
};
#define NKEYS (sizeof agent_keys / sizeof *agent_keys)

static int read_file(const char *path, char **out, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	cof_buf b = COF_BUF_INIT;
	char chunk[65536];
	size_t n;

	if (!f)
		return -1;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		cli_buf_add(&b, chunk, n);
		if (b.len > COF_TOML_MAX)
			break;
	}
	if (f != stdin)
		fclose(f);
	cli_buf_add(&b, "", 0);
	*out = b.data;
	*len = b.len;
	return 0;
}

/* relay's keys in the API's spelling (default_mode -> defaultMode). */
static json_t *relay_settings(json_t *r)
{
	json_t *o = json_deep_copy(r), *v = json_object_get(o, "default_mode");

	if (v) {
		json_object_set(o, "defaultMode", v);
		json_object_del(o, "default_mode");
	}
	return o;
}

/* The line where `path` (cof_toml_parse_lines) or, failing that, the nearest
 * table holding it was written; 0 when unknown. */
static int line_of(json_t *lines, const char *path)
{
	char p[512];
	snprintf(p, sizeof p, "%s", path);
	for (;;) {
		json_t *l = json_object_get(lines, p);
		if (json_is_integer(l))
			return (int)json_integer_value(l);
		char *cut = strrchr(p, '.'), *br = strrchr(p, '[');
		if (br > cut)
			cut = br;
		if (!cut)
			return 0;
		*cut = '\0';
	}
}

/* The line of the key of table `obj` (written at `base`) that `msg` names
 * first ("sandbox.turn_disk (...) must be at most ...", "unknown field
 * 'colour'"), else of the table. */
static int named_line(json_t *lines, const char *base, json_t *obj, const char *msg)
{
	const char *k, *best = NULL, *at = NULL;
	json_t *v;
	char p[512];

	json_object_foreach(obj, k, v) {
		size_t n = strlen(k);
		for (const char *q = msg; n && (q = strstr(q, k)); q++) {
			int before = q > msg && (isalnum((unsigned char)q[-1]) || q[-1] == '_'),
			    after = isalnum((unsigned char)q[n]) || q[n] == '_';
			if (!before && !after && (!at || q < at)) {
				at = q, best = k;
				break;
			}
		}
	}
	if (!best)
		return line_of(lines, base);
	snprintf(p, sizeof p, "%s.%s", base, best);
	return line_of(lines, p);
}

/* One [[agents]] entry checked and turned into the agent's settings in
 * *settings: 0, or CLI_USAGE after saying what is wrong and on which line. */
static int agent_settings(const cli_cmd *cmd, const char *file, size_t i, json_t *a,
			  json_t *output, json_t *lines, json_t **settings)
{
	const char *k, *id = json_string_value(json_object_get(a, "id"));
	json_t *v, *s;
	cof_sandbox sb;
	unsigned types;
	cof_err err = {0};
	char at[64];

	snprintf(at, sizeof at, "agents[%zu]", i);
	if (!json_is_object(a))
		return cli_usage(cmd, "%s: line %d: agents[%zu] is not a table", file,
				 line_of(lines, at), i);
	if (!id || !*id)
		return cli_usage(cmd, "%s: line %d: agents[%zu] has no id (id = \"NAME\")", file,
				 line_of(lines, at), i);
	json_object_foreach(a, k, v) {
		size_t j;
		for (j = 0; j < NKEYS && strcmp(agent_keys[j].toml, k); j++)
			;
		if (j == NKEYS) {
			char p[512];
			snprintf(p, sizeof p, "%s.%s", at, k);
			return cli_usage(cmd, "%s: line %d: agent '%s': key '%s' is not known "
					 "(known: id, package, sandbox, output, relay, mounts, exclude, "
					 "file_tools, default_exclusions, tools)", file,
					 line_of(lines, p), id, k);
		}
	}
	s = json_object();
	for (size_t j = 0; j < NKEYS; j++)
		if (agent_keys[j].api && (v = json_object_get(a, agent_keys[j].toml)))
			json_object_set_new(s, agent_keys[j].api, !strcmp(agent_keys[j].toml, "relay")
					    ? relay_settings(v) : json_deep_copy(v));
	if (!json_object_get(s, "output") && output)
		json_object_set(s, "output", output); /* the file's [output] */
	int line = 0;
	if (cof_sandbox_parse(json_object_get(s, "sandbox"), &sb, &err)) {
		char p[80];
		snprintf(p, sizeof p, "%s.sandbox", at);
		line = named_line(lines, p, json_object_get(a, "sandbox"), err.msg);
	} else if (cof_outbox_types_parse(json_object_get(s, "output"), &types, &err)) {
		char p[80];
		snprintf(p, sizeof p, "%s.output", at);
		line = json_object_get(a, "output") ? named_line(lines, p, json_object_get(a, "output"),
								 err.msg)
						     : named_line(lines, "output", output, err.msg);
	}
	if (err.code) {
		int rc = cli_usage(cmd, "%s: line %d: agent '%s': %s", file, line, id, err.msg);
		cof_err_clear(&err);
		json_decref(s);
		return rc;
	}
	*settings = s;
	return 0;
}

static int deploy(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	int n, rc, dry = 0;
	const cli_opt opts[] = {{"dry-run", 0, CLI_OPT_FLAG, &dry}, {NULL, 0, 0, NULL}};
	char *text = NULL;
	size_t len = 0;
	json_t *doc = NULL, *lines = NULL, *agents, *output, *plan = NULL, *v;
	const char *k;
	cof_err err = {0};

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	plan = json_array();
	if (read_file(pos[0], &text, &len)) {
		rc = cli_usage(cmd, "cannot read '%s': %s", pos[0], strerror(errno));
		goto out;
	}
	if (cof_toml_parse_lines(text, len, &doc, &lines, &err)) {
		rc = cli_usage(cmd, "%s: %s", pos[0], err.msg);
		goto out;
	}
	json_object_foreach(doc, k, v)
		if (strcmp(k, "agents") && strcmp(k, "output")) {
			rc = cli_usage(cmd, "%s: line %d: '%s' is not known here (known: [[agents]], "
				       "[output])", pos[0], line_of(lines, k), k);
			goto out;
		}
	agents = json_object_get(doc, "agents");
	output = json_object_get(doc, "output");
	if (!json_is_array(agents) || !json_array_size(agents)) {
		rc = cli_usage(cmd, "%s: no [[agents]] to deploy", pos[0]);
		goto out;
	}
	if (output && !json_is_object(output)) {
		rc = cli_usage(cmd, "%s: line %d: [output] must be a table", pos[0],
			       line_of(lines, "output"));
		goto out;
	}
	/* every agent checked before any is changed */
	for (size_t i = 0; i < json_array_size(agents); i++) {
		json_t *a = json_array_get(agents, i), *s = NULL;
		if ((rc = agent_settings(cmd, pos[0], i, a, output, lines, &s)))
			goto out;
		const char *id = json_string_value(json_object_get(a, "id"));
		for (size_t j = 0; j < json_array_size(plan); j++)
			if (!strcmp(json_string_value(json_object_get(json_array_get(plan, j), "id")),
				    id)) {
				char at[64];
				snprintf(at, sizeof at, "agents[%zu]", i);
				json_decref(s);
				rc = cli_usage(cmd, "%s: line %d: agent '%s' is given twice (first at "
					       "line %d)", pos[0], line_of(lines, at), id,
					       line_of(lines, json_string_value(json_object_get(
						       json_array_get(plan, j), "at"))));
				goto out;
			}
		char at[64];
		snprintf(at, sizeof at, "agents[%zu]", i);
		json_array_append_new(plan, json_pack("{s:s, s:s, s:o}", "id", id, "at", at,
						      "settings", s));
	}
	rc = CLI_OK;
	for (size_t i = 0; i < json_array_size(plan); i++) {
		json_t *p = json_array_get(plan, i), *ans = NULL;
		const char *id = json_string_value(json_object_get(p, "id"));
		cof_buf url = COF_BUF_INIT;
		if (dry) {
			printf("would apply agent %s\n", id);
			continue;
		}
		cli_url_begin(&url);
		cli_url_lit(&url, "/v1/agents/");
		cli_url_seg(&url, id);
		cli_req req = {.method = "PUT", .url = url.data,
			       .body = json_object_get(p, "settings"), .upload_size = -1};
		cli_resp resp = {0};
		int r = cli_http(&req, &resp);
		ans = resp.json;
		cof_buf_release(&url);
		if (r) { /* said by cli_http; what came before stays applied */
			fprintf(stderr, "coffer: deploy stopped at agent '%s' (%zu of %zu applied)\n",
				id, i, json_array_size(plan));
			json_decref(ans);
			rc = r;
			break;
		}
		printf("%s agent %s\n", resp.status == 201 ? "created" : "updated", id);
		json_decref(ans);
	}
out:
	cof_err_clear(&err);
	json_decref(doc);
	json_decref(lines);
	json_decref(plan);
	free(text);
	return rc;
}

const cli_cmd cli_deploy_cmds[] = {
	{NULL, "deploy", "FILE [--dry-run]",
	 "apply a deployment.toml (seed 000): each [[agents]] upserted",
	 "Reads FILE ('-' for stdin), TOML 1.0: [[agents]] tables with id, and\n"
	 "[agents.sandbox] (scratch, turn_disk, user_disk, memory, processes,\n"
	 "network: sizes in Docker's form), [agents.output] files, relay\n"
	 "(capability, default_mode), mounts, exclude, file_tools,\n"
	 "default_exclusions, tools; a top-level [output] applies to agents without\n"
	 "their own; package is read and not used. Every agent is checked first\n"
	 "(unknown keys, the rule 0 < turn_disk <= user_disk <= scratch, output\n"
	 "types): one wrong, nothing changes and the exit status is 2. Then each is\n"
	 "applied with PUT /v1/agents/ID and 'created agent ID' or 'updated agent\n"
	 "ID' printed.\n\n"
	 "Options:\n"
	 "  --dry-run            check the file and print what would be applied\n",
	 deploy},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
