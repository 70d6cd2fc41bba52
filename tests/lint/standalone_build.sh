#!/bin/sh
# reprise-lint configured alone (meson setup -Dcomponents=lint) where the
# server's libraries cannot be found: pkg-config sees only CLI11 and
# nlohmann/json, and meson has no cmake to look with. Checks that the whole
# project cannot be configured there (so the lookups really are impossible),
# that the linter alone can, with only its own dependencies, and that it
# installs reprise-lint and docs/lint.md and nothing else. With --build it
# also builds and installs it (minutes: not in the test suite) and runs the
# installed binary.
#
# Usage: standalone_build.sh SOURCE_ROOT SCRATCH_DIR [--build]
set -eu
source_root=$(cd "$1" && pwd)
scratch=$2
build_it=${3:-}
rm -rf "$scratch"
mkdir -p "$scratch/pkgconfig"
scratch=$(cd "$scratch" && pwd)

fail() { echo "FAIL: $*"; exit 1; }

for pc in CLI11 nlohmann_json; do
  path=$(pkg-config --variable=pcfiledir "$pc")/$pc.pc
  ln -s "$path" "$scratch/pkgconfig/$pc.pc"
done
printf "[binaries]\ncmake = 'false'\n" >"$scratch/no-cmake.ini"
setup() {
  PKG_CONFIG_LIBDIR="$scratch/pkgconfig" PKG_CONFIG_PATH="" \
    meson setup --native-file "$scratch/no-cmake.ini" "$@"
}

echo "==> the whole project cannot be configured without the server's libraries"
if setup "$scratch/full" "$source_root" >"$scratch/full.log" 2>&1; then
  fail "meson setup of the whole project succeeded: the server's dependencies were found"
fi
grep -q "Dependency lookup for .* failed\|Dependency \".*\" not found" "$scratch/full.log" ||
  { cat "$scratch/full.log"; fail "the whole project failed for another reason than a dependency"; }

echo "==> -Dcomponents=lint configures with the linter's dependencies only"
setup "$scratch/lint" "$source_root" -Dcomponents=lint --buildtype=release >"$scratch/lint.log" 2>&1 ||
  { cat "$scratch/lint.log"; fail "meson setup -Dcomponents=lint failed"; }
meson introspect "$scratch/lint" --dependencies --installed | python3 -c '
import json, sys
info = json.load(sys.stdin)
dependencies, installed = info["dependencies"], info["installed"]
names = sorted(d["name"] for d in dependencies)
if names != ["CLI11", "nlohmann_json"]:
    sys.exit(f"FAIL: dependencies {names}, expected CLI11 and nlohmann_json (and clang/LLVM libraries)")
wanted = ["/bin/reprise-lint", "/share/doc/reprise-lint/lint.md"]
dests = sorted(installed.values())
if len(dests) != len(wanted) or not all(d.endswith(w) for d, w in zip(dests, wanted)):
    sys.exit(f"FAIL: installs {sorted(installed.values())}, expected only {sorted(wanted)}")
print("dependencies:", ", ".join(names), "+ libclang-cpp, libLLVM-19; installs:", ", ".join(sorted(installed.values())))
'
grep -q "Library clang-cpp found: YES" "$scratch/lint.log" || fail "libclang-cpp was not looked for"

if [ "$build_it" = --build ]; then
  echo "==> build and install"
  ninja -C "$scratch/lint" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log"; fail "the build failed"; }
  meson install -C "$scratch/lint" --no-rebuild --quiet --destdir "$scratch/root"
  binary=$(find "$scratch/root" -path '*/bin/reprise-lint')
  "$binary" --version
fi
rm -rf "$scratch"
echo "ok: reprise-lint configures alone, without the server's dependencies"
