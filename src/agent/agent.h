/*
 * agent.h — what the files of the agent layer (src/agent/) share: an agent's
 * settings loaded, its mounts, and the one resolver of agent paths.
 * The public contract is in include/coffer.h.
 */
#ifndef COF_AGENT_H
#define COF_AGENT_H

#include "volume/volume.h"
#include "policy/policy.h"

#define COF_MOUNTS_MAX 32
#define COF_AGENT_PATH_MAX (COF_PATH_MAX + 256)

/* One mount: a folder of a volume seen at `path` in the agent's view. */
typedef struct cof_mount {
	char path[COF_AGENT_PATH_MAX + 1]; /* absolute, normalised: "/workspace" */
	char vol[48];                      /* the volume id */
	char subpath[COF_PATH_MAX + 1];    /* "" = the volume's root, else "a/b" */
	int rw;
	int notify;
	int workspace;                     /* the agent's own workspace volume */
	int reserved;                      /* a subject's /user: its memories/ and
					      skills/ are read-only */
	int attachments;                   /* a subject's /attachments (read-only) */
} cof_mount;

/* An agent as loaded for one call: its mounts are fixed for that call even if
 * they are replaced meanwhile. Release with cof_agent_release. */
typedef struct cof_agent {
	char org[48];
	char id[128];
	char workspace[48];
	int file_tools;
	json_t *settings;         /* the stored settings object (owned) */
	cof_mount mounts[COF_MOUNTS_MAX + 2]; /* + a subject's /user, /attachments */
	size_t nmounts;
	const char *run;          /* the call's X-Run-Id, or NULL */
	const char *scope;        /* the call's read scope (an MCP session), or
				     NULL: see cof_agent_seen_get */
	cof_excl *excl;           /* its exclusions, compiled at load (owned) */
	char subject[129];        /* the subject it acts for, "" = none */
	char conv[48];            /* with a subject: the subject's conversations
				     volume (its prompts and attachments) */
	cof_by by;                /* who its tools' writes are by (a tool call's) */
} cof_agent;

int cof_agent_load(cof_store *st, const char *org, const char *id, cof_agent *out,
		   cof_err *err);
void cof_agent_release(cof_agent *a);
/* Who a write for `agent` (and `subject`, NULL or "" = none) is by (API.md
 * "Who"): the caller's key, tool and via with `run_id` and `call_id` (NULL =
 * the caller's), written into *out; returns out, or NULL when `caller` is NULL
 * (not said). The one place a caller's `by` is filled in for the agent layer. */
const cof_by *cof_by_for(cof_by *out, const cof_by *caller, const char *agent,
			 const char *subject, const char *run_id, const char *call_id);
/* Who a write through the agent is by (API.md "Who"): the caller's key and
 * via, this agent and its subject, with `run_id` and `call_id` (NULL = the
 * caller's).
 * Kept in a->by; returns it, or NULL when `caller` is NULL (not said). */
const cof_by *cof_agent_by_set(cof_agent *a, const cof_by *caller, const char *run_id,
			       const char *call_id);

/* Where an agent path lands. `vpath` is the path inside the volume ("" when the
 * path is the mount's root folder without a subpath); `apath` the normalised
 * agent path. */
typedef struct cof_target {
	const cof_mount *mount;
	char vpath[COF_PATH_MAX + 1];
	char apath[COF_AGENT_PATH_MAX + 1];
} cof_target;

/* The one resolver: relative paths resolve against the first mount; `..`, `.`
 * and empty segments are refused (COF_EVALIDATION); a path outside every
 * mount is COF_ENOTFOUND naming the mounts. */
int cof_agent_resolve(const cof_agent *a, const char *path, cof_target *out, cof_err *err);
/* The agent path of a volume path under mount m (inverse of resolve). */
void cof_agent_path_of(const cof_mount *m, const char *vpath, char *out, size_t outsz);
/* Refuses writes through a read-only mount, and into a subject's reserved
 * memories/ and skills/ (COF_EFORBIDDEN). */
