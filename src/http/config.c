/*
 * config.c — `cofferd --config FILE`: every flag from a file, flags given on
 * the command line winning.
 *
 * The file holds one flag a line, `name = value` (the flag's name without
 * `--`; the `=` may be left out: `name value`), blank lines and `#` comments;
 * a value may be put in double quotes (kept as is, no escapes). It becomes
 * arguments placed before the command line's, and the parser lets a later
 * flag replace an earlier one, so a flag given wins over the file. A line that
 * is not of this form is refused naming FILE:LINE; an unknown name is refused
 * by the parser as the unknown flag `--name`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "http/http.h"

#define CONFIG_LINE_MAX 4096
#define CONFIG_FLAGS_MAX 128
#define CONFIG_FILE_MAX (1 << 20)  /* bytes: far past 128 flags with comments */

/* Adds a copy of s to the argument vector *v (of *n). */
static void arg_add(char ***v, int *n, const char *s, size_t len)
{
	*v = cof_realloc(*v, sizeof **v * (size_t)(*n + 2));
	(*v)[*n] = cof_calloc(1, len + 1);
	memcpy((*v)[*n], s, len);
	(*n)++;
	(*v)[*n] = NULL;
}

/* Parses one line into --name and value arguments. 0 (also for blank and
 * comment lines), or -1 with a message printed. */
static int config_line(const char *file, int lineno, char *line, char ***v, int *n)
{
	char *p = line, *name, *val, *end;
	size_t nl;

	line[strcspn(line, "\r\n")] = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	name = p;
	nl = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-");
	p = name + nl;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '=')
		p++;
	while (*p == ' ' || *p == '\t')
		p++;
	val = p;
	end = val + strlen(val);
	while (end > val && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end - val >= 2 && val[0] == '"' && end[-1] == '"')
		val++, end--;
	if (nl == 0 || (name[nl] != ' ' && name[nl] != '\t' && name[nl] != '=') ||
	    end == val || !strncmp(name, "config", nl)) {
		fprintf(stderr, "cofferd: %s:%d: expected 'flag = value' (a flag of cofferd "
			"--help without '--', other than config), got '%.200s'\n", file, lineno,
			line);
		return -1;
	}
	char flag[80];
	if (nl > sizeof flag - 3) {
		fprintf(stderr, "cofferd: %s:%d: unknown flag '%.60s'\n", file, lineno, name);
		return -1;
	}
	snprintf(flag, sizeof flag, "--%.*s", (int)nl, name);
	arg_add(v, n, flag, strlen(flag));
	arg_add(v, n, val, (size_t)(end - val));
	return 0;
}

/* Reads FILE's flags onto *v. 0, or -1 with a message printed. The file must
 * be a regular file (a directory read as none, /dev/zero spun for ever) of at
 * most CONFIG_FILE_MAX bytes, read whole first; a NUL byte is refused, never
 * taken as the end of its line (issue 32.10). */
static int config_read(const char *file, char ***v, int *n)
{
	char line[CONFIG_LINE_MAX + 1];
	struct stat sb;
	char *buf = NULL;
	size_t len = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK), lineno = 0, rc = 0;

	if (fd < 0) {
		fprintf(stderr, "cofferd: cannot read --config '%s': %s\n", file, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb)) {
		fprintf(stderr, "cofferd: cannot read --config '%s': %s\n", file, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		fprintf(stderr, "cofferd: --config '%s' is %s, not a regular file\n", file,
			S_ISDIR(sb.st_mode) ? "a directory" : "a device, pipe or socket");
		close(fd);
		return -1;
	}
	buf = cof_malloc(CONFIG_FILE_MAX + 1);
	for (ssize_t got = 1; got > 0 && len <= CONFIG_FILE_MAX; len += (size_t)got)
		if ((got = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len)) < 0) {
			fprintf(stderr, "cofferd: cannot read --config '%s': %s\n", file,
				strerror(errno));
			rc = -1;
			break;
		} else if (got == 0) {
			break;
		}
	close(fd);
	if (rc == 0 && len > CONFIG_FILE_MAX) {
		fprintf(stderr, "cofferd: --config '%s' is over %d bytes\n", file, CONFIG_FILE_MAX);
		rc = -1;
	}
	for (size_t at = 0; rc == 0 && at < len;) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - (buf + at)) : len - at;
		const char *nul = memchr(buf + at, '\0', ll);
		lineno++;
		if (ll > CONFIG_LINE_MAX) {
			fprintf(stderr, "cofferd: %s:%d: the line is over %d bytes\n", file, lineno,
				CONFIG_LINE_MAX);
			rc = -1;
		} else if (nul) {
			fprintf(stderr, "cofferd: %s:%d: a NUL byte at column %zu\n", file, lineno,
				(size_t)(nul - (buf + at)) + 1);
			rc = -1;
		} else if (*n > 2 * CONFIG_FLAGS_MAX) {
			fprintf(stderr, "cofferd: %s: more than %d flags\n", file, CONFIG_FLAGS_MAX);
			rc = -1;
		} else {
			memcpy(line, buf + at, ll);
			line[ll] = '\0';
			rc = config_line(file, lineno, line, v, n);
		}
		at += ll + 1;
	}
	free(buf);
	return rc;
}

int http_config_args(int argc, char **argv, int *out_argc, char ***out_argv)
{
	const char *file = NULL;
	char **v = NULL;
	int n = 0;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc || !*argv[i + 1]) {
				fprintf(stderr, "cofferd: option '--config' needs a value\n");
				return 2;
			}
			if (file) {
				fprintf(stderr, "cofferd: --config given twice\n");
				return 2;
			}
			file = argv[++i];
		}
	*out_argc = argc;
	*out_argv = argv;
	if (!file)
		return -1;
	arg_add(&v, &n, argv[0], strlen(argv[0]));
	if (config_read(file, &v, &n)) {
		http_config_free(n, v);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		arg_add(&v, &n, argv[i], strlen(argv[i]));
	*out_argc = n;
	*out_argv = v;
	return -1;
}

void http_config_free(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}
