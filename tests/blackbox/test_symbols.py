"""libcoffer.a exports only `cof_` names, so that a program linking the library
cannot collide with its internals (issue 9: 42 unprefixed globals such as
`meta_q`, `relay_end`, `lfs_join`). Needs binutils' nm (build-essential)."""

import os
import shutil
import subprocess

import harness


def test_library_exports_only_cof_names():
    lib = os.path.join(harness.ROOT, harness.BUILD, "libcoffer.a")
    if not os.path.exists(lib):
        harness.skip("no %s (build first)" % lib)
    if not shutil.which("nm"):
        harness.skip("nm is not installed (binutils)")
    out = subprocess.run(["nm", "-g", "--defined-only", lib], capture_output=True,
                         text=True, check=True).stdout
    names = sorted({f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3})
    harness.check(len(names) > 100, "nm listed %d symbols; expected the library's" % len(names))
    bad = [n for n in names if not n.startswith("cof_")]
    harness.eq(bad, [], "exported symbols without the cof_ prefix")
