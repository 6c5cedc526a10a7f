/*
 * migrate.c — `coffer migrate`: an embedded dataset (DATA/meta.db and the
 * blobs under DATA/blobs) copied into the shared engines (PostgreSQL and a
 * blob store URL, S3), then verified (docs/design.md, "Migrating an embedded
 * dataset").
 *
 * Order, so that a crash anywhere is mended by running it again:
 *   1. every blob the metadata names is stored in the target blob store
 *      (content-addressed: storing it again is harmless; one already there
 *      with its size is left as it is);
 *   2. every table is copied in ONE PostgreSQL transaction that first checks
 *      the target is empty and last records a marker row (idem scope
 *      "coffer:migrate"): a crash before its commit leaves the target empty;
 *   3. verification (read-only): row counts per table, every copied blob
 *      read back from the target and hashed; then the caller (cof_migrate,
 *      volume/migrate.c) runs fsck of the target, which is volume logic.
 * A target that holds anything but this migration's marker is refused; one
 * with the marker of the same source is only verified again (its content:
 * nodes may have changed its rows since).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "store/meta.h"
#include "store/store.h"
#include "util/util.h"

#define CHUNK (1 << 20)
#define MARK_SCOPE "coffer:migrate"

/* Every table of the embedded store and the columns both backends share (one
 * schema, schema.c), in one order (the SQLite expression of each: "rowid" for
 * run_items' id, which a source older than SQLite schema 7 has only as its
 * rowid). A new table or column in the schema must be
 * added here: a source table or column not named here stops the migration
 * (table_check), so nothing is left behind unnoticed. */
static const struct mtable {
	const char *name, *cols, *src;   /* src: the SQLite select list (NULL = cols) */
	/* a bigserial column to move past max() (snapshots.ord is one only in a
	 * database made before the one schema, which numbers it in SQL: where it
	 * has no sequence, setval is given NULL and does nothing) */
	const char *serial;
	/* columns of the source not copied: the collector's claims, which the
	 * SQLite driver never sets (no `claims`, sql.h) and a source older than
	 * schema 7 lacks */
	const char *skip;
} tables[] = {
	{"keys", "hash, org, agent, admin, created_at, id, name, read_only, expires_at,"
	 " revoked_at, last_used_at", NULL, NULL, NULL},
	{"volumes", "vno, id, org, name, seq, files, bytes, capacity, ceiling, created_at,"
	 " hidden, history_from, base_vno, base_seq, depth, retired", NULL, "vno", NULL},
	{"entries", "vno, path, from_seq, to_seq, version, size, sha256, ctype, updated_at,"
	 " closed_at, s3meta", NULL, NULL, NULL},
	{"changes", "vno, seq, path, removed, version, size, sha256, at, who, s3meta", NULL, NULL,
	 NULL},
	{"snapshots", "id, vno, src_vno, seq, pinned, labels, files, bytes, created_at, ord",
	 NULL, "ord", NULL},
	{"blobs", "sha256, size, orphan_since, data", NULL, NULL, "pending_at, claimed_at"},
	{"agents", "org, id, workspace, settings, created_at", NULL, NULL, NULL},
	{"seen", "org, agent, vol, path, version, sha256", NULL, NULL, NULL},
	{"run_items", "id, org, agent, run, kind, path, version, size, ctype, caption, url",
	 "rowid, org, agent, run, kind, path, version, size, ctype, caption, url", "id", NULL},
	{"pins", "org, agent, sha256", NULL, NULL, NULL},
	{"idem", "scope, key, value, created_at", NULL, NULL, NULL},
	{"subjects", "org, agent, subject, vol, created_at", NULL, NULL, NULL},
	{"state", "kind, id, org, node, ended, updated_at, body", NULL, NULL, NULL},
	{"events", "stream, id, mask, body, at", NULL, NULL, NULL},
	{"webhooks", "id, org, url, events, vols, agents, description, secret, disabled,"
	 " created_at", NULL, NULL, NULL},
	{"hook_deliveries", "id, hook, org, event, data, created_at, status, attempts,"
	 " last_error, next_at, delivered_at, claimed_by, lease_until", NULL, NULL, NULL},
};
#define NTABLES (sizeof tables / sizeof *tables)

