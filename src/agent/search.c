/*
 * search.c — glob and grep over the files under an agent path. Both walk the
 * volume's rows at one seq (no filesystem), match paths relative to the
 * folder searched, and cap their answers with a note. grep uses PCRE2 with
 * JIT and skips binary files (saying how many); a pattern that meets a regex
 * limit or the time budget (util/regex.h) ends it with ok:false naming the
 * limit, the file and the line.
 *
 * grep reads and searches files on every core (up to GREP_THREADS_MAX) while
 * the request's thread lists them, each file whole (cof_regex_next_line:
 * memmem for a plain string, one multi-line PCRE2 call for most patterns),
 * small files a batch at a time where the metadata store keeps them, and
 * takes the files' answers in path order, so the answer, its cuts and its
 * stops are those of a search of the files one after the other; a cut or a
 * stop ends the listing too.
 */
#include "util/regex.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/agent.h"

#define GLOB_CAP 1000
#define GREP_DEFAULT 100
#define GREP_MAX 10000
#define CONTEXT_MAX 20

/* The files under a target folder (or the file itself), with their path
 * relative to the folder checked against `glob` (NULL = all). */
/* A pattern without '/' may match the file name alone, at any depth (as
 * ripgrep's --glob and .gitignore do). */
static int glob_hits(const char *glob, const char *rel, int basename_only)
{
	const char *base = strrchr(rel, '/');

	if (basename_only && !strchr(glob, '/'))
		return cof_glob_match(glob, base ? base + 1 : rel);
	return cof_glob_match(glob, rel);
}

static int files_under(cof_store *st, const cof_agent *a, const cof_target *t,
		       const char *glob, int basename_only, cof_items *it, size_t *strip,
		       cof_err *err)
{
	char prefix[COF_PATH_MAX + 2];
	cof_view view;

	snprintf(prefix, sizeof prefix, "%s%s", t->vpath, t->vpath[0] ? "/" : "");
	*strip = strlen(prefix);
	it->glob = NULL;
	if (cof_view_open(st, a->org, t->mount->vol, NULL, &view, err) ||
	    cof_meta_list(st->meta, view.vno, view.seq, prefix, NULL, cof_items_add, it, err))
		return -1;
	if (it->over < 0)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < it->n; i++) {
		/* Excluded files are skipped as if absent. */
		if ((!glob || glob_hits(glob, it->v[i].path + *strip, basename_only)) &&
		    !cof_agent_excluded_vpath(a, t->mount, it->v[i].path, 0))
			it->v[k++] = it->v[i];
		else
			free(it->v[i].path);
	}
	it->n = k;
	return 0;
}

static const cof_jfield glob_fields[] = {
	{"pattern", COF_JSTR, 1}, {"path", COF_JSTR, 0}, {NULL, 0, 0}};

int cof_tool_glob(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	cof_target t;
	cof_items it = {0};
	cof_buf b = COF_BUF_INIT;
	const char *pattern;
	size_t strip;
	int r;

	if (cof_json_check(args, glob_fields, err))
		return -1;
	pattern = cof_json_str(args, "pattern");
	if (pattern[0] == '/')
		return cof_error(err, COF_EVALIDATION,
				 "'pattern' is relative to 'path' (no leading '/')");
	if (cof_glob_check(pattern, err))
		return -1;
	if ((r = cof_tool_target(a, args, "path", 0, &t, out, err)))
		return r < 0 ? -1 : 0;
	if (cof_agent_excluded(a, t.apath, 1))
		return cof_tool_refuse(out, "%s is excluded: the agent's exclusions keep it out "
				       "of reach", t.apath);
	if (files_under(st, a, &t, pattern, 0, &it, &strip, err)) {
		cof_items_release(&it);
		return -1;
	}
	json_t *paths = json_array();
	char ap[COF_AGENT_PATH_MAX + 1];
	for (size_t i = 0; i < it.n && i < GLOB_CAP; i++) {
		cof_agent_path_of(t.mount, it.v[i].path, ap, sizeof ap);
		json_array_append_new(paths, json_string(ap));
		cof_buf_addf(&b, "%s\n", ap);
	}
	if (it.n == 0)
		cof_buf_addf(&b, "no files under %s match %s\n", t.apath, pattern);
	else if (it.n > GLOB_CAP)
		cof_buf_addf(&b, "[showing the first %d of %zu matches; narrow the pattern or "
			     "the path]\n", GLOB_CAP, it.n);
	*out = json_pack("{s:b, s:s, s:o, s:I, s:b}", "ok", 1, "output", b.data, "paths", paths,
			 "total", (json_int_t)it.n, "truncated", it.n > GLOB_CAP);
	cof_buf_release(&b);
	cof_items_release(&it);
	return 0;
}

