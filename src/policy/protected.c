/*
 * protected.c — the protected paths of the relay: files that a tool on the
 * user's machine runs or trusts by itself (git's config and hooks, shell
 * start-up files, editor and CI settings, package managers' settings). They
 * can be read but not written, in every mode, unless the user names them
 * with `coffer connect --allow-write PAT`. cofferd checks before relaying
 * (with the allowances the client sent when it connected) and the client
 * checks again before touching its folder.
 *
 * Each rule has a name, shown to the user and the agent (".git/" "**"), and a
 * pattern of the exclusion matcher (src/policy/exclude.c) that decides it
 * (".git": a folder or file named .git at any depth and all beneath it, so a
 * nested repository's "sub/.git/config" and a worktree's ".git" file too).
 * Matching ignores ASCII case (a case-insensitive folder opens ".git/config"
 * for ".GIT/config") and the code points HFS+ ignores in names (git's own
 * defence: ".g\u200cit" is ".git" there).
 *
 * An allowance PAT lifts the rule whose name is PAT (all it covers: allowing
 * the rule ".git/" "**" also opens "sub/.git/config"), and lifts any rule for the
 * paths PAT matches as a gitignore-style pattern ("--allow-write .bashrc").
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "policy/policy.h"
#include "util/util.h"

typedef struct prot_rule {
	const char *name;    /* as shown */
	const char *pattern; /* for the matcher; NULL = the name */
} prot_rule;

static const prot_rule rules[] = {
	/* git: config (core.fsmonitor, core.pager, aliases...) and hooks run code */
	{".git/**", ".git"},
	{".gitmodules", NULL},
	{".gitattributes", NULL}, /* names filter drivers */
	{".gitconfig", NULL},
	{".config/git/**", "**/.config/git"},
	{".lfsconfig", NULL}, /* git-lfs custom transfer agents are programs */
	{".hg/**", ".hg"}, {".hgrc", NULL}, /* mercurial hooks */
	/* shell and session start-up */
	{".bashrc", NULL}, {".bash_profile", NULL}, {".bash_login", NULL},
	{".bash_logout", NULL}, {".bash_aliases", NULL}, {".bashrc.d/**", ".bashrc.d"},
	{".profile", NULL},
	{".zshrc", NULL}, {".zprofile", NULL}, {".zshenv", NULL}, {".zlogin", NULL},
	{".zlogout", NULL}, {".kshrc", NULL}, {".mkshrc", NULL}, {".cshrc", NULL},
	{".tcshrc", NULL}, {".login", NULL}, {".logout", NULL}, {".inputrc", NULL},
	{"config.fish", NULL}, {".config/fish/**", "**/.config/fish"},
	{".xprofile", NULL}, {".xinitrc", NULL}, {".xsession", NULL},
	{".xsessionrc", NULL}, {".config/autostart/**", "**/.config/autostart"},
	{".config/systemd/**", "**/.config/systemd"}, {".local/bin/**", "**/.local/bin"},
	/* directory environments */
	{".envrc", NULL}, {".direnv/**", ".direnv"},
	{".tool-versions", NULL}, {".mise.toml", NULL},
	/* editors that run what a project's settings say */
	{".vscode/**", ".vscode"}, {".idea/**", ".idea"}, {".vimrc", NULL},
	{".exrc", NULL}, {".nvimrc", NULL}, {".nvim.lua", NULL}, {".emacs", NULL},
	{".dir-locals.el", NULL}, {".vim/**", ".vim"}, {".config/nvim/**", "**/.config/nvim"},
	{".emacs.d/**", ".emacs.d"},
	/* CI, containers, commit hooks */
	{".github/workflows/**", "**/.github/workflows"}, {".gitlab-ci.yml", NULL},
	{".devcontainer/**", ".devcontainer"}, {".devcontainer.json", NULL},
	{".pre-commit-config.yaml", NULL}, {".husky/**", ".husky"},
	/* package managers and tools: registries, tokens, helpers they run */
	{".npmrc", NULL}, {".yarnrc", NULL}, {".yarnrc.yml", NULL}, {".pypirc", NULL},
	{"pip.conf", NULL}, {"pip.ini", NULL}, {".cargo/**", ".cargo"},
	{".docker/config.json", "**/.docker/config.json"},
	/* keys and trust */
	{".ssh/**", ".ssh"}, {".gnupg/**", ".gnupg"},
};
#define NRULES (sizeof rules / sizeof *rules)

struct cof_protect {
	cof_excl *allow;    /* the allowances as patterns */
	unsigned char lifted[NRULES]; /* rule i named by an allowance */
	json_t *given;
};

static cof_excl *compiled[NRULES];
static int compiled_ok;
static pthread_once_t compiled_once = PTHREAD_ONCE_INIT;
static const char *names[NRULES + 1];

