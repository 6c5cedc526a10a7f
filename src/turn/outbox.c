/*
 * outbox.c — takes every entry out of a call's $OUTBOX and keeps the files
 * that pass the rules (outbox_check.c has the pure checks).
 *
 * The outbox belongs to untrusted code, which may have left anything there and
 * may (in principle) still be changing it. So every step works on file
 * descriptors relative to the outbox's own: no path is ever resolved, no
 * symlink followed (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), nothing but a regular
 * file is opened (lstat first, O_NONBLOCK so even a swapped-in FIFO cannot
 * block, fstat after open compared with the lstat), and a file's bytes are
 * read once, at most COF_OUTBOX_FILE_MAX + 1 of them, and judged as read.
 * Folders are removed depth first with one descriptor per level; below
 * DEEP_MAX levels a subtree is moved up into the outbox and taken apart on a
 * later pass, so any depth is removed with a bounded number of descriptors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "turn/outbox.h"
#include "util/util.h"

#define DEEP_MAX 32              /* folder levels removed in one go */
#define DEEP_PREFIX ".cof-deep-" /* subtrees moved up to be removed later */
#define SWEEPS_MAX 100000        /* passes over the outbox after the first */

typedef struct collect {
	int outbox_fd, keep_fd;
	unsigned types;
	int kept, files_left;
	int64_t bytes_left;
	int refusals, omitted;   /* refusal notes written, and left out past the cap */
	unsigned deep_seq;
	json_t *files, *notes;
	cof_err err[1];          /* the server's own failures; the first one wins */
} collect;

/* A note for an entry not attached; past COF_OUTBOX_NOTES_MAX only counted. */
__attribute__((format(printf, 2, 3)))
static void refuse(collect *c, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	if (c->refusals >= COF_OUTBOX_NOTES_MAX) {
		c->omitted++;
		return;
	}
	c->refusals++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_array_append_new(c->notes, json_string(msg));
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in the folder open at fd (without . and ..), sorted bytewise.
 * -1 with errno when the folder cannot be read or memory runs out. */
static int names_list(int fd, char ***out, size_t *n)
{
	int dfd = dup(fd);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	char **v = NULL;
	size_t cap = 0;
	struct dirent *e;
	int saved;

	*n = 0;
	if (!d) {
		saved = errno;
		if (dfd >= 0)
			close(dfd);
		errno = saved;
		return -1;
	}
	rewinddir(d);
	while ((errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n == cap) {
			char **nv = cof_realloc(v, (cap = cap ? cap * 2 : 16) * sizeof *v);
			v = nv;
		}
		if (!(v[*n] = cof_strdup(e->d_name)))
			goto fail;
		(*n)++;
	}
	if (errno)
		goto fail;
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof *v, cmp_names);
	*out = v;
	return 0;
fail:
	saved = errno ? errno : ENOMEM;
	closedir(d);
	names_free(v, *n);
	*n = 0;
	errno = saved;
	return -1;
}

static void remove_entry(collect *c, int dirfd, const char *name, int depth);

/* Moves the folder `name` (in dirfd) up into the outbox under a fresh name,
 * to be removed by a later pass with fresh descriptors. */
static void move_up(collect *c, int dirfd, const char *name)
{
	char fresh[64];

	for (int tries = 0; tries < 100; tries++) {
		snprintf(fresh, sizeof fresh, DEEP_PREFIX "%u", c->deep_seq++);
		if (renameat2(dirfd, name, c->outbox_fd, fresh, RENAME_NOREPLACE) == 0 ||
		    errno != EEXIST)
			return;
	}
}

/* Removes every entry of the folder open at fd, at `depth` below the outbox. */
static void empty_folder(collect *c, int fd, int depth)
{
	char **names;
	size_t n;

	if (names_list(fd, &names, &n)) {
		cof_error(c->err, COF_EINTERNAL, "cannot read a folder in the outbox: %s",
			  strerror(errno));
		return;
	}
	for (size_t i = 0; i < n; i++)
		remove_entry(c, fd, names[i], depth);
	names_free(names, n);
}

/* Removes the folder `name` of dirfd and all below it, never following a
 * symlink: it is opened with O_NOFOLLOW|O_DIRECTORY, so a folder swapped for
 * a link is simply unlinked. A folder without write or search permission for
 * its owner (us) is given them first. */
static void remove_folder(collect *c, int dirfd, const char *name, int depth)
{
	struct stat st;
	int fd;

	if (depth >= DEEP_MAX) {
		move_up(c, dirfd, name);
		return;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES &&
	    fchmodat(dirfd, name, S_IRWXU, AT_SYMLINK_NOFOLLOW) == 0)
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			unlinkat(dirfd, name, 0);
		else if (errno != ENOENT)
			cof_error(c->err, COF_EINTERNAL, "cannot open a folder in the outbox: %s",
				  strerror(errno));
		return;
	}
	if (fstat(fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU)
		fchmod(fd, st.st_mode | S_IRWXU);
	/* Removal while reading a folder may skip entries: go again while the
	 * folder is not yet empty (and shrinking). */
	for (int pass = 0; pass < 8; pass++) {
		empty_folder(c, fd, depth + 1);
		if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			break;
		if (errno != ENOTEMPTY && errno != EEXIST) {
			cof_error(c->err, COF_EINTERNAL, "cannot remove a folder in the outbox: %s",
				  strerror(errno));
			break;
		}
	}
	close(fd);
}

