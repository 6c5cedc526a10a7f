/*
 * settings.c — an agent's `sandbox` settings (sizes in Docker's form and the
 * rule 0 < turnDisk <= userDisk <= scratch; memory and processes of a turn)
 * and `output.files` (the types a call may give back), and the table of
 * those types (settings.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "agent/settings.h"
#include "util/util.h"

#define OUTPUT_NAME_QUOTED 128

static const struct {
	unsigned bit;
	const char *name, *media;
} types[] = {
	{COF_OUT_PNG, "png", "image/png"},
	{COF_OUT_SVG, "svg", "image/svg+xml"},
	{COF_OUT_CSV, "csv", "text/csv"},
	{COF_OUT_PDF, "pdf", "application/pdf"},
};
#define NTYPES (sizeof types / sizeof *types)

const char *cof_outbox_type_name(unsigned type)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (types[i].bit == type)
			return types[i].name;
	return NULL;
}

const char *cof_outbox_media_type(unsigned type)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (types[i].bit == type)
			return types[i].media;
	return NULL;
}

void cof_outbox_types_fmt(unsigned bits, char *out, size_t outsz)
{
	cof_buf b = COF_BUF_INIT;

	for (size_t i = 0; i < NTYPES; i++)
		if (bits & types[i].bit)
			cof_buf_addf(&b, "%s%s", b.len ? ", " : "", types[i].name);
	snprintf(out, outsz, "%s", b.len ? b.data : "none");
	cof_buf_release(&b);
}

/* An unknown `output.files` entry as the message shows it: JSON-escaped
 * (no control character reaches a log), cut at OUTPUT_NAME_QUOTED. */
static void name_quote(const json_t *v, char *out, size_t outsz)
{
	char *s = json_is_string(v) ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
	size_t n = s ? strlen(s) : 0;

	/* without the JSON quotes around it */
	snprintf(out, outsz, "%.*s", n >= 2 ? (int)(n - 2) : 0, n >= 2 ? s + 1 : "");
	free(s);
}

int cof_outbox_types_parse(const json_t *output, unsigned *bits, cof_err *err)
{
	static const cof_jfield fields[] = {{"files", COF_JARR, 0}, {NULL, 0, 0}};
	json_t *files, *v;
	size_t i;

	*bits = COF_OUT_ALL;
	if (!output || json_is_null(output))
		return 0;
	if (!json_is_object(output))
		return cof_error(err, COF_EVALIDATION, "'output' must be an object");
	if (cof_json_check((json_t *)output, fields, err))
		return -1;
	files = json_object_get(output, "files");
	if (!files || json_is_null(files))
		return 0;
	*bits = 0;
	json_array_foreach(files, i, v) {
		size_t k;
		for (k = 0; k < NTYPES; k++)
			if (json_is_string(v) && !strcmp(json_string_value(v), types[k].name))
				break;
		if (k == NTYPES) {
			char q[OUTPUT_NAME_QUOTED];
			name_quote(v, q, sizeof q);
			*bits = COF_OUT_ALL;
			if (!json_is_string(v))
				return cof_error(err, COF_EVALIDATION,
						 "'output.files' must hold strings; allowed: "
						 "png, svg, csv, pdf");
			return cof_error(err, COF_EVALIDATION,
					 "'output.files' names '%s', which is not returned; "
					 "allowed: png, svg, csv, pdf", q);
		}
		*bits |= types[k].bit;
	}
	return 0;
}

/* The COF_OUT_* bits one media type stands for. */
static unsigned media_bits(const char *m)
{
	size_t n = strcspn(m, ";");

	while (n && (m[n - 1] == ' ' || m[n - 1] == '\t'))
		n--;
	while (n && (*m == ' ' || *m == '\t'))
		m++, n--;
	if (n == 3 && !strncmp(m, "*/*", 3))
		return COF_OUT_ALL;
	unsigned bits = 0;
	for (size_t i = 0; i < NTYPES; i++) {
		const char *t = types[i].media;
		size_t tl = strlen(t), major = (size_t)(strchr(t, '/') - t);
		if (n == tl && !strncasecmp(m, t, n))
			bits |= types[i].bit;
		else if (n == major + 2 && !strncasecmp(m, t, major + 1) && m[major + 1] == '*')
			bits |= types[i].bit;
	}
	return bits;
}

unsigned cof_outbox_types_from_media(const json_t *media_types)
{
	unsigned bits = 0;
	json_t *v;
	size_t i;

	if (!media_types || !json_is_array(media_types))
		return COF_OUT_ALL;
	json_array_foreach(media_types, i, v)
		if (json_is_string(v))
			bits |= media_bits(json_string_value(v));
	return bits;
}

