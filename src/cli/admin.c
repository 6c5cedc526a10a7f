/*
 * admin.c — `coffer serve` (cofferd in-process), `coffer key create`, and
 * `coffer gc` / `coffer fsck`, which open a data dir with libcoffer directly
 * instead of asking a server.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/cli.h"

#if defined(__has_include)
#if __has_include("http/server.h")
#include "http/server.h"
#define ADMIN_HAVE_SERVER_H 1
#endif
#endif
#ifndef ADMIN_HAVE_SERVER_H
int cofferd_main(int argc, char **argv);
#endif

/* coffer serve [cofferd flags]: cofferd itself, argv[0] = "serve". */
static int admin_serve(const cli_cmd *cmd, int argc, char **argv)
{
	return cofferd_main(argc, argv);
}

/* coffer key create [--org O] [--agent A] [--name N] [--expires-in S] [--read-only] */
static int admin_key_create(const cli_cmd *cmd, int argc, char **argv)
{
	const char *org = NULL, *agent = NULL, *name = NULL, *pos[1];
	int64_t expires = -1;
	int ro = 0;
	const cli_opt opts[] = {
		{"org", 0, CLI_OPT_STR, &org},
		{"agent", 0, CLI_OPT_STR, &agent},
		{"name", 0, CLI_OPT_STR, &name},
		{"expires-in", 0, CLI_OPT_INT, &expires},
		{"read-only", 0, CLI_OPT_FLAG, &ro},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_object();
	cli_body_str(body, "org", org);
	cli_body_str(body, "agent", agent);
	cli_body_str(body, "name", name);
	if (expires >= 0)
		json_object_set_new(body, "expiresIn", json_integer(expires));
	if (ro)
		json_object_set_new(body, "readOnly", json_true());
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/keys");
	return cli_call_show("POST", &u, body);
}

/* coffer key list [--org O] */
static int admin_key_list(const cli_cmd *cmd, int argc, char **argv)
{
	const char *org = NULL, *pos[1];
	const cli_opt opts[] = {
		{"org", 0, CLI_OPT_STR, &org},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/keys");
	if (org)
		cli_url_query(&u, "org", org);
	return cli_call_show("GET", &u, NULL);
}

/* coffer key revoke ID */
static int admin_key_revoke(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	const cli_opt opts[] = {{NULL, 0, 0, NULL}};
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	cli_url_begin(&u);
	cli_url_lit(&u, "/v1/keys/");
	cli_url_seg(&u, pos[0]);
	return cli_call_show("DELETE", &u, NULL);
}

int cli_open_data(const char *dir, const cof_store_opts *opts, cof_store **st)
{
	cof_buf meta = COF_BUF_INIT;
	cof_err err = {0};
	struct stat sb;
	int missing;

	cli_buf_addf(&meta, "%s/meta.db", dir);
	missing = stat(meta.data, &sb) != 0;
	cof_buf_reset(&meta);
	/* a node on shared engines keeps their URLs in its dir instead */
	cli_buf_addf(&meta, "%s/meta.url", dir);
	missing = missing && stat(meta.data, &sb) != 0;
	cof_buf_release(&meta);
	if (missing && !(opts && opts->meta_url))
		return cli_fail("'%s' is not a coffer data dir (no meta.db or meta.url)", dir);
	if (cof_store_open(dir, opts, st, &err)) {
		cli_fail("cannot open data dir '%s': %s (%s)", dir, err.msg,
			 cof_code_type(err.code));
		cof_err_clear(&err);
		return CLI_FAIL;
	}
	return CLI_OK;
}

/* Prints a gc/fsck report: --json as is, else one "key  value" line per field
 * and, for lists, one indented line per item. */
static void admin_report(json_t *rep)
{
	const char *key;
	json_t *v;
	size_t width = 0;

	if (cli_g.json || !json_is_object(rep)) {
		cli_print_json(rep);
		return;
	}
	json_object_foreach(rep, key, v)
		if (strlen(key) > width)
			width = strlen(key);
	json_object_foreach(rep, key, v) {
		char tmp[4096];
		size_t i;
		json_t *item;

		if (!json_is_array(v)) {
			if (json_is_boolean(v))
				printf("%-*s  %s\n", (int)width, key, json_is_true(v) ? "yes" : "no");
			else
				printf("%-*s  %s\n", (int)width, key,
				       cli_cell(rep, key, tmp, sizeof(tmp)));
			continue;
		}
		printf("%-*s  %zu\n", (int)width, key, json_array_size(v));
		json_array_foreach(v, i, item) {
			json_t *wrap = json_pack("{s:O}", "x", item);

			printf("  - %s\n", cli_cell(wrap, "x", tmp, sizeof(tmp)));
			json_decref(wrap);
		}
	}
}

/* Where gc and fsck find the dataset: --data DIR, and --meta/--blobs URLs
 * for engines outside it (docs/api.md "Running on several nodes"). Each
 * command's table spells the three options out: test_cli reads the tables
 * from the source (a macro would hide them from it). */
typedef struct admin_where {
	const char *dir, *meta, *blobs;
} admin_where;

/* Shared body of gc and fsck once their options are parsed: open the store,
 * run, print, close. fsck exits 1 unless the report says ok. grace < 0:
 * default. With --meta and no --data, DIR is a temp folder of the tool's
 * own (it holds no dataset: the engines do), removed at the end. */
static int admin_store_run(const cli_cmd *cmd, admin_where w, int64_t grace, int is_gc)
{
	cof_store_opts sopts = {.meta_url = w.meta, .blobs_url = w.blobs, .tool = 1};
	char tmp[PATH_MAX] = "";
	cof_store *st = NULL;
	cof_err err = {0};
	json_t *rep = NULL;
	int rc;

	if (!w.dir && !w.meta)
		return cli_usage(cmd, "missing --data DIR (or --meta URL)");
	if (!w.dir && cof_temp_dir("coffer-tool", tmp, sizeof tmp))
		return cli_fail("cannot make a temp folder: %s", strerror(errno));
	if (grace >= 0)
		sopts.gc_grace_seconds = grace ? grace : 1; /* 0 means "default" below */
	rc = cli_open_data(w.dir ? w.dir : tmp, &sopts, &st);
	if (rc)
		goto out;
	if ((is_gc ? cof_gc(st, &rep, &err) : cof_fsck(st, &rep, &err))) {
		rc = cli_fail("%s failed: %s (%s)", cmd->name, err.msg, cof_code_type(err.code));
		cof_err_clear(&err);
	} else {
		admin_report(rep);
		if (!is_gc && !json_is_true(json_object_get(rep, "ok")))
			rc = CLI_FAIL;
	}
	json_decref(rep);
	cof_store_close(st);
out:
	if (!w.dir)
		cof_rm_tree(tmp);
	return rc;
}

/* coffer gc --data DIR [--grace SECONDS] */
static int admin_gc(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	admin_where w = {0};
	int64_t grace = -1;
	const cli_opt opts[] = {
		{"data", 'd', CLI_OPT_STR, &w.dir},
		{"meta", 0, CLI_OPT_STR, &w.meta},
		{"blobs", 0, CLI_OPT_STR, &w.blobs},
		{"grace", 0, CLI_OPT_INT, &grace},
		{NULL, 0, 0, NULL},
	};
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	return admin_store_run(cmd, w, grace, 1);
}

/* coffer fsck --data DIR */
static int admin_fsck(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	admin_where w = {0};
	const cli_opt opts[] = {
		{"data", 'd', CLI_OPT_STR, &w.dir},
		{"meta", 0, CLI_OPT_STR, &w.meta},
		{"blobs", 0, CLI_OPT_STR, &w.blobs},
		{NULL, 0, 0, NULL},
	};
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	return admin_store_run(cmd, w, -1, 0);
}

/* coffer admin rotate-key --data DIR: a new admin key in DIR/admin.key; the
 * old one is revoked (401 from its next request, on every node). Prints the
 * new key. */
static int admin_rotate_key(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1];
	admin_where w = {0};
	const cli_opt opts[] = {
		{"data", 'd', CLI_OPT_STR, &w.dir},
		{"meta", 0, CLI_OPT_STR, &w.meta},
		{"blobs", 0, CLI_OPT_STR, &w.blobs},
		{NULL, 0, 0, NULL},
	};
	cof_store_opts sopts = {0};
	cof_store *st = NULL;
	cof_err err = {0};
	char key[80];
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!w.dir)
		return cli_usage(cmd, "missing --data DIR");
	sopts.meta_url = w.meta;
	sopts.blobs_url = w.blobs;
	if ((rc = cli_open_data(w.dir, &sopts, &st)))
		return rc;
	if (cof_admin_key_rotate(st, key, &err)) {
		rc = cli_fail("rotate-key failed: %s (%s)", err.msg, cof_code_type(err.code));
		cof_err_clear(&err);
	} else {
		printf("%s\n", key);
	}
	cof_store_close(st);
	return rc;
}

