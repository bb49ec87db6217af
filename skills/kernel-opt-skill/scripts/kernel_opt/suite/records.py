"""The evaluation's records: one entry per problem (OUT/pairs/NAME/entry.json), and OUT/eval.json with the summary.

The summary is computed from the entries here, once (`summarize`); eval.md and eval.png only
format it. Rates count every problem of PROBLEMS_DIR, a missing or broken solution included, as
KernelBench's fast_p does: fast_p is the share of all problems whose solution is correct and
more than p times faster than the baseline (strictly, as KernelBench's `speed_up > p`). The
geometric mean speedup is over the correct, timed problems. Each is given against eager PyTorch
and against the best torch.compile mode, and again without precision downgrades and library-only
solutions, so a figure that rests on them shows apart. Under --kernelbench-tolerances a solution
that KernelBench's own rule would pass but this check fails (an output only a tolerance that
cannot judge it lets through, a result off by more than its precision explains, a weight it
ignores) counts as incorrect, and is counted and listed apart.

Each entry names the GPU its worker held (`gpu`: nvidia-smi's index, the model, the board's UUID,
the host). Where the entries were made on more than one GPU model, speedups from one model are
not averaged with another's without saying so: `by_gpu_model` gives the same figures per model,
and eval.md says the overall ones mix them. `execution` says how the run was spread (one process,
one worker per GPU, or Ray tasks) and its wall time against the sum of the pairs' times.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from kernel_opt.core.records import check_schema, field_values

EVAL_FILE = "eval.json"
EVAL_SCHEMA = "kernel_opt.eval/1"
ENTRY_FILE = "entry.json"
ENTRY_SCHEMA = "kernel_opt.eval_entry/1"
FAST_P_THRESHOLDS = (1.0, 1.5, 2.0)  # KernelBench's fast_p at these speedups: fast_1, fast_1.5, fast_2
BASELINES = ("eager", "compile")  # eager PyTorch; the best torch.compile mode timed
# An entry's verdict: correct; incorrect (wrong results, before or after timing); invalid (faster than
# physics); solution_error (crash, hang, compile error); usage_error (a file the tools refuse);
# environment_error (this machine cannot run it); missing (nothing answers the problem); internal_error (a
# bug in these tools, reported rather than stopping the suite).
FAILED_VERDICTS = ("incorrect", "invalid", "solution_error", "usage_error", "missing", "internal_error")


@dataclass
class EvalEntry:
    """One problem: what answered it, the verdict, and the figures the benchmark measured."""

    name: str
    problem: str
    verdict: str
    solution: str | None = None
    source: str | None = None  # "file" or "run folder"
    run_version: str | None = None
    backend: str | None = None
    error_kind: str | None = None
    message: str | None = None  # why it is not correct, in one line
    solution_us: float | None = None
    eager_us: float | None = None
    compile_us: float | None = None  # the best torch.compile mode
    compile_mode: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    percent_of_ceiling: float | None = None
    bottleneck: str | None = None
    precision_downgrade: bool = False
    # Under --kernelbench-tolerances: incorrect here, while KernelBench's rule (atol = rtol = 1e-2, its seed-42
    # weights) would pass every output; counted as incorrect and listed apart (check/integrity/verdict.py).
    kernelbench_would_pass: bool = False
    library_only: bool | None = None  # the source defines no kernel of its own (Backend.defines_own_kernels)
    timed: bool = False
    wall_s: float = 0.0
    key: str = ""  # sha256 of both files, the options and `device`: a result is reused only for the same key
    notes: list[str] = field(default_factory=list)
    # The machine the key holds (device type, GPU model, driver, torch, triton), and the GPU this pair's worker
    # held: {"index": nvidia-smi's, "name", "uuid", "host"}; None where it held none (--device cpu, one process).
    device: dict[str, Any] | None = None
    gpu: dict[str, Any] | None = None
    schema: str = ENTRY_SCHEMA

    @property
    def gpu_model(self) -> str | None:
        return (self.gpu or {}).get("name")

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"

    def speedup(self, baseline: str) -> float | None:
        return self.speedup_vs_eager if baseline == "eager" else self.speedup_vs_compile

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = ENTRY_FILE) -> EvalEntry:
        check_schema(payload, ENTRY_SCHEMA, what)
        return cls(**field_values(cls, payload, schema=ENTRY_SCHEMA))


@dataclass
class EvalSummary:
    problems: int
    correct: int
    timed: int
    precision_downgrades: int
    library_only: int
    correct_rate: float
    # baseline -> {"1.0": share, ...}; None where nothing was timed against it (no GPU, or not asked for)
    fast_p: dict[str, dict[str, float] | None]
    fast_p_own_kernels: dict[str, dict[str, float] | None]  # precision downgrades and library-only not counted
    geomean_speedup: dict[str, float | None]  # over correct, timed problems
    geomean_count: dict[str, int]
    kernelbench_would_pass: int = 0  # incorrect here, correct by KernelBench's rule (EvalEntry.kernelbench_would_pass)


def summarize(entries: list[EvalEntry]) -> EvalSummary:
    """The suite's figures from its entries (module docstring)."""
    total = len(entries)
    correct = [entry for entry in entries if entry.correct]
    clean = [entry for entry in correct if not entry.precision_downgrade and entry.library_only is not True]
    timed = [entry for entry in correct if entry.timed]
    fast_p, fast_p_own, geomean, counts = {}, {}, {}, {}
    for baseline in BASELINES:
        speedups = [entry.speedup(baseline) for entry in timed if entry.speedup(baseline)]
        # A baseline no entry was timed against (eval --baseline eager: no torch.compile) has no fast_p, not 0 %.
        fast_p[baseline] = _fast_p(correct, baseline, total) if speedups else None
        fast_p_own[baseline] = _fast_p(clean, baseline, total) if speedups else None
        geomean[baseline] = math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None
        counts[baseline] = len(speedups)
    return EvalSummary(
        problems=total, correct=len(correct), timed=len(timed),
        precision_downgrades=sum(entry.precision_downgrade for entry in entries),
        library_only=sum(entry.library_only is True for entry in correct),
        correct_rate=len(correct) / total if total else 0.0,
        fast_p=fast_p, fast_p_own_kernels=fast_p_own, geomean_speedup=geomean, geomean_count=counts,
        kernelbench_would_pass=sum(entry.kernelbench_would_pass and not entry.correct for entry in entries),
    )