int cof_agent_writable(const cof_target *t, cof_err *err);

/* Exclusions (exclude.c): the agent's `exclude` patterns plus the defaults
 * (unless defaultExclusions:false), matched against the agent path relative
 * to its mount ("/data/private/x" in the mount at /data is "private/x"), as
 * a .gitignore at each mount's root. cof_agent_resolve refuses excluded
 * paths (COF_EFORBIDDEN); listings and searches leave them out.
 * cof_agent_excl_load compiles them into a->excl (cof_agent_load calls it). */
int cof_agent_excl_load(cof_agent *a, cof_err *err);
int cof_agent_excluded(const cof_agent *a, const char *apath, int is_dir);
/* The same for a volume path under mount m (no agent path to build). */
int cof_agent_excluded_vpath(const cof_agent *a, const cof_mount *m, const char *vpath,
			     int is_dir);
/* 0, or -1 with COF_EFORBIDDEN naming the path when it is excluded. */
int cof_agent_allowed(const cof_agent *a, const char *apath, int is_dir, cof_err *err);
/* Drops the excluded entries ({path, type} objects) of a listing in place. */
void cof_agent_excl_filter(const cof_agent *a, json_t *entries);

/* Read tracking: what the agent last read or wrote of a file. Every read and
 * write is recorded for the agent (stored); one made in a read scope (a->scope:
 * an MCP session) is also recorded for that scope (in memory), and a call in
 * a scope is checked against the scope's record only, so two MCP sessions of
 * one agent each need their own read (docs/api.md "Read scopes"). */
int cof_agent_seen_get(cof_store *st, const cof_agent *a, const cof_target *t,
		       int64_t *version, char sha[65], cof_err *err);
int cof_agent_seen_put(cof_store *st, const cof_agent *a, const cof_target *t,
		       int64_t version, const char *sha, cof_err *err);
/* The same for n files of one mount (rows' paths are volume paths), the
 * stored record in one transaction. */
int cof_agent_seen_put_many(cof_store *st, const cof_agent *a, const cof_mount *mount,
			    const cof_seen_row *rows, size_t n, cof_err *err);

/* The immediate children of a target folder, as {name, path, type, size?}, at
 * most `cap` (then *more = 1). An absent folder has none. */
int cof_agent_children(cof_store *st, const cof_agent *a, const cof_target *t, size_t cap,
		       json_t **entries, int *more, cof_err *err);
/* The same, also saying (*hidden) how many entries the exclusions left out;
 * an excluded folder is COF_EFORBIDDEN. */
int cof_agent_children_hidden(cof_store *st, const cof_agent *a, const cof_target *t,
			      size_t cap, json_t **entries, int *more, size_t *hidden,
			      cof_err *err);

/* The tools (tools.c, search.c); each fills `out` with {ok, output, ...}. */
typedef int (*cof_tool_fn)(cof_store *st, const cof_agent *a, json_t *args, json_t **out,
			   cof_err *err);
int cof_tool_read(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err);
int cof_tool_write(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err);
int cof_tool_edit(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err);
int cof_tool_ls(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err);
int cof_tool_glob(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err);
int cof_tool_grep(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err);
int cof_tool_present(cof_store *st, const cof_agent *a, json_t *args, json_t **out,
		     cof_err *err);
int cof_tool_move(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err);

/* Images and PDFs read for the model (media.c). cof_media_type: the media type
 * told by the first bytes (PNG, JPEG, GIF, WebP, PDF), else NULL.
 * cof_media_read: for such bytes, fills *out (ok:true with `image` or
 * `document`, or a refusal saying why) and returns 1; 0 = not media; -1 error.
 * cof_media_refuse_large: 1 (refusal in *out) when an image or PDF of
 * `ctype` is over its byte limit. */
const char *cof_media_type(const unsigned char *d, size_t n);
int cof_media_read(const cof_target *t, const cof_file *f, const unsigned char *d,
		   json_t **out, cof_err *err);
