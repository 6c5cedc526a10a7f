/*
 * policy.h — the rules that decide what a caller may touch and write: one
 * gitignore-style exclusion matcher (with the always-on defaults), access
 * modes, per-session limits, and the write guard (Hyperscan). Used by the
 * agent layer (agent `exclude` settings), the relay server and the relay
 * client (`coffer connect`), so each rule is decided in exactly one place.
 *
 * Layering: policy sits beside volume, below agent/turn/relay; it calls
 * nothing above it and touches no store.
 */
#ifndef COF_POLICY_H
#define COF_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "coffer.h"

/* ------------------------------------------------------------ exclusions */

/* A compiled list of gitignore-style patterns: `*`, `**`, `?`, `[...]`, a
 * leading `/` anchors to the root, a trailing `/` matches folders only, `!`
 * negates; later patterns win, as in git. Immutable once built, so it may be
 * shared between threads. Free with cof_excl_free. Also as in git: a pattern
 * with a '/' in the middle is anchored too, one without matches a name at any
 * depth, and a path under an excluded folder stays excluded whatever `!`
 * says. The defaults are kept apart: no `!` re-includes them, and they match
 * in any letter case. docs/api.md "Agent exclusions" has the full rules. */
typedef struct cof_excl cof_excl;

/* The defaults that are always on unless an agent says defaultExclusions:false
 * (the relay cannot turn them off): a NULL-terminated array. */
const char *const *cof_excl_defaults(void);

