/*
 * store.c — opening a data dir: blob store, metadata store, admin key and the
 * signing secret for links; and API keys.
 */
#include <errno.h>
#include <fcntl.h>
#include <magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "store/contents.h"
#include "store/store.h"
#include <jansson.h>
#include "util/util.h"


/* Reads a small secret file, or creates it with `len` random bytes (hex when
 * `hex`), mode 0600. Returns 1 when created, 0 when read, -1 on error. */
static int secret_file(const char *dir, const char *name, char *out, size_t len,
		       int hex, cof_err *err)
{
	char path[4200];
	unsigned char raw[64];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, out, hex ? 2 * len : len);
		close(fd);
		if (n != (ssize_t)(hex ? 2 * len : len))
			return cof_error(err, COF_EINTERNAL, "'%s' is damaged", path);
		if (hex)
			out[2 * len] = '\0';
		return 0;
	}
	if (errno != ENOENT || len > sizeof raw || cof_random(raw, len))
		return cof_error(err, COF_EINTERNAL, "cannot read '%s': %s", path, strerror(errno));
	if (hex)
		cof_hex(raw, len, out);
	else
		memcpy(out, raw, len);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t n = hex ? 2 * len : len;
	if (fd < 0 || write(fd, out, n) != (ssize_t)n || fsync(fd) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		unlink(path);
		return cof_error(err, COF_EINTERNAL, "cannot write '%s': %s", path, strerror(e));
	}
	close(fd);
	return 1;
}

static void key_hash(const char *key, char out[65])
{
	cof_sha256_hex(key, strlen(key), out);
}

/* Reads the admin key file `path` into st->admin_key: 1 read, 0 absent, -1
 * damaged or unreadable. */
static int admin_key_read(cof_store *st, const char *path, cof_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? 0 : cof_error(err, COF_EINTERNAL, "cannot read '%s': %s",
						       path, strerror(errno));
	ssize_t n = read(fd, st->admin_key, sizeof st->admin_key - 1);
	close(fd);
	while (n > 0 && (st->admin_key[n - 1] == '\n' || st->admin_key[n - 1] == ' '))
		n--;
	if (n < 16)
		return cof_error(err, COF_EINTERNAL, "'%s' is damaged", path);
	st->admin_key[n] = '\0';
	return 1;
}

/* A new random admin key in st->admin_key, written to `path` (mode 0600, the
 * key as printed, so `cat admin.key` is usable) and synced. */
static int admin_key_make(cof_store *st, const char *path, cof_err *err)
{
	unsigned char raw[24];
	char hex[49];
	int fd;

	if (cof_random(raw, sizeof raw))
		return cof_error(err, COF_EINTERNAL, "cannot make the admin key: no randomness");
	cof_hex(raw, sizeof raw, hex);
	snprintf(st->admin_key, sizeof st->admin_key, "ck_%s", hex);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t n = strlen(st->admin_key);
	if (fd < 0 || cof_write_full(fd, st->admin_key, n) < 0 ||
	    cof_write_full(fd, "\n", 1) < 0 || fsync(fd) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		unlink(path);
		return cof_error(err, COF_EINTERNAL, "cannot write '%s': %s", path, strerror(e));
	}
	close(fd);
	return 0;
}

/* On a dataset other nodes may share (its metadata named by a URL), with no
 * DATA/admin.key: this node makes the dataset's admin key only if it has none
 * (key_add_first_admin, one winner among nodes starting together); else it
 * uses the dataset's keys as they are and keeps no admin key (""). The new
 * key goes to admin.key.new first and is renamed once registered: a crash
 * between leaves a file that the next start renames (registered) or drops. */
static int admin_key_adopt(cof_store *st, const char *path, cof_err *err)
{
	char tmp[4300], hash[65];
	cof_keyrow seen;
	cof_err e2 = {0};
	int r;

	snprintf(tmp, sizeof tmp, "%s.new", path);
	if ((r = admin_key_read(st, tmp, err)) < 0)
		return -1;
	key_hash(st->admin_key, hash);
	if (r == 1 && cof_meta_key_find(st->meta, hash, &seen, &e2) == 0) {
		st->admin_key_new = 1;   /* registered by the start that crashed */
		goto keep;
	}
	cof_err_clear(&e2);
	if (admin_key_make(st, tmp, err))
		return -1;
	key_hash(st->admin_key, hash);
	if ((r = cof_key_register_first_admin(st, hash, err)) < 0) {
		unlink(tmp);
		return -1;
	}
	if (r == 0) {   /* a node before this one made it */
		unlink(tmp);
		st->admin_key[0] = '\0';
		return 0;
	}
	st->admin_key_new = 1;
keep:
	if (rename(tmp, path) < 0)
		return cof_error(err, COF_EINTERNAL, "cannot write '%s': %s", path,
				 strerror(errno));
	return 0;
}

