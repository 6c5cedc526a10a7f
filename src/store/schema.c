/*
 * schema.c — the metadata schema, written once for both drivers (sql.h):
 * the tables, then the indexes, in shared SQL whose few differences of
 * dialect are tokens each driver expands (cof_sql_rewrite):
 *   {serial}  a bigint key numbered on insert: SQLite INTEGER PRIMARY KEY
 *             (the rowid), PostgreSQL bigserial PRIMARY KEY;
 *   {blob}    bytes: SQLite BLOB, PostgreSQL bytea;
 *   {norowid} after a table whose primary key is its whole order: SQLite
 *             WITHOUT ROWID (the rows kept in the key's b-tree), PostgreSQL
 *             nothing;
 *   {C}, {jsonb}  as in queries (bytewise text; a JSON field).
 * Integers are bigint or integer (SQLite's INTEGER affinity either way);
 * partial and expression indexes are written alike in both.
 *
 * A NEW database is made from these two texts. An existing one reaches the
 * same tables, columns and indexes through its driver's upgrade steps
 * (meta_sqlite.c's schema versions, meta_pg.c's migrations), which then run
 * both texts: every statement is IF NOT EXISTS, so they add only what is
 * missing (tables first, so that the steps' ALTERs find them; indexes last,
 * so that they find the steps' columns). Changing the schema takes a line
 * here and one upgrade step in each driver (test_meta_schema.c and
 * tests/blackbox/test_schema.py compare new and upgraded databases).
 */
#include "store/sql.h"

const char *const cof_schema_tables =
	"CREATE TABLE IF NOT EXISTS keys(hash text PRIMARY KEY, org text NOT NULL,"
	" agent text NOT NULL DEFAULT '', admin integer NOT NULL DEFAULT 0,"
	" created_at bigint NOT NULL, id text NOT NULL DEFAULT '',"
	" name text NOT NULL DEFAULT '', read_only integer NOT NULL DEFAULT 0,"
	" expires_at bigint NOT NULL DEFAULT 0, revoked_at bigint NOT NULL DEFAULT 0,"
	" last_used_at bigint NOT NULL DEFAULT 0){norowid};"
	"CREATE TABLE IF NOT EXISTS volumes(vno {serial}, id text{C} NOT NULL UNIQUE,"
	" org text NOT NULL, name text{C} NOT NULL, seq bigint NOT NULL, files bigint NOT NULL,"
	" bytes bigint NOT NULL, capacity bigint NOT NULL, ceiling bigint NOT NULL,"
	" created_at bigint NOT NULL, hidden integer NOT NULL DEFAULT 0,"
	" history_from bigint NOT NULL DEFAULT 0, base_vno bigint,"
	" base_seq bigint NOT NULL DEFAULT 0, depth integer NOT NULL DEFAULT 0,"
	" retired integer NOT NULL DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS entries(vno bigint NOT NULL, path text{C} NOT NULL,"
	" from_seq bigint NOT NULL, to_seq bigint, version bigint NOT NULL,"
	" size bigint NOT NULL, sha256 text NOT NULL, ctype text NOT NULL,"
	" updated_at bigint NOT NULL, closed_at bigint, s3meta text,"
	" PRIMARY KEY(vno, path, from_seq)){norowid};"
	"CREATE TABLE IF NOT EXISTS changes(vno bigint NOT NULL, seq bigint NOT NULL,"
	" path text{C} NOT NULL, removed integer NOT NULL, version bigint NOT NULL,"
	" size bigint NOT NULL, sha256 text NOT NULL, at bigint NOT NULL, who text,"
	" s3meta text, PRIMARY KEY(vno, seq, path)){norowid};"
	"CREATE TABLE IF NOT EXISTS snapshots(id text PRIMARY KEY, vno bigint NOT NULL,"
	" src_vno bigint NOT NULL, seq bigint NOT NULL, pinned integer NOT NULL,"
	" labels text NOT NULL, files bigint NOT NULL, bytes bigint NOT NULL,"
	" created_at bigint NOT NULL, ord bigint NOT NULL);"
	/* pending_at, claimed_at: the collector's claims across nodes, read only
	 * where the driver says `claims` (meta_gc.c) */
	"CREATE TABLE IF NOT EXISTS blobs(sha256 text PRIMARY KEY, size bigint NOT NULL,"
	" orphan_since bigint, data {blob}, pending_at bigint, claimed_at bigint);"
	"CREATE TABLE IF NOT EXISTS agents(org text NOT NULL, id text NOT NULL,"
	" workspace text NOT NULL, settings text NOT NULL, created_at bigint NOT NULL,"
	" PRIMARY KEY(org, id)){norowid};"
	"CREATE TABLE IF NOT EXISTS seen(org text NOT NULL, agent text NOT NULL,"
	" vol text NOT NULL, path text NOT NULL, version bigint NOT NULL,"
	" sha256 text NOT NULL, PRIMARY KEY(org, agent, vol, path)){norowid};"
	"CREATE TABLE IF NOT EXISTS run_items(id {serial}, org text NOT NULL,"
	" agent text NOT NULL, run text NOT NULL, kind text NOT NULL, path text NOT NULL,"
	" version bigint NOT NULL, size bigint NOT NULL, ctype text NOT NULL,"
	" caption text NOT NULL, url text NOT NULL, UNIQUE(org, agent, run, kind, path));"
	"CREATE TABLE IF NOT EXISTS pins(org text NOT NULL, agent text NOT NULL,"
	" sha256 text NOT NULL, PRIMARY KEY(org, agent, sha256)){norowid};"
	"CREATE TABLE IF NOT EXISTS idem(scope text NOT NULL, key text NOT NULL,"
	" value text NOT NULL, created_at bigint NOT NULL, PRIMARY KEY(scope, key)){norowid};"
	"CREATE TABLE IF NOT EXISTS subjects(org text NOT NULL, agent text NOT NULL,"
	" subject text{C} NOT NULL, vol text NOT NULL, created_at bigint NOT NULL,"
	" PRIMARY KEY(org, agent, subject)){norowid};"
	/* stored state and event streams (meta_state.c) */
	"CREATE TABLE IF NOT EXISTS state(kind text NOT NULL, id text NOT NULL,"
	" org text NOT NULL, node text NOT NULL, ended integer NOT NULL,"
	" updated_at bigint NOT NULL, body text NOT NULL, PRIMARY KEY(kind, id)){norowid};"
	"CREATE TABLE IF NOT EXISTS events(stream text{C} NOT NULL, id bigint NOT NULL,"
	" mask integer NOT NULL, body text NOT NULL, at bigint NOT NULL,"
	" PRIMARY KEY(stream, id)){norowid};"
	/* webhooks and their delivery queue (meta_webhook.c) */
	"CREATE TABLE IF NOT EXISTS webhooks(id text{C} PRIMARY KEY, org text NOT NULL,"
	" url text NOT NULL, events text NOT NULL, vols text NOT NULL, agents text NOT NULL,"
	" description text NOT NULL, secret text NOT NULL, disabled integer NOT NULL,"
	" created_at bigint NOT NULL){norowid};"
	"CREATE TABLE IF NOT EXISTS hook_deliveries(id text{C} PRIMARY KEY,"
	" hook text NOT NULL, org text NOT NULL, event text NOT NULL, data text NOT NULL,"
	" created_at bigint NOT NULL, status text NOT NULL, attempts integer NOT NULL,"
	" last_error text NOT NULL, next_at bigint NOT NULL, delivered_at bigint NOT NULL,"
	" claimed_by text NOT NULL, lease_until bigint NOT NULL){norowid};";

