/*
 * migrate.c — `coffer migrate` (include/coffer.h cof_migrate): the store
 * copies the dataset and checks what it copied (store/migrate.c); fsck of the
 * target, which reads volumes as the volume layer does, is this layer's
 * last step, so the store never calls up into volume/. `coffer backup` and
 * `coffer restore` (cof_backup, cof_restore) likewise: store/backup.c copies,
 * the restore's fsck runs here.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "store/store.h"
#include "volume/volume.h"

/* fsck of the target through a store of its own (tool mode, over a scratch
 * folder that holds nothing of the dataset): 0 with its report, or -1. */
static int target_fsck(const char *meta, const char *blobs, json_t **rep, cof_err *err)
{
	cof_store_opts so = {.meta_url = meta, .blobs_url = blobs, .tool = 1};
	char scratch[PATH_MAX];
	cof_store *st;
	int rc;

	*rep = NULL;
	if (cof_temp_dir("coffer-migrate-fsck", scratch, sizeof scratch))
		return cof_error(err, COF_EINTERNAL, "cannot make a temp folder: %s",
				 strerror(errno));
	rc = cof_store_open(scratch, &so, &st, err);
	if (rc == 0) {
		rc = cof_fsck(st, rep, err);
		cof_store_close(st);
	}
	cof_rm_tree(scratch);
	if (!rc && !json_is_true(json_object_get(*rep, "ok"))) {
		char *txt = json_dumps(*rep, JSON_COMPACT);
		rc = cof_error(err, COF_EINTERNAL, "verifying: fsck of the target found missing or"
			       " corrupt content: %s", txt ? txt : "(out of memory)");
		free(txt);
	}
	return rc;
}

int cof_migrate(const char *from, const char *meta, const char *blobs, json_t **out,
		cof_err *err)
{
	json_t *rep = NULL;

	if (cof_store_migrate(from, meta, blobs, out, err))
		return -1;
	if (target_fsck(meta, blobs, &rep, err)) {
		json_decref(rep);
		json_decref(*out);
		*out = NULL;
		return -1;
	}
	json_object_set_new(*out, "fsck", rep);
	return 0;
}

int cof_backup(const char *from, const char *to, json_t **out, cof_err *err)
{
	return cof_store_backup(from, to, 0, out, err);
}

/* fsck of the restored dir is volume logic: it runs here, once the store has
 * copied everything and let go of the dir. */
int cof_restore(const char *from, const char *to, json_t **out, cof_err *err)
{
	cof_store_opts so = {.tool = 1};
	cof_store *st;
	json_t *rep = NULL, *fsck = NULL;

	*out = NULL;
	if (cof_store_backup(from, to, 1, &rep, err))
		return -1;
	if (cof_store_open(to, &so, &st, err)) {
		json_decref(rep);
		return -1;
	}
	int rc = cof_fsck(st, &fsck, err);
	cof_store_close(st);
	if (!rc && !json_is_true(json_object_get(fsck, "ok"))) {
		char *txt = json_dumps(fsck, JSON_COMPACT);
		rc = cof_error(err, COF_EINTERNAL, "fsck of the restored data dir '%s' found"
			       " missing or corrupt content: %s", to, txt ? txt : "(out of memory)");
		free(txt);
	}
	if (rc) {
		json_decref(rep);
		json_decref(fsck);
		return -1;
	}
	json_object_set_new(rep, "fsck", fsck);
	*out = rep;
	return 0;
}
