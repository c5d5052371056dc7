#!/usr/bin/env bash
# The driver-only check: does labkit compile and run kernels on a GPU host that has the NVIDIA
# driver but no CUDA toolkit, with NVVM and libdevice from numba-cuda's cu13 wheels alone?
#
#   tools/gpu_check_driver_only.sh WHEEL_DIR [LOG_DIR]
#
# WHEEL_DIR holds the nvidia-nvvm wheel for the driver's CUDA minor (13.0.88 for a 13.0 driver),
# either as the wheel itself or as nvvm.tar.xz (the wheel's files without nvvm/bin/cicc, which
# numba-cuda does not use: 21 MB instead of 62, for a transfer limit). The host's other Python
# packages are used as they are (numba-cuda, cuda-bindings and the NVRTC/runtime wheels).
# Steps: install the wheel into PYTHON's own site-packages (cuda.pathfinder, numba-cuda's library
# lookup, searches site-packages, not PYTHONPATH); hide the toolkit (CUDA_HOME unset, /usr/local/cuda*
# moved aside or covered by an empty folder: this host is disposable, do not run it on yours);
# show where numba-cuda now finds NVVM, libdevice and NVRTC; doctor; the core tests; a bench.
# Exit code: 0 when the lookup found the wheel's NVVM and every step passed, else 1.
set -uo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
WHEELS=$(cd "$1" && pwd)
LOG_DIR=$(mkdir -p "${2:-/tmp/driver-only}" && cd "${2:-/tmp/driver-only}" && pwd)
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/.."
SITE=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || exit 1
if [ -f "$WHEELS/nvvm.tar.xz" ]; then
  tar xJf "$WHEELS/nvvm.tar.xz" -C "$SITE" || exit 1
else
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile "$WHEELS"/nvidia_nvvm-*.whl || exit 1
fi

unset CUDA_HOME CUDA_PATH NUMBAPRO_NVVM NUMBAPRO_LIBDEVICE
for d in /usr/local/cuda /usr/local/cuda-*; do
  [ -e "$d" ] || continue
  mv "$d" "$d.hidden" 2>/dev/null || { mkdir -p /tmp/empty && mount --bind /tmp/empty "$d"; }
done
echo "toolkit left: $(ls -d /usr/local/cuda* 2>/dev/null | tr '\n' ' ')nvcc: $(command -v nvcc || echo none)"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} LABKIT_BACKEND=cuda PYTHONUNBUFFERED=1 WHEEL_SITE=$SITE

status=0
"$PYTHON" - <<'EOF' 2>&1 | tee "$LOG_DIR/lookup.log" || status=1
import os, sys
import numba.cuda.cuda_paths as p
found = {n: getattr(p, f)().info for n, f in (("NVVM", "_get_nvvm_path"),
         ("libdevice", "_get_libdevice_path"), ("NVRTC", "_get_nvrtc_path"))}
for name, path in found.items():
    print(f"{name:10s} {path}")
sys.exit(0 if str(found["NVVM"]).startswith(os.environ["WHEEL_SITE"] + "/nvidia/") else 1)
EOF
"$PYTHON" -m labkit doctor 2>&1 | tee "$LOG_DIR/doctor.log" || status=1
"$PYTHON" -m pytest -p no:cacheprovider -o addopts="" -q -rfE --no-header tests/core \
  2>&1 | tee "$LOG_DIR/tests.log" | tail -5 || status=1
"$PYTHON" -m labkit bench --kernels 50 --repeat 5 2>&1 | tee "$LOG_DIR/bench.log" || status=1
echo "driver-only check: exit $status (logs in $LOG_DIR)"
exit $status