/* ------------------------------------------------------------------ grep */

static const cof_jfield grep_fields[] = {
	{"pattern", COF_JSTR, 1}, {"path", COF_JSTR, 0}, {"glob", COF_JSTR, 0},
	{"ignoreCase", COF_JBOOL, 0}, {"context", COF_JINT, 0}, {"outputMode", COF_JSTR, 0},
	{"limit", COF_JINT, 0}, {NULL, 0, 0}};

enum { MODE_CONTENT, MODE_FILES, MODE_COUNT };

#define GREP_THREADS_MAX 8
#define GREP_WINDOW 256       /* files searched ahead of the answer at most */
#define GREP_SHOWN_MAX 500    /* bytes of a line shown */
#define GREP_BATCH 32         /* files a worker claims and reads at once */

/* One file's answer, made by any worker and taken into the search's answer
 * in path order. Content mode keeps at most limit + 1 matches: marks[j] is
 * out's length before match j's leading context, where a cut at j ends. */
typedef struct grep_hit {
	cof_buf out;
	json_t *matches;
	size_t *marks, nmarks;
	int64_t count;          /* matching lines (content: at most limit + 1) */
	int binary, stopped, done;
	cof_regex_over over;    /* what stopped it, at stop_line */
	int64_t stop_line;
	cof_err *err;           /* the file could not be read */
} grep_hit;

/* A file to search, as the listing gave it. */
typedef struct grep_item {
	char *path;             /* volume path */
	char sha256[65];
	int64_t size;
} grep_item;

#define GREP_CHUNK 1024       /* items a block: a block never moves */

/* One search: its options, the files in path order, their answers, and the
 * answer so far. The request's thread lists the files (`items`, published
 * up to `listed`, `listed_all` at the end) while workers search them: the
 * search starts with the first files listed and a cut or a stop ends the
 * listing too. Workers claim files in order (`claim`) no further than
 * GREP_WINDOW past `taken`; whoever finishes the file at `taken` takes it
 * and those done after it, under `lock`, until a cut, a stop or an error
 * ends the search (`halt`). File i's answer is hits[i % GREP_WINDOW]. */
typedef struct grep_run {
	cof_regex rx;
	int mode;
	int64_t context, limit, shown, files_matched, skipped;
	int cut;
	int stopped;            /* a regex limit: why, where */
	cof_regex_over over;
	char stop_path[COF_AGENT_PATH_MAX + 1];
	int64_t stop_line;
	cof_err *failed;        /* the first file in order that could not be read */
	cof_buf out;
	json_t *matches;
	cof_store *st;
	const cof_mount *mount;
	const cof_agent *a;
	const char *glob;
	size_t strip;           /* of a listed path: the folder searched */
	grep_item **blocks;     /* GREP_CHUNK items each; the array grows under lock */
	size_t nblocks, nitems, listed;
	int listed_all;
	grep_hit *hits;         /* GREP_WINDOW of them */
	size_t claim, taken;
	int halt;
	int nomem;              /* the listing ran out of memory */
	pthread_mutex_t lock;
	pthread_cond_t room;
	struct grep_thread *workers;
	size_t nworkers;
} grep_run;

/* Item i (under lock, or from a pointer taken under it: blocks never move). */
static grep_item *item_at(const grep_run *g, size_t i)
{
	return &g->blocks[i / GREP_CHUNK][i % GREP_CHUNK];
}

