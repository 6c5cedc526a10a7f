/*
 * socketio.c — the relay as Socket.IO (protocol v5 over Engine.IO v4) at
 * /socket.io/, namespace /jailbox (API.md "Seed 004's own protocol";
 * docs/relay-protocol.md "Socket.IO"). Packets are read by util/sio.c; the
 * relay's rules are src/relay's: every op, result and client event goes
 * through the same cof_relay_* calls as the HTTP routes.
 *
 * Engine.IO sessions (eio) live in memory, one /jailbox socket each.
 * Transports:
 *   - long-polling: GET /socket.io/?sid= waits as a suspended connection on
 *     the session's eventfd (http_wait_on); POST /socket.io/?sid= brings
 *     the client's packets.
 *   - WebSocket: the GET is upgraded (MHD_create_response_for_upgrade) and
 *     the socket joins the hub's epoll set; framing is wslay's. A polling
 *     session moves to it with the probe ("2probe"/"3probe", "5").
 * Threads: the hub (one) owns every upgraded socket, the relay streams and
 *   subscriptions of connected sockets, pings and timeouts; what may block
 *   (a key's check, attaching, an op waiting for the user's answer) runs
 *   as a job on two small pools: lane 0 for short jobs (connect, the user's
 *   answers and events), lane 1 for agent ops, so ops waiting for answers
 *   never hold up the answers (as loop.c's two lanes).
 * Locking: G.mu guards the session table and every session's state; no
 *   relay call and no socket I/O is made under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <wslay/wslay.h>
#include "http/http.h"
#include "store/notify.h"
#include "store/store.h"
#include "util/sio.h"

#define NSP "/jailbox"
#define PING_INTERVAL_MS 25000
#define PING_TIMEOUT_MS 20000
#define CONNECT_TIMEOUT_MS 45000   /* a session that names no namespace this long ends */
#define SESSIONS_MAX 10000         /* Engine.IO sessions in all */
#define PER_KEY_MAX 64             /* /jailbox agent sockets of one API key */
#define QUEUE_MAX ((size_t)64 << 20) /* bytes queued for one client that does not read */
#define BUCKETS 1024
#define PROBE_NOOP_MS 100
#define LANE_THREADS_MAX 64
#define EIO_SEP "\x1e"
#define STOP_CUT_MS 2000         /* at a stop, WebSockets still open after this are cut */
#define STOP_GIVE_UP_MS 8000     /* the hub stops waiting for sessions to go */

enum { T_POLLING, T_WS };
enum { NS_NONE, NS_CONNECTING, NS_CONNECTED, NS_CLOSED };
enum { ROLE_AGENT = 1, ROLE_USER };
enum { ITEM_WAKE, ITEM_WS, ITEM_SUB };

typedef struct pkt {
	struct pkt *next;
	size_t len;
	char data[];
} pkt;

typedef struct ack_map {
	struct ack_map *next;
	int64_t ack;
	char op[32];
} ack_map;

typedef struct hub_item {
	int kind;
} hub_item;

struct ws;

typedef struct eio {
	struct eio *next;             /* in its bucket */
	char sid[24];
	int refs;                     /* jobs, a waiting GET, a WebSocket */
	int closed;
	int64_t closed_ms;            /* when, for the close packet's last poll */
	int transport;
	struct ws *ws;                /* its WebSocket (upgraded, or probing) */
	pkt *head, *tail;             /* packets not yet sent */
	size_t qbytes;
	int wake;                     /* eventfd: packets queued, or closed */
	http_req *poll;               /* the GET waiting, if any */
	int64_t created_ms, next_ping_ms, ping_sent_ms;
	/* the /jailbox socket */
	int ns;                       /* NS_* */
	int role;
	char nsid[24];                /* its Socket.IO id */
	char uid[32];
	char *token;                  /* the user side's connect token, or the agent
				       * side's API key (checked again at each op) */
	cof_principal who;            /* the agent side's key */
	http_keyhold *keyhold;        /* ... watched: revoked or expired, the socket ends */
	char mode[16];                /* the mode in force, as the user side learnt it */
	cof_relay_stream *x;          /* hub's once connected */
	cof_sub *sub;
	hub_item sub_item;
	int sub_added;
	json_t *held;                 /* packets that came while connecting */
	int64_t next_ack;
	ack_map *acks;                /* server acks sent to the user side: their ops */
	int counted;                  /* holds a place of its key (per_key) */
	int jobs;                     /* its jobs queued or running */
	int ending;                   /* its stream ended: DISCONNECT once no job runs */
} eio;

typedef struct ws {
	hub_item item;
	int fd;
	struct MHD_UpgradeResponseHandle *urh;
	struct MHD_Connection *conn;
	wslay_event_context_ptr ctx;
	char *extra;                  /* bytes MHD read past the request */
	size_t extra_len, extra_off;
	eio *e;
	int upgraded;                 /* carries e (not only probing) */
	int probed;                   /* the client's "2probe" came (counted in G.probing
				       * until upgraded or gone) */
	int dirty;                    /* on G.dirty: e's packets to send */
	struct ws *dirty_next;
	struct ws *all_next;
	int dead;
	int closing;                  /* e closed: the close frame once its packets went */
	uint32_t events;
} ws;

typedef struct key_count {
	struct key_count *next;
	char key_id[24];
	int n;
} key_count;

enum { J_CONNECT, J_EVENT, J_ACK };

typedef struct job {
	struct job *next;
	int kind;
	eio *e;
	json_t *data;                 /* CONNECT: auth; EVENT: args; ACK: args */
	int64_t ack;
	char name[COF_SIO_EVENT_NAME_MAX + 1];
	char op[32];                  /* J_ACK: the op answered */
} job;

typedef struct lane {
	pthread_cond_t cv;
	job *head, *tail;
	pthread_t tids[LANE_THREADS_MAX];
	int n, idle, max, queued;
} lane;

static struct {
	pthread_mutex_t mu;
	http_server *srv;
	int started, stop;
	eio *buckets[BUCKETS];
	size_t nsessions;
	int ep, wake;
	hub_item wake_item;
	pthread_t hub;
	ws *dirty;
	ws *all;                      /* every WebSocket the hub owns */
	int probing;                  /* WebSockets probed, not yet upgraded */
	int reap;                     /* something closed or let go: sweep soon (atomic) */
	key_count *keys;
	lane lanes[2];
} G = { .mu = PTHREAD_MUTEX_INITIALIZER, .ep = -1, .wake = -1 };

/* Wakes the hub (WebSockets with packets to send). */
static void hub_poke(void)
{
	uint64_t one = 1;
	(void)!write(G.wake, &one, sizeof one);
}

/* Wakes the hub, which then sweeps (sessions closed or let go are
 * released at once rather than at the next second). */
static void hub_wake(void)
{
	__atomic_store_n(&G.reap, 1, __ATOMIC_RELEASE);
	hub_poke();
}

static unsigned sid_hash(const char *sid)
{
	uint32_t h = 2166136261u;
	for (; *sid; sid++)
		h = (h ^ (unsigned char)*sid) * 16777619u;
	return h % BUCKETS;
}

/* Under G.mu. */
static eio *eio_find(const char *sid)
{
	eio *e;
	for (e = G.buckets[sid_hash(sid)]; e && strcmp(e->sid, sid); e = e->next)
		;
	return e;
}

/* ------------------------------------------------------------ the queue */

/* Queues one Engine.IO packet (type digit + data) for e. Under G.mu. */
static void eio_push(eio *e, int type, const char *data, size_t len)
{
	pkt *p;

	if (e->closed && type != COF_EIO_CLOSE)
		return;
	if (e->qbytes + len > QUEUE_MAX) {
		/* a client that reads nothing while its events pile up goes */
		e->closed = 1;
		e->closed_ms = cof_mono_ms();
		fprintf(stderr, "cofferd: socket.io session %s: over %zu bytes queued, closed\n",
			e->sid, QUEUE_MAX);
	}
	p = cof_malloc(sizeof *p + len + 2);
	p->next = NULL;
	p->data[0] = (char)('0' + type);
	memcpy(p->data + 1, data, len);
	p->len = len + 1;
	p->data[p->len] = '\0';
	if (e->tail)
		e->tail->next = p;
	else
		e->head = p;
	e->tail = p;
	e->qbytes += p->len;
	if (e->transport == T_WS && e->ws && e->ws->upgraded) {
		if (!e->ws->dirty) {
			e->ws->dirty = 1;
			e->ws->dirty_next = G.dirty;
			G.dirty = e->ws;
		}
		hub_poke();
	} else {
		uint64_t one = 1;
		(void)!write(e->wake, &one, sizeof one);
	}
}

