#!/bin/sh
# The test suite's `package` test: builds the .deb packages from a build
# directory (uncompressed: they never leave the scratch directory) and checks
# them in a scratch root (check-debs.sh). Skipped (77) without dpkg-dev.
#
# Usage: test-debs.sh <reprise build dir> <scratch dir>
set -eu
here=$(cd "$(dirname "$0")" && pwd)
command -v dpkg-shlibdeps >/dev/null || { echo "no dpkg-shlibdeps (dpkg-dev): skipped"; exit 77; }
rm -rf "$2"
mkdir -p "$2"
REPRISE_DEB_COMPRESSION=none "$here/build-debs.sh" "$1" "$2/debs"
"$here/check-debs.sh" "$2/debs" "$2/check"
rm -rf "$2"
