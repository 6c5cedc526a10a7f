/*
 * util.h — small pieces shared by every layer of libcoffer: a bounded growable
 * buffer, path and name checks, glob matching, random ids, JSON body checks.
 * Each concept lives here exactly once.
 */
#ifndef COF_UTIL_H
#define COF_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include "coffer.h"

/* ---- memory (alloc.c). Out of memory is not an error a caller handles: it
 * aborts the process in cof_oom(), the one place, naming the size. These never
 * return NULL; jansson uses them too, so only bad values make json_pack fail. */
void cof_oom(size_t size) __attribute__((noreturn));
void *cof_malloc(size_t size);
void *cof_calloc(size_t n, size_t size);
void *cof_realloc(void *old, size_t size);
char *cof_strdup(const char *s);

/* ---- cof_buf: a growable byte buffer, always NUL-terminated.
 * Init with COF_BUF_INIT; release with cof_buf_release (the struct is reusable);
 * cof_buf_detach hands the bytes to the caller (free them). `max` (0 = none)
 * bounds the size: an append past it fails (-1) and leaves the buffer as it
 * was. That is the only way an append fails: out of memory aborts (cof_oom),
 * so the result of an append to a buffer without `max` needs no check. */
typedef struct cof_buf {
	char *data;
	size_t len, cap, max;
} cof_buf;
#define COF_BUF_INIT {NULL, 0, 0, 0}

int cof_buf_add(cof_buf *b, const void *data, size_t len);
/* Room for `extra` more bytes without another allocation (-1 past `max`). */
int cof_buf_reserve(cof_buf *b, size_t extra);
int cof_buf_adds(cof_buf *b, const char *s);
int cof_buf_addf(cof_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cof_buf_reset(cof_buf *b);
void cof_buf_release(cof_buf *b);
char *cof_buf_detach(cof_buf *b, size_t *len);

/* ---- paths inside a volume (API.md "General"). */
#define COF_PATH_MAX 4096
#define COF_SEGMENT_MAX 255

/* Checks a volume path and returns it without its one optional leading '/'.
 * Refuses (COF_EVALIDATION naming `what`): empty, longer than 4096 bytes, a
 * segment over 255 bytes, empty/`.`/`..` segments, NUL, invalid UTF-8 (other
 * control characters are allowed). `len` is the byte length. */
int cof_path_check(const char *path, size_t len, const char *what,
		   const char **out, cof_err *err);
/* Checks a prefix: like a path, but may be empty and may end in '/'. */
int cof_prefix_check(const char *prefix, const char *what, const char **out,
		     cof_err *err);
/* True if `s` (len bytes) is valid UTF-8 without overlong forms or surrogates. */
int cof_utf8_valid(const char *s, size_t len);
/* The end of a prefix range as valid text: strings of at most COF_PATH_MAX
 * bytes start with `prefix` iff they sort in [prefix, upper). 0 or -1 (memory). */
int cof_prefix_upper(const char *prefix, cof_buf *upper);
/* ---- media types (mediatype.c) */
#define COF_MEDIA_TYPE_MAX 127
/* 0 when `t` is one media type (RFC 9110 8.3.1: token/token, then `;name=value`
 * parameters, value a token or quoted string; ASCII; at most 127 bytes), else
 * -1 with COF_EVALIDATION naming `what` ("Content-Type"). */
int cof_media_type_check(const char *t, const char *what, cof_err *err);

/* ---- globs: `*` and `?` stay within a segment, `**` spans segments (also zero),
 * `[abc]`, `[a-z]`, `[!x]` classes, `\` escapes. Whole-path match. */
int cof_glob_match(const char *pattern, const char *path);
/* The same match against every leading run of the path's segments, in one
 * pass: out[k] (k = 0..n, `out` holds COF_GLOB_SEGS_MAX + 1 bytes) is 1 when
 * the pattern matches the first k segments ("a/b" for k = 2 of "a/b/c").
 * Returns n, the path's segment count, or -1 when it has too many. */
#define COF_GLOB_SEGS_MAX 2100
int cof_glob_match_prefixes(const char *pattern, const char *path, unsigned char *out);
/* Checks a glob for length (<= 4096) and balanced classes. */
int cof_glob_check(const char *pattern, cof_err *err);
/* The longest literal directory prefix of a glob ("src/a/" for "src/a/x*.c"),
 * to narrow a listing; written into out (size outsz). */
void cof_glob_literal_prefix(const char *pattern, char *out, size_t outsz);

/* ---- ids, randomness, hex */
/* Fills `out` with `prefix` + 20 random lowercase base32 chars. */
void cof_id_new(const char *prefix, char *out, size_t outsz);
int cof_random(void *buf, size_t len);
/* fsync(2) of a directory, so the entries made in it so far survive a power
 * cut. 0, or -1 with errno. */
int cof_fsync_dir(const char *dir);
/* write(2) of all `len` bytes of `data` to `fd`, again after EINTR and short
 * writes. 0, or -1 with errno (what was written before the error stays). */
int cof_write_full(int fd, const void *data, size_t len);
/* Makes a new private folder (mode 0700) "$TMPDIR/PREFIX-" and six random characters
 * (/tmp when TMPDIR is unset or relative) and writes its path to `out`. 0, or -1 with errno. */
int cof_temp_dir(const char *prefix, char *out, size_t outsz);
/* Removes `dir` and everything under it, best effort, without following links or
 * entering another file system mounted below it. Cannot fail. */
void cof_rm_tree(const char *dir);

/* ---- beneath a directory fd (beneath.c): for paths someone else may have
 * shaped (a call's workspace, the relay user's folder). `path` is relative,
 * '/'-separated; "" is the folder itself. No symlink is ever followed, on the
 * way or at the end, and no `..` or `.` segment is taken: openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, or a
 * component-by-component O_NOFOLLOW walk where the kernel has no openat2.
 * O_NOFOLLOW, O_CLOEXEC and O_NOCTTY are always added. An fd or -1 with errno
 * (ELOOP for a link on the way, EXDEV for a `..`). */
int cof_open_beneath(int dirfd, const char *path, int flags, mode_t mode);
/* The same by the walk alone (tests; what a kernel without openat2 gets). */
int cof_open_beneath_walk(int dirfd, const char *path, int flags, mode_t mode);
/* Opens folder `dir` beneath `dirfd`, making each missing component (mkdirat
 * with `mode`, then opened O_NOFOLLOW | O_DIRECTORY from its parent's fd, so a
 * link put there before or between the two is refused) and, when `owner` >= 0,
 * giving each folder it made to uid = gid = `owner` by fchown on that fd. The
 * fd of the folder, or -1 with errno. */
int cof_mkdirs_beneath(int dirfd, const char *dir, mode_t mode, long owner);
void cof_hex(const unsigned char *in, size_t len, char *out /* 2*len+1 */);
int cof_sha256_hex(const void *data, size_t len, char out[65]);
/* Wall-clock time, only for a time shown or stored (createdAt, expiresAt,
 * link expiry): a clock step moves it. */
int64_t cof_now(void);           /* unix seconds */
int64_t cof_now_ms(void);        /* unix milliseconds */
/* Milliseconds on CLOCK_MONOTONIC, which no clock step moves: for every
 * duration, deadline and timeout. Only differences are meaningful. */
int64_t cof_mono_ms(void);
int64_t cof_mono_us(void); /* the same clock in microseconds */
/* Initializes `cv` so that its timed waits measure CLOCK_MONOTONIC. Every
 * condition variable waited on with cof_cond_wait_until starts here. 0 or an
 * errno value. */
int cof_cond_init(pthread_cond_t *cv);
/* Waits on `cv` (from cof_cond_init; `mu` held) until signalled or until
 * cof_mono_ms() reaches `until_ms`. Returns 0, or ETIMEDOUT once it passed.
 * Spurious wake-ups return 0 too: callers loop on their own condition. */
int cof_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until_ms);
/* RFC 3339 UTC ("2026-11-29T22:10:43Z") into out (>= 21 bytes). */
void cof_time_fmt(int64_t unix_seconds, char *out, size_t outsz);
json_t *cof_json_time(int64_t unix_seconds);
/* Human size for messages: "11 MB", "512 MiB" style (binary units, short). */
void cof_size_fmt(int64_t bytes, char *out, size_t outsz);
/* Reads a size in Docker's form: a JSON string of digits with an optional
 * unit b, k, m or g (either case; k = 1024 bytes), or plain digits (bytes); a
 * non-negative JSON integer is bytes too. Anything else is COF_EVALIDATION
 * naming `what` and the accepted form (size.c). */
