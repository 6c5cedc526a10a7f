/*
 * misc.c — ids, randomness, hashing, clocks, time and size formatting.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include "util/util.h"

int cof_random(void *buf, size_t len)
{
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

void cof_id_new(const char *prefix, char *out, size_t outsz)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
	unsigned char r[20];
	size_t n = strlen(prefix);

	/* RAND_bytes only fails when the OS has no entropy; ids must not repeat. */
	if (cof_random(r, sizeof r))
		abort();
	snprintf(out, outsz, "%s", prefix);
	for (size_t i = 0; i < sizeof r && n + i + 1 < outsz; i++) {
		out[n + i] = alphabet[r[i] & 31];
		out[n + i + 1] = '\0';
	}
}

void cof_hex(const unsigned char *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* Fetched once: EVP_sha256()'s implicit fetch on every digest took a lock
 * and a lookup, a tenth of the CPU of a small GET (two hashes of its key). */
static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

int cof_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	pthread_once(&sha256_once, sha256_fetch);
	if (!EVP_Digest(data, len, md, &mdlen, sha256_md ? sha256_md : EVP_sha256(), NULL))
		return -1;
	cof_hex(md, 32, out);
	return 0;
}

int64_t cof_now(void)
{
	return (int64_t)time(NULL);
}

int64_t cof_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cof_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t cof_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cof_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	int r = pthread_condattr_init(&a);

	if (r)
		return r;
	r = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
	return r;
}

int cof_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until_ms)
{
	struct timespec ts;

	if (until_ms < 0)
		until_ms = 0;
	ts.tv_sec = (time_t)(until_ms / 1000);
	ts.tv_nsec = (long)(until_ms % 1000) * 1000000;
	int r = pthread_cond_timedwait(cv, mu, &ts);
	return r == ETIMEDOUT || cof_mono_ms() >= until_ms ? ETIMEDOUT : 0;
}

void cof_time_fmt(int64_t t, char *out, size_t outsz)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, outsz, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *cof_json_time(int64_t t)
{
	char s[32];

	cof_time_fmt(t, s, sizeof s);
	return json_string(s);
}

void cof_size_fmt(int64_t bytes, char *out, size_t outsz)
{
	static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = 0;

	while (u < 4 && (v >= 1024 || (u > 0 && v >= 1023.95)))
		v /= 1024, u++;
	if (u == 0)
		snprintf(out, outsz, "%lld bytes", (long long)bytes);
	else if (v == (double)(int64_t)v)
		snprintf(out, outsz, "%lld %s", (long long)v, units[u]);
	else
		snprintf(out, outsz, "%.1f %s", v, units[u]);
}

int cof_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	int r = fsync(fd), e = errno;
	close(fd);
	errno = e;
	return r;
}

int cof_write_full(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int cof_hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
