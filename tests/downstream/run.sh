#!/bin/sh
# The downstream test: installs this build into a scratch root (meson install
# --destdir), checks what the installed libraries are (full static archives,
# and shared ones that hide the worker's internals), and builds and runs the
# project in this directory against it with pkg-config and with CMake
# (build_against.sh).
#
# Usage: run.sh <reprise build dir> <scratch dir>
set -eu
build=$(cd "$1" && pwd)
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)

step() { echo "==> $*"; }

step "meson install --destdir $scratch/root"
meson install -C "$build" --no-rebuild --quiet --destdir "$scratch/root"
pc_dir=$(dirname "$(find "$scratch/root" -name reprise.pc)")
lib_dir=$(dirname "$pc_dir")
prefix=$(dirname "$(find "$scratch/root" -type d -path '*/include/reprise' -prune)")
prefix=$(dirname "$prefix")

step "libraries in $lib_dir"
for archive in libreprise.a libreprise-embedded.a libreprise-testing.a; do
  magic=$(head -c 7 "$lib_dir/$archive")
  [ "$magic" = "!<arch>" ] || { echo "$archive is not a full archive ($magic)"; exit 1; }
done
if nm -DC --defined-only "$lib_dir/libreprise.so" | grep -q 'reprise::worker::WorkflowInstance::'; then
  echo "libreprise.so exports the worker's internals (WorkflowInstance)"; exit 1
fi
nm -DC --defined-only "$lib_dir/libreprise.so" | grep -q 'reprise::Worker::start()' ||
  { echo "libreprise.so does not export reprise::Worker"; exit 1; }

"$here/build_against.sh" "$scratch/root" "${prefix#"$scratch/root"}" "$scratch/downstream"

rm -rf "$scratch"
