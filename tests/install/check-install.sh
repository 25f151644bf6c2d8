#!/usr/bin/env bash
# Installs a build into a scratch prefix and builds small programs against the installed copy,
# as a user of the library would:
#   1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix, and the expected files are there;
#   2. the shared library exports only bh_* symbols;
#   3. tests/install/consumer.c through pkg-config, linked to the shared library (run with
#      LD_LIBRARY_PATH) and to the static one (pkg-config --static);
#   4. the same program through find_package(buddyhint), with both exported targets.
#
# usage: check-install.sh BUILD_DIR WORK_DIR
# Environment: CC (default cc) and BH_CONSUMER_CFLAGS (e.g. the sanitizer flags of the build,
# which the consumer needs to link an instrumented library).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR WORK_DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
mkdir -p "$2"
work=$(cd "$2" && pwd)
prefix=$work/prefix
CC=${CC:-cc}
export CC
read -r -a cflags <<<"${BH_CONSUMER_CFLAGS:-}"
cflags+=(-std=c11 -Wall -Wextra -Werror)

step() { printf '\n== %s\n' "$*"; }
die() {
  echo "check-install: FAILED: $*" >&2
  exit 1
}

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || die "no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt"
major=${version%%.*}

step "cmake --install $build --prefix $prefix"
rm -rf "$prefix" "$work/fp"
cmake --install "$build" --prefix "$prefix" | sed "s|$prefix/||"

# GNUInstallDirs may have chosen lib, lib64 or lib/<multiarch>: find the .pc where it went.
pc=$(find "$prefix" -name buddyhint.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || die "buddyhint.pc was not installed"
for m in man1/buddyhint.1 man3/libbuddyhint.3; do
  [ -n "$(find "$prefix" -path "*/man/$m")" ] || die "the manual page $m was not installed"
done
grep -q '^\.TH BUDDYHINT 1 "[0-9-]*" "buddyhint [0-9]' "$(find "$prefix" -path '*/man1/buddyhint.1')" ||
  die "the installed buddyhint.1 does not name the build's version"
if [ -x "$prefix/bin/buddyhint" ]; then
  [ -f "$prefix/share/bash-completion/completions/buddyhint" ] ||
    die "the bash completion was not installed"
fi
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")

step "installed files"
for f in "$libdir/libbuddyhint.so" "$libdir/libbuddyhint.so.$major" "$libdir/libbuddyhint.so.$version" \
         "$libdir/libbuddyhint.a" "$prefix/include/buddyhint.h" \
         "$prefix/include/buddyhint/version.h" "$prefix/include/buddyhint/stats.h" \
         "$libdir/cmake/buddyhint/buddyhintConfig.cmake" \
         "$libdir/cmake/buddyhint/buddyhintConfigVersion.cmake" \
         "$libdir/cmake/buddyhint/buddyhintTargets.cmake"; do
  [ -e "$f" ] || die "missing ${f#"$prefix"/}"
done
[ -L "$libdir/libbuddyhint.so.$major" ] || die "libbuddyhint.so.$major is not a symbolic link"
soname=$(readelf -d "$libdir/libbuddyhint.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libbuddyhint.so.$major" ] || die "SONAME is '$soname', not libbuddyhint.so.$major"
echo "ok: libraries (SONAME $soname), headers, pkg-config file and CMake package in place"

step "exported symbols"
exported=$(nm -D --defined-only "$libdir/libbuddyhint.so" | awk '{print $3}' |
           grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' || true)
stray=$(grep -Ev '^bh_[a-z0-9]' <<<"$exported" || true)
[ -z "$stray" ] || die "the shared library exports symbols outside the bh_ API:"$'\n'"$stray"
echo "ok: $(wc -l <<<"$exported") symbols, all bh_*"

export PKG_CONFIG_PATH=$pcdir
step "pkg-config ($pc)"
echo "cflags: $(pkg-config --cflags buddyhint)"
echo "libs:   $(pkg-config --libs buddyhint)"
echo "static: $(pkg-config --static --libs buddyhint)"
[ "$(pkg-config --modversion buddyhint)" = "$version" ] || die "pkg-config reports another version"

step "consumer through pkg-config, shared library"
# shellcheck disable=SC2046  # pkg-config's output is meant to be split into words
"$CC" "${cflags[@]}" "$here/consumer.c" -o "$work/consumer_pc" $(pkg-config --cflags --libs buddyhint)
LD_LIBRARY_PATH=$libdir "$work/consumer_pc"

step "consumer through pkg-config --static, static library"
static_libs=$(pkg-config --static --libs buddyhint)
static_libs=${static_libs/-lbuddyhint /-l:libbuddyhint.a }
# shellcheck disable=SC2046,SC2086
"$CC" "${cflags[@]}" "$here/consumer.c" -o "$work/consumer_pc_static" \
  $(pkg-config --cflags buddyhint) $static_libs
if readelf -d "$work/consumer_pc_static" | grep -q 'NEEDED.*libbuddyhint'; then
  die "consumer_pc_static needs libbuddyhint.so"
fi
"$work/consumer_pc_static"

step "consumer through find_package(buddyhint)"
cmake -S "$here/find_package" -B "$work/fp" -DCMAKE_PREFIX_PATH="$prefix" -DBH_PREFIX="$prefix" \
  -DBH_VERSION="$version" -DCMAKE_C_FLAGS="${cflags[*]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo |
  grep -E 'found buddyhint|Error|error' || true
cmake --build "$work/fp" -j 2 >"$work/fp-build.log" 2>&1 || { cat "$work/fp-build.log"; die "build failed"; }
echo "shared:"
"$work/fp/consumer_shared"
if readelf -d "$work/fp/consumer_static" | grep -q 'NEEDED.*libbuddyhint'; then
  die "consumer_static needs libbuddyhint.so"
fi
echo "static:"
"$work/fp/consumer_static"

echo
echo "check-install: libbuddyhint $version installs and links through pkg-config and find_package"
