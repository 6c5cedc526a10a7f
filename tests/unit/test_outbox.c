/*
 * test_outbox.c — src/turn/outbox*.c: every rule of API.md "Outbox" at its
 * edge, each its own test, on a real folder: names, extensions, signatures,
 * UTF-8 content, sizes and counts, and every kind of entry an untrusted call
 * can leave (symlinks, FIFOs, sockets, folders, hard links, growing files).
 * After every collection the outbox must be empty and each entry have one note.
 */
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
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "turn/outbox.h"
#include "util/util.h"

#define MB (1024 * 1024)

static const unsigned char png1x1[67] =
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

static int rm_cb(const char *root)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", root, root);
	return system(cmd);
}

static int setup(void **state)
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

static int teardown(void **state)
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
static void put(int dirfd, const char *name, const void *data, size_t len)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void puts_(int dirfd, const char *name, const char *s)
{
	put(dirfd, name, s, strlen(s));
}

/* A PNG of exactly `len` bytes (the signature, then zeros). */
static void put_png(int dirfd, const char *name, size_t len)
{
	unsigned char *b = calloc(1, len + 8);
	memcpy(b, png1x1, 8);
	put(dirfd, name, b, len);
	free(b);
}

static int count_entries(int dirfd)
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
static void run(fx *f, int want_notes)
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
static const char *note_with(fx *f, const char *needle)
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

/* Size of a kept file in the keep folder, or -1 when absent. */
static long kept_size(fx *f, const char *name)
{
	struct stat st;
	return fstatat(f->keep, name, &st, AT_SYMLINK_NOFOLLOW) ? -1 : (long)st.st_size;
}

/* The file named in f->files[i]. */
static const char *file_name(fx *f, size_t i)
{
	return json_string_value(json_object_get(json_array_get(f->files, i), "name"));
}

/* ------------------------------------------------------------------ names */

static void test_name_100_kept(void **state)
{
	fx *f = *state;
	char name[101];

	memset(name, 'a', 96);
	memcpy(name + 96, ".csv", 5);
	assert_int_equal(strlen(name), 100);
	puts_(f->outbox, name, "a,b\n");
	run(f, 1);
	assert_int_equal(json_array_size(f->files), 1);
	assert_int_equal(kept_size(f, name), 4);
	note_with(f, "attached aaaa");
}

static void test_name_101_refused(void **state)
{
	fx *f = *state;
	char name[102];

	memset(name, 'a', 97);
	memcpy(name + 97, ".csv", 5);
	assert_int_equal(strlen(name), 101);
	puts_(f->outbox, name, "a,b\n");
	run(f, 1);
	assert_int_equal(json_array_size(f->files), 0);
	assert_int_equal(kept_size(f, name), -1);
	const char *n = note_with(f, "names must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$");
	assert_non_null(strstr(n, "...'")); /* the quoted name is cut at 100 bytes */
}

static void test_name_dotdot(void **state)
{
	(void)state;
	/* A name with '/' cannot come from readdir, but the check refuses it. */
	assert_false(cof_outbox_name_ok("../x", 4));
	assert_false(cof_outbox_name_ok("..", 2));
	assert_false(cof_outbox_name_ok("a/b.png", 7));
	assert_false(cof_outbox_name_ok("", 0));
	assert_false(cof_outbox_name_ok("a\0b.png", 7));
	assert_true(cof_outbox_name_ok("a..png", 6));
}

static void test_name_leading_dot(void **state)
{
	fx *f = *state;

	puts_(f->outbox, ".hidden.csv", "x\n");
	puts_(f->outbox, "..x.csv", "x\n");
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "not attached '.hidden.csv': names must match");
	note_with(f, "not attached '..x.csv': names must match");
}

static void test_name_leading_dash_or_underscore(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "-x.csv", "x\n");
	puts_(f->outbox, "_x.csv", "x\n");
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "'-x.csv': names must match");
}

static void test_name_bad_chars(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "a b.csv", "x\n");
	puts_(f->outbox, "a$b.csv", "x\n");
	puts_(f->outbox, "caf\xc3\xa9.csv", "x\n");
	run(f, 3);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "'a b.csv': names must match");
	note_with(f, "'a$b.csv': names must match");
	note_with(f, "'caf\\xc3\\xa9.csv': names must match");
}

