/*
 * nodes.h — cluster membership: the one place that says what a node's
 * record is and when a node is alive (docs/design.md, "Across nodes").
 *
 * Each node of a dataset writes its record (state kind "node", id = its
 * name: {"url": where other nodes reach it}, and in updated_at its
 * heartbeat) every COF_NODE_BEAT_MS; a node whose heartbeat is older than
 * COF_NODE_GONE_MS is gone, and what it held (turn workspaces, relay
 * clients) is treated as lost by every other node. http/forward.c beats and
 * carries requests; turn/records.c ends a gone node's turns; relay/ decides
 * whether a session's client is still held elsewhere.
 */
#ifndef COFFER_STORE_NODES_H
#define COFFER_STORE_NODES_H

#include <stddef.h>
#include <stdint.h>
#include "coffer.h"

#define COF_NODE_BEAT_MS 2000
#define COF_NODE_GONE_MS 15000

/* Writes node `name`'s record: its URL and, now, its heartbeat. */
int cof_node_beat(cof_store *st, const char *name, const char *url, cof_err *err);
/* Reads node `name`: 1 when alive (url, when not NULL, gets its URL, "" when
 * it recorded none), 0 when gone or never registered (*age_ms: ms since its
 * last heartbeat, -1 when never; age_ms may be NULL), -1 on a store error. */
int cof_node_get(cof_store *st, const char *name, char *url, size_t urlsz,
		 int64_t *age_ms, cof_err *err);
/* 1 when a heartbeat made at `updated_at` (ms) still says alive. */
int cof_node_fresh(int64_t updated_at);
/* The instant (ms) before which a heartbeat says gone: for statements that
 * compare in the store. */
int64_t cof_node_gone_before(void);

#endif
