/*
 * connect_cmd.c — `coffer connect`: its options, the folder and rules it
 * serves with, the supervised prompt and the log lines (the stream itself is
 * connect.c).
 *
 * The supervised prompt uses the controlling terminal, /dev/tty, never
 * stdin/stdout: the command's own streams may be redirected (stdout is kept
 * free, the log goes to stderr). When /dev/tty cannot be opened (no
 * controlling terminal: started by a service, under setsid, over a pipe)
 * every write is refused with `forbidden`, and the command says so at start.
 * Whatever the far side sends is shown with control characters replaced, so
 * a file's content or name cannot drive the terminal or fake the prompt.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include "cli/cli.h"
#include "cli/connect.h"

#define DIFF_LINES 40

/* Replaces control characters (C0 but '\n' and '\t', DEL, and the C1 range
 * as UTF-8) with '?' in place. */
static void conn_sanitize(char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f) {
			s[i] = '?';
		} else if (ch == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
			   (unsigned char)s[i + 1] <= 0x9f) {
			s[i] = '?';
			s[i + 1] = '?';
			i++;
		}
	}
}

void conn_log(conn *c, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	n = strlen(line);
	for (size_t i = 0; i < n; i++)
		if (line[i] == '\n')
			line[i] = ' ';
	conn_sanitize(line, n);
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
}

/* True when `d` is text the diff can show: valid UTF-8 without NUL. */
static int conn_is_text(const unsigned char *d, size_t n)
{
	return !memchr(d, '\0', n) && cof_utf8_valid((const char *)d, n);
}

