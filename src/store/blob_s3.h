/*
 * blob_s3.h — the S3 blob backend (blob_s3.c; docs/design.md "Blobs in S3").
 */
#ifndef COF_BLOB_S3_H
#define COF_BLOB_S3_H

#include "store/blob.h"

/* Opens the blob store of `url` (s3://BUCKET/PREFIX?endpoint=URL&region=R, see
 * cof_s3_url_parse) with the key pair of AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
 * (and AWS_SESSION_TOKEN if set); uploads spool in DATA_DIR/tmp. Lists at most
 * one key first, so a wrong endpoint, bucket or key pair is said at once. */
int cof_blobstore_s3_open(const char *url, const char *data_dir, cof_blobstore **out,
			  cof_err *err);

#endif
