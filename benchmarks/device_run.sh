#!/usr/bin/env bash
# The one prepared run for a lent GPU machine (see README "Devices"): the CUDA half of the device
# tests, then benchmarks/gpu_check.py at full size. Everything lands in $OUT (default ./results/device):
#   pytest_cuda.log, gpu_check.log, gpu_check.json (rewritten after every part), env.txt
# Missing pure-Python dependencies may travel as wheels in .whl/ (installed without network).
set -u
OUT=${OUT:-results/device}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
{ date -u; nproc; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
  python3 -c "import torch, sys; print(sys.version); print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
  git rev-parse HEAD 2>/dev/null; git status --porcelain 2>/dev/null | head; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
# the tests that take the `device` fixture or a CUDA mark: the CPU half runs in CI, this adds the CUDA half
timeout "${PYTEST_LIMIT:-200}" python3 -m pytest -p no:cacheprovider -q -rfEs \
    tests/test_device.py tests/nn tests/test_cli.py 2>&1 | tee "$OUT/pytest_cuda.log" | tail -25
timeout "${CHECK_LIMIT:-300}" python3 benchmarks/gpu_check.py --device auto --out "$OUT/gpu_check.json" 2>&1 \
    | tee "$OUT/gpu_check.log"
