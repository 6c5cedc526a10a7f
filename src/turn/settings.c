/*
 * settings.c — an agent's `sandbox` settings: sizes in Docker's form and the
 * rule 0 < turnDisk <= userDisk <= scratch; memory and processes of a turn.
 */
#include <string.h>
#include "turn/turn.h"
#include "util/util.h"

static const cof_jfield sandbox_fields[] = {
	{"scratch", COF_JANY, 0}, {"turnDisk", COF_JANY, 0}, {"userDisk", COF_JANY, 0},
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

/* Refuses a > b with a message naming both values. */
static int ordered(const char *na, int64_t a, const char *nb, int64_t b, cof_err *err)
{
	char sa[32], sb[32];

	if (a <= b)
		return 0;
	cof_size_fmt(a, sa, sizeof sa);
	cof_size_fmt(b, sb, sizeof sb);
	return cof_error(err, COF_EVALIDATION,
			 "sandbox.%s (%s, %lld bytes) must be at most sandbox.%s (%s, %lld bytes); "
			 "the rule is 0 < turnDisk <= userDisk <= scratch",
			 na, sa, (long long)a, nb, sb, (long long)b);
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
	if (size_field(sandbox, "turnDisk", &out->turn_disk, err) ||
	    size_field(sandbox, "userDisk", &out->user_disk, err))
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
	if (out->turn_disk <= 0)
		return cof_error(err, COF_EVALIDATION,
				 "sandbox.turnDisk is %lld bytes; it must be more than 0 (the "
				 "rule is 0 < turnDisk <= userDisk <= scratch)",
				 (long long)out->turn_disk);
	return ordered("turnDisk", out->turn_disk, "userDisk", out->user_disk, err) ||
	       ordered("userDisk", out->user_disk, "scratch", out->scratch, err) ? -1 : 0;
}
