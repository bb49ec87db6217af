"""The rounding probe: does the output follow the low bits of each float32 input as the reference's does?

Why the error norm is not enough. The reference-error rule (check/tolerance.py) measures how far
an output lies from its float64 truth. Where an output is dominated by a mean, as a product of
non-negative matrices is (KernelBench's matmul problems draw torch.rand inputs), the error of
rounding the inputs to TF32 averages out: cuBLAS in TF32 read 1.27e-5 at K = 1024 and 2.8e-5 at
K = 4096 on an H100 (2026-11-25), inputs rounded to nearest TF32 gave 5.5e-6 at K = 4096 on the
CPU, all at or under the float32 floor of 1e-5. Within the norm a TF32 kernel looks honest; in
the bits it does not.

The probe. For one float32 input x at a time, and each rounding r of the list below, the
reference and the solution run on x and on r(x) (every other input the same):

    d_ref = ||ref(r(x)) - ref(x)|| / ||ref(x)||     how much the bits r removes matter
    d_sol = ||sol(r(x)) - sol(x)|| / ||ref(x)||     how much the solution notices them

A kernel that reads x in full moves with the reference: its own rounding errors on x and on r(x)
are unrelated, so they add to the change rather than cancel it (d_sol >= about d_ref; a kernel
that is the reference gives d_sol = d_ref exactly). A kernel that rounds x itself, in the same
way, computes the same thing from both: d_sol is zero when it is deterministic, and at the level
of its accumulation-order noise when it is not. The verdict per probe is `ignored` when
d_sol < d_ref / IGNORED_RATIO, `followed` otherwise, and `inconclusive` when d_ref is below
MIN_REFERENCE_CHANGE (the output barely depends on those bits: a scalar mean of millions of
elements, a max, a comparison). An output that ignores an input's bits in a precision ref.py
does not allow is a precision downgrade: it fails the default rule and is flagged under
--kernelbench-tolerances. The probe runs where every case passed, and where the cases failed only
within KernelBench's 1e-2 (check/tolerance.py): there it alone says whether the error is lower-precision
arithmetic or a wrong result.

Which roundings: to TF32's 10 explicit mantissa bits (also what a float16 conversion keeps) and
to bfloat16's 7, each to nearest even and toward zero (tensor-core conversions do one or the
other; a probe in the other mode moves about half the elements of x to a different value, so
only the kernel's own mode shows it). With ref.py's `allow_tf32 = True` the TF32 probes are not
run. Explicit tolerances (ref.py's atol/rtol, --atol/--rtol) say what precision is allowed, so
the probe does not run under them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from kernel_opt.check.integrity.protocol import CheckSession, IntegrityCheck, RunFacts, When
from kernel_opt.core.render import markdown_table, render

# d_sol must reach this fraction of d_ref. An honest kernel gives about 1 or more (see above);
# a downgraded deterministic one 0. Non-deterministic accumulation (split-K atomics) adds noise
# of the order of float32 rounding, about 1e-7 relative, against d_ref >= MIN_REFERENCE_CHANGE.
IGNORED_RATIO = 4.0
# The reference's output must move by at least 8 units of float32 rounding (2^-24), normwise, for
# the probe to mean anything. Below that the bits removed barely reach the output (a change under
# one unit in most elements), and whether an element's rounding flips is then chance, for the
# reference and an honest kernel alike.
MIN_REFERENCE_CHANGE = 8 * 2.0**-24
# At most this many float32 inputs are probed, the largest first (each costs four calls of the
# reference and of the solution).
MAX_INPUTS = 4
# Under the Triton interpreter every program runs in Python and the probe calls the solution up to
# nine times per input, so it runs on the smallest checked shape whose largest input still has this
# many elements (enough for the normwise changes above), not on the command line's shape.
INTERPRETER_PROBE_ELEMENTS = 4096

ProbeVerdict = Literal["followed", "ignored", "inconclusive"]


@dataclass(frozen=True)
class Rounding:
    """Rounding a float32 mantissa to `bits` explicit bits, to nearest even or toward zero."""

    name: str
    bits: int
    to_nearest: bool
    precision: str  # what keeps this many bits, for the message

    @property
    def tf32(self) -> bool:
        return self.bits == 10


ROUNDINGS = (
    Rounding("bf16, to nearest", 7, True, "bfloat16"),
    Rounding("bf16, toward zero", 7, False, "bfloat16"),
    Rounding("tf32, to nearest", 10, True, "TF32 or float16"),
    Rounding("tf32, toward zero", 10, False, "TF32 or float16"),
)


def judge_probe(reference_change: float, solution_change: float) -> ProbeVerdict:
    """One probe's verdict from the two relative changes (module docstring)."""
    if not reference_change >= MIN_REFERENCE_CHANGE:  # NaN too: nothing to conclude
        return "inconclusive"
    return "ignored" if solution_change * IGNORED_RATIO < reference_change else "followed"


