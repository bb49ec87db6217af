"""Re-drawn weights: a KernelBench Model's weights drawn again, so a solution that ignores one of them fails.

KernelBench builds its Model from seed 42, and so do the cases here, so that figures compare with
its own. But many weights start at a constant: nn.LayerNorm, GroupNorm and BatchNorm weights at
ones and their biases at zeros, a BatchNorm's running variance at ones, every bias a problem
builds with torch.zeros, every scale with torch.ones. A kernel that normalises and never applies
the weight and bias, or a GEMM epilogue that never adds a zero bias, gives the reference's output
for every input at those weights, and no comparison can see it.

So once every case has passed, the check runs one more call, on fresh inputs of the first shape,
with the Model's weights drawn again (`redraw`, from a generator of its own seed, so every run
draws the same values):

- a weight that holds one value c everywhere (a one-element parameter too) becomes c + s N(0, 1)
  with s = max(1, |c|): ones become 1 + noise, zeros become N(0, 1) noise, and the noise stays
  at the weight's own scale where c is large; a running variance, which must stay positive,
  becomes |c| + s |N(0, 1)|;
- any other weight: its own values in a random order: the same scale, sign and range, element by
  element, so whatever the layer needs of its values (positive, in [0, 1]) still holds.

What is re-drawn: every floating-point parameter, the running mean and variance of a
normalisation layer that tracks them (BatchNorm, InstanceNorm with track_running_stats), and any
other floating-point buffer that holds one value everywhere (it is in the state_dict, loaded with
every checkpoint, so a solution must read it). Integer buffers (num_batches_tracked) stay, and so
does a varied buffer that is no running statistic: that is fixed structure, a causal mask or an
index table, which an honest solution may build in and which re-drawing would turn into another
problem.

How the values reach each kind of solution, as its weights do in the cases:

- the reference (solution/kernelbench_problem.py) runs forward on the weights it is given by
  name, so it and its float64 truth see the re-drawn ones;
- a CUDA `solve` or Triton `run_kernel` receives them by name (`ln.weight` as `ln_weight`);
- a ModelNew (backends/modelnew/launcher.py) is built again as in the cases and its tensors take
  them (Launcher.use_weights): a tensor of the Model's name by name, as load_state_dict copies the
  seed-42 weights, or, where it keeps a weight under a name of its own, the one tensor of its own
  with the same number of elements and the same seed-42 values (Launcher.weight_holders).
  Where no tensor holds a weight, a constant one is re-drawn all the same (a ModelNew without
  a place for LayerNorm's weight can only have built the ones in), while a varied one keeps its
  seed-42 values, which already test it (it may be held in another layout, transposed say).
  Where several tensors of its own match and none by name, the weight is kept: which is which
  cannot be told.

Why an honest solution cannot fail it: the reference computes the Model's function of its weights,
so a solution that computes that function from the weights it is given follows them; a variance
stays positive, so the reference stays defined (where it raises on the re-drawn weights, the check
does not judge); and a weight is re-drawn for a ModelNew only where a tensor
of its own provably holds it, or where a constant is held nowhere.

A solution fails when an output differs from the reference's with the weights re-drawn. Each
re-drawn weight is then tried alone (at most MAX_ALONE), and the failure names the weight that
the output does not follow, the output and how far off it is.

Kept apart: a plain ref.py whose setup() gives an input that holds one value everywhere is not
re-drawn. Its setup() defines the problem's inputs, a constant one included: a mask of ones, an
additive bias of zeros that means "none". A kernel specialised to that value solves the problem as
posed, and only ref.py's author can say the value varies; the warning on that input says to draw
it at random in setup() if the kernel must read it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from kernel_opt.check.integrity.protocol import CheckSession, IntegrityCheck, RunFacts, When
from kernel_opt.check.records import OutputComparison, output_failure_text
from kernel_opt.core.render import markdown_table, render

# A constant c becomes c + max(NOISE_FLOOR, |c|) N(0, 1): ones become 1 + N(0, 1), zeros N(0, 1), and a large
# constant moves by its own size (1000 + N(0, 1) would hide within KernelBench's rtol = 1e-2).
NOISE_FLOOR = 1.0
# The generator's seed: the same re-drawn values on every run, for every solution of a problem.
REDRAW_SEED = 20_260_042
# Where the weights re-drawn together move an output off, each is tried alone; at most this many.
MAX_ALONE = 8
# Above this many elements a weight is re-drawn on its own device, in blocks: a whole permutation drawn on the host
# took 85 s of one check for KernelBench's 32768 x 32768 Linear (1.07e9 elements) on an H200 machine.
WHOLE_DRAW_ELEMENTS = 1 << 22
BLOCK_ELEMENTS = 1 << 16  # a large weight's order: its blocks shuffled, and one shuffle within every block
STATISTICS = ("running_mean", "running_var")
POSITIVE = ("running_var",)  # statistics a layer takes the square root of: re-drawn positive


@dataclass
class WeightDraw:
    """One weight of the Model (a state_dict entry): what it held at seed 42, whether and how it was re-drawn,
    and where the solution takes it from."""

    key: str  # the Model's state_dict key, "ln.weight"
    argument: str  # the name a solve/run_kernel receives it by, "ln_weight"
    kind: str  # "parameter", "statistic" (a normalisation layer's running mean or variance) or "buffer"
    owner: str  # the class of the module that holds it, "LayerNorm"
    at_seed: str  # "1 everywhere", "varied", "integer"
    redrawn: bool
    how: str  # how it was re-drawn ("1 + N(0, 1)", "N(0, 1)", ...), or why it was kept
    reaches: str  # where the solution takes it from


@dataclass
class AloneResult:
    """One re-drawn weight alone, and one output that did not follow it."""

    key: str
    output: OutputComparison

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "output": self.output.to_dict()}


@dataclass
class RedrawnWeights:
    """The check of one correctness run: every weight's draw, the outputs with all re-drawn, and each one alone."""

    ran: bool
    note: str | None = None  # why it did not run
    dims: dict[str, Any] | None = None
    seed: int | None = None
    weights: list[WeightDraw] = field(default_factory=list)
    outputs: list[OutputComparison] = field(default_factory=list)  # every re-drawn weight at once
    alone: list[AloneResult] = field(default_factory=list)  # where those fail: each weight alone, outputs off

    def draw(self, key: str) -> WeightDraw | None:
        return next((weight for weight in self.weights if weight.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "note": self.note, "dims": self.dims, "seed": self.seed,
                "weights": [asdict(weight) for weight in self.weights],
                "redrawn": [weight.key for weight in self.weights if weight.redrawn],
                "outputs": [output.to_dict() for output in self.outputs],
                "alone": [item.to_dict() for item in self.alone]}

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> RedrawnWeights:
        return cls(ran=bool(payload.get("ran")), note=payload.get("note"), dims=payload.get("dims"),
                   seed=payload.get("seed"), weights=[WeightDraw(**item) for item in payload.get("weights") or []],
                   outputs=[OutputComparison.from_dict(item) for item in payload.get("outputs") or []],
                   alone=[AloneResult(item["key"], OutputComparison.from_dict(item["output"]))
                          for item in payload.get("alone") or []])


def off(output: OutputComparison, report: Any) -> bool:
    """Whether an output with re-drawn weights fails as a case's would (check/integrity/verdict.py's rule)."""
    return not output.passed or (output.kernelbench_only and output.name not in report.rounding_downgrades)


# --- the check ----------------------------------------------------------------------------------


class RedrawnWeightsCheck(IntegrityCheck):
    """The re-draw as an integrity check; correctness.json "redrawn_weights"."""

    name: ClassVar[str] = "redrawn_weights"
    when: ClassVar[When] = When.AFTER_CASES
    record_key: ClassVar[str] = "redrawn_weights"
    title: ClassVar[str] = "Re-drawn weights"

    @classmethod
    def applies(cls, facts: RunFacts) -> bool:
        # Every case passed (a failed comparison is verdict enough) where it may run at all.
        return _may_run(facts) and facts.all_passed

    @classmethod
    def draws_again(cls, facts: RunFacts, session: CheckSession, dims: dict[str, Any]) -> frozenset[str]:
        """The Model's weights, by the names the solution gets them."""
        if not _may_run(facts):
            return frozenset()
        from kernel_opt.solution.kernelbench_problem import problem_for

        problem = problem_for(session.reference.path)
        return frozenset(problem.arguments(problem.sizes(dims), session.device).weights)

    def run(self, session: CheckSession) -> RedrawnWeights:
        return check_redrawn(session, session.cases[0], max(session.seeds) + 2)

    @classmethod
    def read(cls, payload: dict[str, Any]) -> RedrawnWeights:
        return RedrawnWeights.from_dict(payload)

    @classmethod
    def failures(cls, result: RedrawnWeights, report: Any) -> list[str]:
        if not result.ran:
            return []
        sentences = []
        for item in result.alone:
            if off(item.output, report):
                sentences.append(_not_followed(result.draw(item.key), item.output))
        named = {item.output.name for item in result.alone if off(item.output, report)}
        for output in result.outputs:
            if off(output, report) and output.name not in named:
                sentences.append(f"output {output.name!r} is off with every weight re-drawn at once "
                                 f"({output_failure_text(output)}), though no weight re-drawn alone moves it off")
        return sentences

    @classmethod
    def headline(cls, result: RedrawnWeights, report: Any, total: int, mode: str) -> str | None:
        outputs = [output.name for output in result.outputs if off(output, report)] if result.ran else []
        if not outputs:
            return None
        keys = list(dict.fromkeys(item.key for item in result.alone if off(item.output, report)))
        which = (f"weight{'s' if len(keys) > 1 else ''} {', '.join(map(repr, keys))}" if keys else
                 "the weights re-drawn together")
        return (f"FAIL{mode}: all {total} cases match the reference with KernelBench's seed-42 weights, but output "
                f"{', '.join(map(repr, outputs))} does not follow {which} when re-drawn.")

    @classmethod
    def section(cls, result: RedrawnWeights, report: Any) -> str:
        weights = markdown_table(
            [[f"`{w.key}`", f"`{w.argument}`", f"{w.kind} ({w.owner})", w.at_seed, w.how if w.redrawn else "kept",
              w.reaches if w.redrawn else w.how] for w in result.weights],
            ["weight", "argument", "kind", "at seed 42", "re-drawn as", "reaches the solution / why kept"])
        rows = [["all re-drawn", output] for output in result.outputs] + [
            [f"`{item.key}` alone", item.output] for item in result.alone]
        outputs = markdown_table(
            [[what, f"`{o.name}`", "FAIL" if off(o, report) else "pass", _number(o.solution_error),
              _number(o.allowed_error), f"{o.mismatches} / {o.numel}"] for what, o in rows],
            ["re-drawn", "output", "result", "solution error", "allowed", "elements off"])
        return render("redrawn_weights.md.j2", result=result, weights=weights, outputs=outputs)


def _may_run(facts: RunFacts) -> bool:
    """A KernelBench problem (a ref.py's inputs are its own: module docstring), not under compute-sanitizer (a
    question of values)."""
    return facts.reference_kind == "kernelbench" and not facts.sanitized


def _not_followed(draw: WeightDraw | None, output: OutputComparison) -> str:
    if draw is None:
        return f"output {output.name!r} does not follow a re-drawn weight: {output_failure_text(output)}"
    return (f"output {output.name!r} does not follow weight {draw.key!r} ({draw.owner} {draw.kind}, "
            f"{draw.at_seed} at seed 42; {draw.reaches}): with it re-drawn alone as {draw.how}, "
            f"{output_failure_text(output)}. KernelBench's seed-42 weights cannot show this: the solution does not "
            "read that weight, or reads it wrong")


def _number(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "—"


# --- what is re-drawn, and how (torch, in the correctness child) ----------------------------------


def weight_kinds(model) -> dict[str, tuple[str, str]]:
    """state_dict key -> (kind, class of the module that holds it): "parameter", "statistic" or "buffer"."""
    kinds = {}
    for name, _ in model.named_buffers():
        owner = _owner(model, name)
        statistic = name.rpartition(".")[2] in STATISTICS and bool(getattr(owner, "track_running_stats", False))
        kinds[name] = ("statistic" if statistic else "buffer", type(owner).__name__)
    for name, _ in model.named_parameters():
        kinds[name] = ("parameter", type(_owner(model, name)).__name__)
    return kinds


def _owner(model, name: str):
    prefix = name.rpartition(".")[0]
    return model.get_submodule(prefix) if prefix else model


def describe(value) -> str:
    """What a weight holds at seed 42: "integer", "empty", "c everywhere" or "varied"."""
    if not value.is_floating_point():
        return "integer"
    if value.numel() == 0:
        return "empty"
    flat = value.detach().reshape(-1)
    return f"{float(flat[0]):g} everywhere" if bool((flat == flat[0]).all()) else "varied"


def redraw(value, generator, positive: bool = False):
    """(new values, how): a constant c -> c + s N(0, 1), s = max(1, |c|) (|c| + s |N(0, 1)| where the values must
    stay positive); any other values -> a permutation of them."""
    import torch

    flat = value.detach().reshape(-1)
    count = flat.numel()
    if bool((flat == flat[0]).all()):
        constant = float(flat[0])
        scale = max(NOISE_FLOOR, abs(constant))
        noise = scale * _normal(count, generator, value.device)
        new = abs(constant) + noise.abs() if positive else constant + noise
        how = _noise_text(constant, scale, positive)
        return new.to(device=value.device, dtype=value.dtype).reshape(value.shape), how
    new = _shuffled(flat, generator)
    if torch.equal(new, flat):
        new = flat.roll(1)
    return new.clone().reshape(value.shape), "its own values in a random order"


def _normal(count: int, generator, device):
    """N(0, 1) noise: float64 from the host generator, or for a large weight float32 on its device, seeded from it."""
    import torch

    if count <= WHOLE_DRAW_ELEMENTS:
        return torch.randn(count, generator=generator, dtype=torch.float64)
    local = torch.Generator(device=device).manual_seed(int(torch.randint(1 << 62, (1,), generator=generator)))
    return torch.randn(count, generator=local, device=device)


def _shuffled(flat, generator):
    """`flat` in a random order: one whole permutation, or for a large weight its blocks in a random order with one
    random order within every block (still a permutation, and no index tensor as large as the weight)."""
    import torch

    count = flat.numel()
    if count <= WHOLE_DRAW_ELEMENTS:
        return flat[torch.randperm(count, generator=generator).to(flat.device)]
    blocks, tail = divmod(count, BLOCK_ELEMENTS)
    block_order = torch.randperm(blocks, generator=generator).to(flat.device)
    within = torch.randperm(BLOCK_ELEMENTS, generator=generator).to(flat.device)
    tail_order = torch.randperm(tail, generator=generator).to(flat.device) + blocks * BLOCK_ELEMENTS
    head = flat[:blocks * BLOCK_ELEMENTS].view(blocks, BLOCK_ELEMENTS)
    return torch.cat([head.index_select(0, block_order).index_select(1, within).reshape(-1), flat[tail_order]])


def _noise_text(constant: float, scale: float, positive: bool) -> str:
    noise = "N(0, 1)" if scale == 1 else f"{scale:g} N(0, 1)"
    if positive:
        return f"{abs(constant):g} + |{noise}|"
    return noise if constant == 0 else f"{constant:g} + {noise}"


def plan_draws(values: dict[str, Any], weights: dict[str, str], kinds: dict[str, tuple[str, str]],
               taken_once: frozenset[str], holders: dict[str, Any]) -> tuple[list[WeightDraw], dict[str, Any]]:
    """Each weight's draw (module docstring: which, how, and how it reaches the solution); the re-drawn values."""
    import torch

    generator = torch.Generator().manual_seed(REDRAW_SEED)
    draws, redrawn = [], {}
    for argument, key in weights.items():
        value = values[argument]
        kind, owner = kinds.get(key, ("buffer", "?"))
        reaches, kept = _reach(argument, value, taken_once, holders)
        if not value.is_floating_point() or value.numel() == 0:
            kept = "integer or empty: left as it is"
        elif kind == "buffer" and describe(value) == "varied":
            kept = ("a varied buffer that is no running statistic: fixed structure (a mask, an index table) a "
                    "solution may build in")
        draw = WeightDraw(key, argument, kind, owner, describe(value), kept is None, kept or "", reaches)
        if kept is None:
            positive = kind == "statistic" and key.rpartition(".")[2] in POSITIVE
            redrawn[argument], draw.how = redraw(value, generator, positive)
        draws.append(draw)
    return draws, redrawn


def _reach(argument: str, value, taken_once: frozenset[str], holders: dict[str, Any]) -> tuple[str, str | None]:
    """(where the solution takes this weight from, why it is kept at its seed-42 values or None)."""
    if argument not in taken_once:
        return f"passed as {argument!r} on each call", None
    holder = holders.get(argument)
    if holder is not None and holder.how in ("by name", "by value"):
        return f"held by ModelNew's {holder.key!r}, {holder.how}", None
    if holder is not None and holder.how == "ambiguous":
        return "ambiguous", "kept: several tensors of ModelNew hold its seed-42 values and none has its name"
    if describe(value).endswith("everywhere"):
        return "nowhere: no tensor of ModelNew has its name or its seed-42 values (only the reference gets it)", None
    return "nowhere", ("kept: no tensor of ModelNew has its name or its seed-42 values (it may be held in another "
                       "layout); its seed-42 values test it in the cases")


# --- the correctness child's side ----------------------------------------------------------------


def check_redrawn(session: CheckSession, dims: dict[str, Any], seed: int) -> RedrawnWeights:
    """Run the check on fresh inputs of one shape (session is the correctness child's); return its record."""
    from kernel_opt.core.errors import UsageError
    from kernel_opt.run.events import PhaseEvent
    from kernel_opt.solution.kernelbench_problem import problem_for

    session.events.emit(PhaseEvent("redrawn_weights", dims=dims, seed=seed))
    instance = session.instance(dims, seed)
    problem = problem_for(session.reference.path)
    sizes = problem.sizes(instance.dims)
    weights = problem.arguments(sizes, session.device).weights
    launcher = session.solution.launcher
    taken_once = launcher.arguments_taken_once(instance.dims, session.device)
    holders = launcher.weight_holders(instance.dims, session.device) if taken_once else {}
    draws, redrawn = plan_draws(instance.values, weights, weight_kinds(problem.model(sizes, session.device)),
                                taken_once, holders)
    result = RedrawnWeights(ran=bool(redrawn), dims=instance.dims, seed=seed, weights=draws)
    if not redrawn:
        result.note = ("not run: the Model has no floating-point parameter or buffer to re-draw"
                       if not draws else "not run: no weight could be re-drawn (see each weight's reason)")
        return result
    def call_with(chosen: dict[str, Any]) -> list:
        # each call is progress: --timeout bounds one call here as in a case, not the check's several together
        session.events.emit(PhaseEvent("redrawn_weights", dims=dims, seed=seed))
        return _call_with(session, instance, chosen, taken_once)

    try:
        result.outputs = call_with(redrawn)
        if any(not output.passed or output.kernelbench_only for output in result.outputs):
            for argument in list(redrawn)[:MAX_ALONE]:
                result.alone += [AloneResult(weights[argument], output) for output in
                                 call_with({argument: redrawn[argument]})
                                 if not output.passed or output.kernelbench_only]
    except UsageError as error:
        if error.kind != "reference_error":
            raise
        return RedrawnWeights(ran=False, note=f"not run: with re-drawn weights {error.message}", dims=instance.dims,
                              seed=seed, weights=draws)
    return result


def _call_with(session: CheckSession, instance, weights: dict[str, Any], taken_once: frozenset[str]) -> list:
    """The reference and the solution on the instance's inputs with `weights` in place; each output compared."""
    import torch

    from kernel_opt.check.compare import poison_
    from kernel_opt.solution.loaded import call_solution

    values = {**instance.values, **weights}
    expectation = session.expect(instance.dims, values, instance.outputs)
    copies = {name: value.clone() if isinstance(value, torch.Tensor) else value for name, value in values.items()}
    for name in instance.outputs:
        poison_(copies[name])
    launcher = session.solution.launcher
    held = {argument: value for argument, value in weights.items() if argument in taken_once}
    if held:
        launcher.use_weights(instance.dims, session.device, held)
    try:
        call_solution(session.solution, copies, instance.dims, instance.outputs)
        session.solution_ran("the solution's call with re-drawn weights")
        session.solution.deliver_outputs()
    finally:
        if held:
            launcher.use_weights(instance.dims, session.device, None)
    return [session.compare(name, copies[name], expectation) for name in instance.outputs]
