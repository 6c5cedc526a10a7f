/*
 * archive.h — the seam of archive.c that needs no store: the same tar.gz
 * writer over files given in memory, for the fuzzer (fuzz/fuzz_archive.c).
 * The store's archives are opened with cof_archive_open (include/coffer.h).
 */
#ifndef COF_VOLUME_ARCHIVE_H
#define COF_VOLUME_ARCHIVE_H

#include "coffer.h"

/* One file of an archive made from memory. */
typedef struct cof_archive_file {
	const char *name;      /* the name in the archive, as stored (any bytes but NUL) */
	const void *data;      /* `size` bytes */
	int64_t size;
	int64_t mtime;         /* unix seconds */
} cof_archive_file;

/* Opens an archive of the `n` files of `v`, in that order, read with
 * cof_archive_read and closed with cof_archive_close as a store's archive is.
 * `v` and what it points to must outlive the archive. An empty name is refused
 * (COF_EVALIDATION); the limits of cof_archive_open are not applied. */
int cof_archive_open_files(const cof_archive_file *v, size_t n, cof_archive **out,
			   cof_err *err);

#endif /* COF_VOLUME_ARCHIVE_H */