typedef struct mig {
	const char *from;
	sqlite3 *src;
	PGconn *pg;
	cof_blobstore *src_blobs, *dst_blobs;
	int64_t counts[NTABLES];
	int64_t blobs, copied, present, bytes, repaired;
	int link_key;                    /* 1 once the source's link.key is stored */
	cof_err *err;
} mig;

/* ------------------------------------------------------------- helpers */

static int sq_fail(mig *g, const char *what)
{
	return cof_error(g->err, COF_EINTERNAL, "the source's metadata: %s: %s", what,
			 sqlite3_errmsg(g->src));
}

static int pg_fail(mig *g, PGresult *r, const char *what)
{
	cof_error(g->err, COF_EUNAVAILABLE, "the target metadata database: %s: %.300s", what,
		  r ? PQresultErrorMessage(r) : PQerrorMessage(g->pg));
	PQclear(r);
	return -1;
}

/* Runs SQL on the target; with `out`, the first cell as an integer. */
static int pg_run(mig *g, const char *sql, const char *what, int64_t *out)
{
	PGresult *r = PQexec(g->pg, sql);
	ExecStatusType s = PQresultStatus(r);

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		return pg_fail(g, r, what);
	if (out)
		*out = PQntuples(r) && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL,
								      10) : 0;
	PQclear(r);
	return 0;
}

/* The number of rows of `table` in the source. */
static int sq_count(mig *g, const char *table, int64_t *n)
{
	char sql[200];
	sqlite3_stmt *st;

	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	if (sqlite3_prepare_v2(g->src, sql, -1, &st, NULL) != SQLITE_OK)
		return sq_fail(g, "counting rows");
	int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : sq_fail(g, "counting rows");
	*n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc;
}

/* 1 when the comma-separated list `cols` names `col`. */
static int names(const char *cols, const char *col)
{
	size_t n = strlen(col);

	for (const char *p = cols; *p;) {
		p += strspn(p, ", ");
		size_t len = strcspn(p, ",");
		if (len == n && !strncmp(p, col, n))
			return 1;
		p += len;
	}
	return 0;
}

/* Every table and column of the source is one this migration copies. */
static int table_check(mig *g)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (sqlite3_prepare_v2(g->src, "SELECT m.name, p.name FROM sqlite_master m,"
			       " pragma_table_info(m.name) p WHERE m.type = 'table'"
			       " AND m.name NOT LIKE 'sqlite_%'", -1, &st, NULL) != SQLITE_OK)
		return sq_fail(g, "listing tables");
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		const char *c = (const char *)sqlite3_column_text(st, 1);
		size_t i;
		for (i = 0; i < NTABLES && strcmp(tables[i].name, t); i++)
			;
		if (i == NTABLES)
			rc = cof_error(g->err, COF_EVALIDATION, "the source has a table '%s' that"
				       " this coffer cannot migrate (a newer schema?)", t);
		else if (!names(tables[i].cols, c) &&
			 !(tables[i].skip && names(tables[i].skip, c)))
			rc = cof_error(g->err, COF_EVALIDATION, "the source's table '%s' has a"
				       " column '%s' that this coffer cannot migrate", t, c);
	}
	sqlite3_finalize(st);
	return rc;
}

/* --------------------------------------------------------------- blobs */

/* Copies the blob `sha` (size bytes) from the source into the target, whether
 * or not the target has it; the bytes stored must hash to `sha`. */
static int blob_put(mig *g, const char *sha, int64_t size, unsigned char *buf)
{
	cof_blob_reader *r = NULL;
	cof_blob_writer *w = NULL;
	int64_t have, off = 0;
	char got[65];
	cof_err e2 = {0};

	if (g->src_blobs->open(g->src_blobs, sha, &r, &have, &e2)) {
		cof_error(g->err, COF_EINTERNAL, "the source lacks content %s (%s); run coffer"
			  " fsck --data %s", sha, e2.msg, g->from);
		cof_err_clear(&e2);
		return -1;
	}
	if (have != size) {
		cof_blob_close(r);
		return cof_error(g->err, COF_EINTERNAL, "the source's content %s is %lld bytes,"
				 " not %lld; run coffer fsck --data %s", sha, (long long)have,
				 (long long)size, g->from);
	}
	if (g->dst_blobs->begin(g->dst_blobs, &w, g->err))
		goto fail;
	while (off < size) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		if (cof_blob_read_full(r, off, buf, n, sha, g->err) ||
		    g->dst_blobs->write(w, buf, n, g->err))
			goto fail;
		off += (int64_t)n;
	}
	cof_blob_close(r);
	r = NULL;
	if (g->dst_blobs->commit(w, got, &have, g->err))
		return -1;
	if (strcmp(got, sha))
		return cof_error(g->err, COF_EINTERNAL, "the source's content %s hashes to %s;"
				 " run coffer fsck --data %s", sha, got, g->from);
	g->bytes += size;
	return 0;
