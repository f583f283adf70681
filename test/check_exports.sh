#!/usr/bin/env bash
# check_exports.sh — the installed library exports exactly the API of include/polymage.h.
#
#   check_exports.sh LIBRARY HEADER CC
#
# A shared library (libpolymage.so): its defined dynamic symbols (nm -D --defined-only)
# must all be pm_* functions declared in the header, every function the header declares
# must be among them, its SONAME must be libpolymage.so.<major>, and it must name libgomp
# itself (DT_NEEDED), so that JIT code finds GOMP_* in any process that loads it, and
# its isl calls must bind to libisl, not to the copy of isl inside libLLVM-19.
# A static library (libpolymage.a, -DPM_STATIC=ON): the same two-way check on its global
# symbols of default visibility (the rest are hidden, as in the shared library).
# Exit status 0 when all hold; otherwise 1 and one line per problem.
set -euo pipefail
lib=$1 header=$2 cc=${3:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "check_exports: $*" >&2; status=1; }

# The functions the header declares: its declarations after the preprocessor (comments
# and macros gone), every identifier pm_... directly followed by "(".
"$cc" -E -P -x c "$header" | grep -oE '\bpm_[A-Za-z0-9_]+[[:space:]]*\(' |
  sed -E 's/[[:space:]]*\($//' | sort -u > "$tmp/declared"
[ -s "$tmp/declared" ] || fail "no function declarations found in $header"

case "$lib" in
  *.a)
    readelf -sW "$lib" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "DEFAULT" &&
                             $7 != "UND" && $8 != "" { print $8 }' | sort -u > "$tmp/exported"
    ;;
  *)
    nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' |
      sort -u > "$tmp/exported"
    soname=$(readelf -d "$lib" | sed -nE 's/.*\(SONAME\).*\[(.*)\]/\1/p')
    case "$soname" in
      libpolymage.so.[0-9]*) ;;
      *) fail "SONAME is '$soname', expected libpolymage.so.<major>" ;;
    esac
    readelf -d "$lib" | grep -q 'NEEDED.*\[libgomp\.so\.1\]' ||
      fail "$lib does not name libgomp.so.1 (DT_NEEDED): JIT code could not find GOMP_*"
    # libLLVM-19 exports a copy of isl of its own (isl_*@LLVM_19.1): the library's isl
    # calls must go to libisl, which it was compiled against.
    llvm_isl=$(nm -D --undefined-only "$lib" | grep -cE ' isl_[A-Za-z0-9_]*@LLVM' || true)
    [ "$llvm_isl" -eq 0 ] ||
      fail "$lib binds $llvm_isl isl functions to libLLVM's copy of isl, not libisl"
    ;;
esac
[ -s "$tmp/exported" ] || fail "$lib exports nothing"

while read -r s; do
  case "$s" in
    pm_*) grep -qxF "$s" "$tmp/declared" ||
            fail "exported but not declared in polymage.h: $s" ;;
    *) fail "exported symbol outside the pm_ API: $s" ;;
  esac
done < "$tmp/exported"
while read -r s; do
  grep -qxF "$s" "$tmp/exported" || fail "declared in polymage.h but not exported: $s"
done < "$tmp/declared"

n=$(wc -l < "$tmp/exported")
[ $status -eq 0 ] && echo "check_exports: $lib exports the $n functions of polymage.h and nothing else"
exit $status
