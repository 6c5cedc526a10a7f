/*
 * files.c — the file commands of a volume: put, get, ls, rm, mv, changes,
 * archive and link. Bytes are streamed both ways; nothing reads a whole file
 * into memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"

/* Starts `u` as ".../v1/volumes/VOL/WHAT" (`what` literal, e.g. "/files/"). */
static void files_url(cof_buf *u, const char *vol, const char *what)
{
	cli_url_begin(u);
	cli_url_lit(u, "/v1/volumes/");
	cli_url_seg(u, vol);
	cli_url_lit(u, what);
}

/* Appends "NAME: VALUE" to a header list; exits on out-of-memory. */
static struct curl_slist *files_header(struct curl_slist *h, const char *name,
				       const char *value)
{
	cof_buf line = COF_BUF_INIT;

	cli_buf_addf(&line, "%s: %s", name, value);
	h = cli_check_alloc(curl_slist_append(h, line.data));
	cof_buf_release(&line);
	return h;
}

/* Adds `If-Match: "N"` when if_match >= 0. */
static struct curl_slist *files_if_match(struct curl_slist *h, int64_t if_match)
{
	char etag[32];

	if (if_match < 0)
		return h;
	snprintf(etag, sizeof(etag), "\"%" PRId64 "\"", if_match);
	return files_header(h, "If-Match", etag);
}

int cli_upload_source(const cli_cmd *cmd, const char *src, int given, FILE **f,
		      struct stat *sb)
{
	if (!strcmp(src, "-")) {
		if (!given && isatty(STDIN_FILENO))
			return cli_usage(cmd, "no FILE given and stdin is a terminal");
		*f = stdin;
	} else if (!(*f = fopen(src, "rb"))) {
		return cli_fail("cannot open '%s': %s", src, strerror(errno));
	}
	if (fstat(fileno(*f), sb) != 0) {
		memset(sb, 0, sizeof *sb);
	} else if (S_ISDIR(sb->st_mode)) {
		if (*f != stdin)
			fclose(*f);
		return cli_fail("cannot upload '%s': it is a directory", src);
	}
	return CLI_OK;
}

/* coffer put VOL PATH [FILE|-]: streams FILE (or stdin) to the volume. */
static int files_put(const cli_cmd *cmd, int argc, char **argv)
{
	int64_t if_match = -1;
	int if_none = 0, n, rc;
	const char *ctype = NULL, *pos[3];
	const cli_opt opts[] = {
		{"if-match", 0, CLI_OPT_INT, &if_match},
		{"if-none-match", 0, CLI_OPT_FLAG, &if_none},
		{"content-type", 0, CLI_OPT_STR, &ctype},
		{NULL, 0, 0, NULL},
	};
	struct curl_slist *hdrs = NULL;
	cof_buf u = COF_BUF_INIT;
	struct stat sb;
	cli_resp resp;
	FILE *f;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 3, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (if_match >= 0 && if_none)
		return cli_usage(cmd, "--if-match and --if-none-match exclude each other");
	if ((rc = cli_upload_source(cmd, n == 3 ? pos[2] : "-", n == 3, &f, &sb)))
		return rc;
	hdrs = files_if_match(hdrs, if_match);
	if (if_none)
		hdrs = files_header(hdrs, "If-None-Match", "*");
	if (ctype)
		hdrs = files_header(hdrs, "Content-Type", ctype);
	files_url(&u, pos[0], "/files/");
	cli_url_path(&u, pos[1]);
	{
		cli_req req = {.method = "PUT", .url = u.data, .upload = f,
			       .upload_size = S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1,
			       .headers = hdrs, .progress = 1};

		rc = cli_http(&req, &resp);
	}
	if (f != stdin)
		fclose(f);
	if (rc == CLI_OK)
		cli_print_object(resp.json);
	json_decref(resp.json);
	curl_slist_free_all(hdrs);
	cof_buf_release(&u);
	return rc;
}

/* True when `r` is a byte range the Range header takes: "A-B" (A <= B), "A-"
 * or "-N"; numbers past int64 are refused too. */
