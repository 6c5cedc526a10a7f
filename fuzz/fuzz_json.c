/*
 * fuzz_json.c — JSON request bodies. The input is parsed as the HTTP layer
 * does (json_loadb, JSON_REJECT_DUPLICATES; an empty body is NULL), then:
 *  - cof_json_check against a table with every field type, compared with a
 *    reference check written here;
 *  - the body-taking calls of libcoffer on a real store in a temp dir:
 *    cof_volume_create, cof_snapshot_create, cof_file_move, cof_link_create
 *    (and cof_volume_fork, cof_volume_restore, cof_volume_revert, cof_snapshot_patch,
 *    cof_key_create). None may crash or leak; each either succeeds with an
 *    answer or fails with an error code and message.
 * The store is opened once (LLVMFuzzerInitialize) in $COFFER_FUZZ_TMP (else
 * $TMPDIR, else /tmp) and removed at exit. Whatever a call creates is deleted
 * again so that the store stays small and runs stay reproducible.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <unistd.h>
#include "fuzz.h"
#include "util/util.h"

#define ORG "org_fuzz"

static cof_store *st;
static char dir[4096];
static char vol[64];     /* a volume with a few files, remade after a move */
static char snap[64];    /* a snapshot of it */
static char link_key[64]; /* a live key of ORG: links die with the key that made them */
static const cof_idem fuzz_idem = {"fuzz-idem", NULL};

static const char *const seed_files[] = {"a.txt", "dir/b.txt", "dir/sub/c.txt", "é/ü.md"};

static const cof_jfield table[] = {
	{"s", COF_JSTR, 1}, {"i", COF_JINT, 0}, {"b", COF_JBOOL, 0}, {"o", COF_JOBJ, 0},
	{"a", COF_JARR, 0}, {"any", COF_JANY, 0}, {"name", COF_JSTR, 0}, {NULL, 0, 0}};

static void must(int rc, cof_err *err, const char *what)
{
	if (rc) {
		fprintf(stderr, "fuzz_json setup: %s: %s\n", what, err->msg);
		abort();
	}
}

