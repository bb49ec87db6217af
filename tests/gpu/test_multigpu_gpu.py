"""The GPU a worker of `eval.py --gpus` holds is the board nvidia-smi names: CUDA and nvidia-smi agree on it.

Run on the GPU machine (tools/gpu_suite.sh, or `python3 -m pytest -q tests/gpu/test_multigpu_gpu.py`); the
second test needs two GPUs (nvidia-h200-x2). The wall time and verdicts of a whole run against one GPU
are tools/multigpu_eval.py's.
"""

import json
import os
import subprocess
import sys

import pytest

from kernel_opt.env.probes import probe_nvidia_smi
from kernel_opt.measure.reference_cache import visible_gpu
from kernel_opt.run.events import board_uuid, environment_info
from kernel_opt.suite.gpu_pool import worker_slots

pytestmark = [pytest.mark.gpu]

BOARD_OF_DEVICE_0 = "import torch; print(torch.cuda.get_device_properties(0).uuid)"


def test_the_timing_child_names_the_board_nvidia_smi_calls_the_visible_gpu():
    """benchmark.json's gpu.uuid (the child's environment event) is the visible GPU's nvidia-smi UUID."""
    assert environment_info("cuda")["gpu"]["uuid"] == visible_gpu(probe_nvidia_smi().gpus).uuid


def test_each_workers_cuda_device_0_is_the_gpu_its_slot_names():
    slots = worker_slots("all", "cuda")
    if len(slots) < 2:
        pytest.skip("needs two GPUs (the nvidia-h200-x2 machine)")
    for slot in slots:
        environment = {**os.environ, **slot.environment()}
        seen = subprocess.run([sys.executable, "-c", BOARD_OF_DEVICE_0], env=environment, capture_output=True,
                              text=True, timeout=120, check=True).stdout.strip()
        assert board_uuid(seen) == slot.gpu.uuid, json.dumps({"slot": slot.label(), "torch": seen})
    assert len({slot.gpu.uuid for slot in slots}) == len(slots)