/* Names come from untrusted code: control characters never reach a note. */
static void test_name_sanitised_in_note(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "a\nb\x1b[31m'.csv", "x\n");
	run(f, 1);
	const char *n = note_with(f, "'a\\x0ab\\x1b[31m\\x27.csv'");
	for (const char *p = n; *p; p++)
		assert_true(*p >= 0x20 && *p <= 0x7e);
}

static void test_name_quote_bounds(void **state)
{
	char out[16], big[1000];
	(void)state;

	assert_int_equal(cof_outbox_name_quote("a\x01", 2, out, sizeof out), 5);
	assert_string_equal(out, "a\\x01");
	/* Never past outsz, always terminated. */
	cof_outbox_name_quote("\x01\x02\x03\x04\x05", 5, out, 8);
	assert_string_equal(out, "\\x01");
	memset(big, 'z', sizeof big);
	size_t n = cof_outbox_name_quote(big, sizeof big, out, sizeof out);
	assert_int_equal(n, strlen(out));
	assert_true(n < sizeof out);
}

/* ------------------------------------------------------------- extensions */

static void test_ext_not_listed(void **state)
{
	fx *f = *state;

	put(f->outbox, "x.gif", "GIF89a", 6);
	run(f, 1);
	assert_string_equal(json_string_value(json_array_get(f->notes, 0)),
			    "not attached 'x.gif': .gif files are not returned; "
			    "allowed: png, svg, csv, pdf");
}

static void test_ext_missing(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "README", "x\n");
	puts_(f->outbox, "csv", "x\n");
	puts_(f->outbox, "a.", "x\n");
	run(f, 3);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "'README': it has no extension; allowed: png, svg, csv, pdf");
	note_with(f, "'csv': it has no extension");
	note_with(f, "'a.': it has no extension");
}

static void test_ext_case_insensitive(void **state)
{
	fx *f = *state;

	put(f->outbox, "A.PNG", png1x1, sizeof png1x1);
	puts_(f->outbox, "b.Csv", "x\n");
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 2);
	assert_int_equal(kept_size(f, "A.PNG"), 67);
	note_with(f, "attached A.PNG (image/png, 67 bytes) to the answer");
	note_with(f, "attached b.Csv (text/csv, 2 bytes) to the answer");
}

/* The turn's types (agent output.files and acceptedOutputModes) narrow the list. */
static void test_ext_not_allowed_for_turn(void **state)
{
	fx *f = *state;

	f->rules.types = COF_OUT_PNG | COF_OUT_SVG;
	puts_(f->outbox, "t.csv", "x\n");
	put(f->outbox, "p.png", png1x1, sizeof png1x1);
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 1);
	note_with(f, "not attached 't.csv': .csv files are not returned; allowed: png, svg");
}

static void test_ext_none_allowed(void **state)
{
	fx *f = *state;

	f->rules.types = 0;
	put(f->outbox, "p.png", png1x1, sizeof png1x1);
	run(f, 1);
	note_with(f, ".png files are not returned; allowed: none");
}

/* ------------------------------------------------------------- signatures */

static void test_png_real(void **state)
{
	fx *f = *state;

	put(f->outbox, "chart.png", png1x1, sizeof png1x1);
	run(f, 1);
	assert_int_equal(json_array_size(f->files), 1);
	json_t *e = json_array_get(f->files, 0);
	assert_string_equal(json_string_value(json_object_get(e, "name")), "chart.png");
	assert_string_equal(json_string_value(json_object_get(e, "mediaType")), "image/png");
	assert_int_equal(json_integer_value(json_object_get(e, "size")), 67);
	assert_string_equal(json_string_value(json_array_get(f->notes, 0)),
			    "attached chart.png (image/png, 67 bytes) to the answer");
	/* The copy is byte for byte. */
	unsigned char b[100];
	int fd = openat(f->keep, "chart.png", O_RDONLY);
	assert_int_equal(read(fd, b, sizeof b), 67);
	close(fd);
	assert_memory_equal(b, png1x1, 67);
}

static void test_png_fake(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "fake.png", "<svg>not a png</svg>");
	put(f->outbox, "short.png", png1x1, 7); /* 7 of the 8 signature bytes */
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "not attached 'fake.png': not a PNG (no PNG signature)");
	note_with(f, "not attached 'short.png': not a PNG (no PNG signature)");
	assert_int_equal(kept_size(f, "fake.png"), -1);
}