/* coffer migrate --from DATA --to-meta URL --to-blobs URL */
static int admin_migrate(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[1], *from = NULL, *meta = NULL, *blobs = NULL;
	const cli_opt opts[] = {
		{"from", 0, CLI_OPT_STR, &from},
		{"to-meta", 0, CLI_OPT_STR, &meta},
		{"to-blobs", 0, CLI_OPT_STR, &blobs},
		{NULL, 0, 0, NULL},
	};
	cof_err err = {0};
	json_t *rep = NULL;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 0, 0, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!from || !meta || !blobs)
		return cli_usage(cmd, "--from, --to-meta and --to-blobs are all needed");
	if (cof_migrate(from, meta, blobs, &rep, &err)) {
		rc = cli_fail("migrate failed: %s (%s)", err.msg, cof_code_type(err.code));
		cof_err_clear(&err);
		return rc;
	}
	admin_report(rep);
	json_decref(rep);
	return CLI_OK;
}

/* coffer backup DATA DEST, coffer restore-backup BACKUP DATA (`coffer restore`
 * is a volume's restore to a snapshot): exit 2 for what the
 * caller can change (a DEST that is not empty, a DATA a cofferd holds, a
 * dataset on other engines), 1 for a copy that failed. */
static int admin_copy(const cli_cmd *cmd, int argc, char **argv, int restore)
{
	const char *pos[2];
	const cli_opt opts[] = {{NULL, 0, 0, NULL}};
	cof_err err = {0};
	json_t *rep = NULL;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if ((restore ? cof_restore : cof_backup)(pos[0], pos[1], &rep, &err)) {
		int usage = err.code == COF_ECONFLICT || err.code == COF_EVALIDATION;
		cli_fail("%s failed: %s (%s)", cmd->name, err.msg, cof_code_type(err.code));
		cof_err_clear(&err);
		return usage ? CLI_USAGE : CLI_FAIL;
	}
	/* a report for scripts: JSON whatever --output says */
	cli_print_json(rep);
	json_decref(rep);
	return CLI_OK;
}