fail:
	cof_blob_close(r);
	if (w)
		g->dst_blobs->abort(w);
	return -1;
}

/* Copies the blob `sha` (size bytes) into the target unless it is there with
 * its size (verification reads it whole later). */
static int blob_copy(mig *g, const char *sha, int64_t size, unsigned char *buf)
{
	cof_blob_reader *r = NULL;
	int64_t have;
	cof_err e2 = {0};

	if (g->dst_blobs->open(g->dst_blobs, sha, &r, &have, &e2) == 0) {
		cof_blob_close(r);
		if (have == size) {
			g->present++;
			return 0;
		}
	}
	cof_err_clear(&e2);
	if (blob_put(g, sha, size, buf))
		return -1;
	g->copied++;
	return 0;
}

/* Hashes the target's copy of `sha`: it must be there, whole and right. */
static int blob_verify(mig *g, const char *sha, int64_t size, unsigned char *buf)
{
	cof_blob_reader *r;
	int64_t have, off = 0;
	unsigned char md[32];
	unsigned int mdlen = 0;
	char got[65];
	EVP_MD_CTX *ctx;

	cof_err e2 = {0};
	if (g->dst_blobs->open(g->dst_blobs, sha, &r, &have, &e2)) {
		cof_error(g->err, COF_EINTERNAL, "verifying: the target lacks content %s (%s)",
			  sha, e2.msg);
		cof_err_clear(&e2);
		return -1;
	}
	if (!(ctx = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		cof_blob_close(r);
		return cof_error(g->err, COF_EINTERNAL, "out of memory");
	}
	int rc = 0;
	while (!rc && off < size) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		if (!(rc = cof_blob_read_full(r, off, buf, n, sha, g->err)))
			EVP_DigestUpdate(ctx, buf, n);
		off += (int64_t)n;
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	cof_blob_close(r);
	cof_hex(md, 32, got);
	if (!rc && (have != size || strcmp(got, sha)))
		rc = cof_error(g->err, COF_EINTERNAL, "verifying: the target's content %s is"
			       " %lld bytes hashing to %s", sha, (long long)have, got);
	return rc;
}

/* blob_verify, and when the target's copy is missing, short or wrong (a run
 * cut off mid-upload, on a store whose uploads are not atomic), that copy is
 * removed (a store keeps content once: a put over it would be skipped), the
 * source's put again and verified once more. A store that cannot be reached
 * fails the remove, so nothing is removed then. */
static int blob_check(mig *g, const char *sha, int64_t size, unsigned char *buf)
{
	if (blob_verify(g, sha, size, buf) == 0)
		return 0;
	cof_err_clear(g->err);
	if (g->dst_blobs->remove(g->dst_blobs, sha, g->err) ||
	    blob_put(g, sha, size, buf) || blob_verify(g, sha, size, buf))
		return -1;
	g->repaired++;
	return 0;
}

/* Calls blob_copy or blob_check for every blob the source's metadata keeps
 * in its blob store (not inline). */
static int blobs_each(mig *g, int (*fn)(mig *, const char *, int64_t, unsigned char *))
{
	sqlite3_stmt *st;
	unsigned char *buf = malloc(CHUNK);
	int rc = 0;

	if (!buf)
		return cof_error(g->err, COF_EINTERNAL, "out of memory");
	if (sqlite3_prepare_v2(g->src, "SELECT sha256, size FROM blobs WHERE data IS NULL"
			       " ORDER BY sha256", -1, &st, NULL) != SQLITE_OK) {
		free(buf);
		return sq_fail(g, "listing blobs");
	}
	g->blobs = 0;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		g->blobs++;
		rc = fn(g, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
			buf);
	}
	sqlite3_finalize(st);
	free(buf);
	return rc;
}

