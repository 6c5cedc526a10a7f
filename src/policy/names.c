/*
 * names.c — the checks of a write's path name that the guard runs before its
 * content rules (the `@CHECK` lines of src/policy/guard.rules): what a name
 * may not hold because a shell, a Windows path or a terminal would read it as
 * something else. Kept apart from guard.c (the content scanner) so each can
 * change on its own; guard.c only looks the checks up by name and runs them.
 *
 * A check sees the whole path as sent, `len` bytes (a NUL inside a name from
 * JSON is seen). Checks that are about one name (a leading '-') look at every
 * '/'-separated segment.
 *
 * Deliberately allowed: spaces, letters of any script, dots and dashes inside
 * a name, '[' and ']' (web frameworks name routes "[id].tsx"), '(' and ')'
 * without a '$' before them, '#', '%', '+', ',', '=', '@', '!' and '~' inside a
 * name.
 */
#include <string.h>
#include "policy/policy.h"

/* 1 when [p, p+len) has a ".." segment ('/' or '\' separated). */
static int fires_traversal(const char *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		int start = i == 0 || p[i - 1] == '/' || p[i - 1] == '\\';
		int stop = i + 2 == len || p[i + 2] == '/' || p[i + 2] == '\\';
		if (start && p[i] == '.' && p[i + 1] == '.' && stop)
			return 1;
	}
	return 0;
}

/* A leading '/' or '~', or a drive prefix "C:" (whatever follows: "C:x" is
 * relative to drive C's current folder on Windows). */
static int fires_absolute(const char *p, size_t len)
{
	return len && (p[0] == '/' || p[0] == '~' ||
		       (len >= 2 && p[1] == ':' &&
			((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))));
}

static int fires_backslash(const char *p, size_t len)
{
	return memchr(p, '\\', len) != NULL;
}

/* What a shell expands or splits on: '$' (any: "$(", "${", "$HOME"), '`',
 * ';', '|', '&', '<', '>'. */
static int fires_shell_meta(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] && strchr("$`;|&<>", p[i]))
			return 1;
	return 0;
}

static int fires_control(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return 1;
	return 0;
}

/* Quotes end or start a quoted word in a shell command built from the name. */
static int fires_quote(const char *p, size_t len)
{
	return memchr(p, '\'', len) || memchr(p, '"', len);
}

/* Glob and brace characters: an unquoted name expands to other files. */
static int fires_glob(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] == '*' || p[i] == '?' || p[i] == '{')
			return 1;
	return 0;
}

/* A segment that starts with '-' reads as an option ("-rf", "--exec=..."). */
static int fires_dash(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] == '-' && (i == 0 || p[i - 1] == '/'))
			return 1;
	return 0;
}

/* Bidirectional controls that make a name show other than it is: the
 * embeddings and overrides U+202A..U+202E, the isolates U+2066..U+2069, and
 * the marks U+200E, U+200F, U+061C (as UTF-8). */
static int fires_bidi(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i + 1 < len; i++) {
		if (p[i] == 0xd8 && p[i + 1] == 0x9c)
			return 1;
		if (i + 2 >= len || p[i] != 0xe2)
			continue;
		if (p[i + 1] == 0x80 && ((p[i + 2] >= 0xaa && p[i + 2] <= 0xae) ||
					 p[i + 2] == 0x8e || p[i + 2] == 0x8f))
			return 1;
		if (p[i + 1] == 0x81 && p[i + 2] >= 0xa6 && p[i + 2] <= 0xa9)
			return 1;
	}
	return 0;
}

static const struct {
	const char *name;
	int (*fires)(const char *p, size_t len);
} checks[COF_NAME_NCHECKS] = {
	{"", NULL},
	{"traversal", fires_traversal},
	{"absolute", fires_absolute},
	{"backslash", fires_backslash},
	{"shell-meta", fires_shell_meta},
	{"control", fires_control},
	{"quote", fires_quote},
	{"glob", fires_glob},
	{"dash", fires_dash},
	{"bidi", fires_bidi},
};

int cof_name_check_id(const char *name)
{
	for (int c = 1; c < COF_NAME_NCHECKS; c++)
		if (name && !strcmp(name, checks[c].name))
			return c;
	return 0;
}

int cof_name_check_fires(int id, const char *path, size_t len)
{
	if (id <= 0 || id >= COF_NAME_NCHECKS || !path)
		return 0;
	return checks[id].fires(path, len);
}