/* Reads DATA/admin.key and registers its hash when the dataset lacks it;
 * without the file, makes one (admin_key_adopt when `shared`: the dataset's
 * metadata is named by a URL and may have other nodes). */
static int admin_key_setup(cof_store *st, int shared, cof_err *err)
{
	char path[4200], hash[65];
	int r;

	snprintf(path, sizeof path, "%s/admin.key", st->dir);
	if ((r = admin_key_read(st, path, err)) < 0)
		return -1;
	if (r == 0 && shared)
		return admin_key_adopt(st, path, err);
	if (r == 0) {
		char tmp[4300];
		snprintf(tmp, sizeof tmp, "%s.new", path);
		if (admin_key_make(st, tmp, err))
			return -1;
		if (rename(tmp, path) < 0)
			return cof_error(err, COF_EINTERNAL, "cannot write '%s': %s", path,
					 strerror(errno));
		st->admin_key_new = 1;
	}
	key_hash(st->admin_key, hash);
	cof_keyrow seen;
	cof_err e2 = {0};
	if (cof_meta_key_find(st->meta, hash, &seen, &e2) == 0)
		return 0;
	cof_err_clear(&e2);
	return cof_key_register(st, hash, COF_DEFAULT_ORG, 1, err);
}

/* The admin key's S3 secret (s3keys.c), sealed once it is known here. */
static void admin_key_s3(cof_store *st)
{
	cof_principal who = {0};
	char hash[65];

	if (!st->admin_key[0])
		return;
	key_hash(st->admin_key, hash);
	snprintf(who.key_id, sizeof who.key_id, "k_%.16s", hash);
	snprintf(who.org, sizeof who.org, "%s", COF_DEFAULT_ORG);
	cof_key_s3_ensure(st, &who, st->admin_key);
}

/* Decodes the 2*len hex digits at `hex` into out[len]: 0, or -1 if any is
 * not a hex digit. */
static int unhex(const char *hex, unsigned char *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned v = 0;
		for (int j = 0; j < 2; j++) {
			char ch = hex[2 * i + j];
			int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ?
				ch - 'a' + 10 : -1;
			if (d < 0)
				return -1;
			v = v << 4 | (unsigned)d;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

/* See store.h: the body of the dataset's link secret record. */
int cof_link_secret_body(const unsigned char *secret, size_t len, char *out, size_t cap)
{
	char hex[129];

	if (len > 64 || cap < 2 * len + 16)
		return -1;
	cof_hex(secret, len, hex);
	snprintf(out, cap, "{\"secret\":\"%s\"}", hex);
	return 0;
}

/* On a dataset other nodes may share: the signing secret of links is the
 * dataset's, stored once in the metadata (state record dataset/link.key), so
 * a link signed on one node verifies on every node. The first node to start
 * stores its DATA/link.key when it has one (links it signed before stay
 * valid), else a random secret; nodes starting together store one between
 * them (state_add); every node then uses the stored one. */
static int link_secret_shared(cof_store *st, cof_err *err)
{
	unsigned char *sec = st->link_secret;
	size_t len = sizeof st->link_secret;
	char path[4200], body[160];
	cof_staterow row = {.kind = COF_LINK_KIND, .id = COF_LINK_ID};
	int fd, r;

	snprintf(path, sizeof path, "%s/link.key", st->dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		ssize_t n = read(fd, sec, len);
		close(fd);
		if (n != (ssize_t)len)
			return cof_error(err, COF_EINTERNAL, "'%s' is damaged", path);
	} else if (errno != ENOENT || cof_random(sec, len)) {
		return cof_error(err, COF_EINTERNAL, "cannot read '%s': %s", path,
				 strerror(errno));
	}
	cof_link_secret_body(sec, len, body, sizeof body);
	row.body = body;
	if ((r = cof_meta_state_add(st->meta, &row, err)) < 0 ||
	    (r == 0 && cof_meta_state_get(st->meta, COF_LINK_KIND, COF_LINK_ID, &row, err) < 0))
		return -1;
	if (r == 1)
		return 0;
	json_t *j = row.body ? json_loads(row.body, 0, NULL) : NULL;
	const char *hex = json_string_value(json_object_get(j, "secret"));
	r = hex && strlen(hex) == 2 * len && !unhex(hex, sec, len) ? 0
		: cof_error(err, COF_EINTERNAL, "the dataset's link secret (state record"
			    " %s/%s) is damaged", COF_LINK_KIND, COF_LINK_ID);
	json_decref(j);
	free(row.body);
	return r;
}

/* The engine URL `name` (meta.url, blobs.url) a node recorded in its data
 * dir, into *out (malloc'd), or NULL when none (the embedded default). */
static int engine_url_read(const char *dir, const char *name, char **out, cof_err *err)
{
	char path[4200], line[4096];
	cof_buf b = COF_BUF_INIT;
	FILE *f;

	*out = NULL;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!(f = fopen(path, "re")))
		return errno == ENOENT ? 0 : cof_error(err, COF_EINTERNAL, "cannot read '%s': %s",
						       path, strerror(errno));
	if (fgets(line, sizeof line, f))
		cof_buf_adds(&b, line);
	fclose(f);
	while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == ' '))
		b.data[--b.len] = '\0';
	if (!b.len) {
		cof_buf_release(&b);
		return cof_error(err, COF_EINTERNAL, "'%s' is damaged (empty)", path);
	}
	*out = cof_buf_detach(&b, NULL);
	return 0;
}

