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

#define IMAGE_SIDE_SHOWN 1568
#define IMAGE_SIDE_MAX 8000
#define IMAGE_BYTES_MAX (5LL << 20)
#define IMAGE_SCALED_PNG_MAX (3840LL << 10) /* base64 of it stays under 5 MiB */
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

static int read_image(const cof_target *t, const cof_file *f, const unsigned char *d,
		      const char *mtype, json_t **out, cof_err *err)
{
	VipsImage *im, *th = NULL;
	void *buf = NULL;
	size_t len = 0;
	const char *otype = mtype;
	char why[512], msg[COF_AGENT_PATH_MAX + 160];
	int w, h, ow, oh;
	double avg;

	if (cof_media_refuse_large(t, "image/", f->size, out))
		return 0;
	pthread_once(&vips_once, vips_start);
	if (!vips_ready)
		return cof_error(err, COF_EINTERNAL, "the image library (libvips) did not start");
	im = vips_image_new_from_buffer(d, (size_t)f->size, "", "fail_on", VIPS_FAIL_ON_ERROR,
					NULL);
	if (!im) {
		vips_why(why, sizeof why);
		return cof_tool_refuse(out, "%s starts like %s but cannot be read as an image (%s); "
				       "it may be damaged", t->apath, mtype, why);
	}
	ow = vips_image_get_width(im);
	oh = vips_image_get_height(im);
	if (ow > IMAGE_SIDE_MAX || oh > IMAGE_SIDE_MAX) {
		g_object_unref(im);
		return cof_tool_refuse(out, "%s is %dx%d px; images over 8,000 px a side are not "
				       "shown to the model", t->apath, ow, oh);
	}
	if (ow <= IMAGE_SIDE_SHOWN && oh <= IMAGE_SIDE_SHOWN) {
		/* Shown as it is, once it is known to decode whole. */
		int bad = vips_avg(im, &avg, NULL);
		g_object_unref(im);
		if (bad) {
			vips_why(why, sizeof why);
			return cof_tool_refuse(out, "%s cannot be decoded as %s (%s); it may be "
					       "damaged", t->apath, mtype, why);
		}
		w = ow;
		h = oh;
	} else {
		g_object_unref(im);
		if (vips_thumbnail_buffer((void *)d, (size_t)f->size, &th, IMAGE_SIDE_SHOWN,
					  "height", IMAGE_SIDE_SHOWN, "size", VIPS_SIZE_DOWN,
					  "option_string", "fail_on=error", NULL)) {
			vips_why(why, sizeof why);
			return cof_tool_refuse(out, "%s cannot be decoded as %s (%s); it may be "
					       "damaged", t->apath, mtype, why);
		}
		/* Decoded once into memory: the thumbnail reads its source
		 * sequentially, and it may be encoded twice below. */
		VipsImage *mem = vips_image_copy_memory(th);
		g_object_unref(th);
		if (!(th = mem)) {
			vips_why(why, sizeof why);
			return cof_tool_refuse(out, "%s cannot be decoded as %s (%s); it may be "
					       "damaged", t->apath, mtype, why);
		}
		int r;
		if (!strcmp(mtype, "image/jpeg")) {
			r = vips_jpegsave_buffer(th, &buf, &len, "Q", 85, NULL);
		} else {
			otype = "image/png";
			r = vips_pngsave_buffer(th, &buf, &len, NULL);
			if (!r && (int64_t)len > IMAGE_SCALED_PNG_MAX && !vips_image_hasalpha(th)) {
				g_free(buf);
				buf = NULL;
				otype = "image/jpeg";
				r = vips_jpegsave_buffer(th, &buf, &len, "Q", 85, NULL);
			}
		}
		w = vips_image_get_width(th);
		h = vips_image_get_height(th);
		g_object_unref(th);
		if (r) {
			vips_why(why, sizeof why);
			g_free(buf);
			return cof_error(err, COF_EINTERNAL, "cannot encode the scaled image: %s", why);
		}
	}
	char *b64 = buf ? cof_base64_encode(buf, len, NULL)
			: cof_base64_encode(d, (size_t)f->size, NULL);
	g_free(buf);
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
