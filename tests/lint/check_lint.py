#!/usr/bin/env python3
"""Runs reprise-lint over one corpus case and checks its output exactly.

A case is a directory of .cpp files (one translation unit each) and
expected.txt, the exact text report. Optional: lint.conf (passed as
--config); --lint-arg ARG (repeatable) runs the linter with more arguments,
checked against --expected FILE instead of expected.txt.
The compile database is written to a temporary directory, with the flags
the project's own code uses. The exit code must be 1 when the report has an
error, else 0.

The sources also carry markers written by hand, independent of the report:
`// expect: RULE [RULE...]` on each line where a diagnostic is expected (a
rule named twice expects two diagnostics on that line). A marker written
`// expect[ARG]: RULE...` counts only when the linter runs with --lint-arg ARG
(e.g. `// expect[--strict]: reprise-unresolved`), and one written
`// expect[!ARG]: RULE...` only when it runs without it. Every `error:`/`warning:`
line of the report must have a marker with its rule on the line it names
(in whichever file of the case that is), and every marker must have its
diagnostic; --update rewrites the expected file but never the markers.

usage: check_lint.py LINTER CASE_DIR [--expected FILE] [--lint-arg ARG]... [--update] -- COMPILE_FLAGS...
"""
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

args = sys.argv[1:]
split = args.index("--")
linter, case, *options = args[:split]
flags = args[split + 1:]
case = pathlib.Path(case).resolve()
linter = str(pathlib.Path(linter).resolve())
update = "--update" in options
expected_name = "expected.txt"
lint_args = []
for i, option in enumerate(options):
    if option == "--expected":
        expected_name = options[i + 1]
    elif option == "--lint-arg":
        lint_args.append(options[i + 1])

with tempfile.TemporaryDirectory() as build:
    commands = [{"directory": str(case), "file": str(source),
                 "arguments": ["clang++", *flags, "-c", str(source), "-o", "/dev/null"]}
                for source in sorted(case.glob("*.cpp"))]
    pathlib.Path(build, "compile_commands.json").write_text(json.dumps(commands, indent=1))
    command = [linter, "-p", build]
    if (case / "lint.conf").exists():
        command += ["--config", "lint.conf"]
    command += lint_args
    result = subprocess.run(command, cwd=case, capture_output=True, text=True)

expected_path = case / expected_name
if update:
    expected_path.write_text(result.stdout)
expected = expected_path.read_text()
want_rc = 1 if ": error: " in expected else 0
ok = True
if result.stdout != expected:
    ok = False
    print(f"FAIL: the report differs from {expected_name}")
    import difflib
    sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True), result.stdout.splitlines(True),
                                               expected_name, "reprise-lint"))
if result.returncode != want_rc:
    ok = False
    print(f"FAIL: exit code {result.returncode}, expected {want_rc}")
    print(result.stderr[-4000:])

MARKER = re.compile(r"//\s*expect(?:\[([^\]]+)\])?:\s*((?:reprise-[a-z-]+\s*)+)")
DIAGNOSTIC = re.compile(r"^(\S+?):(\d+):\d+: (?:error|warning): .* \[(reprise-[a-z-]+)\]$")
markers = collections.Counter()  # (file, line, rule) -> how many expected
for source in sorted(case.rglob("*")):
    if source.suffix not in (".cpp", ".hpp", ".h"):
        continue
    for number, text in enumerate(source.read_text().splitlines(), 1):
        if len(re.findall(r"//\s*expect\b", text)) != len(MARKER.findall(text)):
            ok = False
            print(f"FAIL: {source.relative_to(case)}:{number}: a marker the checker cannot read: {text.strip()}")
        for only_with, rules in MARKER.findall(text):
            if only_with.startswith("!") and only_with[1:] in lint_args:
                continue
            if only_with and not only_with.startswith("!") and only_with not in lint_args:
                continue
            for rule in rules.split():
                markers[(str(source.relative_to(case)), number, rule)] += 1
reported = collections.Counter()
for text in result.stdout.splitlines():
    match = DIAGNOSTIC.match(text)
    if match:
        reported[(match[1], int(match[2]), match[3])] += 1
    elif ": error: " in text or ": warning: " in text:
        ok = False
        print(f"FAIL: a diagnostic the checker cannot read: {text}")
for (file, line, rule), count in sorted((reported - markers).items()):
    ok = False
    print(f"FAIL: {file}:{line}: {count} unexpected [{rule}] (no `// expect: {rule}` marker on that line)")
for (file, line, rule), count in sorted((markers - reported).items()):
    ok = False
    print(f"FAIL: {file}:{line}: `// expect: {rule}` marker without a reported diagnostic ({count} missing)")
if not ok:
    sys.exit(1)
print(f"ok: {case.name}: {expected.strip().splitlines()[-1]}; {sum(markers.values())} markers agree")
