#!/usr/bin/env bash
# Builds tfreg's container image (packaging/container/Containerfile, `FROM scratch`) from a
# tfreg binary with podman, or buildah when podman is missing, and prints the image id.
#
#   tools/image.sh [--tag NAME] [--with-libs] BINARY
#
# BINARY should be static: releases build it with
#   cargo zigbuild --locked --release -p tfreg-cli --bin tfreg --target x86_64-unknown-linux-musl
# A dynamically linked binary is refused unless --with-libs, which copies the libraries
# `ldd` lists into the image beside it (what the end-to-end test does with its debug build,
# to avoid a second full build). The binary is stripped in the image when `strip` is found.
#
# The build is reproducible: the same binary and CA bundle give the same image id (checked
# with two empty stores). File and image timestamps are the epoch (--timestamp 0), one
# layer is committed (--layers=false: no intermediate images named in the history), the
# format is OCI (docker-format configs record the build container's id), no base image is
# pulled.
# Only the image id is printed on stdout; the build's own output goes to stderr.
# CONTAINERS_CONF and CONTAINERS_STORAGE_CONF are honoured, as by podman itself.
set -euo pipefail

usage() {
  echo "usage: tools/image.sh [--tag NAME] [--with-libs] BINARY" >&2
  exit 2
}

tag=
with_libs=0
binary=
while [ $# -gt 0 ]; do
  case $1 in
    --tag) [ $# -ge 2 ] || usage; tag=$2; shift 2 ;;
    --with-libs) with_libs=1; shift ;;
    -h|--help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) [ -z "$binary" ] || usage; binary=$1; shift ;;
  esac
done
[ -n "$binary" ] || usage
[ -f "$binary" ] || { echo "no such binary: $binary" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packaging=$here/packaging/container
ca=${TFREG_IMAGE_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -f "$ca" ] || { echo "no CA bundle at $ca: apt-get install -y ca-certificates (or set TFREG_IMAGE_CA_BUNDLE)" >&2; exit 1; }

if command -v podman >/dev/null; then
  build=(podman build)
elif command -v buildah >/dev/null; then
  build=(buildah build)
else
  echo "neither podman nor buildah is installed: apt-get install -y podman runc" >&2
  exit 1
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
rootfs=$context/rootfs
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$context/data"
chmod 1777 "$rootfs/tmp"
chmod 0755 "$context/data"
cp "$binary" "$rootfs/tfreg"
chmod 0755 "$rootfs/tfreg"
if command -v strip >/dev/null; then
  strip "$rootfs/tfreg" 2>/dev/null || true
fi
cp "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"
cp "$packaging/passwd" "$rootfs/etc/passwd"
cp "$packaging/group" "$rootfs/etc/group"
chmod 0644 "$rootfs/etc/ssl/certs/ca-certificates.crt" "$rootfs/etc/passwd" "$rootfs/etc/group"

# A dynamic binary names its loader and libraries with absolute paths in `ldd`'s output.
libs=$(ldd "$binary" 2>/dev/null | grep -o '/[^ ]*' | sort -u || true)
if [ -n "$libs" ]; then
  if [ "$with_libs" != 1 ]; then
    echo "$binary is dynamically linked; the image is meant for a static binary:" >&2
    echo "  cargo zigbuild --locked --release -p tfreg-cli --bin tfreg --target x86_64-unknown-linux-musl" >&2
    echo "(--with-libs copies the libraries it needs into the image instead)" >&2
    exit 1
  fi
  for lib in $libs; do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
fi

# The same mtimes whatever the checkout: the layer's files are dated by --timestamp.
find "$context" -exec touch -h -d @0 {} +

args=(--file "$packaging/Containerfile" --format docker --timestamp 0 --layers=false --pull=never
  --iidfile "$context/iid" --label "org.opencontainers.image.title=tfreg")
if version=$("$binary" --version 2>/dev/null); then
  args+=(--label "org.opencontainers.image.version=${version#tfreg }")
fi
[ -z "$tag" ] || args+=(--tag "$tag")
"${build[@]}" "${args[@]}" "$context" >&2
cat "$context/iid"
echo
