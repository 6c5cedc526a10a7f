/*
 * args.c — the option parser every command uses, number and size parsing,
 * and the two ways a command reports failure (usage vs. runtime).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli/cli.h"

int cli_usage(const cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("coffer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd) {
		const char *g = cmd->group ? cmd->group : "", *sp = cmd->group ? " " : "";

		fprintf(stderr, "usage: coffer %s%s%s %s\n", g, sp, cmd->name, cmd->usage);
		fprintf(stderr, "Try 'coffer %s%s%s --help' for more.\n", g, sp, cmd->name);
	} else {
		fputs("Try 'coffer --help' for the list of commands.\n", stderr);
	}
	return CLI_USAGE;
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("coffer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_FAIL;
}

void *cli_check_alloc(void *p)
{
	if (!p) {
		fputs("coffer: out of memory\n", stderr);
		exit(CLI_FAIL);
	}
	return p;
}

void cli_buf_add(cof_buf *b, const void *data, size_t len)
{
	if (cof_buf_add(b, data, len))
		cli_check_alloc(NULL);
}

void cli_buf_adds(cof_buf *b, const char *s)
{
	cli_buf_add(b, s, strlen(s));
}

void cli_buf_addf(cof_buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		cli_buf_add(b, small, (size_t)n);
		return;
	}
	{
		char *big = cli_check_alloc(cof_malloc((size_t)n + 1));

		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		cli_buf_add(b, big, (size_t)n);
		free(big);
	}
}

int cli_parse_int(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_size(const char *s, int64_t *out)
{
	static const char units[] = "bkmgtpe";
	char *end;
	const char *u;
	long double v, mult = 1;
	int shift;

	if (!s || !(*s >= '0' && *s <= '9'))
		return -1;
	errno = 0;
	v = strtold(s, &end);
	if (errno || end == s || !isfinite(v))
		return -1;
	if (*end) {
		u = strchr(units, end[0] | 0x20);
		if (!u || !end[0])
			return -1;
		shift = (int)(u - units);
		end++;
		if (shift && (*end == 'i' || *end == 'I'))
			end++;
		if (shift && (*end == 'b' || *end == 'B'))
			end++;
		if (*end)
			return -1;
		while (shift--)
			mult *= 1024;
	}
	v *= mult;
	if (v >= 9223372036854775807.0L)
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* The index-th required word of a usage line ("VOL" for 0 in "VOL PATH [..]"),
 * copied into out; "an argument" when the usage names fewer. */
static void cli_required_word(const char *usage, int index, char *out, size_t outsz)
{
	const char *p = usage;
	int depth = 0, seen = 0;

	while (*p) {
		size_t len;

		while (*p == ' ')
			p++;
		len = strcspn(p, " ");
		if (!len)
			break;
		if (depth == 0 && *p != '[' && *p != '-') {
			if (seen++ == index) {
				snprintf(out, outsz, "%.*s", (int)len, p);
				return;
			}
		}
		for (size_t k = 0; k < len; k++)
			depth += (p[k] == '[') - (p[k] == ']');
		p += len;
	}
	snprintf(out, outsz, "an argument");
}

/* Stores `val` for option `o` (named `shown` in messages); CLI_USAGE if bad. */
static int cli_opt_set(const cli_cmd *cmd, const cli_opt *o, const char *shown,
		       const char *val)
{
	cli_list *l;

	switch (o->kind) {
	case CLI_OPT_FLAG:
		*(int *)o->dest = 1;
		return 0;
	case CLI_OPT_STR:
		*(const char **)o->dest = val;
		return 0;
	case CLI_OPT_INT:
		if (cli_parse_int(val, o->dest))
			return cli_usage(cmd, "%s wants a whole number, not '%s'", shown, val);
		return 0;
	case CLI_OPT_SIZE:
		if (cli_parse_size(val, o->dest))
			return cli_usage(cmd, "%s wants a size such as 1048576, 512M or 4G, not '%s'",
					 shown, val);
		return 0;
	case CLI_OPT_LIST:
		l = o->dest;
		if (l->n >= CLI_LIST_MAX)
			return cli_usage(cmd, "%s given more than %d times", shown, CLI_LIST_MAX);
		l->items[l->n++] = val;
		return 0;
	}
	return 0;
}

/* The option table entries every command accepts besides its own. */
static int cli_global_opt(const char *name, size_t len, const cli_opt **found)
{
	static int help;
	static const cli_opt globals[] = {
		{"server", 0, CLI_OPT_STR, &cli_g.server},
		{"key", 0, CLI_OPT_STR, &cli_g.key},
		{"json", 0, CLI_OPT_FLAG, &cli_g.json},
		{"verbose", 0, CLI_OPT_FLAG, &cli_g.verbose},
		{"jq", 0, CLI_OPT_STR, &cli_g.jq},
		{"help", 'h', CLI_OPT_FLAG, &help},
		{NULL, 0, 0, NULL},
	};
	const cli_opt *o;

	for (o = globals; o->name; o++)
		if (strlen(o->name) == len && !strncmp(o->name, name, len)) {
			*found = o;
			return 1;
		}
	return 0;
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, const cli_opt *opts,
	      const char **pos, int min_pos, int max_pos, int *npos)
{
	int i, n = 0, only_pos = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *val = NULL;
		const cli_opt *o = NULL;
		size_t len;
		char shown[80];

		if (only_pos || a[0] != '-' || !a[1]) {
			if (n >= max_pos)
				return cli_usage(cmd, "unexpected argument '%s'", a);
			pos[n++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		if (a[1] == '-') {
			name = a + 2;
			eq = strchr(name, '=');
			len = eq ? (size_t)(eq - name) : strlen(name);
			for (const cli_opt *p = opts; p && p->name; p++)
				if (strlen(p->name) == len && !strncmp(p->name, name, len))
					o = p;
			if (!o)
				cli_global_opt(name, len, &o);
			if (eq)
				val = eq + 1;
			snprintf(shown, sizeof(shown), "--%.*s", (int)len, name);
		} else {
			for (const cli_opt *p = opts; p && p->name; p++)
				if (p->short_name && p->short_name == a[1])
					o = p;
			if (!o && a[1] == 'h')
				cli_global_opt("help", 4, &o);
			if (a[2])
				val = a + 2;
			snprintf(shown, sizeof(shown), "-%c", a[1]);
		}
		if (!o)
			return cli_usage(cmd, "unknown option '%s'", a);
		if (!strcmp(o->name, "help")) {
			cli_cmd_help(cmd, stdout);
			return CLI_HELPED;
		}
		if (o->kind == CLI_OPT_FLAG) {
			if (val)
				return cli_usage(cmd, "%s takes no value", shown);
		} else if (!val) {
			if (i + 1 >= argc)
				return cli_usage(cmd, "%s needs a value", shown);
			val = argv[++i];
		}
		if (cli_opt_set(cmd, o, shown, val))
			return CLI_USAGE;
	}
	if (n < min_pos) {
		char word[64];

		cli_required_word(cmd->usage, n, word, sizeof(word));
		return cli_usage(cmd, "missing %s", word);
	}
	*npos = n;
	if (cli_g.jq) {
		char err[512];

		if (cli_jq_compile(cli_g.jq, err, sizeof err))
			return cli_usage(cmd, "--jq: %s", err);
		cli_g.json = 1;
	}
	if (n && pos && !strncmp(cmd->usage, "VOL", 3) && (!cmd->usage[3] || cmd->usage[3] == ' '))
		return cli_volume_id(pos[0], &pos[0]);
	return 0;
}
