/*
 * fuzz_archive.c — the archive writer (src/volume/archive.c, through
 * cof_archive_open_files). Input: records split at NUL bytes, at most 24;
 * each is 2 bytes choosing the file's size (a first byte of 0xff adds 70,000,
 * past the writer's 64 KiB chunk) and then the name's bytes. Contents are made
 * from the record's index.
 *
 * Invariants: every non-empty name, valid or not, is written without a crash
 * and the stream either ends or fails cleanly; for the names a volume may hold
 * (cof_path_check), libarchive reads the tar.gz back in the C locale as
 * exactly those files in order: same names byte for byte, sizes and bytes,
 * regular files, then the end. Reading the stream in pieces of 1 byte or of
 * 4 KiB gives the same bytes (but for the gzip header's time).
 */
#include <archive.h>
#include <archive_entry.h>
#include "fuzz.h"
#include "util/util.h"
#include "volume/archive.h"

#define MAX_FILES 24

typedef struct fuzz_set {
	cof_archive_file f[MAX_FILES];
	char *names[MAX_FILES];
	unsigned char *data[MAX_FILES];
	size_t n;
} fuzz_set;

/* Bytes of file i, made from i so that swapped contents show. */
static unsigned char *make_data(size_t i, size_t size)
{
	unsigned char *d = malloc(size ? size : 1);

	if (!d)
		abort();
	for (size_t k = 0; k < size; k++)
		d[k] = (unsigned char)(k * 31 + i * 7 + (k >> 8));
	return d;
}

/* Adds one file; takes `name` (malloc'd). */
static void add_file(fuzz_set *s, char *name, size_t size)
{
	size_t i = s->n++;

	s->names[i] = name;
	s->data[i] = make_data(i, size);
	s->f[i] = (cof_archive_file){name, s->data[i], (int64_t)size, 1700000000 + (int64_t)i};
}

static void free_set(fuzz_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->names[i]);
		free(s->data[i]);
	}
	s->n = 0;
}

/* The whole stream, read `piece` bytes at a time; NULL when the writer failed
 * (which is allowed only when `may_fail`). */
static unsigned char *write_all(const fuzz_set *s, size_t piece, int may_fail, size_t *len)
{
	cof_archive *ar = NULL;
	cof_err err = {0};
	unsigned char *out = NULL, buf[4096];
	size_t cap = 0;
	ssize_t n;

	*len = 0;
	if (cof_archive_open_files(s->f, s->n, &ar, &err)) {
		FUZZ_CHECK(may_fail, "open failed: %s", err.msg);
		cof_err_clear(&err);
		return NULL;
	}
	while ((n = cof_archive_read(ar, buf, piece, &err)) > 0) {
		FUZZ_CHECK((size_t)n <= piece, "read %zd bytes of at most %zu", n, piece);
		if (*len + (size_t)n > cap) {
			cap = (*len + (size_t)n) * 2;
			out = realloc(out, cap);
			if (!out)
				abort();
		}
		memcpy(out + *len, buf, (size_t)n);
		*len += (size_t)n;
	}
	if (n < 0) {
		FUZZ_CHECK(may_fail, "stream failed: %s", err.msg);
		FUZZ_CHECK(err.msg[0], "a failure without a message");
		/* a failed stream stays failed */
		cof_err_clear(&err);
		FUZZ_CHECK(cof_archive_read(ar, buf, piece, &err) < 0, "read after a failure");
		cof_err_clear(&err);
		free(out);
		out = NULL;
	}
	cof_archive_close(ar);
	return out;
}

/* Reads the tar.gz back with libarchive and checks it holds exactly `s`. */
static void check_read_back(const fuzz_set *s, const unsigned char *tgz, size_t len)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	size_t i = 0;

	FUZZ_CHECK(a, "archive_read_new");
	archive_read_support_filter_gzip(a);
	archive_read_support_format_tar(a);
	FUZZ_CHECK(archive_read_open_memory(a, tgz, len) == ARCHIVE_OK, "open: %s",
		   archive_error_string(a));
	for (;;) {
		int r = archive_read_next_header(a, &e);

		if (r == ARCHIVE_EOF)
			break;
		FUZZ_CHECK(r == ARCHIVE_OK, "entry %zu: %d %s", i, r, archive_error_string(a));
		FUZZ_CHECK(i < s->n, "more entries than the %zu written", s->n);
		const char *name = archive_entry_pathname(e);
		FUZZ_CHECK(name && !strcmp(name, s->f[i].name), "entry %zu named '%s', not '%s'",
			   i, name ? name : "(null)", s->f[i].name);
		FUZZ_CHECK(archive_entry_filetype(e) == AE_IFREG, "entry %zu not a file", i);
		FUZZ_CHECK(archive_entry_size(e) == s->f[i].size, "entry %zu size %lld, not %lld",
			   i, (long long)archive_entry_size(e), (long long)s->f[i].size);
		unsigned char *got = malloc((size_t)s->f[i].size + 1);
		if (!got)
			abort();
		la_ssize_t n = archive_read_data(a, got, (size_t)s->f[i].size + 1);
		FUZZ_CHECK(n == (la_ssize_t)s->f[i].size, "entry %zu gave %lld bytes", i,
			   (long long)n);
		FUZZ_CHECK(!memcmp(got, s->f[i].data, (size_t)n), "entry %zu bytes differ", i);
		free(got);
		i++;
	}
	FUZZ_CHECK(i == s->n, "read %zu entries of %zu", i, s->n);
	archive_read_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_set all = {0}, valid = {0};
	size_t pos = 0;

	while (pos < size && all.n < MAX_FILES) {
		const uint8_t *end = memchr(data + pos, 0, size - pos);
		size_t rlen = end ? (size_t)(end - (data + pos)) : size - pos;
		const uint8_t *r = data + pos;

		pos += rlen + 1;
		if (rlen < 3)
			continue;
		size_t fsize = (size_t)r[0] << 8 | r[1];
		if (r[0] == 0xff)
			fsize += 70000;
		const char *norm;
		cof_err err = {0};
		char *name = fuzz_dup_str(r + 2, rlen - 2);

		if (cof_path_check(name, rlen - 2, "'path'", &norm, &err) == 0)
			add_file(&valid, strdup(norm), fsize);
		cof_err_clear(&err);
		add_file(&all, name, fsize);
	}

	/* any name: no crash, a clean end or a clean failure */
	size_t len;
	free(write_all(&all, 4096, 1, &len));

	/* names a volume holds: exactly those files back */
	size_t len1, len2;
	unsigned char *a1 = write_all(&valid, 4096, 0, &len1);
	unsigned char *a2 = write_all(&valid, 1, 0, &len2);
	/* bytes 4..7 of a gzip header are the time it was written */
	FUZZ_CHECK(a1 && a2 && len1 == len2 && len1 > 10 && !memcmp(a1, a2, 4) &&
		   !memcmp(a1 + 8, a2 + 8, len1 - 8), "the stream depends on how it is read");
	check_read_back(&valid, a1, len1);
	free(a1);
	free(a2);
	free_set(&all);
	free_set(&valid);
	return 0;
}
