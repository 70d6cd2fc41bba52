#!/bin/sh
# The downstream test: installs this build into a scratch root (meson install
# --destdir) and builds the project in this directory there twice, copied out
# of the source tree: with meson and pkg-config (g++), and with CMake's
# find_package(Reprise) (clang++-14 when installed), then runs both binaries.
# Also checks what the installed libraries are: full static archives, and
# shared ones that hide the worker's internals.
#
# Usage: run.sh <reprise build dir> <scratch dir>
set -eu
build=$(cd "$1" && pwd)
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch/project"
scratch=$(cd "$scratch" && pwd)
cp "$here/main.cpp" "$here/meson.build" "$here/CMakeLists.txt" "$scratch/project/"

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

export LD_LIBRARY_PATH="$lib_dir"

step "meson + pkg-config"
PKG_CONFIG_PATH="$pc_dir" PKG_CONFIG_SYSROOT_DIR="$scratch/root" \
  meson setup "$scratch/meson-build" "$scratch/project" >"$scratch/meson-setup.log" ||
  { cat "$scratch/meson-setup.log"; exit 1; }
ninja -C "$scratch/meson-build" >"$scratch/meson-build.log" || { cat "$scratch/meson-build.log"; exit 1; }
mkdir -p "$scratch/run-meson"
"$scratch/meson-build/downstream" "$scratch/run-meson"

step "CMake find_package"
cxx=g++
command -v clang++-14 >/dev/null && cxx=clang++-14
cmake -S "$scratch/project" -B "$scratch/cmake-build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_PREFIX_PATH="$prefix" >"$scratch/cmake-setup.log" || { cat "$scratch/cmake-setup.log"; exit 1; }
cmake --build "$scratch/cmake-build" >"$scratch/cmake-build.log" || { cat "$scratch/cmake-build.log"; exit 1; }
mkdir -p "$scratch/run-cmake"
"$scratch/cmake-build/downstream" "$scratch/run-cmake"

step "neither build saw the source tree"
source_root=$(cd "$here/../.." && pwd)
for commands in "$scratch/meson-build/compile_commands.json" "$scratch/cmake-build/compile_commands.json"; do
  # (The scratch directory itself may lie inside the source tree, under build/.)
  if sed "s#$scratch##g" "$commands" | grep -q "$source_root"; then
    echo "$commands names $source_root"; exit 1
  fi
done

rm -rf "$scratch"
