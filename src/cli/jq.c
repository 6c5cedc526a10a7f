/*
 * jq.c — `--jq EXPR`: every JSON answer the CLI prints goes through a jq program
 * (Debian's libjq), as `gh --jq` does. Each result prints on a line of its own:
 * a string as its raw text, anything else as compact JSON, so
 * `V=$(coffer volume create notes --jq .id)` needs no other tool.
 *
 * The program is compiled once, when the command line is parsed (a bad program
 * is a usage error before any request goes out); a run-time error (`.a` of a
 * string) prints `coffer: --jq: MESSAGE` and makes the command exit 1.
 */
#include <stdlib.h>
#include <string.h>
#include <jq.h>
#include "cli/cli.h"

static jq_state *cli_jq;
static char cli_jq_err[512];
static int cli_jq_failed;

/* jq's message callback: keeps the first message (compile errors come as
 * several; the first says what and where). */
static void cli_jq_msg(void *data, jv msg)
{
	(void)data;
	if (!cli_jq_err[0]) {
		if (jv_get_kind(msg) == JV_KIND_STRING) {
			snprintf(cli_jq_err, sizeof cli_jq_err, "%s", jv_string_value(msg));
		} else {
			jv s = jv_dump_string(jv_copy(msg), 0);

			snprintf(cli_jq_err, sizeof cli_jq_err, "%s", jv_string_value(s));
			jv_free(s);
		}
	}
	jv_free(msg);
}

int cli_jq_compile(const char *expr, char *err, size_t errsz)
{
	if (cli_jq)
		return 0;
	cli_jq = jq_init();
	if (!cli_jq) {
		snprintf(err, errsz, "cannot start jq (out of memory)");
		return -1;
	}
	jq_set_error_cb(cli_jq, cli_jq_msg, NULL);
	cli_jq_err[0] = '\0';
	if (!jq_compile(cli_jq, expr)) {
		snprintf(err, errsz, "%s", cli_jq_err[0] ? cli_jq_err : "the program does not compile");
		jq_teardown(&cli_jq);
		return -1;
	}
	return 0;
}

/* Prints one jq result: a string raw, anything else compact. */
static void cli_jq_print_one(jv v)
{
	if (jv_get_kind(v) == JV_KIND_STRING) {
		fwrite(jv_string_value(v), 1, (size_t)jv_string_length_bytes(jv_copy(v)), stdout);
		putchar('\n');
		jv_free(v);
		return;
	}
	jv s = jv_dump_string(v, 0);

	puts(jv_string_value(s));
	jv_free(s);
}

void cli_jq_filter(json_t *v)
{
	char *text = cli_check_alloc(json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY));
	jv in = jv_parse_sized(text, (int)strlen(text)), out;

	free(text);
	if (!jv_is_valid(in)) {
		jv_free(in);
		cli_fail("--jq: the answer is not JSON jq can read");
		cli_jq_failed = 1;
		return;
	}
	jq_start(cli_jq, in, 0);
	while (jv_is_valid(out = jq_next(cli_jq)))
		cli_jq_print_one(out);
	if (jv_invalid_has_msg(jv_copy(out))) {
		jv msg = jv_invalid_get_msg(out);

		if (jv_get_kind(msg) == JV_KIND_STRING) {
			cli_fail("--jq: %s", jv_string_value(msg));
		} else {
			jv s = jv_dump_string(msg, 0);

			cli_fail("--jq: %s", jv_string_value(s));
			jv_free(s);
			msg = jv_null();
		}
		jv_free(msg);
		cli_jq_failed = 1;
		return;
	}
	jv_free(out);
}

int cli_jq_status(void)
{
	return cli_jq_failed ? CLI_FAIL : CLI_OK;
}

void cli_jq_cleanup(void)
{
	if (cli_jq)
		jq_teardown(&cli_jq);
}