int cof_media_refuse_large(const cof_target *t, const char *ctype, int64_t size, json_t **out);

/* Page `page` (1-based) of the PDF `d` as a PNG at most 1,600 px on its longer
 * side (pdfpage.c: rendered in a child process with a deadline). *png is
 * malloc'd; *pages the document's page count when it was read. Errors name the
 * limit: over 16 MiB or 10,000 pages, a page past the last, a page over
 * 14,400 pt a side or over 10 s (413/400), not a PDF or not renderable (415),
 * 4 renders under way (503). */
#define COF_PDF_PREVIEW_BYTES_MAX (16LL << 20)
#define COF_PDF_PREVIEW_PAGES_MAX 10000
int cof_pdf_page_png(const unsigned char *d, size_t n, int page, unsigned char **png,
		     size_t *pnglen, int *pages, cof_err *err);

/* Audio attached to a prompt, transcribed (audio.c). cof_audio_type: the
 * media type told by the first bytes (WAV, FLAC, Ogg, MP3), else NULL.
 * cof_audio_decode: the bytes as 16 kHz mono 16-bit samples (*pcm, malloc'd,
 * *ns of them): 0; 1 with why when they are not audio it can decode or last
 * over 10 minutes; 2 with why past `deadline` (cof_mono_ms; 0 = none).
 * cof_audio_transcript: the words of content `sha` (its n bytes d), from the
 * cache or transcribed now: 1 with *text (malloc'd; "" when no words were
 * heard), or 0 with why. cof_audio_set_transcriber: CMD run by /bin/sh
 * instead of PocketSphinx (NULL: PocketSphinx); set before any transcript. */
#define COF_AUDIO_BYTES_MAX (32LL << 20)
const char *cof_audio_type(const unsigned char *d, size_t n);
int cof_audio_decode(const unsigned char *d, size_t n, int64_t deadline, int16_t **pcm,
		     size_t *ns, char *why, size_t whysz);
int cof_audio_transcript(const char *sha, const unsigned char *d, size_t n, char **text,
			 char *why, size_t whysz);
void cof_audio_set_transcriber(const char *cmd);

/* A volume of the agent's own beside its subjects' (subjects.c): the
 * subjects row `key` ("#NAME", never a subject id: the volume is named "NAME
 * of agent ID"), made on first use and deleted with the agent. */
int cof_agent_own_volume(cof_store *st, const char *org, const char *agent, const char *key,
			 char vol[48], cof_err *err);

/* Acting for a subject (subjects.c, API.md "Subjects"): checks the subject
 * id (COF_EVALIDATION naming it), sets a->subject and a->conv (the subject's
 * conversations volume, which also keeps its attachments under
 * attachments/) and adds two mounts after the agent's: /user, the subject's
 * workspace (memories/ and skills/ read-only), and /attachments, its
 * attachments (read-only). Both volumes are made on first use, the
 * conversations one only when `make` (a prompt, an upload): until then the
 * subject has no attachments, no a->conv and no /attachments. An agent mount
 * at or around either: COF_ECONFLICT. NULL or "" = no subject: nothing
 * changes. The subject's reach is these two mounts only: another subject's
 * volumes are never among a's mounts. */
#define COF_ATTACH_DIR "attachments"
int cof_agent_as_subject(cof_store *st, cof_agent *a, const char *subject, int make,
			 cof_err *err);
/* Loads agent `id` acting for `subject` (NULL = none), as above. */
int cof_agent_load_as(cof_store *st, const char *org, const char *id, const char *subject,
		      int make, cof_agent *out, cof_err *err);
/* The subject's conversations volume if it has one: 1 = vol, 0 = none yet. */
int cof_agent_subject_conv(cof_store *st, const char *org, const char *agent,
			   const char *subject, char vol[48], cof_err *err);