/* Appends line [s, e) of a file as `apath<sep>line<sep>text`. */
static void show_line(grep_hit *h, const char *apath, char sep, int64_t line,
		      const char *s, size_t n)
{
	cof_buf_addf(&h->out, "%s%c%lld%c%.*s\n", apath, sep, (long long)line, sep,
		     (int)(n < GREP_SHOWN_MAX ? n : GREP_SHOWN_MAX), s);
}

static int64_t newlines(const char *s, size_t n)
{
	int64_t k = 0;
	const char *end = s + n;

	while (s < end && (s = memchr(s, '\n', (size_t)(end - s)))) {
		k++;
		s++;
	}
	return k;
}

/* The context lines after match `lm` (its line ending at `lm_end`) and before
 * line `upto`; `*last` is the last line shown. */
static void after_context(const grep_run *g, grep_hit *h, const char *apath, const char *t,
			  size_t len, int64_t lm, size_t lm_end, int64_t upto, int64_t *last)
{
	size_t p = lm_end + 1;

	for (int64_t ln = lm + 1; lm && ln <= lm + g->context && ln < upto && p < len; ln++) {
		const char *nl = memchr(t + p, '\n', len - p);
		size_t e = nl ? (size_t)(nl - t) : len;
		show_line(h, apath, '-', ln, t + p, e - p);
		*last = ln;
		p = e + 1;
	}
}

/* The context lines before match `line` (starting at `ls`) not shown yet. */
static void before_context(const grep_run *g, grep_hit *h, const char *apath, const char *t,
			   size_t ls, int64_t line, int64_t last)
{
	size_t starts[CONTEXT_MAX + 1];
	int k = 0;

	starts[0] = ls;
	while (k < g->context && line - k - 1 >= 1 && line - k - 1 > last) {
		size_t end = starts[k] - 1; /* the '\n' ending the line before */
		const char *nl = end ? memrchr(t, '\n', end) : NULL;
		starts[++k] = nl ? (size_t)(nl - t) + 1 : 0;
	}
	for (; k >= 1; k--)
		show_line(h, apath, '-', line - k, t + starts[k], starts[k - 1] - 1 - starts[k]);
}

/* Searches one text file, whole (cof_regex_next_line), into `h`. */
static void grep_file(const grep_run *g, cof_regex *rx, grep_hit *h, const char *apath,
		      const char *t, size_t len)
{
	size_t pos = 0, ls, le, lm_end = 0;
	int64_t line = 1, last = 0, lm = 0;   /* line at pos, last shown, last match */
	int r;

	while ((r = cof_regex_next_line(rx, t, len, pos, &ls, &le)) == 1) {
		line += newlines(t + pos, ls - pos);
		if (g->mode == MODE_CONTENT) {
			after_context(g, h, apath, t, len, lm, lm_end, line, &last);
			if (h->nmarks == (size_t)h->count) {
				h->nmarks = h->nmarks ? h->nmarks * 2 : 16;
				h->marks = cof_realloc(h->marks, h->nmarks * sizeof *h->marks);
			}
			h->marks[h->count] = h->out.len;
			if (h->count++ == g->limit)
				return; /* one past the limit: the cut is here */
			before_context(g, h, apath, t, ls, line, last);
			show_line(h, apath, ':', line, t + ls, le - ls);
			json_array_append_new(h->matches, json_pack(
				"{s:s, s:I, s:s%}", "path", apath, "line", (json_int_t)line, "text",
				t + ls, le - ls < GREP_SHOWN_MAX ? le - ls : GREP_SHOWN_MAX));
			last = lm = line;
			lm_end = le;
		} else {
			h->count++;
		}
		if (le >= len)
			break;
		pos = le + 1;
		line++;
	}
	if (r < 0) {
		h->stopped = 1;
		h->over = rx->over;
		h->stop_line = line + newlines(t + pos, ls - pos);
		return;
	}
	if (g->mode == MODE_CONTENT) {
		after_context(g, h, apath, t, len, lm, lm_end, INT64_MAX, &last);
	} else if (h->count) {
		if (g->mode == MODE_FILES)
			cof_buf_addf(&h->out, "%s\n", apath);
		else
			cof_buf_addf(&h->out, "%s:%lld\n", apath, (long long)h->count);
		json_array_append_new(h->matches, json_pack("{s:s, s:I}", "path", apath, "count",
							    (json_int_t)h->count));
	}
}