/* ---------------------------------------------------------- metadata */

/* One value in COPY's text format: \N for NULL, bytea as \\x + hex. */
static void copy_value(cof_buf *b, sqlite3_stmt *st, int col)
{
	int type = sqlite3_column_type(st, col);

	if (type == SQLITE_NULL) {
		cof_buf_adds(b, "\\N");
	} else if (type == SQLITE_BLOB) {
		const unsigned char *p = sqlite3_column_blob(st, col);
		int n = sqlite3_column_bytes(st, col);
		static const char hex[] = "0123456789abcdef";
		cof_buf_adds(b, "\\\\x");
		for (int i = 0; i < n; i++) {
			char two[2] = {hex[p[i] >> 4], hex[p[i] & 15]};
			cof_buf_add(b, two, 2);
		}
	} else {
		const char *p = (const char *)sqlite3_column_text(st, col);
		for (; p && *p; p++) {
			const char *esc = *p == '\\' ? "\\\\" : *p == '\t' ? "\\t" :
					  *p == '\n' ? "\\n" : *p == '\r' ? "\\r" : NULL;
			if (esc)
				cof_buf_adds(b, esc);
			else
				cof_buf_add(b, p, 1);
		}
	}
}

/* Copies one table with COPY FROM STDIN, in the open transaction. */
static int table_copy(mig *g, size_t t)
{
	const struct mtable *m = &tables[t];
	char sql[600];
	sqlite3_stmt *st;
	cof_buf b = COF_BUF_INIT;
	PGresult *r;
	int rc = 0;

	snprintf(sql, sizeof sql, "SELECT %s FROM %s", m->src ? m->src : m->cols, m->name);
	if (sqlite3_prepare_v2(g->src, sql, -1, &st, NULL) != SQLITE_OK)
		return sq_fail(g, "reading a table");
	snprintf(sql, sizeof sql, "COPY %s(%s) FROM STDIN", m->name, m->cols);
	r = PQexec(g->pg, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		sqlite3_finalize(st);
		return pg_fail(g, r, "copying a table");
	}
	PQclear(r);
	int ncol = sqlite3_column_count(st), s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		for (int c = 0; c < ncol; c++) {
			if (c)
				cof_buf_add(&b, "\t", 1);
			copy_value(&b, st, c);
		}
		cof_buf_add(&b, "\n", 1);
		g->counts[t]++;
		if (b.len >= CHUNK) {
			if (PQputCopyData(g->pg, b.data, (int)b.len) != 1)
				break;
			b.len = 0;
		}
	}
	if (s != SQLITE_DONE)
		rc = sq_fail(g, "reading a table");
	if ((b.len && PQputCopyData(g->pg, b.data, (int)b.len) != 1) ||
	    PQputCopyEnd(g->pg, rc ? "the source could not be read" : NULL) != 1)
		rc = -1;
	cof_buf_release(&b);
	sqlite3_finalize(st);
	r = PQgetResult(g->pg);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		if (!rc)
			return pg_fail(g, r, m->name);
		rc = -1;
	}
	PQclear(r);
	while ((r = PQgetResult(g->pg)))
		PQclear(r);
	return rc;
}

/* The marker of a finished migration of `from`: 1 present, 0 absent, -1. */
static int marker_of(mig *g, const char *from)
{
	const char *p[2] = {MARK_SCOPE, from};
	PGresult *r = PQexecParams(g->pg, "SELECT 1 FROM idem WHERE scope = $1 AND key = $2",
				   2, NULL, p, NULL, NULL, 0);

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		return pg_fail(g, r, "reading the migration's marker");
	int n = PQntuples(r);
	PQclear(r);
	return n > 0;
}

/* Step 2, last: the source's DATA/link.key becomes the dataset's stored
 * link secret (store.c, link_secret_shared), so links signed before the
 * migration verify on every node. A source without one has signed none. */
