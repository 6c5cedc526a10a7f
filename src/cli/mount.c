/*
 * mount.c — `coffer mount VOLUME DIR`: a volume as a real directory (FUSE),
 * over the same view code as a call's (src/view/). Read-only at one seq by
 * default; --follow shows new seqs as they land; --rw lands each file
 * closed after writing as one version (a conflicting close fails with EIO),
 * unlink as a remove and rename as a move. Ends with `fusermount3 -u DIR` or
 * Ctrl-C. In process over a data dir (--data), or through a cofferd's HTTP
 * API (--server/--key: src/view/source_http.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "view/view.h"

/* Removes the layer folder (its files are gone with the view). */
static void layer_drop(char *dir)
{
	if (dir && *dir)
		rmdir(dir);
}

/* Where the view reads: the data dir in process (--data), else the cofferd
 * of --server/--key, asked once so that an unreachable server, a refused
 * key or an unknown volume fail before anything is mounted. A data dir is
 * taken as a cofferd takes it (DATA/lock, store/lock.c): its commits would
 * pass under a running server's caches and change waits, so a dir a cofferd
 * serves is refused (mount through that cofferd instead), and no cofferd
 * starts on it while it is mounted. */
static int mount_source(const char *data, const char *vol, cof_store **st,
			cof_view_src **src)
{
	cof_err err = {0};
	int rc;

	if (data) {
		rc = cli_open_data(data, &(cof_store_opts){.content_cache = COF_CONTENT_CACHE_DEFAULT,
							    .serve = 1}, st);
		if (rc)
			fprintf(stderr, "coffer: to mount a volume of a running cofferd, leave out "
				"--data (the mount then goes through --server/--key)\n");
		return rc;
	}
	if (!(*src = cof_view_src_http(cli_server_url(), cli_api_key(), &err)) ||
	    cof_view_src_check(*src, vol, &err)) {
		rc = cli_fail("cannot mount volume '%s': %s", vol, err.msg);
		cof_err_clear(&err);
		cof_view_src_free(*src);
		*src = NULL;
		return rc;
	}
	return CLI_OK;
}

static int mount_main(const cli_cmd *cmd, int argc, char **argv)
{
	const char *pos[2], *data = NULL, *snapshot = NULL;
	int ro = 0, rw = 0, follow = 0, npos, rc;
	const cli_opt opts[] = {
		{"data", 0, CLI_OPT_STR, &data},
		{"snapshot", 0, CLI_OPT_STR, &snapshot},
		{"read-only", 0, CLI_OPT_FLAG, &ro},
		{"follow", 0, CLI_OPT_FLAG, &follow},
		{NULL, 0, 0, NULL},
	};
	cof_view_root root = {0};
	cof_view_opts vo = {0};
	cof_store *st = NULL;
	cof_view_src *src = NULL;
	cof_vfs *v = NULL;
	cof_err err = {0};
	char layer[4096] = "";

	if ((rc = cli_parse(cmd, argc, argv, opts, pos, 2, 2, &npos)))
		return rc == CLI_HELPED ? CLI_OK : rc;
	rw = !ro && !snapshot; /* a snapshot is read-only */
	if ((rc = mount_source(data, pos[0], &st, &src)))
		return rc;
	snprintf(root.vol, sizeof root.vol, "%s", pos[0]);
	root.snapshot = snapshot;
	root.rw = rw;
	vo.st = st;
	vo.src = src;
	vo.org = "org_default";
	vo.roots = &root;
	vo.nroots = 1;
	vo.way = COF_VIEW_DIRECT;
	vo.follow = follow;
	if (rw) {
		if (cof_temp_dir("coffer-mount", layer, sizeof layer)) {
			cof_store_close(st);
			cof_view_src_free(src);
			return cli_fail("cannot make a folder for written bytes in $TMPDIR: %s",
					strerror(errno));
		}
		vo.layer_dir = layer;
	}
	if (cof_view_mount(&vo, pos[1], &v, &err)) {
		rc = cli_fail("cannot mount volume '%s' at '%s': %s", pos[0], pos[1], err.msg);
		cof_err_clear(&err);
		layer_drop(layer);
		cof_store_close(st);
		cof_view_src_free(src);
		return rc;
	}
	if (cli_g.verbose || isatty(2))
		fprintf(stderr, "coffer mount: volume %s at seq %lld on %s,%s%s%s%s (fusermount3 -u "
			"%s or Ctrl-C ends it)\n", pos[0], (long long)cof_view_seq(v, 0), pos[1],
			rw ? " read-write" : " read-only", follow ? ", following" : "",
			src ? ", from " : "", src ? cli_server_url() : "", pos[1]);
	rc = cof_view_serve(v) ? CLI_FAIL : CLI_OK;
	cof_view_unmount(v);
	layer_drop(layer);
	cof_store_close(st);
	cof_view_src_free(src);
	return rc;
}

const cli_cmd cli_mount_cmds[] = {
	{NULL, "mount", "VOLUME DIR [--data DIR] [--snapshot S] [--read-only] [--follow]",
	 "mount a volume as a directory (FUSE)",
	 "Shows volume VOLUME at DIR (an empty folder) so that git, compilers and\n"
	 "editors work on its files unchanged. Reads are of one consistent seq: the\n"
	 "volume as it was when mounted (or snapshot S) until --follow is given, then\n"
	 "new seqs show as they land. Each file closed after writing is one\n"
	 "new version, conditional on the version it was opened at (a conflicting\n"
	 "close fails with EIO and the other side's version stays); unlink is one\n"
	 "remove, rename of a file or folder one move; an empty folder lives only\n"
	 "while mounted. Not supported: symlinks, hard links (EPERM), extended\n"
	 "attributes; locks are local to the mount. Runs until `fusermount3 -u DIR`\n"
	 "or Ctrl-C.\n"
	 "\n"
	 "Without --data it works through the cofferd of --server and --key (or\n"
	 "$COFFER_URL and $COFFER_KEY), the way every other command does: reads at\n"
	 "the mounted seq (?seq=), content by range, each closed file one PUT.\n"
	 "With --follow over a server the newest seq is asked at most once a second.\n"
	 "--data takes the dir as a cofferd does: a dir a running cofferd serves is\n"
	 "refused (mount through that cofferd), and none starts on it while mounted.\n"
	 "\n"
	 "Options:\n"
	 "  --data DIR       use the data dir DIR directly (organization org_default);\n"
	 "                   refused while a running cofferd serves it\n"
	 "  --snapshot S     mount snapshot S of the volume (read-only)\n"
	 "  --read-only      refuse writes (EROFS)\n"
	 "  --follow         show new seqs as they land (else one seq)\n",
	 mount_main},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
