#!/bin/sh
# Builds the .deb packages reprise-server, reprise-cli, reprise-lint and
# libreprise-dev from what a build directory already holds: `meson install
# --strip --destdir` into a staging tree, split by package, then `dpkg-deb
# --build --root-owner-group` (no fakeroot, no second build). Each package's
# Depends come from dpkg-shlibdeps, plus what its control file lists by hand.
# The packages install under /usr whatever the build's prefix: the staged
# prefix is moved to /usr and the .pc files' prefix= rewritten (the CMake
# package finds its prefix from its own place).
#
# Usage: build-debs.sh <build dir, its installed targets built> <output dir>
# Prints the paths of the .deb files. reprise-lint is left out, with a
# message, when the build has no linter (meson -Dlint=disabled); a build of
# the linter alone (meson -Dcomponents=lint) makes only reprise-lint.
set -eu; [ -n "${TRACE:-}" ] && set -x
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/reprise-debs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The build's version, prefix and libdir (relative to the prefix, e.g. lib/x86_64-linux-gnu).
read -r project_version prefix libdir <<EOF
$(meson introspect "$build" --projectinfo --buildoptions | python3 -c '
import json, sys
info = json.load(sys.stdin)
options = {o["name"]: o["value"] for o in info["buildoptions"]}
print(info["projectinfo"]["version"], options["prefix"], options["libdir"])')
EOF
# Upstream version and Debian revision 1: the packages are made from this
# tree, not from an upstream tarball with a separate debian/ history.
version="$project_version-1"
arch=$(dpkg --print-architecture)
maintainer="${DEBFULLNAME:-Reprise maintainers} <${DEBEMAIL:-reprise@localhost}>"
# xz, as in Debian's archive; the test asks for none (the packages never leave it).
compression="${REPRISE_DEB_COMPRESSION:-xz}"

stage="$work/stage"
meson install -C "$build" --no-rebuild --quiet --strip --destdir "$stage" >"$work/install.log" ||
  { cat "$work/install.log"; exit 1; }
if [ "$prefix" != /usr ]; then
  mkdir -p "$stage/usr"
  (cd "$stage$prefix" && tar cf - .) | (cd "$stage/usr" && tar xf -)
  rm -rf "${stage:?}$prefix"
  rmdir -p "$(dirname "$stage$prefix")" 2>/dev/null || true
fi
# A build of the linter alone (meson setup -Dcomponents=lint) installs no
# libraries: it makes the reprise-lint package only.
server_build=false
[ -e "$stage/usr/bin/reprise-server" ] && server_build=true
if [ "$server_build" = true ]; then
  [ "$prefix" = /usr ] || sed -i "s#^prefix=$prefix\$#prefix=/usr#" "$stage/usr/$libdir"/pkgconfig/*.pc
  # meson install --strip strips the binaries and shared libraries, not the archives.
  strip --strip-debug "$stage/usr/$libdir"/*.a
  # Shared libraries are not programs (meson installs them 755).
  chmod 644 "$stage/usr/$libdir"/*.so.*.*
fi

# take PACKAGE PATH...: moves staged paths (relative to $stage) into a package tree.
take() {
  package=$1
  shift
  for path in "$@"; do
    [ -e "$stage/$path" ] || [ -L "$stage/$path" ] || { echo "build-debs: $path is not in the install" >&2; exit 1; }
    mkdir -p "$work/$package/$(dirname "$path")"
    mv "$stage/$path" "$work/$package/$path"
  done
}

packages=""
if [ "$server_build" = true ]; then
  packages="reprise-server reprise-cli libreprise-dev"
  take reprise-server usr/bin/reprise-server usr/share/doc/reprise
  take reprise-cli usr/bin/reprise
  take libreprise-dev usr/include/reprise "usr/$libdir"
fi
if [ -e "$stage/usr/bin/reprise-lint" ]; then
  take reprise-lint usr/bin/reprise-lint usr/share/doc/reprise-lint/lint.md
  packages="$packages reprise-lint"
else
  echo "build-debs: this build has no reprise-lint (meson -Dlint), so no reprise-lint package" >&2
fi
left=$(find "$stage" -type f -o -type l)
[ -z "$left" ] || { echo "build-debs: installed files no package holds:" >&2; echo "$left" >&2; exit 1; }

# The service: its unit, its default settings (a conffile) and the database's directory.
if [ "$server_build" = true ]; then
  server="$work/reprise-server"
  install -D -m 644 "$here/reprise-server/reprise-server.service" "$server/lib/systemd/system/reprise-server.service"
  install -D -m 644 "$here/reprise-server/reprise.toml" "$server/etc/reprise/reprise.toml"
  mkdir -p "$server/var/lib/reprise"
fi

# reprise-lint parses with clang's builtin headers, from the resource
# directory compiled into it: their package is a dependency no ELF shows.
lint_resource_package() {
  resource_dir=$(python3 -c '
import json, re, sys
for c in json.load(open(sys.argv[1])):
    m = re.search(r"REPRISE_LINT_RESOURCE_DIR=\\?\"([^\"\\]*)", c["command"])
    if m:  # the command of reprise-lint main.cpp, or of the unity file holding it
        print(m.group(1))
        break
' "$build/compile_commands.json")
  dpkg -S "$(realpath "$resource_dir/include/stddef.h")" | cut -d: -f1
}

# Libraries found through a RUNPATH (reprise-lint's /usr/lib/llvm-N/lib,
# symlinks into /usr/lib/<triplet>) get a shlibs.local line naming the
# package that owns the real file: dpkg-shlibdeps finds no shlibs entry
# for them by the RUNPATH's name.
shlibs_local_for() {
  for elf in "$@"; do
    runpath=$(readelf -d "$elf" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p' | tr : ' ')
    for needed in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      for dir in $runpath; do
        [ -e "$dir/$needed" ] || continue
        owner=$(dpkg -S "$(realpath "$dir/$needed")" | cut -d: -f1)
        # As dpkg-shlibdeps splits a SONAME: libLLVM.so.19.1 -> "libLLVM 19.1",
        # libclang-cpp.so.19.1 -> "libclang-cpp 19.1", libLLVM-14.so.1 -> "libLLVM-14 1"
        echo "$needed" | sed -n 's/^\(.*\)\.so\.\(.*\)$/\1 \2/p' | sed "s/\$/ $owner/"
        break
      done
    done
  done
}

# build_package PACKAGE: its DEBIAN files, Depends and .deb (prints the .deb's path).
build_package() {
  package=$1
  root="$work/$package"
  mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$package"
  install -m 644 "$here/copyright" "$root/usr/share/doc/$package/copyright"
  printf 'reprise (%s) unstable; urgency=medium\n\n  * Built from the source tree by packaging/debian/build-debs.sh.\n\n -- %s  %s\n' \
    "$version" "$maintainer" "$(date -R)" | gzip -9n >"$root/usr/share/doc/$package/changelog.Debian.gz"
  elfs=$(find "$root" -type f \( -path '*/bin/*' -o -name '*.so.*' \) | sort)
  # dpkg-shlibdeps reads debian/shlibs.local and debian/control from where it runs.
  shlibdeps_dir="$work/shlibdeps-$package"
  mkdir -p "$shlibdeps_dir/debian"
  printf 'Source: reprise\n\nPackage: %s\nArchitecture: any\n' "$package" >"$shlibdeps_dir/debian/control"
  # shellcheck disable=SC2086  # one word per file
  shlibs_local_for $elfs >"$shlibdeps_dir/debian/shlibs.local"
  extra_depends=""
  for f in "$here/$package"/*; do
    case "$(basename "$f")" in
      control) ;;
      reprise-server.service | reprise.toml) ;;
      postinst | prerm | postrm) install -m 755 "$f" "$root/DEBIAN/" ;;
      *) sed "s/@VERSION@/$version/g" "$f" >"$root/DEBIAN/$(basename "$f")" ;;
    esac
  done
  # -S: libraries of this package (with their DEBIAN/shlibs) need no dependency on it.
  # shellcheck disable=SC2086
  (cd "$shlibdeps_dir" && dpkg-shlibdeps -O -S"$root" -x"$package" $elfs >substvars 2>shlibdeps.log) ||
    { cat "$shlibdeps_dir/shlibdeps.log" >&2; exit 1; }
  depends=$(sed -n 's/^shlibs:Depends=//p' "$shlibdeps_dir/substvars")
  [ "$package" = reprise-lint ] && extra_depends=", $(lint_resource_package)"
  grep -v '^#' "$here/$package/control" |
    sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@MAINTAINER@/$maintainer/" \
      -e "s/@DEPENDS@/$depends$extra_depends/" >"$root/DEBIAN/control"
  echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)" >>"$root/DEBIAN/control"
  deb="$out/${package}_${version}_$arch.deb"
  dpkg-deb --build --root-owner-group -Z"$compression" "$root" "$deb" >/dev/null
  echo "$deb"
}

# In parallel: dpkg-shlibdeps takes seconds per package (reprise-lint's LLVM most).
pids=""
for package in $packages; do
  build_package "$package" &
  pids="$pids $!"
done
failed=0
for pid in $pids; do
  wait "$pid" || failed=1
done
[ "$failed" = 0 ] || { echo "build-debs: a package failed (above)" >&2; exit 1; }
