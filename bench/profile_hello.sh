#!/usr/bin/env bash
# Where reprise-server's time goes under the hello benchmark (issue 15): runs
# bench/sdk_driver hello at one level (default 32 in flight) with the server
# started under perf, twice: once under `perf stat` (task clock, context
# switches, migrations, user/kernel split) and once under `perf record -g`
# (top symbols, kernel share). Not part of the tests; needs perf (Debian:
# linux-perf) and root or kernel.perf_event_paranoid <= 1.
#
#   bench/profile_hello.sh BUILD_DIR OUT_DIR [SECONDS] [LEVEL]
#
# OUT_DIR gets driver-stat.txt / driver-record.txt (the driver's own output:
# workflows/s and transitions, commits and syncs per workflow), server-stat.txt
# (perf stat of the server process, all its threads), threads.txt (each
# server thread's voluntary context switches and CPU ticks over a third run,
# from /proc/PID/task/*: the thread path's wake-ups; by thread id in order of
# creation, gRPC's threads named) and report.txt (perf report: top symbols,
# by DSO, user vs kernel). Divide by the workflows the remote rounds
# completed (rate x seconds, the driver prints both) for per workflow; the
# driver also prints the server's and its own totals per workflow.
set -euo pipefail
build=$(realpath "$1")
out=$(mkdir -p "$2" && realpath "$2")
seconds=${3:-5}
level=${4:-32}
command -v perf > /dev/null || { echo "profile_hello.sh: perf is needed (apt-get install linux-perf)" >&2; exit 2; }
server=$build/engine/reprise-server
driver=$build/bench/sdk_driver
[ -x "$server" ] && [ -x "$driver" ] || { echo "profile_hello.sh: build $server and $driver first" >&2; exit 2; }

# sdk_driver starts the server it is given: a wrapper that starts it under perf.
wrapper=$out/server-under-perf.sh
# The driver stops its server with SIGTERM, which would end perf without its
# output: the wrapper passes it to the server, and perf writes what it has
# once the server has exited.
run() { # driver-output-file perf-args...
  local log=$1; shift
  cat > "$wrapper" <<WRAPPER
#!/bin/sh
perf $* -- $server "\$@" &
perf_pid=\$!
trap 'kill -TERM \$(pgrep -P \$perf_pid)' TERM
wait \$perf_pid
wait \$perf_pid
WRAPPER
  chmod +x "$wrapper"
  "$driver" --server "$wrapper" hello --levels "$level" --rounds 1 --seconds "$seconds" > "$out/$log" 2>&1
}
run driver-stat.txt stat -e task-clock,context-switches,cpu-migrations,page-faults -o "$out/server-stat.txt"

# Each thread's voluntary switches and CPU ticks (utime+stime), read when the
# server has started and again when the driver stops it.
threads() { # pid -> "tid comm switches ticks" per thread
  for t in /proc/"$1"/task/*; do
    echo "${t##*/} $(tr ' ' '_' < "$t/comm") $(awk '/^voluntary_ctxt/ {print $2}' "$t/status")" \
      "$(sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}')"
  done 2> /dev/null
}
cat > "$wrapper" <<WRAPPER
#!/bin/bash
$server "\$@" &
server_pid=\$!
sleep 0.5
$(declare -f threads)
threads \$server_pid > "$out/threads-start.txt"
trap 'threads \$server_pid > "$out/threads-end.txt"; kill -TERM \$server_pid' TERM
wait \$server_pid
wait \$server_pid
WRAPPER
"$driver" --server "$wrapper" hello --levels "$level" --rounds 1 --seconds "$seconds" > "$out/driver-threads.txt" 2>&1
{
  echo "tid comm voluntary_switches cpu_ticks (over the run in driver-threads.txt)"
  awk 'NR == FNR {switches[$1] = $3; ticks[$1] = $4; next}
       {print $1, $2, $3 - switches[$1], $4 - ticks[$1]}' "$out/threads-start.txt" "$out/threads-end.txt" |
    sort -k3 -n -r
} > "$out/threads.txt"
run driver-record.txt record -g -F 999 -o "$out/perf.data"
report() { perf report -i "$out/perf.data" --no-children -g none --stdio "$@" 2> /dev/null | grep -E '^ +[0-9]'; }
{
  echo "== by DSO ([kernel.kallsyms]: the kernel's share)"
  report --sort dso | head -15
  echo "== top symbols ([k] kernel, [.] user)"
  report --sort sym | head -40
  echo "== by thread"
  report --sort comm | head -15
} > "$out/report.txt"
echo "profile_hello.sh: $out/report.txt, $out/server-stat.txt, $out/threads.txt"