/* Compiles every rule once per process (the matchers are immutable). */
static void compile_rules(void)
{
	compiled_ok = 1;
	for (size_t i = 0; i < NRULES; i++) {
		json_t *a = json_pack("[s]", rules[i].pattern ? rules[i].pattern : rules[i].name);
		cof_err e = {0};
		if (!a || cof_excl_new(a, COF_EXCL_NOCASE, &compiled[i], &e))
			compiled_ok = 0;
		cof_err_clear(&e);
		json_decref(a);
		names[i] = rules[i].name;
	}
}

const char *const *cof_protect_defaults(void)
{
	pthread_once(&compiled_once, compile_rules);
	return names;
}

/* 1 when the UTF-8 sequence at p (n bytes left) is a code point HFS+ drops
 * from names: U+200C..U+200F, U+202A..U+202E, U+206A..U+206F, U+FEFF. */
static int ignorable(const unsigned char *p, size_t n)
{
	if (n < 3)
		return 0;
	if (p[0] == 0xe2 && p[1] == 0x80)
		return (p[2] >= 0x8c && p[2] <= 0x8f) || (p[2] >= 0xaa && p[2] <= 0xae);
	if (p[0] == 0xe2 && p[1] == 0x81)
		return p[2] >= 0xaa && p[2] <= 0xaf;
	return p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf;
}

/* `path` without the ignorable code points, into out (COF_PATH_MAX + 1). -1
 * when too long (then it counts as protected). */
static int strip(const char *path, char *out)
{
	size_t n = strlen(path), o = 0;

	if (n > COF_PATH_MAX)
		return -1;
	for (size_t i = 0; i < n;) {
		if (ignorable((const unsigned char *)path + i, n - i)) {
			i += 3;
			continue;
		}
		out[o++] = path[i++];
	}
	out[o] = '\0';
	return 0;
}

/* The index of the first rule matching the stripped path, or -1. */
static int rule_of(const char *clean)
{
	pthread_once(&compiled_once, compile_rules);
	if (!compiled_ok)
		return 0; /* fail closed: all is protected, under the first rule */
	for (size_t i = 0; i < NRULES; i++)
		if (cof_excl_match(compiled[i], clean, 0))
			return (int)i;
	return -1;
}

const char *cof_protect_rule(const char *path)
{
	char clean[COF_PATH_MAX + 1];
	int i;

	if (!path || !path[0])
		return NULL;
	if (strip(path, clean) < 0)
		return rules[0].name;
	i = rule_of(clean);
	return i < 0 ? NULL : rules[i].name;
}

int cof_protect_new(const json_t *allow, cof_protect **out, cof_err *err)
{
	cof_protect *p = calloc(1, sizeof *p);

	*out = NULL;
	if (!p)
		return cof_error(err, COF_EINTERNAL, "out of memory");
	if (allow && !json_is_null(allow) && !json_is_array(allow)) {
		free(p);
		return cof_error(err, COF_EVALIDATION, "'allowWrite' must be an array of patterns");
	}
	if (cof_excl_new(allow, COF_EXCL_NOCASE, &p->allow, err)) {
		free(p);
		/* the matcher names the pattern; say which list it was */
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		cof_err_clear(err);
		return cof_error(err, COF_EVALIDATION, "allow-write: %s", msg);
	}
	p->given = cof_excl_patterns(p->allow);
	for (size_t i = 0; i < json_array_size(p->given); i++) {
		const char *s = json_string_value(json_array_get(p->given, i));
		for (size_t r = 0; r < NRULES; r++)
			if (!strcmp(s, rules[r].name) ||
			    (rules[r].pattern && !strcmp(s, rules[r].pattern)))
				p->lifted[r] = 1;
	}
	*out = p;
	return 0;
}

void cof_protect_free(cof_protect *p)
{
	if (!p)
		return;
	cof_excl_free(p->allow);
	json_decref(p->given);
	free(p);
}

json_t *cof_protect_allowances(const cof_protect *p)
{
	return p ? json_deep_copy(p->given) : json_array();
}

int cof_protect_check(const cof_protect *p, const char *path, const char **rule,
		      cof_err *err)
{
	char clean[COF_PATH_MAX + 1];
	int i;

	if (rule)
		*rule = NULL;
	if (!path || !path[0])
		return 0;
	i = strip(path, clean) < 0 ? 0 : rule_of(clean);
	if (i < 0)
		return 0;
	if (rule)
		*rule = rules[i].name;
	if (p && (p->lifted[i] || cof_excl_match(p->allow, clean, 0)))
		return 0; /* the user allowed it */
	cof_error(err, COF_EFORBIDDEN, "'%.300s' is protected (rule '%s'): coffer connect "
		  "--allow-write '%s' allows it", path, rules[i].name, rules[i].name);
	cof_err_set(err, "rule", json_string(rules[i].name));
	cof_err_set(err, "protected", json_true());
	return -1;
}