static int halted(grep_run *g)
{
	return __atomic_load_n(&g->halt, __ATOMIC_RELAXED);
}

/* Searches file i (`x`), its `len` bytes `d` (binary files are only counted). */
static void grep_bytes(grep_run *g, cof_regex *rx, size_t i, const grep_item *x,
		       const unsigned char *d, size_t len)
{
	grep_hit *h = &g->hits[i % GREP_WINDOW];

	h->matches = json_array();
	if (memchr(d, '\0', len) || !cof_utf8_valid((const char *)d, len)) {
		h->binary = 1;
	} else {
		char ap[COF_AGENT_PATH_MAX + 1];
		cof_agent_path_of(g->mount, x->path, ap, sizeof ap);
		grep_file(g, rx, h, ap, (const char *)d, len);
	}
}

/* Reads file i (`x`) and searches it. */
static void grep_one(grep_run *g, cof_regex *rx, size_t i, const grep_item *x)
{
	grep_hit *h = &g->hits[i % GREP_WINDOW];
	unsigned char *d;
	cof_err err = {0};

	if (cof_content_read(g->st, x->sha256, x->size, &d, &err)) {
		h->matches = json_array();
		h->err = cof_malloc(sizeof *h->err);
		*h->err = err;
		return;
	}
	grep_bytes(g, rx, i, x, d, (size_t)x->size);
	free(d);
}

/* A batch of files read in one go: files from + [0, n) of the search,
 * `read` marks those searched from the store's inline contents. */
typedef struct grep_batch {
	grep_run *g;
	cof_regex *rx;
	size_t from;
	grep_item *const *x;        /* the batch's files */
	const size_t *at;           /* the batch's j-th inline file: x[at[j]] */
	unsigned char read[GREP_BATCH];
} grep_batch;

/* cof_inline_fn: searches the content where the store gives it, no copy. */
static int grep_inline(void *ctx, size_t j, const unsigned char *data, size_t len)
{
	grep_batch *b = ctx;
	size_t k = b->at[j];

	if (len == (size_t)b->x[k]->size) { /* else read it alone */
		grep_bytes(b->g, b->rx, b->from + k, b->x[k], data, len);
		b->read[k] = 1;
	}
	return halted(b->g);
}

/* Searches files from + [0, n) (`x`): the small ones (kept inline in the
 * metadata store) in one read of it, each where the store gives it (a read
 * and a copy a file were most of the search's time), the rest one by one. */
static void grep_batch_run(grep_run *g, cof_regex *rx, size_t from, grep_item *const *x,
			   size_t n)
{
	grep_batch b = {g, rx, from, x, NULL, {0}};
	const char *shas[GREP_BATCH];
	size_t at[GREP_BATCH], k = 0;
	cof_err err = {0};

	for (size_t j = 0; j < n; j++)
		if (x[j]->size <= COF_INLINE_MAX) {
			at[k] = j;
			shas[k++] = x[j]->sha256;
		}
	b.at = at;
	if (k && cof_meta_blob_inline_scan(g->st->meta, shas, k, grep_inline, &b, &err))
		cof_err_clear(&err); /* each file is read alone below, saying why */
	for (size_t j = 0; j < n && !halted(g); j++)
		if (!b.read[j])
			grep_one(g, rx, from + j, x[j]);
}

static void hit_release(grep_hit *h)
{
	cof_buf_release(&h->out);
	json_decref(h->matches);
	free(h->marks);
	free(h->err);
	*h = (grep_hit){0};
}

/* Takes file i's answer into the search's, as searching the files one by one
 * in order would have: the limit cuts within a file, and a stop or an error
 * counts only when the search got that far. Called under g->lock. */
