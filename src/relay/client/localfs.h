/*
 * localfs.h — the relay client's half (`coffer connect`): the user's folder
 * reached only beneath one directory fd, and the rules the client enforces on
 * every operation itself, so the folder stays protected even from a
 * compromised server (docs/relay-protocol.md "Who checks what").
 *
 * Two levels:
 *  - cof_lfs_*: safe folder access. Every path is resolved under the folder
 *    with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
 *    (a component-by-component O_NOFOLLOW walk where openat2 is missing), so a
 *    symlink is never followed, `..` never leaves, and nothing outside the
 *    folder is opened, created, renamed or listed. Excluded paths are hidden
 *    from listings and searches here; reads and writes of them are refused by
 *    the op level below (and by the read/write calls too, as a second line).
 *  - cof_lfs_op: one operation of the wire protocol ({id, op, path?, ...}) with
 *    the client's rules: exclusions, mode (readonly refuses writes; supervised
 *    asks through a hook), protected paths (written only when the user allowed
 *    them), the size limit and the write guard.
 *
 * Paths in and out are relative to the folder, '/'-separated, without a
 * leading '/'; "" (or ".") names the folder itself for list and search.
 * Layering: relay -> policy -> util. Nothing here talks to the network.
 */
#ifndef COF_RELAY_CLIENT_LOCALFS_H
#define COF_RELAY_CLIENT_LOCALFS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "coffer.h"
#include "policy/policy.h"
#include "util/util.h"

/* The most entries one listing answers (then `truncated: true`). */
#define COF_LFS_LIST_MAX 10000
/* Folders deeper than this are not searched (a guard against deep trees). */
#define COF_LFS_DEPTH_MAX 64
/* A search result's line is cut to this many bytes. */
#define COF_LFS_LINE_MAX 500

/* An open folder: the directory fd, the exclusion matcher and the limits.
 * Owns its fd and matcher; free with cof_lfs_close. Not shared between
 * threads (the relay client handles one operation at a time). */
typedef struct cof_lfs cof_lfs;

/* Opens `dir` (which must be a folder; a symlink given as --dir itself is
 * resolved once, by the user's own choice) with the matcher `excl` (taken
 * over: freed with the folder, also on failure) and the limits (file_bytes and
 * search_results are used; NULL = the defaults). */
int cof_lfs_open(const char *dir, cof_excl *excl, const cof_limits *limits, cof_lfs **out,
		 cof_err *err);
void cof_lfs_close(cof_lfs *fs);
/* Turns the openat2 path off (tests: the O_NOFOLLOW walk is then used, as on
 * a kernel without openat2). */
void cof_lfs_force_walk(cof_lfs *fs, int on);
/* The limits in force. */
void cof_lfs_limits(const cof_lfs *fs, cof_limits *out);
/* 1 when `path` is excluded, itself or through a parent folder. */
int cof_lfs_excluded(const cof_lfs *fs, const char *path, int is_dir);

/* Checks an operation's path (`len` bytes, so that a NUL inside is seen):
 * cof_path_check's rules (no empty, `.` or `..` segment, no NUL, valid
 * UTF-8, 4096 bytes, 255 a name) and no leading '/' (absolute paths are
 * refused, not reinterpreted). `allow_root`: "" and "." mean the folder and
 * give "". *out points into `path` (or to ""). COF_EVALIDATION otherwise. */
int cof_lfs_path(const char *path, size_t len, int allow_root, const char **out,
		 cof_err *err);

/* Opens `path` under the folder with `flags` (O_NOFOLLOW, O_CLOEXEC and
 * O_NOCTTY are always added) without following any symlink on the way.
 * Returns the fd, or -1: COF_ENOTFOUND (missing), COF_EFORBIDDEN (a symlink
 * or an escape on the way), else COF_EINTERNAL. `path` must have passed
 * cof_lfs_path; "" opens the folder itself. */
int cof_lfs_openat(cof_lfs *fs, const char *path, int flags, cof_err *err);