/* A Socket.IO packet of the /jailbox namespace. Under G.mu. */
static void sio_push(eio *e, int type, int64_t ack, const json_t *data)
{
	cof_buf b = COF_BUF_INIT;

	cof_sio_encode(&b, type, NSP, ack, data);
	eio_push(e, COF_EIO_MESSAGE, b.data, b.len);
	cof_buf_release(&b);
}

/* Emits event `name` with one argument (stolen; NULL: none). Under G.mu. */
static void emit(eio *e, const char *name, json_t *arg, int64_t ack)
{
	json_t *a = json_pack("[s]", name);

	if (arg)
		json_array_append_new(a, arg);
	sio_push(e, COF_SIO_EVENT, ack, a);
	json_decref(a);
}

/* Ends the session: the client is told (a close packet), the hub releases
 * its stream. Under G.mu. */
static void eio_close(eio *e, const char *why)
{
	if (e->closed)
		return;
	eio_push(e, COF_EIO_CLOSE, "", 0);
	e->closed = 1;
	e->closed_ms = cof_mono_ms();
	(void)why;
	if (e->ns == NS_CONNECTED || e->ns == NS_CONNECTING)
		e->ns = NS_CLOSED;
	hub_wake();
}

/* The error answer of a failed call, as an ack's or an event's argument. */
static json_t *error_json(const cof_err *err)
{
	json_t *e = err->extra ? json_deep_copy(err->extra) : json_object();

	json_object_set_new(e, "type", json_string(cof_code_type(err->code)));
	json_object_set_new(e, "status", json_integer(cof_code_status(err->code)));
	json_object_set_new(e, "message", json_string(err->msg));
	return json_pack("{s:b, s:o}", "ok", 0, "error", e);
}

/* ------------------------------------------------------------ sessions */

static eio *eio_new(cof_err *err)
{
	eio *e;

	if (G.nsessions >= SESSIONS_MAX) {
		cof_error(err, COF_EUNAVAILABLE, "too many Socket.IO sessions (the limit is %d)",
			  SESSIONS_MAX);
		return NULL;
	}
	e = cof_calloc(1, sizeof *e);
	e->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wake < 0) {
		free(e);
		cof_error(err, COF_EUNAVAILABLE, "cannot make a Socket.IO session: %s",
			  strerror(errno));
		return NULL;
	}
	cof_id_new("", e->sid, sizeof e->sid);
	e->created_ms = cof_mono_ms();
	e->next_ping_ms = e->created_ms + PING_INTERVAL_MS;
	e->sub_item.kind = ITEM_SUB;
	e->next_ack = 1;
	unsigned b = sid_hash(e->sid);
	e->next = G.buckets[b];
	G.buckets[b] = e;
	G.nsessions++;
	return e;
}

/* The handshake's open packet data. */
static char *open_data(const eio *e, int with_upgrades)
{
	json_t *o = json_pack("{s:s, s:[], s:i, s:i, s:I}", "sid", e->sid, "upgrades",
			      "pingInterval", PING_INTERVAL_MS, "pingTimeout", PING_TIMEOUT_MS,
			      "maxPayload", (json_int_t)COF_SIO_MSG_MAX);
	char *s;

	if (with_upgrades)
		json_array_append_new(json_object_get(o, "upgrades"), json_string("websocket"));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static void key_give(eio *e)
{
	if (!e->counted)
		return;
	e->counted = 0;
	for (key_count **p = &G.keys, *k; (k = *p); p = &k->next)
		if (!strcmp(k->key_id, e->who.key_id)) {
			if (--k->n == 0) {
				*p = k->next;
				free(k);
			}
			return;
		}
}

/* Takes a place of e's key: 0, or -1 past PER_KEY_MAX. Under G.mu. */
static int key_take(eio *e)
{
	key_count *k;

	for (k = G.keys; k && strcmp(k->key_id, e->who.key_id); k = k->next)
		;
	if (!k) {
		k = cof_calloc(1, sizeof *k);
		snprintf(k->key_id, sizeof k->key_id, "%s", e->who.key_id);
		k->next = G.keys;
		G.keys = k;
	}
	if (k->n >= PER_KEY_MAX)
		return -1;
	k->n++;
	e->counted = 1;
	return 0;
}

/* Frees a closed session nothing holds (hub, under G.mu; its stream and
 * subscription were released first). */
static void eio_free(eio *e)
{
	unsigned b = sid_hash(e->sid);

	for (eio **p = &G.buckets[b]; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			break;
		}
	G.nsessions--;
	while (e->head) {
		pkt *p = e->head;
		e->head = p->next;
		free(p);
	}
	while (e->acks) {
		ack_map *a = e->acks;
		e->acks = a->next;
		free(a);
	}
	key_give(e);
	http_key_release(e->keyhold);
	json_decref(e->held);
	free(e->token);
	close(e->wake);
	free(e);
}

/* The stream of e's namespace ended (the session ended, or the attachment
 * was replaced): DISCONNECT, once no job of it runs, so that the answer to
 * what ended it (an abort) comes first. Under G.mu. */
static void maybe_disconnect(eio *e)
{
	if (!e->ending || e->jobs || e->ns != NS_CONNECTED)
		return;
	sio_push(e, COF_SIO_DISCONNECT, -1, NULL);
	e->ns = NS_CLOSED;
	hub_wake();
}

/* ------------------------------------------------------------ jobs */

static void job_free(job *j)
{
	json_decref(j->data);
	free(j);
}

static void *sio_worker(void *arg);

/* Queues a job for e (a reference taken). Under G.mu. */
static void job_put(eio *e, int kind, const char *name, json_t *data, int64_t ack,
		    const char *op)
{
	int long_lane = kind == J_EVENT && e->role == ROLE_AGENT;
	lane *l = &G.lanes[long_lane];
	job *j = cof_calloc(1, sizeof *j);

	j->kind = kind;
	j->e = e;
	e->refs++;
	e->jobs++;
	j->data = data;
	j->ack = ack;
	snprintf(j->name, sizeof j->name, "%s", name ? name : "");
	snprintf(j->op, sizeof j->op, "%s", op ? op : "");
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	/* a worker for every job queued, up to the lane's ceiling: an idle
	 * worker may have been signalled for another job already */
	if (++l->queued > l->idle && l->n < l->max) {
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, (size_t)2 << 20);
		if (pthread_create(&l->tids[l->n], &at, sio_worker, l) == 0)
			l->n++;
		pthread_attr_destroy(&at);
	}
	pthread_cond_signal(&l->cv);
}

static void run_job(job *j);

static void *sio_worker(void *arg)
{
	lane *l = arg;

	pthread_mutex_lock(&G.mu);
	for (;;) {
		while (!l->head && !G.stop) {
			l->idle++;
			pthread_cond_wait(&l->cv, &G.mu);
			l->idle--;
		}
		job *j = l->head;
		if (!j)
			break;
		l->queued--;
		l->head = j->next;
		if (!l->head)
			l->tail = NULL;
		pthread_mutex_unlock(&G.mu);
		run_job(j);
		pthread_mutex_lock(&G.mu);
		j->e->jobs--;
		maybe_disconnect(j->e);
		j->e->refs--;
		if (j->e->closed || j->e->ns == NS_CLOSED)
			hub_wake(); /* it may have held the last reference */
		job_free(j);
	}
	pthread_mutex_unlock(&G.mu);
	return NULL;
}

/* ------------------------------------------------------- the namespace */

/* The CONNECT's answer: attaches (user side) or opens the agent's events
 * (agent side); CONNECT_ERROR with the reason otherwise. */
