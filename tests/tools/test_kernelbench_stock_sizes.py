"""tools/kernelbench_stock_sizes.py on a CPU: the folders it prepares, its summary, and the rows at small sizes.

The GPU run itself is tools/kernelbench_stock_sizes.sh; here the identity ModelNew of a stock
problem passes the check at small sizes on the CPU, and the blame rows end as they must on the GPU:
the problem whose reference asks for 1 TiB with exit 4 (the host's allocator refuses it here), the
ModelNew that asks for it with exit 3.
"""

import json
import shutil

import pytest
from conftest import REPO_ROOT, load_tool

STOCK = REPO_ROOT / "reference" / "kernelbench_stock"
SCRIPTS = REPO_ROOT / "skills" / "kernel-opt-skill" / "scripts"


@pytest.fixture(scope="module")
def tool():
    return load_tool("kernelbench_stock_sizes")


def test_prepare_copies_the_problems_and_writes_identity_solutions_and_the_blame_rows(tool, tmp_path):
    names = tool.prepare(STOCK, tmp_path)
    assert names == list(tool.PROBLEMS) and len(names) == 6
    for name in names:
        problem = (tmp_path / "problems" / f"{name}.py").read_text()
        assert problem == (STOCK / "level1" / f"{name}.py").read_text()  # byte for byte
        solution = (tmp_path / "solutions" / f"{name}.py").read_text()
        assert solution == problem + tool.IDENTITY and "class ModelNew(Model):" in solution
    assert "batch_size = 4096\ndim = 393216" in (tmp_path / "problems" / "23_Softmax.py").read_text()  # stock size
    for row in tool.BLAME_ROWS:
        assert {path.name for path in (tmp_path / "blame" / row).iterdir()} == {"problem.py", "solution.py"}
    assert "scratch_bytes" in (tmp_path / "blame" / "solution_allocates_too_much" / "solution.py").read_text()


def test_prepare_reads_a_kernelbench_checkout_and_refuses_a_folder_without_the_problems(tool, tmp_path):
    checkout = tmp_path / "KernelBench"
    shutil.copytree(STOCK / "level1", checkout / "KernelBench" / "level1")
    assert tool.level1_folder(checkout) == checkout / "KernelBench" / "level1"
    assert tool.main(["prepare", str(checkout), str(tmp_path / "out")]) == 0
    (checkout / "KernelBench" / "level1" / "89_cumsum.py").unlink()
    assert tool.main(["prepare", str(checkout), str(tmp_path / "again")]) == 2


def test_prepare_with_levels_takes_every_problem_of_each_level_in_kernelbench_s_order(tool, tmp_path):
    checkout = tmp_path / "KernelBench"
    for level, stems in ((1, ("10_Matmul", "2_Relu", "1_Square")), (2, ("1_Conv_ReLU",))):
        folder = checkout / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        for stem in stems:
            (folder / f"{stem}.py").write_text(f"# {stem}\n")
    out = tmp_path / "out"
    assert tool.prepare(checkout, out, levels=[1, 2]) == ["L1_1_Square", "L1_2_Relu", "L1_10_Matmul", "L2_1_Conv_ReLU"]
    assert (out / "problems.txt").read_text().split() == ["L1_1_Square", "L1_2_Relu", "L1_10_Matmul", "L2_1_Conv_ReLU"]
    assert (out / "solutions" / "L2_1_Conv_ReLU.py").read_text() == "# 1_Conv_ReLU\n" + tool.IDENTITY
    assert not (out / "blame").exists()  # the blame rows belong to the stock-size run
    assert tool.main(["prepare", str(checkout), str(tmp_path / "bad"), "--levels", "one"]) == 2
    assert tool.main(["prepare", str(checkout), str(tmp_path / "three"), "--levels", "3"]) == 2