static int link_key_copy(mig *g)
{
	unsigned char sec[32];
	char path[4200], body[160], now[32];
	int fd;

	snprintf(path, sizeof path, "%s/link.key", g->from);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : cof_error(g->err, COF_EINTERNAL, "cannot read"
						       " '%s': %s", path, strerror(errno));
	ssize_t n = read(fd, sec, sizeof sec);
	close(fd);
	if (n != (ssize_t)sizeof sec)
		return cof_error(g->err, COF_EINTERNAL, "'%s' is damaged", path);
	cof_link_secret_body(sec, sizeof sec, body, sizeof body);
	snprintf(now, sizeof now, "%lld", (long long)cof_now_ms());
	const char *p[4] = {COF_LINK_KIND, COF_LINK_ID, now, body};
	PGresult *r = PQexecParams(g->pg, "INSERT INTO state(kind, id, org, node, ended,"
				   " updated_at, body) VALUES($1, $2, '', '', 0, $3, $4)"
				   " ON CONFLICT(kind, id) DO UPDATE SET body = excluded.body",
				   4, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		return pg_fail(g, r, "storing the link secret");
	PQclear(r);
	g->link_key = 1;
	return 0;
}

/* Step 2: every table in one transaction, refused unless the target is
 * empty; sequences moved past the copied ids; the marker last. */
static int meta_copy(mig *g)
{
	int64_t rows = 0;
	char sql[400], now[32];

	if (pg_run(g, "BEGIN", "starting the copy", NULL) ||
	    pg_run(g, "SELECT pg_advisory_xact_lock(7366113)", "locking the target", NULL) ||
	    pg_run(g, "SELECT (SELECT count(*) FROM keys) + (SELECT count(*) FROM volumes) +"
		   " (SELECT count(*) FROM blobs) + (SELECT count(*) FROM agents)",
		   "checking the target is empty", &rows))
		goto fail;
	if (rows) {
		cof_error(g->err, COF_ECONFLICT, "the target metadata database is not empty (%lld"
			  " keys, volumes, blobs and agents): migrate copies into an empty one",
			  (long long)rows);
		goto fail;
	}
	for (size_t t = 0; t < NTABLES; t++) {
		if (table_copy(g, t))
			goto fail;
		if (!tables[t].serial)
			continue;
		snprintf(sql, sizeof sql, "SELECT setval(pg_get_serial_sequence('%s', '%s'),"
			 " coalesce((SELECT max(%s) FROM %s), 0) + 1, false)", tables[t].name,
			 tables[t].serial, tables[t].serial, tables[t].name);
		if (pg_run(g, sql, "moving a sequence", NULL))
			goto fail;
	}
	if (link_key_copy(g))
		goto fail;
	snprintf(now, sizeof now, "%lld", (long long)cof_now());
	const char *p[3] = {MARK_SCOPE, g->from, now};
	PGresult *r = PQexecParams(g->pg, "INSERT INTO idem(scope, key, value, created_at)"
				   " VALUES($1, $2, '{}', $3)", 3, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		pg_fail(g, r, "recording the migration");
		goto fail;
	}
	PQclear(r);
	return pg_run(g, "COMMIT", "committing the copy", NULL);
fail:
	PQclear(PQexec(g->pg, "ROLLBACK"));
	return -1;
}

/* Step 3, counts: every table has as many rows in the target as in the
 * source (the marker row is the target's one more in idem, the link secret
 * its one more in state). */
static int counts_verify(mig *g, json_t *tabs)
{
	char sql[200];

	for (size_t t = 0; t < NTABLES; t++) {
		int64_t src = 0, dst = 0;
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", tables[t].name);
		if (sq_count(g, tables[t].name, &src) || pg_run(g, sql, "counting rows", &dst))
			return -1;
		if (!strcmp(tables[t].name, "idem"))
			dst--;
		if (!strcmp(tables[t].name, "state"))
			dst -= g->link_key;
		if (src != dst)
			return cof_error(g->err, COF_EINTERNAL, "verifying: table '%s' has %lld rows"
					 " in the source and %lld in the target", tables[t].name,
					 (long long)src, (long long)dst);
		json_object_set_new(tabs, tables[t].name, json_integer(src));
	}
	return 0;
}

/* DATA/lock taken as a cofferd takes it (store/lock.c): no server may
 * write to the source while it is copied. The fd, or -1. */
static int source_lock(mig *g, const char *from)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof path, "%s/lock", from);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return cof_error(g->err, COF_EINTERNAL, "cannot open '%s': %s", path,
				 strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return cof_error(g->err, COF_ECONFLICT, "data dir '%s' is in use by a cofferd:"
				 " stop it before migrating", from);
	}
	return fd;
}

