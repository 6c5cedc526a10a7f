/*
 * outbox_fx.h — the fixture shared by test_outbox.c and test_outbox_entries.c:
 * a temporary <root>/outbox (the call's), <root>/keep and <root>/outside, file
 * writers, and run(), which collects and checks that the outbox is empty and
 * that there is one note per entry. Header only (each test is one binary).
 */
#ifndef COF_TEST_OUTBOX_FX_H
#define COF_TEST_OUTBOX_FX_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "turn/outbox.h"
#include "util/util.h"

#define MB (1024 * 1024)

static const unsigned char png1x1[67] __attribute__((unused)) =
	"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x01"
	"\x00\x00\x00\x01\x08\x00\x00\x00\x00\x3a\x7e\x9b\x55\x00\x00\x00\x0a\x49\x44\x41"
	"\x54\x78\x9c\x63\x60\x00\x00\x00\x02\x00\x01\x48\xaf\xa4\x71\x00\x00\x00\x00\x49"
	"\x45\x4e\x44\xae\x42\x60\x82";

/* One test's folders: <root>/outbox (the call's), <root>/keep, <root>/outside. */
typedef struct fx {
	char root[256];
	int outbox, keep, outside;
	cof_outbox_rules rules;
	json_t *files, *notes;
} fx;

static inline int rm_cb(const char *root)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", root, root);
	return system(cmd);
}

static inline int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	const char *tmp = getenv("TMPDIR");
	char p[300];

	snprintf(f->root, sizeof f->root, "%s/cof-outbox-XXXXXX", tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->root));
	snprintf(p, sizeof p, "%s/outbox", f->root);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/keep", f->root);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/outside", f->root);
	assert_int_equal(mkdir(p, 0700), 0);
	int rfd = open(f->root, O_RDONLY | O_DIRECTORY);
	f->outbox = openat(rfd, "outbox", O_RDONLY | O_DIRECTORY);
	f->keep = openat(rfd, "keep", O_RDONLY | O_DIRECTORY);
	f->outside = openat(rfd, "outside", O_RDONLY | O_DIRECTORY);
	close(rfd);
	assert_true(f->outbox >= 0 && f->keep >= 0 && f->outside >= 0);
	f->rules.types = COF_OUT_ALL;
	f->rules.turn_files_left = COF_OUTBOX_TURN_FILES;
	f->rules.turn_bytes_left = COF_OUTBOX_TURN_BYTES;
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	fx *f = *state;
	close(f->outbox), close(f->keep), close(f->outside);
	json_decref(f->files);
	json_decref(f->notes);
	rm_cb(f->root);
	free(f);
	return 0;
}

/* Writes a file of `len` bytes into the folder open at dirfd. */
static inline void put(int dirfd, const char *name, const void *data, size_t len)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static inline void puts_(int dirfd, const char *name, const char *s)
{
	put(dirfd, name, s, strlen(s));
}

/* A PNG of exactly `len` bytes (the signature, then zeros). */
static inline void put_png(int dirfd, const char *name, size_t len)
{
	unsigned char *b = calloc(1, len + 8);
	memcpy(b, png1x1, 8);
	put(dirfd, name, b, len);
	free(b);
}

static inline int count_entries(int dirfd)
{
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;
	int n = 0;

	rewinddir(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Collects, checks the outbox is empty and there are `want_notes` notes. */
static inline void run(fx *f, int want_notes)
{
	cof_err err = {0};

	json_decref(f->files);
	json_decref(f->notes);
	f->files = f->notes = NULL;
	int rc = cof_outbox_collect(f->outbox, f->keep, &f->rules, &f->files, &f->notes, &err);
	if (rc)
		fail_msg("cof_outbox_collect: %s", err.msg);
	assert_int_equal(count_entries(f->outbox), 0);
	if ((int)json_array_size(f->notes) != want_notes) {
		char *s = json_dumps(f->notes, JSON_INDENT(1));
		fail_msg("%zu notes, want %d: %s", json_array_size(f->notes), want_notes, s);
	}
}

/* The note that mentions `needle`; fails the test if none does. */
static inline const char *note_with(fx *f, const char *needle)
{
	json_t *v;
	size_t i;

	json_array_foreach(f->notes, i, v)
		if (strstr(json_string_value(v), needle))
			return json_string_value(v);
	char *s = json_dumps(f->notes, JSON_INDENT(1));
	fail_msg("no note has '%s': %s", needle, s);
	return NULL;
}

/* Note i is exactly `want`. */
static inline void eq_note(fx *f, size_t i, const char *want)
{
	const char *got = json_string_value(json_array_get(f->notes, i));
	if (!got || strcmp(got, want))
		fail_msg("note %zu is '%s', want '%s'", i, got ? got : "(none)", want);
}

/* Size of a kept file in the keep folder, or -1 when absent. */
static inline long kept_size(fx *f, const char *name)
{
	struct stat st;
	return fstatat(f->keep, name, &st, AT_SYMLINK_NOFOLLOW) ? -1 : (long)st.st_size;
}

/* The file named in f->files[i]. */
static inline const char *file_name(fx *f, size_t i)
{
	return json_string_value(json_object_get(json_array_get(f->files, i), "name"));
}

#endif
