/*
 * test_protect.c — the relay's protected paths (src/policy/protected.c): each
 * rule at the root and nested, ordinary sources left writable, case and HFS+
 * ignorable code points, the user's allowances (by rule name and by
 * pattern), the refusal's message; the exclusion matcher's COF_EXCL_NOCASE;
 * and the name checks of src/policy/names.c one by one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"
#include "util/util.h"

/* Paths that must be protected, with the rule that should say so. */
static const struct {
	const char *path, *rule;
} protected_cases[] = {
	{".git/config", ".git/**"},
	{".git/hooks/pre-commit", ".git/**"},
	{".git", ".git/**"},
	{"sub/.git/config", ".git/**"},
	{"vendor/lib/.git/hooks/post-checkout", ".git/**"},
	{".GIT/config", ".git/**"},
	{".g\xe2\x80\x8cit/config", ".git/**"},       /* U+200C inside */
	{".git\xef\xbb\xbf/hooks/x", ".git/**"},       /* U+FEFF */
	{".ba\xc5\xbfhrc", ".bashrc"},                 /* U+017F: long s */
	{".\xe2\x84\xaashrc", ".kshrc"},               /* U+212A: Kelvin sign */
	{".gitmodules", ".gitmodules"},
	{"sub/.gitattributes", ".gitattributes"},
	{".gitconfig", ".gitconfig"},
	{".config/git/config", ".config/git/**"},
	{".bashrc", ".bashrc"},
	{"home/me/.bashrc", ".bashrc"},
	{".bash_profile", ".bash_profile"},
	{".bash_login", ".bash_login"},
	{".bash_logout", ".bash_logout"},
	{".profile", ".profile"},
	{".zshrc", ".zshrc"},
	{".zprofile", ".zprofile"},
	{".zshenv", ".zshenv"},
	{".zlogin", ".zlogin"},
	{".kshrc", ".kshrc"},
	{".cshrc", ".cshrc"},
	{".tcshrc", ".tcshrc"},
	{".inputrc", ".inputrc"},
	{".config/fish/config.fish", "config.fish"},
	{".config/fish/functions/ls.fish", ".config/fish/**"},
	{".envrc", ".envrc"},
	{"app/.envrc", ".envrc"},
	{".direnv/bin/x", ".direnv/**"},
	{".vscode/settings.json", ".vscode/**"},
	{".vscode/tasks.json", ".vscode/**"},
	{".idea/workspace.xml", ".idea/**"},
	{".github/workflows/ci.yml", ".github/workflows/**"},
	{".devcontainer/devcontainer.json", ".devcontainer/**"},
	{".npmrc", ".npmrc"},
	{".yarnrc", ".yarnrc"},
	{".yarnrc.yml", ".yarnrc.yml"},
	{".pypirc", ".pypirc"},
	{"pip.conf", "pip.conf"},
	{".config/pip/pip.conf", "pip.conf"},
	{".ssh/authorized_keys", ".ssh/**"},
	{".gnupg/gpg.conf", ".gnupg/**"},
	{".docker/config.json", ".docker/config.json"},
	{".cargo/config.toml", ".cargo/**"},
	{"crate/.cargo/config", ".cargo/**"},
	{".pre-commit-config.yaml", ".pre-commit-config.yaml"},
	{".husky/pre-commit", ".husky/**"},
	{".tool-versions", ".tool-versions"},
	{".local/bin/git", ".local/bin/**"},
	{".lfsconfig", ".lfsconfig"},
	{".hg/hgrc", ".hg/**"},
	{".bashrc.d/50-x.sh", ".bashrc.d/**"},
	{".vim/plugin/x.vim", ".vim/**"},
	{".config/nvim/init.lua", ".config/nvim/**"},
	{".emacs.d/init.el", ".emacs.d/**"},
};

