#!/usr/bin/env bash
# Deploys a release's Lambda functions to AWS from its downloaded assets: no Rust toolchain,
# nothing compiled (this never runs cargo), only SAM CLI and gpg.
#
#   tools/deploy-release.sh [options] DIR [-- SAM_DEPLOY_ARGS...]   (what `make deploy-release` runs)
#
# DIR holds tfreg-VERSION-SHA256SUMS, tfreg-VERSION-SHA256SUMS.sig and
# tfreg-lambda-VERSION-ARCH.zip, as the release page has them. In order, this:
#   1. checks the signature of the sums with gpg, and refuses to go on unless it is a good
#      signature by the release key: gpg's VALIDSIG must name, as the primary key, the
#      fingerprint in tools/release-key.fingerprint (or the one --release-key gives). Any other
#      key in the keyring, a missing .sig, a missing or malformed fingerprint are refused;
#   2. checks the bundle's SHA-256 against the sums, which must list it;
#   3. checks the bundle holds this checkout's template.yaml (the checkout is at the release's
#      tag) and a zip for each of its CodeUris, and lays them out where the CodeUris say
#      (build/lambda/FUNCTION/bootstrap.zip, replacing what `make build` left there);
#   4. runs `sam deploy` as `make deploy` does: guided the first time, then as samconfig.toml
#      says (refusing a samconfig.toml whose Architecture is not ARCH).
#
# Options:
#   --version VERSION    the release (default: this checkout's Cargo.toml version)
#   --arch arm64|x86_64  the functions' architecture (default: arm64)
#   --release-key FPR    the release key's fingerprint (40 hex digits, spaces allowed), instead
#                        of tools/release-key.fingerprint's; needed while that file holds none
#   --insecure-skip-signature  deploy without checking any signature (the sums alone), with a
#                        warning; for assets you built yourself without a signing key
#   --require-signature  the default (accepted for older command lines)
#   --root DIR           the folder holding template.yaml (default: this checkout)
#   --dry-run            stop before AWS: lay out, `sam validate --lint`, check every CodeUri
#                        is the release's file, unchanged; deploy nothing
# SAM=path picks the SAM CLI (default: .venv/bin/sam of this checkout, `make sam-venv`).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '5p;20,31p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
version=; arch=arm64; root=$repo; dry_run=; release_key=; skip_sig=
while [ $# -gt 0 ]; do
  case $1 in
    --version) [ $# -ge 2 ] || usage; version=$2; shift 2 ;;
    --arch) [ $# -ge 2 ] || usage; arch=$2; shift 2 ;;
    --release-key) [ $# -ge 2 ] || usage; release_key=$2; shift 2 ;;
    --insecure-skip-signature) skip_sig=1; shift ;;
    --require-signature) shift ;;
    --root) [ $# -ge 2 ] || usage; root=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
dir=$(cd "$1" && pwd); shift
if [ $# -gt 0 ]; then [ "$1" = -- ] || usage; shift; fi
[ -n "$version" ] || version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)
case $arch in arm64|x86_64) ;; *) echo "--arch must be arm64 or x86_64, not $arch" >&2; exit 2 ;; esac
root=$(cd "$root" && pwd)
sam=${SAM:-$repo/.venv/bin/sam}
sums=tfreg-$version-SHA256SUMS
bundle=tfreg-lambda-$version-$arch.zip
key_file=$repo/tools/release-key.fingerprint
fail() { echo "deploy-release: $*" >&2; exit 1; }
warn() { echo "deploy-release: WARNING: $*" >&2; }
[ -f "$dir/$sums" ] || fail "$dir has no $sums: download it from the release page with $bundle"
[ -f "$dir/$bundle" ] || fail "$dir has no $bundle: download it from the release page (or make release-lambda VERSION=$version ARCH=$arch)"
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

# 1. The signature of the sums, by the release key and no other
if [ -n "$skip_sig" ]; then
  [ -z "$release_key" ] || fail "--insecure-skip-signature checks no signature, so --release-key $release_key would be ignored: give one or the other"
  warn "--insecure-skip-signature: the signature of $sums is NOT checked."
  warn "these files are checked against $sums only, which anyone who could change them could rewrite;"
  warn "deploy them only if you built them yourself or checked them some other way."
