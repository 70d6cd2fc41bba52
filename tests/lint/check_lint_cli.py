#!/usr/bin/env python3
"""reprise-lint's command line: the JSON and SARIF reports, and exit code 2
with a message naming the problem when the tool cannot do its job.

usage: check_lint_cli.py LINTER CORPUS_DIR -- COMPILE_FLAGS...
"""
import json
import pathlib
import subprocess
import sys
import tempfile

args = sys.argv[1:]
split = args.index("--")
linter, corpus = str(pathlib.Path(args[0]).resolve()), pathlib.Path(args[1]).resolve()
flags = args[split + 1:]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def database(directory, sources):
    commands = [{"directory": str(s.parent), "file": str(s),
                 "arguments": ["clang++", *flags, "-c", str(s), "-o", "/dev/null"]} for s in sources]
    pathlib.Path(directory, "compile_commands.json").write_text(json.dumps(commands))


def lint(*arguments, cwd):
    return subprocess.run([linter, *arguments], cwd=cwd, capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    cross_tu = corpus / "cross_tu"
    database(tmp, sorted(cross_tu.glob("*.cpp")))

    # JSON: every finding with its chain, locations relative to the working directory.
    r = lint("-p", str(tmp), "--format=json", cwd=cross_tu)
    check(r.returncode == 1, f"json: exit {r.returncode}, expected 1")
    report = json.loads(r.stdout)
    check(report["files"] == 3 and report["workflows"] == 1, f"json: counts {report['files']}, {report['workflows']}")
    [finding] = report["findings"]
    check(finding["rule"] == "reprise-clock" and finding["severity"] == "error", f"json: {finding}")
    check(finding["location"] == {"file": "orders.cpp", "line": 8, "column": 22}, f"json: {finding['location']}")
    check([step["function"] for step in finding["chain"]] == ["checkout", "compute_fee", "exchange_rate"],
          f"json: chain {finding['chain']}")
    check(finding["chain"][-1]["does"] == "calls std::chrono::system_clock::now", f"json: {finding['chain'][-1]}")

    # SARIF 2.1.0: the rule table, one result with its code flow.
    r = lint("-p", str(tmp), "--format", "sarif", cwd=cross_tu)
    log = json.loads(r.stdout)
    check(log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"], "sarif: version")
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    check(run["tool"]["driver"]["name"] == "reprise-lint", "sarif: driver name")
    [result] = run["results"]
    check(rules[result["ruleIndex"]]["id"] == result["ruleId"] == "reprise-clock", "sarif: rule index")
    check(result["level"] == "error", "sarif: level")
    region = result["locations"][0]["physicalLocation"]
    check(region["artifactLocation"]["uri"] == "orders.cpp" and region["region"]["startLine"] == 8, f"sarif: {region}")
    flow = result["codeFlows"][0]["threadFlows"][0]["locations"]
    check(len(flow) == 3 and flow[2]["location"]["physicalLocation"]["artifactLocation"]["uri"] == "rates.cpp",
          f"sarif: flow {flow}")

    # Only the files named: the chain is cut where the database is not read.
    r = lint("-p", str(tmp), "orders.cpp", cwd=cross_tu)
    check(r.returncode == 0 and "0 errors" in r.stdout and "(1 file)" in r.stdout, f"one file: {r.stdout}")

    # Exit 2, with the reason on stderr.
    r = lint("-p", str(tmp / "missing"), cwd=tmp)
    check(r.returncode == 2 and "cannot read a compilation database" in r.stderr, f"missing db: {r.stderr}")
    r = lint("-p", str(tmp), str(tmp / "elsewhere.cpp"), cwd=tmp)
    check(r.returncode == 2 and "elsewhere.cpp is not in" in r.stderr, f"unknown file: {r.stderr}")
    r = lint("-p", str(tmp), "--format=xml", cwd=tmp)
    check(r.returncode == 2 and "--format: xml not in {text,json,sarif}" in r.stderr, f"bad format: {r.stderr}")
    r = lint(cwd=tmp)
    check(r.returncode == 2 and "-p is required" in r.stderr and "BUILD_DIR" in r.stderr, f"no -p: {r.stderr}")
    r = lint("--version", cwd=tmp)
    check(r.returncode == 0 and r.stdout.startswith("reprise-lint "), f"version: {r.stdout}")
    (tmp / "bad.conf").write_text("allow billing::*\nexclude\n")
    r = lint("-p", str(tmp), "--config", str(tmp / "bad.conf"), cwd=tmp)
    check(r.returncode == 2 and "bad.conf:2: 'exclude' needs a pattern" in r.stderr, f"bad config: {r.stderr}")
    (tmp / "bad.conf").write_text("deny std::rand reprise-dice\n")
    r = lint("-p", str(tmp), "--config", str(tmp / "bad.conf"), cwd=tmp)
    check(r.returncode == 2 and "unknown rule id 'reprise-dice'" in r.stderr, f"bad rule: {r.stderr}")

    # A file that does not parse: the compiler's error, its name, exit 2;
    # what did parse is still reported.
    broken_dir = tmp / "broken"
    broken_dir.mkdir()
    (broken_dir / "broken.cpp").write_text('#include "reprise/workflow.hpp"\nint f() { return undeclared; }\n')
    database(broken_dir, [broken_dir / "broken.cpp", cross_tu / "orders.cpp"])
    r = lint("-p", str(broken_dir), cwd=broken_dir)
    check(r.returncode == 2, f"parse error: exit {r.returncode}")
    check("use of undeclared identifier 'undeclared'" in r.stderr, f"parse error: {r.stderr[-2000:]}")
    check("could not parse " + str(broken_dir / "broken.cpp") in r.stderr, f"parse error: {r.stderr[-2000:]}")
    check("(2 files)" in r.stdout, f"parse error: {r.stdout}")

    # --jobs 2: each job a child process; the same report, the same exit, and
    # a file that does not parse in a job is still named.
    r1 = lint("-p", str(tmp), cwd=cross_tu)
    r2 = lint("-p", str(tmp), "--jobs", "2", cwd=cross_tu)
    check(r2.returncode == r1.returncode == 1 and r2.stdout == r1.stdout, f"jobs 2: {r2.stdout} vs {r1.stdout}")
    r = lint("-p", str(broken_dir), "--jobs=2", cwd=broken_dir)
    check(r.returncode == 2 and "could not parse " + str(broken_dir / "broken.cpp") in r.stderr,
          f"jobs 2, parse error: {r.returncode} {r.stderr[-2000:]}")
    check("(2 files)" in r.stdout, f"jobs 2, parse error: {r.stdout}")

if failures:
    sys.exit(1)
print("ok: json, sarif, file selection, --jobs 2 and every exit-2 path")
