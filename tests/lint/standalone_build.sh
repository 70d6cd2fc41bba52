#!/bin/sh
# reprise-lint configured alone (meson setup -Dcomponents=lint) where the
# server's libraries cannot be found: pkg-config sees only CLI11 and
# nlohmann/json, and meson has no cmake to look with. Checks that the whole
# project cannot be configured there (so the lookups really are impossible),
# that the linter alone can, with only its own dependencies, and that it
# installs reprise-lint and docs/lint.md and nothing else. With --build it
# also builds it (minutes: not in the test suite), installs it, makes its
# .deb (packaging/debian/build-debs.sh), installs that into a scratch root
# with dpkg and runs it there: --version, and a SARIF report whose helpUri
# is the lint.md the package put beside it.
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

  echo "==> the reprise-lint .deb, installed into a scratch root"
  "$source_root/packaging/debian/build-debs.sh" "$scratch/lint" "$scratch/debs" >"$scratch/debs.log" 2>&1 ||
    { cat "$scratch/debs.log"; fail "build-debs.sh failed"; }
  [ "$(cd "$scratch/debs" && echo *.deb)" = "$(cd "$scratch/debs" && echo reprise-lint_*.deb)" ] ||
    fail "a lint-only build made other packages: $(ls "$scratch/debs")"
  depends=$(dpkg-deb -f "$scratch/debs"/reprise-lint_*.deb Depends)
  echo "Depends: $depends"
  for package in libllvm19 libclang-cpp19 libclang-common-19-dev; do
    case "$depends" in *"$package"*) ;; *) fail "reprise-lint does not depend on $package" ;; esac
  done
  deb_root="$scratch/deb-root"
  mkdir -p "$deb_root/var/lib/dpkg/info" "$deb_root/var/lib/dpkg/updates"
  touch "$deb_root/var/lib/dpkg/status"
  dpkg --root="$deb_root" --force-depends --force-not-root --force-script-chrootless --log=/dev/null \
    -i "$scratch/debs"/reprise-lint_*.deb >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg -i"; }
  "$deb_root/usr/bin/reprise-lint" --version
  mkdir -p "$scratch/project"
  echo 'int main() { return 0; }' >"$scratch/project/main.cpp"
  printf '[{"directory": "%s", "file": "main.cpp", "arguments": ["c++", "-c", "main.cpp"]}]\n' "$scratch/project" \
    >"$scratch/project/compile_commands.json"
  (cd "$scratch/project" && "$deb_root/usr/bin/reprise-lint" -p . --format=sarif >report.sarif)
  grep -q "\"helpUri\": \"file://$deb_root/usr/share/doc/reprise-lint/lint.md#reprise-clock\"" \
    "$scratch/project/report.sarif" || fail "helpUri is not the installed lint.md: $(grep -m1 helpUri "$scratch/project/report.sarif")"
fi
rm -rf "$scratch"
echo "ok: reprise-lint configures alone, without the server's dependencies"
