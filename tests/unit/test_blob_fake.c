/*
 * test_blob_fake.c — nothing above the blob interface needs a file
 * descriptor: a store whose blobs live in an in-memory fake backend (its
 * readers have no fd, as S3's will not) writes, reads at offsets, reads all,
 * archives, checks (fsck) and collects (gc) exactly as with the local one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "coffer.h"
#include "store/store.h"

#define ORG "org_default"
#define NBLOBS 16

/* ---- the fake backend: up to NBLOBS blobs in memory */
typedef struct fake {
	cof_blobstore base;
	struct { char sha[65]; unsigned char *data; size_t len; } v[NBLOBS];
	int opens, reads;
} fake;

struct cof_blob_writer {
	fake *f;
	cof_buf b;
};

typedef struct fake_reader {
	cof_blob_reader base;
	fake *f;
	int i;
} fake_reader;

static int fake_begin(cof_blobstore *bs, cof_blob_writer **out, cof_err *err)
{
	*out = calloc(1, sizeof **out);
	(*out)->f = (fake *)bs;
	return 0;
}

static int fake_write(cof_blob_writer *w, const void *data, size_t len, cof_err *err)
{
	return cof_buf_add(&w->b, data, len) ? cof_error(err, COF_EINTERNAL, "oom") : 0;
}

static int fake_find(fake *f, const char *sha)
{
	for (int i = 0; i < NBLOBS; i++)
		if (f->v[i].data && !strcmp(f->v[i].sha, sha))
			return i;
	return -1;
}

static int fake_commit(cof_blob_writer *w, char sha[65], int64_t *size, cof_err *err)
{
	fake *f = w->f;
	int i;

	cof_sha256_hex(w->b.data ? w->b.data : "", w->b.len, sha);
	*size = (int64_t)w->b.len;
	if (fake_find(f, sha) < 0) {
		for (i = 0; i < NBLOBS && f->v[i].data; i++)
			;
		assert_true(i < NBLOBS);
		snprintf(f->v[i].sha, sizeof f->v[i].sha, "%s", sha);
		f->v[i].len = w->b.len;
		f->v[i].data = (unsigned char *)cof_buf_detach(&w->b, NULL);
	}
	cof_buf_release(&w->b);
	free(w);
	return 0;
}

static void fake_abort(cof_blob_writer *w)
{
	if (w)
		cof_buf_release(&w->b);
	free(w);
}

/* Reads in pieces of at most 1000 bytes, so callers must loop. */
static int fake_read_at(cof_blob_reader *r, int64_t off, void *buf, size_t len, size_t *got,
			cof_err *err)
{
	fake_reader *fr = (fake_reader *)r;
	size_t n = fr->f->v[fr->i].len;

	fr->f->reads++;
	*got = 0;
	if ((size_t)off >= n)
		return 0;
	*got = n - (size_t)off < len ? n - (size_t)off : len;
	if (*got > 1000)
		*got = 1000;
	memcpy(buf, fr->f->v[fr->i].data + off, *got);
	return 0;
}

static int fake_fd(cof_blob_reader *r)
{
	return -1;
}

static void fake_reader_close(cof_blob_reader *r)
{
	free(r);
}

static const cof_blob_reader_ops fake_reader_ops = {fake_read_at, fake_fd, fake_reader_close};

static int fake_open(cof_blobstore *bs, const char *sha, cof_blob_reader **out, int64_t *size,
		     cof_err *err)
{
	fake *f = (fake *)bs;
	int i = fake_find(f, sha);
	fake_reader *r;

	if (i < 0)
		return cof_error(err, COF_ENOTFOUND, "content %.12s is missing", sha);
	r = calloc(1, sizeof *r);
	r->base.ops = &fake_reader_ops;
	r->f = f;
	r->i = i;
	*size = (int64_t)f->v[i].len;
	*out = &r->base;
	f->opens++;
	return 0;
}

static int fake_remove(cof_blobstore *bs, const char *sha, cof_err *err)
{
	fake *f = (fake *)bs;
	int i = fake_find(f, sha);

	if (i >= 0) {
		free(f->v[i].data);
		f->v[i].data = NULL;
	}
	return 0;
}

static int fake_each(cof_blobstore *bs, cof_blob_each_fn fn, void *ctx, cof_err *err)
{
	fake *f = (fake *)bs;

	for (int i = 0; i < NBLOBS; i++)
		if (f->v[i].data && fn(ctx, f->v[i].sha, (int64_t)f->v[i].len, 0))
			break;
	return 0;
}

