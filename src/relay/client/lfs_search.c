/*
 * lfs_search.c — search_files over the connected folder (localfs.h): a walk
 * with openat/fdopendir that never follows a symlink, skips excluded paths,
 * binary files and files over the size limit, and matches lines with PCRE2 as
 * the agent's grep does (src/agent/search.c), under the same regex limits and
 * time budget (util/regex.h): past one the search fails with COF_ETOOLARGE
 * naming the limit, the file and the line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include "util/regex.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "relay/client/lfs_int.h"

typedef struct lfs_search {
	cof_lfs *fs;
	cof_regex rx;
	const char *glob;   /* NULL = every file */
	size_t root_len;    /* bytes of the searched folder's path plus its '/' */
	int64_t max;
	int truncated;
	json_t *results;
	cof_err *err;
} lfs_search;

/* A glob without '/' matches the file name alone, at any depth (as ripgrep's
 * --glob and .gitignore do); one with '/' the path under the searched folder. */
static int lfs_glob_hits(const char *glob, const char *rel)
{
	const char *base = strrchr(rel, '/');

	if (!strchr(glob, '/'))
		return cof_glob_match(glob, base ? base + 1 : rel);
	return cof_glob_match(glob, rel);
}

/* Appends the matching lines of one text file; sets truncated past max.
 * Returns -1 with s->err set when the answer could not grow (out of memory)
 * or a regex limit stopped the search. */
static int lfs_grep(lfs_search *s, const char *file, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int64_t line = 1;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		int hit = cof_regex_match(&s->rx, p, n);
		if (hit < 0) {
			char lim[96];
			return cof_error(s->err, COF_ETOOLARGE,
					 "search_files stopped at %s on '%.300s' line %lld; use a "
					 "simpler pattern (nested or overlapping repeats such as "
					 "(a|aa)+ backtrack without end) or a narrower path or glob",
					 cof_regex_limit(&s->rx, lim, sizeof lim), file,
					 (long long)line);
		}
		if (hit) {
			if ((int64_t)json_array_size(s->results) >= s->max) {
				s->truncated = 1;
				return 0;
			}
			size_t cut = n > COF_LFS_LINE_MAX ? COF_LFS_LINE_MAX : n;
			while (cut < n && cut > 0 && ((unsigned char)p[cut] & 0xC0) == 0x80)
				cut--; /* not inside a UTF-8 sequence */
			if (json_array_append_new(s->results, json_pack(
				    "{s:s, s:I, s:s%}", "file", file, "line", (json_int_t)line,
				    "content", p, cut)))
				return cof_error(s->err, COF_EINTERNAL, "out of memory");
		}
		line++;
		p += n + 1;
	}
	return 0;
}

/* Searches the regular file `name` in the folder open at `dfd`. Files that
 * vanish, turn out not regular, are over the size limit or binary are
 * skipped quietly: a search answers what it could read. */
static int lfs_search_file(lfs_search *s, int dfd, const char *name, const char *rel)
{
	unsigned char *d;
	size_t n;
	cof_err e = {0};
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return 0;
	if (cof_lfs_read_fd(s->fs, fd, rel, &d, &n, &e)) {
		close(fd);
		cof_err_clear(&e);
		return 0;
	}
	close(fd);
	int rc = 0;
	if (!memchr(d, '\0', n) && cof_utf8_valid((char *)d, n))
		rc = lfs_grep(s, rel, (char *)d, n);
	free(d);
	return rc;
}

/* Walks the folder open at `dfd` (consumed) whose path is `dir`, in name
 * order, never following a symlink: folders are opened with O_NOFOLLOW from
 * their parent, and a name that is a symlink is skipped. */
