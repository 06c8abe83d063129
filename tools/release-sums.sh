#!/usr/bin/env bash
# The release's checksum file over every asset in OUT_DIR, and its detached signature:
#
#   tools/release-sums.sh VERSION OUT_DIR       (tools/release.sh and tools/release-lambda.sh run it)
#
# OUT_DIR/tfreg-VERSION-SHA256SUMS lists every tfreg-VERSION-*.tar.gz and
# tfreg-lambda-VERSION-*.zip there (sha256sum's format, names sorted). With SIGN_KEY set (a gpg
# key id or fingerprint whose secret key is in the keyring; SIGN_PASSPHRASE if it has one),
# OUT_DIR/tfreg-VERSION-SHA256SUMS.sig is its binary detached signature, as Terraform's own
# releases have; without SIGN_KEY an older signature is removed, never left beside new sums.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 VERSION OUT_DIR" >&2; exit 2; }
version=$1; out=$2
cd "$out"
export LC_ALL=C
shopt -s nullglob
assets=(tfreg-"$version"-*.tar.gz tfreg-lambda-"$version"-*.zip)
[ ${#assets[@]} -gt 0 ] || { echo "no release assets of $version in $out" >&2; exit 1; }
sums=tfreg-$version-SHA256SUMS
sha256sum "${assets[@]}" > "$sums.tmp"
mv "$sums.tmp" "$sums"
rm -f "$sums.sig"
if [ -n "${SIGN_KEY:-}" ]; then
  sign=(gpg --batch --yes --local-user "$SIGN_KEY" --output "$sums.sig")
  if [ -n "${SIGN_PASSPHRASE:-}" ]; then
    "${sign[@]}" --pinentry-mode loopback --passphrase-fd 0 --detach-sign "$sums" <<<"$SIGN_PASSPHRASE"
  else
    "${sign[@]}" --detach-sign "$sums"
  fi
  gpg --batch --quiet --verify "$sums.sig" "$sums"
  echo "==> $out/$sums.sig (signed by $SIGN_KEY)"
fi
echo "==> $out/$sums: ${#assets[@]} assets"
