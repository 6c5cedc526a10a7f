/*
 * nodes.c — cluster membership (nodes.h): a node's record in the state table
 * and the one alive rule.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include "store/nodes.h"
#include "store/store.h"

int cof_node_beat(cof_store *st, const char *name, const char *url, cof_err *err)
{
	json_t *b = json_pack("{s:s}", "url", url);
	char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
	cof_staterow row = {.kind = "node", .body = text};
	int rc;

	json_decref(b);
	if (!text)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	snprintf(row.id, sizeof row.id, "%s", name);
	snprintf(row.node, sizeof row.node, "%s", name);
	rc = cof_meta_state_put(st->meta, &row, err);
	free(text);
	return rc;
}

int cof_node_fresh(int64_t updated_at)
{
	return cof_now_ms() - updated_at <= COF_NODE_GONE_MS;
}

int64_t cof_node_gone_before(void)
{
	return cof_now_ms() - COF_NODE_GONE_MS;
}

int cof_node_get(cof_store *st, const char *name, char *url, size_t urlsz,
		 int64_t *age_ms, cof_err *err)
{
	cof_staterow row;
	int found = cof_meta_state_get(st->meta, "node", name, &row, err);
	int alive;

	if (age_ms)
		*age_ms = -1;
	if (url && urlsz)
		url[0] = '\0';
	if (found <= 0)
		return found;
	if (age_ms)
		*age_ms = cof_now_ms() - row.updated_at;
	if (url && urlsz) {
		json_t *b = json_loads(row.body, 0, NULL);
		const char *u = json_string_value(json_object_get(b, "url"));
		snprintf(url, urlsz, "%s", u ? u : "");
		json_decref(b);
	}
	alive = cof_node_fresh(row.updated_at);
	free(row.body);
	return alive;
}
