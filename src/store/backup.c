/*
 * backup.c — `coffer backup DATA DEST` and `coffer restore BACKUP DATA`: an
 * embedded dataset copied into an empty folder (docs/design.md, "Backups").
 *
 * The metadata is copied first, with SQLite's online backup API in ONE step
 * from a read-only connection: one read transaction, so one consistent
 * snapshot even while a cofferd commits through its WAL. Then every blob that
 * snapshot keeps in the blob store is copied with the same layout, its sha256
 * checked while it is read, each file fsynced and renamed into place, each
 * folder fsynced. A blob the snapshot names cannot vanish meanwhile unless
 * the collector deleted it, which it does only a grace period (--gc-grace)
 * after the content stopped being referred to: a referenced blob that is gone
 * fails the backup, saying so. Content the snapshot already had as orphaned
 * may be collected during the copy: its row is dropped from the copy, as the
 * collector would have.
 *
 * Restore is the same copy from a backup into an empty data dir, with
 * DATA/lock held as a cofferd holds it, so no server starts on a half-copied
 * dir; the caller (cof_restore, volume/migrate.c) runs fsck of the result.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "store/store.h"
#include "util/util.h"

#define CHUNK (1 << 20)

/* What a dataset's dir holds besides meta.db and blobs/ that a cofferd reads
 * at start (store.c): the admin key and the link signing secret. Locks, tmp/
 * and the WAL's files are not part of a dataset. */
static const char *const extra_files[] = {"admin.key", "link.key"};

typedef struct bk {
	const char *from, *to, *what;    /* what: "backup" or "restore" */
	sqlite3 *db;                     /* the copy's meta.db */
	int64_t files, blobs, bytes, dropped;
	unsigned char *buf;
	char dirs_done[256];             /* blobs/<xx> folders made (and to fsync) */
	cof_err *err;
} bk;

/* 0 when `dir` has no entries or does not exist (made then, mode 0700). */
static int empty_dir(bk *g, const char *dir, int *made)
{
	DIR *d;
	struct dirent *e;

	*made = 0;
	if (mkdir(dir, 0700) == 0) {
		*made = 1;
		return 0;
	}
	if (errno != EEXIST)
		return cof_error(g->err, COF_EVALIDATION, "cannot make '%s': %s", dir,
				 strerror(errno));
	if (!(d = opendir(dir)))
		return cof_error(g->err, COF_EVALIDATION, "'%s' exists and is not a folder this"
				 " can use: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			closedir(d);
			return cof_error(g->err, COF_ECONFLICT, "'%s' is not empty: %s writes only"
					 " into an empty or new folder", dir, g->what);
		}
	closedir(d);
	return 0;
}

/* The source must be an embedded dataset: engines elsewhere have their tools. */
static int source_check(bk *g)
{
	char path[PATH_MAX];

	for (int i = 0; i < 2; i++) {
		const char *f = i ? "blobs.url" : "meta.url";
		snprintf(path, sizeof path, "%s/%s", g->from, f);
		if (access(path, F_OK) == 0)
			return cof_error(g->err, COF_EVALIDATION, "'%s' is not an embedded dataset"
					 " (it names its engines in %s): back up PostgreSQL and the"
					 " blob store with their own tools, see docs/design.md"
					 " \"Backups\"", g->from, path);
	}
	snprintf(path, sizeof path, "%s/meta.db", g->from);
	if (access(path, R_OK) != 0)
		return cof_error(g->err, COF_EVALIDATION, "'%s' holds no embedded dataset (%s: %s)",
				 g->from, path, strerror(errno));
	return 0;
}

