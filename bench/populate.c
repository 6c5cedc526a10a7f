/*
 * populate.c — the in-process half of coffer's benchmarks (bench/run drives it).
 *
 *   populate fill DATA NAME N SIZE        new volume NAME with N files of SIZE bytes
 *                                         through cof_file_put_bytes; prints
 *                                         {"id":..., "seconds":..., "filesPerSec":...}
 *   populate dir DIR N SIZE [fsync]       the same files as plain files in DIR; with
 *                                         `fsync`, write+fsync each (the disk's limit)
 *   populate lat DATA VOL N READS WRITES  in-process single-file latency on a volume
 *                                         filled by `fill` (random existing paths):
 *                                         open+read+close, and overwrite with new bytes
 *
 * Setting COFFER_BENCH_NOSYNC=1 turns fsync/fdatasync into no-ops for this process
 * only (libcoffer's blob store and libsqlite3 both call them through the PLT, which
 * this executable interposes). bench/run uses that solely to build the big fixture
 * volumes quickly; every figure it reports is measured with real fsyncs.
 *
 * File i lives at d%04d/f%07d.txt (1,000 files a directory) and holds a line
 * naming it, padded with text to SIZE bytes, so every file is distinct content.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "coffer.h"

static int nosync = -1;

static int sync_off(void)
{
	if (nosync < 0) {
		const char *e = getenv("COFFER_BENCH_NOSYNC");
		nosync = e && *e == '1';
	}
	return nosync;
}

int fsync(int fd)
{
	return sync_off() ? 0 : (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd)
{
	return sync_off() ? 0 : (int)syscall(SYS_fdatasync, fd);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, cof_err *err)
{
	fprintf(stderr, "populate: %s: %s\n", what, err ? err->msg : strerror(errno));
	exit(1);
}

static void file_path(long i, char *out, size_t n)
{
	snprintf(out, n, "d%04ld/f%07ld.txt", i / 1000, i);
}

/* Fills buf with file i's content (SIZE bytes); `salt` makes rewrites distinct. */
static void file_body(long i, long salt, char *buf, size_t size)
{
	static const char pad[] = "the quick brown fox jumps over the lazy dog 0123456789\n";
	int n = snprintf(buf, size, "file %ld salt %ld\n", i, salt);
	size_t at = n < 0 ? 0 : (size_t)n >= size ? size : (size_t)n;

	for (; at < size; at++)
		buf[at] = pad[at % (sizeof pad - 1)];
}

static cof_store *open_store(const char *dir, char org[48])
{
	cof_store *st;
	cof_err err = {0};
	cof_principal who;

	if (cof_store_open(dir, NULL, &st, &err))
		die("open store", &err);
	if (cof_key_auth(st, cof_store_admin_key(st), &who, &err))
		die("admin key", &err);
	snprintf(org, 48, "%s", who.org);
	return st;
}

static int cmd_fill(const char *data, const char *name, long n, size_t size)
{
	char org[48], path[64], *buf = malloc(size + 1);
	cof_err err = {0};
	cof_store *st = open_store(data, org);
	json_t *body = json_pack("{s:s, s:I}", "name", name, "ceiling",
				 (json_int_t)1 << 40), *out;
	int created;

	if (cof_volume_create(st, org, body, NULL, &out, &created, &err))
		die("volume create", &err);
	char *id = strdup(json_string_value(json_object_get(out, "id")));
	json_decref(out);
	json_decref(body);
	double t0 = now();
	for (long i = 0; i < n; i++) {
		file_path(i, path, sizeof path);
		file_body(i, 0, buf, size);
		if (cof_file_put_bytes(st, org, id, path, buf, size, "text/plain",
				       (cof_cond){0}, &out, &created, &err))
			die(path, &err);
		json_decref(out);
	}
	double dt = now() - t0;
	cof_store_close(st);
	printf("{\"id\":\"%s\",\"seconds\":%.6f,\"filesPerSec\":%.1f}\n", id, dt,
	       dt > 0 ? n / dt : 0);
	free(id);
	free(buf);
	return 0;
}

