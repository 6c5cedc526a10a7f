/*
 * guard_bench.c — the write guard's throughput, block and stream mode, side by
 * side with ripgrep over the same rules and the same bytes; and what agent
 * exclusions cost (building the matcher per call, one match).
 *
 *   build/guard_bench [MB]      (from the repository root; default 100 MB)
 *
 * The text: this repository's sources (src/, include/, tests/, docs/, bench/,
 * fuzz/: .c .h .py .md .sh), each kept only if the guard passes it alone (so
 * no scan stops early), concatenated and repeated to MB megabytes. Writes the
 * "## Guard" section of bench/results.md (replacing an earlier one) and
 * prints it.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "policy/policy.h"
#include "util/util.h"

#define RUNS 5
#define CHUNK (64 * 1024)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int kept, dropped;

/* Adds every source file under dir that the guard passes to b (up to
 * COLLECT_MAX bytes in all). */
#define COLLECT_MAX (64u << 20)
static const char *const repo_exts[] = {".c", ".h", ".py", ".md", ".sh", NULL};
static const char *const py_exts[] = {".py", NULL};
static const char *const *exts = repo_exts;

static void collect(const cof_guard *g, const char *dir, cof_buf *b)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[2048];
		struct stat st;
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "work") ||
		    !strcmp(de->d_name, "node_modules") || !strcmp(de->d_name, "corpus") ||
		    !strcmp(de->d_name, "site-packages") || !strcmp(de->d_name, "dist-packages"))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			collect(g, p, b);
			continue;
		}
		size_t n = strlen(de->d_name);
		int want = 0;
		for (int i = 0; exts[i]; i++)
			want |= n > strlen(exts[i]) && !strcmp(de->d_name + n - strlen(exts[i]), exts[i]);
		if (!want || !S_ISREG(st.st_mode) || st.st_size > (8 << 20) ||
		    b->len + (size_t)st.st_size > COLLECT_MAX)
			continue;
		FILE *f = fopen(p, "rb");
		char *buf = malloc((size_t)st.st_size + 1);
		size_t got = f && buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
		cof_guard_hit hit;
		cof_err err = {0};
		if (f)
			fclose(f);
		if (got && cof_guard_scan(g, NULL, buf, got, &hit, &err) == 0) {
			cof_buf_add(b, buf, got);
			kept++;
		} else if (got) {
			dropped++;
		}
		free(buf);
	}
	closedir(d);
}

/* The rules as ripgrep patterns, one a line: (?-u) for bytes, i/s flags. */
static int rg_patterns(const char *path)
{
	size_t len;
	const char *t = cof_guard_rules_text(&len), *p = t;
	FILE *f = fopen(path, "w");
	int n = 0;

	if (!f)
		return -1;
	while (p < t + len) {
		const char *nl = memchr(p, '\n', (size_t)(t + len - p));
		const char *e = nl ? nl : t + len, *re = NULL, *last = e;
		if (p < e && *p >= 'a' && *p <= 'z') {
			/* NAME CATEGORY /REGEX/FLAGS: the regex runs to the last '/'. */
			for (const char *q = p; q < e && !re; q++)
				if (*q == '/' && (q[-1] == ' ' || q[-1] == '\t'))
					re = q + 1;
			while (last > p && last[-1] != '/')
				last--;
			if (re && last - 1 > re) {
				fputs("(?-u", f);
				for (const char *q = last; q < e; q++)
					if (*q == 'i' || *q == 's' || *q == 'm')
						fputc(*q, f);
				fputc(')', f);
				for (const char *q = re; q < last - 1; q++) {
					if (q[0] == '\\' && q[1] == '/')
						continue; /* "\/" is "/" */
					fputc(*q, f);
				}
				fputc('\n', f);
				n++;
			}
		}
		p = e + 1;
	}
	fclose(f);
	return n;
}

#define PY_STDLIB "/usr/lib/python3.11"

/* `src` repeated to `total` bytes (malloc'd). */
static char *repeat_to(const cof_buf *src, size_t total)
{
	char *text = malloc(total);
	if (!text)
		exit(1);
	for (size_t off = 0; off < total; off += src->len)
		memcpy(text + off, src->data, total - off < src->len ? total - off : src->len);
	return text;
}

/* RUNS block scans and RUNS stream scans (64 KiB chunks) of text: the times
 * in tb/ts; answers how many scans blocked (must be 0). */
