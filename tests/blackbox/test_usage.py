"""cofferd's usage text names every flag its parser takes (issue 9: the usage in
server.h had fallen behind the parser). The flags are read from the parser's
`!strcmp(a, "--flag")` tests in src/http/server.c, so a new flag without a usage
line fails here."""

import os
import re
import subprocess

import harness


def parser_flags():
    src = open(os.path.join(harness.ROOT, "src", "http", "server.c")).read()
    return sorted(set(re.findall(r'strcmp\(a, "(--[a-z0-9-]+)"\)', src)))


def test_cofferd_usage_lists_every_flag():
    flags = parser_flags()
    harness.check(len(flags) >= 10, "flags found in server.c: %r" % flags)
    exe = harness.Server(start=False).binary()
    p = subprocess.run([exe, "--help"], capture_output=True, timeout=10, text=True)
    harness.eq(p.returncode, 0, "cofferd --help exit code")
    synopsis, _, details = p.stdout.partition("\n  --")
    missing_syn = [f for f in flags if not re.search(r"\[%s[\] ]" % re.escape(f), synopsis)]
    harness.eq(missing_syn, [], "flags the parser takes but the usage synopsis omits")
    listed = re.findall(r"^  (--[a-z0-9-]+)", "  --" + details, re.M)
    harness.eq(sorted(set(f for f in flags if f not in listed) - {"--help", "-h", "--version"}),
               [], "flags the parser takes but --help does not explain")