static void test_pdf_signature(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "good.pdf", "%PDF-1.7\n%%EOF\n");
	puts_(f->outbox, "bad.pdf", "%PDF1.7\n");
	puts_(f->outbox, "short.pdf", "%PDF");
	run(f, 3);
	assert_int_equal(json_array_size(f->files), 1);
	note_with(f, "attached good.pdf (application/pdf, 15 bytes)");
	note_with(f, "not attached 'bad.pdf': not a PDF (no %PDF- signature)");
	note_with(f, "not attached 'short.pdf': not a PDF");
}

static void test_svg_kept_with_prolog(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "a.svg",
	      "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- made by a tool -->\n"
	      "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
	      "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
	      "<svg xmlns=\"http://www.w3.org/2000/svg\"/>");
	puts_(f->outbox, "b.svg", "<svg>\xc3\xa9</svg>");
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 2);
	note_with(f, "attached a.svg (image/svg+xml, ");
}

static void test_svg_without_svg(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "a.svg", "<html><svg></svg></html>");
	puts_(f->outbox, "b.svg", "hello <svg>");
	puts_(f->outbox, "c.svg", "<svgx/>");
	puts_(f->outbox, "d.svg", "<SVG/>");
	puts_(f->outbox, "e.svg", "<svg");
	run(f, 5);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "not attached 'a.svg': not an SVG (no <svg element at its start, "
		     "within the first 1024 bytes)");
	note_with(f, "not attached 'e.svg': not an SVG");
}

/* "Near the start": `<svg` beginning at byte 1023 is kept, at 1024 refused. */
static void test_svg_near_edge(void **state)
{
	fx *f = *state;
	char b[1100];

	memset(b, ' ', sizeof b);
	memcpy(b + 1023, "<svg/>", 6);
	put(f->outbox, "at1023.svg", b, 1029);
	memset(b, ' ', sizeof b);
	memcpy(b + 1024, "<svg/>", 6);
	put(f->outbox, "at1024.svg", b, 1030);
	/* A comment still open at byte 1024 is as far. */
	memset(b, ' ', sizeof b);
	memcpy(b, "<!--", 4);
	memcpy(b + 1022, "--><svg/>", 9);
	put(f->outbox, "comment.svg", b, 1031);
	/* One that ends in time lets `<svg` begin at 1021. */
	memcpy(b + 1018, "--><svg/>", 9);
	put(f->outbox, "comment_ok.svg", b, 1027);
	run(f, 4);
	assert_int_equal(json_array_size(f->files), 2);
	assert_string_equal(file_name(f, 0), "at1023.svg");
	assert_string_equal(file_name(f, 1), "comment_ok.svg");
	note_with(f, "not attached 'at1024.svg': not an SVG");
	note_with(f, "not attached 'comment.svg': not an SVG");
}

/* A DOCTYPE with an internal subset (entity definitions) is refused. */
static void test_svg_internal_subset(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "lol.svg", "<!DOCTYPE svg [<!ENTITY a \"aaaa\">]><svg>&a;</svg>");
	run(f, 1);
	note_with(f, "not attached 'lol.svg': not an SVG");
}

static void test_svg_with_nul(void **state)
{
	fx *f = *state;

	put(f->outbox, "n.svg", "<svg>\0</svg>", 12);
	run(f, 1);
	note_with(f, "not attached 'n.svg': not an SVG (it holds a NUL byte)");
}

static void test_svg_invalid_utf8(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "u.svg", "<svg>\xc3\x28</svg>");
	puts_(f->outbox, "v.svg", "<svg>\xed\xa0\x80</svg>"); /* a surrogate */
	run(f, 2);
	note_with(f, "not attached 'u.svg': not an SVG (not valid UTF-8)");
	note_with(f, "not attached 'v.svg': not an SVG (not valid UTF-8)");
}

static void test_csv_with_nul(void **state)
{
	fx *f = *state;

	put(f->outbox, "n.csv", "a,b\n\0", 5);
	run(f, 1);
	note_with(f, "not attached 'n.csv': not a CSV (it holds a NUL byte)");
}