static int files_range_ok(const char *r)
{
	size_t a = strspn(r, "0123456789"), b;
	int64_t first, last;

	if (r[a] != '-')
		return 0;
	b = strspn(r + a + 1, "0123456789");
	if (r[a + 1 + b] != '\0' || (!a && !b))
		return 0;
	if (a) {
		char num[32];

		if (a >= sizeof(num))
			return 0;
		memcpy(num, r, a);
		num[a] = '\0';
		if (cli_parse_int(num, &first))
			return 0;
	}
	if (b && cli_parse_int(r + a + 1, &last))
		return 0;
	return !a || !b || first <= last;
}

/* coffer get VOL PATH [-o FILE] [--snapshot S] [--range A-B] */
static int files_get(const cli_cmd *cmd, int argc, char **argv)
{
	const char *out = NULL, *snap = NULL, *range = NULL, *pos[2];
	const cli_opt opts[] = {
		{"output", 'o', CLI_OPT_STR, &out},
		{"snapshot", 0, CLI_OPT_STR, &snap},
		{"range", 0, CLI_OPT_STR, &range},
		{NULL, 0, 0, NULL},
	};
	struct curl_slist *hdrs = NULL;
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (range) {
		cof_buf h = COF_BUF_INIT;

		if (!strncmp(range, "bytes=", 6))
			range += 6;
		if (!files_range_ok(range))
			return cli_usage(cmd, "--range wants FIRST-LAST (FIRST <= LAST), FIRST- or "
					 "-COUNT (bytes), not '%s'", range);
		cli_buf_addf(&h, "Range: bytes=%s", range);
		hdrs = cli_check_alloc(curl_slist_append(NULL, h.data));
		cof_buf_release(&h);
	}
	files_url(&u, pos[0], "/files/");
	cli_url_path(&u, pos[1]);
	cli_url_query(&u, "snapshot", snap);
	{
		cli_req req = {.method = "GET", .url = u.data, .headers = hdrs,
			       .download = 1, .out_path = out, .progress = 1,
			       .upload_size = -1, .text_tty = cmd};

		rc = cli_http(&req, NULL);
	}
	curl_slist_free_all(hdrs);
	cof_buf_release(&u);
	return rc;
}

/* Prints one listing row: VERSION SIZE UPDATED PATH. */
static void files_ls_row(json_t *f)
{
	char t1[32], t2[64], t3[4096], hs[16];

	cli_human_size(cli_int(f, "size", 0), hs, sizeof(hs));
	printf("%8s %6s  %-20s  %s\n", cli_cell(f, "version", t1, sizeof(t1)), hs,
	       cli_cell(f, "updatedAt", t2, sizeof(t2)), cli_cell(f, "path", t3, sizeof(t3)));
}

static void files_ls_header(void)
{
	printf("%8s %6s  %-20s  %s\n", "VERSION", "SIZE", "UPDATED", "PATH");
}

/* coffer ls VOL [--prefix P] [--glob G] [--snapshot S] [--all] [--cursor C]
 * [--limit N]: one page, or every page with --all. */
