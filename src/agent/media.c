/*
 * media.c — `read` of an image or a PDF, for the model (API.md File tools).
 *
 * The kind is decided by the first bytes (PNG, JPEG, GIF, WebP; "%PDF-"),
 * never by the name. Images go through libvips: one at most 1,568 px a side
 * is passed through as it is (after a full decode, so a broken file is named
 * rather than sent); a larger one is scaled down keeping its shape (JPEG stays
 * JPEG, the rest becomes PNG; a PNG too big for the model without alpha is
 * sent as JPEG). The stored file is never changed. Images over 5 MiB or
 * 8,000 px a side are refused with why.
 *
 * Decoding is bounded (issue 32: a 490 KB PNG cost 650 MB and seconds): the
 * header alone (no pixels) gives the decoded size, refused past 256 MiB, and
 * a JPEG's markers its scans, refused past 100; decodes are sequential and
 * together hold at most 512 MiB (a semaphore of bytes); what a content shows
 * as is kept by SHA-256 (64 MiB), so the same content is decoded once.
 *
 * PDFs: the page count comes from poppler-glib (the same library libvips uses
 * for PDFs), not from scanning for /Type /Page, so object streams, incremental
 * updates and page trees are counted right. Over 16 MiB or 100 pages: refused.
 *
 * libvips is started once (pthread_once); after that concurrent calls are
 * safe. Its operation cache is off: buffers here are short-lived and a cache
 * keyed by buffer address could answer for freed memory.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>
#include <poppler.h>
#include "agent/agent.h"
#include "agent/media_cache.h"
#include "util/metrics.h"

#define IMAGE_SIDE_SHOWN 1568
#define IMAGE_SIDE_MAX 8000
#define IMAGE_BYTES_MAX (5LL << 20)
#define IMAGE_SCALED_PNG_MAX (3840LL << 10) /* base64 of it stays under 5 MiB */
#define IMAGE_DECODED_MAX (256LL << 20) /* w x h x bands x bytes a sample */
#define JPEG_SCANS_MAX 100
#define DECODE_BUDGET (512LL << 20)     /* every decode under way, together */
#define SHOWN_CACHE_MAX (64LL << 20)    /* scaled images kept, in bytes */
#define SHOWN_CACHE_N 4096              /* and in entries */
#define PDF_BYTES_MAX (16LL << 20)
#define PDF_PAGES_MAX 100

static pthread_once_t vips_once = PTHREAD_ONCE_INIT;
static int vips_ready;

/* libvips warns on stderr about damaged files (with their bytes); the read's
 * answer already says what went wrong. */
static void vips_quiet(const gchar *domain, GLogLevelFlags level, const gchar *msg,
		       gpointer data)
{
}

static void vips_start(void)
{
	if (VIPS_INIT("coffer"))
		return;
	vips_cache_set_max(0);
	vips_cache_set_max_mem(0);
	vips_cache_set_max_files(0);
	vips_block_untrusted_set(TRUE); /* only the well-kept loaders */
	g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING, vips_quiet, NULL);
	vips_ready = 1;
}

const char *cof_media_type(const unsigned char *d, size_t n)
{
	if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8))
		return "image/png";
	if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF)
		return "image/jpeg";
	if (n >= 6 && (!memcmp(d, "GIF87a", 6) || !memcmp(d, "GIF89a", 6)))
		return "image/gif";
	if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4))
		return "image/webp";
	if (n >= 5 && !memcmp(d, "%PDF-", 5))
		return "application/pdf";
	return NULL;
}

static double mib(int64_t n)
{
	return (double)n / (1024.0 * 1024.0);
}

/* The vips error text (this thread's last failure), cleaned of newlines. */
static void vips_why(char *out, size_t outsz)
{
	char *e = vips_error_buffer_copy();
	size_t n;

	snprintf(out, outsz, "%s", e && *e ? e : "not valid image data");
	g_free(e);
	for (n = 0; out[n]; n++)
		if (out[n] == '\n')
			out[n] = out[n + 1] ? ';' : '\0';
}

