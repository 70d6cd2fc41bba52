#!/usr/bin/env python3
"""Writes the fuzz harnesses' seed corpus (tests/fuzz/corpus/<name>/) from
real data: event batches as the store wrote them, histories exported by the
CLI, requests like the engine tests send. Run it again only to refresh the
seeds (checked-in crash inputs, crash-*, are never touched):

  ./run demo /tmp/seeds/demo.db        # a database the examples filled
  tests/fuzz/make_seeds.py /tmp/seeds/demo.db

Needs build/ (reprise-server, reprise), protoc and the zstd command."""
import os
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
PROTO_DIR = os.path.join(ROOT, "proto")


def write(harness, name, data):
    os.makedirs(os.path.join(CORPUS, harness), exist_ok=True)
    with open(os.path.join(CORPUS, harness, name), "wb") as f:
        f.write(data)


def encode(message, text, proto="reprise/v1/service.proto"):
    """A protobuf message from its text format, by protoc."""
    return subprocess.run(["protoc", "-I", PROTO_DIR, "--encode=" + message, proto], input=text.encode(),
                          capture_output=True, check=True).stdout


def zstd_frame(body):
    # From a file, so the frame records its size (the codec refuses frames
    # that do not).
    with tempfile.NamedTemporaryFile() as f:
        f.write(body)
        f.flush()
        return subprocess.run(["zstd", "-q", "-c", f.name], capture_output=True, check=True).stdout


def batches(db):
    c = sqlite3.connect("file:" + db + "?mode=ro", uri=True)
    return c.execute("SELECT workflow_id, run_id, first_event_id, data FROM history "
                     "ORDER BY workflow_id, run_id, first_event_id").fetchall()


