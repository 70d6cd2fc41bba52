#!/usr/bin/env python3
"""How long reprise-lint takes against the compiler's own parse of the same
files (clang++-19 -fsyntax-only), for the examples and for the lint corpus.
Runs are interleaved, one job each (--jobs 1 against a sequential clang), and
reported as medians with the ratio and the spread.

usage: bench/lint_speed.py BUILD_DIR [ROUNDS]   (BUILD_DIR has reprise-lint built)
"""
import json
import pathlib
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

build = pathlib.Path(sys.argv[1]).resolve()
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
root = pathlib.Path(__file__).resolve().parent.parent
linter = build / "lint" / "reprise-lint"
flags = ["-std=c++20", "-DMSGPACK_NO_BOOST", f"-I{root}/sdk/include", f"-I{build}/proto", f"-I{root}"]


def without_output_flags(args):
    """A build's compile command as a parse: no -c, no output or dependency files."""
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MQ", "-MF", "-MT"):
            skip = True
        elif a not in ("-c", "-MD", "-MMD"):
            kept.append(a)
    return kept


def examples():
    db = json.loads((build / "compile_commands.json").read_text())
    wanted = {str(root / "examples" / f) for f in ("main.cpp", "run_all.cpp")}
    syntax = []
    for e in db:
        if str((pathlib.Path(e["directory"]) / e["file"]).resolve()) in wanted:
            args = shlex.split(e["command"]) if "command" in e else e["arguments"]
            syntax.append((e["directory"], ["clang++-19", "-fsyntax-only", "-w", *without_output_flags(args[1:])]))
    return str(build), sorted(wanted), syntax


def corpus(tmp):
    sources = sorted((root / "tests/lint/cases").glob("*/*.cpp"))
    commands = [{"directory": str(s.parent), "file": str(s), "arguments": ["clang++-19", *flags, "-c", str(s)]}
                for s in sources]
    (tmp / "compile_commands.json").write_text(json.dumps(commands))
    syntax = [(str(s.parent), ["clang++-19", "-fsyntax-only", "-w", *flags, str(s)]) for s in sources]
    return str(tmp), [str(s) for s in sources], syntax


def timed(commands):
    start = time.perf_counter()
    for cwd, command in commands:
        subprocess.run(command, cwd=cwd, capture_output=True)  # findings exit 1: still a run
    return time.perf_counter() - start


with tempfile.TemporaryDirectory() as tmp:
    for name, (db_dir, files, syntax) in {"examples": examples(), "corpus": corpus(pathlib.Path(tmp))}.items():
        lint_cmd = [(str(root), [str(linter), "-p", db_dir, "--jobs", "1", *files])]
        timed(lint_cmd)  # warm the page cache
        lint_times, syntax_times = [], []
        for _ in range(rounds):
            syntax_times.append(timed(syntax))
            lint_times.append(timed(lint_cmd))
        ratios = sorted(l / s for l, s in zip(lint_times, syntax_times))
        print(f"{name}: {len(files)} files; reprise-lint median {statistics.median(lint_times):.2f} s "
              f"[{min(lint_times):.2f}-{max(lint_times):.2f}], clang++ -fsyntax-only median "
              f"{statistics.median(syntax_times):.2f} s [{min(syntax_times):.2f}-{max(syntax_times):.2f}], "
              f"ratio median {statistics.median(ratios):.2f} [{ratios[0]:.2f}-{ratios[-1]:.2f}] over {rounds} rounds")
