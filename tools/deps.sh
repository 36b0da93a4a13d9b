#!/bin/sh
# Installs the Debian packages eintune needs to build and test, when some
# are missing. Prints nothing and changes nothing when all are there.
set -eu
PKGS="make gcc pkg-config libyaml-dev libgsl-dev libsqlite3-dev libcjson-dev
ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo libcmocka-dev
clang libclang-rt-14-dev python3-numpy libcairo2-dev libclblast-dev libopenblas-dev
man-db openmpi-bin libopenmpi-dev abigail-tools binutils python3-pytest python3-pyopencl"
missing=""
for p in $PKGS; do
    st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$st" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0
echo "eintune: installing missing packages:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
        echo "eintune: need root (or sudo) to install:$missing" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
