/*
 * test_view_layer.c — the layer's folders (src/view/layer.c, vfold): a
 * folder's count of nodes beneath it that are not removed follows every
 * change of kind, so "is it empty" is one lookup, and a folder's names come
 * from its own nodes and folders, never from a walk of every node (an
 * `rm -rf` of 10,000 files asked that 10,000 times). The volume under the
 * layer is empty here (a source that finds nothing).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "view/view_int.h"

static int no_entry(cof_vfs *v, int root, const char *vpath, int64_t at, cof_entry *e)
{
	return 0;
}

static cof_vsrc_ops empty_ops = {.entry = no_entry};
static cof_view_src empty_src = {&empty_ops};

static cof_vfs *view(void)
{
	cof_vfs *v = calloc(1, sizeof *v);

	assert_non_null(v);
	v->o.src = &empty_src;
	v->o.nroots = 2;
	return v;
}

static vnode *made(cof_vfs *v, int root, const char *path, vnode_kind k)
{
	vnode *n = cof_vnode_get(v, root, path);

	assert_non_null(n);
	cof_vnode_set(v, n, k);
	return n;
}

typedef struct seen {
	char names[16][64];
	int shown[16];
	int n;
} seen;

static void take(void *ctx, const char *name, int shown)
{
	seen *s = ctx;

	assert_true(s->n < 16);
	snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
	s->shown[s->n++] = shown;
}

/* Whether `name` came, shown or not (-1: not at all). */
static int came(const seen *s, const char *name)
{
	int r = -1;

	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name))
			r = r > 0 ? r : s->shown[i];
	return r;
}

static void test_counts_follow_kinds(void **state)
{
	cof_vfs *v = view();
	vnode *f = made(v, 0, "a/b/c/f.txt", N_FILE);

	assert_true(cof_vnode_under(v, 0, ""));
	assert_true(cof_vnode_under(v, 0, "a"));
	assert_true(cof_vnode_under(v, 0, "a/b/c"));
	assert_false(cof_vnode_under(v, 0, "a/b/c/f.txt"));
	assert_false(cof_vnode_under(v, 0, "x"));
	assert_false(cof_vnode_under(v, 1, "a")); /* another root */
	/* "a/bb" is no folder of "a/b" */
	assert_false(cof_vnode_under(v, 0, "a/bb"));
	made(v, 0, "a/b/g.txt", N_FILE);
	cof_vnode_set(v, f, N_GONE);
	assert_false(cof_vnode_under(v, 0, "a/b/c"));
	assert_true(cof_vnode_under(v, 0, "a/b"));
	/* the same kind again changes no count */
	cof_vnode_set(v, f, N_GONE);
	assert_false(cof_vnode_under(v, 0, "a/b/c"));
	cof_vnode_set(v, f, N_FILE);
	cof_vnode_set(v, f, N_FILE);
	assert_true(cof_vnode_under(v, 0, "a/b/c"));
	cof_vnode_set(v, f, N_GONE);
	cof_vnode_set(v, cof_vnode_find(v, 0, "a/b/g.txt"), N_GONE);
	assert_false(cof_vnode_under(v, 0, "a"));
	assert_false(cof_vnode_under(v, 0, ""));
	/* an empty folder made by mkdir counts in the folder above it */
	made(v, 0, "a/b", N_DIR);
	assert_true(cof_vnode_under(v, 0, "a"));
	assert_false(cof_vnode_under(v, 0, "a/b"));
	cof_vnode_free_all(v);
	free(v);
}

static void test_names_of_a_folder(void **state)
{
	cof_vfs *v = view();
	seen s = {0};

	made(v, 0, "d/x.txt", N_FILE);
	made(v, 0, "d/gone.txt", N_GONE);
	made(v, 0, "d/sub/deep/y.txt", N_FILE);
	made(v, 0, "d/old/z.txt", N_GONE);
	/* a name that was a file and is a folder now */
	made(v, 0, "d/both", N_GONE);
	made(v, 0, "d/both/w.txt", N_FILE);
	made(v, 0, "e/other.txt", N_FILE);
	made(v, 1, "d/root1.txt", N_FILE);
	cof_vnode_names(v, 0, "d", take, &s);
	assert_int_equal(came(&s, "x.txt"), 1);
	assert_int_equal(came(&s, "gone.txt"), 0);
	assert_int_equal(came(&s, "sub"), 1);
	assert_int_equal(came(&s, "old"), 0);
	assert_int_equal(came(&s, "both"), 1);
	assert_int_equal(came(&s, "deep"), -1);
	assert_int_equal(came(&s, "other.txt"), -1);
	assert_int_equal(came(&s, "root1.txt"), -1);
	/* each node and folder once: both as a node and as a folder */
	assert_int_equal(s.n, 6);
	memset(&s, 0, sizeof s);
	cof_vnode_names(v, 0, "", take, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(came(&s, "d"), 1);
	assert_int_equal(came(&s, "e"), 1);
	memset(&s, 0, sizeof s);
	cof_vnode_names(v, 0, "nothing", take, &s);
	assert_int_equal(s.n, 0);
	cof_vnode_free_all(v);
	free(v);
}

/* A folder's names take as many steps as it has: 10,000 files beside it
 * are never looked at (the callback counts what it is given). */
static void test_names_do_not_walk_other_folders(void **state)
{
	cof_vfs *v = view();
	char p[64];
	seen s = {0};

	for (int i = 0; i < 10000; i++) {
		snprintf(p, sizeof p, "big/f%05d", i);
		made(v, 0, p, i % 2 ? N_FILE : N_GONE);
	}
	made(v, 0, "small/a", N_FILE);
	cof_vnode_names(v, 0, "small", take, &s);
	assert_int_equal(s.n, 1);
	for (int i = 1; i < 10000; i += 2) {
		snprintf(p, sizeof p, "big/f%05d", i);
		assert_true(cof_vnode_under(v, 0, "big"));
		cof_vnode_set(v, cof_vnode_find(v, 0, p), N_GONE);
	}
	assert_false(cof_vnode_under(v, 0, "big"));
	assert_true(cof_vnode_under(v, 0, ""));
	cof_vnode_free_all(v);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_follow_kinds),
		cmocka_unit_test(test_names_of_a_folder),
		cmocka_unit_test(test_names_do_not_walk_other_folders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
