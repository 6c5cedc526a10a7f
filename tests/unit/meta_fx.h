/*
 * meta_fx.h — where the metadata unit tests run: the backend
 * $COFFER_TEST_META_URL names (the pg pass), else a fresh SQLite file in a
 * temp folder of the test's own, removed at the end. Include after util.h
 * and store/meta.h; one fixture per test binary.
 */
#ifndef COFFER_TEST_META_FX_H
#define COFFER_TEST_META_FX_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct meta_fx {
	char url[PATH_MAX + 16];   /* what cof_meta_open takes */
	char dir[PATH_MAX];        /* the temp folder, "" when the URL was given */
} meta_fx;

/* Fills fx->url (making the temp folder when no URL is given). 0, or -1. */
static inline int meta_fx_url(meta_fx *fx)
{
	const char *u = getenv("COFFER_TEST_META_URL");

	fx->dir[0] = '\0';
	if (u && *u) {
		snprintf(fx->url, sizeof fx->url, "%s", u);
		return 0;
	}
	if (cof_temp_dir("coffer-meta-ut", fx->dir, sizeof fx->dir)) {
		fx->dir[0] = '\0';
		return -1;
	}
	snprintf(fx->url, sizeof fx->url, "sqlite:%s/meta.db", fx->dir);
	return 0;
}

/* meta_fx_url, then opens the store at it into *m. 0, or -1 (said on stderr). */
static inline int meta_fx_open(meta_fx *fx, cof_meta **m)
{
	cof_err err = {0};

	if (meta_fx_url(fx))
		return -1;
	if (cof_meta_open(fx->url, m, &err)) {
		fprintf(stderr, "cannot open %s: %s\n", fx->url, err.msg);
		cof_err_clear(&err);
		return -1;
	}
	return 0;
}

/* Closes m (when not NULL) and removes the temp folder if the fixture made one. */
static inline void meta_fx_close(meta_fx *fx, cof_meta *m)
{
	if (m)
		cof_meta_close(m);
	if (fx->dir[0])
		cof_rm_tree(fx->dir);
	fx->dir[0] = '\0';
}

#endif
