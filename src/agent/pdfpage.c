/*
 * pdfpage.c — one page of a PDF as a PNG, rendered by poppler (the console's
 * preview: docs/api.md, "PDF pages"). The PDF is untrusted: it is opened and
 * rendered in a forked child with a deadline, so a malformed or hostile file
 * can neither hang nor crash cofferd; the child answers a fixed header (the
 * outcome, the page count, why) then the PNG bytes on a pipe. Bounds: the file
 * (16 MiB, as the model's PDFs), the document's pages (10,000), the page's
 * size (14,400 pt a side, PDF's own limit), the picture (1,600 px on its
 * longer side, at most 2 px a point), the time (10 s) and renders at once (4).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cairo.h>
#include <poppler.h>
#include "agent/agent.h"

#define PAGE_PT_MAX 14400.0     /* PDF 1.7 annex C: 200 in a side */
#define SIDE_PX_MAX 1600
#define SCALE_MAX 2.0
#define RENDER_MS 10000
#define RENDERS_AT_ONCE 4
#define PNG_OUT_MAX (32u << 20) /* 1600 x 1600 x 4 plus PNG's overhead fits */

typedef struct page_head {
	int code;               /* a cof_code; COF_OK with the PNG after */
	int pages;
	int width, height;
	char why[256];
} page_head;

static int renders; /* under way, atomically */

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static cairo_status_t png_out(void *fd, const unsigned char *d, unsigned int n)
{
	return write_all(*(int *)fd, d, n) ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

/* The child: opens the document, renders page `page`, writes the answer to fd. */
static void render_child(int fd, const unsigned char *d, size_t n, int page)
{
	page_head hd = {.code = COF_EMEDIATYPE};
	GError *ge = NULL;
	GBytes *bytes = g_bytes_new_static(d, n);
	PopplerDocument *doc = poppler_document_new_from_bytes(bytes, NULL, &ge);
	double w, h;

	if (!doc) {
		snprintf(hd.why, sizeof hd.why, "is not a PDF poppler can open (%.200s)",
			 ge && ge->message ? ge->message : "unknown error");
		goto out;
	}
	hd.pages = poppler_document_get_n_pages(doc);
	if (hd.pages > COF_PDF_PREVIEW_PAGES_MAX) {
		hd.code = COF_ETOOLARGE;
		snprintf(hd.why, sizeof hd.why, "has %d pages; PDFs of over %d pages are not "
			 "previewed", hd.pages, COF_PDF_PREVIEW_PAGES_MAX);
		goto out;
	}
	if (page > hd.pages) {
		hd.code = COF_EVALIDATION;
		snprintf(hd.why, sizeof hd.why, "has %d page%s; 'page' %d is past the last",
			 hd.pages, hd.pages == 1 ? "" : "s", page);
		goto out;
	}
	PopplerPage *pg = poppler_document_get_page(doc, page - 1);
	if (!pg) {
		snprintf(hd.why, sizeof hd.why, "page %d cannot be read", page);
		goto out;
	}
	poppler_page_get_size(pg, &w, &h);
	if (!(w > 0 && h > 0 && w <= PAGE_PT_MAX && h <= PAGE_PT_MAX)) {
		hd.code = COF_ETOOLARGE;
		snprintf(hd.why, sizeof hd.why, "page %d is %.0fx%.0f pt; a page is previewed "
			 "up to %.0f pt a side", page, w, h, PAGE_PT_MAX);
		g_object_unref(pg);
		goto out;
	}
	double s = SIDE_PX_MAX / (w > h ? w : h);
	if (s > SCALE_MAX)
		s = SCALE_MAX;
	hd.width = (int)(w * s + 0.5);
	hd.height = (int)(h * s + 0.5);
	if (hd.width < 1 || hd.height < 1) {
		hd.code = COF_ETOOLARGE;
		snprintf(hd.why, sizeof hd.why, "page %d is %.0fx%.0f pt: at most %d px on its "
			 "longer side it would be under 1 px wide or high", page, w, h, SIDE_PX_MAX);
		g_object_unref(pg);
		goto out;
	}
	cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, hd.width, hd.height);
	cairo_t *cr = cairo_create(sf);
	cairo_set_source_rgb(cr, 1, 1, 1); /* paper is white; PDFs paint on it */
	cairo_paint(cr);
	cairo_scale(cr, s, s);
	poppler_page_render(pg, cr);
	cairo_destroy(cr);
	g_object_unref(pg);
	hd.code = COF_OK;
	if (write_all(fd, &hd, sizeof hd) == 0)
		cairo_surface_write_to_png_stream(sf, png_out, &fd);
	cairo_surface_destroy(sf);
	g_object_unref(doc);
	g_bytes_unref(bytes);
	return;
out:
	write_all(fd, &hd, sizeof hd);
}

