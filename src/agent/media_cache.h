/*
 * media_cache.h — what a content shows as to the model, kept in memory by its
 * SHA-256 (media.c owns the cache; audio.c keeps its transcripts in it under
 * "audio:SHA" keys). Never written anywhere: a restart decodes again.
 */
#ifndef COF_MEDIA_CACHE_H
#define COF_MEDIA_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cof_shown {
	struct cof_shown *next;          /* in its bucket */
	struct cof_shown *newer, *older; /* least recently used last */
	char sha[72];                    /* the key: a SHA-256, or "audio:" and one */
	int pending;                     /* being decoded: others wait for it */
	int refs;                        /* answers being built from it */
	int ok, w, h;
	const char *otype;
	unsigned char *buf;              /* g_malloc'd; NULL: the stored bytes as they are */
	size_t len;
	char why[256];                   /* !ok: the decoder's words */
} cof_shown;

/* The entry of `key`, held: a done one (1), or a new pending one (0) the
 * caller fills and ends with cof_media_cache_done (keep 0: an error of ours,
 * dropped so that the next reader tries again). Waits while another thread
 * fills the same key. Every entry got is given back with ..._release. */
int cof_media_cache_get(const char *key, cof_shown **out);
void cof_media_cache_done(cof_shown *e, int keep);
void cof_media_cache_release(cof_shown *e);

/* The process-wide decode budget (512 MiB, images and audio together): take
 * waits until n bytes fit beside the decodes running (one alone always fits). */
void cof_media_budget_take(int64_t n);
void cof_media_budget_give(int64_t n);

#endif