int cof_media_refuse_large(const cof_target *t, const char *ctype, int64_t size, json_t **out)
{
	if (!strncmp(ctype, "image/", 6) && size > IMAGE_BYTES_MAX)
		return cof_tool_refuse(out, "%s is an image of %lld bytes (%.1f MiB); images over "
				       "5 MiB are not shown to the model", t->apath,
				       (long long)size, mib(size)), 1;
	if (!strcmp(ctype, "application/pdf") && size > PDF_BYTES_MAX)
		return cof_tool_refuse(out, "%s is a PDF of %lld bytes (%.1f MiB); PDFs over 16 MiB "
				       "are not shown to the model", t->apath, (long long)size,
				       mib(size)), 1;
	return 0;
}

/* The answer's common fields plus `key`: obj (stolen). */
static void media_answer(const cof_target *t, const cof_file *f, const char *output,
			 const char *key, json_t *obj, json_t **out)
{
	*out = json_pack("{s:b, s:s, s:s, s:I, s:s, s:I, s:s, s:o}", "ok", 1, "output", output,
			 "path", t->apath, "version", (json_int_t)f->version, "sha256", f->sha256,
			 "size", (json_int_t)f->size, "contentType", f->content_type, key, obj);
}

/* ------------------------------------------------------------ budgets */

/* What a decode holds: width x height x bands x bytes a sample. */
static int64_t decoded_size(int w, int h, int bands, int bits)
{
	return (int64_t)w * h * bands * (bits / 8);
}

/* The process-wide decode budget: a semaphore of bytes. A decode waits until
 * its decoded size fits beside those running; one alone always fits
 * (IMAGE_DECODED_MAX <= DECODE_BUDGET). */
static pthread_mutex_t budget_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t budget_cv = PTHREAD_COND_INITIALIZER;
static int64_t budget_used;

static void budget_take(int64_t n)
{
	pthread_mutex_lock(&budget_mu);
	while (budget_used > 0 && budget_used + n > DECODE_BUDGET)
		pthread_cond_wait(&budget_cv, &budget_mu);
	budget_used += n;
	pthread_mutex_unlock(&budget_mu);
}

static void budget_give(int64_t n)
{
	pthread_mutex_lock(&budget_mu);
	budget_used -= n;
	pthread_cond_broadcast(&budget_cv);
	pthread_mutex_unlock(&budget_mu);
}

int64_t cof_media_decoding(void)
{
	int64_t n;

	pthread_mutex_lock(&budget_mu);
	n = budget_used;
	pthread_mutex_unlock(&budget_mu);
	return n;
}

/* The 16-bit coefficients of a JPEG of SOF `f` (its length's bytes on):
 * each component's blocks at its own sampling, as libjpeg keeps them all for
 * a progressive JPEG, whatever it is scaled to. */
static int64_t jpeg_coefficients(const unsigned char *f, size_t len)
{
	int64_t h, w, sum = 0;
	int nc, hmax = 1, vmax = 1;

	if (len < 8)
		return 0;
	h = (f[3] << 8) | f[4];
	w = (f[5] << 8) | f[6];
	nc = f[7];
	if (len < 8 + 3 * (size_t)nc)
		return 0;
	for (int c = 0; c < nc; c++) {
		hmax = VIPS_MAX(hmax, f[9 + 3 * c] >> 4);
		vmax = VIPS_MAX(vmax, f[9 + 3 * c] & 15);
	}
	for (int c = 0; c < nc; c++) {
		int64_t cw = (w * (f[9 + 3 * c] >> 4) + hmax - 1) / hmax;
		int64_t ch = (h * (f[9 + 3 * c] & 15) + vmax - 1) / vmax;
		sum += ((cw + 7) / 8) * ((ch + 7) / 8) * 64 * 2;
	}
	return sum;
}

