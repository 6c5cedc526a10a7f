/*
 * exclude.c — an agent's exclusions: its `exclude` setting plus the defaults
 * (src/policy) unless defaultExclusions:false. Matched on the agent path
 * relative to the mount it is in ("/data/private/plan.md" in the mount at
 * /data is "private/plan.md"), as a .gitignore at the root of each mount
 * would be: patterns copied from a project's .gitignore mean the same, and
 * one setting applies alike to every mount; a mount's own folder is never
 * excluded. cof_agent_resolve refuses an excluded path, which covers
 * every tool and files call that names one; listings (ls, the files listing)
 * and searches (glob, grep) leave excluded files out.
 *
 * The matcher is compiled once per call, at cof_agent_load: with the defaults
 * and a few patterns that takes a few microseconds (bench/results.md).
 */
#include <string.h>
#include "agent/agent.h"

int cof_agent_excl_load(cof_agent *a, cof_err *err)
{
	json_t *pats = json_object_get(a->settings, "exclude");
	int defaults = cof_json_bool(a->settings, "defaultExclusions", 1);
	cof_err e = {0};

	if (cof_excl_new(pats, defaults, &a->excl, &e) == 0)
		return 0;
	/* Stored before patterns were checked: refuse rather than show all. */
	cof_error(err, COF_ECONFLICT, "agent '%s' has an 'exclude' setting that does not "
		  "compile (%s); PUT the agent again", a->id, e.msg);
	cof_err_clear(&e);
	return -1;
}

int cof_agent_excluded(const cof_agent *a, const char *apath, int is_dir)
{
	const char *rel = apath;

	if (!a->excl)
		return 0;
	/* Relative to the mount it is in (mounts never overlap). */
	for (size_t i = 0; i < a->nmounts; i++) {
		size_t ml = strlen(a->mounts[i].path);
		if (!strncmp(apath, a->mounts[i].path, ml) && (!apath[ml] || apath[ml] == '/')) {
			rel = apath + ml;
			break;
		}
	}
	while (*rel == '/')
		rel++;
	return *rel && cof_excl_match(a->excl, rel, is_dir);
}

int cof_agent_allowed(const cof_agent *a, const char *apath, int is_dir, cof_err *err)
{
	if (!cof_agent_excluded(a, apath, is_dir))
		return 0;
	return cof_error(err, COF_EFORBIDDEN,
			 "'%.200s' is excluded: the agent's exclusions keep it out of reach",
			 apath);
}

void cof_agent_excl_filter(const cof_agent *a, json_t *entries)
{
	size_t i = 0;

	while (i < json_array_size(entries)) {
		json_t *e = json_array_get(entries, i);
		const char *type = cof_json_str(e, "type"), *path = cof_json_str(e, "path");
		if (path && cof_agent_excluded(a, path, type && !strcmp(type, "dir")))
			json_array_remove(entries, i);
		else
			i++;
	}
}