@dataclass
class ProbeResult:
    """One input, one rounding, one output: the two changes and what they say."""

    input: str
    rounding: str
    output: str
    reference_change: float
    solution_change: float
    verdict: ProbeVerdict
    precision: str

    @property
    def ratio(self) -> float | None:
        return self.solution_change / self.reference_change if self.reference_change > 0 else None


@dataclass
class RoundingProbe:
    """The probe of one correctness run: what was probed, what each probe gave, and the downgrades found."""

    ran: bool
    note: str | None = None  # why it did not run, or what it left out
    dims: dict[str, Any] | None = None
    seed: int | None = None
    probes: list[ProbeResult] = field(default_factory=list)

    @property
    def ignored(self) -> list[ProbeResult]:
        return [probe for probe in self.probes if probe.verdict == "ignored"]

    @property
    def downgraded_outputs(self) -> list[str]:
        return list(dict.fromkeys(probe.output for probe in self.ignored))

    def finding(self) -> str | None:
        """The first downgrade in words, or None."""
        if not self.ignored:
            return None
        probe = self.ignored[0]
        return (f"output {probe.output!r} ignores the low bits of input {probe.input!r}: rounding {probe.input!r} "
                f"to {probe.precision} ({probe.rounding}) moved the reference's output by {probe.reference_change:.3g} "
                f"and the solution's by {probe.solution_change:.3g}, so the solution computes with {probe.input!r} "
                f"already rounded to {probe.precision}")

    def failure_sentences(self) -> list[str]:
        """Why the probe fails the check, with what to do about it; [] when it found no downgrade."""
        finding = self.finding()
        if finding is None:
            return []
        return [f"{finding} (a precision downgrade; compute in float32, e.g. tl.dot(..., input_precision=\"ieee\") "
                "and no torch.backends.cuda.matmul.allow_tf32, or say in ref.py which precision is allowed: "
                "allow_tf32 = True, or atol/rtol)"]

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["downgraded_outputs"] = self.downgraded_outputs
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> RoundingProbe:
        probes = [ProbeResult(**{k: v for k, v in probe.items() if k in ProbeResult.__dataclass_fields__})
                  for probe in payload.get("probes") or []]
        return cls(ran=bool(payload.get("ran")), note=payload.get("note"), dims=payload.get("dims"),
                   seed=payload.get("seed"), probes=probes)


def round_mantissa(values, rounding: Rounding):
    """A float32 tensor with its mantissa rounded to `rounding.bits` explicit bits; infinities and NaNs kept."""
    import torch

    dropped = 23 - rounding.bits
    bits = values.contiguous().view(torch.int32)
    if rounding.to_nearest:
        half_even = (1 << (dropped - 1)) - 1 + ((bits >> dropped) & 1)
        bits = bits + half_even
    rounded = (bits & ~((1 << dropped) - 1)).view(torch.float32)
    return torch.where(torch.isfinite(values) & torch.isfinite(rounded), rounded, values)


def roundings_for(allow_tf32: bool) -> tuple[Rounding, ...]:
    return tuple(rounding for rounding in ROUNDINGS if not (allow_tf32 and rounding.tf32))