/* A JPEG's scans, by walking its markers (libjpeg reads every scan in full,
 * however little it holds: thousands of them cost minutes); *coef: what a
 * progressive one holds (0 for a baseline one, which streams). Damage stops
 * the count: the decoder names it. */
static int jpeg_scans(const unsigned char *d, size_t n, int64_t *coef)
{
	size_t i = 2;
	int scans = 0;

	*coef = 0;
	while (i + 4 <= n && d[i] == 0xFF) {
		unsigned m = d[i + 1];
		if (m == 0xFF) {                /* fill byte */
			i++;
			continue;
		}
		if (m == 0xD9)
			break;
		if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
			i += 2;
			continue;
		}
		size_t len = ((size_t)d[i + 2] << 8) | d[i + 3];
		if ((m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE) && i + 2 + len <= n)
			*coef = jpeg_coefficients(d + i + 2, len);
		i += 2 + len;
		if (m != 0xDA)
			continue;
		scans++;
		/* the entropy-coded data: up to a marker not stuffing or a restart */
		while (i + 1 < n && !(d[i] == 0xFF && d[i + 1] != 0 &&
				      !(d[i + 1] >= 0xD0 && d[i + 1] <= 0xD7)))
			i++;
	}
	return scans;
}

/* ------------------------------------------------------------ the cache */

/* What a content shows as, kept by its SHA-256 (media_cache.h: audio.c keeps
 * its transcripts here too). A content never changes under its hash, so
 * nothing kept is stale. */
typedef cof_shown shown;

#define CACHE_BUCKETS 1024
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cache_cv = PTHREAD_COND_INITIALIZER;
static shown *cache_tab[CACHE_BUCKETS], *cache_new, *cache_old;
static int64_t cache_bytes;
static int cache_n;

static int64_t shown_cost(const shown *e)
{
	return (int64_t)sizeof *e + (int64_t)e->len;
}

static shown **cache_slot(const char *sha)
{
	unsigned h = 0;

	for (int i = 0; sha[i]; i++) /* "audio:" keys share a prefix */
		h = h * 31 + (unsigned char)sha[i];
	return &cache_tab[h % CACHE_BUCKETS];
}

static void lru_unlink(shown *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		cache_new = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		cache_old = e->newer;
	e->newer = e->older = NULL;
}

static void lru_front(shown *e)
{
	e->older = cache_new;
	e->newer = NULL;
	if (cache_new)
		cache_new->newer = e;
	cache_new = e;
	if (!cache_old)
		cache_old = e;
}

/* Drops e from the table (under cache_mu); freed now or by its last user. */
static void cache_drop(shown *e)
{
	shown **p = cache_slot(e->sha);

	while (*p && *p != e)
		p = &(*p)->next;
	if (*p)
		*p = e->next;
	lru_unlink(e);
	cache_bytes -= shown_cost(e);
	cache_n--;
	e->next = NULL;
	e->pending = -1; /* dropped */
	if (e->refs == 0) {
		g_free(e->buf);
		free(e);
	}
}

static void shown_release(shown *e)
{
	pthread_mutex_lock(&cache_mu);
	if (--e->refs == 0 && e->pending == -1) {
		g_free(e->buf);
		free(e);
	}
	pthread_mutex_unlock(&cache_mu);
}

/* The entry of `sha`, held (refs): a done one (1), or a new pending one the
 * caller must decode and finish with cache_done (0). Waits while another
 * thread decodes the same content. */
static int cache_get(const char *sha, shown **out)
{
	shown *e;

	pthread_mutex_lock(&cache_mu);
	for (;;) {
		for (e = *cache_slot(sha); e && strcmp(e->sha, sha); e = e->next)
			;
		if (!e || !e->pending)
			break;
		pthread_cond_wait(&cache_cv, &cache_mu);
	}
	if (e) {
		e->refs++;
		lru_unlink(e);
		lru_front(e);
		if (strncmp(sha, "audio:", 6))
			cof_metric_add(COF_M_IMAGE_CACHE_HITS, 1);
		pthread_mutex_unlock(&cache_mu);
		*out = e;
		return 1;
	}
	e = cof_calloc(1, sizeof *e);
	snprintf(e->sha, sizeof e->sha, "%s", sha);
	e->pending = 1;
	e->refs = 1;
	shown **p = cache_slot(sha);
	e->next = *p;
	*p = e;
	lru_front(e);
	cache_bytes += shown_cost(e);
	cache_n++;
	pthread_mutex_unlock(&cache_mu);
	*out = e;
	return 0;
}