/* The placement rule (uploads.c, seed 001 "Volumes"): where uploads,
 * tools' file outputs and the model's scratch files go, one rule for the
 * three. cof_agent_place: the mount, and in `dir` the folder in its volume
 * ("[subpath/]uploads", ".../tool-outputs", ".../tmp"; a subject's
 * attachments: the mount's root); NULL = no writable place. For a subject:
 * its /attachments (uploads) or /user (the others). Else the workspace
 * wherever it is mounted, else a read-write /workspace, else the first
 * read-write mount. cof_agent_places_json: {uploads, toolOutputs, tmp} as
 * agent paths, null where there is no place. */
typedef enum { COF_PLACE_UPLOADS, COF_PLACE_TOOL_OUTPUTS, COF_PLACE_TMP } cof_place;
const cof_mount *cof_agent_place(const cof_agent *a, cof_place kind, char *dir, size_t dirsz);
json_t *cof_agent_places_json(const cof_agent *a);

/* Uploads (uploads.c). cof_agent_upload_target: where upload `name` of
 * request `request` lands (both checked as single segments; 409 without a
 * writable place; excluded: 403): for an agent acting for a subject, its
 * attachments (/attachments/{request}/{name}), else seed 001's place. cof_agent_upload_count: how many files the
 * request has saved so far. COF_UPLOADS_PER_REQUEST bounds that. */
#define COF_UPLOADS_PER_REQUEST 20
int cof_agent_upload_target(const cof_agent *a, const char *request, const char *name,
			    cof_target *t, cof_err *err);
int cof_agent_upload_count(cof_store *st, const cof_agent *a, const cof_target *t,
			   int64_t *n, cof_err *err);

/* Prompts for the model (prompt.c, prompt_render.c). A record is
 * {requestId, text, conversation?, files:[{path, contentType, size, sha256,
 * version, kind?}]}; cof_prompt_record_ok: 1 when every field rendering
 * relies on is there and sound. cof_prompt_render: the record as one message,
 * *content (a line per file, the text, the files shown) and *files (the
 * answer's entries), counting what it shows in `b`; a file's `kind` is
 * filled in when missing. Call it newest prompt first. */
typedef struct cof_budget {
	int64_t bytes;
	int files;
	int cut;     /* a file did not fit: it and every older image or PDF only named */
} cof_budget;
int cof_prompt_record_ok(json_t *rec);
int cof_prompt_render(cof_store *st, json_t *rec, int openai, cof_budget *b,
		      json_t **content, json_t **files, cof_err *err);

/* Events (events.c): a file_presented event for the agent's streams (steals
 * `data`), and a change its own tools made (not reported back to it). */
void cof_agent_event_push(cof_store *st, const cof_agent *a, const char *type, json_t *data);
void cof_agent_own_write(cof_store *st, const cof_agent *a, const char *vol, int64_t seq);

/* Records in the agent's run (if the call has one) a file it wrote;
 * cof_agent_run_add any item. A subject's runs are its own: they are kept
 * under a key of the subject's (files.c run_key), whoever records them (a
 * tool, a turn's call). */
int cof_agent_run_wrote(cof_store *st, const cof_agent *a, const char *apath, json_t *put,
			cof_err *err);
int cof_agent_run_add(cof_store *st, const cof_agent *a, const cof_run_item *it,
		      cof_err *err);
/* cof_agent_run_add of n items in one write (a call's commit of thousands
 * of files records them at once). */
int cof_agent_run_add_many(cof_store *st, const cof_agent *a, const cof_run_item *its,
			   size_t n, cof_err *err);

/* Resolves args[key] (absent: the first mount unless `required`). A path
 * outside every mount becomes a model-facing refusal in *out (returns 1);
 * bad arguments are API errors (-1); 0 = resolved. */
int cof_tool_target(const cof_agent *a, json_t *args, const char *key, int required,
		    cof_target *t, json_t **out, cof_err *err);

/* A model-facing refusal: {ok:false, output:msg}; returns 0. */
int cof_tool_refuse(json_t **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
