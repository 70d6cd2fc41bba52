#!/usr/bin/env python3
"""Compiles one snippet with -fsyntax-only and checks the outcome.

A NAME.fail.cpp must not compile, and its diagnostics must contain the text
of every `// expect: TEXT` line in it (and of `// expect-gcc:` or
`// expect-clang:` lines for that compiler, where the two spell types
differently). Its twin NAME.pass.cpp, which differs
only in the fix, must compile: a broken include path cannot pass a case.

usage: check_compile.py COMPILER SNIPPET [FLAGS...]
"""
import subprocess
import sys

compiler, snippet, *flags = sys.argv[1:]
text = open(snippet, encoding="utf-8").read()
family = "clang" if "clang" in compiler else "gcc"
expects = []
for line in text.splitlines():
    for tag in ("// expect:", f"// expect-{family}:"):
        if tag in line:
            expects.append(line.split(tag, 1)[1].strip())
result = subprocess.run([compiler, "-fsyntax-only", *flags, snippet], capture_output=True, text=True)
output = result.stdout + result.stderr

if snippet.endswith(".pass.cpp"):
    if result.returncode != 0:
        print(output[-6000:])
        print(f"FAIL: {snippet} should compile with {compiler}")
        sys.exit(1)
    print(f"ok: {snippet} compiles with {compiler}")
    sys.exit(0)

if result.returncode == 0:
    print(f"FAIL: {snippet} compiled with {compiler}, it must not")
    sys.exit(1)
if not expects:
    print(f"FAIL: {snippet} has no `// expect:` line")
    sys.exit(1)
missing = [e for e in expects if e not in output]
if missing:
    print(output[-6000:])
    print(f"FAIL: {compiler} did not say: {missing}")
    sys.exit(1)
print(f"ok: {snippet} fails with {compiler}, saying {expects}")