/* Ends the decode of e: kept when `keep`, else dropped (an error of ours,
 * not of the content: the next reader tries again). Older entries go while
 * the cache is over its bound. */
static void cache_done(shown *e, int keep)
{
	pthread_mutex_lock(&cache_mu);
	e->pending = 0;
	if (!keep) {
		cache_drop(e);
	} else {
		cache_bytes += (int64_t)e->len; /* its cost grew by its encoding */
		while (cache_old && (cache_bytes > SHOWN_CACHE_MAX || cache_n > SHOWN_CACHE_N) &&
		       cache_old != e) {
			shown *o = cache_old;
			if (o->pending) { /* not ours to drop: move it on */
				lru_unlink(o);
				lru_front(o);
				if (cache_old == o)
					break;
				continue;
			}
			cache_drop(o);
		}
	}
	pthread_cond_broadcast(&cache_cv);
	pthread_mutex_unlock(&cache_mu);
}

/* audio.c's way in (media_cache.h). */
int cof_media_cache_get(const char *key, cof_shown **out)
{
	return cache_get(key, out);
}

void cof_media_cache_done(cof_shown *e, int keep)
{
	cache_done(e, keep);
}

void cof_media_cache_release(cof_shown *e)
{
	shown_release(e);
}

void cof_media_budget_take(int64_t n)
{
	budget_take(n);
}

void cof_media_budget_give(int64_t n)
{
	budget_give(n);
}

/* Decodes d into e (e->ok, or e->why): scaled and encoded when over
 * IMAGE_SIDE_SHOWN, else decoded whole once to know it is not damaged.
 * -1 only for an error of ours (the encoder), with err. */
static int decode(shown *e, const unsigned char *d, size_t n, const char *mtype, int ow,
		  int oh, cof_err *err)
{
	VipsImage *im, *th = NULL;
	void *buf = NULL;
	size_t len = 0;
	double avg;
	int r;

	cof_metric_add(COF_M_IMAGE_DECODES, 1);
	e->w = ow;
	e->h = oh;
	e->otype = mtype;
	if (ow <= IMAGE_SIDE_SHOWN && oh <= IMAGE_SIDE_SHOWN) {
		/* Shown as it is, once it is known to decode whole. */
		im = vips_image_new_from_buffer(d, n, "", "access", VIPS_ACCESS_SEQUENTIAL,
						"fail_on", VIPS_FAIL_ON_ERROR, NULL);
		if (!im || vips_avg(im, &avg, NULL)) {
			if (im)
				g_object_unref(im);
			vips_why(e->why, sizeof e->why);
			return 0;
		}
		g_object_unref(im);
		e->ok = 1;
		return 0;
	}
	/* the thumbnail reads its source sequentially, shrinking on load where
	 * the format can (JPEG, WebP) */
	if (vips_thumbnail_buffer((void *)d, n, &th, IMAGE_SIDE_SHOWN, "height",
				  IMAGE_SIDE_SHOWN, "size", VIPS_SIZE_DOWN, "option_string",
				  "fail_on=error", NULL)) {
		vips_why(e->why, sizeof e->why);
		return 0;
	}
	/* Decoded once into memory: it may be encoded twice below. */
	VipsImage *mem = vips_image_copy_memory(th);
	g_object_unref(th);
	if (!(th = mem)) {
		vips_why(e->why, sizeof e->why);
		return 0;
	}
	if (!strcmp(mtype, "image/jpeg")) {
		r = vips_jpegsave_buffer(th, &buf, &len, "Q", 85, NULL);
	} else {
		e->otype = "image/png";
		r = vips_pngsave_buffer(th, &buf, &len, NULL);
		if (!r && (int64_t)len > IMAGE_SCALED_PNG_MAX && !vips_image_hasalpha(th)) {
			g_free(buf);
			buf = NULL;
			e->otype = "image/jpeg";
			r = vips_jpegsave_buffer(th, &buf, &len, "Q", 85, NULL);
		}
	}
	e->w = vips_image_get_width(th);
	e->h = vips_image_get_height(th);
	g_object_unref(th);
	if (r) {
		char why[256];
		vips_why(why, sizeof why);
		g_free(buf);
		return cof_error(err, COF_EINTERNAL, "cannot encode the scaled image: %s", why);
	}
	e->buf = buf;
	e->len = len;
	e->ok = 1;
	return 0;
}

