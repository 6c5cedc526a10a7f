/*
 * lfs_int.h — what localfs.c shares with lfs_search.c (not for other layers:
 * the contract is localfs.h).
 */
#ifndef COF_RELAY_CLIENT_LFS_INT_H
#define COF_RELAY_CLIENT_LFS_INT_H

#include <sys/types.h>
#include "relay/client/localfs.h"

struct cof_lfs {
	int dirfd;
	int walk_only; /* no openat2: the kernel said ENOSYS, or a test asked */
	cof_excl *excl;
	cof_limits limits;
};

/* The API error for an errno of an open or a walk under the folder; -1. */
int cof_lfs_errno(int e, const char *path, cof_err *err);
/* Opens `path` (checked; "" = the folder) beneath `dirfd`, never following a
 * symlink. Returns the fd or -1 with errno. */
int cof_lfs_open_beneath(cof_lfs *fs, int dirfd, const char *path, int flags, mode_t mode);
/* Reads the regular file open at `fd` whole, within the size limit; *data
 * malloc'd and NUL-terminated. */
int cof_lfs_read_fd(const cof_lfs *fs, int fd, const char *path, unsigned char **data,
		size_t *len, cof_err *err);
/* One entry of a folder: readdir's d_type (DT_UNKNOWN on some file systems:
 * then ask fstatat) and the name. */
typedef struct lfs_name {
	unsigned char type;
	char name[];
} lfs_name;

/* The entries of the folder open at `dfd` (consumed), sorted by name, without
 * `.` and `..`; free with cof_lfs_names_free. -1 with errno. */
int cof_lfs_names(int dfd, lfs_name ***names, size_t *n);
void cof_lfs_names_free(lfs_name **v, size_t n);
/* `dir` + "/" + `name` (or `name` at the top) into `b`, reset first; NULL
 * when out of memory. */
const char *cof_lfs_join(cof_buf *b, const char *dir, const char *name);

#endif