static void test_csv_invalid_utf8(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "u.csv", "a,\xff\n");
	puts_(f->outbox, "t.csv", "a,\xe2\x82"); /* cut in the middle of a character */
	run(f, 2);
	note_with(f, "not attached 'u.csv': not a CSV (not valid UTF-8)");
	note_with(f, "not attached 't.csv': not a CSV (not valid UTF-8)");
}

static void test_csv_empty_kept(void **state)
{
	fx *f = *state;

	put(f->outbox, "e.csv", "", 0);
	run(f, 1);
	note_with(f, "attached e.csv (text/csv, 0 bytes) to the answer");
	assert_int_equal(kept_size(f, "e.csv"), 0);
}

/* ------------------------------------------------------------ size, count */

static void test_size_4mb_kept(void **state)
{
	fx *f = *state;

	put_png(f->outbox, "max.png", COF_OUTBOX_FILE_MAX);
	run(f, 1);
	assert_int_equal(kept_size(f, "max.png"), COF_OUTBOX_FILE_MAX);
	note_with(f, "attached max.png (image/png, 4194304 bytes)");
}

static void test_size_4mb_plus_1_refused(void **state)
{
	fx *f = *state;

	put_png(f->outbox, "big.png", COF_OUTBOX_FILE_MAX + 1);
	run(f, 1);
	assert_int_equal(kept_size(f, "big.png"), -1);
	note_with(f, "not attached 'big.png': more than 4 MiB; the limit is 4 MiB a file");
}

static void test_fifth_file_refused(void **state)
{
	fx *f = *state;
	const char *names[] = {"e.png", "a.png", "d.png", "c.png", "b.png"};

	for (int i = 0; i < 5; i++)
		put(f->outbox, names[i], png1x1, sizeof png1x1);
	run(f, 5);
	assert_int_equal(json_array_size(f->files), 4);
	/* Sorted by name, so the one left out is predictable. */
	for (int i = 0; i < 4; i++) {
		char want[8] = "a.png";
		want[0] = (char)('a' + i);
		assert_string_equal(file_name(f, (size_t)i), want);
	}
	assert_string_equal(json_string_value(json_array_get(f->notes, 4)),
			    "not attached 'e.png': at most 4 files come back per call");
	assert_int_equal(kept_size(f, "e.png"), -1);
}

/* Refused entries do not count towards the 4. */
static void test_refused_do_not_count(void **state)
{
	fx *f = *state;

	puts_(f->outbox, "a.png", "fake");
	puts_(f->outbox, "b.gif", "x");
	for (int i = 0; i < 4; i++) {
		char n[8];
		snprintf(n, sizeof n, "p%d.png", i);
		put(f->outbox, n, png1x1, sizeof png1x1);
	}
	run(f, 6);
	assert_int_equal(json_array_size(f->files), 4);
}

static void test_turn_files_left(void **state)
{
	fx *f = *state;

	f->rules.turn_files_left = 1;
	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	put(f->outbox, "b.png", png1x1, sizeof png1x1);
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 1);
	note_with(f, "not attached 'b.png': a turn returns at most 8 files");

	f->rules.turn_files_left = 0;
	put(f->outbox, "c.png", png1x1, sizeof png1x1);
	run(f, 1);
	assert_int_equal(json_array_size(f->files), 0);
}

static void test_turn_bytes_left_edge(void **state)
{
	fx *f = *state;

	f->rules.turn_bytes_left = 100;
	put_png(f->outbox, "a.png", 60);
	put_png(f->outbox, "b.png", 40);  /* exactly the rest */
	put_png(f->outbox, "c.png", 1);   /* nothing left for even one byte */
	put(f->outbox, "d.csv", "", 0);   /* but an empty file still fits */
	run(f, 4);
	assert_int_equal(json_array_size(f->files), 3);
	note_with(f, "not attached 'c.png': 1 bytes, and the turn may return only 0 bytes more "
		     "(at most 16 MiB a turn)");
	note_with(f, "attached d.csv");
}

static void test_turn_bytes_left_over_by_one(void **state)
{
	fx *f = *state;

	f->rules.turn_bytes_left = 100;
	put_png(f->outbox, "a.png", 101);
	run(f, 1);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "'a.png': 101 bytes, and the turn may return only 100 bytes more");
}

/* ------------------------------------------------------ kinds of entries */

