#!/usr/bin/env bash
# The Python package as a user gets it: this build installed into a scratch prefix
# (cmake --install), `pip install ./python` into a scratch virtual environment of Debian's
# /usr/bin/python3 (with its pandas and pytest: --system-site-packages; no network:
# --no-build-isolation, setuptools from python3-setuptools), then its pytest suite with only
# the prefix on PATH and LD_LIBRARY_PATH; then the package cmake --install put under the
# prefix, without pip, PATH or LD_LIBRARY_PATH, and the pip copy with BUDDYHINT_PREFIX alone.
# usage: run.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -eu
build=$1 src=$(cd "$2" && pwd) work=$3
py=/usr/bin/python3
for m in pandas pytest setuptools pip; do
  $py -c "import $m" 2>/dev/null ||
    { echo "FAIL: $py has no $m (Debian: python3-pandas python3-pytest python3-setuptools python3-pip python3-venv)"; exit 1; }
done
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(dirname "$(find "$prefix" -name libbuddyhint.so.0 | head -n 1)")
$py -m venv --system-site-packages "$work/venv"
cp -r "$src/python" "$work/python" # the build writes beside the sources: a copy of them
"$work/venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index -q \
  "$work/python"
cd "$work"
unset BUDDYHINT BUDDYHINT_LIBRARY BUDDYHINT_PREFIX
PATH=$prefix/bin:$PATH LD_LIBRARY_PATH=$lib BH_TRACES=$src/traces BH_VENV=$work/venv \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"

# Without pip: the copy `cmake --install` put under the prefix for Debian's python3 finds the
# library and the command under that prefix, with neither on PATH nor LD_LIBRARY_PATH.
site=$(find "$prefix" -path '*/dist-packages/buddyhint/__init__.py' | head -n 1)
[ -n "$site" ] || { echo "FAIL: cmake --install put no Python package under $prefix"; exit 1; }
probe='import buddyhint, sys
p = buddyhint.prefix(); assert p == sys.argv[1], p
r = buddyhint.replay(sys.argv[2], strategy="bubble", backing="sim")
assert r["strategy"] == "bubble" and r["reported_bytes"] > 0
print("ok", p)'
env -u LD_LIBRARY_PATH PATH=/usr/bin:/bin PYTHONPATH="$(dirname "$(dirname "$site")")" \
  $py -c "$probe" "$prefix" "$src/traces/gen-memhog-256M.bht.zst" ||
  { echo "FAIL: the installed package without pip"; exit 1; }
# The pip-installed copy (outside the prefix) with only BUDDYHINT_PREFIX
env -u LD_LIBRARY_PATH PATH=/usr/bin:/bin BUDDYHINT_PREFIX="$prefix" \
  "$work/venv/bin/python" -c "$probe" "$prefix" "$src/traces/gen-memhog-256M.bht.zst" ||
  { echo "FAIL: the pip-installed package with BUDDYHINT_PREFIX"; exit 1; }