static int files_ls(const cli_cmd *cmd, int argc, char **argv)
{
	const char *prefix = NULL, *glob = NULL, *snap = NULL, *cursor = NULL, *pos[1];
	int64_t limit = 0;
	int all = 0, n, rc;
	const cli_opt opts[] = {
		{"prefix", 0, CLI_OPT_STR, &prefix},
		{"glob", 0, CLI_OPT_STR, &glob},
		{"snapshot", 0, CLI_OPT_STR, &snap},
		{"all", 'a', CLI_OPT_FLAG, &all},
		{"cursor", 0, CLI_OPT_STR, &cursor},
		{"limit", 0, CLI_OPT_INT, &limit},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	files_url(&u, pos[0], "/files");
	cli_url_query(&u, "prefix", prefix);
	cli_url_query(&u, "glob", glob);
	cli_url_query(&u, "snapshot", snap);
	if (limit)
		cli_url_query_int(&u, "limit", limit);
	rc = cli_pages(u.data, "files", cursor, all, "files", files_ls_header, files_ls_row);
	cof_buf_release(&u);
	return rc;
}

/* coffer rm VOL PATH [--if-match N] */
static int files_rm(const cli_cmd *cmd, int argc, char **argv)
{
	int64_t if_match = -1;
	const char *pos[2];
	const cli_opt opts[] = {
		{"if-match", 0, CLI_OPT_INT, &if_match},
		{NULL, 0, 0, NULL},
	};
	struct curl_slist *hdrs;
	cof_buf u = COF_BUF_INIT;
	cli_resp resp;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	hdrs = files_if_match(NULL, if_match);
	files_url(&u, pos[0], "/files/");
	cli_url_path(&u, pos[1]);
	{
		cli_req req = {.method = "DELETE", .url = u.data, .headers = hdrs,
			       .upload_size = -1};

		rc = cli_http(&req, &resp);
	}
	if (rc == CLI_OK && cli_g.json && resp.json)
		cli_print_json(resp.json);
	else if (rc == CLI_OK)
		printf("removed %s\n", pos[1]);
	json_decref(resp.json);
	curl_slist_free_all(hdrs);
	cof_buf_release(&u);
	return rc;
}

/* coffer mv VOL FROM TO [--overwrite] */
static int files_mv(const cli_cmd *cmd, int argc, char **argv)
{
	int overwrite = 0, n, rc;
	const char *pos[3];
	const cli_opt opts[] = {
		{"overwrite", 'f', CLI_OPT_FLAG, &overwrite},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	json_t *body, *ans = NULL;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 3, 3, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_pack("{s:s,s:s,s:b}", "from", pos[1], "to", pos[2], "overwrite", overwrite);
	files_url(&u, pos[0], "/move");
	rc = cli_call("POST", u.data, body, &ans);
	if (rc == CLI_OK && (cli_g.json || !json_is_integer(json_object_get(ans, "seq"))))
		cli_print_object(ans);
	else if (rc == CLI_OK)
		printf("moved %s to %s (seq %" JSON_INTEGER_FORMAT ")\n", pos[1], pos[2],
		       json_integer_value(json_object_get(ans, "seq")));
	json_decref(ans);
	json_decref(body);
	cof_buf_release(&u);
	return rc;
}

/* Prints one change as a table row, or as a JSON line with --json. */
static void files_change_row(json_t *c)
{
	char t1[32], t2[32], t3[4096], t4[32], hs[16];

	if (cli_g.json) {
		cli_print_json_line(c);
		return;
	}
	if (json_is_integer(json_object_get(c, "size")))
		cli_human_size(cli_int(c, "size", 0), hs, sizeof(hs));
	else
		snprintf(hs, sizeof(hs), "-");
	printf("%8s  %-6s %8s %6s  %s\n", cli_cell(c, "seq", t1, sizeof(t1)),
	       cli_cell(c, "op", t2, sizeof(t2)),
	       json_object_get(c, "version") ? cli_cell(c, "version", t4, sizeof(t4)) : "-", hs,
	       cli_cell(c, "path", t3, sizeof(t3)));
}

/* coffer changes VOL [--since N] [--prefix P] [--wait S] [--follow] */
static int files_changes(const cli_cmd *cmd, int argc, char **argv)
{
	int64_t since = 0, wait = -1;
	int follow = 0, n, rc;
	const char *prefix = NULL, *pos[1];
	const cli_opt opts[] = {
		{"since", 0, CLI_OPT_INT, &since},
		{"prefix", 0, CLI_OPT_STR, &prefix},
		{"wait", 0, CLI_OPT_INT, &wait},
		{"follow", 'f', CLI_OPT_FLAG, &follow},
		{NULL, 0, 0, NULL},
	};

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (wait > 60)
		return cli_usage(cmd, "--wait is at most 60 seconds");
	if (follow && wait < 0)
		wait = 30;
	if (!cli_g.json)
		printf("%8s  %-6s %8s %6s  %s\n", "SEQ", "OP", "VERSION", "SIZE", "PATH");
	fflush(stdout);
	for (;;) {
		cof_buf u = COF_BUF_INIT;
		json_t *ans = NULL, *changes, *c;
		size_t i;

		files_url(&u, pos[0], "/changes");
		cli_url_query_int(&u, "since", since);
		cli_url_query(&u, "prefix", prefix);
		if (wait >= 0)
			cli_url_query_int(&u, "wait", wait);
		{
			cli_req req = {.method = "GET", .url = u.data, .upload_size = -1,
				       .timeout = wait > 0 ? (long)wait + 30 : 0};
			cli_resp resp;

			rc = cli_http(&req, &resp);
			ans = resp.json;
		}
		cof_buf_release(&u);
		if (rc)
			return rc;
		if (cli_g.json && !follow) {
			cli_print_json(ans);
			json_decref(ans);
			return CLI_OK;
		}
		changes = json_object_get(ans, "changes");
		json_array_foreach(changes, i, c) {
			files_change_row(c);
			if (cli_int(c, "seq", since) > since)
				since = cli_int(c, "seq", since);
		}
		if (!json_array_size(changes) && cli_int(ans, "seq", since) > since)
			since = cli_int(ans, "seq", since);
		fflush(stdout);
		json_decref(ans);
		if (!follow)
			return CLI_OK;
	}
}

/* coffer archive VOL [-o FILE] [--snapshot S] [--path P] [--glob G] */
static int files_archive(const cli_cmd *cmd, int argc, char **argv)
{
	const char *out = NULL, *snap = NULL, *path = NULL, *glob = NULL, *pos[1];
	const cli_opt opts[] = {
		{"output", 'o', CLI_OPT_STR, &out},
		{"snapshot", 0, CLI_OPT_STR, &snap},
		{"path", 0, CLI_OPT_STR, &path},
		{"glob", 0, CLI_OPT_STR, &glob},
		{NULL, 0, 0, NULL},
	};
	cof_buf u = COF_BUF_INIT;
	int n, rc;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 1, 1, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (cli_out_is_tty(out))
		return cli_refuse_tty(cmd, "a gzip stream");
	files_url(&u, pos[0], "/archive");
	cli_url_query(&u, "snapshot", snap);
	cli_url_query(&u, "path", path);
	cli_url_query(&u, "glob", glob);
	{
		cli_req req = {.method = "GET", .url = u.data, .download = 1,
			       .out_path = out, .progress = 1, .upload_size = -1};

		rc = cli_http(&req, NULL);
	}
	cof_buf_release(&u);
	return rc;
}

/* coffer link VOL PATH [--put] [--expires S] [--max-bytes N] [--content-type T]
 * [--idempotency-key K] */
static int files_link(const cli_cmd *cmd, int argc, char **argv)
{
	int put = 0, n, rc;
	int64_t expires = -1, max_bytes = -1;
	const char *ctype = NULL, *idem = NULL, *pos[2], *url;
	const cli_opt opts[] = {
		{"put", 0, CLI_OPT_FLAG, &put},
		{"expires", 0, CLI_OPT_INT, &expires},
		{"max-bytes", 0, CLI_OPT_SIZE, &max_bytes},
		{"content-type", 0, CLI_OPT_STR, &ctype},
		{"idempotency-key", 0, CLI_OPT_STR, &idem},
		{NULL, 0, 0, NULL},
	};
	struct curl_slist *hdrs = NULL;
	cof_buf u = COF_BUF_INIT;
	cli_resp resp;
	json_t *body;

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &n)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	body = json_pack("{s:s,s:s}", "path", pos[1], "method", put ? "PUT" : "GET");
	if (expires >= 0)
		json_object_set_new(body, "expiresIn", json_integer(expires));
	if (max_bytes >= 0)
		json_object_set_new(body, "maxBytes", json_integer(max_bytes));
	cli_body_str(body, "contentType", ctype);
	if (idem)
		hdrs = files_header(NULL, "Idempotency-Key", idem);
	files_url(&u, pos[0], "/links");
	{
		cli_req req = {.method = "POST", .url = u.data, .body = body,
			       .headers = hdrs, .upload_size = -1};

		rc = cli_http(&req, &resp);
	}
	url = json_string_value(json_object_get(resp.json, "url"));
	if (rc == CLI_OK && (cli_g.json || !url)) {
		cli_print_object(resp.json);
	} else if (rc == CLI_OK) {
		cof_buf abs = COF_BUF_INIT;

		if (url[0] == '/')
			cli_url_begin(&abs); /* a relative url is on this server */
		cli_buf_adds(&abs, url);
		puts(abs.data);
		cof_buf_release(&abs);
	}
	json_decref(resp.json);
	json_decref(body);
	curl_slist_free_all(hdrs);
	cof_buf_release(&u);
	return rc;
}

const cli_cmd cli_files_cmds[] = {
	{NULL, "put", "VOL PATH [FILE|-] [--if-match N] [--if-none-match] [--content-type T]",
	 "upload a file (streamed) to PATH in volume VOL",
	 "Reads FILE, or stdin when FILE is '-' or left out.\n\n"
	 "Options:\n"
	 "  --if-match N         write only if the file is still at version N\n"
	 "  --if-none-match      write only if the file does not exist yet\n"
	 "  --content-type T     store T as the media type (default: sniffed)\n",
	 files_put},
	{NULL, "get", "VOL PATH [-o FILE] [--snapshot S] [--range A-B]",
	 "download a file (to stdout, or to FILE)",
	 "Options:\n"
	 "  -o, --output FILE    write to FILE (replaced only once the download is whole)\n"
	 "  --snapshot S         read the file as snapshot S had it\n"
	 "  --range A-B          bytes A to B inclusive; also A- and -N (the last N)\n",
	 files_get},
	{NULL, "ls", "VOL [--prefix P] [--glob G] [--snapshot S] [--all] [--cursor C] [--limit N]",
	 "list files: VERSION SIZE UPDATED PATH",
	 "Options:\n"
	 "  --prefix P           only paths starting with P\n"
	 "  --glob G             only paths matching G (*, ?, **, [a-z])\n"
	 "  --snapshot S         list as snapshot S had it\n"
	 "  -a, --all            fetch every page (pages hold at most 10,000 files)\n"
	 "  --cursor C           start at the page a previous listing pointed to\n"
	 "  --limit N            at most N files a page\n",
	 files_ls},
	{NULL, "rm", "VOL PATH [--if-match N]", "remove a file",
	 "Options:\n"
	 "  --if-match N         remove only if the file is still at version N\n",
	 files_rm},
	{NULL, "mv", "VOL FROM TO [--overwrite]",
	 "move a file or a whole directory in one change",
	 "Options:\n"
	 "  -f, --overwrite      replace TO if it exists (else the move fails)\n",
	 files_mv},
	{NULL, "changes", "VOL [--since N] [--prefix P] [--wait S] [--follow]",
	 "show the changes feed: SEQ OP VERSION SIZE PATH",
	 "Options:\n"
	 "  --since N            changes after seq N (default 0: all that are kept)\n"
	 "  --prefix P           only changes under P\n"
	 "  --wait S             wait up to S seconds (at most 60) for a change\n"
	 "  -f, --follow         keep waiting and print each change as it comes\n"
	 "                       (with --json: one JSON object a line)\n",
	 files_changes},
	{NULL, "archive", "VOL [-o FILE.tar.gz] [--snapshot S] [--path P] [--glob G]",
	 "download files as a tar.gz stream (to stdout or FILE)",
	 "Options:\n"
	 "  -o, --output FILE    write to FILE (stdout must not be a terminal otherwise)\n"
	 "  --snapshot S         the files as snapshot S had them\n"
	 "  --path P             only files under P; names are relative to P\n"
	 "  --glob G             only files matching G\n",
	 files_archive},
	{NULL, "link",
	 "VOL PATH [--put] [--expires S] [--max-bytes N] [--content-type T] "
	 "[--idempotency-key K]",
	 "make a signed link to a file (prints the URL)",
	 "Anyone with the link may use it, without a key, until it expires.\n\n"
	 "Options:\n"
	 "  --put                a link to upload PATH (default: to download it)\n"
	 "  --expires S          valid for S seconds (default 900, at most 86400)\n"
	 "  --max-bytes N        largest upload the link takes (512K, 10M, ...)\n"
	 "  --content-type T     the only media type the upload may have\n"
	 "  --idempotency-key K  a retry with this key fails instead of making another\n",
	 files_link},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
