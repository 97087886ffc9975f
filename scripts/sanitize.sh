#!/usr/bin/env bash
# Builds fastvec's extension and the C++ core's unit tests with a sanitizer and
# runs them, and the pool, async, close, failure-path and signal tests with the
# sanitizer's runtime preloaded into an uninstrumented Python.
#
#   scripts/sanitize.sh thread    # ThreadSanitizer
#   scripts/sanitize.sh address   # AddressSanitizer + UndefinedBehaviorSanitizer
#   scripts/sanitize.sh thread tests/core/test_pool.py -k async   # other pytest arguments
#   FASTVEC_ATARI=OFF scripts/sanitize.sh thread              # without the Atari backend (CI: faster build)
#   FASTVEC_MUJOCO=OFF scripts/sanitize.sh thread             # without the MuJoCo backend
#
# Needs the test dependencies in the active Python (pip install ".[test]"),
# cmake, ninja and g++. Exits non-zero on any sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh thread|address [pytest args...]}
shift
case $kind in
  thread) runtime=libtsan.so ;;
  address) runtime=libasan.so ;;
  *) echo "sanitizer must be 'thread' or 'address', got '$kind'" >&2; exit 2 ;;
esac
atari=${FASTVEC_ATARI:-ON}
mujoco=${FASTVEC_MUJOCO:-ON}
if [ $# -eq 0 ]; then
  # The Python-env pool is Python code, but its workers load the sanitized module and its tests drive the
  # same API. Markers (pyproject.toml) leave out what cannot run here: tests too slow under a sanitizer
  # (heavy: the emulator is ~10x slower under TSan) and tests that limit the address space.
  set -- tests/core/test_pool.py tests/api/test_signals.py tests/core/test_determinism.py tests/pyenv/test_pyenv.py \
    tests/core/test_scheduling.py tests/api/test_async_api.py tests/api/test_misuse.py
  markers="not heavy and not address_space"
  if [ "$atari" = ON ]; then
    set -- "$@" tests/envs/test_atari.py
  else
    markers="$markers and not atari"
  fi
  [ "$mujoco" = ON ] || markers="$markers and not mujoco"
  set -- "$@" -m "$markers"
fi

build=build/sanitize-$kind$([ "$atari" = ON ] || echo -noatari)$([ "$mujoco" = ON ] || echo -nomujoco)
python=$(command -v python)
# Reuse an already-downloaded ALE sdist if a previous build left one.
sdist=$(ls build/*/_ale/ale_py-*.tar.gz 2>/dev/null | head -n1 || true)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFASTVEC_SANITIZER="$kind" -DFASTVEC_ATARI="$atari" -DFASTVEC_MUJOCO="$mujoco" \
  -DPython_EXECUTABLE="$python" -Dpybind11_DIR="$("$python" -m pybind11 --cmakedir)" \
  ${sdist:+-DFASTVEC_ALE_SDIST="$PWD/$sdist"} >/dev/null
cmake --build "$build"

# An importable fastvec: the package's Python files next to the sanitized module.
pkg=$(mktemp -d)
trap 'rm -rf "$pkg" "${reports:-}"' EXIT
cp -r fastvec "$pkg/"
find "$pkg/fastvec" -name '_core*.so' -delete
cp "$build"/_core*.so "$pkg/fastvec/"

preload=$(g++ -print-file-name="$runtime")
# ASan intercepts __cxa_throw at start-up: libstdc++ must be loaded by then (Python does not link it),
# or the first C++ exception fails ASan's CHECK on the real __cxa_throw.
[ "$kind" = address ] && preload="$preload $(g++ -print-file-name=libstdc++.so)"
export PYTHONPATH="$pkg${PYTHONPATH:+:$PYTHONPATH}"
reports=$(mktemp -d)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
if [ "$kind" = thread ]; then
  # halt_on_error: the first race fails the run. Suppressions: scripts/tsan.supp says why each exists.
  # Reports go to files: pytest captures the tests' stderr.
  export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp log_path=$reports/report"
else
  # CPython's allocator and interned objects live until exit on purpose: leaks are not checked.
  export ASAN_OPTIONS="detect_leaks=0 abort_on_error=1 log_path=$reports/report"
  export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 log_path=$reports/report"
fi
# -P: never import the source tree's fastvec (it has no compiled module); the copy above is used.
# An editable install of fastvec hooks the import system ahead of PYTHONPATH: refuse to test it by mistake.
LD_PRELOAD="$preload" "$python" -P -c "import sys, fastvec._core as c; sys.exit(0 if c.__file__.startswith('$pkg') else
  'sanitize.sh: Python imports ' + c.__file__ + ', not the sanitized build; use a venv where fastvec is '
  'not installed in editable mode (pip install \".[test]\")')"
status=0
# The C++ core's unit tests, built the one way they are built (tests/cpp/CMakeLists.txt), under the sanitizer.
cmake -S tests/cpp -B "$build/core-tests" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFASTVEC_SANITIZER="$kind" >/dev/null
cmake --build "$build/core-tests"
"$build/core-tests/core_tests" > "$reports/core_tests.out" 2>&1 || { cat "$reports/core_tests.out" >&2; status=1; }
rm -f "$reports/core_tests.out"
LD_PRELOAD="$preload" "$python" -P -m pytest -p no:cacheprovider -q "$@" || status=$?
if compgen -G "$reports/report*" >/dev/null; then
  cat "$reports"/report* >&2
  echo "sanitize.sh $kind: sanitizer reports above" >&2
  exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
echo "sanitize.sh $kind: clean"
