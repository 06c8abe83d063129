#!/usr/bin/env bash
# One release archive from a built tfreg binary:
#
#   tools/release-package.sh BINARY VERSION TARGET OUT_DIR
#
# OUT_DIR/tfreg-VERSION-TARGET.tar.gz holds tfreg-VERSION-TARGET/tfreg and the README,
# reproducibly: sorted names, fixed times and owners. tools/release.sh runs it for each target
# it builds; the end-to-end test of the README's install section (tests/e2e/readme.rs) runs it
# on the binary the tests built.
set -euo pipefail
[ $# -eq 4 ] || { echo "usage: $0 BINARY VERSION TARGET OUT_DIR" >&2; exit 2; }
binary=$1; version=$2; target=$3; out=$4
root=$(cd "$(dirname "$0")/.." && pwd)
name=tfreg-$version-$target
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$binary" "$stage/$name/tfreg"
chmod 755 "$stage/$name/tfreg"
cp "$root/README.md" "$stage/$name/"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -cf - "$name" \
  | gzip -n -9 > "$out/$name.tar.gz"