static void conn_tty_write(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* A size for the prompt: "1 byte", "512 bytes", "1.5K". */
static void conn_size(int64_t n, char *out, size_t outsz)
{
	if (n < 1024)
		cli_count(n, "byte", out, outsz);
	else
		cli_human_size(n, out, outsz);
}

/* The supervised prompt (cof_lfs_hooks.confirm): shows the path and a short
 * diff (or the size change of a binary file) on the terminal and waits for
 * y/n. Anything but an answer starting with y — n, an empty line, end of
 * input, ctrl-C — is no. */
static int conn_confirm(void *ud, const char *path, const unsigned char *old, size_t oldlen,
			int exists, const unsigned char *data, size_t len)
{
	conn *c = ud;
	cof_buf m = COF_BUF_INIT;
	char a[32], b[32], answer[16];
	size_t got = 0;

	if (c->tty < 0)
		return 0;
	const char *rule = NULL;
	cof_err pe = {0};

	cof_protect_check(c->rules.protect, path, &rule, &pe);
	cof_err_clear(&pe);
	cli_buf_addf(&m, "\n== the agent wants to %s %s%s\n", exists ? "change" : "create", path,
		     rule ? " (protected)" : "");
	if (rule)
		cli_buf_addf(&m, "   protected by rule '%s', allowed by your --allow-write: tools "
			     "on this machine may run what is written here\n", rule);
	if (conn_is_text(data, len) && (!exists || conn_is_text(old, oldlen))) {
		if (cof_lfs_diff(path, exists ? (const char *)old : NULL, oldlen,
				 (const char *)data, len, DIFF_LINES, &m))
			cli_check_alloc(NULL);
	} else {
		conn_size((int64_t)len, b, sizeof b);
		if (exists) {
			conn_size((int64_t)oldlen, a, sizeof a);
			cli_buf_addf(&m, "binary file: %s -> %s\n", a, b);
		} else {
			cli_buf_addf(&m, "new binary file: %s\n", b);
		}
	}
	cli_buf_adds(&m, "allow this write? [y/N] ");
	conn_sanitize(m.data, m.len);
	tcflush(c->tty, TCIFLUSH); /* typed-ahead keys do not answer a prompt not yet shown */
	conn_tty_write(c->tty, m.data, m.len);
	cof_buf_release(&m);
	for (;;) {
		char ch;
		ssize_t r = read(c->tty, &ch, 1);
		if (r <= 0 || ch == '\n')
			break;
		if (got < sizeof answer - 1)
			answer[got++] = ch;
	}
	answer[got] = '\0';
	size_t sp = strspn(answer, " \t");
	int yes = (answer[sp] == 'y' || answer[sp] == 'Y') && !conn_interrupted();
	conn_tty_write(c->tty, yes ? "allowed\n" : "refused\n", 8);
	return yes;
}

/* The body of POST .../connect. */
/* The body of POST .../connect; without a mode flag no `mode`, so that the
 * agent's defaultMode applies (never a mode nobody chose). */
static json_t *conn_hello(const cof_mode *mode, json_t *exclusions, json_t *allow)
{
	char host[256] = "", client[400];
	json_t *h;

	if (gethostname(host, sizeof host - 1))
		snprintf(host, sizeof host, "unknown");
	snprintf(client, sizeof client, "coffer %s on %s", COFFER_VERSION, host);
	h = cli_check_alloc(json_pack("{s:O, s:O, s:s}", "exclusions", exclusions,
				      "allowWrite", allow, "client", client));
	if (mode)
		json_object_set_new(h, "mode", json_string(cof_mode_name(*mode)));
	return h;
}

void conn_open_tty(conn *c)
{
	if (c->tty >= 0)
		return;
	c->tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (c->tty >= 0)
		c->rules.hooks.confirm = conn_confirm;
	else
		conn_log(c, "supervised mode without a terminal (/dev/tty cannot be "
			 "opened): every write will be refused");
}

static int conn_main(const cli_cmd *cmd, int argc, char **argv)
{
	const char *uid = NULL, *token = NULL, *dir = NULL;
	int standard = 0, supervised = 0, readonly = 0, npos, rc;
	cli_list excl = {0}, allow = {0};
	const cli_opt opts[] = {
		{"uid", 0, CLI_OPT_STR, &uid},
		{"token", 0, CLI_OPT_STR, &token},
		{"dir", 'd', CLI_OPT_STR, &dir},
		{"standard", 0, CLI_OPT_FLAG, &standard},
		{"supervised", 0, CLI_OPT_FLAG, &supervised},
		{"readonly", 0, CLI_OPT_FLAG, &readonly},
		{"exclude", 0, CLI_OPT_LIST, &excl},
		{"allow-write", 0, CLI_OPT_LIST, &allow},
		{NULL, 0, 0, NULL},
	};
	conn c = {.tty = -1};
	cof_err e = {0};
	cof_excl *matcher = NULL;
	cof_protect *prot = NULL;
	cof_limits lim;
	cof_buf base = COF_BUF_INIT;

	rc = cli_parse(cmd, argc, argv, opts, NULL, 0, 0, &npos);
	if (rc)
		return rc == CLI_HELPED ? CLI_OK : rc;
	if (!token || !*token)
		token = getenv("COFFER_CONNECT_TOKEN");
	if (!uid || !*uid)
		return cli_usage(cmd, "--uid is required (the session's uid)");
	if (!token || !*token)
		return cli_usage(cmd, "--token is required (or set COFFER_CONNECT_TOKEN)");
	if (!dir || !*dir)
		return cli_usage(cmd, "--dir is required (the folder to serve)");
	if (standard + supervised + readonly > 1)
		return cli_usage(cmd, "--standard, --supervised and --readonly exclude each other");
	/* no flag: the agent's defaultMode, told by the server before any op;
	 * until then nothing is written */
	c.mode_given = standard + supervised + readonly;
	c.rules.mode = supervised ? COF_MODE_SUPERVISED :
		       standard ? COF_MODE_STANDARD : COF_MODE_READONLY;

	json_t *patterns = cli_check_alloc(json_array());
	for (size_t i = 0; i < excl.n; i++)
		json_array_append_new(patterns, json_string(excl.items[i]));
	if (cof_excl_new(patterns, COF_EXCL_DEFAULTS | COF_EXCL_NOCASE, &matcher, &e)) {
		json_decref(patterns);
		rc = cli_usage(cmd, "--exclude: %s", e.msg);
		cof_err_clear(&e);
		return rc;
	}
	json_t *allowed = cli_check_alloc(json_array());
	for (size_t i = 0; i < allow.n; i++)
		json_array_append_new(allowed, json_string(allow.items[i]));
	if (cof_protect_new(allowed, &prot, &e)) {
		json_decref(patterns);
		json_decref(allowed);
		cof_excl_free(matcher);
		rc = cli_usage(cmd, "--%s", e.msg);
		cof_err_clear(&e);
		return rc;
	}
	c.rules.protect = prot;
	if (!(c.rules.guard = cof_guard_default(&e))) {
		json_decref(patterns);
		json_decref(allowed);
		cof_protect_free(prot);
		cof_excl_free(matcher);
		rc = cli_fail("the write guard could not be loaded: %s", e.msg);
		cof_err_clear(&e);
		return rc;
	}
	cof_limits_default(&lim);
	if (cof_lfs_open(dir, matcher, &lim, &c.fs, &e)) {
		json_decref(patterns);
		json_decref(allowed);
		cof_protect_free(prot);
		rc = cli_fail("%s", e.msg);
		cof_err_clear(&e);
		return rc;
	}
	c.dir = dir;
	c.token = token;
	c.hello = conn_hello(c.mode_given ? &c.rules.mode : NULL, patterns, allowed);
	json_decref(patterns);
	json_decref(allowed);
	cli_url_begin(&base);
	c.server = cli_check_alloc(cof_strdup(base.data));
	cli_url_lit(&base, "/v1/relay/sessions/");
	cli_url_seg(&base, uid);
	c.base = cof_buf_detach(&base, NULL);
	c.rules.hooks.event = conn_on_event;
	c.rules.hooks.ud = &c;
	if (c.mode_given && c.rules.mode == COF_MODE_SUPERVISED)
		conn_open_tty(&c);
	c.stream = cli_check_alloc(curl_easy_init());
	c.post = cli_check_alloc(curl_easy_init());
	conn_signals();
	rc = conn_run(&c);

	curl_easy_cleanup(c.stream);
	curl_easy_cleanup(c.post);
	cof_sse_release(&c.sse);
	cof_buf_release(&c.errbody);
	if (c.tty >= 0)
		close(c.tty);
	cof_lfs_close(c.fs);
	cof_protect_free(prot);
	json_decref(c.hello);
	free(c.base);
	free((char *)c.server);
	return rc;
}

const cli_cmd cli_connect_cmds[] = {
	{NULL, "connect",
	 "--server URL --uid UID --token T --dir DIR [--standard|--supervised|--readonly] "
	 "[--exclude PAT]... [--allow-write PAT]...",
	 "serve a folder of yours to a remote agent (a relay session)",
	 "Connects out to cofferd and answers the agent's operations (read_file,\n"
	 "write_file, list_directory, search_files) from DIR. Nothing outside DIR is\n"
	 "ever touched and symlinks are never followed. This side enforces the rules\n"
	 "itself, whatever the server says: excluded files (the defaults such as .env,\n"
	 "*.pem, *.key, id_rsa* plus each --exclude) are hidden and refused, files over\n"
	 "10 MB are refused, and every write is scanned by the guard first.\n"
	 "Protected paths (.git, shell start-up files such as .bashrc and .profile,\n"
	 ".envrc, .vscode, .idea, .github/workflows, .devcontainer, package managers'\n"
	 "settings such as .npmrc, ...: what tools here run by themselves) can be read\n"
	 "but not written, in every mode, unless you name them with --allow-write.\n"
	 "One log line per operation goes to stderr.\n"
	 "\n"
	 "Options:\n"
	 "  --uid UID        the session (from the agent side)\n"
	 "  --token T        the session's connect token; better: set\n"
	 "                   COFFER_CONNECT_TOKEN so it is not on the command line\n"
	 "  -d, --dir DIR    the folder to serve\n"
	 "  --standard       reads and writes\n"
	 "  --supervised     each write is shown (a diff, or the size change) on the\n"
	 "                   terminal (/dev/tty) and waits for y/n; without a\n"
	 "                   terminal every write is refused\n"
	 "  --readonly       every write is refused\n"
	 "                   Without one of these three the session runs in the\n"
	 "                   agent's suggested mode (its defaultMode), shown before\n"
	 "                   anything is served; no write is served before that.\n"
	 "  --exclude PAT    hide and refuse PAT too (gitignore-style, in any letter\n"
	 "                   case: 'secret*' hides SECRET.txt; repeatable)\n"
	 "  --allow-write PAT  let the agent write protected paths PAT matches, or all\n"
	 "                   a rule covers when PAT is its name ('.git/**'); repeatable\n"
	 "\n"
	 "A dropped connection is retried (0.5 s doubling to 30 s) and the session\n"
	 "resumes. ctrl-C ends the session for both sides; SIGTERM or SIGHUP only\n"
	 "disconnect (the session pauses and can be resumed by connecting again).\n"
	 "Exit status: 0 when the session ended (by either side), 1 when the token\n"
	 "is refused (401), the session is over (410), another client is attached\n"
	 "(409) or cofferd cannot be reached at the start; 2 for a wrong command line.\n",
	 conn_main},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
