/*
 * json.c — the one checker of JSON request bodies: unknown fields and wrong
 * types are refused with the field named.
 */
#include <string.h>
#include "util/util.h"

static const char *jtype_name(cof_jtype t)
{
	switch (t) {
	case COF_JSTR: return "a string";
	case COF_JINT: return "an integer";
	case COF_JBOOL: return "a boolean";
	case COF_JOBJ: return "an object";
	case COF_JARR: return "an array";
	default: return "a value";
	}
}

static int jtype_ok(json_t *v, cof_jtype t)
{
	switch (t) {
	case COF_JSTR: return json_is_string(v);
	case COF_JINT: return json_is_integer(v);
	case COF_JBOOL: return json_is_boolean(v);
	case COF_JOBJ: return json_is_object(v);
	case COF_JARR: return json_is_array(v);
	default: return 1;
	}
}

int cof_json_check(json_t *body, const cof_jfield *fields, cof_err *err)
{
	const char *key;
	json_t *v;

	if (!body) {
		for (const cof_jfield *f = fields; f->name; f++)
			if (f->required)
				return cof_error(err, COF_EVALIDATION,
						 "'%s' is required", f->name);
		return 0;
	}
	if (!json_is_object(body))
		return cof_error(err, COF_EVALIDATION, "the body must be a JSON object");
	json_object_foreach(body, key, v) {
		const cof_jfield *f;
		for (f = fields; f->name; f++)
			if (!strcmp(f->name, key))
				break;
		if (!f->name)
			return cof_error(err, COF_EVALIDATION, "unknown field '%.64s'", key);
		if (json_is_null(v) && !f->required)
			continue;
		if (!jtype_ok(v, f->type))
			return cof_error(err, COF_EVALIDATION, "'%s' must be %s",
					 key, jtype_name(f->type));
	}
	for (const cof_jfield *f = fields; f->name; f++)
		if (f->required && !json_object_get(body, f->name))
			return cof_error(err, COF_EVALIDATION, "'%s' is required", f->name);
	return 0;
}

const char *cof_json_str(json_t *body, const char *name)
{
	json_t *v = body ? json_object_get(body, name) : NULL;
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int cof_json_int(json_t *body, const char *name, int64_t *out)
{
	json_t *v = body ? json_object_get(body, name) : NULL;
	if (!json_is_integer(v))
		return 0;
	*out = (int64_t)json_integer_value(v);
	return 1;
}

int64_t cof_json_i64(json_t *body, const char *name)
{
	int64_t v = 0;
	return cof_json_int(body, name, &v) ? v : 0;
}

int cof_json_bool(json_t *body, const char *name, int dflt)
{
	json_t *v = body ? json_object_get(body, name) : NULL;
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}