/* Records a URL given to a node in its data dir (mode 0600: it may hold a
 * password), once the store opened on it, so that a restart without the flag
 * and `coffer gc/fsck --data DIR` open the same dataset, never an empty
 * SQLite store beside it. */
static int engine_url_write(const char *dir, const char *name, const char *url,
			    cof_err *err)
{
	char path[4200], tmp[4300];
	size_t n = strlen(url);
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, url, n) != (ssize_t)n || write(fd, "\n", 1) != 1 ||
	    fsync(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		return cof_error(err, COF_EINTERNAL, "cannot write '%s': %s", path, strerror(e));
	}
	close(fd);
	return 0;
}

/* The hub that wakes waiters (notify.h): on PostgreSQL one that hears every
 * node's changes (notify_pg.c), else in process. Offline tools wait for
 * nothing: in process. */
static int store_notify_open(cof_store *st, const char *meta_url, cof_err *err)
{
	if (!st->opts.tool && meta_url && st->meta->ops->remote)
		return cof_notify_pg_open(meta_url, &st->notify, err);
	return cof_notify_local_open(&st->notify, err);
}

int cof_store_open(const char *dir, const cof_store_opts *opts, cof_store **out,
		   cof_err *err)
{
	char *meta_url = NULL, *blobs_url = NULL;
	cof_store *st = cof_calloc(1, sizeof *st);
	char file[4200];

	if (!st || !(st->dir = cof_strdup(dir))) {
		free(st);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	if (opts)
		st->opts = *opts;
	if (st->opts.gc_grace_seconds <= 0)
		st->opts.gc_grace_seconds = 24 * 3600;
	if (st->opts.history_seconds <= 0)
		st->opts.history_seconds = 7 * 24 * 3600;
	st->gc_fd = st->serve_fd = -1;
	pthread_mutex_init(&st->events_mu, NULL);
	pthread_mutex_init(&st->magic_mu, NULL);
	pthread_cond_init(&st->magic_cv, NULL);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		cof_error(err, COF_EINTERNAL, "cannot create '%s': %s", dir, strerror(errno));
		goto fail;
	}
	if (cof_store_locks_open(st, st->opts.serve, err))
		goto fail;
	snprintf(file, sizeof file, "%s/meta.db", dir);
	/* A URL given wins; else the one this dir's node was last started with. */
	if ((!st->opts.meta_url && engine_url_read(dir, "meta.url", &meta_url, err)) ||
	    (!st->opts.blobs_url && engine_url_read(dir, "blobs.url", &blobs_url, err)))
		goto fail;
	const char *mu = st->opts.meta_url ? st->opts.meta_url : meta_url;
	const char *bu = st->opts.blobs_url ? st->opts.blobs_url : blobs_url;
	int shared = mu != NULL;   /* other nodes may share the dataset */
	if (cof_blobstore_open_url(bu, dir, &st->blobs, err) ||
	    cof_meta_open(mu ? mu : file, &st->meta, err) || store_notify_open(st, mu, err))
		goto fail;
	cof_meta_keep_contents(st->meta, st->opts.content_cache);
	if (!st->opts.tool &&
	    ((st->opts.meta_url && engine_url_write(dir, "meta.url", st->opts.meta_url, err)) ||
	     (st->opts.blobs_url && engine_url_write(dir, "blobs.url", st->opts.blobs_url, err))))
		goto fail;
	/* the URLs are the caller's: keep nothing that points at them */
	st->opts.meta_url = st->opts.blobs_url = NULL;
	free(meta_url);
	free(blobs_url);
	meta_url = blobs_url = NULL;
	if ((shared ? link_secret_shared(st, err)
	     : secret_file(dir, "link.key", (char *)st->link_secret, sizeof st->link_secret, 0,
			   err)) < 0 || (!st->opts.tool && admin_key_setup(st, shared, err)))
		goto fail;
	if (!st->opts.tool)
		admin_key_s3(st);
	/* the files made above (meta.db, the keys, the locks) are entries of DATA */
	if (cof_fsync_dir(dir) < 0) {
		cof_error(err, COF_EINTERNAL, "cannot sync '%s': %s", dir, strerror(errno));
		goto fail;
	}
	*out = st;
	return 0;
fail:
	free(meta_url);
	free(blobs_url);
	cof_store_close(st);
	return -1;
}

