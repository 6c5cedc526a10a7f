/*
 * archive.c — a tar.gz of a volume's files at one seq, produced as it is read.
 *
 * libarchive writes into a small buffer through custom callbacks; each
 * cof_archive_read() feeds it the next piece of the current file until some
 * output is ready. No temp file, no whole archive in memory. The file list
 * (names and hashes, not contents) is taken at open, where the limits are
 * checked before any byte is produced.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "volume/volume.h"

#define CHUNK (64 * 1024)

struct cof_archive {
	cof_store *st;
	struct archive *a;
	cof_items items;
	size_t strip;          /* bytes of `path/` removed from each name */
	size_t next;           /* next item to start */
	int fd;                /* the current file's blob, -1 between files */
	int64_t left;          /* bytes of it still to feed */
	int finished;
	unsigned char *out;    /* produced, not yet handed out */
	size_t outlen, outpos, outcap;
	unsigned char chunk[CHUNK];
	cof_err err;
};

static la_ssize_t on_write(struct archive *a, void *arg, const void *buf, size_t len)
{
	cof_archive *ar = arg;

	if (ar->outlen + len > ar->outcap) {
		size_t cap = ar->outcap ? ar->outcap : CHUNK * 2;
		while (cap < ar->outlen + len)
			cap *= 2;
		unsigned char *p = realloc(ar->out, cap);
		if (!p) {
			archive_set_error(a, ENOMEM, "out of memory");
			return -1;
		}
		ar->out = p;
		ar->outcap = cap;
	}
	memcpy(ar->out + ar->outlen, buf, len);
	ar->outlen += len;
	return (la_ssize_t)len;
}

/* Starts the next file's entry; 0 when there is none left. */
static int start_file(cof_archive *ar, cof_err *err)
{
	cof_item *x;
	struct archive_entry *e;

	if (ar->next == ar->items.n)
		return 0;
	x = &ar->items.v[ar->next++];
	if (cof_content_open(ar->st, x->sha256, &ar->fd, err))
		return -1;
	ar->left = x->size;
	e = archive_entry_new();
	/* the bytes as stored, whatever the process locale: libarchive cannot
	 * convert UTF-8 in the C locale (and crashed on it); pax then records the
	 * name as raw bytes, which are the UTF-8 ones */
	archive_entry_copy_pathname(e, x->path + ar->strip);
	archive_entry_set_size(e, x->size);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_mtime(e, x->updated_at, 0);
	int r = archive_write_header(ar->a, e);
	archive_entry_free(e);
	/* ARCHIVE_WARN: the name was not translated and went out as raw bytes
	 * (pax hdrcharset=BINARY), which is what is wanted */
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return cof_error(err, COF_EINTERNAL, "archive: %s", archive_error_string(ar->a));
	return 1;
}

/* Feeds one chunk of the current file (or finishes the archive). */
static int feed(cof_archive *ar, cof_err *err)
{
	if (ar->fd < 0) {
		int r = start_file(ar, err);
		if (r < 0)
			return -1;
		if (r == 0) {
			if (archive_write_close(ar->a) != ARCHIVE_OK)
				return cof_error(err, COF_EINTERNAL, "archive: %s",
						 archive_error_string(ar->a));
			ar->finished = 1;
			return 0;
		}
	}
	if (ar->left == 0) {
		close(ar->fd);
		ar->fd = -1;
		return 0;
	}
	size_t want = ar->left < CHUNK ? (size_t)ar->left : CHUNK;
	ssize_t n = read(ar->fd, ar->chunk, want);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0)
		return cof_error(err, COF_EINTERNAL, "content of '%s' is shorter than recorded",
				 ar->items.v[ar->next - 1].path);
	if (archive_write_data(ar->a, ar->chunk, (size_t)n) < 0)
		return cof_error(err, COF_EINTERNAL, "archive: %s", archive_error_string(ar->a));
	ar->left -= n;
	return 0;
}

ssize_t cof_archive_read(cof_archive *ar, void *buf, size_t max, cof_err *err)
{
	while (ar->outpos == ar->outlen) {
		ar->outpos = ar->outlen = 0;
		if (ar->finished)
			return 0;
		if (feed(ar, err))
			return -1;
	}
	size_t n = ar->outlen - ar->outpos < max ? ar->outlen - ar->outpos : max;
	memcpy(buf, ar->out + ar->outpos, n);
	ar->outpos += n;
	return (ssize_t)n;
}

void cof_archive_close(cof_archive *ar)
{
	if (!ar)
		return;
	if (ar->fd >= 0)
		close(ar->fd);
	if (ar->a)
		archive_write_free(ar->a);
	cof_items_release(&ar->items);
	free(ar->out);
	free(ar);
}

int cof_archive_open(cof_store *st, const char *org, const char *vol,
		     const char *snapshot, const char *path, const char *glob,
		     cof_archive **out, int64_t *seq, cof_err *err)
{
	cof_archive *ar = calloc(1, sizeof *ar);
	cof_view view;
	cof_buf prefix = COF_BUF_INIT;
	const char *p = "";

	if (!ar)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	ar->st = st;
	ar->fd = -1;
	if (path && *path && strcmp(path, "/") &&
	    cof_path_check(path, strlen(path), "'path'", &p, err))
		goto fail;
	if (glob && *glob && cof_glob_check(glob, err))
		goto fail;
	if (cof_view_open(st, org, vol, snapshot, &view, err))
		goto fail;
	if (*p && cof_buf_addf(&prefix, "%s/", p))
		goto oom;
	ar->strip = prefix.len;
	ar->items.max = COF_ARCHIVE_FILES + 1;
	ar->items.glob = glob && *glob ? glob : NULL;
	if (cof_meta_list(st->meta, view.vno, view.seq, prefix.data ? prefix.data : "", NULL,
			  cof_items_add, &ar->items, err))
		goto fail;
	if (ar->items.over < 0)
		goto oom;
	if (ar->items.n > COF_ARCHIVE_FILES || ar->items.bytes > COF_ARCHIVE_BYTES) {
		cof_error(err, COF_ETOOLARGE,
			  "an archive holds at most %d files and 1 GiB; this one would hold %s%zu "
			  "files and %lld bytes; narrow 'path' or 'glob'", COF_ARCHIVE_FILES,
			  ar->items.over ? "more than " : "", ar->items.n,
			  (long long)ar->items.bytes);
		goto fail;
	}
	ar->a = archive_write_new();
	if (!ar->a || archive_write_set_format_pax_restricted(ar->a) != ARCHIVE_OK ||
	    archive_write_add_filter_gzip(ar->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(ar->a, 1) != ARCHIVE_OK ||
	    archive_write_open2(ar->a, ar, NULL, on_write, NULL, NULL) != ARCHIVE_OK) {
		cof_error(err, COF_EINTERNAL, "archive: %s",
			  ar->a ? archive_error_string(ar->a) : "out of memory");
		goto fail;
	}
	cof_buf_release(&prefix);
	*seq = view.seq;
	*out = ar;
	return 0;
oom:
	cof_error(err, COF_EINTERNAL, "out of memory");
fail:
	cof_buf_release(&prefix);
	cof_archive_close(ar);
	return -1;
}
