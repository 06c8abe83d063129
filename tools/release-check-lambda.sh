#!/usr/bin/env bash
# Release assets of the Lambda zips `make build` left in build/lambda, deployed from the
# release in a dry run, in a scratch folder (what `make check-lambda-release` runs):
#
#   tools/release-check-lambda.sh VERSION ARCH FUNCTION...
#
# It signs the sums with a throwaway key, runs tools/deploy-release.sh --dry-run
# --release-key (that key's fingerprint) with a `cargo` on the PATH that fails (deploying from
# a release compiles nothing), checks every laid-out zip is byte for byte the one built, and
# that a changed bundle and sums whose signature no longer match are both refused.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 VERSION ARCH FUNCTION..." >&2; exit 2; }
version=$1; arch=$2; shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
lambda_dir=${LAMBDA_DIR:-$repo/build/lambda}
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
passed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
# A throwaway signing key, as the release workflow's own
export GNUPGHOME=$scratch/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key 'tfreg release check <release-check@tfreg.invalid>' ed25519 sign never 2>/dev/null
key=$(gpg --batch --with-colons --list-secret-keys 2>/dev/null | awk -F: '$1 == "fpr" { print $10; exit }')
SIGN_KEY=$key LAMBDA_DIR=$lambda_dir "$repo/tools/release-lambda.sh" "$version" "$arch" "$scratch/assets" "$@" \
  > "$scratch/pack.log" 2>&1 || { cat "$scratch/pack.log"; exit 1; }
[ -f "$scratch/assets/tfreg-$version-SHA256SUMS.sig" ] || { echo "no signature made"; exit 1; }
pass "release-lambda.sh packs tfreg-lambda-$version-$arch.zip, its sums and their signature"

# Deploy from the release, in a dry run, where cargo fails if called
mkdir "$scratch/bin" "$scratch/root"
printf '#!/bin/sh\necho "cargo $*" >> "%s/cargo-called"\nexit 1\n' "$scratch" > "$scratch/bin/cargo"
chmod +x "$scratch/bin/cargo"
cp "$repo/template.yaml" "$scratch/root/"
deploy() { PATH=$scratch/bin:$PATH "$repo/tools/deploy-release.sh" --dry-run --release-key "$key" \
  --version "$version" --arch "$arch" --root "$scratch/root" "$@"; }
deploy "$scratch/assets" > "$scratch/deploy.log" 2>&1 || { cat "$scratch/deploy.log"; exit 1; }
[ ! -e "$scratch/cargo-called" ] || { echo "deploy-release.sh called: $(cat "$scratch/cargo-called")"; exit 1; }
for fn in "$@"; do
  cmp "$lambda_dir/$fn/bootstrap.zip" "$scratch/root/build/lambda/$fn/bootstrap.zip"
done
pass "deploy-release.sh --dry-run checks the signature and sums, lays out $# functions as built, sam validate passes, no cargo"

# A changed bundle is refused by the sums
cp -r "$scratch/assets" "$scratch/changed"
printf x >> "$scratch/changed/tfreg-lambda-$version-$arch.zip"
if deploy "$scratch/changed" > "$scratch/changed.log" 2>&1; then echo "a changed bundle deployed"; exit 1; fi
grep -q 'does not match' "$scratch/changed.log" || { cat "$scratch/changed.log"; exit 1; }
pass "a changed bundle is refused"
# ... and sums rewritten to match it are refused by the signature
(cd "$scratch/changed" && sha256sum "tfreg-lambda-$version-$arch.zip" > "tfreg-$version-SHA256SUMS")
if deploy "$scratch/changed" > "$scratch/resummed.log" 2>&1; then echo "sums with a bad signature deployed"; exit 1; fi
grep -q 'does not verify' "$scratch/resummed.log" || { cat "$scratch/resummed.log"; exit 1; }
pass "sums whose signature does not match are refused"
echo "release-check-lambda: $passed passed, 0 failed"