else
  # The fingerprint: --release-key, else the one line of the file that is not a comment.
  if [ -n "$release_key" ]; then
    fpr=$release_key; from="--release-key"
  else
    [ -f "$key_file" ] || fail "$key_file is missing: check out the release's tag, or name the release key with --release-key FINGERPRINT"
    fpr=$(sed -e 's/#.*//' "$key_file" | grep -v '^[[:space:]]*$' || true)
    [ -n "$fpr" ] || fail "$key_file holds no fingerprint yet (no release has set it): name the release key with --release-key FINGERPRINT (make deploy-release RELEASE_KEY=FINGERPRINT), or check out a release's tag"
    [ "$(wc -l <<<"$fpr")" -eq 1 ] || fail "$key_file holds more than one line besides comments: it must hold one fingerprint"
    from=$key_file
  fi
  fpr=$(tr -d ' \t' <<<"$fpr" | tr 'a-f' 'A-F')
  [[ $fpr =~ ^[0-9A-F]{40}$ ]] \
    || fail "the release key given by $from is not a full fingerprint (40 hex digits): $fpr. A key ID could name another key; give the primary key's fingerprint (gpg --fingerprint KEY)"
  [ -f "$dir/$sums.sig" ] || fail "$dir has no $sums.sig: download it from the release page (or, for assets you built without a signing key, --insecure-skip-signature)"
  command -v gpg >/dev/null || fail "gpg is missing: install GnuPG to check $sums.sig"
  if ! gpg --batch --status-fd 3 --verify "$dir/$sums.sig" "$dir/$sums" 3>"$scratch/gpg.status" 2>"$scratch/gpg.log"; then
    cat "$scratch/gpg.log" >&2
    fail "$sums.sig does not verify: import the release signing key (docs/releasing.md: its fingerprint must be $fpr) or download the release again"
  fi
  cat "$scratch/gpg.log" >&2
  # VALIDSIG <key fpr> <date> <time> <expiry> <version> <reserved> <algo> <hash> <class> <primary key fpr>
  signers=$(awk '$1 == "[GNUPG:]" && $2 == "VALIDSIG" { print $12 }' "$scratch/gpg.status")
  if grep -q '^\[GNUPG:\] REVKEYSIG ' "$scratch/gpg.status"; then
    fail "$sums.sig is signed by a revoked key: do not deploy this release"
  fi
  grep -qx "$fpr" <<<"$signers" \
    || fail "$sums.sig is a good signature, but by ${signers:-no key gpg could name}, not by the release key $fpr (from $from): do not deploy this release"
  echo "deploy-release: $sums.sig is a good signature by the release key $fpr (from $from)"
fi

# 2. The bundle against the sums (which must list it: --ignore-missing alone would pass without)
line=$(awk -v f="$bundle" '$2 == f || $2 == "*" f' "$dir/$sums")
[ -n "$line" ] || fail "$sums does not list $bundle"
(cd "$dir" && sha256sum --check --strict - <<<"$line") || fail "$bundle does not match $sums: download it again"

# 3. Unpack into a scratch folder, check, lay out
python3 - "$dir/$bundle" "$scratch/bundle" <<'PY'
import re, sys, zipfile
bundle, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(bundle) as z:
    for name in z.namelist():
        if name != "template.yaml" and not re.fullmatch(r"build/lambda/[a-z0-9-]+/bootstrap\.zip", name):
            sys.exit(f"{bundle} holds {name!r}, which no release has")
    z.extractall(dest)
PY
cmp -s "$scratch/bundle/template.yaml" "$root/template.yaml" \
  || fail "$root/template.yaml is not release $version's: check out the tag (git checkout v$version) and run this again"
mapfile -t uris < <(sed -n 's/^ *CodeUri: *\([^ ]*\) *$/\1/p' "$root/template.yaml")
[ ${#uris[@]} -gt 0 ] || fail "$root/template.yaml names no CodeUri"
for uri in "${uris[@]}"; do
  [ -f "$scratch/bundle/$uri" ] || fail "$bundle has no $uri, which template.yaml deploys"
  mkdir -p "$(dirname "$root/$uri")"
  cp "$scratch/bundle/$uri" "$root/$uri.tmp"
  mv "$root/$uri.tmp" "$root/$uri"
done
echo "deploy-release: $bundle checked and laid out: ${#uris[@]} functions in $root/build/lambda ($arch)"
unchanged() {
  local uri
  for uri in "${uris[@]}"; do
    cmp -s "$scratch/bundle/$uri" "$root/$uri" || fail "$root/$uri is not the release's file any more"
  done
}

[ -x "$sam" ] || fail "SAM CLI is missing at $sam: make sam-venv installs it (or SAM=path)"
if [ -n "$dry_run" ]; then
  "$sam" validate --lint --region us-east-1 --template-file "$root/template.yaml"
  unchanged
  if [ -n "$skip_sig" ]; then
    warn "dry run: release $version ($arch) would deploy WITHOUT its signature checked (--insecure-skip-signature); sam deploy not run"
  else
    echo "deploy-release: dry run: release $version ($arch) would deploy; sam deploy not run"
  fi
  exit 0
fi

# 4. sam deploy, as `make deploy` does
cd "$root"
if [ -f samconfig.toml ]; then
  saved=$(sed -n 's/.*Architecture=\\\{0,1\}"\{0,1\}\([a-z0-9_]*\).*/\1/p' samconfig.toml | head -n 1)
  [ "${saved:-arm64}" = "$arch" ] \
    || fail "samconfig.toml deploys Architecture=${saved:-arm64 (the default of the template)}, not $arch: download that architecture's zip, or change the parameter there"
  "$sam" deploy --template-file template.yaml "$@"
else
  "$sam" deploy --guided --template-file template.yaml --capabilities CAPABILITY_IAM --resolve-s3 \
    --parameter-overrides "Architecture=$arch" "$@"
fi
unchanged
[ -z "$skip_sig" ] || warn "release $version ($arch) deployed WITHOUT its signature checked (--insecure-skip-signature)"
