/*
 * mcp.h — the Model Context Protocol core: an agent's file tools served as
 * MCP tools, whatever carries the messages (`coffer mcp` on stdio, cofferd's
 * /mcp over Streamable HTTP). It owns the JSON-RPC dispatch (initialize,
 * ping, tools/list, tools/call, notifications, error codes), the tool tables
 * and their descriptions, the instructions text and the mapping of a tool's
 * answer to MCP content. It runs nothing itself: a back end (a small vtable
 * given by the caller) runs the tools and looks the agent up, so this file
 * never calls up into http/ or cli/.
 */
#ifndef COF_MCP_H
#define COF_MCP_H

#include <stdio.h>
#include <jansson.h>

#define COF_MCP_PROTOCOL "2025-06-18" /* answered to a client asking for another */

/* JSON-RPC 2.0 error codes. */
#define COF_RPC_PARSE_ERROR (-32700)
#define COF_RPC_INVALID_REQUEST (-32600)
#define COF_RPC_METHOD_NOT_FOUND (-32601)
#define COF_RPC_INVALID_PARAMS (-32602)
#define COF_RPC_INTERNAL_ERROR (-32603)

/* What runs the tools. Each hook returns 0 with *out (owned by the caller),
 * or -1 with *msg (malloc'd; "MESSAGE (TYPE)" of an API error, or why there
 * was no answer), which the model then reads as the tool's error. */
typedef struct cof_mcp_backend {
	/* the agent's settings as GET /v1/agents/{id} answers them */
	int (*agent_get)(void *cls, json_t **out, char **msg);
	/* one tool: `subject` 1 = seed 003's toolset on the subject's workspace
	 * (POST /v1/agents/{a}/users/{s}/tools/{tool}), 0 = the agent's own
	 * (POST /v1/agents/{a}/tools/{tool}); `args` is borrowed */
	int (*tool)(void *cls, const char *tool, int subject, json_t *args, json_t **out,
		    char **msg);
	/* the agent's relay sessions as GET /v1/relay/sessions?agent= answers
	 * them ({sessions:[...]}, owned by the caller), or NULL; a NULL hook =
	 * the back end reaches no relay */
	json_t *(*relay_sessions)(void *cls);
	/* one op {op, ...} through relay session `uid` */
	int (*relay_op)(void *cls, const char *uid, json_t *body, json_t **out, char **msg);
	/* the name (malloc'd) of volume `vol`, or NULL; a NULL hook = none */
	char *(*volume_name)(void *cls, const char *vol);
} cof_mcp_backend;

/* One served agent. Fill it and call cof_mcp_handle for each message. */
typedef struct cof_mcp {
	const cof_mcp_backend *be;
	void *cls;          /* given to every hook */
	const char *agent;  /* the agent's id (borrowed) */
	const char *user;   /* the subject it acts for, or NULL (borrowed) */
	json_t *info;       /* the agent as looked up when serving began (borrowed):
			       its mounts, places and toolset settings */
	FILE *trace;        /* each request's method is written here; NULL = none */
	const char *name;   /* the prefix of trace lines, e.g. "coffer mcp" */
	/* The tool names the client was last told of ("read,write,..."; malloc'd,
	 * the caller frees it; NULL = none yet): each tools/list sets it, and
	 * cof_mcp_list_changed compares the tools now with it. */
	char *listed;
	int ready;          /* set by notifications/initialized: the client may be
			       sent notifications from now on */
} cof_mcp;

/* The notification sent when the tools changed (one JSON-RPC line). */
#define COF_MCP_LIST_CHANGED \
	"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"

/* One message (an object; a JSON array is a batch, as MCP before 2025-06-18
 * allowed): the answer (owned by the caller), or NULL when none is due (a
 * notification, a response from the client, a batch of those). */
json_t *cof_mcp_handle(cof_mcp *m, json_t *msg);
/* As cof_mcp_handle from the message's text; a text that is not JSON is
 * answered with a parse error. */
json_t *cof_mcp_handle_text(cof_mcp *m, const char *text, size_t len);

/* 1 when the tools tools/list would answer now differ from m->listed, which
 * then holds them (at most one notification per change); 0 when they are
 * the same, when nothing was listed yet (m->listed then starts as them), or
 * when the agent cannot be looked up now. */
int cof_mcp_list_changed(cof_mcp *m);

/* "MESSAGE (TYPE)" of `err` (malloc'd), as the back ends report an API error
 * to the model; clears err. */
struct cof_err;
char *cof_mcp_err_text(struct cof_err *err);
/* The sessions that are active or paused in a relay session list
 * {sessions:[{uid, status, mode, ...}, ...]} (newest first), as an array of
 * {uid, status, mode, startedAt?, client?} (owned; empty when none). */
json_t *cof_mcp_relay_live(json_t *list);

/* Streamable HTTP against DNS rebinding: 1 (with *why) when a request with
 * these `host` and `origin` headers (NULL = absent) must be refused: an
 * Origin of another site than Host; and when the server listens on a
 * loopback address (`listen`, as "127.0.0.1" or "[::1]") and the request did
 * not come through a trusted proxy (`proxied` 0), a Host that is not a
 * loopback name. A loopback Origin is this machine's when `listen` is. */
int cof_mcp_origin_refused(const char *listen, int proxied, const char *host,
			   const char *origin, const char **why);

/* 1 when `version` is a protocol version this server speaks. */
int cof_mcp_version_known(const char *version);

#endif