static int time_scans(const cof_guard *g, const char *text, size_t total, double *tb,
		      double *ts)
{
	cof_guard_hit hit;
	cof_err err = {0};
	int blocked = 0;

	for (int r = 0; r < RUNS; r++) {
		double a = now();
		blocked += cof_guard_scan(g, "bench.txt", text, total, &hit, &err) != 0;
		tb[r] = now() - a;
		a = now();
		cof_guard_stream *s;
		cof_guard_stream_open(g, "bench.txt", &s, &hit, &err);
		for (size_t off = 0; off < total; off += CHUNK)
			cof_guard_stream_feed(s, text + off, total - off < CHUNK ? total - off : CHUNK);
		blocked += cof_guard_stream_close(s) != 0;
		ts[r] = now() - a;
	}
	return blocked;
}

static double run_cmd(const char *cmd, char *out, size_t outsz)
{
	double t0 = now();
	FILE *p = popen(cmd, "r");
	size_t n = 0;

	if (!p)
		return -1;
	while (n + 1 < outsz && fgets(out + n, (int)(outsz - n), p))
		n = strlen(out);
	out[n] = '\0';
	pclose(p);
	return now() - t0;
}

/* Replaces (or appends) the "## Guard" section of bench/results.md. */
static void write_section(const char *sec)
{
	FILE *f = fopen("bench/results.md", "rb");
	cof_buf b = COF_BUF_INIT;
	char tmp[4096];
	size_t n;

	while (f && (n = fread(tmp, 1, sizeof tmp, f)) > 0)
		cof_buf_add(&b, tmp, n);
	if (f)
		fclose(f);
	char *old = b.data ? strstr(b.data, "\n## Guard") : NULL;
	cof_buf o = COF_BUF_INIT;
	if (old) {
		char *next = strstr(old + 1, "\n## ");
		cof_buf_add(&o, b.data, (size_t)(old - b.data));
		cof_buf_adds(&o, "\n");
		cof_buf_adds(&o, sec);
		if (next)
			cof_buf_adds(&o, next);
	} else {
		if (b.data)
			cof_buf_adds(&o, b.data);
		cof_buf_adds(&o, "\n");
		cof_buf_adds(&o, sec);
	}
	f = fopen("bench/results.md", "wb");
	if (f) {
		fwrite(o.data, 1, o.len, f);
		fclose(f);
	}
	cof_buf_release(&b);
	cof_buf_release(&o);
}