def relative_change(after, before, scale: float) -> float:
    """||after - before|| / scale over the elements finite in both (0 when there are none); in float64 chunks
    (check/chunked.py), not a float64 copy of each whole output."""
    from kernel_opt.check.chunked import difference_norm

    norm = difference_norm(after, before) if scale > 0 else None
    return 0.0 if norm is None else norm / scale


# --- the check ----------------------------------------------------------------------------------


class RoundingProbeCheck(IntegrityCheck):
    """The probe as an integrity check; correctness.json "rounding_probe"."""

    name: ClassVar[str] = "rounding_probe"
    when: ClassVar[When] = When.AFTER_CASES
    record_key: ClassVar[str] = "rounding_probe"
    title: ClassVar[str] = "Rounding probe"

    @classmethod
    def applies(cls, facts: RunFacts) -> bool:
        # Where every case passed, or where the failures are all within KernelBench's 1e-2 (only the probe can say
        # whether that is lower-precision arithmetic or a wrong result); not under explicit tolerances (they say
        # which precision is allowed), and not under compute-sanitizer (a question of values).
        return ((facts.all_passed or facts.suspected_downgrade) and not facts.explicit_tolerances
                and not facts.sanitized)

    def run(self, session: CheckSession) -> RoundingProbe:
        dims, note = probed_case(session)
        probe = probe_rounding(session, dims, max(session.seeds) + 3)
        if note is not None:
            probe.note = "; ".join(filter(None, [note, probe.note]))
        return probe

    @classmethod
    def read(cls, payload: dict[str, Any]) -> RoundingProbe:
        return RoundingProbe.from_dict(payload)

    @classmethod
    def failures(cls, result: RoundingProbe, report: Any) -> list[str]:
        """A downgrade fails the default rule; under --kernelbench-tolerances it is flagged, not failed."""
        return [] if report.kernelbench_tolerances else result.failure_sentences()

    @classmethod
    def passed(cls, result: RoundingProbe, report: Any) -> bool:
        return report.kernelbench_tolerances or not report.rounding_downgrades

    @classmethod
    def headline(cls, result: RoundingProbe, report: Any, total: int, mode: str) -> str | None:
        if not report.rounding_downgrades:
            return None
        return (f"FAIL{mode}: all {total} cases are within the tolerance, but the rounding probe found output "
                f"{', '.join(map(repr, report.rounding_downgrades))} computed from inputs in a lower precision.")

    @classmethod
    def section(cls, result: RoundingProbe, report: Any) -> str:
        return render("rounding_probe.md.j2", rounding=result, rounding_table=rounding_table(result),
                      rounding_rule={"ratio": f"{IGNORED_RATIO:g}", "units": f"{MIN_REFERENCE_CHANGE / 2.0**-24:g}"})


def rounding_table(probe: RoundingProbe) -> str:
    """The probe's rows: each input rounded, and how far reference and solution moved."""
    rows = [[f"`{row.input}`", row.rounding, f"`{row.output}`", f"{row.reference_change:.3g}",
             f"{row.solution_change:.3g}", "—" if row.ratio is None else f"{row.ratio:.3g}", row.verdict]
            for row in probe.probes]
    return markdown_table(rows, ["input", "rounded to", "output", "reference moved", "solution moved",
                                 "solution / reference", "verdict"])


# --- the correctness child's side ----------------------------------------------------------------


def probed_case(session: CheckSession) -> tuple[dict[str, Any], str | None]:
    """The shape the probe runs at, and a sentence when it is not the command line's (under the interpreter)."""
    first = session.cases[0]
    if session.device != "cpu":
        return first, None
    sizes = {case: elements for case, elements in session.largest_inputs.items()
             if elements >= INTERPRETER_PROBE_ELEMENTS}
    if not sizes or min(sizes.values()) >= session.largest_inputs.get(0, 0):
        return first, None
    chosen = session.cases[min(sizes, key=sizes.__getitem__)]
    shape = ", ".join(f"{key}={value}" for key, value in chosen.items())
    return chosen, (f"probed at {shape}, the smallest checked shape with at least {INTERPRETER_PROBE_ELEMENTS} "
                    "elements in an input: under the Triton interpreter each of the probe's calls runs every "
                    "program in Python")