static void test_symlink_to_file_outside(void **state)
{
	fx *f = *state;
	char target[400];
	struct stat st;

	puts_(f->outside, "secret.csv", "secret\n");
	snprintf(target, sizeof target, "%s/outside/secret.csv", f->root);
	assert_int_equal(symlinkat(target, f->outbox, "link.csv"), 0);
	assert_int_equal(symlinkat("../outside/secret.csv", f->outbox, "rel.csv"), 0);
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "not attached 'link.csv': not a regular file (symbolic link)");
	note_with(f, "not attached 'rel.csv': not a regular file (symbolic link)");
	/* The target is untouched. */
	assert_int_equal(fstatat(f->outside, "secret.csv", &st, 0), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(kept_size(f, "link.csv"), -1);
}

/* A link to a folder outside is unlinked, never descended into. */
static void test_symlink_to_folder_outside(void **state)
{
	fx *f = *state;
	char target[400];

	assert_int_equal(mkdirat(f->outside, "dir", 0700), 0);
	int d = openat(f->outside, "dir", O_RDONLY | O_DIRECTORY);
	puts_(d, "keepme", "x");
	snprintf(target, sizeof target, "%s/outside/dir", f->root);
	assert_int_equal(symlinkat(target, f->outbox, "d"), 0);
	assert_int_equal(mkdirat(f->outbox, "sub", 0700), 0);
	int s = openat(f->outbox, "sub", O_RDONLY | O_DIRECTORY);
	assert_int_equal(symlinkat(target, s, "inner"), 0);
	close(s);
	run(f, 2);
	note_with(f, "not attached 'd': not a regular file (symbolic link)");
	assert_int_equal(count_entries(d), 1);
	close(d);
}

static void test_fifo_no_hang(void **state)
{
	fx *f = *state;

	assert_int_equal(mkfifoat(f->outbox, "pipe.csv", 0600), 0);
	run(f, 1);
	note_with(f, "not attached 'pipe.csv': not a regular file (FIFO)");
}

static void test_socket(void **state)
{
	fx *f = *state;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	int w = snprintf(a.sun_path, sizeof a.sun_path, "%.90s/outbox/s.png", f->root);
	assert_true(w > 0 && (size_t)w < sizeof a.sun_path);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 1), 0);
	run(f, 1);
	close(s);
	note_with(f, "not attached 's.png': not a regular file (socket)");
}

/* A folder (with files, a link out, a locked subfolder) is removed whole. */
static void test_folder_removed_recursively(void **state)
{
	fx *f = *state;

	assert_int_equal(mkdirat(f->outbox, "d.png", 0700), 0);
	int d = openat(f->outbox, "d.png", O_RDONLY | O_DIRECTORY);
	put(d, "inner.png", png1x1, sizeof png1x1);
	assert_int_equal(mkdirat(d, "locked", 0700), 0);
	int l = openat(d, "locked", O_RDONLY | O_DIRECTORY);
	puts_(l, "x", "x");
	assert_int_equal(mkfifoat(l, "p", 0600), 0);
	assert_int_equal(symlinkat("/", l, "root"), 0);
	close(l);
	assert_int_equal(fchmodat(d, "locked", 0, 0), 0);
	assert_int_equal(fchmod(d, 0500), 0);
	close(d);
	run(f, 1);
	note_with(f, "not attached 'd.png': not a regular file (folder)");
	assert_int_equal(json_array_size(f->files), 0);
	assert_int_equal(count_entries(f->outside), 0);
}

/* A tree deeper than can be held open at once is still removed. */
static void test_folder_deep(void **state)
{
	fx *f = *state;
	int d = dup(f->outbox);

	for (int i = 0; i < 300; i++) {
		assert_int_equal(mkdirat(d, i ? "d" : "deep", 0700), 0);
		int n = openat(d, i ? "d" : "deep", O_RDONLY | O_DIRECTORY);
		close(d);
		d = n;
	}
	puts_(d, "bottom.png", "x");
	close(d);
	run(f, 1);
	note_with(f, "not attached 'deep': not a regular file (folder)");
}

/* A hard link to a file outside is kept as a copy (its bytes are whatever
 * the call could read anyway); only the link is removed, the file outside
 * stays as it was. */
