/*
 * test_outbox.c — src/turn/outbox*.c, the rules of API.md "Outbox" at their
 * edges, each its own test, on a real folder: names, extensions, signatures,
 * UTF-8 content, sizes and counts, and the parsing of which types come back.
 * test_outbox_entries.c has the kinds of entries an untrusted call can leave.
 * After every collection the outbox must be empty and each entry have one note.
 */
#include "outbox_fx.h"

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
		cmocka_unit_test(test_types_parse),
		cmocka_unit_test(test_types_from_media),
		cmocka_unit_test(test_type_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