static void take(grep_run *g, size_t i)
{
	grep_hit *h = &g->hits[i % GREP_WINDOW];
	int64_t room = g->limit - g->shown, n = h->count;

	if (h->err) {
		g->failed = h->err;
		h->err = NULL;
		g->halt = 1;
	} else if (h->binary) {
		g->skipped++;
	} else if (g->mode == MODE_CONTENT && n > room) {
		cof_buf_add(&g->out, h->out.data, h->marks[room]);
		for (int64_t k = 0; k < room; k++)
			json_array_append(g->matches, json_array_get(h->matches, (size_t)k));
		g->shown = g->limit;
		g->files_matched++;
		g->cut = g->halt = 1;
	} else if (h->stopped) {
		g->stopped = g->halt = 1;
		g->over = h->over;
		cof_agent_path_of(g->mount, item_at(g, i)->path, g->stop_path, sizeof g->stop_path);
		g->stop_line = h->stop_line;
	} else if (n) {
		g->files_matched++;
		if (g->mode != MODE_CONTENT && room <= 0) {
			g->cut = g->halt = 1;
		} else {
			cof_buf_add(&g->out, h->out.data, h->out.len);
			json_array_extend(g->matches, h->matches);
			g->shown += g->mode == MODE_CONTENT ? n : 1;
		}
	}
	hit_release(h);
}

/* A worker: claims the next files listed (a batch, fewer when they are few
 * or large: both workers keep busy to the end), searches them, takes what
 * is done in order. */
static void grep_work(grep_run *g, cof_regex *rx)
{
	grep_item *x[GREP_BATCH];

	pthread_mutex_lock(&g->lock);
	for (;;) {
		while (!g->halt && (g->claim >= g->listed ? !g->listed_all
			            : g->claim >= g->taken + GREP_WINDOW))
			pthread_cond_wait(&g->room, &g->lock);
		if (g->halt || g->claim >= g->listed)
			break;
		size_t i = g->claim, n = 0, left = g->listed - i;
		size_t most = left / 4 < GREP_BATCH ? left / 4 + 1 : GREP_BATCH;
		int64_t bytes = 0;
		while (n < most && i + n < g->taken + GREP_WINDOW && i + n < g->listed &&
		       (n == 0 || bytes < 1024 * 1024)) {
			x[n] = item_at(g, i + n);
			bytes += x[n++]->size;
		}
		g->claim += n;
		pthread_mutex_unlock(&g->lock);
		grep_batch_run(g, rx, i, x, n);
		pthread_mutex_lock(&g->lock);
		for (size_t j = 0; j < n; j++)
			g->hits[(i + j) % GREP_WINDOW].done = 1;
		while (!g->halt && g->taken < g->listed && g->hits[g->taken % GREP_WINDOW].done)
			take(g, g->taken++);
		pthread_cond_broadcast(&g->room);
	}
	pthread_mutex_unlock(&g->lock);
}

typedef struct grep_thread {
	grep_run *g;
	cof_regex rx;
	pthread_t t;
} grep_thread;

static void *grep_thread_main(void *arg)
{
	grep_thread *w = arg;

	grep_work(w->g, &w->rx);
	return NULL;
}

/* Starts the workers that search while the request's thread lists: one a
 * core but one, at most GREP_THREADS_MAX - 1 (none for a few files). */
static void workers_start(grep_run *g)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t want = (size_t)(cores > 1 ? cores - 1 : 0);

	if (want > GREP_THREADS_MAX - 1)
		want = GREP_THREADS_MAX - 1;
	if (!want || !(g->workers = cof_calloc(want, sizeof *g->workers)))
		return;
	for (; g->nworkers < want; g->nworkers++) {
		grep_thread *w = &g->workers[g->nworkers];
		w->g = g;
		if (cof_regex_share(&w->rx, &g->rx, NULL))
			break;
		if (pthread_create(&w->t, NULL, grep_thread_main, w)) {
			cof_regex_close(&w->rx);
			break;
		}
	}
}

/* Makes listed items [listed, nitems) searchable; `all`: the listing ended. */
static void publish(grep_run *g, int all)
{
	pthread_mutex_lock(&g->lock);
	g->listed = g->nitems;
	g->listed_all |= all;
	pthread_cond_broadcast(&g->room);
	pthread_mutex_unlock(&g->lock);
	if (!g->workers && g->nitems >= 64)
		workers_start(g);
}

/* Adds a file to search (the request's thread): its own block, the blocks'
 * array grown under lock (workers read it there). 0, or -1 out of memory. */