static void test_hard_link_kept_as_copy(void **state)
{
	fx *f = *state;
	struct stat st;

	put(f->outside, "orig.png", png1x1, sizeof png1x1);
	assert_int_equal(linkat(f->outside, "orig.png", f->outbox, "hl.png", 0), 0);
	run(f, 1);
	note_with(f, "attached hl.png (image/png, 67 bytes)");
	assert_int_equal(fstatat(f->outside, "orig.png", &st, 0), 0);
	assert_int_equal(st.st_size, 67);
	assert_int_equal(st.st_nlink, 1);
	struct stat kst;
	assert_int_equal(fstatat(f->keep, "hl.png", &kst, 0), 0);
	assert_true(kst.st_ino != st.st_ino); /* a copy, not another link */
}

/* A name already in the keep folder is not overwritten (O_EXCL). */
static void test_keep_never_overwritten(void **state)
{
	fx *f = *state;

	puts_(f->keep, "a.csv", "old");
	puts_(f->outbox, "a.csv", "new,data\n");
	run(f, 1);
	note_with(f, "not attached 'a.csv': a file of that name is already attached");
	assert_int_equal(kept_size(f, "a.csv"), 3);
}

/* The server failing to store a copy is an error of its own (-1), and the
 * outbox is emptied all the same. */
static void test_keep_failure_is_server_error(void **state)
{
	fx *f = *state;
	cof_err err = {0};

	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	puts_(f->outbox, "b.gif", "x");
	assert_int_equal(cof_outbox_collect(f->outbox, -1, &f->rules, &f->files, &f->notes,
					    &err), -1);
	assert_int_equal(err.code, COF_EINTERNAL);
	assert_non_null(strstr(err.msg, "cannot keep outbox file 'a.png'"));
	assert_int_equal(count_entries(f->outbox), 0);
	assert_int_equal(json_array_size(f->files), 0);
	assert_int_equal(json_array_size(f->notes), 2);
	note_with(f, "not attached 'a.png': the server could not store it");
	cof_err_clear(&err);
}

/* A call that took its own write permission away from the outbox. */
static void test_outbox_read_only(void **state)
{
	fx *f = *state;

	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	puts_(f->outbox, "b.txt", "x");
	assert_int_equal(fchmod(f->outbox, 0500), 0);
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 1);
}

/* A file held by a write lease: opening it would wait for the lease to be
 * broken (up to lease-break-time, 45 s); O_NONBLOCK refuses at once. */
static void test_leased_file_not_waited_for(void **state)
{
	fx *f = *state;

	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	/* The lease holder (here: us) is told of the break by SIGIO. */
	void (*old)(int) = signal(SIGIO, SIG_IGN);
	int fd = openat(f->outbox, "a.png", O_WRONLY);
	assert_true(fd >= 0);
	if (fcntl(fd, F_SETLEASE, F_WRLCK) != 0)
		fail_msg("F_SETLEASE: %s", strerror(errno));
	time_t t0 = time(NULL);
	run(f, 1);
	assert_true(time(NULL) - t0 < 30);
	note_with(f, "not attached 'a.png': it is held by another process (a lease); "
		     "not waited for");
	close(fd);
	signal(SIGIO, old);
}

typedef struct grower {
	int fd;
	volatile int stop;
	long written;
} grower;

static void *grow(void *arg)
{
	grower *g = arg;
	static char chunk[65536];

	while (!g->stop) {
		ssize_t w = write(g->fd, chunk, sizeof chunk);
		if (w <= 0)
			break;
		g->written += w;
		if (g->written > 64L * MB) /* enough: the file is unlinked by now */
			break;
	}
	return NULL;
}

/* A file appended to while it is collected: read at most 4 MB + 1 bytes,
 * judged on those, never hung on. */
static void test_growing_file_bounded(void **state)
{
	fx *f = *state;
	grower g = {0};
	pthread_t t;

	put_png(f->outbox, "grow.png", MB);
	g.fd = openat(f->outbox, "grow.png", O_WRONLY | O_APPEND);
	assert_true(g.fd >= 0);
	assert_int_equal(pthread_create(&t, NULL, grow, &g), 0);
	while (g.written < 4L * MB) /* the file is past the limit before we start */
		usleep(1000);
	run(f, 1);
	g.stop = 1;
	pthread_join(t, NULL);
	close(g.fd);
	assert_int_equal(kept_size(f, "grow.png"), -1);
	note_with(f, "not attached 'grow.png': more than 4 MiB; the limit is 4 MiB a file");
}

/* A file that grows just under the limit may be kept; the copy is never
 * over the limit and is what was judged. */