static const cof_jfield sandbox_fields[] = {
	{"scratch", COF_JANY, 0}, {"turnDisk", COF_JANY, 0}, {"userDisk", COF_JANY, 0},
	{"turn_disk", COF_JANY, 0}, {"user_disk", COF_JANY, 0}, /* seed 000's spellings */
	{"network", COF_JBOOL, 0}, {"memory", COF_JANY, 0}, {"processes", COF_JINT, 0},
	{NULL, 0, 0}};

/* Reads field `name` of `sb` into *v when present (else leaves it). */
static int size_field(const json_t *sb, const char *name, int64_t *v, cof_err *err)
{
	const json_t *x = json_object_get(sb, name);
	char what[48];

	if (!x || json_is_null(x))
		return 0;
	snprintf(what, sizeof what, "sandbox.%s", name);
	return cof_size_parse(x, what, v, err);
}

/* Refuses a > b with a message naming both values, in the spelling given
 * (rule: "0 < turnDisk <= ..." or "0 < turn_disk <= ..."). */
static int ordered(const char *na, int64_t a, const char *nb, int64_t b, const char *rule,
		   cof_err *err)
{
	char sa[32], sb[32];

	if (a <= b)
		return 0;
	cof_size_fmt(a, sa, sizeof sa);
	cof_size_fmt(b, sb, sizeof sb);
	return cof_error(err, COF_EVALIDATION,
			 "sandbox.%s (%s, %lld bytes) must be at most sandbox.%s (%s, %lld bytes); "
			 "the rule is %s", na, sa, (long long)a, nb, sb, (long long)b, rule);
}

int cof_sandbox_parse(const json_t *sandbox, cof_sandbox *out, cof_err *err)
{
	memset(out, 0, sizeof *out);
	out->scratch = COF_SCRATCH_DEFAULT;
	if (sandbox && !json_is_object(sandbox))
		return cof_error(err, COF_EVALIDATION, "'sandbox' must be an object");
	if (sandbox && cof_json_check((json_t *)sandbox, sandbox_fields, err)) {
		/* the checker names the field without its parent */
		char m[sizeof err->msg];
		snprintf(m, sizeof m, "%s", err->msg);
		snprintf(err->msg, sizeof err->msg, "sandbox: %.460s", m);
		return -1;
	}
	if (size_field(sandbox, "scratch", &out->scratch, err))
		return -1;
	out->turn_disk = out->scratch / 4;
	out->user_disk = out->scratch / 2;
	static const char *const spell[][2] = {{"turnDisk", "turn_disk"}, {"userDisk", "user_disk"}};
	for (size_t i = 0; i < 2; i++)
		if (json_object_get(sandbox, spell[i][0]) && json_object_get(sandbox, spell[i][1]))
			return cof_error(err, COF_EVALIDATION, "sandbox: give %s or %s, not both "
					 "(they are one setting)", spell[i][0], spell[i][1]);
	if (size_field(sandbox, "turnDisk", &out->turn_disk, err) ||
	    size_field(sandbox, "turn_disk", &out->turn_disk, err) ||
	    size_field(sandbox, "userDisk", &out->user_disk, err) ||
	    size_field(sandbox, "user_disk", &out->user_disk, err))
		return -1;
	out->network = cof_json_bool((json_t *)sandbox, "network", 0);
	out->memory = COF_MEMORY_DEFAULT;
	out->processes = COF_PROCESSES_DEFAULT;
	if (size_field(sandbox, "memory", &out->memory, err))
		return -1;
	if (out->memory < COF_MEMORY_MIN || out->memory > COF_MEMORY_MAX)
		return cof_error(err, COF_EVALIDATION,
				 "sandbox.memory is %lld bytes; it must be 16m to 64g",
				 (long long)out->memory);
	if (cof_json_int((json_t *)sandbox, "processes", &out->processes) &&
	    (out->processes < 8 || out->processes > COF_PROCESSES_MAX))
		return cof_error(err, COF_EVALIDATION,
				 "sandbox.processes is %lld; it must be 8 to %d",
				 (long long)out->processes, COF_PROCESSES_MAX);
	/* messages in the spelling given: seed 000's deployment.toml says turn_disk */
	int snake = json_object_get(sandbox, "turn_disk") || json_object_get(sandbox, "user_disk");
	const char *tn = snake ? "turn_disk" : "turnDisk", *un = snake ? "user_disk" : "userDisk",
		   *rule = snake ? "0 < turn_disk <= user_disk <= scratch"
				 : "0 < turnDisk <= userDisk <= scratch";
	if (out->turn_disk <= 0)
		return cof_error(err, COF_EVALIDATION,
				 "sandbox.%s is %lld bytes; it must be more than 0 (the rule is %s)",
				 tn, (long long)out->turn_disk, rule);
	return ordered(tn, out->turn_disk, un, out->user_disk, rule, err) ||
	       ordered(un, out->user_disk, "scratch", out->scratch, rule, err) ? -1 : 0;
}