static int item_add(grep_run *g, const char *path, const char *sha, int64_t size)
{
	size_t b = g->nitems / GREP_CHUNK;

	if (b == g->nblocks) {
		grep_item *blk = cof_malloc(GREP_CHUNK * sizeof *blk);
		pthread_mutex_lock(&g->lock);
		grep_item **v = blk ? cof_realloc(g->blocks, (b + 1) * sizeof *v) : NULL;
		if (v) {
			v[b] = blk;
			g->blocks = v;
			g->nblocks++;
		}
		pthread_mutex_unlock(&g->lock);
		if (!v) {
			free(blk);
			return -1;
		}
	}
	grep_item *x = &g->blocks[b][g->nitems % GREP_CHUNK];
	if (!(x->path = cof_strdup(path)))
		return -1;
	memcpy(x->sha256, sha, sizeof x->sha256);
	x->size = size;
	g->nitems++;
	/* the first files at once, then a batch's worth at a time */
	if (g->nitems - g->listed >= GREP_BATCH || g->nitems <= 2)
		publish(g, 0);
	return 0;
}

/* cof_entry_fn of the listing: a file under the folder that the glob (on
 * its name alone for a glob without '/') and the agent's exclusions let
 * through is searched. Nonzero (stop) once the search has ended. */
static int grep_list_add(void *ctx, const cof_entry *e)
{
	grep_run *g = ctx;

	if (halted(g))
		return 1;
	if ((!g->glob || glob_hits(g->glob, e->path + g->strip, 1)) &&
	    !cof_agent_excluded_vpath(g->a, g->mount, e->path, 0) &&
	    item_add(g, e->path, e->sha256, e->size)) {
		g->nomem = 1;
		return 1;
	}
	return 0;
}

/* Lists the files under target `t` and searches them as they come, in
 * parallel (grep_work); then the listing's thread searches too. 0, or -1
 * when the listing or a file could not be read (err says why). */
static int grep_files(grep_run *g, cof_store *st, const cof_target *t, cof_err *err)
{
	char prefix[COF_PATH_MAX + 2];
	cof_view view;
	cof_err lerr = {0};
	int rc = 0;

	snprintf(prefix, sizeof prefix, "%s%s", t->vpath, t->vpath[0] ? "/" : "");
	g->strip = strlen(prefix);
	if (!(g->hits = cof_calloc(GREP_WINDOW, sizeof *g->hits)))
		return cof_error(err, COF_EINTERNAL, "out of memory");
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->room, NULL);
	if (cof_view_open(st, g->a->org, t->mount->vol, NULL, &view, &lerr) ||
	    cof_meta_list(st->meta, view.vno, view.seq, prefix, NULL, grep_list_add, g, &lerr))
		rc = -1;
	else if (g->nomem)
		rc = cof_error(&lerr, COF_EINTERNAL, "out of memory");
	else if (g->nitems == 0 && t->vpath[0]) {
		/* The path may name one file. */
		cof_entry *e = cof_calloc(1, sizeof *e);
		int r = e ? cof_meta_entry_get(st->meta, view.vno, t->vpath, view.seq, e, &lerr)
			  : cof_error(&lerr, COF_EINTERNAL, "out of memory");
		if (r < 0)
			rc = -1;
		else if (r == 1 && item_add(g, e->path, e->sha256, e->size))
			rc = cof_error(&lerr, COF_EINTERNAL, "out of memory");
		free(e);
	}
	if (rc) { /* the search ends with the listing's error */
		pthread_mutex_lock(&g->lock);
		g->halt = 1;
		pthread_mutex_unlock(&g->lock);
	}
	publish(g, 1);
	grep_work(g, &g->rx);
	for (size_t k = 0; k < g->nworkers; k++) {
		pthread_join(g->workers[k].t, NULL);
		cof_regex_close(&g->workers[k].rx);
	}
	free(g->workers);
	for (size_t i = 0; i < GREP_WINDOW; i++)
		hit_release(&g->hits[i]);
	free(g->hits);
	for (size_t i = 0; i < g->nitems; i++)
		free(item_at(g, i)->path);
	for (size_t b = 0; b < g->nblocks; b++)
		free(g->blocks[b]);
	free(g->blocks);
	pthread_cond_destroy(&g->room);
	pthread_mutex_destroy(&g->lock);
	if (rc) {
		cof_err_clear(err);
		*err = lerr;
		free(g->failed);
		return -1;
	}
	if (g->failed) {
		*err = *g->failed;
		free(g->failed);
		return -1;
	}
	return 0;
}