int main(int argc, char **argv)
{
	size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 100, total = mb << 20;
	cof_err err = {0};
	cof_buf src = COF_BUF_INIT;
	double t0 = now(), tb[RUNS], ts[RUNS], tr[RUNS], compile_s;
	const cof_guard *g = cof_guard_default(&err);

	compile_s = now() - t0;
	if (!g) {
		fprintf(stderr, "guard: %s\n", err.msg);
		return 1;
	}
	static const char *const dirs[] = {"src", "include", "tests", "docs", "bench", "fuzz"};
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
		collect(g, dirs[i], &src);
	if (!src.len) {
		fprintf(stderr, "no sources found; run from the repository root\n");
		return 1;
	}
	char *text = repeat_to(&src, total);
	int blocked = time_scans(g, text, total, tb, ts);

	/* Python's standard library, the same way (skipped when absent). */
	int py_kept = 0, py_dropped = 0, py_blocked = 0;
	double pb[RUNS], ps[RUNS];
	cof_buf py = COF_BUF_INIT;
	int k0 = kept, d0 = dropped;
	exts = py_exts;
	collect(g, PY_STDLIB, &py);
	py_kept = kept - k0, py_dropped = dropped - d0;
	kept = k0, dropped = d0;
	if (py.len) {
		char *pt = repeat_to(&py, total);
		py_blocked = time_scans(g, pt, total, pb, ps);
		free(pt);
	}

	/* The anchor: ripgrep, the same rules, the same bytes from a file. */
	char dir[] = "/tmp/coffer-guard-bench.XXXXXX", file[64], pats[64], cmd[512], out[256];
	int have_rg = system("command -v rg >/dev/null 2>&1") == 0, npat = 0, rg_ok = 1;
	long rg_lines = -1;
	if (have_rg && mkdtemp(dir)) {
		snprintf(file, sizeof file, "%s/text", dir);
		snprintf(pats, sizeof pats, "%s/patterns", dir);
		FILE *f = fopen(file, "wb");
		fwrite(text, 1, total, f);
		fclose(f);
		npat = rg_patterns(pats);
		snprintf(cmd, sizeof cmd, "rg -c -a -f %s %s 2>&1; echo rc=$?", pats, file);
		for (int r = 0; r < RUNS; r++) {
			tr[r] = run_cmd(cmd, out, sizeof out);
			if (!strstr(out, "rc=0") && !strstr(out, "rc=1"))
				rg_ok = 0;
		}
		rg_lines = strstr(out, "rc=1") ? 0 : atol(out);
		unlink(file);
		unlink(pats);
		rmdir(dir);
	}

	/* Exclusions, as an agent call builds and uses them. */
	json_t *p = json_pack("[sssss]", "*.log", "!keep.log", "/private/", "build/**",
			      "node_modules/");
	int N = 200000, m = 0;
	double a = now();
	for (int i = 0; i < N; i++) {
		cof_excl *x;
		cof_excl_new(p, 1, &x, &err);
		cof_excl_free(x);
	}
	double excl_new = (now() - a) / N;
	cof_excl *x;
	cof_excl_new(p, 1, &x, &err);
	a = now();
	for (int i = 0; i < N; i++)
		m += cof_excl_match(x, "src/agent/tools/deep/file.c", 0);
	double excl_match = (now() - a) / N;
	cof_excl_free(x);
	json_decref(p);

	char load[64] = "?";
	FILE *lf = fopen("/proc/loadavg", "r");
	if (lf) {
		if (fgets(load, sizeof load, lf))
			load[strcspn(load, "\n")] = '\0';
		fclose(lf);
	}
	double mbs = (double)total / 1048576.0;
	double b_med = median(tb, RUNS), s_med = median(ts, RUNS), r_med = have_rg ? median(tr, RUNS) : 0;
	cof_buf sec = COF_BUF_INIT;
	cof_buf_addf(&sec, "## Guard (bench/guard_bench.c)\n\n");
	cof_buf_addf(&sec, "| %zu MB of this repository's sources, all rules | s | MB/s | vs rg |\n"
		     "|---|---|---|---|\n", mb);
	char vb[16] = "-", vs[16] = "-"; /* "vs rg", when rg is there */
	if (have_rg)
		snprintf(vb, sizeof vb, "%.2fx", r_med / b_med),
			snprintf(vs, sizeof vs, "%.2fx", r_med / s_med);
	cof_buf_addf(&sec, "| guard, block mode (one buffer) | %.3f | %.0f | %s |\n", b_med,
		     mbs / b_med, vb);
	cof_buf_addf(&sec, "| guard, stream mode (64 KiB chunks) | %.3f | %.0f | %s |\n", s_med,
		     mbs / s_med, vs);
	if (have_rg)
		cof_buf_addf(&sec, "| rg -c -f (the same %d regexes, from a warm file) | %.3f | %.0f | "
			     "1.00x |\n", npat, r_med, mbs / r_med);
	if (py.len) {
		double pbm = median(pb, RUNS), psm = median(ps, RUNS);
		cof_buf_addf(&sec, "| guard, block mode, %zu MB of Python's standard library | %.3f | "
			     "%.0f | %s |\n", mb, pbm, mbs / pbm, "-");
		cof_buf_addf(&sec, "| guard, stream mode, the same | %.3f | %.0f | - |\n", psm,
			     mbs / psm);
	}
	cof_buf_addf(&sec, "\n| exclusions (defaults + 5 patterns) | µs |\n|---|---|\n");
	cof_buf_addf(&sec, "| build the matcher (once per agent call) | %.2f |\n", excl_new * 1e6);
	cof_buf_addf(&sec, "| match one 5-segment path | %.2f |\n", excl_match * 1e6);
	cof_buf_addf(&sec, "\nMedians of %d. Compiling the guard (block + stream databases, once a "
		     "process): %.0f ms. The text is %d source files (%d left out because the "
		     "guard blocks them, e.g. test inputs), %.1f MB, repeated; the guard blocked "
		     "%d of %d scans (must be 0), rg counted %ld matching lines%s (-1: rg is not installed; "
		     "scripts/deps --bench installs it). \"vs rg\" is "
		     "rg's time over the guard's (above 1: the guard is faster). rg runs the same "
		     "content regexes (the path checks are C, not regexes) with (?-u) so bytes "
		     "match as Hyperscan sees them. Python: %d .py files of " PY_STDLIB " (%.1f MB, "
		     "%d left out as blocked, must be 0), %d of %d scans blocked (must be 0). "
		     "Load average at the end (2 vCPUs, shared): %s.\n", RUNS, compile_s * 1e3, kept, dropped,
		     (double)src.len / 1048576.0, blocked, 2 * RUNS, rg_lines,
		     rg_ok ? "" : " (rg failed: see its output)", py_kept,
		     (double)py.len / 1048576.0, py_dropped, py_blocked, py.len ? 2 * RUNS : 0, load);
	write_section(sec.data);
	fputs(sec.data, stdout);
	(void)m;
	cof_buf_release(&sec);
	cof_buf_release(&src);
	free(text);
	cof_buf_release(&py);
	return blocked || py_blocked ? 1 : 0;
}
