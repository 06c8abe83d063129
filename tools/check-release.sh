#!/usr/bin/env bash
# Installs a release archive as the README says, into a scratch folder, and runs it: the
# sums check, the archive unpacks to one folder, and its tfreg runs and serves.
#
#   tools/check-release.sh VERSION OUT_DIR TARGET      (what `make release-check` runs)
set -euo pipefail
version=$1; out=$(cd "$2" && pwd); target=$3
scratch=$(mktemp -d); trap 'kill $server 2>/dev/null || true; rm -rf "$scratch"' EXIT
server=
cd "$scratch"
cp "$out/tfreg-$version-$target.tar.gz" "$out/tfreg-$version-SHA256SUMS" .
sha256sum --check --ignore-missing "tfreg-$version-SHA256SUMS"
tar -xzf "tfreg-$version-$target.tar.gz"
mkdir bin && install "tfreg-$version-$target/tfreg" bin/
export PATH=$scratch/bin:$PATH
tfreg --version | grep -qx "tfreg $version" || { echo "tfreg --version says $(tfreg --version)"; exit 1; }
tfreg serve --data data --listen 127.0.0.1:0 > serve.log 2>&1 &
server=$!
for _ in $(seq 50); do grep -q '^tfreg serving https://' serve.log && break; sleep 0.2; done
grep '^tfreg serving https://' serve.log || { cat serve.log; exit 1; }
tfreg token create --data data | tail -n 1 | grep -q '^tfreg_' || exit 1
echo "release $version for $target installs and runs"