def probe_rounding(runner: CheckSession, dims: dict[str, Any], seed: int) -> RoundingProbe:
    """Run the probe on fresh inputs of one shape (runner is the correctness child's session); return its record.

    Every call gets private copies of the inputs and poisoned outputs, as a case does; the
    solution's faults raise as in any case.
    """
    import torch

    from kernel_opt.check.chunked import finite_norm
    from kernel_opt.check.compare import poison_, run_reference
    from kernel_opt.run.events import PhaseEvent
    from kernel_opt.solution.inputs import cloned_arguments
    from kernel_opt.solution.loaded import call_solution

    runner.events.emit(PhaseEvent("rounding_probe", dims=dims, seed=seed))
    instance = runner.instance(dims, seed)
    values, outputs = instance.values, instance.outputs
    probe = RoundingProbe(ran=True, dims=instance.dims, seed=seed)
    compared = [name for name in outputs if _is_float32(values[name])]
    taken_once = runner.solution.launcher.arguments_taken_once(instance.dims, runner.device)
    candidates = sorted((name for name, value in values.items()
                         if name not in outputs and _is_float32(value) and value.numel() > 1),
                        key=lambda name: -values[name].numel())
    inputs = [name for name in candidates if name not in taken_once]
    notes = [f"not probed, taken once when the solution is built: {', '.join(sorted(taken_once & set(candidates)))}"
             ] if taken_once & set(candidates) else []
    if not compared or not inputs:
        missing = "output" if not compared else "input the solution reads on each call"
        return RoundingProbe(ran=False, note="; ".join([f"not run: no float32 {missing}", *notes]))
    if len(inputs) > MAX_INPUTS:
        notes.append(f"the {MAX_INPUTS} largest float32 inputs probed; not probed: {', '.join(inputs[MAX_INPUTS:])}")
    probe.note = "; ".join(notes) or None

    def reference_outputs(arguments: dict[str, Any]) -> dict[str, Any]:
        kwargs = cloned_arguments(instance.dims, arguments)
        run_reference(runner.reference.reference, kwargs, outputs)
        return {name: kwargs[name] for name in compared}

    def solution_outputs(arguments: dict[str, Any]) -> dict[str, Any]:
        copies = {name: value.clone() if isinstance(value, torch.Tensor) else value
                  for name, value in arguments.items()}
        for name in outputs:
            poison_(copies[name])
        # each call is progress: --timeout bounds one call here as in a case, not the probe's several together
        runner.events.emit(PhaseEvent("rounding_probe", dims=dims, seed=seed))
        call_solution(runner.solution, copies, instance.dims, outputs)
        runner.solution_ran("the solution's call in the rounding probe")
        runner.solution.deliver_outputs()
        return {name: copies[name] for name in compared}

    reference_before, solution_before = reference_outputs(values), solution_outputs(values)
    scales = {name: finite_norm(reference_before[name]) for name in compared}
    for name in inputs[:MAX_INPUTS]:
        for rounding in roundings_for(runner.policy.allow_tf32):
            rounded = round_mantissa(values[name], rounding)
            if torch.equal(rounded, values[name]):
                continue  # already that precision: nothing to remove
            arguments = {**values, name: rounded}
            reference_after, solution_after = reference_outputs(arguments), solution_outputs(arguments)
            for output in compared:
                reference_change = relative_change(reference_after[output], reference_before[output], scales[output])
                solution_change = relative_change(solution_after[output], solution_before[output], scales[output])
                probe.probes.append(ProbeResult(name, rounding.name, output, reference_change, solution_change,
                                                judge_probe(reference_change, solution_change), rounding.precision))
            del reference_after, solution_after, rounded, arguments  # not alive while the next rounding runs
    return probe


def _is_float32(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.dtype == torch.float32
