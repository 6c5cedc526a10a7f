/*
 * fuzz_agent.c — cof_agent_resolve, the one resolver of agent paths, with an
 * agent of three mounts (its workspace, a read-write mount with a subpath, a
 * read-only mount). Whatever the path, an accepted one must land inside a
 * mount: the agent path starts with the mount's path at a segment boundary,
 * the volume path starts with the mount's subpath, holds no '.'/'..'/empty
 * segment, and maps back to the same agent path.
 */
#include "fuzz.h"
#include "agent/agent.h"

static cof_agent agent;

static void mount(const char *path, const char *vol, const char *sub, int rw, int ws)
{
	cof_mount *m = &agent.mounts[agent.nmounts++];

	snprintf(m->path, sizeof m->path, "%s", path);
	snprintf(m->vol, sizeof m->vol, "%s", vol);
	snprintf(m->subpath, sizeof m->subpath, "%s", sub);
	m->rw = rw;
	m->workspace = ws;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(agent.org, sizeof agent.org, "org_default");
	snprintf(agent.id, sizeof agent.id, "fuzz");
	mount("/workspace", "vol_ws", "", 1, 1);
	mount("/data/in", "vol_data", "sub/dir", 1, 0);
	mount("/ro", "vol_ro", "", 0, 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = fuzz_dup_str(data, size);
	cof_target t;
	cof_err err = {0};

	if (cof_agent_resolve(&agent, path, &t, &err) == 0) {
		const cof_mount *m = t.mount;
		size_t ml = strlen(m->path), sl = strlen(m->subpath);
		const char *ok;
		char back[COF_AGENT_PATH_MAX + 1];

		FUZZ_CHECK(m >= agent.mounts && m < agent.mounts + agent.nmounts, "mount out of range");
		FUZZ_CHECK(!strncmp(t.apath, m->path, ml) && (!t.apath[ml] || t.apath[ml] == '/'),
			   "'%s' is not inside mount '%s'", t.apath, m->path);
		FUZZ_CHECK(sl == 0 || (!strncmp(t.vpath, m->subpath, sl) &&
					(!t.vpath[sl] || t.vpath[sl] == '/')),
			   "volume path '%s' escapes subpath '%s'", t.vpath, m->subpath);
		if (t.vpath[0]) {
			cof_err e2 = {0};
			FUZZ_CHECK(cof_path_check(t.vpath, strlen(t.vpath), "v", &ok, &e2) == 0,
				   "volume path '%s' is not a valid path: %s", t.vpath, e2.msg);
		}
		cof_agent_path_of(m, t.vpath, back, sizeof back);
		FUZZ_CHECK(!strcmp(back, t.apath), "'%s' maps back to '%s'", t.apath, back);
		FUZZ_CHECK(!strstr(t.apath, "/../") && !strstr(t.apath, "/./") &&
			   !strstr(t.apath, "//"), "agent path '%s' is not normalised", t.apath);
	} else {
		FUZZ_CHECK(err.code == COF_EVALIDATION || err.code == COF_ENOTFOUND,
			   "unexpected error %d: %s", err.code, err.msg);
		FUZZ_CHECK(err.msg[0], "an error without a message");
	}
	cof_err_clear(&err);
	free(path);
	return 0;
}
