/*
 * test_view_inodes.c — the table of a view's nodes (src/view/inodes.c):
 * paths built from parents, lookup counts and forgets, a folder kept while
 * a node under it is, unlink (detach) and rename (over a name, exchange,
 * a folder with what is under it), ids never reused, growth past its
 * first buckets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "view/lowlevel.h"

static cof_vll *table(void)
{
	cof_vll *ll = calloc(1, sizeof *ll);

	assert_non_null(ll);
	assert_int_equal(cof_lino_init(ll), 0);
	return ll;
}

static void done(cof_vll *ll)
{
	cof_lino_free(ll);
	free(ll);
}

static void path_is(cof_vll *ll, cof_lnode *n, const char *want)
{
	char *p = cof_lino_path(ll, n, NULL);

	assert_non_null(p);
	assert_string_equal(p, want);
	free(p);
}

static void test_paths_and_refs(void **state)
{
	cof_vll *ll = table();
	cof_lnode *d = cof_lino_ref(ll, &ll->root, "docs");
	cof_lnode *f = cof_lino_ref(ll, d, "a.md");
	char *p;

	path_is(ll, &ll->root, "/");
	path_is(ll, d, "/docs");
	path_is(ll, f, "/docs/a.md");
	p = cof_lino_path(ll, d, "b.md");
	assert_string_equal(p, "/docs/b.md");
	free(p);
	/* the same name gives the same node, one more reference */
	assert_ptr_equal(cof_lino_ref(ll, d, "a.md"), f);
	assert_int_equal(f->nlookup, 2);
	assert_ptr_equal(cof_lino_find(ll, f->ino), f);
	assert_ptr_equal(cof_lino_child(ll, d, "a.md"), f);
	assert_null(cof_lino_child(ll, d, "nope"));
	done(ll);
}

static void test_forget_keeps_a_folder_while_a_node_is_under_it(void **state)
{
	cof_vll *ll = table();
	cof_lnode *d = cof_lino_ref(ll, &ll->root, "d");
	cof_lnode *f = cof_lino_ref(ll, d, "f");
	fuse_ino_t di = d->ino, fi = f->ino;

	cof_lino_forget(ll, di, 1); /* the folder first: f still needs it */
	assert_ptr_equal(cof_lino_find(ll, di), d);
	path_is(ll, f, "/d/f");
	cof_lino_forget(ll, fi, 1); /* both go */
	assert_null(cof_lino_find(ll, fi));
	assert_null(cof_lino_find(ll, di));
	assert_int_equal(ll->count, 0);
	/* a name known again gets a new id: ids are never reused */
	d = cof_lino_ref(ll, &ll->root, "d");
	assert_true(d->ino > fi);
	cof_lino_forget(ll, d->ino, 5); /* more than it holds: none left */
	assert_int_equal(ll->count, 0);
	cof_lino_forget(ll, 12345, 1);  /* unknown: nothing */
	cof_lino_forget(ll, FUSE_ROOT_ID, 1);
	assert_ptr_equal(cof_lino_find(ll, FUSE_ROOT_ID), &ll->root);
	done(ll);
}

static void test_detach(void **state)
{
	cof_vll *ll = table();
	cof_lnode *f = cof_lino_ref(ll, &ll->root, "f");
	fuse_ino_t fi = f->ino;

	cof_lino_detach(ll, f);
	/* still known by id (the kernel holds it), no longer by name or path */
	assert_ptr_equal(cof_lino_find(ll, fi), f);
	assert_null(cof_lino_child(ll, &ll->root, "f"));
	assert_null(cof_lino_path(ll, f, NULL));
	/* a new file of that name is another node */
	cof_lnode *g = cof_lino_ref(ll, &ll->root, "f");
	assert_true(g != f && g->ino != fi);
	cof_lino_forget(ll, fi, 1);
	assert_null(cof_lino_find(ll, fi));
	done(ll);
}

static void test_rename(void **state)
{
	cof_vll *ll = table();
	cof_lnode *a = cof_lino_ref(ll, &ll->root, "a");
	cof_lnode *x = cof_lino_ref(ll, a, "x");
	cof_lnode *b = cof_lino_ref(ll, &ll->root, "b");
	cof_lnode *t = cof_lino_ref(ll, &ll->root, "t");
	fuse_ino_t ti = t->ino;

	/* a folder: what is under it follows */
	cof_lino_rename(ll, &ll->root, "a", b, "a2", 0);
	path_is(ll, a, "/b/a2");
	path_is(ll, x, "/b/a2/x");
	assert_null(cof_lino_child(ll, &ll->root, "a"));
	/* over a name: the node there is taken off */
	cof_lino_rename(ll, a, "x", &ll->root, "t", 0);
	path_is(ll, x, "/t");
	assert_null(cof_lino_path(ll, t, NULL));
	assert_ptr_equal(cof_lino_find(ll, ti), t);
	/* an exchange swaps the two */
	cof_lino_rename(ll, &ll->root, "t", b, "a2", RENAME_EXCHANGE);
	path_is(ll, x, "/b/a2");
	path_is(ll, a, "/t");
	/* a name the table never saw: nothing to follow */
	cof_lino_rename(ll, &ll->root, "ghost", b, "g", 0);
	assert_null(cof_lino_child(ll, b, "g"));
	done(ll);
}

static void test_grows(void **state)
{
	cof_vll *ll = table();
	cof_lnode *d = cof_lino_ref(ll, &ll->root, "d");
	char name[32];
	size_t nb = ll->nbuckets;

	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "f%05d", i);
		assert_non_null(cof_lino_ref(ll, d, name));
	}
	assert_true(ll->nbuckets > nb);
	for (int i = 0; i < 5000; i += 499) {
		snprintf(name, sizeof name, "f%05d", i);
		cof_lnode *n = cof_lino_child(ll, d, name);
		assert_non_null(n);
		assert_ptr_equal(cof_lino_find(ll, n->ino), n);
	}
	assert_int_equal(ll->count, 5001);
	done(ll);
}

static void test_path_too_long(void **state)
{
	cof_vll *ll = table();
	cof_lnode *n = &ll->root;
	char name[256];

	memset(name, 'a', 255);
	name[255] = '\0';
	for (int i = 0; i < 40; i++) /* 40 * 256 bytes: past any volume path */
		n = cof_lino_ref(ll, n, name);
	assert_null(cof_lino_path(ll, n, NULL));
	done(ll);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths_and_refs),
		cmocka_unit_test(test_forget_keeps_a_folder_while_a_node_is_under_it),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_grows),
		cmocka_unit_test(test_path_too_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
