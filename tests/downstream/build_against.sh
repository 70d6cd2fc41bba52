#!/bin/sh
# Builds the downstream project (this directory, copied out of the source
# tree) against a Reprise installed under a root directory, twice: with meson
# and pkg-config (g++), and with CMake's find_package(Reprise) (clang++-14
# when installed); runs both binaries, compiles every public header with
# -Wall -Wextra -Werror under g++ 12, clang 14 and clang 19, and checks that
# neither build named the source tree. Used by run.sh (a `meson install --destdir` root) and by
# packaging/debian/check-debs.sh (the .deb packages installed into a root).
#
# Usage: build_against.sh <root> <prefix inside the root, e.g. /usr> <scratch dir>
set -eu
root=$(cd "$1" && pwd)
prefix="$root$2"
scratch=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$scratch/project"
scratch=$(cd "$scratch" && pwd)
cp "$here/main.cpp" "$here/meson.build" "$here/CMakeLists.txt" "$scratch/project/"
pc_dir=$(dirname "$(find "$prefix" -name reprise.pc)")

step() { echo "==> $*"; }

LD_LIBRARY_PATH=$(dirname "$pc_dir")
export LD_LIBRARY_PATH

step "meson + pkg-config"
PKG_CONFIG_PATH="$pc_dir" PKG_CONFIG_SYSROOT_DIR="$root" \
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

step "every public header, -Wall -Wextra -Werror: g++, clang++-14, clang++-19"
# One unit including them all, with the flags pkg-config gives a consumer:
# the builds above include only what main.cpp uses.
for header in "$prefix"/include/reprise/*.hpp; do
  echo "#include <reprise/$(basename "$header")>"
done >"$scratch/all_headers.cpp"
cflags=$(PKG_CONFIG_PATH="$pc_dir" PKG_CONFIG_SYSROOT_DIR="$root" pkg-config --cflags reprise-testing reprise-embedded)
for compiler in g++ clang++-14 clang++-19; do
  command -v "$compiler" >/dev/null || { echo "$compiler is not installed (./run's PACKAGES has it)"; exit 1; }
  # shellcheck disable=SC2086  # one word per flag
  "$compiler" -std=c++20 -Wall -Wextra -Werror -fsyntax-only $cflags "$scratch/all_headers.cpp" ||
    { echo "the public headers do not compile with $compiler"; exit 1; }
done

step "neither build saw the source tree"
source_root=$(cd "$here/../.." && pwd)
for commands in "$scratch/meson-build/compile_commands.json" "$scratch/cmake-build/compile_commands.json"; do
  # (The scratch directory and the root may lie inside the source tree, under build/.)
  if sed -e "s#$scratch##g" -e "s#$root##g" "$commands" | grep -q "$source_root"; then
    echo "$commands names $source_root"; exit 1
  fi
done