/* Flags of cof_excl_new. */
#define COF_EXCL_DEFAULTS 1 /* the defaults are on */
#define COF_EXCL_NOCASE 2   /* the given patterns match without regard to ASCII case
			     * (the relay: the user's folder may ignore case) */

/* Builds a matcher from `patterns` (a JSON array of strings, or NULL) with the
 * defaults first when `flags` has COF_EXCL_DEFAULTS (1, so a true "defaults"
 * flag still works). A bad pattern is COF_EVALIDATION naming it and the limit
 * (at most 256 patterns of 1024 bytes). */
int cof_excl_new(const json_t *patterns, int flags, cof_excl **out, cof_err *err);
void cof_excl_free(cof_excl *x);

/* 1 when `path` (relative, '/'-separated, no leading '/') is excluded, either
 * itself or through an excluded parent folder; `is_dir` says it is a folder
 * (a trailing '/' says so too). The path is normalised first ("//", "./",
 * "a/.."); one that climbs above the root or is over 4096 bytes counts as
 * excluded; "" (the root) never is. NULL x: nothing is excluded. */
int cof_excl_match(const cof_excl *x, const char *path, int is_dir);

/* The patterns as given (without the defaults), as a new JSON array. */
json_t *cof_excl_patterns(const cof_excl *x);

/* ------------------------------------------------------ protected paths */

/* Paths the relay lets an agent read but not write, in every mode, unless the
 * user allows them (`coffer connect --allow-write PAT`): what a tool on the
 * user's machine runs or trusts by itself (all of .git, shell start-up files,
 * .envrc, all of .vscode, ...; src/policy/protected.c and docs/api.md list them).
 * Matched at any depth, without regard to ASCII case. */
typedef struct cof_protect cof_protect;

/* The rules' names as shown (".git/" "**", ".bashrc", ...), NULL-terminated. */
const char *const *cof_protect_defaults(void);
/* The name of the rule that protects `path` (relative, as for cof_excl_match),
 * whatever the allowances; NULL when none does. */
const char *cof_protect_rule(const char *path);
/* The user's allowances from `allow` (a JSON array of patterns, or NULL): a
 * rule's name lifts that rule wherever it applies; any other pattern lifts
 * the paths it matches (gitignore-style, case ignored). A bad pattern is
 * COF_EVALIDATION naming it. Immutable once built. */
int cof_protect_new(const json_t *allow, cof_protect **out, cof_err *err);
void cof_protect_free(cof_protect *p);
/* The allowances as given, a new JSON array (p NULL: empty). */
json_t *cof_protect_allowances(const cof_protect *p);
/* 0 when `path` may be written (not protected, or allowed: *rule then names
 * the rule that was lifted, else NULL); -1 with COF_EFORBIDDEN naming the
 * rule and the option that allows it (extra: rule, protected:true). p NULL:
 * no allowances. `rule` may be NULL. */
int cof_protect_check(const cof_protect *p, const char *path, const char **rule,
		      cof_err *err);

/* ---------------------------------------------------------------- modes */

typedef enum cof_mode {
	COF_MODE_STANDARD = 0,
	COF_MODE_SUPERVISED,
	COF_MODE_READONLY,
} cof_mode;

/* "standard" / "supervised" / "readonly". Parse: 0, or -1 with COF_EVALIDATION. */
int cof_mode_parse(const char *s, cof_mode *out, cof_err *err);
const char *cof_mode_name(cof_mode m);

/* --------------------------------------------------------------- limits */

/* Per-session limits. The defaults are also the ceilings: a session may set
 * lower ones, never higher. Sizes in bytes (1 MB = 1,048,576 bytes). */
typedef struct cof_limits {
	int64_t file_bytes;     /* a file read or written: 10 MB */
	int64_t reads;          /* 500 */
	int64_t writes;         /* 100 */
	int64_t bytes_written;  /* 500 MB */
	int64_t seconds;        /* 4 h */
	int64_t search_results; /* 100 */
} cof_limits;

void cof_limits_default(cof_limits *out);
/* Reads {fileBytes?, reads?, writes?, bytesWritten?, seconds?, searchResults?}
 * (NULL = the defaults) into *out; a value <= 0 or over its ceiling is
 * COF_EVALIDATION naming the field and the ceiling. */
int cof_limits_parse(const json_t *obj, cof_limits *out, cof_err *err);
json_t *cof_limits_json(const cof_limits *l);

/* ---------------------------------------------------------------- names */

/* The checks of a write's path name (src/policy/names.c), which the guard's
 * rules file enables by name with `@CHECK`: traversal, absolute, backslash,
 * shell-meta, control, quote, glob, dash, bidi. Ids are 1..COF_NAME_NCHECKS-1. */
#define COF_NAME_NCHECKS 10
/* The id of the check called `name`, 0 when there is none. */
int cof_name_check_id(const char *name);
/* 1 when check `id` refuses the path [path, path+len), else 0 (also for an
 * unknown id). */
int cof_name_check_fires(int id, const char *path, size_t len);

/* ---------------------------------------------------------------- guard */

/* The write guard: one Hyperscan database compiled from the rules file shipped
 * with the project (src/policy/guard.rules, built into the library). Immutable
 * after load; shared by all threads (each scan uses its own scratch). */
typedef struct cof_guard cof_guard;

/* What a scan found: the first rule that fired. */
typedef struct cof_guard_hit {
	char rule[64];       /* the rule's name, e.g. "reverse-shell-dev-tcp" */
	char category[32];   /* "prompt-injection", "miner", "reverse-shell", ... */
	uint64_t offset;     /* where in the content the match ends (the byte
			      * after it); 0 for name rules; for a match in a
			      * decoded layer, the end of the encoded run */
	char layer[64];      /* "" for the raw bytes, else the view that matched:
			      * "normalized", "base64 > gzip", "utf-16le", ... */
} cof_guard_hit;

/* The process-wide guard, compiled on first use from the built-in rules.
 * NULL with err set if the rules do not compile. */
const cof_guard *cof_guard_default(cof_err *err);
/* Compiles a guard from rules text (the rules-file format). */
int cof_guard_compile(const char *rules, size_t len, cof_guard **out, cof_err *err);
void cof_guard_free(cof_guard *g);

/* Scans a write before it lands: the path (traversal, shell metacharacters or
 * control characters in names) and the content. 1 = blocked (*hit filled),
 * 0 = clean, -1 = error. The content is scanned as it is, then (when that
 * passes) as seen through src/policy/normalize.h: its normalised view and its
 * decoded layers (base64, hex, \x, gzip/zlib, UTF-16, nested 3 deep, bounded
 * in bytes), in windows of 16 MiB overlapping by 64 KiB; the first view that
 * matches names itself in hit->layer. */
int cof_guard_scan(const cof_guard *g, const char *path, const void *data, size_t len,
		   cof_guard_hit *hit, cof_err *err);

/* Only the path checks (traversal, absolute, backslashes, shell
 * metacharacters, control characters; see guard.rules), on `len` bytes so a
 * NUL inside a name from JSON is seen. 1 = blocked (*hit filled), 0 = clean. */
int cof_guard_scan_name(const cof_guard *g, const char *path, size_t len,
			cof_guard_hit *hit);

/* The rules text built into the library (src/policy/guard.rules), for
 * showing; `len` (may be NULL) gets its length. Static, do not free. */
const char *cof_guard_rules_text(size_t *len);

/* Streaming form for content too large to hold: open, feed chunks, close. A
 * hit ends the stream early (feed returns 1). A pattern that spans chunk
 * boundaries still fires. The normalised and decoded views are scanned over
 * the same 16 MiB windows as cof_guard_scan (the stream keeps one window of
 * content: up to 16 MiB of memory), so for content up to 16 MiB a stream
 * answers exactly what cof_guard_scan does. `path` may be NULL (content only). Open answers -1
 * only on error (out of memory); a blocked path still opens a stream whose
 * hit is filled at once, whose feeds answer 1 and whose close answers 1.
 * `hit` must outlive the stream. One stream is fed by one thread at a time;
 * any number of streams may run on one guard. A Hyperscan error blocks
 * (rule "scan-error", category "internal"): the guard fails closed. */
typedef struct cof_guard_stream cof_guard_stream;
int cof_guard_stream_open(const cof_guard *g, const char *path, cof_guard_stream **out,
			  cof_guard_hit *hit, cof_err *err);
int cof_guard_stream_feed(cof_guard_stream *s, const void *data, size_t len);
/* Finishes; 1 = blocked (hit filled), 0 = clean. Frees s. */
int cof_guard_stream_close(cof_guard_stream *s);

/* ------------------------------------------------------------ write check */

/* The relay's write check, the one function both halves call: cofferd
 * before it forwards a write (relay/ops.c) and `coffer connect` before it
 * touches the folder (relay/client/lfs_op.c), so that the two agree by
 * construction (docs/relay-protocol.md "Who checks what"). */
typedef struct cof_write_rules {
	cof_mode mode;
	const cof_excl *excl;     /* NULL: nothing excluded */
	const cof_protect *prot;  /* the user's allowances; NULL: none */
	int64_t file_bytes;       /* the size limit */
	const cof_guard *guard;   /* NULL: cof_guard_default() */
	int scanned;              /* the guard's verdict is given: `blocked`, *hit
				     (cofferd scans outside its lock) */
	int blocked;
	int leaves;               /* the path leaves the folder: only the guard
				     judges it (no exclusion or protection) */
} cof_write_rules;

/* Which check refused a write. */
typedef enum {
	COF_WC_OK = 0, COF_WC_EXCLUDED, COF_WC_READONLY, COF_WC_PROTECTED, COF_WC_SIZE,
	COF_WC_GUARD, COF_WC_ERROR
} cof_wc_step;

/* Checks a write of `len` bytes to `path` (relative, checked) in this order,
 * the first that fails answers: excluded (COF_EFORBIDDEN), read-only mode
 * (COF_EFORBIDDEN), a protected path not allowed (COF_EFORBIDDEN, extra
 * rule), over file_bytes (COF_ETOOLARGE, extra limit "fileBytes"), the guard
 * (COF_EBLOCKED, extra rule, category, offset and layer; *hit filled).
 * COF_WC_OK, or the step that refused with err set. */
cof_wc_step cof_write_check(const cof_write_rules *w, const char *path, const void *data,
			    size_t len, cof_guard_hit *hit, cof_err *err);

#endif
