#!/usr/bin/env python3
"""The web UI in a real browser: headless Chromium, driven over the DevTools
protocol (a pipe, --remote-debugging-pipe; no WebSocket library needed).

It starts reprise-server with --ui-listen and a reprise-examples worker,
starts workflows with the reprise CLI, then, as a person would: lists them
and filters, opens one, runs a query, sends a signal through the
confirmation, terminates another, follows a claim-check link, checks that a
workflow id holding HTML stays text, that a page of another origin cannot
terminate a workflow, and reads the server page. It checks the DOM at each
step and saves screenshots of the main pages.

    REPRISE_SERVER=… REPRISE_EXAMPLES=… REPRISE_CLI=… browser_test.py [--screenshots DIR]

Chromium missing is a failure, not a skip: ./run installs it (PACKAGES).
Exit status 0 when every check passed.
"""
import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TIMEOUT = 15  # seconds any one wait may take


class Failed(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failed(what)
    print("ok:", what, flush=True)


class Browser:
    """Chromium with its DevTools protocol on fds 3 (commands) and 4 (events
    and answers), NUL-separated JSON."""

    def __init__(self, binary, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # The child sees them as fds 3 and 4 (kept open: subprocess closes
        # every fd not in pass_fds after preexec_fn).
        def wire():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
             "--user-data-dir=" + profile, "--window-size=1280,900", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id = 0
        self.buffer = b""
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        self.console_errors = []

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise Failed("Chromium did not answer in time")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise Failed("Chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            answer = self._read_message(deadline)
            if answer.get("method") == "Runtime.exceptionThrown":
                self.console_errors.append(answer["params"]["exceptionDetails"].get("text", ""))
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise Failed(f"{method}: {answer['error']}")
                return answer["result"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate",
                           {"expression": expression, "awaitPromise": True, "returnByValue": True})
        if "exceptionDetails" in result:
            raise Failed(f"page script failed: {expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, what):
        deadline = time.monotonic() + TIMEOUT
        value = None
        # An element comes back by value as {}: true, as in the page.
        wrapped = f"(async () => {{ const v = await ({expression}); return v instanceof Node ? true : v; }})()"
        while time.monotonic() < deadline:
            value = self.evaluate(wrapped)
            if value:
                return value
            time.sleep(0.1)
        raise Failed(f"timed out waiting for {what} ({expression} was {value!r})")

    def goto(self, url):
        self.call("Page.navigate", {"url": url})

    def click(self, selector):
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    def type(self, selector, text):
        self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
                      f"e.value = {json.dumps(text)}; e.dispatchEvent(new Event('input')); }})()")

    def text(self, selector):
        return self.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")

    def screenshot(self, path, height=900):
        """The page's top `height` pixels (more than the window: the page is
        laid out that tall first)."""
        content = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": 1280, "height": min(height, max(900, content["height"])), "scale": 1}
        data = self.call("Page.captureScreenshot",
                         {"format": "png", "clip": clip, "captureBeyondViewport": True})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        print("screenshot:", path, flush=True)

    def close(self):
        try:
            self.session = None
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_process(args, ready_pattern, log_path, environment=None):
    log = open(log_path, "w")
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, env=environment)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        match = re.search(ready_pattern, line)
        if match:
            # Keep draining stdout so the child never blocks on a full pipe.
            threading.Thread(target=lambda: process.stdout.read(), daemon=True).start()
            return process, match
    process.kill()
    raise Failed(f"{args[0]} did not start (see {log_path})")


def stop(process):
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class ForeignPage(BaseHTTPRequestHandler):
    """A page of another origin that tries to terminate a workflow."""
    ui = ""
    target = ""

    def do_GET(self):
        body = f"""<!doctype html><body><script>
          const ui = {json.dumps(ForeignPage.ui)}, id = {json.dumps(ForeignPage.target)};
          const body = JSON.stringify({{id, reason: 'from a foreign page'}});
          window.attempts = Promise.allSettled([
            fetch(ui + '/api/terminate', {{method: 'POST', mode: 'no-cors', headers: {{'Content-Type': 'text/plain'}}, body}}),
            fetch(ui + '/api/terminate', {{method: 'POST', headers: {{'Content-Type': 'application/json', 'X-Reprise-UI': '1'}}, body}}),
          ]).then(r => r.map(x => x.status));
        </script></body>""".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def server_environment():
    """This environment, except that under ./run test-tsan the server gets
    REPRISE_SERVER_TSAN_OPTIONS as its TSAN_OPTIONS (tests/tsan_server.supp),
    as tests/store/child_process.hpp gives every server the C++ tests start."""
    environment = dict(os.environ)
    if "REPRISE_SERVER_TSAN_OPTIONS" in environment:
        environment["TSAN_OPTIONS"] = environment["REPRISE_SERVER_TSAN_OPTIONS"]
    return environment


def run(env, work, screenshots):
    server, match = start_process(
        [env["server"], "--db", os.path.join(work, "ui.db"), "--listen", "127.0.0.1:0",
         "--ui-listen", "127.0.0.1:0", "--claim-check-threshold-bytes", "1024", "--poll-timeout-ms", "1000",
         "--log-level", "warn"],
        r"listening on (127\.0\.0\.1:\d+).* ui on (127\.0\.0\.1:\d+)", os.path.join(work, "server.log"),
        server_environment())
    processes = [server]
    browser = None
    foreign = None
    try:
        address, ui = match.group(1), "http://" + match.group(2)
        worker, _ = start_process([env["examples"], "--address", address, "worker"], r"worker ready",
                                  os.path.join(work, "worker.log"))
        processes.append(worker)

        def cli(*args):
            result = subprocess.run([env["cli"], "--address", address, *args], capture_output=True, text=True,
                                    timeout=TIMEOUT)
            if result.returncode != 0:
                raise Failed(f"reprise {' '.join(args)}: {result.stderr}")
            return result.stdout

        def start(workflow_type, workflow_id, *inputs):
            args = ["workflow", "start", "--type", workflow_type, "-w", workflow_id, "-t", "examples"]
            for i in inputs:
                args += ["--input", json.dumps(i)]
            cli(*args)

        xss_id = '<img src=x onerror="window.__xss=1">'
        start("hello", "hello-ada", "Ada")
        start("transfer", "transfer-closed", {"from": "alice", "to": "closed-bob", "cents": 1250})
        start("count_all", "count-words", ["one two", "three four five"])
        # Past the 1024-byte threshold even compressed: a claim-check blob.
        start("hello", "hello-big", base64.b64encode(os.urandom(2400)).decode())
        start("hello", xss_id, "Mallory")
        start("expense", "expense-laptop", "laptop", 600000)
        start("expense", "expense-chair", "chair", 600000)
        browser = Browser(env["chromium"], os.path.join(work, "chromium-profile"))

        # The list, newest first, with every workflow.
        browser.goto(ui + "/")
        browser.wait_for("document.querySelectorAll('#workflows tbody tr[data-id]').length >= 7", "the list")
        ids = browser.evaluate("[...document.querySelectorAll('#workflows tbody tr')].map(r => r.dataset.id)")
        check(set(ids) >= {"hello-ada", "transfer-closed", "count-words", "hello-big", xss_id,
                           "expense-laptop", "expense-chair"}, "the list shows every workflow started")
        # The id with HTML in it is text, and its onerror never ran.
        check(browser.evaluate(f"[...document.querySelectorAll('a.wf-link')].some(a => a.textContent === {json.dumps(xss_id)})"),
              "a workflow id holding HTML shows as its text")
        check(browser.evaluate("document.querySelectorAll('#workflows img').length === 0 && window.__xss === undefined"),
              "no element or script came from the workflow id")

        # Wait until the short ones have closed, so the screenshot shows them.
        browser.wait_for("fetch('/api/workflows?status=RUNNING').then(r => r.json()).then(p => p.executions.length === 2)",
                         "every workflow but the two expenses to close")
        browser.evaluate("location.reload()")
        browser.wait_for("document.querySelectorAll('#workflows tbody tr[data-id]').length >= 7", "the list again")
        if screenshots:
            browser.screenshot(os.path.join(screenshots, "ui-workflows.png"))

        # Filters: type, then status, then id prefix, through the form.
        browser.type("#f-type", "expense")
        browser.click("#f-apply")
        browser.wait_for("location.hash.includes('type=expense') && "
                         "[...document.querySelectorAll('#workflows tbody tr[data-id]')].length === 2", "the type filter")
        browser.type("#f-type", "")
        browser.evaluate("document.querySelector('#f-status').value = 'FAILED'")
        browser.click("#f-apply")
        browser.wait_for("(() => { const r = [...document.querySelectorAll('#workflows tbody tr[data-id]')];"
                         " return r.length === 1 && r[0].dataset.id === 'transfer-closed'; })()", "the status filter")
        check(True, "filters by type and by status")
        browser.evaluate("document.querySelector('#f-status').value = ''")
        browser.type("#f-id-prefix", "hello-")
        browser.click("#f-apply")
        browser.wait_for("(() => { const r = [...document.querySelectorAll('#workflows tbody tr[data-id]')].map(x => x.dataset.id).sort();"
                         " return r.join(',') === 'hello-ada,hello-big'; })()", "the id prefix filter")
        check(True, "filters by workflow id prefix")
        # Paging, two a page (not offered in the form; the URL takes it).
        browser.goto(ui + "/#/workflows?page_size=2")
        browser.wait_for("document.querySelectorAll('#workflows tbody tr[data-id]').length === 2 && document.querySelector('#next-page')",
                         "a first page of two")
        first = browser.evaluate("[...document.querySelectorAll('#workflows tbody tr[data-id]')].map(r => r.dataset.id)")
        browser.click("#next-page")
        browser.wait_for("document.querySelector('#first-page') && document.querySelectorAll('#workflows tbody tr[data-id]').length === 2",
                         "a second page")
        second = browser.evaluate("[...document.querySelectorAll('#workflows tbody tr[data-id]')].map(r => r.dataset.id)")
        check(not set(first) & set(second), "the next page holds other workflows")

        # One workflow: the completed hello, its activity grouped.
        browser.goto(ui + "/#/workflow/hello-ada")
        browser.wait_for("document.querySelector('#wf-status') && document.querySelector('#wf-status').textContent === 'COMPLETED'",
                         "hello-ada completed")
        check('"Hello, Ada!"' in browser.text("#wf-result"), "the result is shown as JSON")
        check('"Ada"' in browser.text("#wf-input"), "the input is shown as JSON")
        check(browser.evaluate("[...document.querySelectorAll('#history .group.activity')].some(g => g.textContent.includes('Activity greet')"
                               " && g.querySelectorAll('.event').length === 3)"),
              "the activity's scheduled, started and completed events form one group")

        # The failed transfer: the failure, and the activity's failure grouped.
        browser.goto(ui + "/#/workflow/transfer-closed")
        browser.wait_for("(document.querySelector('#wf-status') || {}).textContent === 'FAILED'", "transfer-closed failed")
        check("TransferFailed" in browser.text("#wf-result"), "a failed workflow shows its failure")
        check(browser.evaluate("document.querySelectorAll('#history .group.activity.failed').length === 1"),
              "the failed deposit's group is marked failed")

        # The children.
        browser.goto(ui + "/#/workflow/count-words")
        browser.wait_for("(document.querySelector('#wf-status') || {}).textContent === 'COMPLETED'", "count-words completed")
        check(browser.evaluate("document.querySelectorAll('#history .group.child').length === 2"), "each child is one group")
        check(browser.text("#wf-result").strip() == "5", "the parent's result sums its children")

        # A claim-check input: a link that downloads the blob.
        browser.goto(ui + "/#/workflow/hello-big")
        browser.wait_for("document.querySelector('#wf-input a.blob-link')", "the claim-check link")
        size = browser.evaluate("fetch(document.querySelector('#wf-input a.blob-link').href).then(r => r.blob()).then(b => b.size)")
        check(size is not None and size > 1024, f"the claim-check link downloads the blob ({size} bytes)")

        # Query, then signal through the confirmation: the expense completes.
        browser.goto(ui + "/#/workflow/expense-laptop")
        browser.wait_for("(document.querySelector('#wf-status') || {}).textContent === 'RUNNING'", "expense-laptop running")
        browser.type("#query-name", "status")
        browser.click("#query-run")
        browser.wait_for("document.querySelector('#query-answer')", "the query's answer")
        check("waiting for a decision on laptop" in browser.text("#query-answer"), "a query answers from the workflow")
        browser.type("#signal-name", "decide")
        browser.type("#signal-args", '[{"by": "ui", "approved": true}]')
        browser.click("#signal-send")
        browser.wait_for("!document.querySelector('#confirm').hidden", "the signal's confirmation")
        check("decide" in browser.text("#confirm-text"), "the confirmation names the signal")
        browser.click("#confirm-yes")
        browser.wait_for("(async () => { for (let i = 0; i < 50; ++i) {"
                         " const w = await fetch('/api/workflow?id=expense-laptop').then(r => r.json());"
                         " if (w.info.status === 'COMPLETED') return true; await new Promise(r => setTimeout(r, 100)); }"
                         " return false; })()", "the signaled expense to complete")
        browser.evaluate("location.reload()")
        browser.wait_for("(document.querySelector('#wf-status') || {}).textContent === 'COMPLETED'", "the page to show it")
        check("laptop: approved by ui" in browser.text("#wf-result"), "the signal reached the workflow")
        check(browser.evaluate("[...document.querySelectorAll('#history .group')].some(g => g.textContent.includes('Signal decide'))"),
              "the history shows the signal")
        if screenshots:
            browser.screenshot(os.path.join(screenshots, "ui-workflow.png"), height=1700)

        # A page of another origin cannot terminate the chair expense.
        ForeignPage.ui, ForeignPage.target = ui, "expense-chair"
        foreign = ThreadingHTTPServer(("127.0.0.1", 0), ForeignPage)
        threading.Thread(target=foreign.serve_forever, daemon=True).start()
        browser.goto(f"http://127.0.0.1:{foreign.server_address[1]}/")
        outcome = browser.wait_for("window.attempts", "the foreign page's attempts")
        # The simple POST goes out (its answer is opaque to the page) and is
        # refused; the one with the UI's header needs a preflight, refused.
        check(outcome == ["fulfilled", "rejected"], f"the foreign page's requests went as expected ({outcome})")
        described = json.load(urllib.request.urlopen(ui + "/api/workflow?id=expense-chair", timeout=TIMEOUT))
        check(described["info"]["status"] == "RUNNING", "a foreign page's terminate changed nothing")

        # Cancel is offered; terminate, through its confirmation.
        browser.goto(ui + "/#/workflow/expense-chair")
        browser.wait_for("(document.querySelector('#wf-status') || {}).textContent === 'RUNNING'", "expense-chair running")
        browser.type("#terminate-reason", "bought elsewhere")
        browser.click("#terminate-btn")
        browser.wait_for("!document.querySelector('#confirm').hidden", "the terminate confirmation")
        browser.click("#confirm-no")
        time.sleep(0.3)
        described = json.load(urllib.request.urlopen(ui + "/api/workflow?id=expense-chair", timeout=TIMEOUT))
        check(described["info"]["status"] == "RUNNING", "'Keep it' leaves the workflow running")
        browser.click("#terminate-btn")
        browser.wait_for("!document.querySelector('#confirm').hidden", "the terminate confirmation")
        browser.click("#confirm-yes")
        browser.wait_for("(document.querySelector('#wf-status') || {}).textContent === 'TERMINATED'", "expense-chair terminated")
        check("bought elsewhere" in browser.text("#wf-result"), "the termination's reason is shown")
        check(browser.evaluate("document.querySelector('#terminate-btn').disabled"), "a closed workflow offers no terminate")

        # The server page.
        browser.goto(ui + "/#/server")
        browser.wait_for("document.querySelector('#metrics tbody')", "the server page")
        check(browser.evaluate("[...document.querySelectorAll('#queues tbody tr')].some(r => r.textContent.includes('examples'))"),
              "the server page lists the examples queue")
        check(browser.evaluate("[...document.querySelectorAll('#metrics tbody tr')].some(r => r.textContent.includes('workflow_started_total'))"),
              "the server page summarizes the metrics")
        if screenshots:
            browser.screenshot(os.path.join(screenshots, "ui-server.png"), height=1400)
        check(not browser.console_errors, f"no script errors on the pages ({browser.console_errors})")
    finally:
        if browser:
            browser.close()
        if foreign:
            foreign.shutdown()
        for p in reversed(processes):
            stop(p)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--screenshots", help="save the main pages' screenshots here (docs/images to update them)")
    options = parser.parse_args()
    env = {name: os.environ.get("REPRISE_" + name.upper()) for name in ["server", "examples", "cli"]}
    missing = [f"REPRISE_{k.upper()}" for k, v in env.items() if not v]
    env["chromium"] = os.environ.get("REPRISE_CHROMIUM") or shutil.which("chromium")
    if not env["chromium"]:
        missing.append("chromium (Debian's chromium package; ./run installs it)")
    if missing:
        print("FAILED: missing " + ", ".join(missing), file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reprise-ui-") as work:
        screenshots = options.screenshots or work
        try:
            run(env, work, screenshots)
        except Failed as e:
            for log in ["server.log", "worker.log"]:
                path = os.path.join(work, log)
                if os.path.exists(path):
                    print(f"--- {log}:\n" + open(path).read()[-4000:], file=sys.stderr)
            print(f"FAILED: {e}", file=sys.stderr)
            print("0 passed, 1 failed")
            return 1
    print(f"the browser test took {time.monotonic() - started:.1f} s")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