static void test_protected_rules(void **state)
{
	int bad = 0;
	(void)state;

	for (size_t i = 0; i < sizeof protected_cases / sizeof *protected_cases; i++) {
		const char *r = cof_protect_rule(protected_cases[i].path);
		if (!r || strcmp(r, protected_cases[i].rule)) {
			print_error("'%s': rule %s, want %s\n", protected_cases[i].path,
				    r ? r : "(none)", protected_cases[i].rule);
			bad++;
		}
	}
	if (bad)
		fail_msg("%d paths wrong", bad);
}

static void test_ordinary_paths_writable(void **state)
{
	static const char *const ok[] = {
		"Makefile", "src/main.c", "README.md", ".gitignore", "docs/git.md",
		"src/.github/README", ".github/CODEOWNERS", "notes/bashrc.txt", "my.git/x",
		".gitx/config", "vscode/settings.json", "a/.config/other/x", "package.json",
		".editorconfig", "src/profile.c", NULL,
	};
	cof_err e = {0};
	const char *rule;
	(void)state;

	for (size_t i = 0; ok[i]; i++) {
		if (cof_protect_rule(ok[i]))
			fail_msg("'%s' is protected by %s", ok[i], cof_protect_rule(ok[i]));
		assert_int_equal(cof_protect_check(NULL, ok[i], &rule, &e), 0);
		assert_null(rule);
	}
	assert_null(cof_protect_rule(""));
}

static cof_protect *allow(const char *const *pats)
{
	json_t *a = json_array();
	cof_protect *p = NULL;
	cof_err e = {0};

	for (size_t i = 0; pats[i]; i++)
		json_array_append_new(a, json_string(pats[i]));
	if (cof_protect_new(a, &p, &e))
		fail_msg("cof_protect_new: %s", e.msg);
	json_decref(a);
	return p;
}

static void test_protected_message(void **state)
{
	cof_err e = {0};
	(void)state;

	assert_int_equal(cof_protect_check(NULL, ".git/config", NULL, &e), -1);
	assert_int_equal(e.code, COF_EFORBIDDEN);
	assert_string_equal(e.msg, "'.git/config' is protected (rule '.git/**'): coffer "
			    "connect --allow-write '.git/**' allows it");
	assert_string_equal(json_string_value(json_object_get(e.extra, "rule")), ".git/**");
	cof_err_clear(&e);
}

static void test_allowances(void **state)
{
	static const char *const by_rule[] = {".git/**", NULL};
	static const char *const by_path[] = {".bashrc", "sub/.vscode/settings.json", NULL};
	cof_protect *p = allow(by_rule);
	cof_err e = {0};
	const char *rule;
	(void)state;

	/* the rule's name lifts all it covers, nested too */
	assert_int_equal(cof_protect_check(p, ".git/config", &rule, &e), 0);
	assert_string_equal(rule, ".git/**");
	assert_int_equal(cof_protect_check(p, "sub/.git/hooks/x", &rule, &e), 0);
	assert_int_equal(cof_protect_check(p, ".bashrc", &rule, &e), -1);
	cof_err_clear(&e);
	json_t *given = cof_protect_allowances(p);
	assert_int_equal(json_array_size(given), 1);
	json_decref(given);
	cof_protect_free(p);

	/* a pattern lifts what it matches, nothing else */
	p = allow(by_path);
	assert_int_equal(cof_protect_check(p, ".bashrc", &rule, &e), 0);
	assert_int_equal(cof_protect_check(p, "x/.bashrc", &rule, &e), 0); /* no '/': any depth */
	assert_int_equal(cof_protect_check(p, "sub/.vscode/settings.json", &rule, &e), 0);
	assert_int_equal(cof_protect_check(p, ".vscode/settings.json", &rule, &e), -1);
	cof_err_clear(&e);
	assert_int_equal(cof_protect_check(p, ".git/config", &rule, &e), -1);
	cof_err_clear(&e);
	cof_protect_free(p);

	/* a bad pattern is refused, naming it */
	json_t *bad = json_pack("[s]", "a//b");
	assert_int_equal(cof_protect_new(bad, &p, &e), -1);
	assert_int_equal(e.code, COF_EVALIDATION);
	assert_non_null(strstr(e.msg, "a//b"));
	cof_err_clear(&e);
	json_decref(bad);
}