/* The libvips loader each kind must go to: bytes that start like one kind
 * are never handed to another loader (HEIF/AVIF, SVG, ...). */
static const char *loader_of(const char *mtype)
{
	return !strcmp(mtype, "image/png") ? "VipsForeignLoadPngBuffer"
	       : !strcmp(mtype, "image/jpeg") ? "VipsForeignLoadJpegBuffer"
	       : !strcmp(mtype, "image/gif") ? "VipsForeignLoadNsgifBuffer"
	       : "VipsForeignLoadWebpBuffer";
}

static int read_image(const cof_target *t, const cof_file *f, const unsigned char *d,
		      const char *mtype, json_t **out, cof_err *err)
{
	VipsImage *im;
	const char *ld;
	char why[512], msg[COF_AGENT_PATH_MAX + 160];
	int ow, oh, bands, bits, scans = 0;
	int64_t need, plain, coef = 0;
	shown *e;

	if (cof_media_refuse_large(t, "image/", f->size, out))
		return 0;
	pthread_once(&vips_once, vips_start);
	if (!vips_ready)
		return cof_error(err, COF_EINTERNAL, "the image library (libvips) did not start");
	/* The header only (no pixels decoded): what the decode would cost is
	 * known, and refused, before it is paid. */
	ld = vips_foreign_find_load_buffer(d, (size_t)f->size);
	im = ld && !strcmp(ld, loader_of(mtype))
		? vips_image_new_from_buffer(d, (size_t)f->size, "", "access",
					     VIPS_ACCESS_SEQUENTIAL, "fail_on",
					     VIPS_FAIL_ON_ERROR, NULL)
		: NULL;
	if (!im) {
		if (ld && strcmp(ld, loader_of(mtype)))
			snprintf(why, sizeof why, "its bytes are taken for another format");
		else
			vips_why(why, sizeof why);
		return cof_tool_refuse(out, "%s starts like %s but cannot be read as an image (%s); "
				       "it may be damaged", t->apath, mtype, why);
	}
	ow = vips_image_get_width(im);
	oh = vips_image_get_height(im);
	bands = vips_image_get_bands(im);
	bits = 8 * (int)vips_format_sizeof(vips_image_get_format(im));
	if (!strcmp(mtype, "image/jpeg"))
		scans = jpeg_scans(d, (size_t)f->size, &coef);
	plain = decoded_size(ow, oh, bands, bits);
	need = VIPS_MAX(plain, coef);
	g_object_unref(im);
	if (ow > IMAGE_SIDE_MAX || oh > IMAGE_SIDE_MAX)
		return cof_tool_refuse(out, "%s is %dx%d px; images over 8,000 px a side are not "
				       "shown to the model", t->apath, ow, oh);
	if (need > IMAGE_DECODED_MAX)
		return cof_tool_refuse(out, "%s is %dx%d px of %d band%s at %d bits%s: %lld bytes "
				       "(%.1f MiB) decoded; images over 256 MiB decoded are not "
				       "shown to the model", t->apath, ow, oh, bands,
				       bands == 1 ? "" : "s", bits,
				       coef > plain ? " (a progressive JPEG: its 16-bit coefficients)"
						    : "",
				       (long long)need, mib(need));
	if (scans > JPEG_SCANS_MAX)
		return cof_tool_refuse(out, "%s is a JPEG of %d scans; JPEGs of over %d scans are "
				       "not shown to the model", t->apath, scans, JPEG_SCANS_MAX);
	if (!cache_get(f->sha256, &e)) {
		budget_take(need);
		int bad = decode(e, d, (size_t)f->size, mtype, ow, oh, err);
		budget_give(need);
		cache_done(e, !bad);
		if (bad) {
			shown_release(e);
			return -1;
		}
	}
	if (!e->ok) {
		int rc = cof_tool_refuse(out, "%s cannot be decoded as %s (%s); it may be damaged",
					 t->apath, mtype, e->why);
		shown_release(e);
		return rc;
	}
	char *b64 = e->buf ? cof_base64_encode(e->buf, e->len, NULL)
			   : cof_base64_encode(d, (size_t)f->size, NULL);
	int w = e->w, h = e->h;
	const char *otype = e->otype;
	shown_release(e);
	if (!b64)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (w == ow && h == oh)
		snprintf(msg, sizeof msg, "image %s, %dx%d px (%s, %lld bytes), shown at full size",
			 t->apath, ow, oh, mtype, (long long)f->size);
	else
		snprintf(msg, sizeof msg, "image %s, %dx%d px (%s, %lld bytes), shown scaled to "
			 "%dx%d", t->apath, ow, oh, mtype, (long long)f->size, w, h);
	json_t *img = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i}", "mediaType", otype, "data", b64,
				"width", w, "height", h, "originalWidth", ow, "originalHeight", oh);
	free(b64);
	media_answer(t, f, msg, "image", img, out);
	return 0;
}

