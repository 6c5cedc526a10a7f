/*
 * cli.h — what the files of the `coffer` command share: the command table, the
 * option parser, the HTTP client (one place for URLs, auth, errors, progress)
 * and the output helpers.
 *
 * Exit codes, everywhere: 0 success, 1 the server refused or could not be
 * reached (message on stderr), 2 the command line was wrong (message + hint).
 * Commands return one of these; nothing below main() calls exit() except on
 * out-of-memory, which prints "coffer: out of memory" and exits 1.
 */
#ifndef COF_CLI_H
#define COF_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <jansson.h>
#include <curl/curl.h>
#include "util/util.h"

#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2
/* Returned by cli_parse() when --help was asked for and printed: exit 0. */
#define CLI_HELPED (-1)

#define CLI_DEFAULT_URL "http://127.0.0.1:7700"
#define CLI_PROGRESS_MIN (1024 * 1024)

/* ------------------------------------------------------------ global state */

/* Global flags, accepted before or after the command word. */
typedef struct cli_global {
	const char *server; /* --server, $COFFER_URL, or CLI_DEFAULT_URL */
	const char *key;    /* --key, $COFFER_KEY, or ./data/admin.key */
	int json;           /* --json: print the server's answer as it came */
	int verbose;        /* --verbose: libcurl's trace on stderr */
	const char *jq;     /* --jq EXPR: JSON answers filtered through jq (implies --json) */
} cli_global;

extern cli_global cli_g;

/* ---------------------------------------------------------- command table */

typedef struct cli_cmd cli_cmd;
/* A command's handler: argv[0] is the command's last word ("create" for
 * `volume create`); returns an exit code. Each handler declares its own
 * `cli_opt opts[]` and passes it to cli_parse; every option in it is named in
 * the command's usage and help (tests/blackbox/test_cli.py reads the tables). */
typedef int (*cli_fn)(const cli_cmd *cmd, int argc, char **argv);

struct cli_cmd {
	const char *group;   /* "volume", or NULL for a top-level command */
	const char *name;    /* "create" */
	const char *usage;   /* "NAME [--ceiling SIZE] [--idempotency-key K]"; one that
			      * starts with the word VOL takes a volume by id or name */
	const char *summary; /* one line for `coffer --help` */
	const char *help;    /* the rest of `coffer CMD --help`; may be NULL */
	cli_fn fn;
};

/* Each command file exports its table, terminated by a zeroed entry. */
extern const cli_cmd cli_volume_cmds[];
extern const cli_cmd cli_files_cmds[];
extern const cli_cmd cli_snapshot_cmds[];
extern const cli_cmd cli_history_cmds[];
extern const cli_cmd cli_admin_cmds[];
extern const cli_cmd cli_mcp_cmds[];
extern const cli_cmd cli_connect_cmds[];
extern const cli_cmd cli_mount_cmds[];
extern const cli_cmd cli_deploy_cmds[];
extern const cli_cmd cli_completion_cmds[];
extern const cli_cmd cli_agent_cmds[];
extern const cli_cmd cli_turn_cmds[];
extern const cli_cmd cli_relay_cmds[];
/* Every table above, NULL-terminated (main.c): the help and completion.c walk it. */
extern const cli_cmd *const cli_all_tables[];

/* Prints `coffer: MSG` and a hint naming the command's --help to stderr, and
 * returns CLI_USAGE. `cmd` may be NULL (then the hint names `coffer --help`). */