static void do_connect(eio *e, json_t *auth)
{
	cof_relay *r = G.srv->relay;
	const char *key = cof_json_str(auth, "token"), *ctok = cof_json_str(auth, "connectToken");
	const char *uid = cof_json_str(auth, "uid");
	cof_relay_stream *x = NULL;
	cof_sub *sub = NULL;
	cof_err err = {0};
	cof_principal who = {0};
	http_keyhold *hold = NULL;
	int role = 0;

	if (!uid || (!key == !ctok)) {
		cof_error(&err, COF_EUNAUTHORIZED, "auth must be {token: API key, uid} (the agent "
			  "side) or {connectToken, uid, mode?, exclusions?, allowWrite?, dir?} (the "
			  "user's side)");
	} else if (key) {
		role = ROLE_AGENT;
		json_int_t after = json_integer_value(json_object_get(auth, "lastEventId"));
		if (cof_key_auth(G.srv->st, key, &who, &err) == 0) {
			pthread_mutex_lock(&G.mu);
			memcpy(&e->who, &who, sizeof who);
			int full = key_take(e);
			pthread_mutex_unlock(&G.mu);
			if (full)
				cof_error(&err, COF_ERATELIMIT, "this key has %d Socket.IO connections "
					  "open; the limit is %d", PER_KEY_MAX, PER_KEY_MAX);
			else
				(void)cof_relay_events_open(r, &who, uid, after > 0 ? (uint64_t)after
							    : 0, &x, &err);
		}
	} else {
		role = ROLE_USER;
		json_t *body = json_object();
		static const char *const pass[] = {"mode", "exclusions", "allowWrite", "client",
						   NULL};
		for (const char *const *p = pass; *p; p++)
			if (json_object_get(auth, *p))
				json_object_set(body, *p, json_object_get(auth, *p));
		if (!json_object_get(body, "client")) {
			const char *dir = cof_json_str(auth, "dir");
			char client[128];
			snprintf(client, sizeof client, "socket.io%s%.100s", dir ? " dir=" : "",
				 dir ? dir : "");
			json_object_set_new(body, "client", json_string(client));
		}
		(void)cof_relay_connect(r, uid, ctok, body, &x, &err);
		json_decref(body);
	}
	if (x && role == ROLE_AGENT) { /* its key watched as an event stream's */
		char hash[65];
		if (cof_sha256_hex(key, strlen(key), hash) == 0)
			hold = http_key_hold_key(G.srv->st, hash, &who);
	}
	if (x) {
		cof_topic t = cof_topic_session(uid);
		if (cof_notify_subscribe(G.srv->st->notify, &t, 1, &sub, &err)) {
			cof_relay_stream_close(x);
			x = NULL;
		}
	}
	pthread_mutex_lock(&G.mu);
	if (!x || e->closed || e->ns != NS_CONNECTING) {
		if (!x) {
			json_t *d = error_json(&err);
			json_t *ce = json_pack("{s:s, s:O}", "message", err.msg, "data",
					       json_object_get(d, "error"));
			sio_push(e, COF_SIO_CONNECT_ERROR, -1, ce);
			json_decref(ce);
			json_decref(d);
			e->ns = NS_NONE;
			key_give(e);
			json_decref(e->held);
			e->held = NULL;
		}
		pthread_mutex_unlock(&G.mu);
		if (x) {
			cof_notify_unsubscribe(sub);
			cof_relay_stream_close(x);
		}
		http_key_release(hold);
		cof_err_clear(&err);
		return;
	}
	e->role = role;
	e->keyhold = hold;
	snprintf(e->uid, sizeof e->uid, "%s", uid);
	e->token = cof_strdup(ctok ? ctok : key);
	e->x = x;
	e->sub = sub;
	e->ns = NS_CONNECTED;
	cof_id_new("", e->nsid, sizeof e->nsid);
	json_t *ok = json_pack("{s:s}", "sid", e->nsid);
	sio_push(e, COF_SIO_CONNECT, -1, ok);
	json_decref(ok);
	/* the packets that came while connecting, in their order */
	json_t *held = e->held, *h;
	size_t i;
	e->held = NULL;
	json_array_foreach(held, i, h) {
		json_int_t type = json_integer_value(json_array_get(h, 0));
		json_int_t ack = json_integer_value(json_array_get(h, 2));
		json_t *data = json_incref(json_array_get(h, 1));
		if (type == COF_SIO_EVENT)
			job_put(e, J_EVENT, json_string_value(json_array_get(data, 0)), data, ack,
				NULL);
		else
			json_decref(data);
	}
	json_decref(held);
	e->sub_item.kind = ITEM_SUB;
	e->refs++; /* the hub's, until it releases the stream */
	e->sub_added = 1;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &e->sub_item};
	(void)epoll_ctl(G.ep, EPOLL_CTL_ADD, sub->fd, &ev);
	/* the first pump: what is there already */
	{
		uint64_t one = 1;
		(void)!write(sub->fd, &one, sizeof one);
	}
	pthread_mutex_unlock(&G.mu);
	cof_err_clear(&err);
}

/* The argument of an agent's op event as the HTTP op's body: an object is
 * taken as it is (unknown fields are the relay's to refuse), a string is
 * the path (the pattern of a search, whose second argument may hold the
 * options). `wait` and `requestId` are ours. */
static json_t *op_body(const char *op, json_t *args, int *wait, json_t **request_id)
{
	json_t *a0 = json_array_get(args, 1), *body;

	if (json_is_object(a0)) {
		body = json_deep_copy(a0);
	} else {
		body = json_object();
		if (json_is_string(a0))
			json_object_set(body, !strcmp(op, "search_files") ? "pattern" : "path", a0);
		json_t *a1 = json_array_get(args, 2);
		if (json_is_object(a1))
			json_object_update(body, a1);
	}
	if (json_is_boolean(json_object_get(body, "wait")))
		*wait = json_is_true(json_object_get(body, "wait"));
	json_object_del(body, "wait");
	*request_id = json_incref(json_object_get(body, "requestId"));
	json_object_del(body, "requestId");
	json_object_set_new(body, "op", json_string(op));
	return body;
}

/* The event an op's answer goes out as when the agent asked for no ack. */
static const char *op_answer_event(const char *op)
{
	if (!strcmp(op, "read_file"))
		return "jailbox:file_content";
	if (!strcmp(op, "write_file"))
		return "jailbox:write_result";
	if (!strcmp(op, "list_directory"))
		return "jailbox:directory_listing";
	return "jailbox:search_results";
}

static const struct {
	const char *event, *op;
} agent_ops[] = {
	{"jailbox:file_read", "read_file"}, {"jailbox:file_write", "write_file"},
	{"jailbox:list_directory", "list_directory"}, {"jailbox:search_files", "search_files"},
	{NULL, NULL}};

/* Answers an event: its ack when it asked for one, else `event` (NULL:
 * jailbox:error, only for a failure). `out` (stolen) or err. */
static void answer(eio *e, int64_t ack, const char *event, const char *name, json_t *out,
		   cof_err *err, json_t *request_id)
{
	json_t *a = out ? json_pack("{s:b, s:o}", "ok", 1, "result", out) : error_json(err);

	if (request_id)
		json_object_set(a, "requestId", request_id);
	pthread_mutex_lock(&G.mu);
	if (ack >= 0) {
		json_t *arr = json_pack("[O]", a);
		sio_push(e, COF_SIO_ACK, ack, arr);
		json_decref(arr);
	} else if (event) {
		emit(e, event, json_incref(a), -1);
	} else if (!out) {
		json_object_set_new(a, "event", json_string(name));
		emit(e, "jailbox:error", json_incref(a), -1);
	}
	pthread_mutex_unlock(&G.mu);
	json_decref(a);
	cof_err_clear(err);
}

/* A call that failed because another node holds the session is carried
 * there as the HTTP route's would be (forward.c: the same target, the
 * key, one hop): rc, *out and err become the holder's answer. */
static int carried(int rc, eio *e, const char *method, const char *tail, const json_t *body,
		   json_t **out, cof_err *err)
{
	if (!rc || !http_forward_relay(err, e->token, method, e->uid, tail, body, out))
		return rc;
	return *out ? 0 : -1;
}