def batch_codec_seeds(rows):
    by_size = sorted(rows, key=lambda r: len(r[3]))
    picked = [by_size[0], by_size[len(by_size) // 2], by_size[-1]]
    for workflow_id, _, first, data in picked:
        write("batch_codec", "%s-%d-plain" % (workflow_id, first), data)
        write("batch_codec", "%s-%d-zstd" % (workflow_id, first), b"\x02" + zstd_frame(data[1:]))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def history_file_seeds(db, rows):
    # The binary form is the run's batches back to back (serialized Histories
    # concatenate); the JSON form is what `reprise history export` writes.
    runs = {}
    for workflow_id, run_id, _, data in rows:
        runs.setdefault((workflow_id, run_id), b"")
        runs[(workflow_id, run_id)] += data[1:]
    for workflow_id in ("example-hello", "example-expense", "example-feed"):
        run = next(k for k in runs if k[0] == workflow_id)
        write("history_file", workflow_id + ".bin", runs[run])
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "demo.db")
        sqlite3.connect(db).backup(sqlite3.connect(copy))
        server = subprocess.Popen([os.path.join(ROOT, "build/engine/reprise-server"), "--db", copy, "--listen",
                                   "127.0.0.1:%d" % port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for workflow_id in ("example-hello", "example-expense", "hello-1"):
                path = os.path.join(scratch, workflow_id + ".json")
                for _ in range(50):
                    done = subprocess.run([os.path.join(ROOT, "build/tools/reprise"), "--address",
                                           "127.0.0.1:%d" % port, "history", "export", "--id", workflow_id, "--file",
                                           path, "--format", "json"], capture_output=True)
                    if done.returncode == 0:
                        break
                    time.sleep(0.1)
                with open(path, "rb") as f:
                    write("history_file", workflow_id + ".json", f.read())
        finally:
            server.terminate()
            server.wait()


def payload_seeds():
    payloads = {
        "msgpack-string": r'metadata { key: "encoding" value: "binary/msgpack" } data: "\245world"',
        "msgpack-order": r'metadata { key: "encoding" value: "binary/msgpack" } '
                         r'data: "\203\242id\242o7\245cents\315\004\342\245items\221\243pen"',
        "msgpack-variant": r'metadata { key: "encoding" value: "binary/msgpack" } data: "\222\001\243abc"',
        "null": r'metadata { key: "encoding" value: "binary/null" }',
        "claim-check": r'metadata { key: "encoding" value: "binary/msgpack" } external { sha256: '
                       r'"\x2c\xf2\x4d\xba\x5f\xb0\xa3\x0e\x26\xe8\x3b\x2a\xc5\xb9\xe2\x9e\x1b\x16\x1e\x5c\x1f\xa7'
                       r'\x42\x5e\x73\x04\x33\x62\x93\x8b\x98\x24" size: 5 encoding: "binary/msgpack" } data: "hello"',
    }
    for name, text in payloads.items():
        write("payload", name, encode("reprise.v1.Payload", text, "reprise/v1/common.proto"))
    big = b"\xdc\x10\x00" + b"\xa5hello" * 4096  # a 4096-string array, over the 16 KiB threshold
    compressed = zstd_frame(big)
    text = 'metadata { key: "encoding" value: "binary/msgpack" } metadata { key: "compression" value: "zstd" } '
    text += 'data: "' + "".join("\\%03o" % b for b in compressed) + '"'
    write("payload", "msgpack-zstd", encode("reprise.v1.Payload", text, "reprise/v1/common.proto"))


def json_payload_seeds():
    for name, text in {
            "object": b'{"id": "o7", "cents": 1250, "items": ["pen", "ink"]}',
            "big-integers": b'[18446744073709551615, -9223372036854775808, 1.5e300]',
            "string": b'"world"',
            "msgpack-order": b"\x83\xa2id\xa2o7\xa5cents\xcd\x04\xe2\xa5items\x91\xa3pen",
    }.items():
        write("json_payload", name, text)


def task_token_seeds():
    proto = "reprise/internal/state.proto"
    for name, text in {
            "workflow-task": 'workflow_id: "hello-1" run_id: "1f6d3121-4688-418e-b57d-df102d7f4c3a" '
                             'scheduled_event_id: 2 started_event_id: 3 attempt: 1',
            "activity-task": 'workflow_id: "hello-1" run_id: "1f6d3121-4688-418e-b57d-df102d7f4c3a" '
                             'scheduled_event_id: 5 attempt: 1 activity: true',
            "query-task": 'workflow_id: "hello-1" run_id: "1f6d3121-4688-418e-b57d-df102d7f4c3a" '
                          'query_id: 3 query_epoch: 12345',
    }.items():
        write("task_token", name, encode("reprise.internal.TaskToken", text, proto))


# engine_requests_fuzz.cpp's record kinds and fixup bits.
KINDS = {"start": 0, "signal": 1, "signal_with_start": 2, "cancel": 3, "terminate": 4, "delete": 5, "query": 6,
         "describe": 7, "history": 8, "list": 9, "poll_workflow": 10, "complete_workflow": 11, "fail_workflow": 12,
         "poll_activity": 13, "heartbeat": 14, "complete_activity": 15, "fail_activity": 16, "canceled": 17,
         "advance": 18, "retention": 19}
REQUESTS = {"start": "StartWorkflowRequest", "signal": "SignalWorkflowRequest",
            "signal_with_start": "SignalWithStartRequest", "cancel": "RequestCancelWorkflowRequest",
            "terminate": "TerminateWorkflowRequest", "delete": "DeleteWorkflowExecutionRequest",
            "query": "QueryWorkflowRequest", "describe": "DescribeWorkflowRequest", "history": "GetHistoryRequest",
            "list": "ListWorkflowsRequest", "poll_workflow": "PollWorkflowTaskRequest",
            "complete_workflow": "CompleteWorkflowTaskRequest", "fail_workflow": "FailWorkflowTaskRequest",
            "poll_activity": "PollActivityTaskRequest", "heartbeat": "HeartbeatActivityRequest",
            "complete_activity": "CompleteActivityRequest", "fail_activity": "FailActivityRequest",
            "canceled": "ReportActivityCanceledRequest"}
WORKFLOW_ID, RUN_ID, TOKEN, QUEUE = 1, 2, 4, 8


def record(kind, fixups, text=""):
    body = encode("reprise.v1." + REQUESTS[kind], text) if kind in REQUESTS else b""
    return struct.pack("<BBH", KINDS[kind], fixups, len(body)) + body


def engine_requests_seeds():
    start = ('workflow_id: "wf-0" workflow_type { name: "hello" } task_queue { name: "q" } '
             'input { payloads { data: "world" } } request_id: "r1"')
    schedule = ('commands { command_type: COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK schedule_activity_task { '
                'activity_id: "1" activity_type { name: "greet" } start_to_close_timeout { seconds: 10 } '
                'input { payloads { data: "world" } } } }')
    complete = ('commands { command_type: COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION complete_workflow_execution { '
                'result { payloads { data: "Hello, world!" } } } }')
    timer = ('commands { command_type: COMMAND_TYPE_START_TIMER start_timer { timer_id: "t1" '
             'start_to_fire_timeout { seconds: 3600 } } }')
    hello = [record("start", 0, start), record("poll_workflow", QUEUE), record("complete_workflow", TOKEN, schedule),
             record("poll_activity", QUEUE),
             record("complete_activity", TOKEN, 'result { payloads { data: "Hello, world!" } }'),
             record("poll_workflow", QUEUE), record("complete_workflow", TOKEN | 0x10, complete),
             record("history", WORKFLOW_ID, "maximum_page_size: 4"), record("describe", WORKFLOW_ID)]
    write("engine_requests", "hello", b"".join(hello))
    signals = [record("start", 0, start),
               record("signal", WORKFLOW_ID, 'signal_name: "go" input { payloads { data: "1" } } request_id: "s1"'),
               record("signal_with_start", 0x10 | WORKFLOW_ID, 'start { workflow_type { name: "hello" } '
                      'task_queue { name: "q" } } signal_name: "go"'),
               record("query", WORKFLOW_ID, 'query_type: "stage"'), record("poll_workflow", QUEUE),
               record("complete_workflow", TOKEN, timer), record("advance", 22),
               record("poll_workflow", QUEUE), record("fail_workflow", TOKEN | 0x10, 'cause: 1'),
               record("cancel", WORKFLOW_ID, 'reason: "enough"'), record("list", 0)]
    write("engine_requests", "signals-timers", b"".join(signals))
    ending = [record("start", 0, start), record("poll_workflow", QUEUE), record("complete_workflow", TOKEN, schedule),
              record("poll_activity", QUEUE), record("heartbeat", TOKEN, 'details { payloads { data: "50%" } }'),
              record("fail_activity", TOKEN, 'failure { message: "boom" }'), record("advance", 35),
              record("terminate", WORKFLOW_ID, 'reason: "done"'), record("delete", WORKFLOW_ID),
              record("retention", 0)]
    write("engine_requests", "activity-ending", b"".join(ending))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = batches(sys.argv[1])
    batch_codec_seeds(rows)
    history_file_seeds(sys.argv[1], rows)
    payload_seeds()
    json_payload_seeds()
    task_token_seeds()
    engine_requests_seeds()


if __name__ == "__main__":
    main()
