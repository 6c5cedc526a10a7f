/*
 * readall.c — read-all (GET files?content=true) as a stream: the listing at
 * one seq is read and its limits decided before the first byte, then each
 * file is read and written as JSON into the caller's buffer as the caller
 * drains it. Memory is one file's inline content or one chunk of a blob,
 * never the answer.
 *
 * The answer is {"seq":S,"files":[{path, size, version, contentType, sha256,
 * updatedAt, text|data}, ...]}: `text` when the content is UTF-8 without NUL,
 * else `data` (base64). A blob larger than a chunk is read twice: once to
 * decide text or data (which comes before its first byte), once to write it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include "volume/volume.h"

/* A blob is read this much at a time: a multiple of 3, so that base64 of one
 * chunk joins the next without padding. */
#define CHUNK (3 * 128 * 1024)

/* Inline contents of the next files are read in one batch (one read lock,
 * one statement) of at most this many files and bytes. */
#define BATCH_FILES 256
#define BATCH_BYTES (1 << 20)

enum { RA_FILE, RA_BODY, RA_DONE };

/* A batch of inline contents: files [from, to) of the listing. */
typedef struct batch {
	size_t from, to;
	unsigned char *arena;        /* their bytes, at off[] */
	size_t off[BATCH_FILES];
	int64_t len[BATCH_FILES];    /* -1 not inline (a blob), -2 damaged */
	size_t asked[BATCH_FILES];   /* the files looked up: their index - from */
	const char *shas[BATCH_FILES];
	const cof_items *it;
} batch;

struct cof_readall {
	cof_store *st;
	cof_items it;
	size_t next;                 /* the next file to start */
	int phase;
	int failed;
	char why[480];               /* the failure, told at the read after it */
	cof_buf stage;               /* small text waiting to go out: a file's fields */
	size_t spos;
	/* the current file's content: inline whole, or a blob chunk by chunk */
	int text;                    /* written as text (escaped) or data (base64) */
	batch b;
	unsigned char *mem;          /* inline content, or the chunk buffer */
	int mem_owned;               /* mem is freed (not the batch's arena) */
	size_t mlen, mpos;           /* bytes in mem, bytes of them written */
	cof_blob_reader *r;          /* NULL for inline content */
	int64_t size, roff;          /* the blob's size; bytes read into chunks so far */
};

/* The offset of the first byte of s[i..n) that a JSON string must escape
 * (below 0x20, '"', '\\'), or n. Sixteen bytes a step with SSE2, else
 * eight: read-all is mostly this scan. In a word, the lowest byte flagged is
 * always one to escape (a borrow can only flag bytes above one). */
static size_t next_escape(const unsigned char *s, size_t i, size_t n)
{
#ifdef __SSE2__
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i ctl = _mm_set1_epi8(0x1f);

	for (; i + 16 <= n; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)),
					 _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl));
		unsigned mask = (unsigned)_mm_movemask_epi8(m);
		if (mask)
			return i + (size_t)__builtin_ctz(mask);
	}
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;

	for (; i + 8 <= n; i += 8) {
		uint64_t w, q, b;
		memcpy(&w, s + i, 8);
		q = w ^ (ones * '"');
		b = w ^ (ones * '\\');
		uint64_t m = ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b);
		if (m & high)
			return i + (size_t)(__builtin_ctzll(m & high) >> 3);
	}
#endif
	for (; i < n; i++)
		if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\')
			return i;
	return n;
}

/* Writes the JSON escape of byte c (one that needs one) to e; its length. */
static size_t escape_of(unsigned char c, char e[6])
{
	static const char hex[] = "0123456789abcdef";

	switch (c) {
	case '"': memcpy(e, "\\\"", 2); return 2;
	case '\\': memcpy(e, "\\\\", 2); return 2;
	case '\n': memcpy(e, "\\n", 2); return 2;
	case '\r': memcpy(e, "\\r", 2); return 2;
	case '\t': memcpy(e, "\\t", 2); return 2;
	default:
		memcpy(e, "\\u00", 4);
		e[4] = hex[c >> 4];
		e[5] = hex[c & 15];
		return 6;
	}
}

/* Appends `s` (n bytes, valid UTF-8) as a JSON string: the small strings of
 * a file's fields. */
