/*
 * outbox.h — the checks on files a confined call leaves in $OUTBOX. Every entry
 * is taken out; each is kept only if it passes the rules of API.md (regular
 * file, name pattern, listed extension, signature, size and count limits).
 * Nothing here follows a symlink, opens a FIFO for reading, or trusts a size
 * read before the bytes were copied.
 */
#ifndef COF_TURN_OUTBOX_H
#define COF_TURN_OUTBOX_H

#include <stdint.h>
#include <jansson.h>
#include "coffer.h"
#include "agent/settings.h"

#define COF_OUTBOX_FILE_MAX   (4 * 1024 * 1024)  /* 4 MB a file */
#define COF_OUTBOX_CALL_FILES 4                  /* a call */
#define COF_OUTBOX_TURN_FILES 8                  /* a turn */
#define COF_OUTBOX_TURN_BYTES (16 * 1024 * 1024) /* 16 MB a turn */

/* What may come back from one call. */
typedef struct cof_outbox_rules {
	unsigned types;            /* COF_OUT_* allowed: agent output.files and the
	                              turn's acceptedOutputModes, intersected */
	int turn_files_left;       /* COF_OUTBOX_TURN_FILES minus files kept so far */
	int64_t turn_bytes_left;   /* COF_OUTBOX_TURN_BYTES minus bytes kept so far */
} cof_outbox_rules;

/* Takes every entry out of the folder open at `outbox_fd` (removing it,
 * whatever it is), and copies each file that passes into the folder open at
 * `keep_fd` under its own name. *files gets [{name, mediaType, size}] of the
 * kept ones, *notes one string per entry ("attached NAME (TYPE, N bytes) to
 * the answer" or why not; past COF_OUTBOX_NOTES_MAX refusals one last note
 * counts the rest). Returns 0, or -1 with err for a failure of the
 * server itself (the outbox's contents are then still removed). *files and
 * *notes are set either way; the caller owns them. Entries are handled in
 * byte order of their names; a kept file is a copy of at most
 * COF_OUTBOX_FILE_MAX + 1 bytes read once, judged on that copy and written
 * into keep_fd with O_EXCL. Hard links are kept as copies like any regular
 * file (the link itself is only unlinked). */
int cof_outbox_collect(int outbox_fd, int keep_fd, const cof_outbox_rules *rules,
		       json_t **files, json_t **notes, cof_err *err);

/* ---- The pure checks cof_outbox_collect applies (outbox_check.c), exposed
 * for tests and fuzzing. None of them touches the file system. */

#define COF_OUTBOX_NAME_MAX 100  /* bytes of a name */
#define COF_OUTBOX_SVG_NEAR 1024 /* `<svg` begins within this many bytes */
#define COF_OUTBOX_NOTES_MAX 64  /* refusal notes listed per call; the rest summed up */
#define COF_OUTBOX_NAME_RE "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

/* 1 if name[0..len) matches COF_OUTBOX_NAME_RE (a NUL inside never does). */
int cof_outbox_name_ok(const char *name, size_t len);
/* The COF_OUT_* bit of the name's extension (after its last '.', compared
 * without regard to case: "a.PNG" is a PNG), or 0 when it is not listed. */
unsigned cof_outbox_name_type(const char *name, size_t len);
/* NULL when data[0..len) is acceptable content for `type` (one COF_OUT_* bit),
 * else a static reason ("not a PNG (no PNG signature)"). PNG: the 8-byte
 * signature; PDF: "%PDF-"; CSV: UTF-8 without NUL; SVG: UTF-8 without NUL
 * whose first element is `<svg` (then a space, '>' or '/'), beginning within
 * the first COF_OUTBOX_SVG_NEAR bytes, after only an optional BOM, white
 * space, `<?...?>`, `<!--...-->` and a `<!DOCTYPE ...>` without an internal
 * subset ('['). */
const char *cof_outbox_content_check(unsigned type, const unsigned char *data, size_t len);
/* Writes name[0..len) into out (outsz >= 8) as printable ASCII for a note:
 * bytes outside 0x20..0x7E, backslash and quote become \xNN, and a name longer than
 * COF_OUTBOX_NAME_MAX bytes is cut there with "..." appended. Always
 * NUL-terminated; returns strlen(out). */
size_t cof_outbox_name_quote(const char *name, size_t len, char *out, size_t outsz);

/* True when `s` may be a call's callId: 1..COF_CALL_ID_MAX printable ASCII
 * without space, '/', '\\', '?', '#', '%', and not "." or "..": it names the
 * call's kept files on the scratch disk and in their URLs. */
int cof_turn_call_id_ok(const char *s);

#endif
