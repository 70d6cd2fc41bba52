#!/usr/bin/env python3
"""Runs a build dir's test suite with meson and prints one closing line that
counts individual test cases (gtest cases inside each test binary), from
meson's JUnit log:

    tests: 57 passed, 0 failed, 1 skipped

Usage: run_suite.py BUILD_DIR [MESON_TEST_ARG...]

Runs `meson test -C BUILD_DIR --print-errorlogs --num-processes 2 ARGS`
(the ./run test jobs) and exits non-zero when a test failed. With CI=true a
skipped case fails the run too, naming it: a suite that skips itself when a
tool or root is missing must not vanish from CI.

Each failed case's assertion messages are printed just above the closing
line: meson prints only the last lines of a failing binary's output, which
for a long binary are its stderr, not the assertion that failed.

Before the run it deletes the result files of the last one: meson reads a
gtest binary's XML after the binary ends, and a binary killed before it
wrote one (a timeout, a crash) would have the last run's cases counted.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


def delete_last_results(build_dir):
    """Meson's JUnit log and each gtest test's NAME.xml, which meson reads
    from the test's workdir, or the build dir (meson test -C runs there)."""
    stale = [os.path.join(build_dir, 'meson-logs', 'testlog.junit.xml')]
    try:
        with open(os.path.join(build_dir, 'meson-info', 'intro-tests.json')) as f:
            tests = json.load(f)
    except (OSError, ValueError):
        tests = []  # meson test sets the build dir up first; nothing of it to delete
    for test in tests:
        if test.get('protocol') == 'gtest':
            stale.append(os.path.join(test.get('workdir') or build_dir, f"{test['name']}.xml"))
    for path in stale:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def count_cases(build_dir):
    passed = 0
    failures = []  # (name, message) of each failed case
    skipped_names = []
    try:
        root = ET.parse(os.path.join(build_dir, 'meson-logs', 'testlog.junit.xml')).getroot()
        for case in root.iter('testcase'):
            problems = case.findall('failure') + case.findall('error')
            if problems:
                message = '\n'.join((p.get('message') or p.text or '').strip() for p in problems)
                failures.append((f"{case.get('classname')}.{case.get('name')}", message))
            elif case.find('skipped') is not None:
                skipped_names.append(f"{case.get('classname')}.{case.get('name')}")
            else:
                passed += 1
    except (OSError, ET.ParseError) as e:
        print(f'run_suite: cannot read the test log: {e}', file=sys.stderr)
    return passed, failures, skipped_names


def print_failures(failures, max_lines=20):
    for name, message in failures:
        print(f'FAILED {name}')
        lines = message.splitlines()
        for line in lines[:max_lines]:
            print(f'    {line}')
        if len(lines) > max_lines:
            print(f'    ... {len(lines) - max_lines} more lines')


def main():
    if len(sys.argv) < 2:
        sys.exit('usage: run_suite.py BUILD_DIR [MESON_TEST_ARG...]')
    build_dir, meson_args = sys.argv[1], sys.argv[2:]
    delete_last_results(build_dir)
    meson_rc = subprocess.run(['meson', 'test', '-C', build_dir, '--print-errorlogs', '--num-processes', '2'] +
                              meson_args).returncode
    passed, failures, skipped_names = count_cases(build_dir)
    print_failures(failures)
    failed = len(failures)
    # A binary that crashed or timed out leaves no failing case behind.
    if meson_rc != 0 and failed == 0:
        failed = 1
    print(f'tests: {passed} passed, {failed} failed, {len(skipped_names)} skipped')
    if skipped_names and os.environ.get('CI') == 'true':
        print('CI=true: these tests were skipped, which CI counts as failed:', file=sys.stderr)
        for name in skipped_names:
            print(f'  {name}', file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
