/*
 * archive.c — a tar.gz of a volume's files at one seq, produced as it is read.
 *
 * libarchive writes into a small buffer through custom callbacks; each
 * cof_archive_read() feeds it the next piece of the current file until some
 * output is ready. No temp file, no whole archive in memory. The file list
 * (names and hashes, not contents) is taken at open, where the limits are
 * checked before any byte is produced. cof_archive_open_files (archive.h)
 * runs the same writer over files in memory, for the fuzzer.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "volume/archive.h"
#include "volume/volume.h"

#define CHUNK (64 * 1024)

struct cof_archive {
	cof_store *st;         /* NULL for an archive of files in memory */
	struct archive *a;
	cof_items items;       /* the store's files, or nothing */
	const cof_archive_file *files; /* the files in memory, or NULL */
	size_t n;              /* entries in all */
	size_t strip;          /* bytes of `path/` removed from each name */
	size_t next;           /* next entry to start */
	int in_file;           /* an entry's data is being fed */
	cof_blob_reader *r;    /* its content (store archives), else NULL */
	int64_t off;           /* where the next read of it starts */
	const unsigned char *mem; /* its bytes still to feed (memory archives) */
	int64_t left;          /* bytes of it still to feed */
	int finished, failed;
	unsigned char *out;    /* produced, not yet handed out */
	size_t outlen, outpos, outcap;
	unsigned char chunk[CHUNK];
};

static la_ssize_t on_write(struct archive *a, void *arg, const void *buf, size_t len)
{
	cof_archive *ar = arg;

	if (ar->outlen + len > ar->outcap) {
		size_t cap = ar->outcap ? ar->outcap : CHUNK * 2;
		while (cap < ar->outlen + len)
			cap *= 2;
		unsigned char *p = cof_realloc(ar->out, cap);
		ar->out = p;
		ar->outcap = cap;
	}
	memcpy(ar->out + ar->outlen, buf, len);
	ar->outlen += len;
	return (la_ssize_t)len;
}

/* libarchive's last error, never NULL. */
static const char *la_error(cof_archive *ar)
{
	const char *s = ar->a ? archive_error_string(ar->a) : NULL;

	return s ? s : "unknown libarchive error";
}

/* The name (as it goes in the archive), size and mtime of entry i. */
static void entry_at(const cof_archive *ar, size_t i, const char **name, int64_t *size,
		     int64_t *mtime)
{
	if (ar->files) {
		*name = ar->files[i].name;
		*size = ar->files[i].size;
		*mtime = ar->files[i].mtime;
	} else {
		*name = ar->items.v[i].path + ar->strip;
		*size = ar->items.v[i].size;
		*mtime = ar->items.v[i].updated_at;
	}
}

/* True when some entry's name has a byte past ASCII. */
static int any_non_ascii(const cof_archive *ar)
{
	for (size_t i = 0; i < ar->n; i++) {
		const char *name;
		int64_t size, mtime;

		entry_at(ar, i, &name, &size, &mtime);
		for (const unsigned char *p = (const unsigned char *)name; *p; p++)
			if (*p >= 0x80)
				return 1;
	}
	return 0;
}

/* Starts the writer: pax (plain ustar headers where they suffice, a pax
 * header for a name past 100 bytes that ustar cannot split or with any byte
 * past ASCII), gzip, output gathered by on_write.
 *
 * Names go in byte for byte, whatever the process locale: each entry's name
 * is set with archive_entry_copy_pathname (libarchive's "multibyte" slot,
 * taken as is) and, when any name is not ASCII, the pax writer runs with
 * hdrcharset=BINARY, so it converts nothing. Its default converts names from
 * the process locale to UTF-8: in the C locale a non-ASCII name failed that
 * (with the _utf8 setter it became a NULL name and cofferd crashed in
 * strlen), and readers given UTF-8 headers convert back, bsdtar turning NFD
 * into NFC. BINARY only when needed, since GNU tar 1.34 warns about the
 * hdrcharset keyword once per entry; ASCII is the same in every charset. */
