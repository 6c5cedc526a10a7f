/*
 * connect.h — what the two files of `coffer connect` share: connect_cmd.c
 * (options, the folder, the supervised prompt on the terminal, the log) and
 * connect.c (the operations stream, results, reconnecting, signals).
 */
#ifndef COF_CLI_CONNECT_H
#define COF_CLI_CONNECT_H

#include <curl/curl.h>
#include "relay/client/localfs.h"
#include "util/sse.h"

typedef struct conn {
	const char *server;   /* cofferd's base URL, for messages */
	char *base;           /* server + "/v1/relay/sessions/UID" (owned) */
	const char *token;    /* the connect token (borrowed from argv/env) */
	const char *dir;      /* --dir as given */
	json_t *hello;        /* the connect body {mode, exclusions, client} (owned) */
	cof_lfs *fs;          /* the folder (owned) */
	cof_lfs_rules rules;  /* mode, guard, hooks (ud = this conn) */
	int tty;              /* /dev/tty for supervised prompts, or -1 */
	int mode_given;       /* a mode flag was given; else the server's `mode`
				 event sets rules.mode (readonly until then) */
	CURL *stream, *post;  /* the operations stream; results and events */
	cof_sse sse;
	cof_buf errbody;      /* the body of an error answer to connect */
	long status;          /* the connect answer's HTTP status (0 = none) */
	int attached;         /* this attempt got its 200 */
	int resumed;          /* some attempt got its 200 (later ones resume) */
	int ended;            /* session_ended seen, or a 410 */
	int64_t last_byte;    /* ms clock of the last byte of the stream */
	int64_t backoff_ms;
	int64_t ops;
	char neterr[CURL_ERROR_SIZE + 64];
} conn;

/* One line on stderr, control characters shown as '?' (names come from the
 * far side). */
void conn_log(conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The op level's event hook: posts {type, data} to .../events. */
void conn_on_event(void *ud, const char *type, json_t *data);
/* Opens /dev/tty for supervised prompts (the confirm hook), or says every
 * write will be refused without it. */
void conn_open_tty(conn *c);
/* Serves the session until it ends; the exit code. */
int conn_run(conn *c);
/* SIGINT ends the session, SIGTERM/SIGHUP disconnect (see connect.c). */
void conn_signals(void);
int conn_interrupted(void);

#endif