static void agent_event(eio *e, job *j)
{
	cof_relay *r = G.srv->relay;
	json_t *out = NULL, *rid = NULL;
	cof_err err = {0};
	int retry = 0;

	for (int i = 0; agent_ops[i].event; i++) {
		if (strcmp(agent_ops[i].event, j->name))
			continue;
		int wait = 1;
		json_t *body = op_body(agent_ops[i].op, j->data, &wait, &rid);
		/* the key as an HTTP op checks it: one revoked or expired since the
		 * connect is refused from its next op on */
		cof_principal who = {0};
		int rc = cof_key_auth(G.srv->st, e->token, &who, &err) ? -1
			: e->who.read_only
			? cof_error(&err, COF_EFORBIDDEN, "this key is read-only: it may not "
				    "relay operations")
			: http_rate_take(e->who.key_id, e->who.org, &err, &retry) ? -1
			: carried(cof_relay_op(r, &e->who, e->uid, body, wait, &out, &err), e,
				  "POST", wait ? "/ops" : "/ops?wait=false", body, &out, &err);
		json_decref(body);
		/* a write's success also reaches the agent as write_result from the
		 * session's events: no second one without an ack */
		const char *ev = op_answer_event(agent_ops[i].op);
		if (rc == 0 && j->ack < 0 && !strcmp(agent_ops[i].op, "write_file"))
			json_decref(out);
		else
			answer(e, j->ack, ev, j->name, rc ? NULL : out, &err, rid);
		json_decref(rid);
		return;
	}
	if (!strcmp(j->name, "jailbox:abort") || !strcmp(j->name, "jailbox:close")) {
		int ab = !strcmp(j->name, "jailbox:abort");
		int rc = cof_relay_end(r, &e->who, e->uid, ab ? "aborted" : "closed", &err)
			 ? carried(-1, e, ab ? "POST" : "DELETE", ab ? "/abort" : "", NULL, &out,
				   &err)
			 : cof_relay_get(r, &e->who, e->uid, &out, &err);
		answer(e, j->ack, NULL, j->name, rc ? NULL : out, &err, NULL);
		return;
	}
	cof_error(&err, COF_EVALIDATION, "unknown event '%.64s' from the agent side; known: "
		  "jailbox:file_read, jailbox:file_write, jailbox:list_directory, "
		  "jailbox:search_files, jailbox:abort, jailbox:close", j->name);
	answer(e, j->ack, NULL, j->name, NULL, &err, NULL);
}

/* The user side's answer to an op: {id?, ok, result|error} (the id from
 * the ack, else from the object). */
static void user_result(eio *e, const char *op_id, json_t *a, int64_t ack, const char *name)
{
	cof_relay *r = G.srv->relay;
	cof_err err = {0};
	json_t *body = json_is_object(a) ? json_deep_copy(a) : NULL;
	const char *id = op_id && *op_id ? op_id : cof_json_str(a, "id");

	if (!id) {
		cof_error(&err, COF_EVALIDATION, "%s needs the op's 'id'", name);
		answer(e, ack, NULL, name, NULL, &err, NULL);
		json_decref(body);
		return;
	}
	char idc[64];
	snprintf(idc, sizeof idc, "%s", id);
	json_object_del(body, "id");
	cof_err bad = {0};
	if (!body)
		cof_error(&bad, COF_EVALIDATION, "the answer is not a JSON object");
	int rc = cof_relay_result(r, e->uid, e->token, idc, body, body ? NULL : &bad, &err);
	cof_err_clear(&bad);
	json_decref(body);
	if (rc || ack >= 0)
		answer(e, ack, NULL, name, rc ? NULL : json_pack("{s:s}", "id", idc), &err, NULL);
}

static void user_event(eio *e, job *j)
{
	cof_relay *r = G.srv->relay;
	cof_err err = {0};
	json_t *a0 = json_array_get(j->data, 1);
	const char *type = NULL;

	if (!strcmp(j->name, "jailbox:file_content") || !strcmp(j->name, "jailbox:write_result")
	    || !strcmp(j->name, "jailbox:result")) {
		user_result(e, NULL, a0, j->ack, j->name);
		return;
	}
	if (!strcmp(j->name, "jailbox:ready")) {
		pthread_mutex_lock(&G.mu);
		json_t *st = json_pack("{s:s, s:s, s:s}", "uid", e->uid, "status", "active", "mode",
				       e->mode);
		pthread_mutex_unlock(&G.mu);
		answer(e, j->ack, NULL, j->name, st, &err, NULL);
		return;
	}
	if (!strcmp(j->name, "jailbox:accept"))
		type = "accept";
	else if (!strcmp(j->name, "jailbox:abort"))
		type = "abort";
	else if (!strcmp(j->name, "jailbox:write_blocked"))
		type = "write_blocked";
	else if (!strcmp(j->name, "jailbox:exclusions"))
		type = "exclusions";
	if (!type) {
		cof_error(&err, COF_EVALIDATION, "unknown event '%.64s' from the user's side; known: "
			  "jailbox:ready, jailbox:accept, jailbox:abort, jailbox:exclusions, "
			  "jailbox:write_blocked, jailbox:file_content, jailbox:write_result, "
			  "jailbox:result", j->name);
		answer(e, j->ack, NULL, j->name, NULL, &err, NULL);
		return;
	}
	json_t *body = json_pack("{s:s}", "type", type);
	if (json_is_object(a0))
		json_object_set(body, "data", a0);
	else if (json_is_array(a0) && !strcmp(type, "exclusions"))
		json_object_set_new(body, "data", json_pack("{s:O}", "exclusions", a0));
	int rc = cof_relay_client_event(r, e->uid, e->token, body, &err);
	json_decref(body);
	answer(e, j->ack, NULL, j->name, rc ? NULL : json_object(), &err, NULL);
}

static void run_job(job *j)
{
	eio *e = j->e;

	if (j->kind == J_CONNECT) {
		do_connect(e, j->data);
		return;
	}
	pthread_mutex_lock(&G.mu);
	int live = e->ns == NS_CONNECTED && !e->closed;
	pthread_mutex_unlock(&G.mu);
	if (!live)
		return;
	if (j->kind == J_ACK)
		user_result(e, j->op, json_array_get(j->data, 0), -1, "ack");
	else if (e->role == ROLE_AGENT)
		agent_event(e, j);
	else
		user_event(e, j);
}

/* ------------------------------------------------- packets from a client */

/* One Socket.IO packet from e's client. Under G.mu. 0, or -1 with err (the
 * session ends). */
static int sio_in(eio *e, const char *s, size_t n, cof_err *err)
{
	cof_sio_pkt p;

	if (cof_sio_decode(s, n, &p, err))
		return -1;
	if (strcmp(p.nsp, NSP)) {
		if (p.type == COF_SIO_CONNECT) {
			json_t *ce = json_pack("{s:s}", "message", "Invalid namespace: cofferd "
					       "serves only /jailbox");
			cof_buf b = COF_BUF_INIT;
			cof_sio_encode(&b, COF_SIO_CONNECT_ERROR, p.nsp, -1, ce);
			eio_push(e, COF_EIO_MESSAGE, b.data, b.len);
			cof_buf_release(&b);
			json_decref(ce);
		}
		cof_sio_pkt_clear(&p);
		return 0;
	}
	switch (p.type) {
	case COF_SIO_CONNECT:
		if (e->ns == NS_CONNECTING || e->ns == NS_CONNECTED) {
			cof_sio_pkt_clear(&p);
			return cof_error(err, COF_EVALIDATION, "a second CONNECT to /jailbox");
		}
		e->ns = NS_CONNECTING;
		e->held = json_array();
		job_put(e, J_CONNECT, NULL, p.data ? p.data : json_object(), -1, NULL);
		p.data = NULL;
		break;
	case COF_SIO_DISCONNECT:
		if (e->ns == NS_CONNECTED || e->ns == NS_CONNECTING)
			e->ns = NS_CLOSED; /* the hub releases the stream */
		hub_wake();
		break;
	case COF_SIO_EVENT:
		if (e->ns == NS_CONNECTING) {
			if (json_array_size(e->held) >= 256) {
				cof_sio_pkt_clear(&p);
				return cof_error(err, COF_ERATELIMIT, "256 packets sent before the "
						 "CONNECT was answered");
			}
			json_array_append_new(e->held, json_pack("[i, O, I]", p.type, p.data,
								 (json_int_t)p.ack));
		} else if (e->ns == NS_CONNECTED) {
			job_put(e, J_EVENT, json_string_value(json_array_get(p.data, 0)), p.data,
				p.ack, NULL);
			p.data = NULL;
		}
		break;
	case COF_SIO_ACK: {
		ack_map **pp = &e->acks, *a;
		while ((a = *pp) && a->ack != p.ack)
			pp = &a->next;
		if (a && e->ns == NS_CONNECTED) {
			*pp = a->next;
			job_put(e, J_ACK, NULL, p.data, -1, a->op);
			p.data = NULL;
			free(a);
		}
		break;
	}
	default:
		cof_sio_pkt_clear(&p);
		return cof_error(err, COF_EVALIDATION, "a client may not send Socket.IO packet "
				 "type %d", p.type);
	}
	cof_sio_pkt_clear(&p);
	return 0;
}