/* Opens the source: an embedded dataset no cofferd serves (DATA/lock). */
static int source_open(mig *g, const char *from, int *lockfd)
{
	char path[4200];

	for (const char *f = "meta.url"; f; f = strcmp(f, "meta.url") ? NULL : "blobs.url") {
		snprintf(path, sizeof path, "%s/%s", from, f);
		if (access(path, F_OK) == 0)
			return cof_error(g->err, COF_EVALIDATION, "'%s' is not an embedded dataset:"
					 " it names its engines in %s", from, path);
	}
	snprintf(path, sizeof path, "%s/meta.db", from);
	if (access(path, R_OK) != 0)
		return cof_error(g->err, COF_EVALIDATION, "'%s' holds no embedded dataset (%s:"
				 " %s)", from, path, strerror(errno));
	if ((*lockfd = source_lock(g, from)) < 0)
		return -1;
	if (sqlite3_open_v2(path, &g->src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return sq_fail(g, "opening");
	sqlite3_busy_timeout(g->src, 10000);
	return cof_blobstore_local_open(from, &g->src_blobs, g->err);
}

int cof_store_migrate(const char *from, const char *meta, const char *blobs, json_t **out,
		      cof_err *err)
{
	mig g = {.from = from, .err = err};
	char scratch[PATH_MAX] = "";
	cof_meta *m = NULL;
	json_t *tabs = json_object();
	int lockfd = -1, rc = -1, again = 0;

	char *abs = realpath(from, NULL);   /* the marker names DATA however it was given */

	*out = NULL;
	if (abs)
		g.from = abs;
	if (cof_temp_dir("coffer-migrate", scratch, sizeof scratch)) {
		cof_error(err, COF_EINTERNAL, "cannot make a temp folder: %s", strerror(errno));
		scratch[0] = '\0';
		goto out;
	}
	if (source_open(&g, from, &lockfd) || table_check(&g) ||
	    cof_meta_pg_open(meta, &m, err) ||   /* creates the schema */
	    cof_blobstore_open_url(blobs, scratch, &g.dst_blobs, err))
		goto out;
	if (!(g.pg = PQconnectdb(meta)) || PQstatus(g.pg) != CONNECTION_OK) {
		pg_fail(&g, NULL, "connecting");
		goto out;
	}
	if ((again = marker_of(&g, g.from)) < 0)
		goto out;
	if (!again && (blobs_each(&g, blob_copy) || meta_copy(&g)))
		goto out;
	/* Once copied, the target is a dataset of its own that nodes may have
	 * changed since: a run again checks the content, not the row counts. */
	if ((!again && counts_verify(&g, tabs)) || blobs_each(&g, blob_check))
		goto out;
	*out = json_pack("{s:b, s:s, s:O, s:I, s:I, s:I, s:I}", "ok", 1, "from", g.from,
			 "tables", tabs, "blobs", (json_int_t)g.blobs, "blobsCopied",
			 (json_int_t)g.copied, "blobsPresent", (json_int_t)g.present,
			 "bytesCopied", (json_int_t)g.bytes);
	if (again)
		json_object_set_new(*out, "alreadyCopied", json_true());
	if (g.repaired)
		json_object_set_new(*out, "blobsRepaired", json_integer(g.repaired));
	rc = 0;
out:
	json_decref(tabs);
	if (g.pg)
		PQfinish(g.pg);
	cof_meta_close(m);
	if (g.dst_blobs)
		g.dst_blobs->close(g.dst_blobs);
	if (g.src_blobs)
		g.src_blobs->close(g.src_blobs);
	sqlite3_close(g.src);
	if (lockfd >= 0)
		close(lockfd);
	if (scratch[0])
		cof_rm_tree(scratch);
	free(abs);
	return rc;
}