static int json_str_add(cof_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t start = 0;
	char e[6];

	if (cof_buf_add(b, "\"", 1))
		return -1;
	for (size_t i = next_escape(u, 0, n); i < n; i = next_escape(u, start, n)) {
		if (cof_buf_add(b, s + start, i - start) || cof_buf_add(b, e, escape_of(u[i], e)))
			return -1;
		start = i + 1;
	}
	return cof_buf_add(b, s + start, n - start) || cof_buf_add(b, "\"", 1) ? -1 : 0;
}

/* Writes s[0..n) JSON-escaped into d (room bytes) and returns how many bytes
 * it wrote; *used is how many of s it took. It stops before an escape that
 * does not fit (*used may then be 0: the caller stages that one). */
static size_t escape_into(const unsigned char *s, size_t n, char *d, size_t room,
			  size_t *used)
{
	size_t i = 0, o = 0;
	char e[6];

	while (i < n && o < room) {
#ifdef __SSE2__
		/* copy and scan in one pass, 16 bytes a step: stored, then looked
		 * at; what follows an escape overwrites the bytes stored past it */
		const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
		const __m128i ctl = _mm_set1_epi8(0x1f);
		while (i + 16 <= n && room - o >= 16 + 6) {
			__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			_mm_storeu_si128((__m128i *)(void *)(d + o), x);
			__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q),
							      _mm_cmpeq_epi8(x, bs)),
						 _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl));
			unsigned mask = (unsigned)_mm_movemask_epi8(m);
			if (!mask) {
				i += 16;
				o += 16;
				continue;
			}
			unsigned k = (unsigned)__builtin_ctz(mask);
			i += k;
			o += k;
			o += escape_of(s[i++], d + o);
		}
#endif
		size_t lim = n - i < room - o ? n : i + (room - o);
		size_t k = next_escape(s, i, lim);
		memcpy(d + o, s + i, k - i);
		o += k - i;
		i = k;
		if (i == lim)
			continue;
		size_t elen = escape_of(s[i], e);
		if (room - o < elen)
			break;
		memcpy(d + o, e, elen);
		o += elen;
		i++;
	}
	*used = i;
	return o;
}

/* How many bytes of s[0..n) end with whole UTF-8 sequences: the rest (at
 * most 3 bytes) starts a sequence that the next chunk may complete. */
static size_t utf8_whole(const unsigned char *s, size_t n)
{
	for (size_t back = 1; back <= 4 && back <= n; back++) {
		unsigned c = s[n - back];
		if ((c & 0xC0) == 0x80)
			continue; /* a continuation byte: its lead is further back */
		size_t want = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
			    : (c & 0xF8) == 0xF0 ? 4 : 1;
		return want > back ? n - back : n;
	}
	return n;
}

/* True when content is text: valid UTF-8 and no NUL. */
static int is_text(const unsigned char *s, size_t n)
{
	return cof_utf8_valid((const char *)s, n) && !memchr(s, '\0', n);
}

/* Reads the next chunk of the current blob into mem. */
static int read_chunk(cof_readall *ra, cof_err *err)
{
	size_t want = ra->size - ra->roff < CHUNK ? (size_t)(ra->size - ra->roff) : CHUNK;

	if (cof_blob_read_full(ra->r, ra->roff, ra->mem, want, ra->it.v[ra->next - 1].sha256,
			       err))
		return -1;
	ra->roff += (int64_t)want;
	ra->mlen = want;
	ra->mpos = 0;
	return 0;
}

/* Decides whether a blob of more than one chunk is text by reading it all
 * once, a chunk at a time; a sequence cut by a chunk's end is carried over. */
static int blob_is_text(cof_readall *ra, cof_err *err)
{
	size_t carry = 0;

	for (int64_t off = 0; off < ra->size;) {
		size_t want = ra->size - off < CHUNK - 4 ? (size_t)(ra->size - off) : CHUNK - 4;
		if (cof_blob_read_full(ra->r, off, ra->mem + carry, want,
				       ra->it.v[ra->next - 1].sha256, err))
			return -1;
		off += (int64_t)want;
		size_t have = carry + want, whole = utf8_whole(ra->mem, have);
		if (!is_text(ra->mem, whole))
			return 0;
		carry = have - whole;
		memmove(ra->mem, ra->mem + whole, carry);
	}
	return carry == 0;
}

