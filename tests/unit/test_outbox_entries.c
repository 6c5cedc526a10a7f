/*
 * test_outbox_entries.c — src/turn/outbox.c against every kind of entry an
 * untrusted call can leave in its outbox: symlinks (to files and folders
 * outside), FIFOs, sockets, folders (locked, deep), hard links, leased and
 * growing files; a read-only outbox, a failing keep folder; one note per
 * entry, capped. After every collection the outbox must be empty.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "outbox_fx.h"

/* ------------------------------------------------------ kinds of entries */

static void test_symlink_to_file_outside(void **state)
{
	fx *f = *state;
	char target[400];
	struct stat st;

	puts_(f->outside, "secret.csv", "secret\n");
	snprintf(target, sizeof target, "%s/outside/secret.csv", f->root);
	assert_int_equal(symlinkat(target, f->outbox, "link.csv"), 0);
	assert_int_equal(symlinkat("../outside/secret.csv", f->outbox, "rel.csv"), 0);
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 0);
	note_with(f, "not attached 'link.csv': not a regular file (symbolic link)");
	note_with(f, "not attached 'rel.csv': not a regular file (symbolic link)");
	/* The target is untouched. */
	assert_int_equal(fstatat(f->outside, "secret.csv", &st, 0), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(kept_size(f, "link.csv"), -1);
}

/* A link to a folder outside is unlinked, never descended into. */
static void test_symlink_to_folder_outside(void **state)
{
	fx *f = *state;
	char target[400];

	assert_int_equal(mkdirat(f->outside, "dir", 0700), 0);
	int d = openat(f->outside, "dir", O_RDONLY | O_DIRECTORY);
	puts_(d, "keepme", "x");
	snprintf(target, sizeof target, "%s/outside/dir", f->root);
	assert_int_equal(symlinkat(target, f->outbox, "d"), 0);
	assert_int_equal(mkdirat(f->outbox, "sub", 0700), 0);
	int s = openat(f->outbox, "sub", O_RDONLY | O_DIRECTORY);
	assert_int_equal(symlinkat(target, s, "inner"), 0);
	close(s);
	run(f, 2);
	note_with(f, "not attached 'd': not a regular file (symbolic link)");
	assert_int_equal(count_entries(d), 1);
	close(d);
}

static void test_fifo_no_hang(void **state)
{
	fx *f = *state;

	assert_int_equal(mkfifoat(f->outbox, "pipe.csv", 0600), 0);
	run(f, 1);
	note_with(f, "not attached 'pipe.csv': not a regular file (FIFO)");
}

static void test_socket(void **state)
{
	fx *f = *state;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	int w = snprintf(a.sun_path, sizeof a.sun_path, "%.90s/outbox/s.png", f->root);
	assert_true(w > 0 && (size_t)w < sizeof a.sun_path);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s, 1), 0);
	run(f, 1);
	close(s);
	note_with(f, "not attached 's.png': not a regular file (socket)");
}

/* A folder (with files, a link out, a locked subfolder) is removed whole. */
static void test_folder_removed_recursively(void **state)
{
	fx *f = *state;

	assert_int_equal(mkdirat(f->outbox, "d.png", 0700), 0);
	int d = openat(f->outbox, "d.png", O_RDONLY | O_DIRECTORY);
	put(d, "inner.png", png1x1, sizeof png1x1);
	assert_int_equal(mkdirat(d, "locked", 0700), 0);
	int l = openat(d, "locked", O_RDONLY | O_DIRECTORY);
	puts_(l, "x", "x");
	assert_int_equal(mkfifoat(l, "p", 0600), 0);
	assert_int_equal(symlinkat("/", l, "root"), 0);
	close(l);
	assert_int_equal(fchmodat(d, "locked", 0, 0), 0);
	assert_int_equal(fchmod(d, 0500), 0);
	close(d);
	run(f, 1);
	note_with(f, "not attached 'd.png': not a regular file (folder)");
	assert_int_equal(json_array_size(f->files), 0);
	assert_int_equal(count_entries(f->outside), 0);
}

/* A tree deeper than can be held open at once is still removed. */
static void test_folder_deep(void **state)
{
	fx *f = *state;
	int d = dup(f->outbox);

	for (int i = 0; i < 300; i++) {
		assert_int_equal(mkdirat(d, i ? "d" : "deep", 0700), 0);
		int n = openat(d, i ? "d" : "deep", O_RDONLY | O_DIRECTORY);
		close(d);
		d = n;
	}
	puts_(d, "bottom.png", "x");
	close(d);
	run(f, 1);
	note_with(f, "not attached 'deep': not a regular file (folder)");
}

