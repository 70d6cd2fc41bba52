#!/usr/bin/env python3
"""Tests tests/run_suite.py, which the ./run test jobs run, on a scratch meson
project of two gtest-protocol tests: one writes its XML (two cases passed),
the other is killed by SIGKILL before it writes one, as a sanitizer build's
binary that times out is. The killed one's XML of an earlier run (one case
passed) is left in place: the closing line must count only this run's cases.

Usage: run_suite_test.py SOURCE_ROOT SCRATCH_DIR
"""
import os
import shutil
import subprocess
import sys

PASSING_XML = '''<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="{n}" failures="0" disabled="0" errors="0" name="AllTests">
  <testsuite name="Suite" tests="{n}" failures="0" disabled="0" skipped="0" errors="0">
{cases}
  </testsuite>
</testsuites>
'''


def passing_xml(n):
    cases = '\n'.join(f'    <testcase name="Case{i}" status="run" result="completed" classname="Suite" />'
                      for i in range(n))
    return PASSING_XML.format(n=n, cases=cases)


def main():
    source_root, scratch = sys.argv[1], os.path.abspath(sys.argv[2])
    shutil.rmtree(scratch, ignore_errors=True)
    project = os.path.join(scratch, 'project')
    build = os.path.join(scratch, 'build')
    os.makedirs(project)
    with open(os.path.join(project, 'passes.py'), 'w') as f:
        # meson passes --gtest_output=xml:PATH to a gtest-protocol test.
        f.write('import sys\n'
                'path = [a for a in sys.argv if a.startswith("--gtest_output=xml:")][0].split(":", 1)[1]\n'
                f'open(path, "w").write({passing_xml(2)!r})\n')
    with open(os.path.join(project, 'killed.py'), 'w') as f:
        f.write('import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n')
    with open(os.path.join(project, 'meson.build'), 'w') as f:
        f.write("project('run-suite-scratch')\n"
                "python = find_program('python3')\n"
                "test('passes', python, args: [files('passes.py')], protocol: 'gtest')\n"
                "test('killed', python, args: [files('killed.py')], protocol: 'gtest')\n")
    subprocess.run(['meson', 'setup', build, project], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(build, 'killed.xml'), 'w') as f:
        f.write(passing_xml(1))  # what the killed binary wrote in an earlier run

    env = dict(os.environ)
    env.pop('CI', None)
    result = subprocess.run([sys.executable, os.path.join(source_root, 'tests', 'run_suite.py'), build],
                            capture_output=True, text=True, env=env)
    closing = [line for line in result.stdout.splitlines() if line.startswith('tests: ')]
    print(result.stdout[-2000:], result.stderr[-2000:])
    failures = []
    if closing != ['tests: 2 passed, 1 failed, 0 skipped']:
        failures.append(f'closing line {closing}, expected tests: 2 passed, 1 failed, 0 skipped '
                        '(the killed binary counted, and its earlier XML not)')
    if result.returncode == 0:
        failures.append('run_suite.py exited 0 although a test was killed')
    if failures:
        sys.exit('\n'.join(failures))
    shutil.rmtree(scratch)


if __name__ == '__main__':
    main()