static int admin_backup(const cli_cmd *cmd, int argc, char **argv)
{
	return admin_copy(cmd, argc, argv, 0);
}

static int admin_restore(const cli_cmd *cmd, int argc, char **argv)
{
	return admin_copy(cmd, argc, argv, 1);
}

const cli_cmd cli_admin_cmds[] = {
	{NULL, "serve", "[--data DIR] [--listen HOST:PORT] [cofferd flags]",
	 "run cofferd in the foreground (same flags as cofferd)",
	 "Everything after 'serve' goes to cofferd; see 'coffer serve --help'.\n",
	 admin_serve},
	{"key", "create", "[--org O] [--agent A] [--name N] [--expires-in SECONDS] [--read-only]",
	 "mint an API key (the secret is shown once)",
	 "Options:\n"
	 "  --org O              the key's organization (only the admin key may name a\n"
	 "                       new one; default: the caller's)\n"
	 "  --agent A            bind the key to agent A\n"
	 "  --name N             a label shown in 'coffer key list'\n"
	 "  --expires-in SECONDS it stops working after this long (60 to ten years)\n"
	 "  --read-only          it may only GET and HEAD\n",
	 admin_key_create},
	{"key", "list", "[--org O]", "list the organization's keys (never a secret)",
	 "Options:\n"
	 "  --org O              another organization's keys (the admin key only)\n",
	 admin_key_list},
	{"key", "revoke", "ID", "revoke a key at once (ID from 'coffer key list')", "",
	 admin_key_revoke},
	{NULL, "gc", "--data DIR [--meta URL] [--blobs URL] [--grace SECONDS]",
	 "delete content nothing refers to any more (works on the data dir)",
	 "Opens DIR directly (no server needed). Safe beside the cofferd serving DIR:\n"
	 "uploads under way are left alone and content a write is about to name is\n"
	 "never deleted (docs/design.md, \"Processes sharing a data dir\").\n\n"
	 "Options:\n"
	 "  -d, --data DIR       the data dir\n"
	 "  --meta URL           the metadata store, when not DIR/meta.db\n"
	 "  --blobs URL          the blob store, when not DIR/blobs\n"
	 "  --grace SECONDS      keep unreferenced content this long (default 24 h)\n",
	 admin_gc},
	{NULL, "fsck", "--data DIR [--meta URL] [--blobs URL]",
	 "check that every stored file's content exists and hashes right",
	 "Opens DIR directly (no server needed; safe beside the cofferd serving DIR:\n"
	 "uploads under way are left alone). Exits 1 when something is missing\n"
	 "or corrupt.\n\n"
	 "Options:\n"
	 "  -d, --data DIR       the data dir\n"
	 "  --meta URL           the metadata store, when not DIR/meta.db\n"
	 "  --blobs URL          the blob store, when not DIR/blobs\n",
	 admin_fsck},
	{"admin", "rotate-key", "--data DIR [--meta URL] [--blobs URL]",
	 "replace the admin key (the old one is revoked at once)",
	 "Opens DIR directly (cofferd may be running: it reads keys from the\n"
	 "metadata store on every request). Writes the new key to DIR/admin.key\n"
	 "(mode 0600) and prints it.\n\n"
	 "Options:\n"
	 "  -d, --data DIR       the data dir\n"
	 "  --meta URL           the metadata store, when not DIR/meta.db\n"
	 "  --blobs URL          the blob store, when not DIR/blobs\n",
	 admin_rotate_key},
	{NULL, "migrate", "--from DATA --to-meta URL --to-blobs URL",
	 "copy an embedded dataset into PostgreSQL + S3 and verify the copy",
	 "Copies DATA (DATA/meta.db and DATA/blobs; no cofferd may serve it) into an\n"
	 "empty PostgreSQL database and a blob store: every table, every blob, the\n"
	 "keys (the admin key of DATA/admin.key stays valid). Then verifies: rows per\n"
	 "table, every blob read back and hashed, fsck of the target. A target that\n"
	 "is not empty is refused. After a crash, run it again: content is copied\n"
	 "once, the metadata in one transaction (docs/design.md).\n\n"
	 "Options:\n"
	 "  --from DATA          the embedded data dir\n"
	 "  --to-meta URL        postgres://... (the new dataset's metadata)\n"
	 "  --to-blobs URL       s3://BUCKET/PREFIX?endpoint=..&region=.. (or a path)\n",
	 admin_migrate},
	{NULL, "backup", "DATA DEST",
	 "a consistent online backup of an embedded data dir (cofferd may run)",
	 "Copies DATA's metadata as one SQLite snapshot (the online backup API; a\n"
	 "cofferd may be serving DATA and writing), then every blob that snapshot\n"
	 "names (sha256 checked, fsynced), admin.key and link.key, into DEST, which\n"
	 "must be new or empty (exit 2 otherwise). Prints a JSON report: files,\n"
	 "blobs, bytes, volumes, maxSeq. Datasets on PostgreSQL + S3 are refused:\n"
	 "use their own tools (docs/design.md, \"Backups\").\n",
	 admin_backup},
	{NULL, "restore-backup", "BACKUP DATA",
	 "copy a backup into a new data dir and fsck it",
	 "DATA must be new or empty and no cofferd may hold it (exit 2 otherwise):\n"
	 "restoring over a live dataset is refused, since its server would go on\n"
	 "serving what it holds. Copies BACKUP in with the same checks as backup,\n"
	 "then runs fsck on the result (exit 1 unless clean) and prints both.\n",
	 admin_restore},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
