"""The KernelBench-format demo set (demo/kernelbench): problems of our own, H100-sized, each with an honest v0.

- every problem loads through the project's KernelBench loader with the sizes listed here, and is
  paired with a v0 that the modelnew backend claims;
- its default sizes are H100-sized by counting, not by its docstring: tools/kernelbench_estimate.py
  runs the Model on PyTorch's meta device and counts each eager op's bytes and FLOPs (its counting
  rules are tested here on a synthetic problem), and the inputs' bytes are checked against the
  constants multiplied out;
- every v0 passes correctness_check.py (the real CLI in-process, its child on the CPU under the Triton
  interpreter, the default tolerance rule) at scaled-down sizes given as --NAME=VALUE, and v0s broken
  on purpose fail (the problems' inputs and weights catch a skipped weight, a missing mask, a scan
  the wrong way, padding that takes part in a max);
- tools/demo_upkeep/kernelbench_loop.py's decisions (the deadline, what counts as failing to run) with its
  commands faked, and tools/demo_upkeep/kernelbench_loop_table.py on the demo runs recorded on the H100.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool

from kernel_opt.commands.correctness_check import main as correctness_check
from kernel_opt.solution import registry
from kernel_opt.solution.kernelbench import outline_problem

DEMO = REPO_ROOT / "demo" / "kernelbench"
PROBLEMS, V0 = DEMO / "problems", DEMO / "v0"
estimate_tool = load_tool("kernelbench_estimate")
loop_tool = load_tool("kernelbench_loop", DEMO_UPKEEP)
table_tool = load_tool("kernelbench_loop_table", DEMO_UPKEEP)
eager_tool = load_tool("kernelbench_eager")

# The eager estimate each problem must reach at its default sizes (issue 16: at least 100 us on an H100;
# the set aims at 150-600 us so a loop iteration's gain is measurable), and the most it may reach.
MIN_EAGER_ESTIMATE_US = 150.0
MAX_EAGER_ESTIMATE_US = 800.0
MAX_GPU_BYTES = 20e9  # well under an H100's 80 GB, with room for torch.compile's buffers
F32, F16 = 4, 2

# problem -> (kind, its input sizes at their defaults, get_inputs()' bytes from the constants, CPU sizes)
SET = {
    "L1_01_rms_norm": ("norm", {"batch_size": 8192, "dim": 4096}, 8192 * 4096 * F32,
                       {"batch_size": 8, "dim": 64}),
    "L1_02_log_softmax_wide": ("reduction", {"batch_size": 1024, "vocab": 65536}, 1024 * 65536 * F32,
                               {"batch_size": 4, "vocab": 3000}),
    "L1_03_cross_entropy_large_vocab": ("loss", {"batch_size": 4096, "vocab": 32768},
                                        4096 * 32768 * F32 + 4096 * 8, {"batch_size": 4, "vocab": 3000}),
    "L1_04_smooth_l1_loss": ("loss", {"batch_size": 16384, "dim": 4096}, 2 * 16384 * 4096 * F32,
                             {"batch_size": 16, "dim": 100}),
    "L1_05_max_pool2d_large_window": ("pooling", {"batch_size": 16, "channels": 64, "height": 256, "width": 256},
                                      16 * 64 * 256 * 256 * F32,
                                      {"batch_size": 2, "channels": 3, "height": 20, "width": 24}),
    "L1_06_reverse_cumsum": ("scan", {"batch_size": 4096, "length": 8192}, 4096 * 8192 * F32,
                             {"batch_size": 4, "length": 3000}),
    "L2_01_linear_gelu_scale": ("matmul epilogue", {"batch_size": 8192, "in_features": 256},
                                8192 * 256 * F32, {"batch_size": 16, "in_features": 32, "out_features": 48}),
    "L2_02_conv_bias_relu_scale": ("convolution", {"batch_size": 4, "in_channels": 64, "height": 128, "width": 128},
                                   4 * 64 * 128 * 128 * F32,
                                   {"batch_size": 2, "in_channels": 4, "out_channels": 8, "height": 10, "width": 12}),
    "L2_03_causal_attention_fp16": ("attention", {"batch_size": 4, "heads": 8, "seq_len": 1536, "head_dim": 64},
                                    3 * 4 * 8 * 1536 * 64 * F16,
                                    {"batch_size": 1, "heads": 2, "seq_len": 40, "head_dim": 16}),
    "L2_04_silu_gate_clamp": ("elementwise chain", {"batch_size": 8192, "hidden": 4096}, 8192 * 8192 * F32,
                              {"batch_size": 8, "hidden": 100}),
    "L2_05_residual_add_layer_norm": ("norm", {"batch_size": 8192, "features": 4096}, 2 * 8192 * 4096 * F32,
                                      {"batch_size": 8, "features": 100}),
    "L2_06_group_norm_silu": ("norm", {"batch_size": 8, "channels": 256, "height": 128, "width": 128},
                              8 * 256 * 128 * 128 * F32,
                              {"batch_size": 2, "channels": 8, "height": 6, "width": 10, "num_groups": 2}),
    "L2_07_distillation_kl_loss": ("loss", {"batch_size": 512, "vocab": 32768}, 2 * 512 * 32768 * F32,
                                   {"batch_size": 4, "vocab": 3000}),
}
REQUIRED_KINDS = {"norm", "reduction", "elementwise chain", "matmul epilogue", "convolution", "pooling",
                  "attention", "loss"}


def cli_arguments(sizes: dict[str, int]) -> list[str]:
    return [f"--{name}={value}" for name, value in sizes.items()]


# --- the set ----------------------------------------------------------------------------------------


def test_the_set_pairs_every_problem_with_a_v0_and_covers_kernelbench_s_kinds():
    problems = sorted(path.stem for path in PROBLEMS.glob("*.py"))
    assert problems == sorted(path.stem for path in V0.glob("*.py")) == sorted(SET)
    assert len(problems) >= 12
    assert {kind for kind, *_ in SET.values()} >= REQUIRED_KINDS
    assert {name[:2] for name in problems} == {"L1", "L2"}


@pytest.mark.parametrize("problem", sorted(SET))
def test_every_problem_loads_with_its_sizes(problem):
    _, sizes, _, cpu_sizes = SET[problem]
    outline = outline_problem(PROBLEMS / f"{problem}.py")
    assert set(outline.input_sizes) == set(sizes)  # the sizes the extra correctness shapes scale
    assert {name: outline.constants[name] for name in sizes} == sizes
    assert set(cpu_sizes) <= set(outline.constants)  # every CPU override names a constant of the file
    assert registry.detect(V0 / f"{problem}.py") == "modelnew"


@pytest.mark.parametrize("problem", sorted(SET))
def test_default_sizes_are_h100_sized(problem):
    _, _, input_bytes, _ = SET[problem]
    cost = estimate_tool.estimate(PROBLEMS / f"{problem}.py")
    assert cost.input_bytes == input_bytes  # the meta device's shapes, as the constants multiply out
    assert MIN_EAGER_ESTIMATE_US <= cost.eager_us <= MAX_EAGER_ESTIMATE_US, (cost.eager_us, cost.ops)
    assert cost.created_bytes < MAX_GPU_BYTES


def test_the_estimator_counts_each_eager_op_s_traffic_and_flops(tmp_path):
    problem = tmp_path / "matmul_square_bias.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.bias = nn.Parameter(torch.zeros(n))\n"
        "    def forward(self, x, w):\n        h = x @ w\n        return (h * h + self.bias).t()\n\n"
        "m = 256\nk = 128\nn = 512\n\n"
        "def get_inputs():\n    return [torch.randn(m, k), torch.randn(k, n)]\n\n"
        "def get_init_inputs():\n    return [n]\n")
    cost = estimate_tool.estimate(problem)
    m, k, n = 256, 128, 512
    assert [(op.op, op.bytes_moved, op.flops) for op in cost.ops] == [
        ("mm", (m * k + k * n + m * n) * F32, 2 * m * k * n),
        ("mul", 2 * m * n * F32, 0),  # h * h reads h once
        ("add", (2 * m * n + n) * F32, 0),  # the broadcast bias is read once, not m times; .t() moves nothing
    ]
    assert cost.eager_us == pytest.approx(
        max((m * k + k * n + m * n) * F32 / 3027e9, 2 * m * k * n / 51.2e12) * 1e6
        + (2 * m * n * F32 + (2 * m * n + n) * F32) / 3027e9 * 1e6)
    assert (cost.input_bytes, cost.weight_bytes, cost.output_bytes) == ((m * k + k * n) * F32, n * F32, m * n * F32)
    assert cost.fused_floor_us == pytest.approx(2 * m * k * n / 51.2e12 * 1e6)  # compute-bound: its FLOPs
    # nll_loss gathers one value per row: it does not read the whole log-probability matrix again
    cross_entropy = estimate_tool.estimate(PROBLEMS / "L1_03_cross_entropy_large_vocab.py")
    (_, log_softmax_bytes), (_, nll_bytes) = [(op.op, op.bytes_moved) for op in cross_entropy.ops]
    assert log_softmax_bytes == 2 * 4096 * 32768 * F32 and nll_bytes < 1e6


# --- every v0 through the real correctness check, on the CPU ----------------------------------------


def check(solution: Path, problem: str, output_dir: Path) -> tuple[int, dict]:
    code = correctness_check([str(solution), "--ref", str(PROBLEMS / f"{problem}.py"), "--output-dir",
                              str(output_dir), "--device", "cpu", *cli_arguments(SET[problem][3])])
    return code, json.loads((output_dir / "correctness.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("problem", sorted(SET))
def test_every_v0_passes_the_correctness_check(problem, tmp_path):
    code, report = check(V0 / f"{problem}.py", problem, tmp_path)
    assert code == 0 and report["verdict"] == "pass", report.get("error") or report["cases"][0]
    assert report["interpreter"] is True and report["backend"] == "modelnew"
    assert report["dims"] == SET[problem][3]
    # the CLI's shape and the scaled ones, 3 seeds each; GroupNorm's odd channel count is rejected by the Model
    assert len(report["cases"]) == (9 if problem == "L2_06_group_norm_silu" else 12)


@pytest.mark.slow
@pytest.mark.parametrize("problem, honest, broken, every_case", [
    ("L1_01_rms_norm", "x / rms * weight, mask=mask)", "x / rms, mask=mask)", True),  # the learned weight skipped
    ("L2_03_causal_attention_fp16", "visible = (keys[None, :] <= rows[:, None]) & key_mask[None, :]",
     "visible = key_mask[None, :]", True),  # the future not masked
    ("L1_06_reverse_cumsum", "cols = n_cols - 1 - steps", "cols = steps", True),  # a forward scan
    # zero padding: wrong only where a window over the padding is all negative (the inputs make that common)
    ("L1_05_max_pool2d_large_window", 'mask=ok, other=-float("inf")', "mask=ok, other=0.0", False),
])
def test_a_broken_v0_fails(problem, honest, broken, every_case, tmp_path):
    source = (V0 / f"{problem}.py").read_text()
    assert source.count(honest) == 1
    solution = tmp_path / f"{problem}.py"
    solution.write_text(source.replace(honest, broken))
    code, report = check(solution, problem, tmp_path / "out")
    assert code == 1 and report["verdict"] == "fail"
    failed = [not output["passed"] for case in report["cases"] for output in case["outputs"]]
    assert all(failed) if every_case else sum(failed) >= len(failed) // 2, failed


# --- the loop driver, its commands faked ---------------------------------------------------------------


class FakeCommands:
    """Stands in for workspace.py: init makes the run folder, evaluate writes evaluation.json and takes
    `seconds` on a fake clock; `exit_codes[problem]` is evaluate's exit code (with `recorded` False, the
    crash of a command that writes no record)."""

    def __init__(self, seconds: float, exit_codes: dict[str, int] | None = None, recorded: bool = True):
        self.now, self.seconds, self.exit_codes, self.recorded = 0.0, seconds, exit_codes or {}, recorded
        self.commands: list[list[str]] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, command: list[str], log: Path) -> int:
        self.commands.append(command)
        verb = Path(command[1]).stem if Path(command[1]).stem != "workspace" else command[2]
        if verb == "init":
            run = Path(command[3])
            (run / "v0" / "build").mkdir(parents=True)
            (run / "run.json").write_text("{}")
            (run / "v0" / "v0.py").write_text("class ModelNew: pass\n")
            return 0
        if verb == "evaluate":
            run, version = Path(command[3]), command[4]
            code = self.exit_codes.get(run.name, 0)
            self.now += self.seconds
            if self.recorded:
                record = {"state": "measured" if code == 0 else "failed", "exit_code": code}
                (run / version / "evaluation.json").write_text(json.dumps(record))
            return code
        return 0  # env_check


def drive(tmp_path: Path, commands: FakeCommands, *arguments: str) -> int:
    return loop_tool.main([str(tmp_path / "out"), "--runs", str(tmp_path / "runs"), *arguments],
                          runner=commands, clock=commands.clock)


def test_the_driver_starts_no_evaluation_that_would_end_past_the_deadline(tmp_path, capsys):
    commands = FakeCommands(seconds=100.0)
    only = "L1_01_rms_norm,L1_02_log_softmax_wide,L1_03_cross_entropy_large_vocab"
    assert drive(tmp_path, commands, "--only", only, "--deadline", "250") == 0  # a skip is no failure
    steps = json.loads((tmp_path / "out" / "steps.json").read_text())
    assert [(s["problem"], s["action"]) for s in steps] == [
        ("machine", "env_check"), ("L1_01_rms_norm", "init"), ("L1_01_rms_norm", "evaluate"),
        ("L1_02_log_softmax_wide", "init"), ("L1_02_log_softmax_wide", "evaluate"),  # 100 s in: 100 + 100 <= 250
        ("L1_03_cross_entropy_large_vocab", "init"),
        ("L1_03_cross_entropy_large_vocab", "skipped_deadline")]  # 200 s in: 200 + 100 > 250
    printed = capsys.readouterr().out
    assert (f"skipped before the 250 s deadline: L1_03_cross_entropy_large_vocab (v0); resume with:\n"
            f"  bash tools/demo_upkeep/kernelbench_loop.sh {tmp_path / 'out'} --versions v0 --only "
            "L1_03_cross_entropy_large_vocab") in printed
    init = next(command for command in commands.commands if "init" in command)
    assert init[2:] == ["init", str(tmp_path / "runs" / "L1_01_rms_norm"), "--kernel", str(V0 / "L1_01_rms_norm.py"),
                        "--ref", str(PROBLEMS / "L1_01_rms_norm.py"), "--iterations", "4", "--backend", "modelnew",
                        "--name", "L1_01_rms_norm"]
    with tarfile.open(tmp_path / "out" / "runs.tar.gz") as bundle:
        names = bundle.getnames()
    assert "L1_01_rms_norm/v0/evaluation.json" in names and not any("/build" in name for name in names)


def test_a_failed_check_is_a_result_but_a_crash_or_exit_4_is_a_failure_to_run(tmp_path, capsys):
    only = ["--only", "L1_01_rms_norm,L1_04_smooth_l1_loss"]
    results = FakeCommands(60.0, {"L1_01_rms_norm": 1, "L1_04_smooth_l1_loss": 3})
    assert drive(tmp_path / "results", results, *only) == 0
    crash = FakeCommands(60.0, {"L1_01_rms_norm": 1}, recorded=False)  # a traceback also exits 1
    assert drive(tmp_path / "crash", crash, *only) == 1
    assert "FAILED TO RUN: L1_01_rms_norm v0 evaluate exit 1" in capsys.readouterr().out
    assert drive(tmp_path / "no_gpu", FakeCommands(60.0, {"L1_04_smooth_l1_loss": 4}), *only) == 1


def test_the_driver_leaves_measured_versions_alone_and_names_missing_ones(tmp_path, capsys):
    commands = FakeCommands(60.0)
    assert drive(tmp_path, commands, "--only", "L1_01_rms_norm") == 0
    evaluations = len([command for command in commands.commands if "evaluate" in command])
    assert drive(tmp_path, commands, "--only", "L1_01_rms_norm", "--versions", "v0,v1") == 0
    assert len([command for command in commands.commands if "evaluate" in command]) == evaluations
    steps = json.loads((tmp_path / "out" / "steps.json").read_text())
    assert [(s["action"], s["version"]) for s in steps[1:]] == [("already_evaluated", "v0"), ("missing_version", "v1")]
    assert "no such version (create it with workspace.py next): L1_01_rms_norm v1" in capsys.readouterr().out


@pytest.mark.parametrize("arguments, message", [
    (["--only", "L1_01_rms_norm,L9_99_nothing"], "no problem file for L9_99_nothing"),
    (["--versions", "best"], "--versions takes v0, v1, ..."),
])
def test_the_driver_refuses_bad_arguments(tmp_path, capsys, arguments, message):
    assert drive(tmp_path, FakeCommands(1.0), *arguments) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


# --- the table, read from run folders ------------------------------------------------------------------


def test_the_table_copies_each_version_s_recorded_figures():
    rows = table_tool.loop_rows(REPO_ROOT / "demo" / "triton", ["v0", "v9"], ["rmsnorm"])
    v0, v9 = rows
    assert (v0.problem, v0.version, v0.state, v0.exit_code) == ("rmsnorm", "v0", "measured", 0)
    assert (v0.solution_us, v0.eager_us, v0.compile_us) == pytest.approx((89.12, 1065.78, 87.30), abs=0.01)
    assert v0.speedup_vs_best == pytest.approx(0.9795, abs=1e-4) and v0.best_baseline == "torch.compile (default)"
    assert v0.percent_of_ceiling == pytest.approx(97.41, abs=0.01)
    assert (v0.bottleneck, v0.advice) == ("memory_bound", "experience/triton/TRITON.md#single_pass")
    assert (v9.state, v9.solution_us, v9.bottleneck) == ("no such version", None, None)
    table = table_tool.render(rows)
    assert "| rmsnorm   | v0        | measured (0)" in table and "| 0.98x " in table and "| 97.4% " in table


def test_the_eager_table_flags_a_problem_under_100_us():
    timings = [eager_tool.EagerTiming("fast_enough", 300.0, 320.5, 318.0, 323.0, 200),
               eager_tool.EagerTiming("too_small", 300.0, 80.0, 79.5, 80.5, 400),
               eager_tool.EagerTiming("broken", 300.0, error="RuntimeError: CUDA out of memory")]
    lines = eager_tool.render(timings, "NVIDIA H100 80GB HBM3").splitlines()
    assert lines[0] == "Eager on NVIDIA H100 80GB HBM3 (CUDA events, L2 flushed, 3 rotating input sets)"
    assert [line.split("|")[-2].strip() for line in lines[4:]] == ["ok", "UNDER 100 us",
                                                                  "RuntimeError: CUDA out of memory"]
    assert [t.large_enough for t in timings] == [True, False, False]


@pytest.mark.gpu
@pytest.mark.timing
@pytest.mark.parametrize("problem", sorted(SET))
def test_each_problem_takes_at_least_100_us_in_eager_on_the_gpu(problem):
    timing = eager_tool.time_eager(PROBLEMS / f"{problem}.py")
    assert timing.error is None, timing.error
    assert timing.median_us >= eager_tool.MIN_EAGER_US, timing


def test_the_run_folders_come_back_as_one_archive_without_builds_or_reports(tmp_path):
    runs = tmp_path / "runs"
    for problem in ("L1_01_rms_norm", "L2_03_causal_attention_fp16"):
        (runs / problem / "v0" / "build" / "torch_extensions").mkdir(parents=True)
        (runs / problem / "v0" / "build" / "torch_extensions" / "lib.so").write_bytes(b"\0" * 64)
        (runs / problem / "v0" / "profile.ncu-rep").write_bytes(b"\0" * 64)
        (runs / problem / "v0" / "evaluation.json").write_text("{}")
        (runs / problem / "run.json").write_text("{}")
    loop_tool.archive_runs(runs, ["L1_01_rms_norm", "L1_02_log_softmax_wide"], tmp_path / "out" / "runs.tar.gz")
    with tarfile.open(tmp_path / "out" / "runs.tar.gz") as bundle:
        names = sorted(member.name for member in bundle.getmembers() if member.isfile())
    assert names == ["L1_01_rms_norm/run.json", "L1_01_rms_norm/v0/evaluation.json"]  # only the problems named


# --- the Finish step over the set ------------------------------------------------------------------------


class FakeFinish(FakeCommands):
    """benchmark.py writes RUN/benchmark.json naming the solution it timed; final_report.py exits as told."""

    def __init__(self, seconds: float, report_exit: int = 0):
        super().__init__(seconds)
        self.report_exit = report_exit

    def __call__(self, command: list[str], log: Path) -> int:
        self.commands.append(command)
        verb = Path(command[1]).stem
        if verb == "benchmark":
            out = Path(command[command.index("--output-dir") + 1])
            (out / "benchmark.json").write_text(json.dumps({"solution": {"path": command[2]}}))
            self.now += self.seconds
            return 0
        return self.report_exit if verb == "final_report" else 0


def test_finish_benchmarks_each_run_s_best_version_against_v0_once_then_reports(tmp_path, capsys):
    runs = tmp_path / "runs"
    for name in ("L1_04_smooth_l1_loss", "L2_05_residual_add_layer_norm", "L2_01_linear_gelu_scale"):
        shutil.copytree(DEMO / "runs" / name, runs / name)
        (runs / name / "benchmark.json").unlink()  # unfinished: the Finish step's record not made yet
    commands = FakeFinish(seconds=100.0)
    only = "L1_04_smooth_l1_loss,L2_01_linear_gelu_scale,L2_05_residual_add_layer_norm"
    assert drive(tmp_path, commands, "--finish", "--only", only, "--deadline", "250") == 0
    benchmarks = [command for command in commands.commands if Path(command[1]).stem == "benchmark"]
    # best v1 (1.040x [1.039, 1.041] vs v0), then best v2; a third would end past 250 s (200 s + 100 s)
    assert [command[2:] for command in benchmarks] == [
        [str(runs / "L1_04_smooth_l1_loss" / "v1" / "v1.py"), "--ref", str(runs / "L1_04_smooth_l1_loss" / "ref.py"),
         "--output-dir", str(runs / "L1_04_smooth_l1_loss"), "--against",
         str(runs / "L1_04_smooth_l1_loss" / "v0" / "v0.py")],
        [str(runs / "L2_01_linear_gelu_scale" / "v2" / "v2.py"), "--ref",
         str(runs / "L2_01_linear_gelu_scale" / "ref.py"), "--output-dir", str(runs / "L2_01_linear_gelu_scale"),
         "--against", str(runs / "L2_01_linear_gelu_scale" / "v0" / "v0.py")]]
    steps = json.loads((tmp_path / "out" / "steps.json").read_text())
    assert [(s["problem"][:5], s["action"], s["version"]) for s in steps] == [
        ("L1_04", "final_benchmark", "v1"), ("L1_04", "final_report", "v1"),
        ("L2_01", "final_benchmark", "v2"), ("L2_01", "final_report", "v2"),
        ("L2_05", "skipped_deadline", "v0")]
    printed = capsys.readouterr().out
    assert (f"bash tools/demo_upkeep/kernelbench_loop.sh {tmp_path / 'out'} --finish "
            "--only L2_05_residual_add_layer_norm") in printed
    assert any(line.startswith("| L1_04_smooth_l1_loss ") and "| final (v1) " in line for line in printed.splitlines())
    # resumed: the finished runs get their report only; the best v0 is benchmarked without --against
    assert drive(tmp_path, commands, "--finish", "--only", only) == 0
    assert [command[2:] for command in commands.commands[-5:] if Path(command[1]).stem == "benchmark"] == [
        [str(runs / "L2_05_residual_add_layer_norm" / "v0" / "v0.py"), "--ref",
         str(runs / "L2_05_residual_add_layer_norm" / "ref.py"), "--output-dir",
         str(runs / "L2_05_residual_add_layer_norm")]]
    steps = json.loads((tmp_path / "out" / "steps.json").read_text())
    assert [s["action"] for s in steps] == ["already_finished", "final_report", "already_finished", "final_report",
                                          "final_benchmark", "final_report"]
    assert drive(tmp_path, FakeFinish(1.0, report_exit=2), "--finish", "--only", "L1_04_smooth_l1_loss") == 1
