#!/usr/bin/env bash
# Test a built wheel as a user gets it: scripts/test-wheel.sh WHEELDIR [PYTHON]
#
# Installs WHEELDIR's fastvec wheel for PYTHON's version (default: python3) into a fresh venv of PYTHON, where no
# compiler is on PATH, with what the native envs' tests use of the test extra (its pins), then runs, from a scratch
# directory holding a copy of the tests (so that nothing can import the tree's fastvec/), scripts/wheel_smoke.py and
# `pytest -m "not slow" tests/envs`; wheel_smoke.py, also as a pytest plugin, fails if fastvec came from anywhere but
# the wheel. CI's wheel stage runs it (.ci/run); the `python` on PATH (3.11 or newer: tomllib) reads pyproject.toml,
# and its gymnasium is the version the wheel's tests get (ray[rllib]'s pin, in CI's venv).
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=$1
py=${2:-python3}
tag=$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
whl=$(ls "$wheels"/fastvec-*-"$tag"-"$tag"-manylinux*.whl)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A PATH of links to every program but the compilers: pip and the tests find what they run, and nothing can build.
nocc=$work/bin
mkdir "$nocc"
for dir in /usr/local/bin /usr/bin /bin; do
  for prog in "$dir"/*; do
    case $(basename "$prog") in
      cc | c++ | cpp* | gcc* | g++* | clang* | *-gcc* | *-g++*) ;;
      *) [ -e "$nocc/$(basename "$prog")" ] || ln -s "$prog" "$nocc/$(basename "$prog")" ;;
    esac
  done
done

# Of the test extra what the native envs' tests use: seconds from pip's cache, where the whole extra takes minutes.
python -c '
import re, tomllib, gymnasium
used = {"pytest", "pytest-timeout", "pytest-xdist", "hypothesis", "opencv-python-headless", "pygame-ce", "pettingzoo",
        "mpe2", "dm-control", "pyopengl", "glfw", "imageio", "moviepy", "torch", "stable-baselines3", "box2d"}
test = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]
print("\n".join([r for r in test if re.match(r"[\w.-]+", r)[0].lower() in used] + [f"gymnasium=={gymnasium.__version__}"]))' \
  >"$work/requirements.txt"
"$py" -m venv "$work/venv"
export PATH="$work/venv/bin:$nocc"
pip() { python -m pip --disable-pip-version-check "$@"; }
# dm-control 1.0.52 needs MuJoCo 4 (Python >= 3.11), as fastvec's MuJoCo backend does: an older Python's wheel has
# no MuJoCo backend, and its MuJoCo tests are deselected below. dm-control goes in without its dependency labmaze
# (the locomotion mazes, which neither dm_control.suite nor these tests import): labmaze has no wheel for Python 3.13
# and builds only with Bazel.
grep -v '^dm-control' "$work/requirements.txt" >"$work/others.txt"
pip install --quiet "$whl" -r "$work/others.txt"
if python -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  pip install --quiet --no-deps -r <(grep '^dm-control' "$work/requirements.txt")
  python -c '
import importlib.metadata as md, re
for r in md.requires("dm-control"):
    if "extra ==" not in r and re.match(r"[\w.-]+", r)[0].lower() != "labmaze":
        print(r)' >"$work/dm-control-deps.txt"
  pip install --quiet -r "$work/dm-control-deps.txt"
fi

cp -r tests pyproject.toml "$work"
scripts=$PWD/scripts
cd "$work"
export PYTHONPATH=$scripts
python "$scripts/wheel_smoke.py"
# A wheel without the MuJoCo backend (Python 3.10) runs the rest of the fast tier, as CI's no-backend build does.
markers="not slow"
python -c 'import sys, fastvec._core as c; sys.exit(not c.has_mujoco)' || markers="not slow and not mujoco"
python -m pytest -q -p wheel_smoke -m "$markers" tests/envs