static int read_pdf(const cof_target *t, const cof_file *f, const unsigned char *d,
		    json_t **out, cof_err *err)
{
	GError *ge = NULL;
	GBytes *bytes;
	PopplerDocument *doc;
	char msg[COF_AGENT_PATH_MAX + 160];
	int pages;

	if (cof_media_refuse_large(t, "application/pdf", f->size, out))
		return 0;
	bytes = g_bytes_new_static(d, (gsize)f->size);
	doc = poppler_document_new_from_bytes(bytes, NULL, &ge);
	if (!doc) {
		cof_tool_refuse(out, "%s starts like a PDF but cannot be opened (%s)", t->apath,
				ge && ge->message ? ge->message : "unknown error");
		g_clear_error(&ge);
		g_bytes_unref(bytes);
		return 0;
	}
	pages = poppler_document_get_n_pages(doc);
	g_object_unref(doc);
	g_bytes_unref(bytes);
	if (pages > PDF_PAGES_MAX)
		return cof_tool_refuse(out, "%s is a PDF of %d pages; PDFs over 100 pages are not "
				       "shown to the model", t->apath, pages);
	char *b64 = cof_base64_encode(d, (size_t)f->size, NULL);
	if (!b64)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	snprintf(msg, sizeof msg, "PDF %s, %d page%s (%lld bytes), attached as a document",
		 t->apath, pages, pages == 1 ? "" : "s", (long long)f->size);
	json_t *doc_j = json_pack("{s:s, s:s, s:i}", "mediaType", "application/pdf", "data", b64,
				  "pages", pages);
	free(b64);
	media_answer(t, f, msg, "document", doc_j, out);
	return 0;
}

int cof_media_read(const cof_target *t, const cof_file *f, const unsigned char *d,
		   json_t **out, cof_err *err)
{
	const char *mtype = cof_media_type(d, (size_t)f->size);

	if (!mtype)
		return 0;
	if (!strcmp(mtype, "application/pdf"))
		return read_pdf(t, f, d, out, err) ? -1 : 1;
	return read_image(t, f, d, mtype, out, err) ? -1 : 1;
}
