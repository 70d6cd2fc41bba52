#!/usr/bin/env bash
# ./run fuzz [--seconds S] [harness...]: builds the libFuzzer harnesses in
# build-fuzz/ (clang 14, ASan + UBSan, only what they link) and runs each for
# S seconds (default 60) from its checked-in corpus. New coverage goes to
# build-fuzz/corpus/<name>/ (not the checked-in seeds); a crash is minimized
# and copied into tests/fuzz/corpus/<name>/ as a regression input, which the
# normal build then replays (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=60
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#--seconds=}; shift ;;
    -*) echo "./run fuzz: unknown flag $1" >&2; exit 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
if [ ${#harnesses[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cpp; do
    f=${f##*/}
    harnesses+=("${f%_fuzz.cpp}")
  done
fi

dir=build-fuzz
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 meson setup "$dir" -Dfuzzing=true -Dtests=false -Dbenchmarks=false -Dlint=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all' >/dev/null
fi
targets=()
for h in "${harnesses[@]}"; do
  [ -f "tests/fuzz/${h}_fuzz.cpp" ] || { echo "./run fuzz: no harness $h (tests/fuzz/${h}_fuzz.cpp)" >&2; exit 2; }
  targets+=("tests/fuzz/${h}_fuzz")
done
# One build at a time on a machine others build on too (the lock the docs'
# build commands take); flock is util-linux's, in every Debian.
build() { flock "${TMPDIR:-/tmp}/ninja.lock" nice ninja -C "$dir" "${targets[@]}"; }
build >/dev/null || build

export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
summary=()
found=0
for h in "${harnesses[@]}"; do
  work=$dir/corpus/$h
  artifacts=$dir/artifacts/$h
  mkdir -p "$work" "$artifacts"
  log=$dir/$h.log
  # engine_requests: libFuzzer's entropic schedule scans its list of rare
  # features for every feature an input hits, and with the engine's ~49,000
  # features that scan was 63% of the CPU (docs/testing.md, "The long run").
  flags=()
  [ "$h" = engine_requests ] && flags+=(-entropic=0)
  echo "==> $h: ${seconds}s"
  rc=0
  nice -n 10 "$dir/tests/fuzz/${h}_fuzz" "$work" "tests/fuzz/corpus/$h" -max_total_time="$seconds" -timeout=60 \
    -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" "${flags[@]}" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  summary+=("$(printf '%-16s %12s execs %8s execs/s' "$h" "${execs:-?}" "${per_second:-?}")")
  if [ "$rc" -ne 0 ]; then
    found=1
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz check failed|.*runtime error)' "$log" | head -5 || true
    for crash in "$artifacts"/crash-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
      [ -f "$crash" ] || continue
      small=$artifacts/minimized-${crash##*/}
      nice -n 10 "$dir/tests/fuzz/${h}_fuzz" "$crash" -minimize_crash=1 -max_total_time=60 \
        -exact_artifact_path="$small" >/dev/null 2>&1 || true
      [ -f "$small" ] || small=$crash
      cp "$small" "tests/fuzz/corpus/$h/${crash##*/}"
      echo "    regression input: tests/fuzz/corpus/$h/${crash##*/} (log: $log)"
      rm -f "$crash"
    done
  fi
done
echo
printf '%s\n' "${summary[@]}"
exit "$found"
