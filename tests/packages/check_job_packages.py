#!/usr/bin/env python3
"""Checks ./run's package lists against what the build uses, so they cannot drift.

`./run demo` and `./run build` install BUILD_PACKAGES only, `./run lint` adds
LINT_PACKAGES, `./run test` everything (./run packages JOB prints a job's
list). For each job this takes what the build of that job's targets used on
this machine, from the build directory itself:

  - every header the compiler read (ninja's deps log),
  - every program the build's commands run (the compiler among them), every
    file they name (libraries, protoc's plugin) and the libraries of their
    -l names, and meson, ninja, pkg-config and dpkg-architecture;

and for `./run build` also what meson looks up when it sets a new build dir
up as `./run demo` does (in SCRATCH_DIR: programs such as protoc and CMake,
pkg-config files). It finds the Debian package each file came from (dpkg's
file lists), and fails when one is neither in the job's list nor pulled in
by it (Depends and Pre-Depends, as apt installs without recommends), nor part
of every Debian system (Essential or Priority required). It also fails when
a package of BUILD_PACKAGES gives that build nothing, so the demo's list
stays what the demo needs.

`./run package` and `./run package --check` (and the test suite, whose
`package` and `downstream` tests run the same scripts) must also install every
program their shell scripts run (packaging/debian, tests/downstream): each
word of a script that is a program on PATH, builtins aside, as the compilers
the downstream build compiles the public headers with.

What the tests use only when they run (chromium, postgresql-15, openssl) is
not compiled against, so not checked here; ./run says why each is there.

Usage: check_job_packages.py SOURCE_ROOT BUILD_DIR SCRATCH_DIR
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

# The scripts `./run package` runs, and those `./run package --check` adds.
PACKAGE_SCRIPTS = ['packaging/debian/build-debs.sh']
PACKAGE_CHECK_SCRIPTS = ['packaging/debian/check-debs.sh', 'tests/downstream/build_against.sh']
# And those the test suite's package and downstream tests run.
TEST_SCRIPTS = PACKAGE_SCRIPTS + PACKAGE_CHECK_SCRIPTS + ['packaging/debian/test-debs.sh', 'tests/downstream/run.sh']
# Words that are programs on PATH too but that sh runs itself.
SHELL_BUILTINS = {'[', 'alias', 'break', 'cd', 'command', 'continue', 'echo', 'eval', 'exec', 'exit', 'export',
                  'false', 'getopts', 'hash', 'kill', 'local', 'printf', 'pwd', 'read', 'return', 'set', 'shift',
                  'test', 'times', 'trap', 'true', 'type', 'ulimit', 'umask', 'unset', 'wait'}

# Where -l names are looked up when no -L names the directory.
LIBRARY_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib', '/lib/x86_64-linux-gnu', '/lib']


def run(*command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f'{" ".join(command)} failed ({result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-3000:]}')
    return result.stdout


class Dpkg:
    """The installed packages: who owns each file, and what each depends on."""

    def __init__(self):
        self.owner = {}
        for listing in glob.glob('/var/lib/dpkg/info/*.list'):
            package = os.path.basename(listing)[:-len('.list')].split(':')[0]
            with open(listing, encoding='utf-8', errors='replace') as f:
                for line in f:
                    self.owner.setdefault(line.rstrip('\n'), package)
        self.depends = {}
        self.providers = {}
        self.base = set()
        fields = '${Package}\t${db:Status-Status}\t${Priority}\t${Essential}\t${Depends}, ${Pre-Depends}\t${Provides}\n'
        for line in run('dpkg-query', '-W', '-f', fields).splitlines():
            package, status, priority, essential, depends, provides = line.split('\t')
            if status != 'installed':
                continue
            self.depends[package] = [[name(alt) for alt in group.split('|')]
                                     for group in depends.split(',') if group.strip()]
            for provided in provides.split(','):
                if provided.strip():
                    self.providers.setdefault(name(provided), set()).add(package)
            if essential == 'yes' or priority == 'required':
                self.base.add(package)

    def owner_of(self, path):
        """The package that installed path (through each symlink it goes through), or None."""
        seen = set()
        while path and path not in seen:
            seen.add(path)
            for candidate in (path, path.replace('/usr/lib/', '/lib/', 1), path.replace('/usr/bin/', '/bin/', 1)):
                if candidate in self.owner:
                    return self.owner[candidate]
            if not os.path.islink(path):
                break
            path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
        return None

    def closure(self, packages):
        """packages and everything they depend on, among the installed ones."""
        result = set()
        todo = list(packages)
        while todo:
            package = todo.pop()
            for installed in {package} | self.providers.get(package, set()):
                if installed in result or installed not in self.depends:
                    continue
                result.add(installed)
                for group in self.depends[installed]:
                    todo.extend(group)
        return result


def name(relation):
    """'libfoo-dev:any (>= 1.2)' -> 'libfoo-dev'."""
    return relation.strip().split(' ')[0].split(':')[0]


class Build:
    """What the build directory says its targets used."""

    def __init__(self, build_dir):
        self.dir = build_dir
        self.targets = json.loads(run('meson', 'introspect', build_dir, '--targets'))
        self.headers_of = {}
        current = None
        for line in run('ninja', '-C', build_dir, '-t', 'deps').splitlines():
            if line and not line.startswith(' '):
                current = line.split(':')[0]
                self.headers_of[current] = []
            elif line.strip() and current:
                self.headers_of[current].append(line.strip())

    def outputs(self, keep):
        """The ninja outputs of the targets whose meson.build path (from the root) keep() accepts."""
        with open(os.path.join(self.dir, 'meson-info', 'meson-info.json'), encoding='utf-8') as f:
            source_root = json.load(f)['directories']['source']
        outputs = []
        for target in self.targets:
            if keep(os.path.relpath(target['defined_in'], source_root)):
                outputs += [os.path.relpath(f, os.path.realpath(self.dir)) for f in target['filename']]
        return outputs

    def used_files(self, outputs):
        """(file, why) for each system file building outputs used."""
        used = []
        inputs = run('ninja', '-C', self.dir, '-t', 'inputs', *outputs).split()
        for obj in inputs:
            for header in self.headers_of.get(obj, []):
                if header.startswith('/'):
                    used.append((header, 'a header ' + obj + ' includes'))
        for line in run('ninja', '-C', self.dir, '-t', 'commands', *outputs).splitlines():
            for command in line.split('&&'):
                words = shlex.split(command)
                if not words:
                    continue
                program = shutil.which(words[0]) or words[0]
                used.append((program, 'a program the build runs: ' + words[0]))
                # Files named on the command line: libraries a link names, protoc's plugin.
                for word in words[1:]:
                    path = word.split('=')[-1]
                    if path.startswith('/') and os.path.isfile(path):
                        used.append((path, 'named by the command ' + words[0]))
                if '-c' in words:
                    continue  # a compile: its headers are in the deps log
                library_dirs = [w[2:] for w in words if w.startswith('-L')] + LIBRARY_DIRS
                for word in words:
                    if word.startswith('-l') and len(word) > 2:
                        for directory in library_dirs:
                            found = [os.path.join(directory, 'lib' + word[2:] + ext) for ext in ('.so', '.a')]
                            found = [f for f in found if os.path.exists(f)]
                            if found:
                                used.append((found[0], 'a library a link names: ' + word))
                                break
        # meson asks dpkg-architecture for the library directory (lib/x86_64-linux-gnu) at setup.
        for program in ('meson', 'ninja', 'pkg-config', 'dpkg-architecture'):
            used.append((shutil.which(program) or program, 'the build itself'))
        return used


def configure_used(source_root, scratch):
    """(file, why) for each program and pkg-config file a new build dir set up as `./run demo` does
    (the linter off: what -Dlint=auto finds without LLVM) looks up."""
    shutil.rmtree(scratch, ignore_errors=True)
    run('meson', 'setup', scratch, source_root, '-Dtests=false', '-Dbenchmarks=false', '-Dlint=disabled')
    used = []
    with open(os.path.join(scratch, 'meson-logs', 'meson-log.txt'), encoding='utf-8', errors='replace') as f:
        for line in f:
            # Program protoc found: YES (/usr/bin/protoc) / Found CMake: /usr/bin/cmake (3.25.1)
            match = re.match(r'Program (\S+) found: YES \(([^\s)]+)', line) or \
                re.match(r'Found (\S+): (/\S+)', line)
            if match:
                used.append((match.group(2), 'a program meson looks up: ' + match.group(1)))
            match = re.match(r'Run-time dependency (\S+) found: YES', line)
            if match:
                pc_file = subprocess.run(['pkg-config', '--path', match.group(1)], capture_output=True, text=True)
                if pc_file.returncode == 0:
                    used.append((pc_file.stdout.strip(), 'the pkg-config file of ' + match.group(1)))
    shutil.rmtree(scratch, ignore_errors=True)
    return used


def script_programs(source_root, scripts):
    """(file, why) for each program the shell scripts name: every word (comments and quoted
    strings aside) that is a program on PATH and not a builtin, wherever it stands (a compiler
    in a `for compiler in ...` list too)."""
    used = []
    for script in scripts:
        with open(os.path.join(source_root, script), encoding='utf-8') as f:
            lexer = shlex.shlex(f.read(), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        for word in sorted(set(lexer) - SHELL_BUILTINS):
            program = shutil.which(word) if '/' not in word and '$' not in word else None
            if program:
                used.append((program, 'a program ' + script + ' runs: ' + word))
    return used


def check(job, packages, used, dpkg):
    """Failures: each used file from a package `./run JOB` does not install."""
    allowed = dpkg.closure(packages) | dpkg.base
    failures = []
    reported = set()
    for path, why in used:
        package = dpkg.owner_of(path)
        if package is None or package in allowed or package in reported:
            continue  # not from a package (a pyenv shim, the build's own files), or installed by the job
        reported.add(package)
        failures.append(f'./run {job} does not install {package}, which has {path} ({why})')
    return failures


def unused(packages, used, dpkg):
    """Failures: each package of the list the build takes nothing from, itself or through what
    only it pulls in (libboost-context-dev: the headers and library of its 1.74 packages)."""
    owners = {dpkg.owner_of(path) for path, _ in used}
    failures = []
    for package in packages:
        others = dpkg.closure(p for p in packages if p != package) | dpkg.base
        if package not in owners and not (dpkg.closure([package]) - others) & owners:
            failures.append(f'{package} is in BUILD_PACKAGES, but the build of the server, the CLI, the libraries '
                            'and the examples uses nothing of it')
    return failures


def main():
    source_root, build_dir, scratch = sys.argv[1:4]
    dpkg = Dpkg()
    build = Build(build_dir)

    def job_packages(*job):
        return run(os.path.join(source_root, 'run'), 'packages', *job).split()

    def not_under(*dirs):
        return lambda defined_in: not any(defined_in.startswith(d + '/') for d in dirs)

    # (job, the targets its build compiles, the scripts it runs)
    jobs = [
        ('build', build.outputs(not_under('tests', 'bench', 'lint')), []),
        ('lint', build.outputs(not_under('tests', 'bench')), []),
        ('package', build.outputs(not_under('tests', 'bench')), PACKAGE_SCRIPTS),
        ('package --check', build.outputs(not_under('tests', 'bench')), PACKAGE_SCRIPTS + PACKAGE_CHECK_SCRIPTS),
        ('test', build.outputs(lambda defined_in: True), TEST_SCRIPTS),
    ]
    failures = []
    for job, outputs, scripts in jobs:
        packages = job_packages(*job.split())
        for package in packages:
            if package not in dpkg.depends:
                failures.append(f'{package} (./run {job}) is not installed here')
        used = build.used_files(outputs) + script_programs(source_root, scripts)
        if job == 'build':
            used += configure_used(source_root, scratch)
        failures += check(job, packages, used, dpkg)
        if job == 'build':
            failures += unused(packages, used, dpkg)
        print(f'./run {job}: {len(outputs)} outputs, {len(used)} files and programs used, '
              f'{len(packages)} packages listed')
    if job_packages('demo') != job_packages('build'):
        failures.append('./run demo and ./run build install different lists')
    for failure in failures:
        print('FAIL: ' + failure)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