/* Closes the current file's content. */
static void content_close(cof_readall *ra)
{
	cof_blob_close(ra->r);
	ra->r = NULL;
	if (ra->mem_owned)
		free(ra->mem);
	ra->mem = NULL;
	ra->mem_owned = 0;
	ra->mlen = ra->mpos = 0;
}

/* cof_inline_fn: copies one inline content into the batch's arena; a size
 * other than the recorded one is marked damaged. */
static int batch_take(void *ctx, size_t i, const unsigned char *data, size_t len)
{
	batch *b = ctx;
	size_t k = b->asked[i];

	if ((int64_t)len != b->it->v[b->from + k].size) {
		b->len[k] = -2;
		return 0;
	}
	memcpy(b->arena + b->off[k], data, len);
	b->len[k] = (int64_t)len;
	return 0;
}

/* Reads the inline contents of the files from `from` on that may be inline
 * (up to BATCH_FILES files and BATCH_BYTES bytes) in one call. */
static int batch_read(cof_readall *ra, size_t from, cof_err *err)
{
	batch *b = &ra->b;
	size_t bytes = 0, n = 0, to = from;

	b->from = from;
	b->it = &ra->it;
	for (; to < ra->it.n && to - from < BATCH_FILES; to++) {
		const cof_item *x = &ra->it.v[to];
		b->len[to - from] = -1;
		if (x->size > COF_INLINE_MAX)
			continue; /* a blob: opened when its turn comes */
		if (n && bytes + (size_t)x->size > BATCH_BYTES)
			break;
		b->off[to - from] = bytes;
		b->asked[n] = to - from;
		b->shas[n++] = x->sha256;
		bytes += (size_t)x->size;
	}
	b->to = to;
	free(b->arena);
	if (!(b->arena = cof_malloc(bytes + 1))) {
		b->to = from;
		return cof_error(err, COF_EINTERNAL, "out of memory");
	}
	return cof_meta_blob_inline_many(ra->st->meta, b->shas, n, batch_take, b, err);
}

/* The inline content of file i: 1 with *mem, *len (owned by the batch or,
 * *owned, the caller), 0 when it is a blob, -1 with err. */
static int inline_get(cof_readall *ra, size_t i, unsigned char **mem, size_t *len,
		      int *owned, cof_err *err)
{
	const cof_item *x = &ra->it.v[i];
	batch *b = &ra->b;

	*owned = 0;
	if (x->size > COF_INLINE_MAX) { /* alone: a batch is for the small ones */
		int rc = cof_meta_blob_inline(ra->st->meta, x->sha256, mem, len, err);
		*owned = rc == 1;
		return rc;
	}
	if ((i < b->from || i >= b->to) && batch_read(ra, i, err))
		return -1;
	int64_t l = b->len[i - b->from];
	if (l == -1)
		return 0;
	if (l == -2)
		return cof_error(err, COF_EINTERNAL, "the content of '%.200s' is damaged: its "
				 "stored size is not the %lld bytes recorded (content %.12s; run "
				 "coffer fsck)", x->path, (long long)x->size, x->sha256);
	*mem = b->arena + b->off[i - b->from];
	*len = (size_t)l;
	return 1;
}

/* Opens file i's content (inline, read in batches straight from the rows, or
 * the blob) and decides text or data. */