static int writer_open(cof_archive *ar, cof_err *err)
{
	ar->a = archive_write_new();
	if (!ar->a)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (archive_write_set_format_pax_restricted(ar->a) != ARCHIVE_OK ||
	    (any_non_ascii(ar) &&
	     archive_write_set_format_option(ar->a, "pax", "hdrcharset", "BINARY") !=
		     ARCHIVE_OK) ||
	    archive_write_add_filter_gzip(ar->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(ar->a, 1) != ARCHIVE_OK ||
	    archive_write_open2(ar->a, ar, NULL, on_write, NULL, NULL) != ARCHIVE_OK)
		return cof_error(err, COF_EINTERNAL, "archive: %s", la_error(ar));
	return 0;
}

/* Opens the bytes of entry i for feed(). */
static int open_data(cof_archive *ar, size_t i, cof_err *err)
{
	if (ar->files) {
		ar->mem = ar->files[i].data;
		return 0;
	}
	ar->off = 0;
	return cof_content_open(ar->st, ar->items.v[i].sha256, ar->items.v[i].size,
				ar->items.v[i].path, &ar->r, err);
}

/* Writes the next entry's header; 0 when there is none left. */
static int start_file(cof_archive *ar, cof_err *err)
{
	struct archive_entry *e;
	const char *name;
	int64_t size, mtime;
	unsigned char *target = NULL;
	int r;

	if (ar->next == ar->n)
		return 0;
	entry_at(ar, ar->next, &name, &size, &mtime);
	/* a link goes in as a link (its target in the header, no data) */
	if (!ar->files && cof_is_symlink(ar->items.v[ar->next].ctype)) {
		if (cof_content_read(ar->st, ar->items.v[ar->next].sha256, size, &target, err))
			return -1;
		ar->next++;
		size = 0;
	} else if (open_data(ar, ar->next++, err))
		return -1;
	ar->in_file = 1;
	ar->left = size;
	e = archive_entry_new();
	if (!e) {
		free(target);
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	archive_entry_copy_pathname(e, name);
	archive_entry_set_size(e, size);
	archive_entry_set_filetype(e, target ? AE_IFLNK : AE_IFREG);
	archive_entry_set_perm(e, target ? 0777 : 0644);
	if (target)
		archive_entry_copy_symlink(e, (const char *)target);
	archive_entry_set_mtime(e, mtime, 0);
	r = archive_write_header(ar->a, e);
	archive_entry_free(e);
	free(target);
	if (r != ARCHIVE_OK)
		return cof_error(err, COF_EINTERNAL, "archive: header of '%.200s': %s", name,
				 la_error(ar));
	return 1;
}

/* Ends the current entry's data (libarchive pads it when the next starts). */
static void end_file(cof_archive *ar)
{
	cof_blob_close(ar->r);
	ar->r = NULL;
	ar->mem = NULL;
	ar->in_file = 0;
}

/* Feeds one chunk of the current file (or finishes the archive). */
static int feed(cof_archive *ar, cof_err *err)
{
	const unsigned char *p;
	size_t n;

	if (!ar->in_file) {
		int r = start_file(ar, err);
		if (r < 0)
			return -1;
		if (r == 0) {
			if (archive_write_close(ar->a) != ARCHIVE_OK)
				return cof_error(err, COF_EINTERNAL, "archive: %s", la_error(ar));
			ar->finished = 1;
			return 0;
		}
	}
	if (ar->left == 0) {
		end_file(ar);
		return 0;
	}
	size_t want = ar->left < CHUNK ? (size_t)ar->left : CHUNK;
	if (ar->files) {
		p = ar->mem;
		n = want;
		ar->mem += want;
	} else {
		p = ar->chunk;
		if (cof_blob_read_at(ar->r, ar->off, ar->chunk, want, &n, err))
			return -1;
		if (n == 0)
			return cof_error(err, COF_EINTERNAL,
					 "content of '%.200s' is shorter than recorded",
					 ar->items.v[ar->next - 1].path);
		ar->off += (int64_t)n;
	}
	if (archive_write_data(ar->a, p, n) != (la_ssize_t)n)
		return cof_error(err, COF_EINTERNAL, "archive: %s", la_error(ar));
	ar->left -= (int64_t)n;
	return 0;
}

/* After the first failure every read fails: libarchive's state is not
 * trusted again, and the HTTP layer cuts the stream short. */
ssize_t cof_archive_read(cof_archive *ar, void *buf, size_t max, cof_err *err)
{
	if (ar->failed)
		return cof_error(err, COF_EINTERNAL, "archive: the stream already failed");
	while (ar->outpos == ar->outlen) {
		ar->outpos = ar->outlen = 0;
		if (ar->finished)
			return 0;
		if (feed(ar, err)) {
			ar->failed = 1;
			return -1;
		}
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
	cof_blob_close(ar->r);
	if (ar->a)
		archive_write_free(ar->a);
	cof_items_release(&ar->items);
	free(ar->out);
	free(ar);
}

int cof_archive_open_files(const cof_archive_file *v, size_t n, cof_archive **out,
			   cof_err *err)
{
	cof_archive *ar = cof_calloc(1, sizeof *ar);

	if (!ar)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	ar->files = v;
	ar->n = n;
	for (size_t i = 0; i < n; i++)
		if (!v[i].name[0]) {
			cof_archive_close(ar);
			return cof_error(err, COF_EVALIDATION, "archive: file %zu has an empty name", i);
		}
	if (writer_open(ar, err)) {
		cof_archive_close(ar);
		return -1;
	}
	*out = ar;
	return 0;
}

int cof_archive_open(cof_store *st, const char *org, const char *vol,
		     const char *snapshot, const char *path, const char *glob,
		     cof_archive **out, int64_t *seq, cof_err *err)
{
	cof_archive *ar = cof_calloc(1, sizeof *ar);
	cof_view view;
	cof_buf prefix = COF_BUF_INIT;
	const char *p = "";

	if (!ar)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	ar->st = st;
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
	ar->n = ar->items.n;
	if (writer_open(ar, err))
		goto fail;
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
