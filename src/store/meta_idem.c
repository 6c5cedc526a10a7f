/*
 * meta_idem.c — idempotency records, written once above the SQL seam
 * (store/sql.h): the answer a request with an Idempotency-Key (or another
 * caller's key in its own scope) gave, kept for a while so that the same
 * key again gets it instead of doing the work twice (volume/idem.c).
 */
#include "store/meta.h"
#include "store/sql.h"

/* cof_sql_row_fn: column 0 of the row, malloc'd, into ctx (a char *). */
static int text_one(void *ctx, const cof_sql_row *r, cof_err *err)
{
	char **value = ctx;

	*value = cof_strdup(cof_sql_str(r, 0));
	return *value ? 1 : cof_error(err, COF_EINTERNAL, "out of memory");
}

int cof_meta_idem_get(cof_meta *m, const char *scope, const char *key, int64_t ttl,
		      char **value, cof_err *err)
{
	int rc = cof_sql_read(m, "SELECT value FROM idem WHERE scope = ?1 AND key = ?2 AND"
			      " created_at > ?3", "idempotency", text_one, value, err, "ssi",
			      scope, key, cof_now() - ttl);

	return rc < 0 ? -1 : rc > 0;
}

int cof_meta_idem_put(cof_meta *m, const char *scope, const char *key, const char *value,
		      cof_err *err)
{
	return cof_sql_write(m, NULL, "INSERT INTO idem(scope, key, value, created_at)"
			     " VALUES(?1, ?2, ?3, ?4) ON CONFLICT(scope, key) DO UPDATE SET"
			     " value = excluded.value, created_at = excluded.created_at",
			     "idempotency", err, "sssi", scope, key, value, cof_now()) < 0 ? -1 : 0;
}