typedef struct in_ctx {
	eio *e;
	ws *w;                 /* the WebSocket it came on, or NULL (polling) */
	cof_err *err;
} in_ctx;

/* One Engine.IO packet from a client. Under G.mu. */
static int eio_in(void *arg, int type, const char *data, size_t n)
{
	in_ctx *c = arg;
	eio *e = c->e;


	switch (type) {
	case COF_EIO_PONG:
		e->ping_sent_ms = 0;
		return 0;
	case COF_EIO_PING: /* Engine.IO v3 clients ping; v4 ones only answer */
		eio_push(e, COF_EIO_PONG, data, n);
		return 0;
	case COF_EIO_MESSAGE:
		return sio_in(e, data, n, c->err);
	case COF_EIO_CLOSE:
		eio_close(e, "client close");
		return 1;
	case COF_EIO_NOOP:
		return 0;
	case COF_EIO_UPGRADE:
		if (c->w && !c->w->upgraded && e->transport == T_POLLING) {
			c->w->upgraded = 1;
			if (c->w->probed)
				G.probing--;
			e->transport = T_WS;
			if (!c->w->dirty) {
				c->w->dirty = 1;
				c->w->dirty_next = G.dirty;
				G.dirty = c->w;
			}
			uint64_t one = 1; /* a GET still waiting answers (noop) */
			(void)!write(e->wake, &one, sizeof one);
			return 0;
		}
		return cof_error(c->err, COF_EVALIDATION, "an upgrade packet out of place");
	default:
		return cof_error(c->err, COF_EVALIDATION, "a client may not send Engine.IO "
				 "packet type %d", type);
	}
}

/* ------------------------------------------------------------ long-polling */

static enum MHD_Result send_text(http_req *req, unsigned status, const char *ct, char *text,
				 size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, text,
								    MHD_RESPMEM_MUST_FREE);

	if (!resp) {
		free(text);
		return MHD_NO;
	}
	http_count_out(req, (int64_t)len);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	return http_queue(req, status, resp);
}

/* Engine.IO's error answer: 400 {code, message}. */
static enum MHD_Result eio_error(http_req *req, unsigned status, int code, const char *msg)
{
	return http_send_json(req, status, json_pack("{s:i, s:s}", "code", code, "message", msg));
}

/* Takes e's queued packets as one polling payload (0x1e between). A close
 * packet goes in a payload of its own, by the next poll: engine.io-client
 * acts on it at once but hands the messages before it on a tick later, to
 * a socket closed by then (the reason and the DISCONNECT would be lost).
 * Under G.mu. */
static char *take_payload(eio *e, size_t *len)
{
	cof_buf b = COF_BUF_INIT;

	while (e->head) {
		pkt *p = e->head;
		if (b.len && p->data[0] == '0' + COF_EIO_CLOSE)
			break;
		if (b.len)
			cof_buf_add(&b, EIO_SEP, 1);
		cof_buf_add(&b, p->data, p->len);
		e->head = p->next;
		free(p);
	}
	if (!e->head) {
		e->tail = NULL;
		e->qbytes = 0;
	} else {
		e->qbytes = e->head->len;
	}
	return cof_buf_detach(&b, len);
}

static int query_check(http_req *req, const char **sid, const char **transport)
{
	const char *eio_v = NULL;
	cof_err err = {0};

	if (http_query(req, "EIO", &eio_v, &err) || http_query(req, "sid", sid, &err) ||
	    http_query(req, "transport", transport, &err)) {
		cof_err_clear(&err);
		return -1;
	}
	if (!eio_v || strcmp(eio_v, "4"))
		return 5;
	if (!*transport || (strcmp(*transport, "polling") && strcmp(*transport, "websocket")))
		return 0;
	return 6;
}

static enum MHD_Result ws_answer(http_req *req, const char *sid);

enum MHD_Result http_sio_get(http_req *req)
{
	const char *sid = NULL, *transport = NULL;
	int q = query_check(req, &sid, &transport);
	cof_err err = {0};
	eio *e;

	if (q == -1)
		return eio_error(req, 400, 3, "Bad request");
	if (q == 5)
		return eio_error(req, 400, 5, "Unsupported protocol version (cofferd speaks EIO=4)");
	if (q == 0)
		return eio_error(req, 400, 0, "Transport unknown (polling or websocket)");
	if (!strcmp(transport, "websocket"))
		return ws_answer(req, sid);
	pthread_mutex_lock(&G.mu);
	if (!G.started || G.stop) {
		pthread_mutex_unlock(&G.mu);
		return eio_error(req, 503, 3, "cofferd is stopping");
	}
	if (!sid) { /* the handshake */
		e = eio_new(&err);
		char *data = e ? open_data(e, 1) : NULL;
		pthread_mutex_unlock(&G.mu);
		if (!e) {
			enum MHD_Result r = eio_error(req, 503, 3, err.msg);
			cof_err_clear(&err);
			return r;
		}
		size_t n = strlen(data);
		char *body = cof_malloc(n + 2);
		body[0] = '0';
		memcpy(body + 1, data, n + 1);
		free(data);
		return send_text(req, 200, "text/plain; charset=UTF-8", body, n + 1);
	}
	e = eio_find(sid);
	int mine = e && e->poll == req;
	if (!e || (!mine && e->transport == T_WS)) {
		pthread_mutex_unlock(&G.mu);
		return eio_error(req, 400, 1, "Session ID unknown");
	}
	if (e->poll && !mine) {
		/* two GETs at once: Engine.IO ends the session */
		eio_close(e, "two polls");
		pthread_mutex_unlock(&G.mu);
		return eio_error(req, 400, 3, "Overlapping polling requests");
	}
	http_drain_fd(e->wake);
	int upgraded = e->transport == T_WS;
	if (!e->head && !e->closed && !upgraded && !G.stop) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!e->poll) {
			e->poll = req;
			e->refs++;
		}
		if (http_wait_on(&req->wait, req->conn, e->wake, ci ? ci->connect_fd : -1,
				 cof_mono_ms() + PING_INTERVAL_MS + PING_TIMEOUT_MS) == 0) {
			pthread_mutex_unlock(&G.mu);
			return MHD_YES;
		}
	}
	size_t len = 1;
	char *body;
	if (upgraded) { /* the queue is the WebSocket's now: this transport is done */
		body = cof_strdup("6");
	} else {
		if (!e->head)
			eio_push(e, e->closed ? COF_EIO_CLOSE : COF_EIO_NOOP, "", 0);
		body = take_payload(e, &len);
	}
	if (e->poll == req) {
		e->poll = NULL;
		e->refs--;
		hub_wake();
	}
	pthread_mutex_unlock(&G.mu);
	return send_text(req, 200, "text/plain; charset=UTF-8", body, len);
}

int http_sio_begin_post(http_req *req)
{
	req->body.max = COF_SIO_MSG_MAX;
	return 0;
}

enum MHD_Result http_sio_post(http_req *req)
{
	const char *sid = NULL, *transport = NULL;
	int q = query_check(req, &sid, &transport);
	cof_err err = {0};
	eio *e;