/* Step 1: the metadata, one snapshot; its max seq and volume count. */
static int meta_copy(bk *g, json_t *rep)
{
	char src_path[PATH_MAX], dst_path[PATH_MAX];
	sqlite3 *src = NULL;
	sqlite3_backup *b;
	sqlite3_stmt *st;
	int rc;

	snprintf(src_path, sizeof src_path, "%s/meta.db", g->from);
	snprintf(dst_path, sizeof dst_path, "%s/meta.db", g->to);
	if (sqlite3_open_v2(src_path, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = cof_error(g->err, COF_EINTERNAL, "cannot open '%s': %s", src_path,
			       src ? sqlite3_errmsg(src) : "out of memory");
		sqlite3_close(src);
		return rc;
	}
	sqlite3_busy_timeout(src, 10000);
	/* made 0600 first: SQLite would make it by the umask */
	int fd = open(dst_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	if (sqlite3_open_v2(dst_path, &g->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
			    NULL) != SQLITE_OK) {
		sqlite3_close(src);
		return cof_error(g->err, COF_EINTERNAL, "cannot make '%s': %s", dst_path,
				 g->db ? sqlite3_errmsg(g->db) : "out of memory");
	}
	sqlite3_busy_timeout(g->db, 10000);
	/* step(-1): every page under one read transaction of the source */
	if (!(b = sqlite3_backup_init(g->db, "main", src, "main"))) {
		rc = cof_error(g->err, COF_EINTERNAL, "copying '%s': %s", src_path,
			       sqlite3_errmsg(g->db));
		sqlite3_close(src);
		return rc;
	}
	rc = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE) {
		rc = cof_error(g->err, rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? COF_EUNAVAILABLE
			       : COF_EINTERNAL, "copying '%s': %s", src_path, sqlite3_errstr(rc));
		sqlite3_close(src);
		return rc;
	}
	sqlite3_close(src);
	/* the copy is a plain rollback-journal file until a cofferd opens it */
	if (sqlite3_exec(g->db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(g->db, "SELECT count(*), coalesce(max(seq), 0) FROM volumes", -1,
			       &st, NULL) != SQLITE_OK)
		return cof_error(g->err, COF_EINTERNAL, "reading the copied metadata: %s",
				 sqlite3_errmsg(g->db));
	if (sqlite3_step(st) == SQLITE_ROW) {
		json_object_set_new(rep, "volumes", json_integer(sqlite3_column_int64(st, 0)));
		json_object_set_new(rep, "maxSeq", json_integer(sqlite3_column_int64(st, 1)));
	}
	sqlite3_finalize(st);
	g->files++;
	return 0;
}

/* Copies `src` to `dst` (via dst.tmp, fsynced, renamed); with `sha`, the bytes
 * must hash to it and be `size` long. ENOENT of the source: 1, nothing made. */
static int file_copy(bk *g, const char *src, const char *dst, const char *sha, int64_t size)
{
	char tmp[PATH_MAX + 8], got[65];
	unsigned char md[32];
	unsigned int mdlen = 0;
	int in, out, rc = 0;
	int64_t total = 0;
	ssize_t n;
	EVP_MD_CTX *ctx = NULL;

	if ((in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		if (errno == ENOENT)
			return 1;
		return cof_error(g->err, COF_EINTERNAL, "cannot read '%s': %s", src,
				 strerror(errno));
	}
	snprintf(tmp, sizeof tmp, "%s.tmp", dst);
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		close(in);
		return cof_error(g->err, COF_EINTERNAL, "cannot write '%s': %s", tmp,
				 strerror(errno));
	}
	if (sha && (!(ctx = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)))
		rc = cof_error(g->err, COF_EINTERNAL, "out of memory");
	while (!rc && (n = read(in, g->buf, CHUNK)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = cof_error(g->err, COF_EINTERNAL, "cannot read '%s': %s", src,
				       strerror(errno));
			break;
		}
		if (ctx)
			EVP_DigestUpdate(ctx, g->buf, (size_t)n);
		if (cof_write_full(out, g->buf, (size_t)n) < 0)
			rc = cof_error(g->err, COF_EINTERNAL, "cannot write '%s': %s", tmp,
				       strerror(errno));
		total += n;
	}
	close(in);
	if (!rc && ctx) {
		EVP_DigestFinal_ex(ctx, md, &mdlen);
		cof_hex(md, 32, got);
		if (strcmp(got, sha) || total != size)
			rc = cof_error(g->err, COF_EINTERNAL, "'%s' is damaged: %lld bytes hashing"
				       " to %s, not %lld bytes of %s; run coffer fsck --data %s", src,
				       (long long)total, got, (long long)size, sha, g->from);
	}
	EVP_MD_CTX_free(ctx);
	if (!rc && fsync(out) < 0)
		rc = cof_error(g->err, COF_EINTERNAL, "cannot sync '%s': %s", tmp, strerror(errno));
	close(out);
	if (!rc && rename(tmp, dst) < 0)
		rc = cof_error(g->err, COF_EINTERNAL, "cannot rename '%s': %s", tmp,
			       strerror(errno));
	if (rc)
		unlink(tmp);
	else
		g->bytes += total;
	return rc;
}

static int sync_dir(bk *g, const char *dir)
{
	if (cof_fsync_dir(dir) < 0)
		return cof_error(g->err, COF_EINTERNAL, "cannot sync '%s': %s", dir,
				 strerror(errno));
	return 0;
}

/* The folder blobs/<xx> of the copy, made once. */
static int blob_dir(bk *g, const char *sha)
{
	char path[PATH_MAX];
	int i = (int)strtol((char[3]){sha[0], sha[1], 0}, NULL, 16) & 255;

	if (g->dirs_done[i])
		return 0;
	snprintf(path, sizeof path, "%s/blobs/%.2s", g->to, sha);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return cof_error(g->err, COF_EINTERNAL, "cannot make '%s': %s", path,
				 strerror(errno));
	g->dirs_done[i] = 1;
	return 0;
}

static int hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* Step 2: every blob the copied metadata keeps outside it. */
static int blobs_copy(bk *g)
{
	char path[PATH_MAX], src[PATH_MAX], dst[PATH_MAX];
	sqlite3_stmt *st, *drop;
	int rc = 0;

	snprintf(path, sizeof path, "%s/blobs", g->to);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return cof_error(g->err, COF_EINTERNAL, "cannot make '%s': %s", path,
				 strerror(errno));
	if (sqlite3_prepare_v2(g->db, "SELECT sha256, size, orphan_since IS NOT NULL FROM blobs"
			       " WHERE data IS NULL ORDER BY sha256", -1, &st, NULL) != SQLITE_OK)
		return cof_error(g->err, COF_EINTERNAL, "listing blobs: %s", sqlite3_errmsg(g->db));
	if (sqlite3_prepare_v2(g->db, "DELETE FROM blobs WHERE sha256 = ?", -1, &drop, NULL)
	    != SQLITE_OK) {
		sqlite3_finalize(st);
		return cof_error(g->err, COF_EINTERNAL, "listing blobs: %s", sqlite3_errmsg(g->db));
	}
	/* the deletes of vanished orphans go in one transaction, after the reads */
	sqlite3_exec(g->db, "BEGIN", NULL, NULL, NULL);
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		const char *sha = (const char *)sqlite3_column_text(st, 0);
		int64_t size = sqlite3_column_int64(st, 1);
		int orphan = sqlite3_column_int(st, 2);

		if (!hex64(sha)) {
			rc = cof_error(g->err, COF_EINTERNAL, "the metadata of '%s' names content"
				       " '%.80s', not a sha256", g->from, sha ? sha : "");
			break;
		}
		snprintf(src, sizeof src, "%s/blobs/%.2s/%s", g->from, sha, sha + 2);
		snprintf(dst, sizeof dst, "%s/blobs/%.2s/%s", g->to, sha, sha + 2);
		if ((rc = blob_dir(g, sha)))
			break;
		rc = file_copy(g, src, dst, sha, size);
		if (rc == 1 && orphan) {
			/* unreferenced already: the collector took it, as it may */
			sqlite3_bind_text(drop, 1, sha, -1, SQLITE_TRANSIENT);
			if (sqlite3_step(drop) != SQLITE_DONE)
				rc = cof_error(g->err, COF_EINTERNAL, "dropping a collected blob's"
					       " row: %s", sqlite3_errmsg(g->db));
			else
				rc = 0;
			sqlite3_reset(drop);
			g->dropped++;
			continue;
		}
		if (rc == 1)
			rc = cof_error(g->err, COF_EUNAVAILABLE, "content %s named by the %s's"
				       " metadata snapshot vanished from '%s' while it was copied:"
				       " the collector deletes content only a grace period"
				       " (--gc-grace, default 24 h) after nothing refers to it, so"
				       " this %s ran longer than the grace; run it again, or with a"
				       " longer --gc-grace on the cofferd", sha, g->what, src, g->what);
		if (!rc)
			g->blobs++;
	}
	sqlite3_finalize(st);
	sqlite3_finalize(drop);
	if (sqlite3_exec(g->db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK &&
	    !rc)
		rc = cof_error(g->err, COF_EINTERNAL, "updating the copied metadata: %s",
			       sqlite3_errmsg(g->db));
	for (int i = 0; !rc && i < 256; i++)
		if (g->dirs_done[i]) {
			snprintf(path, sizeof path, "%s/blobs/%02x", g->to, i);
			rc = sync_dir(g, path);
		}
	snprintf(path, sizeof path, "%s/blobs", g->to);
	return rc ? rc : sync_dir(g, path);
}

/* Step 3: the keys; a source without one has none to copy. */
static int extras_copy(bk *g)
{
	char src[PATH_MAX], dst[PATH_MAX];

	for (size_t i = 0; i < sizeof extra_files / sizeof *extra_files; i++) {
		snprintf(src, sizeof src, "%s/%s", g->from, extra_files[i]);
		snprintf(dst, sizeof dst, "%s/%s", g->to, extra_files[i]);
		int rc = file_copy(g, src, dst, NULL, 0);
		if (rc < 0)
			return rc;
		if (rc == 0)
			g->files++;
	}
	return 0;
}

/* DATA/lock of the restore target, taken as a cofferd takes it. -1 when a
 * cofferd holds it (naming the pid), else the fd. */
static int target_lock(bk *g)
{
	char path[PATH_MAX], pid[32] = "";
	int fd;

	snprintf(path, sizeof path, "%s/lock", g->to);
	if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return errno == ENOENT ? -2 : cof_error(g->err, COF_EINTERNAL, "cannot open '%s':"
							" %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		return cof_error(g->err, COF_ECONFLICT, "data dir '%s' is in use by a cofferd"
				 " (pid %s): restore never writes over a live dataset (its"
				 " server would keep serving what it has in memory and the"
				 " copy would mix two datasets); stop it and restore into a new or"
				 " empty dir", g->to, pid[0] ? pid : "unknown");
	}
	return fd;
}

/* Removes what a failed run made in `to` (the folder too when it made it). */
static void undo(bk *g, int made)
{
	char path[PATH_MAX];
	const char *mine[] = {"meta.db", "meta.db-journal", "admin.key", "link.key",
			      "admin.key.tmp", "link.key.tmp", "lock"};

	for (size_t i = 0; i < sizeof mine / sizeof *mine; i++) {
		snprintf(path, sizeof path, "%s/%s", g->to, mine[i]);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/blobs", g->to);
	cof_rm_tree(path);
	if (made)
		rmdir(g->to);
}

int cof_store_backup(const char *from, const char *to, int restore, json_t **out,
		     cof_err *err)
{
	bk g = {.from = from, .to = to, .what = restore ? "restore" : "backup", .err = err};
	json_t *rep = json_object();
	int made = 0, lockfd = -1, rc = -1;
	char path[PATH_MAX];

	*out = NULL;
	if (strlen(from) > PATH_MAX - 100 || strlen(to) > PATH_MAX - 100) {
		cof_error(err, COF_EVALIDATION, "a path longer than %d bytes", PATH_MAX - 100);
		goto fail;
	}
	if (source_check(&g))
		goto fail;
	if (restore && (lockfd = target_lock(&g)) == -1)
		goto fail;
	if (lockfd >= 0) {
		/* a lock nobody holds: a stopped cofferd's dir, not an empty one */
		close(lockfd);
		lockfd = -1;
	}
	if (empty_dir(&g, to, &made))
		goto fail;
	if (restore) {
		/* held until the restored dir is complete: no cofferd starts on it */
		snprintf(path, sizeof path, "%s/lock", to);
		if ((lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 ||
		    flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
			cof_error(err, COF_ECONFLICT, "cannot lock '%s': %s", path, strerror(errno));
			goto undo;
		}
	}
	if (!(g.buf = malloc(CHUNK))) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto undo;
	}
	if (meta_copy(&g, rep) || blobs_copy(&g) || extras_copy(&g))
		goto undo;
	if (sqlite3_close(g.db) != SQLITE_OK) {
		cof_error(err, COF_EINTERNAL, "closing the copied metadata failed");
		goto undo;
	}
	g.db = NULL;
	snprintf(path, sizeof path, "%s/meta.db", to);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0) {
		cof_error(err, COF_EINTERNAL, "cannot sync '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto undo;
	}
	close(fd);
	if (sync_dir(&g, to))
		goto undo;
	json_object_set_new(rep, "ok", json_true());
	json_object_set_new(rep, "from", json_string(from));
	json_object_set_new(rep, "to", json_string(to));
	json_object_set_new(rep, "files", json_integer(g.files));
	json_object_set_new(rep, "blobs", json_integer(g.blobs));
	json_object_set_new(rep, "bytes", json_integer(g.bytes));
	if (g.dropped)
		json_object_set_new(rep, "collectedMeanwhile", json_integer(g.dropped));
	*out = rep;
	rep = NULL;
	rc = 0;
	goto out;
undo:
	sqlite3_close(g.db);
	g.db = NULL;
	undo(&g, made);
fail:
out:
	sqlite3_close(g.db);
	if (lockfd >= 0)
		close(lockfd);
	free(g.buf);
	json_decref(rep);
	return rc;
}
