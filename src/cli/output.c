/*
 * output.c — how answers are shown: raw JSON with --json, else key/value
 * lines for one object and columns (built by each command) for lists.
 */
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/cli.h"

const char *cli_count(int64_t n, const char *noun, char *out, size_t outsz)
{
	snprintf(out, outsz, "%" PRId64 " %s%s", n, noun, n == 1 ? "" : "s");
	return out;
}

int cli_out_is_tty(const char *out)
{
	return (!out || !strcmp(out, "-")) && isatty(STDOUT_FILENO);
}

int cli_refuse_tty(const cli_cmd *cmd, const char *what)
{
	return cli_usage(cmd, "will not write %s to a terminal; use -o FILE or a pipe", what);
}

void cli_human_size(int64_t bytes, char *out, size_t outsz)
{
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(out, outsz, "%" PRId64, bytes);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(out, outsz, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

void cli_print_json(json_t *v)
{
	char *s;

	if (cli_g.jq) {
		cli_jq_filter(v);
		return;
	}
	s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);

	if (s) {
		puts(s);
		free(s);
	}
}

void cli_print_json_line(json_t *v)
{
	char *s;

	if (cli_g.jq) {
		cli_jq_filter(v);
		return;
	}
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (s) {
		puts(s);
		free(s);
	}
}

const char *cli_cell(json_t *obj, const char *field, char *tmp, size_t tmpsz)
{
	json_t *v = json_object_get(obj, field);
	char *s;

	switch (v ? json_typeof(v) : JSON_NULL) {
	case JSON_STRING:
		return json_string_value(v);
	case JSON_INTEGER:
		snprintf(tmp, tmpsz, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return tmp;
	case JSON_REAL:
		snprintf(tmp, tmpsz, "%g", json_real_value(v));
		return tmp;
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_NULL:
		return "-";
	default:
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(tmp, tmpsz, "%s", s ? s : "?");
		free(s);
		return tmp;
	}
}

int64_t cli_int(json_t *obj, const char *field, int64_t dflt)
{
	json_t *v = json_object_get(obj, field);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* True for fields that hold a byte count, shown with a human size too. */
static int cli_is_size_field(const char *key)
{
	static const char *const names[] = {
		"size", "bytes", "capacity", "ceiling", "bytesFreed", "maxBytes", "used", NULL,
	};
	size_t i;

	for (i = 0; names[i]; i++)
		if (!strcmp(key, names[i]))
			return 1;
	return 0;
}

void cli_print_object(json_t *obj)
{
	const char *key;
	json_t *v;
	size_t width = 0;

	if (cli_g.json || !json_is_object(obj)) {
		if (obj)
			cli_print_json(obj);
		return;
	}
	json_object_foreach(obj, key, v)
		if (strlen(key) > width)
			width = strlen(key);
	json_object_foreach(obj, key, v) {
		char tmp[4096], hs[32];
		const char *cell = cli_cell(obj, key, tmp, sizeof(tmp));

		if (json_is_integer(v) && cli_is_size_field(key) &&
		    json_integer_value(v) >= 1024) {
			cli_human_size(json_integer_value(v), hs, sizeof(hs));
			printf("%-*s  %s (%s)\n", (int)width, key, cell, hs);
		} else {
			printf("%-*s  %s\n", (int)width, key, cell);
		}
	}
}

void cli_body_str(json_t *body, const char *name, const char *value)
{
	if (value)
		json_object_set_new(body, name, json_string(value));
}

int cli_call_done(const char *method, cof_buf *url, const char *fmt, ...)
{
	json_t *ans = NULL;
	int rc = cli_call(method, url->data, NULL, &ans);
	va_list ap;

	if (rc == CLI_OK && cli_g.json && ans) {
		cli_print_json(ans);
	} else if (rc == CLI_OK) {
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar('\n');
	}
	json_decref(ans);
	cof_buf_release(url);
	return rc;
}

int cli_call_show(const char *method, cof_buf *url, json_t *body)
{
	json_t *ans = NULL;
	int rc = cli_call(method, url->data, body, &ans);

	if (rc == CLI_OK)
		cli_print_object(ans);
	json_decref(ans);
	json_decref(body);
	cof_buf_release(url);
	return rc;
}