static int content_open(cof_readall *ra, size_t i, cof_err *err)
{
	const cof_item *x = &ra->it.v[i];
	size_t len = 0;
	int rc = inline_get(ra, i, &ra->mem, &len, &ra->mem_owned, err);

	if (rc < 0)
		return -1;
	if (rc == 1) {
		if ((int64_t)len != x->size)
			return cof_error(err, COF_EINTERNAL, "the content of '%.200s' is damaged: "
					 "%zu bytes stored, %lld recorded (content %.12s; run "
					 "coffer fsck)", x->path, len, (long long)x->size, x->sha256);
		ra->mlen = len;
		ra->text = is_text(ra->mem, len);
		return 0;
	}
	if (cof_content_reader(ra->st, x->sha256, x->size, x->path, &ra->r, err))
		return -1;
	int fd = cof_blob_fd(ra->r);
	if (fd >= 0) /* both passes read it in order */
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	ra->size = x->size;
	ra->roff = 0;
	if (!(ra->mem = cof_malloc(CHUNK)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	ra->mem_owned = 1;
	if (x->size <= CHUNK) { /* one read serves both the check and the write */
		if (read_chunk(ra, err))
			return -1;
		ra->text = is_text(ra->mem, ra->mlen);
		return 0;
	}
	rc = blob_is_text(ra, err);
	if (rc < 0)
		return -1;
	ra->text = rc;
	ra->mlen = ra->mpos = 0;
	return 0;
}

/* Starts the next file (its fields staged, its content open) or, after the
 * last, stages the answer's end. */
static int file_start(cof_readall *ra, cof_err *err)
{
	cof_buf *b = &ra->stage;
	char when[32];
	int rc = 0;

	cof_buf_reset(b);
	ra->spos = 0;
	if (ra->next == ra->it.n) {
		ra->phase = RA_DONE;
		return cof_buf_adds(b, "]}") ? cof_error(err, COF_EINTERNAL, "out of memory") : 0;
	}
	const cof_item *x = &ra->it.v[ra->next];
	if (content_open(ra, ra->next++, err))
		return -1;
	cof_time_fmt(x->updated_at, when, sizeof when);
	rc |= cof_buf_adds(b, ra->next > 1 ? ",{\"path\":" : "{\"path\":");
	rc |= json_str_add(b, x->path, strlen(x->path));
	rc |= cof_buf_addf(b, ",\"size\":%lld,\"version\":%lld,\"contentType\":",
			   (long long)x->size, (long long)x->version);
	rc |= json_str_add(b, x->ctype, strlen(x->ctype));
	if (cof_is_symlink(x->ctype)) {
		/* a link says what it points at; its text is the same bytes */
		unsigned char *t = NULL;
		if (cof_content_read(ra->st, x->sha256, x->size, &t, err))
			return -1;
		rc |= cof_buf_adds(b, ",\"type\":\"symlink\",\"target\":");
		rc |= json_str_add(b, (const char *)t, (size_t)x->size);
		free(t);
	}
	rc |= cof_buf_addf(b, ",\"sha256\":\"%s\",\"updatedAt\":\"%s\",\"%s\":\"", x->sha256,
			   when, ra->text ? "text" : "data");
	ra->phase = RA_BODY;
	return rc ? cof_error(err, COF_EINTERNAL, "out of memory") : 0;
}

/* Writes what fits of the current file's content into d; 0 when nothing
 * fit (then something is staged) or the content is done. */
static size_t body_write(cof_readall *ra, char *d, size_t room)
{
	const unsigned char *s = ra->mem + ra->mpos;
	size_t n = ra->mlen - ra->mpos, used, o;
	char e[6];

	if (ra->text) {
		o = escape_into(s, n, d, room, &used);
		if (used == 0 && n > 0) { /* an escape that did not fit */
			cof_buf_reset(&ra->stage);
			ra->spos = 0;
			cof_buf_add(&ra->stage, e, escape_of(*s, e));
			used = 1;
		}
	} else {
		/* whole groups of 3; the last, padded, only at the content's end */
		size_t take = n / 3 * 3 < room / 4 * 3 ? n / 3 * 3 : room / 4 * 3;
		int last = !ra->r || ra->roff == ra->size;
		if (take == n / 3 * 3 && last && n % 3 && room - take / 3 * 4 >= 4)
			take = n;
		o = cof_base64_write(s, take, d);
		used = take;
		if (used == 0 && n > 0) { /* room for less than a group */
			char g[4];
			size_t t = n < 3 ? n : 3;
			cof_buf_reset(&ra->stage);
			ra->spos = 0;
			cof_buf_add(&ra->stage, g, cof_base64_write(s, t, g));
			used = t;
		}
	}
	ra->mpos += used;
	return o;
}

/* Moves the current file on when its chunk is written: the next chunk, or
 * the file's end staged. */
static int body_next(cof_readall *ra, cof_err *err)
{
	if (ra->mpos < ra->mlen)
		return 0;
	if (ra->r && ra->roff < ra->size)
		return read_chunk(ra, err);
	content_close(ra);
	cof_buf_reset(&ra->stage);
	ra->spos = 0;
	ra->phase = RA_FILE;
	return cof_buf_adds(&ra->stage, "\"}") ? cof_error(err, COF_EINTERNAL, "out of memory")
						: 0;
}

ssize_t cof_readall_read(cof_readall *ra, void *buf, size_t max, cof_err *err)
{
	char *d = buf;
	size_t n = 0;

	if (ra->failed)
		return cof_error(err, COF_EINTERNAL, "%s",
				 ra->why[0] ? ra->why : "read-all: the stream already failed");
	while (n < max) {
		if (ra->spos < ra->stage.len) {
			size_t k = ra->stage.len - ra->spos < max - n ? ra->stage.len - ra->spos
								      : max - n;
			memcpy(d + n, ra->stage.data + ra->spos, k);
			ra->spos += k;
			n += k;
			continue;
		}
		if (ra->phase == RA_DONE)
			break;
		int rc;
		if (ra->phase == RA_BODY) {
			n += body_write(ra, d + n, max - n);
			if (ra->spos < ra->stage.len)
				continue; /* an escape or group staged: it goes out first */
			rc = body_next(ra, err);
		} else {
			rc = file_start(ra, err);
		}
		if (rc) {
			/* what is written goes out first (it ends before the failed
			 * file or inside it: the answer is cut either way) */
			ra->failed = 1;
			if (n == 0)
				return -1;
			snprintf(ra->why, sizeof ra->why, "%s", err->msg);
			cof_err_clear(err);
			break;
		}
	}
	return (ssize_t)n;
}

void cof_readall_close(cof_readall *ra)
{
	if (!ra)
		return;
	content_close(ra);
	free(ra->b.arena);
	cof_buf_release(&ra->stage);
	cof_items_release(&ra->it);
	free(ra);
}

int cof_readall_open(cof_store *st, const char *org, const char *vol,
		     const cof_list_opts *opts, cof_readall **out, int64_t *seq, cof_err *err)
{
	cof_readall *ra = cof_calloc(1, sizeof *ra);
	cof_view view;
	const char *glob;
	char walk[COF_PATH_MAX + 1];

	if (!ra)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	ra->st = st;
	ra->stage = (cof_buf)COF_BUF_INIT;
	if (cof_list_prepare(st, org, vol, opts, &view, &glob, walk, err))
		goto fail;
	ra->it.max = COF_READALL_FILES + 1;
	ra->it.glob = glob;
	if (cof_meta_list(st->meta, view.vno, view.seq, walk, NULL, cof_items_add, &ra->it, err))
		goto fail;
	if (ra->it.over < 0) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto fail;
	}
	if (ra->it.n > COF_READALL_FILES || ra->it.bytes > COF_READALL_BYTES) {
		cof_error(err, COF_ETOOLARGE,
			  "read-all returns at most %d files and 16 MiB; this selection has %s%zu "
			  "files and %lld bytes; narrow 'prefix' or 'glob'", COF_READALL_FILES,
			  ra->it.over ? "more than " : "", ra->it.n, (long long)ra->it.bytes);
		goto fail;
	}
	ra->phase = RA_FILE; /* after the opening, staged here, has gone out */
	if (cof_buf_addf(&ra->stage, "{\"seq\":%lld,\"files\":[", (long long)view.seq)) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto fail;
	}
	*out = ra;
	if (seq)
		*seq = view.seq;
	return 0;
fail:
	cof_readall_close(ra);
	return -1;
}

int cof_file_read_all(cof_store *st, const char *org, const char *vol,
		      const cof_list_opts *opts, char **text, size_t *len, cof_err *err)
{
	cof_buf b = COF_BUF_INIT;
	cof_readall *ra;
	ssize_t n;

	if (cof_readall_open(st, org, vol, opts, &ra, NULL, err))
		return -1;
	do {
		if (cof_buf_reserve(&b, 64 * 1024)) {
			cof_readall_close(ra);
			cof_buf_release(&b);
			return cof_error(err, COF_EINTERNAL, "out of memory");
		}
		n = cof_readall_read(ra, b.data + b.len, 64 * 1024, err);
		if (n > 0)
			b.len += (size_t)n;
	} while (n > 0);
	cof_readall_close(ra);
	if (n < 0) {
		cof_buf_release(&b);
		return -1;
	}
	b.data[b.len] = '\0';
	*text = cof_buf_detach(&b, len);
	return *text ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
}