void *cof_store_magic_take(cof_store *st)
{
	magic_t m = NULL;

	pthread_mutex_lock(&st->magic_mu);
	while (!st->magic_broken && !st->magic_nfree && st->magic_open >= COF_MAGIC_MAX)
		pthread_cond_wait(&st->magic_cv, &st->magic_mu);
	if (st->magic_nfree) {
		m = st->magic_free[--st->magic_nfree];
	} else if (!st->magic_broken) {
		st->magic_open++; /* counted before the load, which runs unlocked */
		pthread_mutex_unlock(&st->magic_mu);
		m = magic_open(MAGIC_MIME_TYPE);
		if (m && magic_load(m, NULL) != 0) {
			magic_close(m);
			m = NULL;
		}
		pthread_mutex_lock(&st->magic_mu);
		if (!m) {
			st->magic_open--;
			st->magic_broken = 1; /* no database: nobody waits for one */
			pthread_cond_broadcast(&st->magic_cv);
		}
	}
	pthread_mutex_unlock(&st->magic_mu);
	return m;
}

void cof_store_magic_give(cof_store *st, void *magic)
{
	if (!magic)
		return;
	pthread_mutex_lock(&st->magic_mu);
	st->magic_free[st->magic_nfree++] = magic;
	pthread_cond_signal(&st->magic_cv);
	pthread_mutex_unlock(&st->magic_mu);
}

void cof_store_close(cof_store *st)
{
	if (!st)
		return;
	cof_meta_close(st->meta);
	if (st->blobs)
		st->blobs->close(st->blobs);
	for (int i = 0; i < st->magic_nfree; i++)
		magic_close(st->magic_free[i]);
	cof_store_locks_close(st);
	cof_notify_close(st->notify);
	pthread_mutex_destroy(&st->events_mu);
	pthread_mutex_destroy(&st->magic_mu);
	pthread_cond_destroy(&st->magic_cv);
	free(st->dir);
	free(st);
}

void cof_store_content_cache_stats(cof_store *st, cof_content_cache_stats *out)
{
	cof_contents_stats s;

	cof_contents_stats_get(st->meta->contents, &s);
	out->hits = (int64_t)s.hits;
	out->misses = (int64_t)s.misses;
	out->kept = (int64_t)s.kept;
	out->bytes = (int64_t)s.kept_bytes;
}

const char *cof_store_admin_key(cof_store *st)
{
	return st->admin_key;
}

int cof_store_admin_key_is_new(cof_store *st)
{
	return st->admin_key_new;
}

int cof_store_remote(const cof_store *st)
{
	return st->meta->ops->remote || st->blobs->remote;
}

void cof_store_changed(cof_store *st, const cof_volrow *v)
{
	cof_topic t = cof_topic_volume(v->org, v->id);

	cof_notify_publish(st->notify, &t);
	void (*fn)(void *, const cof_volrow *) = __atomic_load_n(&st->on_changed,
								   __ATOMIC_ACQUIRE);
	if (fn)
		fn(st->on_changed_ctx, v);
}

void cof_store_on_changed(cof_store *st, void (*fn)(void *ctx, const cof_volrow *v),
			  void *ctx)
{
	st->on_changed_ctx = ctx;
	__atomic_store_n(&st->on_changed, fn, __ATOMIC_RELEASE);
}

void cof_changes_wake_all(cof_store *st)
{
	cof_notify_shutdown(st->notify);
}
