/*
 * writecheck.c — the relay's write check (policy.h, cof_write_check): one
 * order and one wording for cofferd's check before it forwards a write and
 * the client's before it writes, so a write the server lets through is
 * judged the same way at the folder, and a compromised server still meets
 * the same rules there.
 */
#include <stdio.h>
#include "policy/policy.h"

cof_wc_step cof_write_check(const cof_write_rules *w, const char *path, const void *data,
			    size_t len, cof_guard_hit *hit, cof_err *err)
{
	const cof_guard *g;
	int blocked;

	if (!w->leaves && path[0] && w->excl && cof_excl_match(w->excl, path, 0)) {
		cof_error(err, COF_EFORBIDDEN,
			  "'%.300s' is excluded (the user's or the default exclusions)", path);
		return COF_WC_EXCLUDED;
	}
	if (w->mode == COF_MODE_READONLY) {
		cof_error(err, COF_EFORBIDDEN, "the session is read-only (the user chose "
			  "--readonly); the write to '%.300s' was refused", path);
		return COF_WC_READONLY;
	}
	if (!w->leaves && cof_protect_check(w->prot, path, NULL, err))
		return COF_WC_PROTECTED;
	if ((int64_t)len > w->file_bytes) {
		cof_error(err, COF_ETOOLARGE, "the write to '%.300s' is %lld bytes; the limit is "
			  "%lld bytes (fileBytes)", path, (long long)len, (long long)w->file_bytes);
		cof_err_set(err, "limit", json_string("fileBytes"));
		return COF_WC_SIZE;
	}
	if (w->scanned) {
		blocked = w->blocked;
	} else {
		if (!(g = w->guard ? w->guard : cof_guard_default(err)))
			return COF_WC_ERROR;
		if ((blocked = cof_guard_scan(g, path, data, len, hit, err)) < 0)
			return COF_WC_ERROR;
	}
	if (!blocked)
		return COF_WC_OK;
	cof_error(err, COF_EBLOCKED, "the write guard refused '%.300s': rule %s (%s)", path,
		  hit->rule, hit->category);
	cof_err_set(err, "rule", json_string(hit->rule));
	cof_err_set(err, "category", json_string(hit->category));
	cof_err_set(err, "offset", json_integer((json_int_t)hit->offset));
	if (hit->layer[0]) /* seen through a disguise: which one */
		cof_err_set(err, "layer", json_string(hit->layer));
	return COF_WC_GUARD;
}