static void fake_close(cof_blobstore *bs)
{
	fake *f = (fake *)bs;

	for (int i = 0; i < NBLOBS; i++)
		free(f->v[i].data);
	free(f);
}

static cof_store *st;
static fake *fk;
static char dir[] = "/tmp/coffer-fake-XXXXXX";

static int setup(void **state)
{
	cof_err err = {0};
	cof_store_opts o = {.gc_grace_seconds = 1};

	(void)state;
	if (!mkdtemp(dir) || cof_store_open(dir, &o, &st, &err))
		return -1;
	st->blobs->close(st->blobs);
	fk = calloc(1, sizeof *fk);
	fk->base = (cof_blobstore){.name = "fake", .remote = 1, .begin = fake_begin,
				   .write = fake_write, .commit = fake_commit,
				   .abort = fake_abort, .open = fake_open,
				   .remove = fake_remove, .each = fake_each, .close = fake_close};
	st->blobs = &fk->base;
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	cof_store_close(st);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd);
}

static unsigned char big[100000];

static void test_everything_without_an_fd(void **state)
{
	cof_err err = {0};
	json_t *body = json_pack("{s:s}", "name", "fake"), *out = NULL;
	char vol[64], *text = NULL;
	int created;
	size_t len;
	cof_file f;

	(void)state;
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (unsigned char)(i * 31 + i / 1000);
	assert_int_equal(cof_volume_create(st, ORG, body, NULL, &out, &created, &err), 0);
	snprintf(vol, sizeof vol, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(body);
	json_decref(out);
	assert_int_equal(cof_file_put_bytes(st, ORG, vol, "big.bin", big, sizeof big, NULL,
					    (cof_cond){0}, &out, &created, &err), 0);
	json_decref(out);
	assert_int_equal(cof_file_put_bytes(st, ORG, vol, "small.txt", "hi", 2, NULL,
					    (cof_cond){0}, &out, &created, &err), 0);
	json_decref(out);

	/* a read at any offset, through the fake's reader, with no fd */
	assert_int_equal(cof_file_open(st, ORG, vol, "big.bin", NULL, &f, &err), 0);
	assert_int_equal(f.size, sizeof big);
	assert_int_equal(cof_file_fd(&f), -1);
	{
		unsigned char buf[5000];
		size_t got = 0, n = 0;
		while (got < sizeof buf) {
			assert_int_equal(cof_file_read_at(&f, 50000 + (int64_t)got, buf + got,
							  sizeof buf - got, &n, &err), 0);
			assert_true(n > 0);
			got += n;
		}
		assert_memory_equal(buf, big + 50000, sizeof buf);
		assert_int_equal(cof_file_read_at(&f, sizeof big, buf, 10, &n, &err), 0);
		assert_int_equal(n, 0);
	}
	cof_file_close(&f);
	assert_true(fk->opens >= 1 && fk->reads >= 5);

	/* read-all: the whole content, read through the reader */
	cof_list_opts lo = {.content = 1};
	assert_int_equal(cof_file_read_all(st, ORG, vol, &lo, &text, &len, &err), 0);
	assert_non_null(strstr(text, "\"small.txt\""));
	assert_non_null(strstr(text, "\"big.bin\""));
	free(text);

	/* an archive: every byte of big.bin comes through the reader */
	{
		cof_archive *a;
		int64_t seq;
		unsigned char buf[65536];
		ssize_t n;
		size_t total = 0;
		int before = fk->reads;
		assert_int_equal(cof_archive_open(st, ORG, vol, NULL, NULL, NULL, &a, &seq, &err), 0);
		while ((n = cof_archive_read(a, buf, sizeof buf, &err)) > 0)
			total += (size_t)n;
		assert_int_equal(n, 0);
		cof_archive_close(a);
		assert_true(total > 0);
		assert_true(fk->reads - before >= (int)(sizeof big / 1000));
	}

	/* fsck hashes it through the reader: clean; then flipped bytes are found */
	assert_int_equal(cof_fsck(st, &out, &err), 0);
	assert_true(json_is_true(json_object_get(out, "ok")));
	json_decref(out);
	for (int i = 0; i < NBLOBS; i++)
		if (fk->v[i].data && fk->v[i].len == sizeof big)
			fk->v[i].data[777] ^= 0xff;
	assert_int_equal(cof_fsck(st, &out, &err), 0);
	assert_false(json_is_true(json_object_get(out, "ok")));
	assert_int_equal(json_array_size(json_object_get(out, "corrupt")), 1);
	json_decref(out);

	/* gc: the collector runs over the fake as over a directory */
	assert_int_equal(cof_gc(st, &out, &err), 0);
	json_decref(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_everything_without_an_fd),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