/* read_file: {path, content, encoding, size}; `encoding` "utf-8" when the
 * bytes are valid UTF-8 without NUL, else "base64". Only regular files;
 * over the size limit COF_ETOOLARGE (told by fstat on the opened fd). */
int cof_lfs_read(cof_lfs *fs, const char *path, json_t **out, cof_err *err);
/* The raw bytes of a regular file (for the supervised diff): *data malloc'd
 * (NUL-terminated), or 0 with *exists = 0 when there is no file. */
int cof_lfs_slurp(cof_lfs *fs, const char *path, unsigned char **data, size_t *len,
		  int *exists, cof_err *err);
/* write_file, atomically: a temp file made with O_EXCL in the target folder,
 * written, fsync'd and renamed into place (missing folders are made, one
 * component at a time under the same rules). The file keeps its mode when it
 * existed. Nothing is left behind on failure. Answer {path, size, sha256}. */
int cof_lfs_write(cof_lfs *fs, const char *path, const void *data, size_t len,
		  json_t **out, cof_err *err);
/* list_directory: {entries:[{name, type, size}]} sorted by name; type is
 * "file", "dir", "symlink" (never followed) or "other"; size for files only
 * (0 otherwise). Excluded entries are left out. */
int cof_lfs_list(cof_lfs *fs, const char *path, json_t **out, cof_err *err);

/* search_files: lines matching the PCRE2 `pattern` in the text files under
 * `path` ("" = all) whose path relative to it matches `glob` (NULL = all; a
 * glob without '/' matches the file name at any depth). Symlinks, excluded
 * paths, binary files (NUL or invalid UTF-8) and files over the size limit
 * are skipped. At most `max` results (0 or over the limit: the limit), then
 * `truncated: true`. Answer {results:[{file, line, content}], truncated}. */
int cof_lfs_search(cof_lfs *fs, const char *path, const char *pattern, const char *glob,
		   int64_t max, json_t **out, cof_err *err);

/* ------------------------------------------------------ operations + rules */

/* What the op level asks of its caller (the CLI), all optional. */
typedef struct cof_lfs_hooks {
	/* Supervised mode: show the write (path, the file as it is now if
	 * `exists`, the new bytes) and return 1 for yes, 0 for no. Absent in
	 * supervised mode: every write is refused. */
	int (*confirm)(void *ud, const char *path, const unsigned char *old, size_t oldlen,
		       int exists, const unsigned char *data, size_t len);
	/* An event for the agent's stream ("write_blocked", "accept"); `data` is
	 * borrowed. */
	void (*event)(void *ud, const char *type, json_t *data);
	void *ud;
} cof_lfs_hooks;

/* The client's rules around the folder. `guard` NULL = cof_guard_default. */
typedef struct cof_lfs_rules {
	cof_mode mode;
	const cof_guard *guard;
	const cof_protect *protect; /* the user's --allow-write; NULL = none */
	cof_lfs_hooks hooks;
} cof_lfs_rules;

/* Runs one operation {id, op, path?, content?, encoding?, pattern?, glob?,
 * maxResults?}. 0 with *result the answer, or -1 with err an API error
 * (COF_EFORBIDDEN excluded / readonly / protected / refused by the user / a
 * symlink, COF_ENOTFOUND, COF_ETOOLARGE, COF_EBLOCKED with extra {rule, category},
 * COF_EVALIDATION). *summary (if not NULL) gets a short log text such as
 * "read  src/main.c  1.2 KB" or "write blocked  x.sh  reverse-shell-dev-tcp". */
int cof_lfs_op(cof_lfs *fs, const cof_lfs_rules *rules, json_t *op, json_t **result,
	       char *summary, size_t summarysz, cof_err *err);

/* A short unified diff of two texts for the supervised prompt: one hunk around
 * the changed lines with up to 3 lines of context, at most `max_lines` lines
 * of it (then a "... N more lines" note). Appends to `out`; -1 on no memory. */
int cof_lfs_diff(const char *path, const char *old, size_t oldlen, const char *neu,
		 size_t newlen, int max_lines, cof_buf *out);

#endif