/* Removes the entry `name` of dirfd, whatever it is. */
static void remove_entry(collect *c, int dirfd, const char *name, int depth)
{
	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return;
	if (errno == EISDIR)
		remove_folder(c, dirfd, name, depth);
	else
		cof_error(c->err, COF_EINTERNAL, "cannot remove an entry of the outbox: %s",
			  strerror(errno));
}

/* What an lstat mode is, for a note. */
static const char *kind_name(mode_t m)
{
	if (S_ISLNK(m)) return "symbolic link";
	if (S_ISDIR(m)) return "folder";
	if (S_ISFIFO(m)) return "FIFO";
	if (S_ISSOCK(m)) return "socket";
	if (S_ISCHR(m) || S_ISBLK(m)) return "device";
	return "special file";
}

/* Reads at most max bytes of fd into a new buffer (*len bytes); -1 with errno. */
static int read_bounded(int fd, size_t max, unsigned char **out, size_t *len)
{
	unsigned char *b = cof_malloc(max ? max : 1);
	size_t n = 0;

	if (!b)
		return -1;
	while (n < max) {
		ssize_t r = read(fd, b + n, max - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int saved = errno;
			free(b);
			errno = saved;
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = b;
	*len = n;
	return 0;
}

/* Writes the copy into the keep folder under `name`, O_EXCL. 0, 1 when the
 * name is taken there, -1 (err set) when the server cannot store it. */
static int keep_write(collect *c, const char *name, const unsigned char *b, size_t n)
{
	int fd = openat(c->keep_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	size_t off = 0;

	if (fd < 0 && errno == EEXIST)
		return 1;
	if (fd < 0)
		return cof_error(c->err, COF_EINTERNAL, "cannot keep outbox file '%s': %s", name,
				 strerror(errno));
	while (off < n) {
		ssize_t w = write(fd, b + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (off < n || close(fd) != 0) {
		int saved = errno ? errno : EIO;
		if (off < n)
			close(fd);
		unlinkat(c->keep_fd, name, 0);
		return cof_error(c->err, COF_EINTERNAL, "cannot keep outbox file '%s': %s", name,
				 strerror(saved));
	}
	return 0;
}

/* Opens the regular file `name` that lstat saw as `seen`: O_NOFOLLOW so a
 * swapped-in link fails, O_NONBLOCK so a swapped-in FIFO cannot block, and
 * fstat after open must show the same regular file. -1 with a note made. */
static int open_checked(collect *c, const char *name, const char *q, const struct stat *seen)
{
	struct stat st;
	int fd = openat(c->outbox_fd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ELOOP)
			refuse(c, "not attached '%s': not a regular file (symbolic link)", q);
		else if (errno == EWOULDBLOCK)
			refuse(c, "not attached '%s': it is held by another process (a lease); "
				  "not waited for", q);
		else if (errno == EACCES)
			refuse(c, "not attached '%s': it cannot be read (permission denied)", q);
		else
			refuse(c, "not attached '%s': it cannot be opened (%s)", q, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_dev != seen->st_dev ||
	    st.st_ino != seen->st_ino) {
		close(fd);
		refuse(c, "not attached '%s': it changed while it was being checked", q);
		return -1;
	}
	return fd;
}

/* Reads, judges and keeps (or not) the regular file `name` of type `type`. */
static void take_file(collect *c, const char *name, const char *q, unsigned type,
		      const struct stat *seen)
{
	char a[32], b[32];
	unsigned char *buf = NULL;
	size_t n = 0;
	const char *why;
	int fd = open_checked(c, name, q, seen), rc;

	if (fd < 0)
		return;
	rc = read_bounded(fd, (size_t)COF_OUTBOX_FILE_MAX + 1, &buf, &n);
	close(fd);
	if (rc) {
		refuse(c, "not attached '%s': it cannot be read (%s)", q, strerror(errno));
		return;
	}
	cof_size_fmt(COF_OUTBOX_FILE_MAX, a, sizeof a);
	if (n > (size_t)COF_OUTBOX_FILE_MAX) {
		refuse(c, "not attached '%s': more than %s; the limit is %s a file", q, a, a);
	} else if ((int64_t)n > c->bytes_left) {
		cof_size_fmt(c->bytes_left > 0 ? c->bytes_left : 0, a, sizeof a);
		cof_size_fmt(COF_OUTBOX_TURN_BYTES, b, sizeof b);
		refuse(c, "not attached '%s': %zu bytes, and the turn may return only %s more "
			  "(at most %s a turn)", q, n, a, b);
	} else if ((why = cof_outbox_content_check(type, buf, n))) {
		refuse(c, "not attached '%s': %s", q, why);
	} else if ((rc = keep_write(c, name, buf, n)) == 1) {
		refuse(c, "not attached '%s': a file of that name is already attached", q);
	} else if (rc < 0) {
		refuse(c, "not attached '%s': the server could not store it", q);
	} else {
		char note[200];
		const char *media = cof_outbox_media_type(type);
		json_t *f = json_pack("{s:s, s:s, s:I}", "name", name, "mediaType", media,
				      "size", (json_int_t)n);
		json_array_append_new(c->files, f);
		snprintf(note, sizeof note, "attached %s (%s, %zu bytes) to the answer", name,
			 media, n);
		json_array_append_new(c->notes, json_string(note));
		c->kept++, c->files_left--, c->bytes_left -= (int64_t)n;
	}
	free(buf);
}

/* Judges one entry of the first pass (it is removed afterwards, whatever it is). */
static void judge(collect *c, const char *name)
{
	char q[COF_OUTBOX_NAME_MAX * 4 + 8], allowed[64];
	size_t len = strlen(name);
	struct stat st;
	unsigned type;

	cof_outbox_name_quote(name, len, q, sizeof q);
	if (!cof_outbox_name_ok(name, len)) {
		refuse(c, "not attached '%s': names must match " COF_OUTBOX_NAME_RE, q);
		return;
	}
	if (fstatat(c->outbox_fd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		refuse(c, "not attached '%s': it vanished while it was being checked", q);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		refuse(c, "not attached '%s': not a regular file (%s)", q, kind_name(st.st_mode));
		return;
	}
	type = cof_outbox_name_type(name, len);
	cof_outbox_types_fmt(c->types, allowed, sizeof allowed);
	if (!type || !(type & c->types)) {
		const char *dot = strrchr(name, '.');
		if (dot && dot[1])
			refuse(c, "not attached '%s': %s files are not returned; allowed: %s", q,
			       dot, allowed);
		else
			refuse(c, "not attached '%s': it has no extension; allowed: %s", q, allowed);
		return;
	}
	if (c->kept >= COF_OUTBOX_CALL_FILES) {
		refuse(c, "not attached '%s': at most %d files come back per call", q,
		       COF_OUTBOX_CALL_FILES);
		return;
	}
	if (c->files_left <= 0) {
		refuse(c, "not attached '%s': a turn returns at most %d files, and this one "
			  "has no more left", q, COF_OUTBOX_TURN_FILES);
		return;
	}
	take_file(c, name, q, type, &st);
}

/* Later passes: whatever is in the outbox now appeared during the collection
 * (or is a deep subtree moved up); it is removed, never kept. 1 if the
 * outbox was empty. */
static int sweep(collect *c)
{
	char **names, q[COF_OUTBOX_NAME_MAX * 4 + 8];
	size_t n;

	if (names_list(c->outbox_fd, &names, &n)) {
		cof_error(c->err, COF_EINTERNAL, "cannot read the outbox: %s", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (strncmp(names[i], DEEP_PREFIX, strlen(DEEP_PREFIX))) {
			cof_outbox_name_quote(names[i], strlen(names[i]), q, sizeof q);
			refuse(c, "not attached '%s': it appeared while the outbox was being "
				  "collected", q);
		}
		remove_entry(c, c->outbox_fd, names[i], 0);
	}
	names_free(names, n);
	return n == 0;
}

int cof_outbox_collect(int outbox_fd, int keep_fd, const cof_outbox_rules *rules,
		       json_t **files, json_t **notes, cof_err *err)
{
	collect c = {
		.outbox_fd = outbox_fd, .keep_fd = keep_fd, .types = rules->types,
		.files_left = rules->turn_files_left, .bytes_left = rules->turn_bytes_left,
		.files = json_array(), .notes = json_array(),
	};
	char **names;
	size_t n;
	struct stat st;
	int empty = 0;

	*files = c.files;
	*notes = c.notes;
	/* The call may have taken our write permission away from its outbox. */
	if (fstat(outbox_fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU)
		fchmod(outbox_fd, st.st_mode | S_IRWXU);
	if (!c.files || !c.notes)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (names_list(outbox_fd, &names, &n))
		return cof_error(err, COF_EINTERNAL, "cannot read the outbox: %s",
				 strerror(errno));
	for (size_t i = 0; i < n; i++) {
		judge(&c, names[i]);
		remove_entry(&c, outbox_fd, names[i], 0);
	}
	names_free(names, n);
	/* Sweep until empty; a failure to remove something stops it (it would
	 * fail again on every pass). */
	for (int pass = 0; pass < SWEEPS_MAX && !empty && c.err->code == COF_OK; pass++)
		empty = sweep(&c);
	if (c.omitted) {
		char note[120];
		snprintf(note, sizeof note, "not attached %d more entries (only the first %d "
			 "refusals are listed)", c.omitted, COF_OUTBOX_NOTES_MAX);
		json_array_append_new(c.notes, json_string(note));
	}
	if (!empty)
		cof_error(c.err, COF_EINTERNAL, "the outbox could not be emptied");
	if (c.err->code == COF_OK)
		return 0;
	return cof_error(err, c.err->code, "%s", c.err->msg);
}