static int grep_args(json_t *args, grep_run *g, cof_err *err)
{
	const char *mode = cof_json_str(args, "outputMode");

	g->limit = GREP_DEFAULT;
	if (cof_json_int(args, "limit", &g->limit) && (g->limit < 1 || g->limit > GREP_MAX))
		return cof_error(err, COF_EVALIDATION, "'limit' must be 1 to %d", GREP_MAX);
	if (cof_json_int(args, "context", &g->context) &&
	    (g->context < 0 || g->context > CONTEXT_MAX))
		return cof_error(err, COF_EVALIDATION, "'context' must be 0 to %d lines",
				 CONTEXT_MAX);
	if (!mode || !strcmp(mode, "content"))
		g->mode = MODE_CONTENT;
	else if (!strcmp(mode, "files"))
		g->mode = MODE_FILES;
	else if (!strcmp(mode, "count"))
		g->mode = MODE_COUNT;
	else
		return cof_error(err, COF_EVALIDATION,
				 "'outputMode' must be \"content\", \"files\" or \"count\"");
	const char *glob = cof_json_str(args, "glob");
	return glob ? cof_glob_check(glob, err) : 0;
}

int cof_tool_grep(cof_store *st, const cof_agent *a, json_t *args, json_t **out, cof_err *err)
{
	grep_run g = {0};
	cof_target t;
	int r, rc = -1;

	if (cof_json_check(args, grep_fields, err) || grep_args(args, &g, err))
		return -1;
	if (!*cof_json_str(args, "pattern"))
		return cof_error(err, COF_EVALIDATION, "'pattern' is empty");
	if (cof_regex_open(&g.rx, cof_json_str(args, "pattern"),
			   cof_json_bool(args, "ignoreCase", 0), 0, err)) {
		cof_regex_close(&g.rx);
		return -1;
	}
	g.matches = json_array();
	if ((r = cof_tool_target(a, args, "path", 0, &t, out, err))) {
		rc = r < 0 ? -1 : 0;
		goto done;
	}
	if (cof_agent_excluded(a, t.apath, 1)) {
		rc = cof_tool_refuse(out, "%s is excluded: the agent's exclusions keep it out of "
				     "reach", t.apath);
		goto done;
	}
	g.st = st;
	g.a = a;
	g.mount = t.mount;
	g.glob = cof_json_str(args, "glob");
	if (grep_files(&g, st, &t, err))
		goto done;
	if (g.stopped) {
		char lim[96];
		g.rx.over = g.over;
		rc = cof_tool_refuse(out, "grep stopped at %s on %s line %lld, before the search "
				     "ended; use a simpler pattern (nested or overlapping "
				     "repeats such as (a|aa)+ backtrack without end) or a "
				     "narrower path or glob", cof_regex_limit(&g.rx, lim, sizeof lim),
				     g.stop_path, (long long)g.stop_line);
		json_object_set_new(*out, "limit", json_string(cof_regex_limit_key(&g.rx)));
		goto done;
	}
	if (g.shown == 0)
		cof_buf_addf(&g.out, "no matches under %s\n", t.apath);
	if (g.cut)
		cof_buf_addf(&g.out, "[stopped at %lld results; narrow the pattern, path or glob, "
			     "or raise limit]\n", (long long)g.limit);
	if (g.skipped)
		cof_buf_addf(&g.out, "[%lld binary files skipped]\n", (long long)g.skipped);
	*out = json_pack("{s:b, s:s, s:O, s:I, s:b, s:I}", "ok", 1, "output", g.out.data,
			 "matches", g.matches, "filesMatched", (json_int_t)g.files_matched,
			 "truncated", g.cut, "binarySkipped", (json_int_t)g.skipped);
	rc = 0;
done:
	cof_buf_release(&g.out);
	json_decref(g.matches);
	cof_regex_close(&g.rx);
	return rc;
}
