/*
 * settings.h — the parts of an agent's settings that turns act on, parsed in
 * one place (agent/settings.c) for the agent's PUT and for the turn that
 * applies them: `sandbox` (disk, memory and process limits) and
 * `output.files` (which file types a call may give back), with the table of
 * those types that the outbox checks (turn/outbox*.c) and the calls'
 * acceptedOutputModes share.
 */
#ifndef COF_AGENT_SETTINGS_H
#define COF_AGENT_SETTINGS_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "coffer.h"

#define COF_SCRATCH_DEFAULT ((int64_t)256 << 20) /* sandbox.scratch */
#define COF_MEMORY_DEFAULT ((int64_t)512 << 20)  /* sandbox.memory */
#define COF_MEMORY_MIN ((int64_t)16 << 20)
#define COF_MEMORY_MAX ((int64_t)64 << 30)
#define COF_PROCESSES_DEFAULT 256                 /* sandbox.processes */
#define COF_PROCESSES_MAX 65536

/* An agent's `sandbox` settings in bytes. */
typedef struct cof_sandbox {
	int64_t scratch;   /* all live workspaces of the agent */
	int64_t turn_disk; /* one turn's workspace */
	int64_t user_disk; /* all live workspaces of one (agent, user) */
	int network;       /* calls share the host's network */
	int64_t memory;    /* memory of one turn's processes (memfd, shm, tmpfs pages) */
	int64_t processes; /* processes of one turn at once */
} cof_sandbox;

/* Reads `sandbox` (NULL = every default) into *out: scratch 256m, turnDisk a
 * quarter and userDisk a half of scratch. COF_EVALIDATION for an unknown
 * field, a bad size, or unless 0 < turnDisk <= userDisk <= scratch (the
 * message names both values). */
int cof_sandbox_parse(const json_t *sandbox, cof_sandbox *out, cof_err *err);

/* The file types a call may give back (agent `output.files`). */
#define COF_OUT_PNG 1u
#define COF_OUT_SVG 2u
#define COF_OUT_CSV 4u
#define COF_OUT_PDF 8u
#define COF_OUT_ALL (COF_OUT_PNG | COF_OUT_SVG | COF_OUT_CSV | COF_OUT_PDF)


/* Parses agent `output` settings ({files:[png, svg, csv, pdf]}; NULL, null or
 * `files` absent = all four; [] = none) into COF_OUT_* bits. Names are
 * lower-case; unknown ones and non-strings are COF_EVALIDATION naming the
 * name and the allowed list. */
int cof_outbox_types_parse(const json_t *output, unsigned *types, cof_err *err);
/* Media types (acceptedOutputModes) into COF_OUT_* bits; unknown ones are
 * ignored. Compared without case and without parameters ("text/csv;
 * charset=utf-8" is CSV); a '*' subtype (image, text, application) or a
 * '*' type and subtype matches the listed types under it. NULL (the field
 * absent) gives COF_OUT_ALL; an empty array gives 0. */
unsigned cof_outbox_types_from_media(const json_t *media_types);

/* "png" / "image/png" for one COF_OUT_* bit; NULL for anything else. */
const char *cof_outbox_type_name(unsigned type);
const char *cof_outbox_media_type(unsigned type);
/* "png, svg, csv, pdf" for the bits set in `types` ("none" when empty). */
void cof_outbox_types_fmt(unsigned types, char *out, size_t outsz);

#endif