static int lfs_search_dir(lfs_search *s, int dfd, const char *dir, int depth)
{
	lfs_name **names;
	size_t n;
	int keep = dup(dfd), rc = 0;
	cof_buf rel = COF_BUF_INIT;

	if (keep < 0) {
		close(dfd);
		return 0;
	}
	if (cof_lfs_names(dfd, &names, &n)) {
		close(keep);
		return errno == ENOMEM ? -1 : 0;
	}
	for (size_t i = 0; i < n && !s->truncated && rc == 0; i++) {
		const char *name = names[i]->name, *r = cof_lfs_join(&rel, dir, name);
		unsigned char type = names[i]->type;
		struct stat st;

		if (!r) {
			rc = -1;
			break;
		}
		/* readdir's type saves a stat per file; the open below uses O_NOFOLLOW
		 * and the read checks S_ISREG on the fd, so a swap meanwhile is harmless. */
		if (type == DT_UNKNOWN) {
			if (fstatat(keep, name, &st, AT_SYMLINK_NOFOLLOW))
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
		}
		if (type == DT_DIR) {
			if (depth >= COF_LFS_DEPTH_MAX || cof_lfs_excluded(s->fs, r, 1))
				continue;
			int sub = openat(keep, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				char *copy = cof_strdup(r);
				rc = copy ? lfs_search_dir(s, sub, copy, depth + 1) : -1;
				free(copy);
				if (!copy)
					close(sub);
			}
		} else if (type == DT_REG) {
			if (cof_lfs_excluded(s->fs, r, 0) ||
			    (s->glob && !lfs_glob_hits(s->glob, r + s->root_len)))
				continue;
			rc = lfs_search_file(s, keep, name, r);
		}
	}
	close(keep);
	cof_lfs_names_free(names, n);
	cof_buf_release(&rel);
	return rc;
}

int cof_lfs_search(cof_lfs *fs, const char *path, const char *pattern, const char *glob,
		   int64_t max, json_t **out, cof_err *err)
{
	lfs_search s = {.fs = fs, .glob = glob, .err = err};
	int dfd, rc = -1;

	if (!pattern || !pattern[0])
		return cof_error(err, COF_EVALIDATION, "'pattern' is empty");
	if (glob && cof_glob_check(glob, err))
		return -1;
	if (cof_lfs_excluded(fs, path, 1))
		return cof_error(err, COF_EFORBIDDEN, "'%.300s' is excluded", path);
	s.max = max <= 0 || max > fs->limits.search_results ? fs->limits.search_results : max;
	s.root_len = path[0] ? strlen(path) + 1 : 0;
	if (cof_regex_open(&s.rx, pattern, 0, 0, err)) {
		cof_regex_close(&s.rx);
		return -1;
	}
	s.results = json_array();
	if (!s.results) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto done;
	}
	dfd = cof_lfs_open_beneath(fs, fs->dirfd, path, O_RDONLY | O_DIRECTORY, 0);
	if (dfd < 0 && errno == ENOTDIR && path[0]) {
		/* The path names one file: search it alone (with the same checks). */
		if (cof_lfs_excluded(fs, path, 0)) {
			cof_error(err, COF_EFORBIDDEN, "'%.300s' is excluded", path);
			goto done;
		}
		int fd = cof_lfs_open_beneath(fs, fs->dirfd, path, O_RDONLY | O_NONBLOCK, 0);
		unsigned char *d;
		size_t n;
		if (fd < 0) {
			cof_lfs_errno(errno, path, err);
			goto done;
		}
		const char *slash = strrchr(path, '/');
		s.root_len = slash ? (size_t)(slash - path) + 1 : 0;
		int bad = cof_lfs_read_fd(fs, fd, path, &d, &n, err);
		close(fd);
		if (bad)
			goto done;
		if ((!s.glob || lfs_glob_hits(s.glob, path + s.root_len)) && !memchr(d, '\0', n) &&
		    cof_utf8_valid((char *)d, n) && lfs_grep(&s, path, (char *)d, n)) {
			free(d);
			cof_error(err, COF_EINTERNAL, "out of memory");
			goto done;
		}
		free(d);
	} else if (dfd < 0) {
		cof_lfs_errno(errno, path[0] ? path : ".", err);
		goto done;
	} else if (lfs_search_dir(&s, dfd, path, 0)) {
		cof_error(err, COF_EINTERNAL, "out of memory");
		goto done;
	}
	*out = json_pack("{s:O, s:b}", "results", s.results, "truncated", s.truncated);
	rc = *out ? 0 : cof_error(err, COF_EINTERNAL, "out of memory");
done:
	json_decref(s.results);
	cof_regex_close(&s.rx);
	return rc;
}
