/*
 * fuzz_merge_text.c — the merge's three-way text merge (src/volume/merge.c,
 * cof_merge_text over libgit2's git_merge_file) and its text test, on three
 * buffers cut from the input at the first two 0xff bytes (base, ours, theirs;
 * missing parts are empty). Invariants: every call answers (clean, conflict
 * or an error, never a crash); the result is NUL-terminated at *outlen;
 * ours == theirs merges clean to ours; base == ours merges clean to theirs,
 * and base == theirs to ours; a clean merge of text sides is text (UTF-8,
 * no NUL) when none is over the size limit.
 */
#include "fuzz.h"
#include "volume/volume.h"

static void merge(const char *b, size_t bl, const char *o, size_t ol, const char *t, size_t tl)
{
	unsigned char *out = NULL;
	size_t n = 0;
	cof_err err = {0};
	int text = cof_merge_is_text(b, bl) && cof_merge_is_text(o, ol) && cof_merge_is_text(t, tl);
	int rc = cof_merge_text(b, bl, o, ol, t, tl, &out, &n, &err);

	FUZZ_CHECK(rc >= -1 && rc <= 1, "answer %d", rc);
	if (rc < 0) {
		FUZZ_CHECK(!out, "no result with an error");
		cof_err_clear(&err);
		return;
	}
	FUZZ_CHECK(out && out[n] == '\0', "result NUL-terminated at its length %zu", n);
	if (text && ol == tl && !memcmp(o, t, ol))
		FUZZ_CHECK(rc == 1 && n == ol && !memcmp(out, o, n), "ours == theirs gives ours");
	if (text && bl == ol && !memcmp(b, o, bl))
		FUZZ_CHECK(rc == 1 && n == tl && !memcmp(out, t, n), "base == ours gives theirs");
	if (text && bl == tl && !memcmp(b, t, bl))
		FUZZ_CHECK(rc == 1 && n == ol && !memcmp(out, o, n), "base == theirs gives ours");
	if (text && rc == 1)
		FUZZ_CHECK(cof_merge_is_text(out, n), "a clean merge of text is text");
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cut[2] = {size, size}, k = 0;

	for (size_t i = 0; i < size && k < 2; i++)
		if (data[i] == 0xff)
			cut[k++] = i;
	size_t bl = cut[0], os = cut[0] < size ? cut[0] + 1 : size;
	size_t ol = (cut[1] < size ? cut[1] : size) - os;
	size_t ts = cut[1] < size ? cut[1] + 1 : size, tl = size - ts;
	char *b = fuzz_dup_exact(data, bl), *o = fuzz_dup_exact(data + os, ol),
	     *t = fuzz_dup_exact(data + ts, tl);

	merge(b, bl, o, ol, t, tl);
	free(b);
	free(o);
	free(t);
	return 0;
}