const char *const cof_schema_indexes =
	"CREATE UNIQUE INDEX IF NOT EXISTS keys_id ON keys(id);"
	"CREATE INDEX IF NOT EXISTS keys_org ON keys(org, created_at);"
	"CREATE INDEX IF NOT EXISTS volumes_org_name ON volumes(org, name, id);"
	"CREATE INDEX IF NOT EXISTS volumes_base ON volumes(base_vno) WHERE base_vno IS NOT NULL;"
	"CREATE UNIQUE INDEX IF NOT EXISTS entries_live ON entries(vno, path) WHERE to_seq IS NULL;"
	"CREATE INDEX IF NOT EXISTS entries_sha ON entries(sha256);"
	"CREATE INDEX IF NOT EXISTS entries_closed ON entries(closed_at) WHERE to_seq IS NOT NULL;"
	/* the collector's cut of the feed (meta_gc.c), a path's history, and a
	 * run's and a call's changes (meta_changes.c: the feed's expressions) */
	"CREATE INDEX IF NOT EXISTS changes_at ON changes(at);"
	"CREATE INDEX IF NOT EXISTS changes_path ON changes(vno, path, seq);"
	"CREATE INDEX IF NOT EXISTS changes_run ON changes(vno, (who{jsonb} ->> 'runId'), seq);"
	"CREATE INDEX IF NOT EXISTS changes_call ON changes(vno, (who{jsonb} ->> 'callId'), seq);"
	"CREATE INDEX IF NOT EXISTS snapshots_vol ON snapshots(vno, ord);"
	"CREATE INDEX IF NOT EXISTS snapshots_src ON snapshots(src_vno, seq);"
	"CREATE INDEX IF NOT EXISTS pins_sha ON pins(sha256);"
	/* the records not ended of each node (the gone-node check, records.c) */
	"CREATE INDEX IF NOT EXISTS state_live ON state(kind, node) WHERE ended = 0;"
	"CREATE INDEX IF NOT EXISTS webhooks_org ON webhooks(org, id);"
	"CREATE INDEX IF NOT EXISTS hook_deliveries_due ON hook_deliveries(status, next_at);"
	"CREATE INDEX IF NOT EXISTS hook_deliveries_hook ON hook_deliveries(hook, id);";
