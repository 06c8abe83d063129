#!/usr/bin/env bash
# Deploys a release's Lambda functions to AWS from its downloaded assets: no Rust toolchain,
# nothing compiled (this never runs cargo), only SAM CLI and gpg.
#
#   tools/deploy-release.sh [options] DIR [-- SAM_DEPLOY_ARGS...]   (what `make deploy-release` runs)
#
# DIR holds tfreg-VERSION-SHA256SUMS, tfreg-VERSION-SHA256SUMS.sig and
# tfreg-lambda-VERSION-ARCH.zip, as the release page has them. In order, this:
#   1. checks the signature of the sums with gpg (the release signing key must be imported:
#      docs/releasing.md), and refuses to go on if it does not verify;
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
#   --require-signature  fail when there is no .sig (default: warn and go on with the sums)
#   --root DIR           the folder holding template.yaml (default: this checkout)
#   --dry-run            stop before AWS: lay out, `sam validate --lint`, check every CodeUri
#                        is the release's file, unchanged; deploy nothing
# SAM=path picks the SAM CLI (default: .venv/bin/sam of this checkout, `make sam-venv`).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '5p;18,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
version=; arch=arm64; require_sig=; root=$repo; dry_run=
while [ $# -gt 0 ]; do
  case $1 in
    --version) [ $# -ge 2 ] || usage; version=$2; shift 2 ;;
    --arch) [ $# -ge 2 ] || usage; arch=$2; shift 2 ;;
    --require-signature) require_sig=1; shift ;;
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
fail() { echo "deploy-release: $*" >&2; exit 1; }
[ -f "$dir/$sums" ] || fail "$dir has no $sums: download it from the release page with $bundle"
[ -f "$dir/$bundle" ] || fail "$dir has no $bundle: download it from the release page (or make release-lambda VERSION=$version ARCH=$arch)"

# 1. The signature of the sums
if [ -f "$dir/$sums.sig" ]; then
  command -v gpg >/dev/null || fail "gpg is missing: install GnuPG to check $sums.sig"
  gpg --batch --verify "$dir/$sums.sig" "$dir/$sums" \
    || fail "$sums.sig does not verify: import the release signing key (docs/releasing.md) or download the release again"
elif [ -n "$require_sig" ]; then
  fail "$dir has no $sums.sig, and --require-signature asks for one"
else
  echo "deploy-release: warning: no $sums.sig beside the sums: the files are checked against the sums only" >&2
fi

# 2. The bundle against the sums (which must list it: --ignore-missing alone would pass without)
line=$(awk -v f="$bundle" '$2 == f || $2 == "*" f' "$dir/$sums")
[ -n "$line" ] || fail "$sums does not list $bundle"
(cd "$dir" && sha256sum --check --strict - <<<"$line") || fail "$bundle does not match $sums: download it again"

# 3. Unpack into a scratch folder, check, lay out
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
python3 - "$dir/$bundle" "$scratch" <<'PY'
import re, sys, zipfile
bundle, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(bundle) as z:
    for name in z.namelist():
        if name != "template.yaml" and not re.fullmatch(r"build/lambda/[a-z0-9-]+/bootstrap\.zip", name):
            sys.exit(f"{bundle} holds {name!r}, which no release has")
    z.extractall(dest)
PY
cmp -s "$scratch/template.yaml" "$root/template.yaml" \
  || fail "$root/template.yaml is not release $version's: check out the tag (git checkout v$version) and run this again"
mapfile -t uris < <(sed -n 's/^ *CodeUri: *\([^ ]*\) *$/\1/p' "$root/template.yaml")
[ ${#uris[@]} -gt 0 ] || fail "$root/template.yaml names no CodeUri"
for uri in "${uris[@]}"; do
  [ -f "$scratch/$uri" ] || fail "$bundle has no $uri, which template.yaml deploys"
  mkdir -p "$(dirname "$root/$uri")"
  cp "$scratch/$uri" "$root/$uri.tmp"
  mv "$root/$uri.tmp" "$root/$uri"
done
echo "deploy-release: $bundle checked and laid out: ${#uris[@]} functions in $root/build/lambda ($arch)"
unchanged() {
  local uri
  for uri in "${uris[@]}"; do
    cmp -s "$scratch/$uri" "$root/$uri" || fail "$root/$uri is not the release's file any more"
  done
}

[ -x "$sam" ] || fail "SAM CLI is missing at $sam: make sam-venv installs it (or SAM=path)"
if [ -n "$dry_run" ]; then
  "$sam" validate --lint --region us-east-1 --template-file "$root/template.yaml"
  unchanged
  echo "deploy-release: dry run: release $version ($arch) would deploy; sam deploy not run"
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
