/*
 * regex.h — the one way a caller's search pattern becomes a PCRE2 program
 * and is matched: UTF mode that tolerates invalid UTF-8 in the subject, JIT
 * when available, and limits so that a pattern that backtracks without end
 * (such as ^(a|aa)+$ against "aaaa...!") costs a bounded amount of CPU.
 * Shared by the agent's grep (src/agent/search.c) and the relay client's
 * search (src/relay/client/lfs_search.c), so both refuse the same patterns the same
 * way and stop at the same limits.
 *
 * Limits: per line, PCRE2's match limit (JIT honours it too), depth limit and
 * heap limit (the interpreter's), and JIT's stack; per search, a wall-clock
 * budget checked before every line matched alone and before every MiB matched
 * whole (cof_regex_next_line), so a search that stays under the limits line
 * by line still ends. A whole-buffer call that meets a limit does not stop the
 * search: those lines are matched again one by one, and their limits decide.
 */
#ifndef COF_UTIL_REGEX_H
#define COF_UTIL_REGEX_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>
#include "coffer.h"

#define COF_REGEX_MATCH_LIMIT 1000000   /* PCRE2 match steps for one line */
#define COF_REGEX_DEPTH_LIMIT 100000    /* backtracking depth (interpreter) */
#define COF_REGEX_HEAP_KIB 65536        /* backtracking memory (interpreter), KiB */
#define COF_REGEX_BUDGET_MS 10000       /* wall clock for one search */

typedef enum {
	COF_REGEX_OK = 0,
	COF_REGEX_OVER_MATCH,   /* the match limit */
	COF_REGEX_OVER_DEPTH,   /* the depth limit */
	COF_REGEX_OVER_HEAP,    /* the heap limit, or JIT's stack */
	COF_REGEX_OVER_TIME,    /* the search's time budget */
	COF_REGEX_FAILED        /* another matching error (out of memory) */
} cof_regex_over;

/* One search's program, its match data and limits. `whole` is the same
 * pattern in multi-line mode, for matching a buffer of lines in one call, or
 * NULL when the pattern could match differently there (lookarounds, inline
 * options, atomic groups, possessive repeats, \A \z \Z \G \K \Q, verbs);
 * `lit` is set when the pattern is a plain string (memmem finds it). */
typedef struct cof_regex {
	pcre2_code *re;
	pcre2_code *whole;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	const char *lit;       /* the pattern itself, when literal; else NULL */
	size_t litlen;
	int shared;            /* re, whole and mc belong to another cof_regex */
	int64_t budget_ms;
	int64_t deadline;      /* cof_mono_ms() when the budget is spent */
	cof_regex_over over;   /* why the last match stopped; sticky */
} cof_regex;

/* Compiles `pattern`; NULL with COF_EVALIDATION naming the error and its
 * position for a bad one. Free with pcre2_code_free. */
pcre2_code *cof_regex_compile(const char *pattern, int caseless, cof_err *err);

/* Compiles `pattern` into `rx` with the limits above and starts the time
 * budget (`budget_ms`, 0 = COF_REGEX_BUDGET_MS). 0, or -1 with COF_EVALIDATION
 * for a bad pattern, COF_EINTERNAL out of memory. Release with cof_regex_close
 * (also after a failure). */
int cof_regex_open(cof_regex *rx, const char *pattern, int caseless, int64_t budget_ms,
		   cof_err *err);

/* A matcher for another thread over `src`'s programs, limits and deadline,
 * with its own match data. 0, or -1 with COF_EINTERNAL out of memory. Close
 * it (with cof_regex_close) before `src`. */
int cof_regex_share(cof_regex *dst, const cof_regex *src, cof_err *err);

/* The first line of buf[0..len) at or after offset `from` (a line start)
 * that matches as a line on its own, exactly as cof_regex_match would line by
 * line (lines end at '\n', which is not part of them; a final '\n' starts no
 * line). 1 with [*ls, *le) that line, 0 none, -1 when a limit stopped it or
 * the budget is spent (*ls is then the line it was at). One call searches up
 * to a MiB of lines (the literal with memmem, else `whole`, checking the
 * lines a match spans) and falls back to line by line where a limit stops
 * that; the budget is checked once a call and every MiB. */
int cof_regex_next_line(cof_regex *rx, const char *buf, size_t len, size_t from,
			size_t *ls, size_t *le);

/* Matches one line of `n` bytes: 1 a match, 0 none, -1 when a limit stopped
 * it or the budget is spent (rx->over says which; every later call is -1). */
int cof_regex_match(cof_regex *rx, const char *s, size_t n);

/* What stopped a search, for a message: "the regex match limit (1000000 steps
 * a line)", "the search's time budget (10 s)", ... */
const char *cof_regex_limit(const cof_regex *rx, char *buf, size_t bufsz);

/* The same as a key for an answer's `limit` field: "matchLimit",
 * "depthLimit", "heapLimit", "timeBudget" or "matchError". */
const char *cof_regex_limit_key(const cof_regex *rx);

void cof_regex_close(cof_regex *rx);

#endif