/* A hard link to a file outside is kept as a copy (its bytes are whatever
 * the call could read anyway); only the link is removed, the file outside
 * stays as it was. */
static void test_hard_link_kept_as_copy(void **state)
{
	fx *f = *state;
	struct stat st;

	put(f->outside, "orig.png", png1x1, sizeof png1x1);
	assert_int_equal(linkat(f->outside, "orig.png", f->outbox, "hl.png", 0), 0);
	run(f, 1);
	note_with(f, "attached hl.png (image/png, 67 bytes)");
	assert_int_equal(fstatat(f->outside, "orig.png", &st, 0), 0);
	assert_int_equal(st.st_size, 67);
	assert_int_equal(st.st_nlink, 1);
	struct stat kst;
	assert_int_equal(fstatat(f->keep, "hl.png", &kst, 0), 0);
	assert_true(kst.st_ino != st.st_ino); /* a copy, not another link */
}

/* A name already in the keep folder is not overwritten (O_EXCL). */
static void test_keep_never_overwritten(void **state)
{
	fx *f = *state;

	puts_(f->keep, "a.csv", "old");
	puts_(f->outbox, "a.csv", "new,data\n");
	run(f, 1);
	note_with(f, "not attached 'a.csv': a file of that name is already attached");
	assert_int_equal(kept_size(f, "a.csv"), 3);
}

/* The server failing to store a copy is an error of its own (-1), and the
 * outbox is emptied all the same. */
static void test_keep_failure_is_server_error(void **state)
{
	fx *f = *state;
	cof_err err = {0};

	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	puts_(f->outbox, "b.gif", "x");
	assert_int_equal(cof_outbox_collect(f->outbox, -1, &f->rules, &f->files, &f->notes,
					    &err), -1);
	assert_int_equal(err.code, COF_EINTERNAL);
	assert_non_null(strstr(err.msg, "cannot keep outbox file 'a.png'"));
	assert_int_equal(count_entries(f->outbox), 0);
	assert_int_equal(json_array_size(f->files), 0);
	assert_int_equal(json_array_size(f->notes), 2);
	note_with(f, "not attached 'a.png': the server could not store it");
	cof_err_clear(&err);
}

/* A call that took its own write permission away from the outbox. */
static void test_outbox_read_only(void **state)
{
	fx *f = *state;

	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	puts_(f->outbox, "b.txt", "x");
	assert_int_equal(fchmod(f->outbox, 0500), 0);
	run(f, 2);
	assert_int_equal(json_array_size(f->files), 1);
}

/* A file held by a write lease: opening it would wait for the lease to be
 * broken (up to lease-break-time, 45 s); O_NONBLOCK refuses at once. */
static void test_leased_file_not_waited_for(void **state)
{
	fx *f = *state;

	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	/* The lease holder (here: us) is told of the break by SIGIO. */
	void (*old)(int) = signal(SIGIO, SIG_IGN);
	int fd = openat(f->outbox, "a.png", O_WRONLY);
	assert_true(fd >= 0);
	if (fcntl(fd, F_SETLEASE, F_WRLCK) != 0)
		fail_msg("F_SETLEASE: %s", strerror(errno));
	time_t t0 = time(NULL);
	run(f, 1);
	assert_true(time(NULL) - t0 < 30);
	note_with(f, "not attached 'a.png': it is held by another process (a lease); "
		     "not waited for");
	close(fd);
	signal(SIGIO, old);
}

/* The outbox fd for on_sigio, which makes an entry while collection runs. */
static int late_dir = -1;

static void on_sigio(int sig)
{
	(void)sig;
	int fd = openat(late_dir, "late.csv", O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd >= 0)
		close(fd);
}

/* An entry that appears while the outbox is collected (here: made by the
 * SIGIO that the collector's open of a leased file sends to its holder, us)
 * is removed too, never kept, with a note of its own. */
static void test_entry_appearing_during_collection(void **state)
{
	fx *f = *state;

	late_dir = f->outbox;
	void (*old)(int) = signal(SIGIO, on_sigio);
	put(f->outbox, "a.png", png1x1, sizeof png1x1);
	int fd = openat(f->outbox, "a.png", O_WRONLY);
	assert_int_equal(fcntl(fd, F_SETLEASE, F_WRLCK), 0);
	run(f, 2);
	close(fd);
	signal(SIGIO, old);
	eq_note(f, 0, "not attached 'a.png': it is held by another process (a lease); "
		      "not waited for");
	eq_note(f, 1, "not attached 'late.csv': it appeared while the outbox was being "
		      "collected");
	assert_int_equal(json_array_size(f->files), 0);
}

