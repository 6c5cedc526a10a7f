/*
 * main.c — `coffer`: global flags, command lookup and the top-level help.
 *
 * A command line is `coffer [GLOBAL FLAGS] COMMAND [SUBCOMMAND] [ARGS]`; the
 * global flags may also come after the command (cli_parse accepts them there).
 * `coffer serve` hands its arguments to cofferd untouched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include "cli/cli.h"

cli_global cli_g;

const cli_cmd *const cli_all_tables[] = {
	cli_volume_cmds, cli_files_cmds, cli_snapshot_cmds, cli_history_cmds, cli_agent_cmds,
	cli_turn_cmds, cli_relay_cmds, cli_admin_cmds, cli_mcp_cmds, cli_connect_cmds,
	cli_mount_cmds, cli_deploy_cmds, cli_completion_cmds, NULL,
};

/* The text under "global flags", shared by every help page. */
static const char cli_global_help[] =
	"Global flags (before or after the command):\n"
	"  --server URL   cofferd's address (default $COFFER_URL, else " CLI_DEFAULT_URL ")\n"
	"  --key KEY      API key (default $COFFER_KEY, else ./data/admin.key if readable)\n"
	"  --json         print the server's JSON answer instead of a table\n"
	"  --jq EXPR      print what jq's EXPR makes of the JSON answer (strings raw,\n"
	"                 else compact JSON, one result a line), e.g. --jq .id\n"
	"  --verbose      trace the HTTP exchange on stderr\n"
	"  -h, --help     show help for coffer or a command\n"
	"  --version      print coffer's version\n";

/* Prints `coffer --help`: every command with its one-line summary. */
static void cli_main_help(FILE *out)
{
	size_t t;
	const cli_cmd *c;

	fputs("usage: coffer [--server URL] [--key KEY] [--json] [--jq EXPR] COMMAND [ARGS]\n\n"
	      "coffer drives cofferd, the file service for AI agents: versioned volumes,\n"
	      "snapshots, forks, archives and signed links.\n\nCommands:\n", out);
	for (t = 0; cli_all_tables[t]; t++) {
		for (c = cli_all_tables[t]; c->name; c++) {
			char word[64];

			snprintf(word, sizeof(word), "%s%s%s", c->group ? c->group : "",
				 c->group ? " " : "", c->name);
			fprintf(out, "  %-18s %s\n", word, c->summary);
		}
	}
	fprintf(out, "\n%s\nRun 'coffer COMMAND --help' for a command's arguments.\n",
		cli_global_help);
}

/* Prints `coffer GROUP --help`: the subcommands of one group. */
static void cli_group_help(const char *group, FILE *out)
{
	size_t t;
	const cli_cmd *c;

	fprintf(out, "usage: coffer %s SUBCOMMAND [ARGS]\n\nSubcommands:\n", group);
	for (t = 0; cli_all_tables[t]; t++)
		for (c = cli_all_tables[t]; c->name; c++)
			if (c->group && !strcmp(c->group, group))
				fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out, "\nRun 'coffer %s SUBCOMMAND --help' for its arguments.\n", group);
}

void cli_cmd_help(const cli_cmd *cmd, FILE *out)
{
	fprintf(out, "usage: coffer %s%s%s %s\n\n%s\n", cmd->group ? cmd->group : "",
		cmd->group ? " " : "", cmd->name, cmd->usage, cmd->summary);
	if (cmd->help)
		fprintf(out, "\n%s", cmd->help);
	fprintf(out, "\n%s", cli_global_help);
}

/* Finds the command `group name` (group NULL = top level); NULL if none. */
static const cli_cmd *cli_find(const char *group, const char *name)
{
	size_t t;
	const cli_cmd *c;

	for (t = 0; cli_all_tables[t]; t++)
		for (c = cli_all_tables[t]; c->name; c++) {
			if (!!c->group != !!group)
				continue;
			if (group && strcmp(c->group, group))
				continue;
			if (!strcmp(c->name, name))
				return c;
		}
	return NULL;
}

/* True when some command belongs to `group`. */
static int cli_is_group(const char *group)
{
	size_t t;
	const cli_cmd *c;

	for (t = 0; cli_all_tables[t]; t++)
		for (c = cli_all_tables[t]; c->name; c++)
			if (c->group && !strcmp(c->group, group))
				return 1;
	return 0;
}

/* Takes the global flags before the command word. Returns the index of the
 * command word, or -1 - exit code when the run ends here (help, version,
 * usage error). */
static int cli_globals(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *a = argv[i], *val = NULL;
		const char **dest = NULL;
		size_t n;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_main_help(stdout);
			return -1 - CLI_OK;
		}
		if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
			printf("coffer %s\n", COFFER_VERSION);
			return -1 - CLI_OK;
		}
		if (!strcmp(a, "--json")) {
			cli_g.json = 1;
			continue;
		}
		if (!strcmp(a, "--verbose")) {
			cli_g.verbose = 1;
			continue;
		}
		if (!strncmp(a, "--server", n = 8) && (a[n] == '=' || !a[n]))
			dest = &cli_g.server;
		else if (!strncmp(a, "--jq", n = 4) && (a[n] == '=' || !a[n]))
			dest = &cli_g.jq;
		else if (!strncmp(a, "--key", n = 5) && (a[n] == '=' || !a[n]))
			dest = &cli_g.key;
		else
			return -1 - cli_usage(NULL, "unknown flag '%s'", a);
		if (a[n] == '=')
			val = a + n + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return -1 - cli_usage(NULL, "'%s' needs a value", a);
		*dest = val;
	}
	return i;
}

/* Takes the global flags, finds the command (a group's subcommand or a
 * top-level word) and runs it; returns its exit code (0, 1 or 2). */
int main(int argc, char **argv)
{
	const cli_cmd *cmd;
	int i, rc;

	i = cli_globals(argc, argv);
	if (i < 0)
		return -1 - i;
	if (i >= argc) {
		cli_main_help(stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		cli_main_help(stdout);
		return CLI_OK;
	}
	if (cli_is_group(argv[i])) {
		const char *group = argv[i];

		if (i + 1 >= argc || !strcmp(argv[i + 1], "--help") ||
		    !strcmp(argv[i + 1], "-h")) {
			cli_group_help(group, i + 1 >= argc ? stderr : stdout);
			return i + 1 >= argc ? CLI_USAGE : CLI_OK;
		}
		cmd = cli_find(group, argv[i + 1]);
		if (!cmd) {
			fprintf(stderr, "coffer: unknown command '%s %s'\n", group, argv[i + 1]);
			fprintf(stderr, "Try 'coffer %s --help'.\n", group);
			return CLI_USAGE;
		}
		i++;
	} else {
		cmd = cli_find(NULL, argv[i]);
		if (!cmd)
			return cli_usage(NULL, "unknown command '%s'", argv[i]);
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return cli_fail("cannot initialise libcurl");
	rc = cmd->fn(cmd, argc - i, argv + i);
	if (rc == CLI_OK)
		rc = cli_jq_status(); /* a --jq program that failed on the answer */
	cli_jq_cleanup();
	cli_http_cleanup();
	curl_global_cleanup();
	return rc;
}
