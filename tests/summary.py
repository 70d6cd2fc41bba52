#!/usr/bin/env python3
"""Prints one closing line for a meson test run, counting individual test cases
(gtest cases inside each test binary) from meson's JUnit log:

    tests: 57 passed, 0 failed, 1 skipped

Usage: summary.py BUILD_DIR MESON_EXIT_CODE

With CI=true a skipped case fails the run (exit 1), naming it: a suite that
skips itself when a tool or root is missing must not vanish from CI.
"""
import os
import sys
import xml.etree.ElementTree as ET

build_dir, meson_rc = sys.argv[1], int(sys.argv[2])
passed = failed = skipped = 0
skipped_names = []
try:
    root = ET.parse(f"{build_dir}/meson-logs/testlog.junit.xml").getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
            skipped_names.append(f"{case.get('classname')}.{case.get('name')}")
        else:
            passed += 1
except (OSError, ET.ParseError) as e:
    print(f"summary: cannot read the test log: {e}", file=sys.stderr)
# A binary that crashed or timed out may leave no failing case behind.
if meson_rc != 0 and failed == 0:
    failed = 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
if skipped and os.environ.get("CI") == "true":
    print("CI=true: these tests were skipped, which CI counts as failed:", file=sys.stderr)
    for name in skipped_names:
        print(f"  {name}", file=sys.stderr)
    sys.exit(1)