static void test_growing_file_copy_judged(void **state)
{
	fx *f = *state;
	grower g = {0};
	pthread_t t;

	put_png(f->outbox, "g.png", 8);
	g.fd = openat(f->outbox, "g.png", O_WRONLY | O_APPEND);
	assert_int_equal(pthread_create(&t, NULL, grow, &g), 0);
	run(f, 1);
	g.stop = 1;
	pthread_join(t, NULL);
	close(g.fd);
	long k = kept_size(f, "g.png");
	assert_true(k <= COF_OUTBOX_FILE_MAX);
	if (k >= 0) {
		assert_int_equal(json_integer_value(json_object_get(
					 json_array_get(f->files, 0), "size")), k);
	} else {
		note_with(f, "not attached 'g.png': more than 4 MiB");
	}
}

/* ------------------------------------------------------------------ notes */

static void test_one_note_per_entry(void **state)
{
	fx *f = *state;

	put(f->outbox, "ok.png", png1x1, sizeof png1x1);
	puts_(f->outbox, "bad.png", "no");
	puts_(f->outbox, ".dot", "x");
	assert_int_equal(mkdirat(f->outbox, "dir", 0700), 0);
	assert_int_equal(mkfifoat(f->outbox, "f.csv", 0600), 0);
	assert_int_equal(symlinkat("/etc/passwd", f->outbox, "l.csv"), 0);
	run(f, 6);
	/* Sorted bytewise: ".dot" < "bad.png" < "dir" < "f.csv" < "l.csv" < "ok.png" */
	assert_non_null(strstr(json_string_value(json_array_get(f->notes, 0)), "'.dot'"));
	assert_non_null(strstr(json_string_value(json_array_get(f->notes, 5)), "ok.png"));
}

static void test_notes_capped(void **state)
{
	fx *f = *state;
	char n[32];

	for (int i = 0; i < COF_OUTBOX_NOTES_MAX + 6; i++) {
		snprintf(n, sizeof n, "f%03d.gif", i);
		puts_(f->outbox, n, "x");
	}
	put(f->outbox, "z.png", png1x1, sizeof png1x1);
	run(f, COF_OUTBOX_NOTES_MAX + 2);
	note_with(f, "attached z.png");
	note_with(f, "not attached 6 more entries (only the first 64 refusals are listed)");
}

static void test_empty_outbox(void **state)
{
	fx *f = *state;

	run(f, 0);
	assert_int_equal(json_array_size(f->files), 0);
}

/* ------------------------------------------------------------------ types */

static unsigned parse(const char *js, int want_rc, const char *want_msg)
{
	json_error_t je;
	json_t *v = js ? json_loads(js, JSON_DECODE_ANY, &je) : NULL;
	cof_err err = {0};
	unsigned bits = 12345;
	int rc = cof_outbox_types_parse(v, &bits, &err);

	json_decref(v);
	assert_int_equal(rc, want_rc);
	if (want_rc) {
		assert_int_equal(err.code, COF_EVALIDATION);
		if (!strstr(err.msg, want_msg))
			fail_msg("'%s' does not say '%s'", err.msg, want_msg);
	}
	cof_err_clear(&err);
	return bits;
}

static void test_types_parse(void **state)
{
	(void)state;
	assert_int_equal(parse(NULL, 0, NULL), COF_OUT_ALL);
	assert_int_equal(parse("null", 0, NULL), COF_OUT_ALL);
	assert_int_equal(parse("{}", 0, NULL), COF_OUT_ALL);
	assert_int_equal(parse("{\"files\":null}", 0, NULL), COF_OUT_ALL);
	assert_int_equal(parse("{\"files\":[]}", 0, NULL), 0);
	assert_int_equal(parse("{\"files\":[\"png\",\"csv\",\"png\"]}", 0, NULL),
			 COF_OUT_PNG | COF_OUT_CSV);
	assert_int_equal(parse("{\"files\":[\"pdf\",\"svg\"]}", 0, NULL),
			 COF_OUT_PDF | COF_OUT_SVG);
	parse("{\"files\":[\"png\",\"gif\"]}", -1,
	      "'output.files' names 'gif', which is not returned; allowed: png, svg, csv, pdf");
	parse("{\"files\":[\"PNG\"]}", -1, "'PNG'");
	parse("{\"files\":[1]}", -1, "must hold strings");
	parse("{\"files\":\"png\"}", -1, "'files' must be an array");
	parse("{\"images\":[]}", -1, "unknown field 'images'");
	parse("[\"png\"]", -1, "'output' must be an object");
}

