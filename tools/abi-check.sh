#!/bin/sh
# abi-check.sh - holds the shared library's ABI against the one recorded in
# abi/libeintune.abi (libabigail: abidw, abidiff; Debian's abigail-tools).
#
#   sh tools/abi-check.sh            compare BUILD's libeintune.so with the
#                                    record (.ci/run does this)
#   sh tools/abi-check.sh --record   write the record from BUILD's library
#
# The comparison fails (exit 1) on any change abidiff reports as an ABI
# change: a function removed or whose signature or types changed, a field
# inserted in or removed from a public struct, a struct that grew. Two
# kinds of change pass: functions added, and fields added at the end of
# the structs that may grow (include/eintune.h, "Growing the ABI": the
# options structs, which carry the caller's size, and the structs the
# library hands to callbacks), which abi/libeintune.abignore lets through.
# A change that breaks the ABI passes only with a new soname (the major
# version in include/eintune.h); the record is then written anew.
#
# The library must carry DWARF (the default CFLAGS, -O2 -g): without it
# abidiff sees symbols only and would miss every struct change.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RECORD=abi/libeintune.abi
SUPPR=abi/libeintune.abignore

for t in abidw abidiff readelf; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "abi-check: $t not found (Debian: abigail-tools, binutils;" \
             "make deps installs them)" >&2
        exit 2
    fi
done
if [ ! -e "$BUILD/libeintune.so" ]; then
    echo "abi-check: $BUILD/libeintune.so not built (run make first)" >&2
    exit 2
fi
lib=$(readlink -f "$BUILD/libeintune.so")
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "abi-check: $lib has no debug information (build with -g)" >&2
    exit 2
fi
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')

record() {
    mkdir -p abi
    abidw --headers-dir include --drop-private-types --no-corpus-path \
          --no-comp-dir-path --short-locs --out-file "$RECORD" "$lib"
    echo "abi-check: recorded the ABI of $soname in $RECORD"
}

if [ "${1:-}" = "--record" ]; then
    record
    exit 0
fi
if [ ! -f "$RECORD" ]; then
    echo "abi-check: no $RECORD: record it with sh tools/abi-check.sh" \
         "--record" >&2
    exit 2
fi
recorded=$(sed -n "s/.*<abi-corpus[^>]*soname='\([^']*\)'.*/\1/p" "$RECORD" |
           head -n 1)
if [ "$recorded" != "$soname" ]; then
    echo "abi-check: the soname changed ($recorded -> $soname): the ABI" \
         "may change with it; record it anew (sh tools/abi-check.sh" \
         "--record)"
    exit 0
fi
set +e
abidiff --no-added-syms --suppressions "$SUPPR" --headers-dir2 include \
        "$RECORD" "$lib" > "$BUILD/abidiff.txt" 2>&1
rc=$?
set -e
# abidiff's status is a bit field: 1 error, 2 usage, 4 an ABI change, 8 an
# incompatible one
if [ "$rc" -eq 0 ]; then
    echo "abi-check: $soname keeps the ABI recorded in $RECORD"
    exit 0
fi
cat "$BUILD/abidiff.txt"
if [ $((rc & 3)) -ne 0 ]; then
    echo "abi-check: abidiff failed (status $rc)" >&2
    exit 2
fi
echo "abi-check: $soname changed the ABI recorded in $RECORD (above)." \
     "Keep the change compatible (include/eintune.h, \"Growing the ABI\")" \
     "or raise ET_VERSION_MAJOR, the soname, with it." >&2
exit 1