int cli_usage(const cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints `coffer: MSG` to stderr and returns CLI_FAIL. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the full help of one command to `out`. */
void cli_cmd_help(const cli_cmd *cmd, FILE *out);

/* ---------------------------------------------------------- option parser */

typedef enum {
	CLI_OPT_FLAG = 1, /* int *: set to 1 */
	CLI_OPT_STR,      /* const char **: the argument, borrowed from argv */
	CLI_OPT_INT,      /* int64_t *: a non-negative decimal integer */
	CLI_OPT_SIZE,     /* int64_t *: bytes, or a size such as 512M, 4GiB */
	CLI_OPT_LIST,     /* cli_list *: every occurrence, in order */
} cli_opt_kind;

#define CLI_LIST_MAX 64
typedef struct cli_list {
	const char *items[CLI_LIST_MAX];
	size_t n;
} cli_list;

typedef struct cli_opt {
	const char *name; /* long name without "--": "if-match" */
	char short_name;  /* 'o', or 0 */
	cli_opt_kind kind;
	void *dest;
} cli_opt;

/* Parses argv[1..] of a command: the options in `opts` (NULL-name terminated)
 * plus the global flags and --help, in any order; "--" ends options; "-" is a
 * positional. Positionals go to pos[0..max_pos) and their count to *npos.
 * Returns 0, CLI_HELPED (help printed) or CLI_USAGE (message printed) when an
 * option is unknown, lacks or has a bad argument, the count of positionals
 * is outside [min_pos, max_pos], or --jq's program does not compile. When the
 * usage starts with the word VOL, the first positional is then replaced by the
 * volume's id (cli_volume_id; CLI_FAIL, printed, when no one volume has the
 * name): every volume command takes a name where it takes an id. */
int cli_parse(const cli_cmd *cmd, int argc, char **argv, const cli_opt *opts,
	      const char **pos, int min_pos, int max_pos, int *npos);

/* The id of the volume `arg` names: `arg` itself when it has the form of an id
 * ("vol_" and 20 of [a-z2-7]), else the one volume of the organization with that
 * name (GET /v1/volumes?prefix=), else `arg` as it is (the server's 404 then
 * names it). Several volumes with the name: their ids are listed, CLI_FAIL.
 * *id is `arg` or a string of volume.c's that lives until exit. */
int cli_volume_id(const char *arg, const char **id);

/* Parses "4096", "512K", "512M", "4G", "1.5GiB", "2T" (binary units, case-
 * insensitive, optional "i"/"iB"/"B"). -1 when malformed or over INT64_MAX. */
int cli_parse_size(const char *s, int64_t *out);
/* Parses a non-negative decimal int64; -1 when malformed or out of range. */
int cli_parse_int(const char *s, int64_t *out);

/* ----------------------------------------------------------------- memory */

/* Appends to a cof_buf, exiting with "out of memory" if that fails. */
void cli_buf_add(cof_buf *b, const void *data, size_t len);
void cli_buf_adds(cof_buf *b, const char *s);
void cli_buf_addf(cof_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Exits 1 after "coffer: out of memory" when p is NULL; returns p. */
void *cli_check_alloc(void *p);

/* ------------------------------------------------------------------- URLs */

/* Starts `u` (a fresh cof_buf) with the server's base URL, no trailing '/'. */
void cli_url_begin(cof_buf *u);
/* Appends literal text (already URL-safe). */
void cli_url_lit(cof_buf *u, const char *s);
/* Appends one path segment, percent-encoded ('/' encoded too). */
void cli_url_seg(cof_buf *u, const char *s);
/* Appends a volume path, each segment percent-encoded, '/' kept; one leading
 * '/' is dropped (the API ignores it). */
void cli_url_path(cof_buf *u, const char *path);
/* Appends "?name=value" or "&name=value", the value percent-encoded. Nothing
 * when value is NULL. */
void cli_url_query(cof_buf *u, const char *name, const char *value);
void cli_url_query_int(cof_buf *u, const char *name, int64_t value);

/* ------------------------------------------------------------ HTTP client */

typedef struct cli_req {
	const char *method;          /* "GET", "PUT", ... */
	const char *url;             /* absolute, from cli_url_* */
	json_t *body;                /* JSON body, borrowed; NULL for none */
	FILE *upload;                /* raw body streamed from here; NULL for none */
	int64_t upload_size;         /* -1 = unknown (chunked) */
	struct curl_slist *headers;  /* extra headers, borrowed */
	int download;                /* 2xx body goes to out_path (or stdout) */
	const char *out_path;        /* NULL or "-" = stdout; else written atomically */
	int progress;                /* progress bar when stderr is a terminal */
	long timeout;                /* seconds for the whole request; 0 = none */
	int want_error;              /* fill resp->error on an API error */
	int quiet;                   /* print nothing on failure (the caller copes) */
	const cli_cmd *text_tty;     /* a download to a terminal takes text only:
				      * binary content stops it, a usage error of
				      * this command (cli_refuse_tty) */
} cli_req;

typedef struct cli_resp {
	long status;   /* HTTP status, 0 when no answer */
	json_t *json;  /* the 2xx answer when it was JSON (owned; json_decref) */
	json_t *error; /* with req->want_error: the API error object {type,
			* message, ...} of a non-2xx answer (owned; json_decref) */
} cli_resp;

/* Opens what an upload sends: `src` ("-" = stdin) when `given`, else stdin,
 * which must then not be a terminal (CLI_USAGE of `cmd`); a directory or a
 * file that cannot be opened is CLI_FAIL (printed). *f is stdin or a file to
 * fclose; *sb its fstat (st_size is the length when S_ISREG). */
int cli_upload_source(const cli_cmd *cmd, const char *src, int given, FILE **f,
		      struct stat *sb);

/* Performs `req`. Returns CLI_OK when the server answered 2xx (the body is in
 * resp->json, or in the download target); otherwise prints the error —
 * `coffer: MESSAGE (TYPE)` for an API error, `cannot reach cofferd at URL: ...`
 * when the connection failed — and returns CLI_FAIL (CLI_USAGE when text_tty
 * stopped binary content). resp may be NULL. */
int cli_http(const cli_req *req, cli_resp *resp);

/* Releases the connection cli_http keeps between requests. */
void cli_http_cleanup(void);
/* The server's base URL (--server, $COFFER_URL, the default) and the API key
 * (--key, $COFFER_KEY, ./data/admin.key; NULL when none), as every request
 * uses them. */
const char *cli_server_url(void);
const char *cli_api_key(void);

/* Shortcut for a JSON call: METHOD url with `body` (may be NULL); on CLI_OK,
 * *out (if not NULL) owns the answer (may be NULL for an empty answer). */
int cli_call(const char *method, const char *url, json_t *body, json_t **out);

/* A listing followed by its cursor: GET `url` (its query made, no cursor)
 * from `cursor` (NULL = the start), one page or, with `all`, every page.
 * Text: `header` (may be NULL) once, then `row` for each item of the answer's
 * array `key`. --json: the page as it came, or with `all` one answer with every
 * page's items (the first page's other fields, no cursor). When pages are left
 * unread, stderr says how to go on ("more WHAT follow"; `what` NULL: never,
 * as with `all`). Returns cli_call's code. */
int cli_pages(const char *url, const char *key, const char *cursor, int all,
	      const char *what, void (*header)(void), void (*row)(json_t *item));

/* Sets body.name to the string `value` when an option gave one (not NULL). */
void cli_body_str(json_t *body, const char *name, const char *value);

/* ---------------------------------------------------------------- output */

/* Prints an object answer: raw JSON with --json, else "key  value" lines. */
void cli_print_object(json_t *obj);
/* The common tail of a command: cli_call, then cli_print_object of the answer.
 * Releases `url` and `body` (NULL is fine) in every case; returns cli_call's code. */
int cli_call_show(const char *method, cof_buf *url, json_t *body);
/* The tail of a command that ends something (rm, end, abort): cli_call, then
 * the answer as JSON with --json, else the line `fmt` makes ("deleted volume
 * vol_..."). Releases `url` in every case; returns cli_call's code. */
int cli_call_done(const char *method, cof_buf *url, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Opens the data dir `dir` (gc, fsck, mcp --data). Refuses a dir without
 * meta.db rather than let cof_store_open create an empty store there.
 * Returns CLI_OK or CLI_FAIL (printed). */
int cli_open_data(const char *dir, const cof_store_opts *opts, cof_store **st);
/* Prints a JSON value as indented JSON to stdout; with --jq, what the jq
 * program makes of it (jq.c). */
void cli_print_json(json_t *v);
/* Prints a JSON value on one line (JSON Lines), or through --jq's program. */
void cli_print_json_line(json_t *v);

/* --jq (jq.c): compiles the program once (0, or -1 with jq's message in err);
 * runs it on `v` and prints each result (a string raw, else compact JSON; a
 * run-time error is printed and remembered); the exit code it leaves (CLI_OK,
 * or CLI_FAIL after a run-time error); frees it. */
int cli_jq_compile(const char *expr, char *err, size_t errsz);
void cli_jq_filter(json_t *v);
int cli_jq_status(void);
void cli_jq_cleanup(void);
/* "1 byte", "2 bytes", "0 files": `n` and `noun` (singular; "s" added unless
 * n is 1) into out; returns out. */
const char *cli_count(int64_t n, const char *noun, char *out, size_t outsz);
/* True when the output `out` (an -o value: NULL or "-" is stdout) is stdout
 * and stdout is a terminal. */
int cli_out_is_tty(const char *out);
/* The one refusal of binary output on a terminal (archive, get): prints
 * "will not write WHAT to a terminal; use -o FILE or a pipe" as a usage error
 * of `cmd` and returns CLI_USAGE. */
int cli_refuse_tty(const cli_cmd *cmd, const char *what);
/* Formats bytes the way `ls -h` does ("512", "1.5K", "3.0M") into out. */
void cli_human_size(int64_t bytes, char *out, size_t outsz);
/* A field as text for a table cell: strings as-is, numbers, true/false, "-" for
 * null or absent, compact JSON otherwise. Returns a pointer into `tmp` or into
 * the JSON value (valid while it lives). */
const char *cli_cell(json_t *obj, const char *field, char *tmp, size_t tmpsz);
/* The integer value of obj.field, or `dflt` when absent or not a number. */
int64_t cli_int(json_t *obj, const char *field, int64_t dflt);

#endif /* COF_CLI_H */
