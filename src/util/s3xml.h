/*
 * s3xml.h — the XML request bodies the S3 gateway reads, parsed with
 * libxml2 (no network, no external entities; fuzz/fuzz_s3auth.c).
 */
#ifndef COF_S3XML_H
#define COF_S3XML_H

#include <stddef.h>

#define COF_S3_DELETE_MAX 1000

/* A DeleteObjects body: <Delete><Quiet>true|false</Quiet>?<Object><Key>K</Key>
 * <VersionId>V</VersionId>?</Object>...</Delete>. 0 with *keys (n of them,
 * malloc'd, free with cof_s3xml_free) and *quiet; -1 with *why (malformed,
 * no Object, more than COF_S3_DELETE_MAX, an Object without one Key). */
int cof_s3xml_delete(const char *body, size_t len, char ***keys, size_t *n, int *quiet,
		     const char **why);
void cof_s3xml_free(char **keys, size_t n);

#define COF_S3_PARTS_MAX 10000

/* A CompleteMultipartUpload body: <CompleteMultipartUpload><Part><PartNumber>N
 * </PartNumber><ETag>E</ETag></Part>...</CompleteMultipartUpload>, part numbers
 * 1 to 10000 in ascending order. 0 with nums[] and etags[] (*n of each,
 * malloc'd; free nums with free, etags with cof_s3xml_free), or -1 with *why. */
int cof_s3xml_complete(const char *body, size_t len, int **nums, char ***etags, size_t *n,
		       const char **why);

#endif
