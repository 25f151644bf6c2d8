#!/usr/bin/env bash
# The Python package as a user gets it: this build installed into a scratch prefix
# (cmake --install), `pip install ./python` into a scratch virtual environment of Debian's
# /usr/bin/python3 (with its pandas and pytest: --system-site-packages; no network:
# --no-build-isolation, setuptools from python3-setuptools), then its pytest suite with only
# the prefix on PATH and LD_LIBRARY_PATH.
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
unset BUDDYHINT BUDDYHINT_LIBRARY
PATH=$prefix/bin:$PATH LD_LIBRARY_PATH=$lib BH_TRACES=$src/traces BH_VENV=$work/venv \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"
