#!/usr/bin/env python3
"""Tests tests/run_suite.py, which the ./run test jobs run, on a scratch meson
project of three gtest-protocol tests: one writes its XML (two cases
passed), one writes a failed case, and one is killed by SIGKILL before it
writes its XML, as a sanitizer build's binary that times out is. The killed
one's XML of an earlier run (one case passed) is left in place: the closing
line must count only this run's cases, and the failed case's assertion
message must be printed above it.

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


FAILED_ASSERTION = 'Expected equality of these values: count_events(history) Which is: 3 2'

FAILING_XML = f'''<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" failures="1" disabled="0" errors="0" name="AllTests">
  <testsuite name="Suite" tests="1" failures="1" disabled="0" skipped="0" errors="0">
    <testcase name="Broken" status="run" result="completed" classname="Suite">
      <failure message="broken.cpp:12&#x0A;{FAILED_ASSERTION}" type=""><![CDATA[broken.cpp:12
{FAILED_ASSERTION}]]></failure>
    </testcase>
  </testsuite>
</testsuites>
'''


def passing_xml(n):
    cases = '\n'.join(f'    <testcase name="Case{i}" status="run" result="completed" classname="Suite" />'
                      for i in range(n))
    return PASSING_XML.format(n=n, cases=cases)


def gtest_writing(xml):
    """A test's source that writes `xml` where meson asks for it."""
    return ('import sys\n'
            'path = [a for a in sys.argv if a.startswith("--gtest_output=xml:")][0].split(":", 1)[1]\n'
            f'open(path, "w").write({xml!r})\n')


def main():
    source_root, scratch = sys.argv[1], os.path.abspath(sys.argv[2])
    shutil.rmtree(scratch, ignore_errors=True)
    project = os.path.join(scratch, 'project')
    build = os.path.join(scratch, 'build')
    os.makedirs(project)
    # meson passes --gtest_output=xml:PATH to a gtest-protocol test.
    with open(os.path.join(project, 'passes.py'), 'w') as f:
        f.write(gtest_writing(passing_xml(2)))
    with open(os.path.join(project, 'fails.py'), 'w') as f:
        f.write(gtest_writing(FAILING_XML) + 'sys.exit(1)\n')
    with open(os.path.join(project, 'killed.py'), 'w') as f:
        f.write('import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n')
    with open(os.path.join(project, 'meson.build'), 'w') as f:
        f.write("project('run-suite-scratch')\n"
                "python = find_program('python3')\n"
                "test('passes', python, args: [files('passes.py')], protocol: 'gtest')\n"
                "test('fails', python, args: [files('fails.py')], protocol: 'gtest')\n"
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
    if closing != ['tests: 2 passed, 2 failed, 0 skipped']:
        failures.append(f'closing line {closing}, expected tests: 2 passed, 2 failed, 0 skipped '
                        '(the failed case and the killed binary counted, and its earlier XML not)')
    if 'FAILED Suite.Broken' not in result.stdout or FAILED_ASSERTION not in result.stdout:
        failures.append('the failed case and its assertion message were not printed')
    if result.returncode == 0:
        failures.append('run_suite.py exited 0 although a test was killed')
    if failures:
        sys.exit('\n'.join(failures))
    shutil.rmtree(scratch)


if __name__ == '__main__':
    main()