def write_pair(out, name, verdict="correct", correctness=None, benchmark=None):
    folder = out / "eval" / "pairs" / name
    folder.mkdir(parents=True)
    (folder / "entry.json").write_text(json.dumps({"name": name, "verdict": verdict, "timed": verdict == "correct",
                                                   "wall_s": 31.5, "message": None}))
    (folder / "correctness.json").write_text(json.dumps(correctness or {"verdict": "pass", "memory": {
        "steps": [{"step": "truth", "peak_bytes": 58_000_000_000, "dims": {}, "seed": 0}], "plans": []}}))
    (folder / "benchmark.json").write_text(json.dumps(benchmark or {"exit_code": 0, "phases_s": {"timing": 3.0},
        "memory": {"steps": [{"step": "input pool", "peak_bytes": 84_000_000_000, "dims": {}, "seed": 1}],
                   "plans": ["the timed calls rotated ... computed after the timed calls"]}}))


def test_the_summary_passes_only_when_every_problem_is_correct_and_timed(tool, tmp_path):
    for name in tool.PROBLEMS:
        write_pair(tmp_path, name)
    assert tool.summary(tmp_path) == 0
    row = json.loads((tmp_path / "summary.json").read_text())["problems"][0]
    assert (row["correctness_exit"], row["benchmark_exit"], row["peak_gb"], row["peak_step"]) == (0, 0, 84.0,
                                                                                                  "input pool")
    assert row["plans"] == ["the timed calls rotated ... computed after the timed calls"]
    assert "| 23_Softmax | correct | 0 | 0 | 31.5 | 84.0 (input pool) |" in (tmp_path / "summary.md").read_text()
    shutil.rmtree(tmp_path / "eval" / "pairs" / "89_cumsum")
    write_pair(tmp_path, "89_cumsum", "broken", correctness={"verdict": "environment_error", "error": {
        "exit_code": 4, "kind": "harness_out_of_memory", "message": "the GPU ran out of memory in the harness"}})
    assert tool.summary(tmp_path) == 1
    recorded = json.loads((tmp_path / "summary.json").read_text())
    broken = recorded["problems"][2]
    assert (broken["name"], broken["correctness_exit"], broken["ok"]) == ("89_cumsum", 4, False)
    assert recorded["totals"] == {"problems": 6, "ran": 6, "correct_and_timed": 5, "harness_or_environment_errors": 1,
                                  "blamed_on_the_solution": 0, "out_of_memory": 0, "median_wall_s": 31.5,
                                  "slowest": ["23_Softmax", 31.5]}
    assert (tmp_path / "summary.md").read_text().startswith("problems: 6, ran: 6, correct and timed: 5, ")


def run_check(tmp_path, solution, problem, *dims):
    from kernel_opt.commands.correctness_check import main

    return main([str(solution), "--ref", str(problem), "--output-dir", str(tmp_path), "--device", "cpu",
                 "--seeds", "1", *dims])


@pytest.mark.slow
def test_the_identity_modelnew_of_a_stock_problem_passes_at_small_sizes_on_the_cpu(tool, tmp_path):
    tool.prepare(STOCK, tmp_path)
    code = run_check(tmp_path / "check", tmp_path / "solutions" / "23_Softmax.py", tmp_path / "problems" /
                     "23_Softmax.py", "--batch_size=8", "--dim=96")
    record = json.loads((tmp_path / "check" / "correctness.json").read_text())
    assert code == 0 and record["verdict"] == "pass" and "memory" not in record  # a CPU run measures no GPU memory


@pytest.mark.slow
def test_the_blame_rows_end_with_exit_4_for_the_harness_and_exit_3_for_the_solution(tool, tmp_path):
    tool.prepare(STOCK, tmp_path)
    for row, (_, _, expected_exit, expected_kind) in tool.BLAME_ROWS.items():
        folder = tmp_path / "blame" / row
        assert run_check(folder / "out", folder / "solution.py", folder / "problem.py") == expected_exit
        result = tool.blame_row(tmp_path, row)
        assert result["ok"] and (result["exit"], result["kind"]) == (expected_exit, expected_kind), result
    harness = tool.blame_row(tmp_path, "reference_allocates_too_much")["message"]
    assert harness.startswith("the host ran out of memory in the harness while creating inputs (batch_size=16, "
                              "dim=1024, seed 0), outside the solution's call: it asked for 1024.00 GiB")
    solution = tool.blame_row(tmp_path, "solution_allocates_too_much")["message"]
    assert solution.startswith("the solution's call ran out of memory: it asked for 1024.00 GiB")