static int cmd_dir(const char *dir, long n, size_t size, int dosync)
{
	char path[4200], sub[4200], *buf = malloc(size + 1);
	long lastdir = -1;

	mkdir(dir, 0755);
	double t0 = now();
	for (long i = 0; i < n; i++) {
		if (i / 1000 != lastdir) {
			lastdir = i / 1000;
			snprintf(sub, sizeof sub, "%s/d%04ld", dir, lastdir);
			if (mkdir(sub, 0755) && errno != EEXIST)
				die(sub, NULL);
		}
		snprintf(path, sizeof path, "%s/", dir);
		file_path(i, path + strlen(path), sizeof path - strlen(path));
		file_body(i, 0, buf, size);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, buf, size) != (ssize_t)size ||
		    (dosync && syscall(SYS_fsync, fd) < 0) || close(fd) < 0)
			die(path, NULL);
	}
	double dt = now() - t0;
	printf("{\"seconds\":%.6f,\"filesPerSec\":%.1f}\n", dt, dt > 0 ? n / dt : 0);
	free(buf);
	return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_stats(const char *key, double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_dbl);
	printf("\"%s\":{\"n\":%ld,\"p50us\":%.1f,\"p99us\":%.1f}", key, n,
	       v[n / 2] * 1e6, v[(long)(n * 0.99)] * 1e6);
}

static int cmd_lat(const char *data, const char *vol, long n, long reads, long writes)
{
	char org[48], path[64], buf[65536];
	cof_err err = {0};
	cof_store *st = open_store(data, org);
	double *rv = calloc((size_t)reads + 1, sizeof *rv);
	double *wv = calloc((size_t)writes + 1, sizeof *wv);
	unsigned seed = (unsigned)getpid();

	for (long k = 0; k < reads; k++) {
		long i = rand_r(&seed) % n;
		cof_file f;
		file_path(i, path, sizeof path);
		double t0 = now();
		if (cof_file_open(st, org, vol, path, NULL, &f, &err))
			die(path, &err);
		if (f.data) /* small content comes inline, already read */
			memcpy(buf, f.data, (size_t)f.size < sizeof buf ? (size_t)f.size : sizeof buf);
		else
			for (int64_t off = 0, got = 1; got > 0; off += got) {
				size_t n = 0;
				if (cof_file_read_at(&f, off, buf, sizeof buf, &n, &err))
					die(path, &err);
				got = (int64_t)n;
			}
		cof_file_close(&f);
		rv[k] = now() - t0;
	}
	for (long k = 0; k < writes; k++) {
		long i = rand_r(&seed) % n;
		json_t *out;
		int created;
		file_path(i, path, sizeof path);
		/* Same size as the fixture, new content (no dedup shortcut). */
		size_t size = 1024;
		file_body(i, (long)getpid() * 100000 + k + 1, buf, size);
		double t0 = now();
		if (cof_file_put_bytes(st, org, vol, path, buf, size, "text/plain",
				       (cof_cond){0}, &out, &created, &err))
			die(path, &err);
		wv[k] = now() - t0;
		json_decref(out);
	}
	printf("{");
	print_stats("read", rv, reads);
	printf(",");
	print_stats("write", wv, writes);
	printf("}\n");
	cof_store_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "fill"))
		return cmd_fill(argv[2], argv[3], atol(argv[4]), (size_t)atol(argv[5]));
	if (argc >= 5 && !strcmp(argv[1], "dir"))
		return cmd_dir(argv[2], atol(argv[3]), (size_t)atol(argv[4]),
			       argc > 5 && !strcmp(argv[5], "fsync"));
	if (argc >= 7 && !strcmp(argv[1], "lat"))
		return cmd_lat(argv[2], argv[3], atol(argv[4]), atol(argv[5]), atol(argv[6]));
	fprintf(stderr, "usage: populate fill DATA NAME N SIZE | dir DIR N SIZE [fsync] |"
			" lat DATA VOL N READS WRITES\n");
	return 2;
}