	if (q != 6 || !sid || strcmp(transport, "polling"))
		return eio_error(req, 400, 3, "Bad request: POST needs EIO=4, transport=polling "
				 "and sid");
	pthread_mutex_lock(&G.mu);
	e = eio_find(sid);
	if (!e || e->closed || e->transport != T_POLLING) {
		pthread_mutex_unlock(&G.mu);
		return eio_error(req, 400, 1, "Session ID unknown");
	}
	in_ctx c = {e, NULL, &err};
	int rc = cof_eio_payload_each(req->body.data ? req->body.data : "", req->body.len, eio_in,
				      &c, &err);
	if (rc < 0)
		eio_close(e, err.msg);
	pthread_mutex_unlock(&G.mu);
	if (rc < 0) {
		char msg[600];
		snprintf(msg, sizeof msg, "Bad request: %s", err.msg);
		cof_err_clear(&err);
		return eio_error(req, 400, 3, msg);
	}
	return send_text(req, 200, "text/html", cof_strdup("ok"), 2);
}

/* ------------------------------------------------------------ WebSocket */

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
		       void *user)
{
	ws *w = user;
	ssize_t n;

	(void)flags;
	if (w->extra_off < w->extra_len) {
		size_t k = w->extra_len - w->extra_off < len ? w->extra_len - w->extra_off : len;
		memcpy(buf, w->extra + w->extra_off, k);
		w->extra_off += k;
		return (ssize_t)k;
	}
	n = recv(w->fd, buf, len, 0);
	if (n > 0)
		return n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	else
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
		       int flags, void *user)
{
	ws *w = user;
	ssize_t n = send(w->fd, data, len, MSG_NOSIGNAL);

	(void)flags;
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	else
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static void ws_text(ws *w, const char *s, size_t n)
{
	struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)s, n};
	(void)wslay_event_queue_msg(w->ctx, &m);
}

static void ws_fail(ws *w, uint16_t code, const char *reason)
{
	(void)wslay_event_queue_close(w->ctx, code, (const uint8_t *)reason,
				      strlen(reason) > 120 ? 120 : strlen(reason));
	wslay_event_shutdown_read(w->ctx);
}

/* A whole message (hub thread). */
static void ws_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
		   void *user)
{
	ws *w = user;
	cof_err err = {0};
	int type;
	const char *d;
	size_t dn;

	(void)ctx;
	if (a->opcode == WSLAY_BINARY_FRAME) {
		ws_fail(w, 1003, "binary messages are not supported: send JSON text");
		return;
	}
	if (a->opcode != WSLAY_TEXT_FRAME)
		return;
	if (cof_eio_packet((const char *)a->msg, a->msg_length, &type, &d, &dn, &err)) {
		ws_fail(w, 1007, err.msg);
		cof_err_clear(&err);
		return;
	}
	pthread_mutex_lock(&G.mu);
	eio *e = w->e;
	if (!w->upgraded && type == COF_EIO_PING && dn == 5 && !memcmp(d, "probe", 5)) {
		pthread_mutex_unlock(&G.mu);
		ws_text(w, "3probe", 6);
		pthread_mutex_lock(&G.mu);
		if (e && !w->probed) { /* the waiting GET answers (a noop), as long as the
					* probe lasts (probe_noops), so the client can upgrade */
			w->probed = 1;
			G.probing++;
			eio_push(e, COF_EIO_NOOP, "", 0);
		}
		pthread_mutex_unlock(&G.mu);
		return;
	}
	if (!e || e->closed) {
		pthread_mutex_unlock(&G.mu);
		ws_fail(w, 1000, "session closed");
		return;
	}
	in_ctx c = {e, w, &err};
	int rc = eio_in(&c, type, d, dn);
	if (rc < 0)
		eio_close(e, err.msg);
	pthread_mutex_unlock(&G.mu);
	if (rc < 0) {
		ws_fail(w, 1008, err.msg);
		cof_err_clear(&err);
	}
}

/* Sends what e queued for its WebSocket (hub). */
static void ws_flush(ws *w)
{
	pkt *list = NULL;
	int closed = 0;

	pthread_mutex_lock(&G.mu);
	if (w->e && w->upgraded) {
		list = w->e->head;
		w->e->head = w->e->tail = NULL;
		w->e->qbytes = 0;
		closed = w->e->closed;
	}
	pthread_mutex_unlock(&G.mu);
	while (list) {
		pkt *p = list;
		list = p->next;
		ws_text(w, p->data, p->len);
		free(p);
	}
	if (closed)
		w->closing = 1;
}

/* The close frame of a closed session, once the packets before it went
 * (wslay sends a control frame ahead of queued messages: queued with them,
 * it would cut off the reason and the DISCONNECT). */
static void ws_close_after(ws *w)
{
	if (w->closing != 1 || wslay_event_get_queued_msg_count(w->ctx))
		return;
	w->closing = 2;
	(void)wslay_event_queue_close(w->ctx, 1000, NULL, 0);
	if (wslay_event_send(w->ctx) != 0)
		w->dead = 1;
}

/* Sets the socket's epoll interest to what wslay wants; 1 when it wants
 * nothing more (done). */
static int ws_arm(ws *w)
{
	uint32_t ev = EPOLLRDHUP;

	if (wslay_event_want_read(w->ctx))
		ev |= EPOLLIN;
	if (wslay_event_want_write(w->ctx))
		ev |= EPOLLOUT;
	if (!(ev & (EPOLLIN | EPOLLOUT)))
		return 1;
	if (ev != w->events) {
		struct epoll_event e = {.events = ev, .data.ptr = &w->item};
		(void)epoll_ctl(G.ep, EPOLL_CTL_MOD, w->fd, &e);
		w->events = ev;
	}
	return 0;
}

/* Closes the WebSocket (hub): its session ends when it carried it. */
static void ws_destroy(ws *w)
{
	const union MHD_ConnectionInfo *ci;

	(void)epoll_ctl(G.ep, EPOLL_CTL_DEL, w->fd, NULL);
	pthread_mutex_lock(&G.mu);
	if (w->probed && !w->upgraded)
		G.probing--;
	if (w->e) {
		eio *e = w->e;
		w->e = NULL;
		if (e->ws == w)
			e->ws = NULL; /* first: the close below queues nothing for w */
		if (w->upgraded)
			eio_close(e, "transport close");
		e->refs--;
	}
	for (ws **p = &G.all; *p; p = &(*p)->all_next)
		if (*p == w) {
			*p = w->all_next;
			break;
		}
	for (ws **p = w->dirty ? &G.dirty : NULL; p && *p; p = &(*p)->dirty_next)
		if (*p == w) {
			*p = w->dirty_next;
			break;
		}
	pthread_mutex_unlock(&G.mu);
	wslay_event_context_free(w->ctx);
	ci = MHD_get_connection_info(w->conn, MHD_CONNECTION_INFO_DAEMON);
	http_upgrade_close(w->urh, ci ? ci->daemon : NULL);
	free(w->extra);
	free(w);
}