int cof_size_parse(const json_t *v, const char *what, int64_t *out, cof_err *err);

/* ---- JSON request bodies: one checker for every body. */
typedef enum { COF_JSTR = 1, COF_JINT, COF_JBOOL, COF_JOBJ, COF_JARR, COF_JANY } cof_jtype;
typedef struct cof_jfield {
	const char *name;
	cof_jtype type;
	int required;
} cof_jfield;

/* Checks that `body` is an object whose keys are all in `fields` (NULL-name
 * terminated), with the listed types, required ones present. Errors name the
 * field. `body` NULL counts as {}. */
int cof_json_check(json_t *body, const cof_jfield *fields, cof_err *err);
/* Accessors that tolerate a missing field. */
const char *cof_json_str(json_t *body, const char *name);
int cof_json_int(json_t *body, const char *name, int64_t *out); /* 1 if present */
int64_t cof_json_i64(json_t *body, const char *name); /* 0 if absent */
int cof_json_bool(json_t *body, const char *name, int dflt);

/* ---- base64 (standard alphabet with padding). Output NUL-terminated; free it. */
char *cof_base64_encode(const void *data, size_t len, size_t *outlen);
/* Writes the padded base64 of `len` bytes to `out` (room for 4 * ((len + 2) / 3)
 * bytes, not NUL-terminated) and returns how many it wrote. Any `len` that is a
 * multiple of 3 may be written piece by piece: the pieces join up. */
size_t cof_base64_write(const void *data, size_t len, char *out);
/* Decodes; -1 on bad input. */
int cof_base64_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen);
/* base64url without padding, for tokens. */
char *cof_base64url_encode(const void *data, size_t len);
int cof_base64url_decode(const char *in, size_t inlen, unsigned char **out, size_t *outlen);
/* The value of one hex digit (0-9, a-f, A-F), or -1 (misc.c). */
int cof_hex_value(int c);
/* dataurl.c — RFC 2397 data: URLs. 1 when s (len bytes) begins "data:" (any case). */
int cof_is_data_url(const char *s, size_t len);
/* Decodes data:[<mediatype>][;base64],<data>: 0 with *out (malloc'd, *outlen
 * bytes) and the media type in ctype (text/plain;charset=US-ASCII when none
 * is given, as the RFC says); -1 with *why naming what was wrong. */
int cof_data_url_decode(const char *s, size_t len, char *ctype, size_t ctsz,
			unsigned char **out, size_t *outlen, const char **why);

#endif
