#!/usr/bin/env bash
# The Lambda functions as one release asset per architecture, from the zips `make build`
# left in build/lambda (this builds nothing):
#
#   tools/release-lambda.sh VERSION ARCH OUT_DIR FUNCTION...   (what `make release-lambda` runs)
#
# OUT_DIR/tfreg-lambda-VERSION-ARCH.zip holds template.yaml and build/lambda/FUNCTION/bootstrap.zip
# for each FUNCTION: the layout template.yaml's CodeUris name, so unzipped anywhere it deploys
# as it is (tools/deploy-release.sh checks and does that). Every bootstrap must be an ELF
# binary for ARCH, and every CodeUri of template.yaml among the functions. Reproducible: names
# sorted, fixed times and modes. Then tools/release-sums.sh rewrites the sums over every asset
# in OUT_DIR (and signs them when SIGN_KEY is set). LAMBDA_DIR=... takes the zips elsewhere.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 VERSION ARCH OUT_DIR FUNCTION..." >&2; exit 2; }
version=$1; arch=$2; out=$3; shift 3
case $arch in arm64|x86_64) ;; *) echo "ARCH must be arm64 or x86_64, not $arch" >&2; exit 2 ;; esac
repo=$(cd "$(dirname "$0")/.." && pwd)
lambda_dir=${LAMBDA_DIR:-$repo/build/lambda}
mkdir -p "$out"
bundle=$out/tfreg-lambda-$version-$arch.zip
python3 - "$repo/template.yaml" "$lambda_dir" "$arch" "$bundle" "$@" <<'PY'
import re, sys, zipfile
template, lambda_dir, arch, bundle, functions = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
machine = {"arm64": 183, "x86_64": 62}[arch]  # ELF e_machine: EM_AARCH64, EM_X86_64
with open(template, "rb") as f:
    template_bytes = f.read()
uris = set(re.findall(rb"^\s*CodeUri:\s*(\S+)\s*$", template_bytes, re.M))
members = {f"build/lambda/{fn}/bootstrap.zip": f"{lambda_dir}/{fn}/bootstrap.zip" for fn in functions}
missing = sorted(u.decode() for u in uris if u.decode() not in members)
if missing:
    sys.exit(f"template.yaml deploys {', '.join(missing)}, which are not among the functions packed")
for name, path in sorted(members.items()):
    try:
        with zipfile.ZipFile(path) as z, z.open("bootstrap") as b:
            head = b.read(20)
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        sys.exit(f"{path}: not a Lambda zip holding bootstrap ({e}): run `make build ARCH={arch}` first")
    if head[:4] != b"\x7fELF" or int.from_bytes(head[18:20], "little") != machine:
        sys.exit(f"{path}: its bootstrap is not a Linux {arch} binary: run `make build ARCH={arch}` first")
def add(z, name, data, method):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o100644 << 16
    info.compress_type = method
    z.writestr(info, data)
tmp = bundle + ".tmp"
with zipfile.ZipFile(tmp, "w") as z:
    add(z, "template.yaml", template_bytes, zipfile.ZIP_DEFLATED)
    for name, path in sorted(members.items()):
        with open(path, "rb") as f:
            add(z, name, f.read(), zipfile.ZIP_STORED)  # already compressed
import os
os.replace(tmp, bundle)
print(f"==> {bundle}: template.yaml and {len(members)} functions ({arch})")
PY
"$repo/tools/release-sums.sh" "$version" "$out"
