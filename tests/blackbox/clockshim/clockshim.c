/*
 * clockshim.c — an LD_PRELOAD library for tests/blackbox/test_clock.py: it
 * moves the wall clock (CLOCK_REALTIME and time()) of the process it is loaded
 * into by a number of seconds read from the file named by $COFFER_CLOCK_SHIM
 * (8 bytes, a little-endian int64, mapped shared so the test steps the clock
 * while the process runs). CLOCK_MONOTONIC is left alone: that is the point.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset;
static int (*real_clock_gettime)(clockid_t, struct timespec *);

/* The mapped offset, or 0 before it could be mapped. */
static int64_t shift(void)
{
	static int tried;

	if (!offset && !__atomic_exchange_n(&tried, 1, __ATOMIC_SEQ_CST)) {
		const char *p = getenv("COFFER_CLOCK_SHIM");
		int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
		if (fd >= 0) {
			void *m = mmap(NULL, 8, PROT_READ, MAP_SHARED, fd, 0);
			close(fd);
			if (m != MAP_FAILED)
				__atomic_store_n(&offset, (volatile int64_t *)m, __ATOMIC_SEQ_CST);
		}
	}
	volatile int64_t *o = __atomic_load_n(&offset, __ATOMIC_SEQ_CST);
	return o ? *o : 0;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (!real_clock_gettime)
		real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
										 "clock_gettime");
	int r = real_clock_gettime(id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		ts->tv_sec += shift();
	return r;
}

time_t time(time_t *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
