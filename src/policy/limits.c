/*
 * limits.c — access modes and per-session limits. The default of each limit
 * is also its ceiling: a session may ask for less, never for more.
 */
#include <string.h>
#include "policy/policy.h"
#include "util/util.h"

#define MB (1024LL * 1024LL)

static const char *const mode_names[] = {"standard", "supervised", "readonly"};

int cof_mode_parse(const char *s, cof_mode *out, cof_err *err)
{
	for (size_t i = 0; s && i < sizeof mode_names / sizeof *mode_names; i++) {
		if (!strcmp(s, mode_names[i])) {
			*out = (cof_mode)i;
			return 0;
		}
	}
	return cof_error(err, COF_EVALIDATION,
			 "mode '%.64s' is not one of standard, supervised, readonly",
			 s ? s : "");
}

const char *cof_mode_name(cof_mode m)
{
	if ((int)m < 0 || (size_t)m >= sizeof mode_names / sizeof *mode_names)
		return "standard";
	return mode_names[m];
}

/* One row per limit: its JSON name, where it lives, its ceiling. */
typedef struct limit_field {
	const char *name;
	size_t off;
	int64_t ceiling;
	int bytes; /* named in MB in messages */
} limit_field;

static const limit_field fields[] = {
	{"fileBytes", offsetof(cof_limits, file_bytes), 10 * MB, 1},
	{"reads", offsetof(cof_limits, reads), 500, 0},
	{"writes", offsetof(cof_limits, writes), 100, 0},
	{"bytesWritten", offsetof(cof_limits, bytes_written), 500 * MB, 1},
	{"seconds", offsetof(cof_limits, seconds), 4 * 3600, 0},
	{"searchResults", offsetof(cof_limits, search_results), 100, 0},
};
#define NFIELDS (sizeof fields / sizeof *fields)

static int64_t *slot(cof_limits *l, const limit_field *f)
{
	return (int64_t *)(void *)((char *)l + f->off);
}

void cof_limits_default(cof_limits *out)
{
	for (size_t i = 0; i < NFIELDS; i++)
		*slot(out, &fields[i]) = fields[i].ceiling;
}

int cof_limits_parse(const json_t *obj, cof_limits *out, cof_err *err)
{
	static const cof_jfield check[] = {
		{"fileBytes", COF_JINT, 0}, {"reads", COF_JINT, 0},
		{"writes", COF_JINT, 0}, {"bytesWritten", COF_JINT, 0},
		{"seconds", COF_JINT, 0}, {"searchResults", COF_JINT, 0},
		{NULL, 0, 0},
	};
	cof_limits l;

	cof_limits_default(&l);
	if (obj && !json_is_null(obj)) {
		if (!json_is_object(obj))
			return cof_error(err, COF_EVALIDATION, "'limits' must be an object");
		if (cof_json_check((json_t *)obj, check, err) < 0)
			return -1;
	}
	for (size_t i = 0; obj && i < NFIELDS; i++) {
		const limit_field *f = &fields[i];
		json_t *v = json_object_get(obj, f->name);
		json_int_t n;
		if (!v || json_is_null(v))
			continue;
		n = json_integer_value(v);
		if (n <= 0)
			return cof_error(err, COF_EVALIDATION, "'%s' must be at least 1", f->name);
		if (n > f->ceiling) {
			if (f->bytes)
				return cof_error(err, COF_EVALIDATION,
						 "'%s' is %lld bytes; the ceiling is %lld MB "
						 "(%lld bytes)", f->name, (long long)n,
						 (long long)(f->ceiling / MB), (long long)f->ceiling);
			return cof_error(err, COF_EVALIDATION, "'%s' is %lld; the ceiling is %lld",
					 f->name, (long long)n, (long long)f->ceiling);
		}
		*slot(&l, f) = (int64_t)n;
	}
	*out = l;
	return 0;
}

json_t *cof_limits_json(const cof_limits *l)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < NFIELDS; i++)
		json_object_set_new(o, fields[i].name,
				    json_integer(*slot((cof_limits *)l, &fields[i])));
	return o;
}