/* User patterns with COF_EXCL_NOCASE match in any ASCII case; without it
 * they keep to the case given (the agent layer). */
static void test_excl_nocase(void **state)
{
	json_t *a = json_pack("[s, s, s]", "secret*", "/Build/", "[A-C]x.txt");
	cof_excl *x = NULL;
	cof_err e = {0};
	(void)state;

	assert_int_equal(cof_excl_new(a, COF_EXCL_DEFAULTS | COF_EXCL_NOCASE, &x, &e), 0);
	assert_true(cof_excl_match(x, "SECRET.txt", 0));
	assert_true(cof_excl_match(x, "dir/Secret.md", 0));
	assert_true(cof_excl_match(x, "secret.txt", 0));
	assert_true(cof_excl_match(x, "build/out.o", 0));
	assert_true(cof_excl_match(x, "BUILD/out.o", 0));
	assert_true(cof_excl_match(x, "bx.txt", 0));
	assert_true(cof_excl_match(x, ".ENV", 0)); /* the defaults too */
	/* code points a case-insensitive disk opens as ASCII letters */
	assert_true(cof_excl_match(x, "\xc5\xbf" "ecret.txt", 0));
	assert_true(cof_excl_match(x, "a.\xe2\x84\xaa" "ey", 0));
	assert_true(cof_excl_match(x, "id_r\xc5\xbf" "a", 0));
	assert_false(cof_excl_match(x, "public.txt", 0));
	cof_excl_free(x);
	assert_int_equal(cof_excl_new(a, COF_EXCL_DEFAULTS, &x, &e), 0);
	assert_false(cof_excl_match(x, "SECRET.txt", 0));
	assert_true(cof_excl_match(x, "secret.txt", 0));
	cof_excl_free(x);
	json_decref(a);
}

/* Each name check by itself, and names that pass them all. */
static void test_name_checks(void **state)
{
	static const struct {
		const char *check, *path;
	} fire[] = {
		{"shell-meta", "a$b"}, {"shell-meta", "${IFS}"}, {"quote", "a'b"},
		{"quote", "a\"b"}, {"glob", "*"}, {"glob", "x?"}, {"glob", "{a,b}"},
		{"dash", "-n"}, {"dash", "a/-x/b"}, {"bidi", "a\xe2\x80\xae"},
		{"bidi", "\xe2\x81\xa7x"}, {"bidi", "\xd8\x9cx"}, {"absolute", "C:x"},
		{"absolute", "z:"}, {"absolute", "/x"}, {"traversal", "a/../b"},
		{"backslash", "a\\b"}, {"control", "a\tb"},
	};
	static const char *const pass[] = {
		"My Notes (1).md", "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.txt", "a-b.c", "x.tar.gz",
		"a b/c d-e", "[slug].tsx", "v1.2.3", "ab:c", "100%", "a+b=c@d!e#f",
		"\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82.md", "a\xe2\x80\x94" "b", NULL,
	};
	(void)state;

	for (size_t i = 0; i < sizeof fire / sizeof *fire; i++) {
		int id = cof_name_check_id(fire[i].check);
		assert_true(id > 0);
		if (!cof_name_check_fires(id, fire[i].path, strlen(fire[i].path)))
			fail_msg("%s did not fire on '%s'", fire[i].check, fire[i].path);
	}
	for (size_t i = 0; pass[i]; i++)
		for (int id = 1; id < COF_NAME_NCHECKS; id++)
			if (cof_name_check_fires(id, pass[i], strlen(pass[i])))
				fail_msg("check %d refused '%s'", id, pass[i]);
	assert_int_equal(cof_name_check_id("nope"), 0);
	assert_int_equal(cof_name_check_fires(0, "$", 1), 0);
	assert_int_equal(cof_name_check_fires(COF_NAME_NCHECKS, "$", 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_protected_rules),
		cmocka_unit_test(test_ordinary_paths_writable),
		cmocka_unit_test(test_protected_message),
		cmocka_unit_test(test_allowances),
		cmocka_unit_test(test_excl_nocase),
		cmocka_unit_test(test_name_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
