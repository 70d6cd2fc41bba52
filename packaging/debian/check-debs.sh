#!/bin/sh
# Installs the .deb packages build-debs.sh made into a scratch root with dpkg
# (--root, maintainer scripts run outside a chroot with DPKG_ROOT set) and
# checks them there: each binary's --version, the service's user, database
# directory, unit and conffile (reprise-server starts from it), the
# maintainer scripts' syntax, the downstream project built against
# libreprise-dev (tests/downstream/build_against.sh), and a purge.
#
# Usage: check-debs.sh <directory of .deb files> <scratch dir>
set -eu
debs=$(cd "$1" && pwd)
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$here/../.." && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd)
root="$scratch/root"

step() { echo "==> $*"; }
fail() {
  echo "check-debs: $*" >&2
  exit 1
}

# An empty dpkg database, and the accounts files the postinst adds its user to.
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers" "$root/etc"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
echo 'root:*:19000:0:99999:7:::' >"$root/etc/shadow"
echo 'root:*::' >"$root/etc/gshadow"

dpkg_root() {
  # --force-depends: the root holds no libc; the host's libraries run the binaries.
  dpkg --root="$root" --force-depends --force-not-root --force-script-chrootless --log=/dev/null "$@"
}

step "dpkg -i $(cd "$debs" && echo *.deb)"
dpkg_root -i "$debs"/*.deb >"$scratch/dpkg-install.log" 2>&1 || { cat "$scratch/dpkg-install.log"; exit 1; }
status() { dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${db:Status-Status}' "$1"; }
for package in reprise-server reprise-cli libreprise-dev; do
  [ "$(status $package)" = installed ] || fail "$package is not installed: $(status $package)"
done

step "--version"
expected=$(dpkg-deb -f "$debs"/reprise-server_*.deb Version | sed 's/-[^-]*$//')
for binary in reprise-server reprise; do
  version=$("$root/usr/bin/$binary" --version)
  case "$version" in *"$expected"*) ;; *) fail "$binary --version says '$version', not $expected" ;; esac
done
if ls "$debs"/reprise-lint_*.deb >/dev/null 2>&1; then
  version=$("$root/usr/bin/reprise-lint" --version)
  case "$version" in *"$expected"*) ;; *) fail "reprise-lint --version says '$version', not $expected" ;; esac
else
  echo "(no reprise-lint package to check)"
fi

step "maintainer scripts"
for script in "$root"/var/lib/dpkg/info/*.postinst "$root"/var/lib/dpkg/info/*.prerm \
  "$root"/var/lib/dpkg/info/*.postrm; do
  [ -e "$script" ] || continue
  sh -n "$script" || fail "$script: syntax error"
done
command -v checkbashisms >/dev/null && checkbashisms "$root"/var/lib/dpkg/info/reprise-server.*inst

step "the user reprise and /var/lib/reprise"
entry=$(grep '^reprise:' "$root/etc/passwd") || fail "the postinst added no user reprise to $root/etc/passwd"
uid=$(echo "$entry" | cut -d: -f3)
if [ "$uid" -le 0 ] || [ "$uid" -ge 1000 ]; then fail "reprise is not a system user: $entry"; fi
[ "$(echo "$entry" | cut -d: -f6)" = /var/lib/reprise ] || fail "reprise's home is not /var/lib/reprise: $entry"
grep -q '^reprise:' "$root/etc/group" || fail "no group reprise"
[ "$(stat -c '%u %a' "$root/var/lib/reprise")" = "$uid 750" ] ||
  fail "/var/lib/reprise is $(stat -c '%u %a' "$root/var/lib/reprise"), not owned by reprise ($uid) with mode 750"

step "the unit"
unit="$root/lib/systemd/system/reprise-server.service"
for line in User=reprise Group=reprise 'ExecStart=/usr/bin/reprise-server --config /etc/reprise/reprise.toml' \
  Restart=on-failure ProtectSystem=strict ReadWritePaths=/var/lib/reprise NoNewPrivileges=yes PrivateTmp=yes \
  WantedBy=multi-user.target; do
  grep -qx "$line" "$unit" || fail "$unit has no line $line"
done
if command -v systemd-analyze >/dev/null; then
  # Verified as a copy whose ExecStart is the binary in the scratch root
  # (verify looks the executable up on this system; --root would need a
  # whole systemd in the root). It only warns about an unknown or misspelled
  # key, so any message fails the check.
  mkdir -p "$scratch/unit"
  sed "s#^ExecStart=/#ExecStart=$root/#" "$unit" >"$scratch/unit/reprise-server.service"
  systemd-analyze verify "$scratch/unit/reprise-server.service" >"$scratch/verify.log" 2>&1 || true
  [ ! -s "$scratch/verify.log" ] || { cat "$scratch/verify.log"; fail "systemd-analyze verify: the unit has faults"; }
else
  echo "(no systemd-analyze: the unit's syntax is not verified)"
fi

step "the conffile"
dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Conffiles}\n' reprise-server | grep -q '^ /etc/reprise/reprise.toml ' ||
  fail "/etc/reprise/reprise.toml is not a conffile of reprise-server"
grep -qx 'db = "/var/lib/reprise/reprise.db"' "$root/etc/reprise/reprise.toml" ||
  fail "the default config does not keep the database under /var/lib/reprise"
# The server takes the file: it starts from it (its database and address
# moved into the scratch directory) and is still serving a second later; a
# file it refuses stops it at once with status 2.
"$root/usr/bin/reprise-server" --config "$root/etc/reprise/reprise.toml" --db "$scratch/config-check.db" \
  --listen 127.0.0.1:0 >"$scratch/server.log" 2>&1 &
server=$!
sleep 1
if ! kill "$server" 2>/dev/null; then
  wait "$server" || true
  cat "$scratch/server.log"
  fail "reprise-server did not start from the packaged config"
fi
wait "$server" || true

step "the downstream project against libreprise-dev"
"$source_root/tests/downstream/build_against.sh" "$root" /usr "$scratch/downstream"

step "dpkg --purge"
echo "a database" >"$root/var/lib/reprise/reprise.db"
packages=$(for deb in "$debs"/*.deb; do dpkg-deb -f "$deb" Package; done)
# shellcheck disable=SC2086  # one word per package
dpkg_root --purge $packages >"$scratch/dpkg-purge.log" 2>&1 || { cat "$scratch/dpkg-purge.log"; exit 1; }
for gone in usr/bin/reprise-server usr/bin/reprise etc/reprise/reprise.toml usr/include/reprise; do
  [ ! -e "$root/$gone" ] || fail "/$gone is still there after the purge"
done
# The database stays: a purge does not delete workflows.
[ -f "$root/var/lib/reprise/reprise.db" ] || fail "the purge deleted the database"

rm -rf "$scratch"
echo "check-debs: ok"
