#!/usr/bin/env bash
# Checks systemd/deskd.service and systemd/deskd.sysusers offline, as CI
# does (bash systemd/verify.sh from the repository root, or from anywhere):
#
#   1. systemd-analyze verify on the unit. verify needs ExecStart's binary
#      to exist, so deskd is built into a temporary folder and a copy of the
#      unit points at it. verify exits 0 even when it ignores a line (an
#      unknown key, Type=notify-reload on systemd 252), so any output at all
#      is a failure.
#   2. systemd-analyze security --offline: the exposure score must stay at
#      or below 2.0 (1.4 on systemd 252 when this was written). systemd
#      takes --threshold in tenths, as an integer: THRESHOLD=20 is 2.0.
#   3. The unit's own promises: ExecStart's flags exist, TimeoutStopSec is
#      above deskd's default shutdown_timeout.
#   4. systemd-sysusers --dry-run on the sysusers file.
#   5. A self-test: a copy of the unit with a misspelled key must fail 1.
#
# Needs: go, and systemd-analyze and systemd-sysusers (Debian: apt-get
# install -y systemd).
set -euo pipefail

THRESHOLD=${THRESHOLD:-20}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
unit=$here/deskd.service

fail() { echo "systemd/verify.sh: FAIL: $*" >&2; exit 1; }

for tool in systemd-analyze systemd-sysusers go; do
	command -v "$tool" >/dev/null || fail "$tool not found (Debian: apt-get install -y systemd)"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/unit" "$tmp/bad" "$tmp/sysroot"

(cd "$root" && go build -o "$tmp/bin/deskd" ./cmd/deskd)

# point_at_build copies the unit into $1, with ExecStart on the built binary.
point_at_build() {
	sed "s|^ExecStart=/usr/local/bin/deskd |ExecStart=$tmp/bin/deskd |" "$unit" >"$1/deskd.service"
	grep -q "^ExecStart=$tmp/bin/deskd run " "$1/deskd.service" ||
		fail "ExecStart is not '/usr/local/bin/deskd run ...'"
}

# verify_quiet runs systemd-analyze verify in $1 and fails on any output.
verify_quiet() {
	local out
	if ! out=$(cd "$1" && systemd-analyze verify ./deskd.service 2>&1); then
		printf '%s\n' "$out" >&2
		return 1
	fi
	if [ -n "$out" ]; then
		printf '%s\n' "$out" >&2
		return 1
	fi
}

# 1. verify
point_at_build "$tmp/unit"
verify_quiet "$tmp/unit" || fail "systemd-analyze verify deskd.service printed the lines above"

# 2. security exposure
systemd-analyze security --offline=yes --threshold="$THRESHOLD" "$tmp/unit/deskd.service" >"$tmp/security.txt" 2>&1 ||
	{ cat "$tmp/security.txt" >&2; fail "exposure above $THRESHOLD/10 (systemd-analyze security above)"; }
grep -E '^→ Overall exposure level' "$tmp/security.txt" || true

# 3. the unit's promises
"$tmp/bin/deskd" run --help | grep -q -- '--config' || fail "'deskd run' has no --config flag"
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$unit")
[ -n "$stop" ] || fail "TimeoutStopSec=<seconds>s not found"
default_shutdown=$(sed -n 's/^\tDefaultShutdownTimeout = \([0-9]*\) \* time.Second$/\1/p' "$root/config/config.go")
[ -n "$default_shutdown" ] || fail "DefaultShutdownTimeout not found in config/config.go"
[ "$stop" -gt "$default_shutdown" ] ||
	fail "TimeoutStopSec=${stop}s must be above the default shutdown_timeout (${default_shutdown}s)"

# 4. sysusers
systemd-sysusers --dry-run --root="$tmp/sysroot" "$here/deskd.sysusers" >"$tmp/sysusers.txt" 2>&1 ||
	{ cat "$tmp/sysusers.txt" >&2; fail "systemd-sysusers rejects deskd.sysusers"; }
grep -q "Creating user 'deskd'" "$tmp/sysusers.txt" || { cat "$tmp/sysusers.txt" >&2; fail "deskd.sysusers creates no user deskd"; }

# 5. self-test: the check above must catch a line verify ignores.
point_at_build "$tmp/bad"
sed -i 's/^NoNewPrivileges=yes$/NoNewPrivilges=yes/' "$tmp/bad/deskd.service"
grep -q '^NoNewPrivilges=yes$' "$tmp/bad/deskd.service" || fail "self-test: could not plant the misspelled key"
if verify_quiet "$tmp/bad" 2>/dev/null; then
	fail "self-test: verify_quiet passed a unit with a misspelled key"
fi

echo "systemd/verify.sh: ok: verify quiet, exposure within $THRESHOLD/10, TimeoutStopSec=${stop}s > ${default_shutdown}s, sysusers ok"
