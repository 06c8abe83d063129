#!/usr/bin/env bash
# Release archives of tfreg (with AWS support) for the given targets, cross-compiled with
# cargo-zigbuild (zig as the C compiler and linker, from PyPI; no SDK needed), and their
# SHA-256 sums:
#
#   tools/release.sh VERSION OUT_DIR TARGET...     (what `make release` runs)
#
# Each archive is OUT_DIR/tfreg-VERSION-TARGET.tar.gz holding tfreg-VERSION-TARGET/tfreg and
# the README; OUT_DIR/tfreg-VERSION-SHA256SUMS lists them all, with any Lambda assets there
# (tools/release-sums.sh, which also signs it when SIGN_KEY is set). Linux binaries link
# glibc 2.17 or later (any distribution of the last ten years). Archives are reproducible:
# sorted names, fixed times and owners.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 VERSION OUT_DIR TARGET..." >&2; exit 2; }
version=$1; out=$2; shift 2
command -v cargo-zigbuild >/dev/null || { echo "cargo-zigbuild is missing: make build-venv installs it into .venv" >&2; exit 1; }
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$out"
for target in "$@"; do
  rustup target list --installed | grep -qx "$target" || rustup target add "$target"
  # Linux: with the AWS shape's commands. macOS: the local shape (the AWS SDK and FSEvents link
  # Apple's frameworks, which only Apple's SDK provides; on a Mac, `make install AWS=1`).
  case $target in
    *-linux-gnu) zig_target=$target.2.17 features=() ;;
    *-apple-darwin) zig_target=$target features=(--no-default-features --features kqueue) ;;
    *) zig_target=$target features=() ;;
  esac
  echo "==> tfreg $version for $target"
  cargo zigbuild --locked --release -p tfreg-cli --bin tfreg --target "$zig_target" "${features[@]}"
  "$(dirname "$0")/release-package.sh" "$target_dir/$target/release/tfreg" "$version" "$target" "$out"
done
"$(dirname "$0")/release-sums.sh" "$version" "$out"
echo "==> $out"
ls -l "$out"
