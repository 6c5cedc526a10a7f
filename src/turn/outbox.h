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

#define COF_OUT_PNG 1u
#define COF_OUT_SVG 2u
#define COF_OUT_CSV 4u
#define COF_OUT_PDF 8u
#define COF_OUT_ALL (COF_OUT_PNG | COF_OUT_SVG | COF_OUT_CSV | COF_OUT_PDF)

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

/* Parses agent `output` settings ({files:[png, svg, csv, pdf]}; NULL = all)
 * into COF_OUT_* bits; unknown names are COF_EVALIDATION. */
int cof_outbox_types_parse(const json_t *output, unsigned *types, cof_err *err);
/* Media types (acceptedOutputModes) into COF_OUT_* bits; unknown ones are ignored. */
unsigned cof_outbox_types_from_media(const json_t *media_types);

/* Takes every entry out of the folder open at `outbox_fd` (removing it,
 * whatever it is), and copies each file that passes into the folder open at
 * `keep_fd` under its own name. *files gets [{name, mediaType, size}] of the
 * kept ones, *notes one string per entry ("attached NAME (TYPE, N bytes) to
 * the answer" or why not). Returns 0, or -1 with err for a failure of the
 * server itself (the outbox's contents are then still removed). */
int cof_outbox_collect(int outbox_fd, int keep_fd, const cof_outbox_rules *rules,
		       json_t **files, json_t **notes, cof_err *err);

#endif