def _fast_p(entries: list[EvalEntry], baseline: str, total: int) -> dict[str, float]:
    return {f"{p:g}": sum(1 for entry in entries if (entry.speedup(baseline) or 0.0) > p) / total
            for p in FAST_P_THRESHOLDS}


def summarize_by_gpu_model(entries: list[EvalEntry]) -> dict[str, EvalSummary]:
    """The summary per GPU model, where the entries were made on more than one; else empty.

    An entry without a GPU (a missing solution, a pair that never started) belongs to no model: each
    model's rates count the pairs that ran on it.
    """
    models = sorted({entry.gpu_model for entry in entries if entry.gpu_model})
    if len(models) < 2:
        return {}
    return {model: summarize([entry for entry in entries if entry.gpu_model == model]) for model in models}


@dataclass
class EvalExecution:
    """How the run was spread, and what that bought: its wall time against the sum of its pairs' times."""

    mode: str  # "one process", "local workers" (eval.py --gpus) or "ray" (eval.py --ray)
    workers: int  # processes that evaluated pairs at once (GPUs, or Ray tasks in flight)
    gpus: list[dict[str, Any]] = field(default_factory=list)  # each GPU used: index, name, uuid, host, pairs, pair_s
    wall_s: float = 0.0  # the whole run, resumed pairs included (they cost nothing)
    pairs_run: int = 0
    pairs_reused: int = 0
    pair_s: float = 0.0  # the sum of the pairs' own times (EvalEntry.wall_s) over the pairs run now

    @property
    def parallel_speedup(self) -> float | None:
        """How many times faster than running the same pairs one after another; None before anything ran."""
        return self.pair_s / self.wall_s if self.pairs_run and self.wall_s > 0 else None

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> EvalExecution:
        return cls(**field_values(cls, payload))


@dataclass
class EvalReport:
    """OUT/eval.json: how the suite ran, every entry, and the summary computed from them."""

    problems_dir: str
    solutions_dir: str
    command: str
    created_at: str
    device: dict[str, Any]
    options: dict[str, Any]  # tolerances, seeds, baselines, compile modes, timeout
    entries: list[EvalEntry]
    summary: EvalSummary
    notes: list[str] = field(default_factory=list)
    by_gpu_model: dict[str, EvalSummary] = field(default_factory=dict)  # summarize_by_gpu_model
    execution: EvalExecution | None = None
    schema: str = EVAL_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "entries": [entry.to_dict() for entry in self.entries]}

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = EVAL_FILE) -> EvalReport:
        check_schema(payload, EVAL_SCHEMA, what)
        entries = [EvalEntry.from_dict(entry, what) for entry in payload.get("entries") or []]
        summary = EvalSummary(**field_values(EvalSummary, payload.get("summary") or {}))
        by_model = {model: EvalSummary(**field_values(EvalSummary, figures))
                    for model, figures in (payload.get("by_gpu_model") or {}).items()}
        execution = EvalExecution.from_dict(payload["execution"]) if payload.get("execution") else None
        return cls(**field_values(cls, payload, entries=entries, summary=summary, by_gpu_model=by_model,
                                  execution=execution, schema=EVAL_SCHEMA))