int cof_pdf_page_png(const unsigned char *d, size_t n, int page, unsigned char **png,
		     size_t *pnglen, int *pages, cof_err *err)
{
	int p[2], status = 0, rc = -1;
	page_head hd;
	size_t got = 0, cap = 0;
	unsigned char *buf = NULL;

	*png = NULL;
	*pnglen = 0;
	*pages = 0;
	if (n > COF_PDF_PREVIEW_BYTES_MAX)
		return cof_error(err, COF_ETOOLARGE, "the PDF is %zu bytes; PDFs are previewed "
				 "up to %lld bytes (16 MiB)", n, (long long)COF_PDF_PREVIEW_BYTES_MAX);
	if (n < 5 || memcmp(d, "%PDF-", 5))
		return cof_error(err, COF_EMEDIATYPE, "the file is not a PDF (it does not start "
				 "with %%PDF-): only PDF pages are previewed");
	if (page < 1 || page > COF_PDF_PREVIEW_PAGES_MAX)
		return cof_error(err, COF_EVALIDATION, "'page' must be 1 to %d",
				 COF_PDF_PREVIEW_PAGES_MAX);
	if (__atomic_add_fetch(&renders, 1, __ATOMIC_SEQ_CST) > RENDERS_AT_ONCE) {
		__atomic_sub_fetch(&renders, 1, __ATOMIC_SEQ_CST);
		return cof_error(err, COF_EUNAVAILABLE, "%d PDF pages are being rendered; the "
				 "limit is %d at once: try again", RENDERS_AT_ONCE, RENDERS_AT_ONCE);
	}
	if (pipe2(p, O_CLOEXEC)) {
		cof_error(err, COF_EINTERNAL, "pipe: %s", strerror(errno));
		goto done;
	}
	int64_t deadline = cof_mono_ms() + RENDER_MS;
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit cpu = {RENDER_MS / 1000 + 1, RENDER_MS / 1000 + 1};
		setrlimit(RLIMIT_CPU, &cpu);
		close(p[0]);
		render_child(p[1], d, n, page);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		cof_error(err, COF_EINTERNAL, "fork: %s", strerror(errno));
		goto done;
	}
	int timed_out = 0, over = 0;
	for (;;) {
		int64_t left = deadline - cof_mono_ms();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		struct pollfd pf = {p[0], POLLIN, 0};
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			break;
		if (!pf.revents)
			continue;
		if (got == cap) {
			if (cap >= PNG_OUT_MAX + sizeof hd) {
				over = 1;
				break;
			}
			cap = cap ? cap * 2 : 1 << 16;
			unsigned char *nb = realloc(buf, cap);
			if (!nb) {
				over = 1;
				break;
			}
			buf = nb;
		}
		ssize_t k = read(p[0], buf + got, cap - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(p[0]);
	if (timed_out || over)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out) {
		cof_error(err, COF_ETOOLARGE, "rendering page %d took over %d s, the limit; it "
			  "was stopped", page, RENDER_MS / 1000);
		goto done;
	}
	if (over) {
		cof_error(err, COF_ETOOLARGE, "page %d's PNG is over %u bytes, the limit", page,
			  PNG_OUT_MAX);
		goto done;
	}
	if (got < sizeof hd) {
		cof_error(err, COF_EMEDIATYPE, "the PDF could not be rendered (the renderer %s %d)",
			  WIFSIGNALED(status) ? "died of signal" : "exited with",
			  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		goto done;
	}
	memcpy(&hd, buf, sizeof hd);
	hd.why[sizeof hd.why - 1] = '\0';
	*pages = hd.pages;
	if (hd.code < COF_OK || hd.code > COF_EUNAVAILABLE)
		hd.code = COF_EMEDIATYPE;
	if (hd.code != COF_OK) {
		cof_error(err, (cof_code)hd.code, "the PDF %s", hd.why);
		goto done;
	}
	if (got < sizeof hd + 8 || memcmp(buf + sizeof hd, "\x89PNG", 4) ||
	    !WIFEXITED(status) || WEXITSTATUS(status)) {
		cof_error(err, COF_EMEDIATYPE, "page %d could not be rendered", page);
		goto done;
	}
	*pnglen = got - sizeof hd;
	*png = malloc(*pnglen);
	if (!*png) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto done;
	}
	memcpy(*png, buf + sizeof hd, *pnglen);
	rc = 0;
done:
	free(buf);
	__atomic_sub_fetch(&renders, 1, __ATOMIC_SEQ_CST);
	return rc;
}
