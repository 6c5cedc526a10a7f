/* tests/toml_check.c — prints a TOML file as JSON (exit 0) or its error (exit 1): the
 * driver for checking util/toml.c against the TOML test suite by hand (docs/cli.md). */
#include <stdio.h>
#include <stdlib.h>
#include "util/toml.h"
int main(int argc, char **argv) {
	FILE *f = fopen(argv[1], "rb"); if (!f) return 3;
	static char buf[1 << 21]; size_t n = fread(buf, 1, sizeof buf, f); fclose(f);
	json_t *o; cof_err e = {0};
	if (cof_toml_parse(buf, n, &o, &e)) { printf("ERR %s\n", e.msg); return 1; }
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY); puts(s); return 0;
}
