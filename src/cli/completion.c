/*
 * completion.c — `coffer completion bash|zsh|fish`: a shell completion script
 * made from the command tables, so it never lags the commands: command words,
 * each command's options (read from its usage line, which names every option
 * its parser takes: tests/blackbox/test_cli.py holds them to the parsers), the
 * global flags, and for a VOL argument the organization's volume names (asked
 * at completion time with `coffer volume ls --jq`, quietly: no server, no names).
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

static const char *const cli_global_flags[] = {"--server", "--key", "--json", "--jq",
					       "--verbose", "--help", NULL};

/* Prints the long options a usage line names ("--if-match N" -> "--if-match"),
 * each once, separated by spaces. */
static void cli_usage_opts(const char *usage, FILE *out)
{
	const char *p = usage;
	char seen[2048] = " ";

	while ((p = strstr(p, "--"))) {
		size_t n = 2;
		char word[64];

		while (p[n] && (p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z')))
			n++;
		if (n > 2 && n < sizeof word) {
			snprintf(word, sizeof word, "%.*s", (int)n, p);
			char key[80];

			snprintf(key, sizeof key, " %s ", word);
			if (!strstr(seen, key) && strlen(seen) + strlen(word) + 2 < sizeof seen) {
				strcat(seen, word);
				strcat(seen, " ");
				fprintf(out, "%s ", word);
			}
		}
		p += n;
	}
}

/* The words of one command as the shell sees them: "volume create", "put". */
static void cli_words(const cli_cmd *c, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s%s%s", c->group ? c->group : "", c->group ? " " : "", c->name);
}

/* True when the command's first argument is a volume (usage starts with VOL). */
static int cli_takes_vol(const cli_cmd *c)
{
	return !strncmp(c->usage, "VOL", 3) && (!c->usage[3] || c->usage[3] == ' ');
}

#define CLI_WORDS_MAX 64

/* The distinct first words of the commands, in table order: every group and
 * top-level command, or (groups_only) the groups alone. Returns the count. */
static size_t cli_first_words(const cli_cmd *const *tables, int groups_only,
			      const char **out)
{
	size_t n = 0, k;

	for (size_t t = 0; tables[t]; t++)
		for (const cli_cmd *c = tables[t]; c->name; c++) {
			const char *w = c->group ? c->group : c->name;

			if (groups_only && !c->group)
				continue;
			for (k = 0; k < n && strcmp(out[k], w); k++)
				;
			if (k == n && n < CLI_WORDS_MAX)
				out[n++] = w;
		}
	return n;
}

static void cli_bash(const cli_cmd *const *tables, FILE *out)
{
	const char *groups[CLI_WORDS_MAX], *firsts[CLI_WORDS_MAX];
	size_t ngroups = cli_first_words(tables, 1, groups), n, k;

	fputs("# coffer completion for bash (and zsh through bashcompinit): made by\n"
	      "# `coffer completion bash`; load with: source <(coffer completion bash)\n"
	      "_coffer_volumes() {\n"
	      "  command coffer volume ls --jq '.volumes[].name' 2>/dev/null\n"
	      "}\n"
	      "_coffer() {\n"
	      "  local cur=${COMP_WORDS[COMP_CWORD]} i w cmd='' group='' nargs=0 opts='' vol=0\n"
	      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "    w=${COMP_WORDS[i]}\n"
	      "    case $w in\n"
	      "      --server|--key|--jq) ((i++)); continue ;;\n"
	      "      -*) continue ;;\n"
	      "    esac\n"
	      "    if [[ -z $cmd ]]; then\n"
	      "      case $w in\n", out);
	/* groups first: their next word is the subcommand */
	for (k = 0; k < ngroups; k++)
		fprintf(out, "        %s) if [[ -z $group ]]; then group=$w; continue; fi ;;\n",
			groups[k]);
	fputs("      esac\n"
	      "      cmd=${group:+$group }$w; continue\n"
	      "    fi\n"
	      "    ((nargs++))\n"
	      "  done\n"
	      "  if [[ -z $cmd && -n $group ]]; then\n"
	      "    case $group in\n", out);
	for (k = 0; k < ngroups; k++) {
		fprintf(out, "      %s) COMPREPLY=($(compgen -W '", groups[k]);
		for (size_t u = 0; tables[u]; u++)
			for (const cli_cmd *d = tables[u]; d->name; d++)
				if (d->group && !strcmp(d->group, groups[k]))
					fprintf(out, "%s ", d->name);
		fputs("' -- \"$cur\")) ;;\n", out);
	}
	fputs("    esac\n"
	      "    return\n"
	      "  fi\n"
	      "  if [[ -z $cmd ]]; then\n"
	      "    COMPREPLY=($(compgen -W '", out);
	n = cli_first_words(tables, 0, firsts);
	for (k = 0; k < n; k++)
		fprintf(out, "%s ", firsts[k]);
	for (size_t g = 0; cli_global_flags[g]; g++)
		fprintf(out, "%s ", cli_global_flags[g]);
	fputs("help' -- \"$cur\"))\n"
	      "    return\n"
	      "  fi\n"
	      "  case $cmd in\n", out);
	for (size_t t = 0; tables[t]; t++)
		for (const cli_cmd *c = tables[t]; c->name; c++) {
			char words[80];

			cli_words(c, words, sizeof words);
			fprintf(out, "    '%s') opts='", words);
			cli_usage_opts(c->usage, out);
			fprintf(out, "'; vol=%d ;;\n", cli_takes_vol(c));
		}
	fputs("  esac\n"
	      "  if [[ $cur == -* ]]; then\n"
	      "    COMPREPLY=($(compgen -W \"$opts", out);
	for (size_t g = 0; cli_global_flags[g]; g++)
		fprintf(out, " %s", cli_global_flags[g]);
	fputs("\" -- \"$cur\"))\n"
	      "  elif ((vol && nargs == 0)); then\n"
	      "    local IFS=$'\\n'\n"
	      "    COMPREPLY=($(compgen -W \"$(_coffer_volumes)\" -- \"$cur\"))\n"
	      "  else\n"
	      "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "  fi\n"
	      "}\n"
	      "complete -F _coffer coffer\n", out);
}

static void cli_fish(const cli_cmd *const *tables, FILE *out)
{
	fputs("# coffer completion for fish: made by `coffer completion fish`; load with:\n"
	      "# coffer completion fish | source\n"
	      "complete -c coffer -f\n"
	      "complete -c coffer -l server -r -d \"cofferd's address\"\n"
	      "complete -c coffer -l key -r -d 'API key'\n"
	      "complete -c coffer -l json -d \"print the server's JSON answer\"\n"
	      "complete -c coffer -l jq -r -d 'filter the JSON answer with jq'\n"
	      "complete -c coffer -l verbose -d 'trace the HTTP exchange'\n"
	      "complete -c coffer -s h -l help -d 'show help'\n", out);
	for (size_t t = 0; tables[t]; t++)
		for (const cli_cmd *c = tables[t]; c->name; c++) {
			char summary[200];
			size_t k, j = 0;

			/* fish quotes: single quotes, a ' written as \' */
			for (k = 0; c->summary[k] && j + 3 < sizeof summary; k++) {
				if (c->summary[k] == '\'' || c->summary[k] == '\\')
					summary[j++] = '\\';
				summary[j++] = c->summary[k];
			}
			summary[j] = '\0';
			if (c->group) {
				fprintf(out, "complete -c coffer -n '__fish_use_subcommand' -a %s\n",
					c->group);
				fprintf(out, "complete -c coffer -n '__fish_seen_subcommand_from %s' "
					"-a %s -d '%s'\n", c->group, c->name, summary);
			} else {
				fprintf(out, "complete -c coffer -n '__fish_use_subcommand' -a %s -d '%s'\n",
					c->name, summary);
			}
			if (cli_takes_vol(c) && !c->group)
				fprintf(out, "complete -c coffer -n '__fish_seen_subcommand_from %s' -a "
					"'(command coffer volume ls --jq \".volumes[].name\" 2>/dev/null)'\n",
					c->name);
		}
}

static int completion_main(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, NULL, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!strcmp(pos[0], "bash")) {
		cli_bash(cli_all_tables, stdout);
	} else if (!strcmp(pos[0], "zsh")) {
		fputs("# coffer completion for zsh: load with: source <(coffer completion zsh)\n"
		      "autoload -U +X bashcompinit && bashcompinit\n", stdout);
		cli_bash(cli_all_tables, stdout);
	} else if (!strcmp(pos[0], "fish")) {
		cli_fish(cli_all_tables, stdout);
	} else {
		return cli_usage(cmd, "no completion for shell '%s' (bash, zsh or fish)", pos[0]);
	}
	return CLI_OK;
}

const cli_cmd cli_completion_cmds[] = {
	{NULL, "completion", "SHELL", "print a completion script for bash, zsh or fish",
	 "Prints the script for SHELL (bash, zsh or fish), made from coffer's own\n"
	 "command tables: commands, their options and the global flags, and volume\n"
	 "names where a command takes a volume (asked at completion time with\n"
	 "`coffer volume ls`, through $COFFER_URL and $COFFER_KEY). Load it with\n"
	 "  source <(coffer completion bash)      # ~/.bashrc\n"
	 "  source <(coffer completion zsh)       # ~/.zshrc\n"
	 "  coffer completion fish | source        # ~/.config/fish/config.fish\n",
	 completion_main},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
