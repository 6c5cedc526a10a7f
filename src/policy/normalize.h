/*
 * normalize.h — the views of a write that the guard scans besides its raw
 * bytes (owned by the write guard; used by src/policy/guard.c only).
 *
 * normalize.c: the normalised view of a text. Unicode NFKC (ICU) per
 * character plus a confusables fold (Cyrillic, Greek and other look-alikes to
 * Latin), invisible characters removed (ZWSP, ZWNJ, ZWJ, WJ, BOM, soft hyphen,
 * combining marks), NBSP and other Unicode spaces to ' ', and shell quoting
 * and escapes removed inside words (tc''p, t\cp, "b"ash, ba\<newline>sh). It
 * is built only around the places where it changes something (windows), so
 * plain ASCII costs one pass over the bytes.
 *
 * decode.c: the decoded layers. Base64 runs, hex runs, \xNN escapes,
 * gzip/zlib streams and UTF-16 (LE/BE, with or without a BOM), nested to
 * COF_LAYER_DEPTH and bounded in bytes, so a small write cannot make the
 * guard decode without end (a zip bomb stops at the budget).
 *
 * Every buffer handed to the scan callback has at least COF_VIEW_PAD
 * allocated bytes after its end (Hyperscan 5.4 reads past what it scans).
 */
#ifndef COF_POLICY_NORMALIZE_H
#define COF_POLICY_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

#define COF_VIEW_PAD 64
#define COF_LAYER_DEPTH 3          /* decodings nested at most this deep */
#define COF_LAYER_MIN_BUDGET (1u << 20) /* decoded bytes always allowed */
#define COF_LAYER_MAX_BUDGET (32u << 20) /* decoded bytes never exceeded */
#define COF_LAYER_RATIO 4          /* else at most 4x the input */

/* Called for each view: `data`/`len` (padded), `layer` the chain that made it
 * ("normalized", "base64 > gzip", ...), `raw_end` the offset in the original
 * content to report for a hit inside the view (the end of the encoded run it
 * came from) or UINT64_MAX when offsets inside the view map back through
 * cof_norm_map (a normalised window of the original content: `base` is where
 * the window starts in it). Answers 1 to stop (a hit), 0 to go on, -1 on an
 * error (stops too). */
typedef int (*cof_view_fn)(void *ctx, const char *data, size_t len, const char *layer,
			   uint64_t raw_end, size_t base);

/* Normalises in[0, n) into out, whose capacity must be at least
 * COF_NORM_CAP(n) (a character never grows past 4 bytes). Answers the output
 * length. The same input always gives the same output. */
#define COF_NORM_CAP(n) (4 * (n) + 16)
size_t cof_norm(const char *in, size_t n, char *out);

/* The input offset just past the input that produced the first `out_end`
 * bytes of cof_norm(in, n): where a match ending at `out_end` in the
 * normalised view ends in the original. */
size_t cof_norm_map(const char *in, size_t n, size_t out_end);

/* Hands `fn` every normalised window of text[0, n) that differs from the
 * text: windows around each change, widened to whole lines and enough
 * context for a rule to match across them. `layer` names the text's own
 * layer ("" for the raw content), `raw_end` as for cof_view_fn (UINT64_MAX
 * for the raw content). Answers what fn last answered (0 when no window). */
int cof_norm_windows(const char *text, size_t n, const char *layer, uint64_t raw_end,
		     cof_view_fn fn, void *ctx);

/* Walks the decoded layers of content[0, n): each decoded text is handed to
 * fn, then its normalised windows, then its own layers, depth first, until fn
 * answers non-zero, the depth reaches COF_LAYER_DEPTH or the budget is spent.
 * Answers what fn answered (1 or -1), or 0. */
int cof_layers_walk(const char *content, size_t n, cof_view_fn fn, void *ctx);

#endif
