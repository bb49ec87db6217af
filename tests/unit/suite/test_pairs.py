"""Problems paired with solutions or run folders (suite/pairs.py), on tests/fixtures/kernelbench."""

from __future__ import annotations

import shutil

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.core.errors import UsageError
from kernel_opt.suite.pairs import find_pairs

FIXTURES = FIXTURES_DIR / "kernelbench"
PROBLEMS, SOLUTIONS = FIXTURES / "problems", FIXTURES / "solutions"


# --- pairing ------------------------------------------------------------------------------------------


def test_pairs_are_made_by_file_name_and_the_rest_is_said(tmp_path):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(SOLUTIONS / "3_Sum_reduction.py", solutions)
    shutil.copy(SOLUTIONS / "2_Gemm_Multiply_ReLU.py", solutions)
    shutil.copy(FIXTURES / "contract" / "2_Gemm_Multiply_ReLU.py", solutions / "1_Square_matmul.py")
    (solutions / "1_Square_matmul.cu").write_text("// a second answer to the same problem\n")
    (solutions / "9_Other.py").write_text("class ModelNew: pass\n")
    (solutions / "README.md").write_text("not a solution\n")
    pairs, notes = find_pairs(PROBLEMS, solutions)
    assert [pair.name for pair in pairs] == ["1_Square_matmul", "2_Gemm_Multiply_ReLU", "3_Sum_reduction",
                                             "4_Conv2d_ReLU_BiasAdd"]
    assert pairs[0].solution is None and pairs[0].note.startswith("two solutions answer it (1_Square_matmul.cu, "
                                                                  "1_Square_matmul.py)")
    assert pairs[1].solution == solutions / "2_Gemm_Multiply_ReLU.py" and pairs[1].source == "file"
    assert pairs[3].solution is None and pairs[3].note.startswith("no 4_Conv2d_ReLU_BiasAdd.cu/.py")
    assert notes == [f"9_Other.py in {solutions} answers no problem of {PROBLEMS}: not evaluated"]
    with pytest.raises(UsageError, match="holds no problem file"):
        find_pairs(solutions, solutions)
    with pytest.raises(UsageError, match="problems folder not found"):
        find_pairs(tmp_path / "none", solutions)


def test_a_run_folder_answers_with_its_best_measured_version(tmp_path):
    from kernel_opt.core.files import write_json_atomic
    from kernel_opt.loop.workspace import create_run

    run = tmp_path / "solutions" / "3_Sum_reduction"
    create_run(run, SOLUTIONS / "3_Sum_reduction.py", PROBLEMS / "3_Sum_reduction.py", 2, "sum", "modelnew",
               {"batch_size": 4}, 90.0)
    pairs, _ = find_pairs(PROBLEMS, tmp_path / "solutions")
    assert pairs[2].solution is None and "has no measured version yet" in pairs[2].note
    write_json_atomic(run / "v0" / "correctness.json", {"verdict": "pass", "backend": "modelnew"})
    write_json_atomic(run / "v0" / "benchmark.json", {"verdict": "measured", "solution": {"median_us": 12.0}})
    write_json_atomic(run / "v0" / "ncu_summary.json", {"bottleneck": "memory_bound"})
    pairs, _ = find_pairs(PROBLEMS, tmp_path / "solutions")
    assert pairs[2].solution == run / "v0" / "v0.py"
    assert (pairs[2].source, pairs[2].run_version, pairs[2].bottleneck) == ("run folder", "v0", "memory_bound")
    assert pairs[2].run_dims == (("batch_size", 4),)  # said in the entry: the eval runs the problem's own sizes
