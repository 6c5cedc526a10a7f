/*
 * tempdir.c — a private temporary folder and its removal, for the tools that
 * need scratch space of their own (fsck/gc over shared engines, migrate,
 * coffer mount's written bytes).
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "util/util.h"

int cof_temp_dir(const char *prefix, char *out, size_t outsz)
{
	const char *base = getenv("TMPDIR");
	int n;

	if (!base || base[0] != '/')
		base = "/tmp";
	n = snprintf(out, outsz, "%s/%s-", base, prefix);
	if (n < 0 || (size_t)n + 6 >= outsz) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* mkdtemp's template: the name ends in six 'X', which it replaces */
	memset(out + n, 'X', 6);
	out[n + 6] = '\0';
	return mkdtemp(out) ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

void cof_rm_tree(const char *dir)
{
	/* FTW_PHYS: a link is removed, never followed; FTW_MOUNT: a file system
	 * mounted inside (a view still attached) is left alone, not emptied */
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