static void make_volume(void)
{
	cof_err err = {0};
	json_t *body = json_pack("{s:s}", "name", "fuzz"), *out = NULL;
	int created;

	must(cof_volume_create(st, ORG, body, NULL, &out, &created, &err), &err, "volume");
	snprintf(vol, sizeof vol, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	json_decref(body);
	for (size_t i = 0; i < sizeof seed_files / sizeof seed_files[0]; i++) {
		must(cof_file_put_bytes(st, ORG, vol, seed_files[i], seed_files[i],
					strlen(seed_files[i]), NULL, (cof_cond){0}, &out, &created,
					&err),
		     &err, "put");
		json_decref(out);
	}
	body = json_pack("{s:b}", "pinned", 1);
	must(cof_snapshot_create(st, ORG, vol, body, &out, &err), &err, "snapshot");
	snprintf(snap, sizeof snap, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	json_decref(body);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void cleanup(void)
{
	if (st)
		cof_store_close(st);
	st = NULL;
	if (dir[0])
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = getenv("COFFER_FUZZ_TMP");
	cof_err err = {0};

	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(dir, sizeof dir, "%s/coffer-fuzz-json-XXXXXX", base);
	if (!mkdtemp(dir)) {
		perror(dir);
		abort();
	}
	atexit(cleanup);
	must(cof_store_open(dir, NULL, &st, &err), &err, "open");
	make_volume();
	{
		cof_principal who = {.org = ORG};
		json_t *body = json_object(), *out = NULL;
		must(cof_key_create(st, &who, body, &out, &err), &err, "key");
		snprintf(link_key, sizeof link_key, "%s",
			 json_string_value(json_object_get(out, "id")));
		json_decref(body), json_decref(out);
	}
	return 0;
}

/* The answer of one call: success with an answer, or an error with a message. */
static void check_answer(const char *call, int rc, json_t *out, cof_err *err)
{
	if (rc == 0) {
		FUZZ_CHECK(out != NULL && err->code == COF_OK, "%s: success without an answer",
			   call);
	} else {
		FUZZ_CHECK(rc == -1, "%s returned %d", call, rc);
		FUZZ_CHECK(err->code > COF_OK && err->code < COF_NCODES && err->msg[0],
			   "%s failed without an error (code %d)", call, (int)err->code);
		FUZZ_CHECK(err->code != COF_EINTERNAL, "%s: internal error on a bad body: %s",
			   call, err->msg);
	}
}

/* Reference for cof_json_check over `table`. */
static int ref_check(json_t *body)
{
	const char *key;
	json_t *v;

	if (!body)
		return 0 == 1; /* "s" is required */
	if (!json_is_object(body))
		return 0;
	json_object_foreach(body, key, v) {
		const cof_jfield *f = table;
		while (f->name && strcmp(f->name, key))
			f++;
		if (!f->name)
			return 0;
		if (json_is_null(v) && !f->required)
			continue;
		int ok = f->type == COF_JSTR ? json_is_string(v) : f->type == COF_JINT ? json_is_integer(v)
		       : f->type == COF_JBOOL ? json_is_boolean(v) : f->type == COF_JOBJ ? json_is_object(v)
		       : f->type == COF_JARR ? json_is_array(v) : 1;
		if (!ok)
			return 0;
	}
	return json_is_string(json_object_get(body, "s"));
}

static void fuzz_check(json_t *body)
{
	cof_err err = {0};
	int rc = cof_json_check(body, table, &err);

	FUZZ_CHECK((rc == 0) == ref_check(body), "cof_json_check says %d (%s)", rc, err.msg);
	FUZZ_CHECK(rc == 0 || (err.code == COF_EVALIDATION && err.msg[0]), "bad refusal");
	if (rc == 0) {
		int64_t i = 0;
		FUZZ_CHECK(cof_json_str(body, "s"), "required string missing");
		(void)cof_json_int(body, "i", &i);
		(void)cof_json_bool(body, "b", 0);
	}
	cof_err_clear(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *body = NULL, *out = NULL;
	cof_err err = {0};
	int created = 0, rc;

	if (size > 0) {
		body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
				  &jerr);
		if (!body)
			return 0;
	}
	fuzz_check(body);
	/* The HTTP layer only passes objects (or NULL); the library is still
	 * asked to cope with any value. */

	/* Volumes: plain, then with an idempotency key (replayed every time). */
	rc = cof_volume_create(st, ORG, body, NULL, &out, &created, &err);
	check_answer("cof_volume_create", rc, out, &err);
	if (rc == 0) {
		const char *id = json_string_value(json_object_get(out, "id"));
		FUZZ_CHECK(id && created == 1, "no id or not created");
		FUZZ_CHECK(cof_volume_delete(st, ORG, id, &err) == 0, "delete: %s", err.msg);
	}
	json_decref(out), out = NULL, cof_err_clear(&err);
	rc = cof_volume_create(st, ORG, body, &fuzz_idem, &out, &created, &err);
	check_answer("cof_volume_create (idem)", rc, out, &err);
	json_decref(out), out = NULL, cof_err_clear(&err);

	/* Snapshots. */
	rc = cof_snapshot_create(st, ORG, vol, body, &out, &err);
	check_answer("cof_snapshot_create", rc, out, &err);
	if (rc == 0) {
		const char *id = json_string_value(json_object_get(out, "id"));
		json_t *contents = json_object_get(out, "contents");
		FUZZ_CHECK(id, "snapshot without id");
		/* A snapshot of given files holds each path once, and says so. */
		if (contents) {
			size_t i, j, n = json_array_size(contents);
			FUZZ_CHECK((json_int_t)n == json_integer_value(json_object_get(out, "files")),
				   "'files' is not the number of contents");
			for (i = 0; i < n; i++)
				for (j = 0; j < i; j++)
					FUZZ_CHECK(strcmp(json_string_value(json_object_get(
								  json_array_get(contents, i), "path")),
							  json_string_value(json_object_get(
								  json_array_get(contents, j), "path"))),
						   "path '%s' given twice is stored once but counted twice",
						   json_string_value(json_object_get(
							   json_array_get(contents, i), "path")));
		}
		FUZZ_CHECK(cof_snapshot_delete(st, ORG, vol, id, 1, &err) == 0, "delete: %s",
			   err.msg);
	}
	json_decref(out), out = NULL, cof_err_clear(&err);
	rc = cof_snapshot_patch(st, ORG, vol, snap, body, &out, &err);
	check_answer("cof_snapshot_patch", rc, out, &err);
	json_decref(out), out = NULL, cof_err_clear(&err);
	if (rc == 0) { /* keep it pinned so that retention never drops it */
		json_t *pin = json_pack("{s:b}", "pinned", 1);
		FUZZ_CHECK(cof_snapshot_patch(st, ORG, vol, snap, pin, &out, &err) == 0, "repin");
		json_decref(pin);
		json_decref(out), out = NULL;
	}
	cof_err_clear(&err);

	/* Links, with and without an idempotency key. */
	rc = cof_link_create(st, ORG, vol, body, NULL, link_key, &out, &err);
	check_answer("cof_link_create", rc, out, &err);
	if (rc == 0) {
		const char *url = json_string_value(json_object_get(out, "url"));
		const char *method = json_string_value(json_object_get(out, "method"));
		cof_link l;
		FUZZ_CHECK(url && !strncmp(url, "/l/", 3) && method, "bad link answer");
		FUZZ_CHECK(cof_link_verify(st, url + 3, method, &l, &err) == 0,
			   "a fresh link does not verify: %s", err.msg);
	}
	json_decref(out), out = NULL, cof_err_clear(&err);
	rc = cof_link_create(st, ORG, vol, body, &fuzz_idem, NULL, &out, &err);
	if (rc)
		check_answer("cof_link_create (idem)", rc, out, &err);
	json_decref(out), out = NULL, cof_err_clear(&err);

	/* Forks and restores (each successful one is undone). */
	rc = cof_volume_fork(st, ORG, vol, body, &out, &err);
	check_answer("cof_volume_fork", rc, out, &err);
	if (rc == 0)
		FUZZ_CHECK(cof_volume_delete(st, ORG, json_string_value(json_object_get(out, "id")),
					     &err) == 0, "delete fork: %s", err.msg);
	json_decref(out), out = NULL, cof_err_clear(&err);
	rc = cof_volume_restore(st, ORG, vol, body, NULL, &out, &err);
	check_answer("cof_volume_restore", rc, out, &err);
	json_decref(out), out = NULL, cof_err_clear(&err);
	/* a revert body ({runId|callId|seq, paths, resolutions}), as a dry run:
	 * the volume stays as the next input expects it */
	if (json_is_object(body)) {
		json_t *dry = json_deep_copy(body);
		json_object_set_new(dry, "dryRun", json_true());
		rc = cof_volume_revert(st, ORG, vol, dry, NULL, &out, &err);
		check_answer("cof_volume_revert", rc, out, &err);
		json_decref(dry);
		json_decref(out), out = NULL, cof_err_clear(&err);
	}

	/* Keys: a non-admin principal of ORG. */
	cof_principal who = {.org = ORG};
	rc = cof_key_create(st, &who, body, &out, &err);
	check_answer("cof_key_create", rc, out, &err);
	json_decref(out), out = NULL, cof_err_clear(&err);

	/* Moves: the last, since a successful one changes the volume; then the
	 * volume is made again. */
	rc = cof_file_move(st, ORG, vol, body, NULL, &out, &err);
	check_answer("cof_file_move", rc, out, &err);
	json_decref(out), out = NULL, cof_err_clear(&err);
	if (rc == 0) {
		FUZZ_CHECK(cof_snapshot_delete(st, ORG, vol, snap, 1, &err) == 0, "%s", err.msg);
		FUZZ_CHECK(cof_volume_delete(st, ORG, vol, &err) == 0, "%s", err.msg);
		make_volume();
	}
	cof_err_clear(&err);
	json_decref(body);
	return 0;
}
