#!/usr/bin/env python3
"""Compiles a file that includes every public header, with only what a user
gets on the include path: the public include directories (sdk, worker,
testing), the `history/` vocabulary they use, and the generated protobuf
headers. The source tree's root is not on it, so a public header that
includes a private one (`worker/workflow_instance.hpp`, anything in
`engine/`) fails to compile here.

usage: check_public_headers.py COMPILER SOURCE_ROOT PROTO_BUILD_DIR [FLAGS...]
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

compiler, source_root, proto_dir, *flags = sys.argv[1:]
root = pathlib.Path(source_root)
public_dirs = [root / "sdk/include", root / "worker/include", root / "testing/include"]
headers = sorted(str(h.relative_to(d)) for d in public_dirs for h in d.rglob("*.hpp"))

with tempfile.TemporaryDirectory() as tmp:
    # The history library's headers, alone: a user's include path has them,
    # not the rest of the source tree.
    shutil.copytree(root / "history", pathlib.Path(tmp) / "history", ignore=shutil.ignore_patterns("*.cpp", "*.build"))
    tu = pathlib.Path(tmp) / "user.cpp"
    tu.write_text("".join(f"#include <{h}>\n" for h in headers))
    includes = [f"-I{d}" for d in public_dirs] + [f"-I{tmp}", f"-I{proto_dir}"]
    result = subprocess.run([compiler, "-fsyntax-only", *flags, *includes, str(tu)], capture_output=True, text=True)

if result.returncode != 0:
    print((result.stdout + result.stderr)[-6000:])
    print(f"FAIL: the public headers ({len(headers)}) need something outside the public include path")
    sys.exit(1)
print(f"ok: {len(headers)} public headers compile with only the public include path")
