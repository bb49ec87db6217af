"""tools/library_kernels.py on a CPU: the cases, the exact ncu command (clocks never touched), exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, load_tool

from kernel_opt.profile.ncu.collection import NcuCommandOptions, NcuRun, build_ncu_command, extra_metrics_for

library_kernels = load_tool("library_kernels")


def test_the_cases_are_the_gemms_and_attention_backends_of_issue_15():
    cases = library_kernels.CASES
    assert sorted(name for name in cases if name.startswith("gemm_")) == sorted(
        f"gemm_{dtype}_{shape}" for dtype in ("bf16", "fp16", "fp32") for shape in ("8192", "4096", "8192x8192x1024"))
    assert [cases[name].backend for name in ("sdpa_flash", "sdpa_cudnn", "sdpa_efficient")] == [
        "FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"]
    assert cases["sdpa_cudnn"].describe() == "SDPA CUDNN_ATTENTION bfloat16 B=8 H=16 S=2048 D=64"
    assert cases["gemm_fp32_8192x8192x1024"].describe() == "torch.matmul float32 M=8192 N=8192 K=1024 (TF32 off)"


def test_the_ncu_command_is_ncu_profiles_own_with_clocks_left_alone(tmp_path):
    base = tmp_path / "gemm_bf16_8192" / "profile"
    command = library_kernels.ncu_command(library_kernels.CASES["gemm_bf16_8192"], base, "/opt/ncu/ncu", "9.0")
    program = [sys.executable, str(REPO_ROOT / "tools" / "library_kernels.py"), "run", "gemm_bf16_8192"]
    expected = build_ncu_command("/opt/ncu/ncu", program, NcuCommandOptions(
        export_base=base, max_launches=4, extra_metrics=extra_metrics_for("9.0")))
    assert command == expected
    assert command[command.index("--clock-control") + 1] == "none"
    assert command[command.index("--nvtx-include") + 1] == "kernel_opt_solution/"
    assert "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active" in command[
        command.index("--metrics") + 1]


def test_the_cli_lists_prints_commands_and_refuses_unknown_cases(tmp_path, capsys):
    assert library_kernels.main(["list"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "gemm_bf16_8192\ttorch.matmul bfloat16 M=8192 N=8192 K=8192"
    assert library_kernels.main(["command", "sdpa_flash", str(tmp_path / "p"), "--ncu", "ncu", "--capability",
                                 "9.0"]) == 0
    command = json.loads(capsys.readouterr().out)
    assert command[0] == "ncu" and command[-2:] == ["run", "sdpa_flash"]
    assert library_kernels.main(["run", "gemm_bf16_1"]) == 2
    assert library_kernels.main(["profile", "sdpa_flash"]) == 2  # no EXPORT_BASE


@pytest.mark.parametrize("output, report, timed_out, code", [
    ("==PROF== Disconnected", True, False, 0),
    ("CASE UNAVAILABLE: CUDNN_ATTENTION: No available kernel", False, False, 3),
    ("==ERROR== something", False, False, 4),
    ("", True, True, 4),
])
def test_profile_exit_codes_follow_ncu_and_the_case(tmp_path, monkeypatch, output, report, timed_out, code):
    def fake_run(command, env=None, timeout_s=None):
        if report:
            Path(command[command.index("--export") + 1] + ".ncu-rep").write_bytes(b"r")
        return NcuRun(command, None if timed_out else 0, output, timed_out=timed_out, timeout_s=timeout_s)

    monkeypatch.setattr(library_kernels, "run_ncu", fake_run)
    base = tmp_path / "sdpa_cudnn" / "profile"
    assert library_kernels.main(["profile", "sdpa_cudnn", str(base), "--capability", "9.0", "--timeout", "5"]) == code
    log = (base.parent / "ncu.log").read_text()
    assert log.startswith("$ ncu --target-processes all --clock-control none") and output in log


def test_running_a_case_without_a_gpu_is_exit_3(capsys):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert library_kernels.main(["run", "gemm_bf16_4096"]) == 3
    assert "CASE UNAVAILABLE: no GPU" in capsys.readouterr().err
