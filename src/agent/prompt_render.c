/*
 * prompt_render.c — a recorded prompt as the model sees it (API.md "What the
 * model sees: prompt"): one line per file, the user's text, then the images
 * and PDFs shown, as Anthropic Messages content blocks or OpenAI Chat
 * Completions content parts.
 *
 * Whether a file is shown is decided here, each time a prompt is rendered,
 * from the content its record references: the kind its first bytes told,
 * media.c's limits and scaling (exactly those of the read tool), and the
 * request's budget, taken newest first by the caller's order of calls. Only
 * what can be shown is read, so a long conversation costs what its budget
 * shows, not what it holds.
 *
 * Records are read back from a volume anyone of the organization may write,
 * so cof_prompt_record_ok checks every field this file relies on (a SHA-256
 * names a blob file; a size bounds a read) before any is used.
 */
#include <stdlib.h>
#include <string.h>
#include "agent/agent.h"

#define BUDGET_BYTES (24LL << 20)
#define BUDGET_FILES 100
#define MEDIA_READ_MAX (16LL << 20) /* the largest file media.c may show */
#define IMAGE_BYTES_MAX (5LL << 20)
#define RECORD_SIZE_MAX (1LL << 40)

/* A string field, "" when absent. */
static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static int sha_ok(const char *s)
{
	size_t n = 0;

	for (; s && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')); n++)
		;
	return s && n == 64 && s[n] == '\0';
}

int cof_prompt_record_ok(json_t *rec)
{
	json_t *files = json_object_get(rec, "files"), *f;
	size_t i;

	if (!json_is_object(rec) || !json_is_array(files) ||
	    !json_is_string(json_object_get(rec, "requestId")) ||
	    !json_is_string(json_object_get(rec, "text")))
		return 0;
	json_array_foreach(files, i, f) {
		json_t *size = json_object_get(f, "size"), *kind = json_object_get(f, "kind");
		const char *k = json_string_value(kind);
		if (!json_is_string(json_object_get(f, "path")) ||
		    !json_is_string(json_object_get(f, "contentType")) ||
		    !json_is_integer(size) || json_integer_value(size) < 0 ||
		    json_integer_value(size) > RECORD_SIZE_MAX ||
		    !json_is_integer(json_object_get(f, "version")) ||
		    !sha_ok(json_string_value(json_object_get(f, "sha256"))) ||
		    (kind && (!k || (k[0] && strcmp(k, "image") && strcmp(k, "pdf") &&
				      strcmp(k, "audio")))))
			return 0;
	}
	return 1;
}

/* Content of `size` bytes (at most `max`) by its hash, whole, and exactly
 * that long whatever the record says: media.c and audio.c read `size` bytes. */
static int content_bytes(cof_store *st, const char *sha, int64_t size, int64_t max,
			 unsigned char **d, cof_err *err)
{
	size_t len = 0;
	int r;

	*d = NULL;
	if (size < 0 || size > max)
		return cof_error(err, COF_EINTERNAL, "content %.12s: size %lld out of range", sha,
				 (long long)size);
	if ((r = cof_meta_blob_inline(st->meta, sha, d, &len, err)) < 0)
		return -1;
	if (r == 0)
		return cof_content_read(st, sha, size, d, err);
	if (len != (size_t)size) {
		free(*d);
		*d = NULL;
		return cof_error(err, COF_EINTERNAL, "content %.12s is %zu bytes, not the %lld "
				 "its prompt record says", sha, len, (long long)size);
	}
	return 0;
}


/* "2.1 MB": decimal units, one decimal, as the file lines show sizes. */
static void size_human(int64_t n, char *out, size_t outsz)
{
	static const char *const units[] = {"KB", "MB", "GB", "TB"};
	double v = (double)n;
	int u = -1;

	if (n < 1000) {
		snprintf(out, outsz, "%lld byte%s", (long long)n, n == 1 ? "" : "s");
		return;
	}
	while (v >= 999.95 && u < 3)
		v /= 1000, u++;
	snprintf(out, outsz, "%.1f %s", v, units[u]);
}

/* The kind a file's first bytes tell: "image", "pdf", "audio" (also for an
 * audio/ type: libsndfile reads more than the bytes told here, and names
 * what it cannot) or "" (none). A file too big to be read is judged by its
 * stored type. */
static int kind_of(cof_store *st, json_t *rf, unsigned char **d, cof_err *err)
{
	const char *ct = jstr(rf, "contentType");
	const char *sha = json_string_value(json_object_get(rf, "sha256"));
	int64_t size = json_integer_value(json_object_get(rf, "size"));
	const char *k, *mt;

	if (size > MEDIA_READ_MAX) {
		k = !strncmp(ct, "image/", 6) ? "image" : !strcmp(ct, "application/pdf") ? "pdf"
		    : !strncmp(ct, "audio/", 6) ? "audio" : "";
	} else {
		if (content_bytes(st, sha, size, MEDIA_READ_MAX, d, err))
			return -1;
		mt = cof_media_type(*d, (size_t)size);
		k = mt ? (!strcmp(mt, "application/pdf") ? "pdf" : "image")
		    : cof_audio_type(*d, (size_t)size) || !strncmp(ct, "audio/", 6) ? "audio" : "";
	}
	json_object_set_new(rf, "kind", json_string(k));
	return 0;
}

/* The block that carries a shown file, in the format asked. */
static json_t *media_block(int openai, const char *kind, const char *mtype, const char *b64,
			   const char *apath)
{
	const char *base = strrchr(apath, '/');
	json_t *blk;

	if (!openai)
		return json_pack("{s:s, s:{s:s, s:s, s:s}}", "type",
				 !strcmp(kind, "pdf") ? "document" : "image", "source", "type",
				 "base64", "media_type", mtype, "data", b64);
	cof_buf url = COF_BUF_INIT;
	cof_buf_addf(&url, "data:%s;base64,", mtype);
	cof_buf_adds(&url, b64);
	if (!strcmp(kind, "pdf"))
		blk = json_pack("{s:s, s:{s:s, s:s}}", "type", "file", "file", "filename",
				base ? base + 1 : apath, "file_data", url.data);
	else
		blk = json_pack("{s:s, s:{s:s}}", "type", "image_url", "image_url", "url", url.data);
	cof_buf_release(&url);
	return blk;
}

/* An audio file's transcript as a text block (*block), or why not (`why`;
 * *block NULL). *transcript: the words, for the answer's entry. `d`: its
 * bytes when kind_of read them. Counts what is shown in `b`. */
static int render_audio(cof_store *st, json_t *rf, cof_budget *b, cof_buf *why,
			json_t **block, char **transcript, unsigned char *d, cof_err *err)
{
	const char *apath = jstr(rf, "path");
	const char *sha = jstr(rf, "sha256");
	int64_t size = json_integer_value(json_object_get(rf, "size"));
	unsigned char *own = NULL;
	char w[300];

	if (size > COF_AUDIO_BYTES_MAX) {
		cof_buf_addf(why, "not transcribed: %s is %lld bytes (%.1f MiB); audio over %lld MiB "
			     "is not transcribed", apath, (long long)size,
			     (double)size / (1024.0 * 1024.0), COF_AUDIO_BYTES_MAX >> 20);
		return 0;
	}
	if (!d) {
		if (content_bytes(st, sha, size, COF_AUDIO_BYTES_MAX, &own, err))
			return -1;
		d = own;
	}
	w[0] = '\0';
	int ok = cof_audio_transcript(sha, d, (size_t)size, transcript, w, sizeof w);
	free(own);
	if (!ok) {
		cof_buf_addf(why, "not transcribed: %s", w);
		return 0;
	}
	cof_buf text = COF_BUF_INIT;
	cof_buf_addf(&text, "[Transcript of %s]\n%s", apath,
		     **transcript ? *transcript : "(no words were recognised)");
	/* counted as text sent, against the same budget as images */
	if (b->bytes + (int64_t)text.len > BUDGET_BYTES || b->files + 1 > BUDGET_FILES) {
		b->cut = 1;
	} else {
		b->bytes += (int64_t)text.len;
		b->files++;
		*block = json_pack("{s:s, s:s}", "type", "text", "text", text.data);
	}
	cof_buf_release(&text);
	return 0;
}

/* Decides whether the model gets one file of a record and how: fills the
 * file's line (`line`), its block (*block, or NULL when only named) and its
 * entry of the answer's `files` (*fj). Counts what is shown in `b`. */
static int render_file(cof_store *st, json_t *rf, int openai, cof_budget *b, cof_buf *line,
		       json_t **block, json_t **fj, cof_err *err)
{
	const char *apath = jstr(rf, "path");
	const char *ct = jstr(rf, "contentType");
	const char *sha = jstr(rf, "sha256");
	int64_t size = json_integer_value(json_object_get(rf, "size"));
	unsigned char *d = NULL;
	json_t *res = NULL;
	cof_buf why = COF_BUF_INIT;
	char human[32], *transcript = NULL;
	int limited = 0, rc = -1;

	*block = NULL;
	if (!json_object_get(rf, "kind") && kind_of(st, rf, &d, err))
		goto out;
	const char *kind = jstr(rf, "kind");
	if (!kind[0]) {
		cof_buf_addf(&why, "only named: %s is not an image (PNG, JPEG, GIF, WebP) or a PDF, "
			     "the kinds the model takes natively, or audio", ct);
	} else if (b->cut) {
		limited = 1;
	} else if (!strcmp(kind, "audio")) {
		if (render_audio(st, rf, b, &why, block, &transcript, d, err))
			goto out;
		limited = !*block;
		limited = 1;
	} else if (size > (!strcmp(kind, "pdf") ? MEDIA_READ_MAX : IMAGE_BYTES_MAX)) {
		cof_target t = {0};
		snprintf(t.apath, sizeof t.apath, "%s", apath);
		cof_media_refuse_large(&t, !strcmp(kind, "pdf") ? "application/pdf" : "image/",
				       size, &res);
		cof_buf_adds(&why, jstr(res, "output"));
		limited = 1;
	} else {
		cof_target t = {0};
		cof_file f = {.size = size,
			      .version = json_integer_value(json_object_get(rf, "version"))};
		snprintf(t.apath, sizeof t.apath, "%s", apath);
		snprintf(f.sha256, sizeof f.sha256, "%s", sha);
		snprintf(f.content_type, sizeof f.content_type, "%s", ct);
		if (!d && content_bytes(st, sha, size, MEDIA_READ_MAX, &d, err))
			goto out;
		int r = cof_media_read(&t, &f, d, &res, err);
		if (r < 0)
			goto out;
		json_t *m = json_object_get(res, !strcmp(kind, "pdf") ? "document" : "image");
		if (r == 0 || !json_is_true(json_object_get(res, "ok")) || !m) {
			cof_buf_adds(&why, r == 0 ? "its content is no longer an image or PDF"
				     : jstr(res, "output"));
			limited = 1;
		} else {
			const char *b64 = json_string_value(json_object_get(m, "data"));
			/* Counted as sent, in base64: 24 MiB of it keeps a whole
			 * request under Anthropic's 32 MB. */
			int64_t n = (int64_t)strlen(b64);
			if (b->bytes + n > BUDGET_BYTES || b->files + 1 > BUDGET_FILES) {
				b->cut = 1;
				limited = 1;
			} else {
				b->bytes += n;
				b->files++;
				*block = media_block(openai, kind, json_string_value(
						     json_object_get(m, "mediaType")), b64, apath);
			}
		}
	}
	if (limited && !why.len)
		cof_buf_addf(&why, "past the request's budget: at most 24 MiB (in base64) and %d "
			     "images, PDFs and transcripts are shown in one model request, newest "
			     "first", BUDGET_FILES);
	size_human(size, human, sizeof human);
	cof_buf_addf(line, "[File %s (%s, %s)", apath, ct, human);
	if (limited)
		cof_buf_addf(line, "; not shown: %s", why.data);
	cof_buf_adds(line, "]");
	*fj = json_pack("{s:s, s:s, s:I, s:s, s:b}", "path", apath, "contentType", ct, "size",
			(json_int_t)size, "sha256", sha, "shown", *block != NULL);
	if (transcript)
		json_object_set_new(*fj, "transcript", json_string(transcript));
	if (!*block)
		json_object_set_new(*fj, "reason", json_string(why.data ? why.data : ""));
	rc = 0;
out:
	json_decref(res);
	cof_buf_release(&why);
	free(transcript);
	free(d);
	return rc;
}

int cof_prompt_render(cof_store *st, json_t *rec, int openai, cof_budget *b, json_t **content,
			 json_t **files, cof_err *err)
{
	json_t *rf, *blocks = json_array();
	const char *text = jstr(rec, "text");
	size_t i;

	*content = json_array();
	*files = json_array();
	json_array_foreach(json_object_get(rec, "files"), i, rf) {
		cof_buf line = COF_BUF_INIT;
		json_t *blk, *fj;
		if (render_file(st, rf, openai, b, &line, &blk, &fj, err)) {
			cof_buf_release(&line);
			json_decref(blocks);
			return -1;
		}
		json_array_append_new(*content, json_pack("{s:s, s:s}", "type", "text", "text",
							  line.data));
		json_array_append_new(*files, fj);
		if (blk)
			json_array_append_new(blocks, blk);
		cof_buf_release(&line);
	}
	if (text[0])
		json_array_append_new(*content, json_pack("{s:s, s:s}", "type", "text", "text", text));
	json_array_extend(*content, blocks);
	json_decref(blocks);
	return 0;
}