/* The socket turned ready (hub). */
static void ws_ready(ws *w, uint32_t events)
{
	/* bytes MHD read with the request (a client that did not wait for the
	 * 101) raise no event of the socket's own */
	if (((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ||
	     w->extra_off < w->extra_len) &&
	    wslay_event_want_read(w->ctx) && wslay_event_recv(w->ctx) != 0)
		w->dead = 1;
	if (!w->dead)
		ws_flush(w);
	if (!w->dead && wslay_event_want_write(w->ctx) && wslay_event_send(w->ctx) != 0)
		w->dead = 1;
	if (!w->dead)
		ws_close_after(w);
	if ((events & (EPOLLHUP | EPOLLERR)) && !wslay_event_want_read(w->ctx))
		w->dead = 1;
	if (w->dead || ws_arm(w))
		ws_destroy(w);
}

/* MHD's upgrade: the socket is ours from here (an event loop's thread). */
static void ws_upgraded(void *cls, struct MHD_Connection *conn, void *con_cls,
			const char *extra_in, size_t extra_in_size, MHD_socket sock,
			struct MHD_UpgradeResponseHandle *urh)
{
	ws *w = cls;
	struct wslay_event_callbacks cb = {ws_recv, ws_send, NULL, NULL, NULL, NULL, ws_msg};
	cof_err err = {0};

	(void)con_cls;
	w->fd = sock;
	w->urh = urh;
	w->conn = conn;
	w->item.kind = ITEM_WS;
	if (extra_in_size) {
		w->extra = cof_malloc(extra_in_size);
		memcpy(w->extra, extra_in, extra_in_size);
		w->extra_len = extra_in_size;
	}
	(void)fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
	/* frames go out as they are made: an ack and the event behind it are two
	 * small sends, and Nagle held the second for the client's delayed ACK
	 * (40 ms a 4 KiB write, bench/relay_socketio.py); nor a cork MHD left */
	int one = 1;
	(void)setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	(void)setsockopt(sock, IPPROTO_TCP, TCP_CORK, &(int){0}, sizeof(int));
	if (wslay_event_context_server_init(&w->ctx, &cb, w)) {
		http_upgrade_close(urh, NULL);
		free(w->extra);
		free(w);
		return;
	}
	wslay_event_config_set_max_recv_msg_length(w->ctx, COF_SIO_MSG_MAX);
	pthread_mutex_lock(&G.mu);
	if (!w->e) { /* a WebSocket from the start: a new session on it */
		eio *e = G.stop ? NULL : eio_new(&err);
		if (e) {
			char *data = open_data(e, 0);
			e->transport = T_WS;
			e->ws = w;
			e->refs++;
			w->e = e;
			w->upgraded = 1;
			eio_push(e, COF_EIO_OPEN, data, strlen(data));
			free(data);
		}
	}
	if (!w->e) /* nobody sees w yet */
		ws_fail(w, 1013, err.msg[0] ? err.msg : "cofferd is stopping");
	w->all_next = G.all;
	G.all = w;
	if (!w->dirty) {
		w->dirty = 1;
		w->dirty_next = G.dirty;
		G.dirty = w;
	}
	w->events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
	struct epoll_event ev = {.events = w->events, .data.ptr = &w->item};
	(void)epoll_ctl(G.ep, EPOLL_CTL_ADD, sock, &ev);
	hub_wake();
	pthread_mutex_unlock(&G.mu);
	cof_err_clear(&err);
}

/* GET /socket.io/?EIO=4&transport=websocket[&sid=]: 101 and the upgrade. */
static enum MHD_Result ws_answer(http_req *req, const char *sid)
{
	const char *up = http_header(req, "Upgrade"), *key = http_header(req, "Sec-WebSocket-Key");
	const char *ver = http_header(req, "Sec-WebSocket-Version");
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	unsigned char md[SHA_DIGEST_LENGTH], raw[32];
	char accept[64], cat[128];
	struct MHD_Response *resp;
	ws *w;

	if (!up || strcasecmp(up, "websocket") || !key || !ver || strcmp(ver, "13"))
		return eio_error(req, 400, 3, "Bad request: a WebSocket upgrade (Upgrade: "
				 "websocket, Sec-WebSocket-Version: 13, Sec-WebSocket-Key) is needed");
	if (strlen(key) != 24 || EVP_DecodeBlock(raw, (const unsigned char *)key, 24) != 18)
		return eio_error(req, 400, 3, "Bad request: Sec-WebSocket-Key is not 16 bytes "
				 "of base64");
	w = cof_calloc(1, sizeof *w);
	w->fd = -1;
	pthread_mutex_lock(&G.mu);
	if (!G.started || G.stop) {
		pthread_mutex_unlock(&G.mu);
		free(w);
		return eio_error(req, 503, 3, "cofferd is stopping");
	}
	if (sid) {
		eio *e = eio_find(sid);
		if (!e || e->closed || e->transport != T_POLLING || e->ws) {
			pthread_mutex_unlock(&G.mu);
			free(w);
			return eio_error(req, 400, 1, "Session ID unknown (or not one to upgrade)");
		}
		e->ws = w;
		e->refs++;
		w->e = e;
	}
	pthread_mutex_unlock(&G.mu);
	snprintf(cat, sizeof cat, "%s%s", key, guid);
	SHA1((const unsigned char *)cat, strlen(cat), md);
	EVP_EncodeBlock((unsigned char *)accept, md, SHA_DIGEST_LENGTH);
	resp = MHD_create_response_for_upgrade(ws_upgraded, w);
	if (!resp) {
		pthread_mutex_lock(&G.mu);
		if (w->e) {
			w->e->ws = NULL;
			w->e->refs--;
		}
		pthread_mutex_unlock(&G.mu);
		free(w);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	return http_queue(req, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
}

/* ------------------------------------------------------------ the hub */

static const char *event_name(const char *type, char *buf, size_t sz)
{
	snprintf(buf, sz, "jailbox:%s", type);
	return buf;
}

static const char *op_event(const char *op)
{
	for (int i = 0; agent_ops[i].event; i++)
		if (!strcmp(agent_ops[i].op, op))
			return agent_ops[i].event;
	return "jailbox:op";
}

/* Moves the stream's new events to e's client as Socket.IO events (hub).
 * A stream that ended disconnects the namespace. */
static void pump(eio *e)
{
	json_t *evs = NULL, *ev;
	cof_err err = {0};
	size_t i;
	char name[64];

	http_drain_fd(e->sub->fd);
	int done = cof_relay_stream_next(e->x, 0, &evs, &err);
	cof_err_clear(&err);
	pthread_mutex_lock(&G.mu);
	json_array_foreach(evs, i, ev) {
		const char *type = cof_json_str(ev, "type");
		json_t *data = json_object_get(ev, "data");
		json_int_t id = json_integer_value(json_object_get(ev, "id"));
		json_t *d = json_is_object(data) ? json_deep_copy(data) : json_object();
		if (!type) {
			json_decref(d);
			continue;
		}
		json_object_set_new(d, "uid", json_string(e->uid));
		if (id > 0)
			json_object_set_new(d, "eventId", json_integer(id));
		if (e->role == ROLE_USER && !strcmp(type, "op")) {
			const char *op = cof_json_str(data, "op"), *opid = cof_json_str(data, "id");
			ack_map *a = cof_calloc(1, sizeof *a);
			a->ack = e->next_ack++;
			snprintf(a->op, sizeof a->op, "%s", opid ? opid : "");
			a->next = e->acks;
			e->acks = a;
			if (op && !strcmp(op, "write_file")) /* the guard passed it */
				emit(e, "jailbox:pre_scan_done", json_pack("{s:s, s:O?, s:s, s:b}",
					"id", a->op, "path", json_object_get(data, "path"), "uid",
					e->uid, "clean", 1), -1);
			emit(e, op_event(op ? op : ""), d, a->ack);
		} else if (e->role == ROLE_USER && !strcmp(type, "mode")) {
			snprintf(e->mode, sizeof e->mode, "%s", cof_json_str(data, "mode") ?
				 cof_json_str(data, "mode") : "");
			json_object_set_new(d, "status", json_string("active"));
			emit(e, "jailbox:status_changed", d, -1);
		} else {
			emit(e, event_name(type, name, sizeof name), d, -1);
		}
	}
	if (done) {
		e->ending = 1;
		maybe_disconnect(e);
	}
	pthread_mutex_unlock(&G.mu);
	json_decref(evs);
}

/* The hub's side of a namespace that closed: the stream and subscription
 * go (they may take the relay's lock: not under G.mu). */
static void release_stream(eio *e)
{
	cof_relay_stream *x;
	cof_sub *sub;

	pthread_mutex_lock(&G.mu);
	x = e->x;
	sub = e->sub;
	e->x = NULL;
	e->sub = NULL;
	if (e->sub_added) {
		e->sub_added = 0;
		e->refs--;
	}
	key_give(e);
	pthread_mutex_unlock(&G.mu);
	if (sub) {
		(void)epoll_ctl(G.ep, EPOLL_CTL_DEL, sub->fd, NULL);
		cof_notify_unsubscribe(sub);
	}
	cof_relay_stream_close(x);
}

/* An agent socket whose key was revoked or expired (keywatch.c saw it): the
 * reason as jailbox:error, the namespace's DISCONNECT, then the Engine.IO
 * close and the transport. Under G.mu. */
static void key_ended(eio *e, const char *msg)
{
	cof_err err = {0};

	cof_error(&err, COF_EUNAUTHORIZED, "%s", msg);
	json_t *a = error_json(&err);
	json_object_set_new(a, "uid", json_string(e->uid));
	emit(e, "jailbox:error", a, -1);
	sio_push(e, COF_SIO_DISCONNECT, -1, NULL);
	eio_close(e, msg);
	cof_err_clear(&err);
}

/* Once a second and after wakes: pings, timeouts, ended keys, closed
 * sessions (hub). */
static void sweep(int64_t now, int pump_all)
{
	eio *todo[64];
	size_t ntodo;

	do {
		ntodo = 0;
		pthread_mutex_lock(&G.mu);
		for (unsigned b = 0; b < BUCKETS; b++)
			for (eio *e = G.buckets[b], *next; e; e = next) {
				next = e->next;
				if (!e->closed && e->ping_sent_ms &&
				    now - e->ping_sent_ms >= PING_TIMEOUT_MS)
					eio_close(e, "ping timeout");
				else if (!e->closed && e->ns == NS_NONE &&
					 now - e->created_ms >= CONNECT_TIMEOUT_MS)
					eio_close(e, "no namespace");
				else if (!e->closed && !e->ping_sent_ms && now >= e->next_ping_ms) {
					eio_push(e, COF_EIO_PING, "", 0);
					e->ping_sent_ms = now;
					e->next_ping_ms = now + PING_INTERVAL_MS;
				}
				char msg[160];
				if (!e->closed && e->ns == NS_CONNECTED && e->keyhold &&
				    http_key_ended(e->keyhold, msg, sizeof msg))
					key_ended(e, msg);
				if (G.stop && !e->closed)
					eio_close(e, "stopping");
				if ((e->x && (e->ns == NS_CLOSED || e->closed)) && ntodo < 64) {
					todo[ntodo++] = e;
					e->refs++;
				} else if (e->closed && e->refs == 0 && !e->x &&
					   (!e->head || e->transport == T_WS ||
					    now - e->closed_ms >= PING_TIMEOUT_MS)) {
					/* a polling client gets its close packet by
					 * its next poll, if it comes */
					eio_free(e);
				}
			}
		pthread_mutex_unlock(&G.mu);
		for (size_t i = 0; i < ntodo; i++) {
			release_stream(todo[i]);
			pthread_mutex_lock(&G.mu);
			todo[i]->refs--;
			pthread_mutex_unlock(&G.mu);
		}
	} while (ntodo == 64);
	if (!pump_all)
		return;
	/* the streams' own clocks (time limit, grace, other nodes' events) */
	eio **live;
	size_t n = 0;
	pthread_mutex_lock(&G.mu);
	live = cof_malloc((G.nsessions + 1) * sizeof *live);
	for (unsigned b = 0; b < BUCKETS; b++)
		for (eio *e = G.buckets[b]; e; e = e->next)
			if (e->x && e->ns == NS_CONNECTED && !e->closed) {
				live[n++] = e;
				e->refs++;
			}
	pthread_mutex_unlock(&G.mu);
	for (size_t i = 0; i < n; i++) {
		pump(live[i]);
		pthread_mutex_lock(&G.mu);
		live[i]->refs--;
		pthread_mutex_unlock(&G.mu);
	}
	free(live);
}

/* Engine.IO's probe: until the client moves to its WebSocket, a GET
 * waiting on polling answers a noop every PROBE_NOOP_MS, since the client
 * waits for its poll to end before it upgrades, and may have sent that poll
 * after the first noop (hub). */
static void probe_noops(void)
{
	pthread_mutex_lock(&G.mu);
	for (ws *w = G.probing ? G.all : NULL; w; w = w->all_next)
		if (w->probed && !w->upgraded && w->e && w->e->poll && !w->e->head)
			eio_push(w->e, COF_EIO_NOOP, "", 0);
	pthread_mutex_unlock(&G.mu);
}

static void *hub_main(void *arg)
{
	struct epoll_event evs[128];
	int64_t last_sweep = 0, stop_ms = 0;

	(void)arg;
	for (;;) {
		int n = epoll_wait(G.ep, evs, 128,
				   __atomic_load_n(&G.probing, __ATOMIC_RELAXED) ? PROBE_NOOP_MS : 500);
		probe_noops();
		for (int i = 0; i < n; i++) {
			hub_item *it = evs[i].data.ptr;
			if (it->kind == ITEM_WAKE) {
				http_drain_fd(G.wake);
			} else if (it->kind == ITEM_WS) {
				ws *w = (ws *)it;
				ws_ready(w, evs[i].events);
			} else {
				eio *e = (eio *)((char *)it - offsetof(eio, sub_item));
				pthread_mutex_lock(&G.mu);
				int live = e->x && e->ns == NS_CONNECTED && !e->closed;
				if (live)
					e->refs++;
				pthread_mutex_unlock(&G.mu);
				if (live) {
					pump(e);
					pthread_mutex_lock(&G.mu);
					e->refs--;
					pthread_mutex_unlock(&G.mu);
				}
			}
		}
		/* WebSockets with packets to send */
		for (;;) {
			pthread_mutex_lock(&G.mu);
			ws *w = G.dirty;
			if (w) { /* `dirty` is 1 exactly while on the list */
				G.dirty = w->dirty_next;
				w->dirty = 0;
			}
			pthread_mutex_unlock(&G.mu);
			if (!w)
				break;
			ws_ready(w, 0);
		}
		int64_t now = cof_mono_ms();
		int stopping = __atomic_load_n(&G.stop, __ATOMIC_ACQUIRE);
		int tick = now - last_sweep >= 1000;
		if (tick || __atomic_exchange_n(&G.reap, 0, __ATOMIC_ACQ_REL) || stopping) {
			sweep(now, tick);
			if (tick)
				last_sweep = now;
		}
		if (stopping) {
			if (!stop_ms)
				stop_ms = now;
			pthread_mutex_lock(&G.mu);
			int left = G.nsessions > 0 || G.all;
			ws *w = now - stop_ms >= STOP_CUT_MS ? G.all : NULL;
			pthread_mutex_unlock(&G.mu);
			if (!left || now - stop_ms >= STOP_GIVE_UP_MS)
				break;
			if (w) /* a WebSocket that does not finish its close is cut */
				ws_destroy(w);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ start, stop */

int http_sio_start(http_server *srv, cof_err *err)
{
	G.srv = srv;
	G.ep = epoll_create1(EPOLL_CLOEXEC);
	G.wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	G.wake_item.kind = ITEM_WAKE;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &G.wake_item};
	if (G.ep < 0 || G.wake < 0 || epoll_ctl(G.ep, EPOLL_CTL_ADD, G.wake, &ev))
		return cof_error(err, COF_EINTERNAL, "cannot set up Socket.IO: %s", strerror(errno));
	for (int l = 0; l < 2; l++) {
		pthread_cond_init(&G.lanes[l].cv, NULL);
		G.lanes[l].max = l ? LANE_THREADS_MAX : 8;
	}
	if (pthread_create(&G.hub, NULL, hub_main, NULL))
		return cof_error(err, COF_EINTERNAL, "cannot start the Socket.IO hub");
	G.started = 1;
	return 0;
}

void http_sio_stop(void)
{
	if (!G.started)
		return;
	pthread_mutex_lock(&G.mu);
	G.stop = 1;
	for (int l = 0; l < 2; l++)
		pthread_cond_broadcast(&G.lanes[l].cv);
	for (unsigned b = 0; b < BUCKETS; b++)
		for (eio *e = G.buckets[b]; e; e = e->next)
			eio_close(e, "stopping");
	pthread_mutex_unlock(&G.mu);
	hub_wake();
	/* jobs end (the relay is shut down: waiting ops answer at once) */
	for (int l = 0; l < 2; l++) {
		pthread_mutex_lock(&G.mu);
		int n = G.lanes[l].n;
		pthread_mutex_unlock(&G.mu);
		for (int i = 0; i < n; i++)
			pthread_join(G.lanes[l].tids[i], NULL);
	}
	pthread_join(G.hub, NULL);
	close(G.ep);
	close(G.wake);
	G.started = 0;
}