typedef struct grower {
	int fd;
	volatile int stop;
	long written;
} grower;

static void *grow(void *arg)
{
	grower *g = arg;
	static char chunk[65536];

	while (!g->stop) {
		ssize_t w = write(g->fd, chunk, sizeof chunk);
		if (w <= 0)
			break;
		g->written += w;
		if (g->written > 64L * MB) /* enough: the file is unlinked by now */
			break;
	}
	return NULL;
}

/* A file appended to while it is collected: read at most 4 MB + 1 bytes,
 * judged on those, never hung on. */
static void test_growing_file_bounded(void **state)
{
	fx *f = *state;
	grower g = {0};
	pthread_t t;

	put_png(f->outbox, "grow.png", MB);
	g.fd = openat(f->outbox, "grow.png", O_WRONLY | O_APPEND);
	assert_true(g.fd >= 0);
	assert_int_equal(pthread_create(&t, NULL, grow, &g), 0);
	while (g.written < 4L * MB) /* the file is past the limit before we start */
		usleep(1000);
	run(f, 1);
	g.stop = 1;
	pthread_join(t, NULL);
	close(g.fd);
	assert_int_equal(kept_size(f, "grow.png"), -1);
	note_with(f, "not attached 'grow.png': more than 4 MiB; the limit is 4 MiB a file");
}

/* A file that grows just under the limit may be kept; the copy is never
 * over the limit and is what was judged. */
static void test_growing_file_copy_judged(void **state)
{
	fx *f = *state;
	grower g = {0};
	pthread_t t;

	put_png(f->outbox, "g.png", 8);
	g.fd = openat(f->outbox, "g.png", O_WRONLY | O_APPEND);
	assert_int_equal(pthread_create(&t, NULL, grow, &g), 0);
	run(f, 1);
	g.stop = 1;
	pthread_join(t, NULL);
	close(g.fd);
	long k = kept_size(f, "g.png");
	assert_true(k <= COF_OUTBOX_FILE_MAX);
	if (k >= 0) {
		assert_int_equal(json_integer_value(json_object_get(
					 json_array_get(f->files, 0), "size")), k);
	} else {
		note_with(f, "not attached 'g.png': more than 4 MiB");
	}
}

/* ------------------------------------------------------------------ notes */

static void test_one_note_per_entry(void **state)
{
	fx *f = *state;

	put(f->outbox, "ok.png", png1x1, sizeof png1x1);
	puts_(f->outbox, "bad.png", "no");
	puts_(f->outbox, ".dot", "x");
	assert_int_equal(mkdirat(f->outbox, "dir", 0700), 0);
	assert_int_equal(mkfifoat(f->outbox, "f.csv", 0600), 0);
	assert_int_equal(symlinkat("/etc/passwd", f->outbox, "l.csv"), 0);
	run(f, 6);
	/* Sorted bytewise: ".dot" < "bad.png" < "dir" < "f.csv" < "l.csv" < "ok.png" */
	assert_non_null(strstr(json_string_value(json_array_get(f->notes, 0)), "'.dot'"));
	assert_non_null(strstr(json_string_value(json_array_get(f->notes, 5)), "ok.png"));
}

static void test_notes_capped(void **state)
{
	fx *f = *state;
	char n[32];

	for (int i = 0; i < COF_OUTBOX_NOTES_MAX + 6; i++) {
		snprintf(n, sizeof n, "f%03d.gif", i);
		puts_(f->outbox, n, "x");
	}
	put(f->outbox, "z.png", png1x1, sizeof png1x1);
	run(f, COF_OUTBOX_NOTES_MAX + 2);
	note_with(f, "attached z.png");
	note_with(f, "not attached 6 more entries (only the first 64 refusals are listed)");
}

static void test_empty_outbox(void **state)
{
	fx *f = *state;

	run(f, 0);
	assert_int_equal(json_array_size(f->files), 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_symlink_to_file_outside),
		T(test_symlink_to_folder_outside),
		T(test_fifo_no_hang),
		T(test_socket),
		T(test_folder_removed_recursively),
		T(test_folder_deep),
		T(test_hard_link_kept_as_copy),
		T(test_keep_never_overwritten),
		T(test_keep_failure_is_server_error),
		T(test_outbox_read_only),
		T(test_leased_file_not_waited_for),
		T(test_entry_appearing_during_collection),
		T(test_growing_file_bounded),
		T(test_growing_file_copy_judged),
		T(test_one_note_per_entry),
		T(test_notes_capped),
		T(test_empty_outbox),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