static unsigned media(const char *js)
{
	json_t *v = json_loads(js, JSON_DECODE_ANY, NULL);
	unsigned bits = cof_outbox_types_from_media(v);
	json_decref(v);
	return bits;
}

static void test_types_from_media(void **state)
{
	(void)state;
	assert_int_equal(cof_outbox_types_from_media(NULL), COF_OUT_ALL);
	assert_int_equal(media("[]"), 0);
	assert_int_equal(media("[\"image/png\"]"), COF_OUT_PNG);
	assert_int_equal(media("[\"image/svg+xml\", \"application/pdf\"]"),
			 COF_OUT_SVG | COF_OUT_PDF);
	assert_int_equal(media("[\"TEXT/CSV; charset=utf-8\"]"), COF_OUT_CSV);
	assert_int_equal(media("[\"image/*\"]"), COF_OUT_PNG | COF_OUT_SVG);
	assert_int_equal(media("[\"*/*\"]"), COF_OUT_ALL);
	assert_int_equal(media("[\"text/plain\", \"image/gif\", 7, \"image/pngx\"]"), 0);
	assert_int_equal(media("[\"image/\"]"), 0);
}

static void test_type_names(void **state)
{
	char out[64];
	(void)state;
	assert_string_equal(cof_outbox_media_type(COF_OUT_SVG), "image/svg+xml");
	assert_string_equal(cof_outbox_type_name(COF_OUT_PDF), "pdf");
	assert_null(cof_outbox_type_name(COF_OUT_ALL));
	cof_outbox_types_fmt(COF_OUT_ALL, out, sizeof out);
	assert_string_equal(out, "png, svg, csv, pdf");
	cof_outbox_types_fmt(COF_OUT_CSV, out, sizeof out);
	assert_string_equal(out, "csv");
	assert_int_equal(cof_outbox_name_type("x.tar.Pdf", 9), COF_OUT_PDF);
	assert_int_equal(cof_outbox_name_type("x.pngx", 6), 0);
	assert_int_equal(cof_outbox_name_type("png", 3), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_name_100_kept),
		T(test_name_101_refused),
		cmocka_unit_test(test_name_dotdot),
		T(test_name_leading_dot),
		T(test_name_leading_dash_or_underscore),
		T(test_name_bad_chars),
		T(test_name_sanitised_in_note),
		cmocka_unit_test(test_name_quote_bounds),
		T(test_ext_not_listed),
		T(test_ext_missing),
		T(test_ext_case_insensitive),
		T(test_ext_not_allowed_for_turn),
		T(test_ext_none_allowed),
		T(test_png_real),
		T(test_png_fake),
		T(test_pdf_signature),
		T(test_svg_kept_with_prolog),
		T(test_svg_without_svg),
		T(test_svg_near_edge),
		T(test_svg_internal_subset),
		T(test_svg_with_nul),
		T(test_svg_invalid_utf8),
		T(test_csv_with_nul),
		T(test_csv_invalid_utf8),
		T(test_csv_empty_kept),
		T(test_size_4mb_kept),
		T(test_size_4mb_plus_1_refused),
		T(test_fifth_file_refused),
		T(test_refused_do_not_count),
		T(test_turn_files_left),
		T(test_turn_bytes_left_edge),
		T(test_turn_bytes_left_over_by_one),
		T(test_symlink_to_file_outside),
		T(test_symlink_to_folder_outside),
		T(test_fifo_no_hang),
		T(test_socket),
		T(test_folder_removed_recursively),
		T(test_folder_deep),
		T(test_hard_link_kept_as_copy),
		T(test_keep_never_overwritten),
		T(test_keep_failure_is_server_error),
		T(test_outbox_read_only),
		T(test_leased_file_not_waited_for),
		T(test_growing_file_bounded),
		T(test_growing_file_copy_judged),
		T(test_one_note_per_entry),
		T(test_notes_capped),
		T(test_empty_outbox),
		cmocka_unit_test(test_types_parse),
		cmocka_unit_test(test_types_from_media),
		cmocka_unit_test(test_type_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
