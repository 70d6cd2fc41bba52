#!/usr/bin/env python3
"""Runs the GitHub Actions job of docs/lint.md ("In CI") on a scratch project.

The job's `run:` steps from "Configure the project" on are run as the runner
would (bash -e, in the checkout, $GITHUB_OUTPUT a file, `${{ steps.ID.outputs.NAME }}`
replaced by what a step wrote there), with this build's reprise-lint on PATH
in place of the installed package (the `package` test installs the .deb and
runs it). The scratch project is a meson project of its own that finds
Reprise's headers through a reprise.pc written here, so its
compile_commands.json is its own build's, not this tree's.

Checked, on three commits of the scratch project:
  1. a workflow that reads the clock: the job fails (exit 1); the SARIF has
     the finding, every rule's helpUri names a section of docs/lint.md and has
     a fullDescription, and the result has partialFingerprints;
  2. the same code moved down by an edit above it: same fingerprint, new line;
  3. the clock read fixed: the job passes and the SARIF has no result.

usage: check_ci_job.py REPRISE_LINT DOCS_LINT_MD SOURCE_ROOT BUILD_ROOT SCRATCH_DIR
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

linter, docs, source_root, build_root, scratch = (pathlib.Path(a).resolve() for a in sys.argv[1:6])
docs_text = docs.read_text()

# The job, as docs/lint.md shows it.
block = re.search(r"```yaml\n(# \.github/workflows/reprise-lint\.yml\n.*?)```", docs_text, re.S)
if block is None:
    sys.exit(f"FAIL: no '# .github/workflows/reprise-lint.yml' yaml block in {docs}")
workflow = yaml.safe_load(block[1])
job = workflow["jobs"]["reprise-lint"]
steps = job["steps"]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


check(workflow.get("permissions") == {"contents": "read", "security-events": "write"},
      f"permissions are {workflow.get('permissions')}")
uploads = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
check(len(uploads) == 1 and uploads[0]["uses"].endswith("@v4"), "one upload-sarif@v4 step")
names = [s.get("name") for s in steps]
check("Configure the project" in names, "a step named 'Configure the project'")
shell_steps = [s for s in steps[names.index("Configure the project"):] if "run" in s]
sarif_file = uploads[0]["with"]["sarif_file"] if uploads else "reprise-lint.sarif"

# The scratch project: one workflow file, a meson build, and a reprise.pc
# that gives Reprise's headers the way an installed libreprise-dev would.
shutil.rmtree(scratch, ignore_errors=True)
project = scratch / "project"
(project / "src").mkdir(parents=True)
pc_dir = scratch / "pkgconfig"
pc_dir.mkdir()
(pc_dir / "reprise.pc").write_text(
    "Name: reprise\nDescription: Reprise's headers, from the source tree\nVersion: 0.1.0\n"
    f"Cflags: -DMSGPACK_NO_BOOST -I{source_root / 'sdk/include'} -I{build_root / 'proto'}\n")
(project / "meson.build").write_text(
    "project('shop', 'cpp', default_options: ['cpp_std=c++20'])\n"
    "static_library('shop', 'src/orders.cpp', dependencies: dependency('reprise'))\n")

ORDERS = """#include <chrono>

#include "reprise/workflow.hpp"

reprise::Workflow<long> checkout(reprise::WorkflowContext& ctx) {
  long now = %s;
  co_return now;
}
"""
CLOCK = "std::chrono::system_clock::now().time_since_epoch().count()"
FIXED = "ctx.now().time_since_epoch().count()"


def run_job():
    """Runs the shell steps on a fresh checkout (no build directory yet); returns
    the exit code of the first step that fails (0 if none)."""
    shutil.rmtree(project / "build", ignore_errors=True)
    outputs = {}
    env = dict(os.environ, PATH=f"{linter.parent}{os.pathsep}{os.environ['PATH']}",
               PKG_CONFIG_PATH=str(pc_dir))
    for step in shell_steps:
        output_file = scratch / "github_output"
        output_file.write_text("")
        script = re.sub(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}",
                        lambda m: outputs.get((m[1], m[2]), ""), step["run"])
        check("${{" not in script, f"step '{step.get('name')}' uses an expression this test does not know")
        result = subprocess.run(["bash", "-e", "-c", script], cwd=project, capture_output=True, text=True,
                                env=dict(env, GITHUB_OUTPUT=str(output_file)))
        print(f"--- step '{step.get('name')}': exit {result.returncode}\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
        for line in output_file.read_text().splitlines():
            key, _, value = line.partition("=")
            outputs[(step.get("id"), key)] = value
        if result.returncode != 0:
            return result.returncode
    return 0


def sarif():
    return json.loads((project / sarif_file).read_text())


# Commit 1: a clock read. The job fails with the linter's exit 1.
(project / "src/orders.cpp").write_text(ORDERS % CLOCK)
check(run_job() == 1, "the job with a clock read exits 1")
log = sarif()
run = log["runs"][0]
results = run["results"]
check([r["ruleId"] for r in results] == ["reprise-clock"], f"one reprise-clock result, got {results}")
headings = set(re.findall(r"^### (\S+)$", docs_text, re.M))
for rule in run["tool"]["driver"]["rules"]:
    uri = rule.get("helpUri", "")
    check(uri.endswith("#" + rule["id"]) and rule["id"] in headings,
          f"{rule['id']}: helpUri {uri!r} names no '### {rule['id']}' section of docs/lint.md")
    check(uri.startswith("file://") and pathlib.Path(uri[len("file://"):].split("#")[0]).exists(),
          f"{rule['id']}: helpUri {uri!r} is not a file that exists")
    check(len(rule.get("fullDescription", {}).get("text", "")) > 40, f"{rule['id']}: no fullDescription")
first = results[0] if results else {}
fingerprint = first.get("partialFingerprints", {}).get("reprise-lint/v1")
check(fingerprint is not None, "the result has partialFingerprints['reprise-lint/v1']")

# Commit 2: lines added above the workflow move it down; its identity stays.
(project / "src/orders.cpp").write_text("// Orders.\n// The checkout workflow.\n#include <string>\n" + ORDERS % CLOCK)
check(run_job() == 1, "the moved code still fails the job")
moved = sarif()["runs"][0]["results"]
if moved and first:
    line_before = first["locations"][0]["physicalLocation"]["region"]["startLine"]
    line_after = moved[0]["locations"][0]["physicalLocation"]["region"]["startLine"]
    check(line_after == line_before + 3, f"the finding moved from line {line_before} to {line_after}")
    check(moved[0].get("partialFingerprints", {}).get("reprise-lint/v1") == fingerprint,
          f"the fingerprint changed when the code moved: {fingerprint} -> {moved[0].get('partialFingerprints')}")

# Commit 3: fixed. The job passes, and the SARIF has no result left.
(project / "src/orders.cpp").write_text(ORDERS % FIXED)
check(run_job() == 0, "the fixed code passes the job")
check(sarif()["runs"][0]["results"] == [], "no result after the fix")

if failures:
    sys.exit(1)
shutil.rmtree(scratch, ignore_errors=True)
print("ok: the CI job of docs/lint.md fails on the finding, passes when fixed; fingerprints survive a move")
