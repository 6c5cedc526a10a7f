/*
 * err.c — the one error type of libcoffer and its mapping to API errors.
 */
#include <stdarg.h>
#include <stdio.h>
#include "coffer.h"

static const struct {
	const char *type;
	int status;
} codes[COF_NCODES] = {
	[COF_OK] = {"ok", 200},
	[COF_EVALIDATION] = {"validation_error", 400},
	[COF_EUNAUTHORIZED] = {"unauthorized", 401},
	[COF_EFORBIDDEN] = {"forbidden", 403},
	[COF_ENOTFOUND] = {"not_found", 404},
	[COF_ECONFLICT] = {"conflict", 409},
	[COF_EGONE] = {"gone", 410},
	[COF_EPRECONDITION] = {"precondition_failed", 412},
	[COF_ETOOLARGE] = {"too_large", 413},
	[COF_EMEDIATYPE] = {"unsupported_media_type", 415},
	[COF_ERANGE] = {"range_not_satisfiable", 416},
	[COF_EBLOCKED] = {"blocked", 422},
	[COF_ELOCKED] = {"locked", 423},
	[COF_ERATELIMIT] = {"rate_limited", 429},
	[COF_EINTERNAL] = {"internal", 500},
	[COF_EUNAVAILABLE] = {"unavailable", 503},
};

int cof_error(cof_err *err, cof_code code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	/* The first error wins: a cleanup path must not overwrite the cause. */
	if (err->code != COF_OK)
		return -1;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void cof_err_clear(cof_err *err)
{
	if (!err)
		return;
	if (err->extra)
		json_decref(err->extra);
	err->extra = NULL;
	err->code = COF_OK;
	err->msg[0] = '\0';
}

void cof_err_set(cof_err *err, const char *key, json_t *value)
{
	if (!err) {
		json_decref(value);
		return;
	}
	if (!err->extra)
		err->extra = json_object();
	if (err->extra)
		json_object_set_new(err->extra, key, value);
	else
		json_decref(value);
}

const char *cof_code_type(cof_code code)
{
	return (code >= 0 && code < COF_NCODES) ? codes[code].type : "internal";
}

int cof_code_status(cof_code code)
{
	return (code >= 0 && code < COF_NCODES) ? codes[code].status : 500;
}
