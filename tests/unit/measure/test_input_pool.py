"""The timed calls' input rotation (measure/input_pool.py) on CPU tensors, with a fake timer.

The fake timer calls the callable in the order measure/timing/events.py's time_callable does: one untimed
call first, then before_each + call for every estimate, warm-up and timed rep. Solutions are
plain Python over CPU tensors: an honest vector add, one that caches its output by pointer, one
by pointer and tensor version.
"""

import pytest
import torch
from conftest import FIXTURES_DIR, REFERENCE_DIR

from kernel_opt.check.compare import poison_
from kernel_opt.core.errors import SolutionError
from kernel_opt.measure.input_pool import POOL_BUFFER_SETS, POOL_MEMORY_FRACTION, InputRotation, plan_pool
from kernel_opt.run.request import Tolerances
from kernel_opt.run.tampering import PrimitiveGuard

N = 64


def value_sets(count):
    generator = torch.Generator().manual_seed(7)
    return [{"x": torch.randn(N, generator=generator), "y": torch.randn(N, generator=generator)} for _ in range(count)]


def buffer_sets(count):
    return [{"x": torch.empty(N), "y": torch.empty(N), "out": torch.empty(N), "n": N} for _ in range(count)]


class Counting:
    """A vector add that counts how often it really computes."""

    def __init__(self):
        self.computed = 0

    def honest(self, buffers):
        def call():
            self.computed += 1
            torch.add(buffers["x"], buffers["y"], out=buffers["out"])
        return call


class CachedByPointer(Counting):
    """Returns the output it computed the first time it saw these input pointers."""

    def __init__(self):
        super().__init__()
        self.cache = {}

    def key(self, buffers):
        return buffers["x"].data_ptr(), buffers["y"].data_ptr()

    def honest(self, buffers):
        compute = super().honest(buffers)

        def call():
            key = self.key(buffers)
            if key in self.cache:
                buffers["out"].copy_(self.cache[key])
                return
            compute()
            self.cache[key] = buffers["out"].clone()
        return call


class CachedByVersion(CachedByPointer):
    def key(self, buffers):
        return buffers["x"].data_ptr(), buffers["y"].data_ptr(), buffers["x"]._version, buffers["y"]._version


def rotation_for(solution, buffers=3, values=4):
    sets, sources = buffer_sets(buffers), value_sets(values)
    calls = [solution.honest(buffer) for buffer in sets]
    return InputRotation(sets, sources, ["out"], calls, lambda destination, source: destination.copy_(source), poison_)


def fake_timer(rotation, reps=20):
    """time_callable's pattern: one call alone, then (before_each, call) pairs; returns the buffer set of each call."""
    used = []
    rotation.call()
    used.append(rotation.current)
    for _ in range(reps):
        rotation.before_call()
        rotation.call()
        used.append(rotation.current)
    return used


def wrong_buffer_sets(rotation):
    """Buffer sets whose outputs differ from x + y of the value set their last call received."""
    wrong = []
    for buffer, value_set in rotation.results():
        source = rotation.value_sets[value_set]
        if not torch.equal(rotation.buffers[buffer]["out"], source["x"] + source["y"]):
            wrong.append(buffer)
    return wrong


def test_no_call_sees_the_buffers_or_values_of_the_call_before_it():
    rotation = rotation_for(Counting())
    pairs = []
    for _ in range(24):
        rotation.before_call()
        pairs.append((rotation.current, rotation.loaded[rotation.current]))
    assert all(a[0] != b[0] and a[1] != b[1] for a, b in zip(pairs, pairs[1:], strict=False))
    # Buffer set 0 receives every value set in turn (3 and 4 are coprime): no value set repeats in a row.
    assert [values for buffer, values in pairs if buffer == 0] == [3, 2, 1, 0, 3, 2, 1, 0]


def test_before_call_copies_the_values_in_and_poisons_the_outputs():
    rotation = rotation_for(Counting())
    rotation.before_call()
    buffer = rotation.buffers[rotation.current]
    source = rotation.value_sets[rotation.loaded[rotation.current]]
    assert torch.equal(buffer["x"], source["x"]) and torch.equal(buffer["y"], source["y"])
    assert buffer["x"].data_ptr() != source["x"].data_ptr()  # copied into the buffer set, not swapped in
    assert bool(torch.isnan(buffer["out"]).all())
    assert rotation.current not in dict(rotation.results())  # poisoned, nothing computed there yet


def test_an_honest_kernel_computes_every_call_and_every_buffer_set_checks_out():
    solution = Counting()
    rotation = rotation_for(solution)
    used = fake_timer(rotation, reps=20)
    assert solution.computed == 21 and len(used) == 21
    assert [buffer for buffer, _ in rotation.results()] == [0, 1, 2]
    assert wrong_buffer_sets(rotation) == []


def test_an_output_cached_by_pointer_shows_as_wrong_results():
    solution = CachedByPointer()
    rotation = rotation_for(solution)
    fake_timer(rotation, reps=20)
    assert solution.computed == 3  # once per buffer set: every later call returned its cache
    assert wrong_buffer_sets(rotation) == [0, 1, 2]


def test_an_output_cached_by_version_pays_its_true_cost():
    solution = CachedByVersion()
    rotation = rotation_for(solution)
    fake_timer(rotation, reps=20)
    assert solution.computed == 21  # the copy before each call bumps the version: no hit
    assert wrong_buffer_sets(rotation) == []


def test_one_buffer_set_with_alternating_values_still_defeats_a_pointer_cache():
    solution = CachedByPointer()
    rotation = rotation_for(solution, buffers=1, values=2)
    used = fake_timer(rotation, reps=5)
    assert set(used) == {0} and [values for _, values in rotation.results()] == [1]
    assert wrong_buffer_sets(rotation) == [0]


class Returning(Counting):
    """A solution that returns its output (a KernelBench ModelNew) instead of writing the buffer it is given."""

    def __init__(self, keep_output=False, cache_by_pointer=False):
        super().__init__()
        self.keep_output, self.cache_by_pointer = keep_output, cache_by_pointer
        self.kept, self.cache = None, {}

    def honest(self, buffers):
        from kernel_opt.solution.returning_call import ReturningCall

        def forward():
            key = buffers["x"].data_ptr()
            if self.cache_by_pointer and key in self.cache:
                return self.cache[key]
            self.computed += 1
            if self.keep_output:  # one output tensor for every call, rewritten each time: honest
                self.kept = torch.empty(N) if self.kept is None else self.kept
                return torch.add(buffers["x"], buffers["y"], out=self.kept)
            self.cache[key] = buffers["x"] + buffers["y"]
            return self.cache[key]

        return ReturningCall(forward, buffers, ["out"])


def returning_rotation(solution):
    from kernel_opt.solution.returning_call import deliver_outputs

    sets, sources = buffer_sets(3), value_sets(4)
    return InputRotation(sets, sources, ["out"], [solution.honest(buffer) for buffer in sets],
                         lambda destination, source: destination.copy_(source), poison_, deliver_outputs)


@pytest.mark.parametrize("keep_output", [False, True])
def test_returned_outputs_are_delivered_before_the_next_call_can_overwrite_them(keep_output):
    solution = Returning(keep_output=keep_output)
    rotation = returning_rotation(solution)
    fake_timer(rotation, reps=20)
    assert solution.computed == 21
    # each call's result went to its own buffer set before the next call, even when every call returned the
    # same tensor: a kept output buffer is no false failure
    assert [buffer for buffer, _ in rotation.results()] == [0, 1, 2] and wrong_buffer_sets(rotation) == []


def test_a_returned_output_cached_by_pointer_shows_as_wrong_results():
    solution = Returning(cache_by_pointer=True)
    rotation = returning_rotation(solution)
    fake_timer(rotation, reps=20)
    assert solution.computed == 3 and wrong_buffer_sets(rotation) == [0, 1, 2]


def test_a_rotation_needs_one_call_per_buffer_set():
    with pytest.raises(ValueError, match="one call per buffer set"):
        InputRotation(buffer_sets(2), value_sets(3), ["out"], [lambda: None], lambda d, s: None, poison_)


MB = 1_000_000


@pytest.mark.parametrize("free_mb, expected", [(10_000, (3, 4)), (30, (2, 3)), (14, (1, 2)), (4, (1, 1))])
def test_the_pool_is_the_largest_that_fits_in_half_the_free_memory(free_mb, expected):
    """Inputs 2 MB, outputs 1 MB, expectations 1 MB per value set: extra = (S-1) x 3 + V x 3 MB."""
    plan = plan_pool(2 * MB, 1 * MB, 1 * MB, free_mb * MB)
    assert (plan.buffer_sets, plan.value_sets) == expected
    extra = {(3, 4): 18, (2, 3): 12, (1, 2): 6, (1, 1): 0}[expected]
    assert plan.extra_bytes == extra * MB and plan.extra_bytes <= free_mb * MB * POOL_MEMORY_FRACTION
    assert ("could not rotate" in plan.note()) is (expected == (1, 1))


def test_another_version_gets_its_own_buffer_sets_in_the_plan():
    plan = plan_pool(2 * MB, 1 * MB, 1 * MB, 10_000 * MB, versions=2)
    assert (plan.buffer_sets, plan.value_sets) == (POOL_BUFFER_SETS, POOL_BUFFER_SETS + 1)
    assert plan.extra_bytes == (2 * 3 - 1) * 3 * MB + 4 * 3 * MB
    assert plan.note().startswith("the timed calls rotated through 3 input/output buffer set(s) and 4 value sets")


SOFTMAX_STOCK = 4096 * 393216 * 4  # level1 23_Softmax's input and output at KernelBench's stock size, bytes each
GB = 10**9


def test_the_input_pool_keeps_rotating_and_computes_its_expected_outputs_when_it_checks_them():
    """23_Softmax's pool: inputs and outputs 6.4 GB, expectations 6.4 + 12.9 GB per value set; 80 GB free, of
    which the pool may take half."""
    crowded = plan_pool(SOFTMAX_STOCK, SOFTMAX_STOCK, 3 * SOFTMAX_STOCK, 80 * GB)
    assert (crowded.buffer_sets, crowded.value_sets) == (1, 1) and "could not rotate" in crowded.note()
    later = plan_pool(SOFTMAX_STOCK, SOFTMAX_STOCK, 3 * SOFTMAX_STOCK, 80 * GB, defer_expected=True)
    assert (later.buffer_sets, later.value_sets, later.expected_after_timing) == (2, 3, True)
    assert later.extra_bytes == 2 * SOFTMAX_STOCK + 3 * SOFTMAX_STOCK  # a buffer set, three value sets: no more
    assert "computed after the timed calls, one value set at a time" in later.note()
    roomy = plan_pool(SOFTMAX_STOCK, SOFTMAX_STOCK, 3 * SOFTMAX_STOCK, 260 * GB, defer_expected=True)
    assert (roomy.buffer_sets, roomy.value_sets, roomy.expected_after_timing) == (3, 4, False)


# --- the benchmark child's pool, on the CPU (torch.cuda's memory query and sync stubbed) ----------


class Events:
    def __init__(self):
        self.emitted = []

    def emit(self, event):
        self.emitted.append(event)


class Launcher:
    """Stands in for a LoadedSolution: prepared(values, dims, outputs) -> a no-argument call."""

    def __init__(self, solution):
        self.solution = solution

    def prepared(self, values, dims, outputs):
        return self.solution.honest(values)


def child_pool(monkeypatch, solution, free_bytes=10**9, other=None):
    from kernel_opt.check import truth
    from kernel_opt.check.memory_plan import Budget
    from kernel_opt.measure import benchmark_child
    from kernel_opt.solution.contract import load_reference
    from kernel_opt.solution.inputs import build_instance

    monkeypatch.setattr(truth, "memory_budget", lambda device: Budget(free_bytes, 2 * free_bytes, None))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    reference = load_reference(REFERENCE_DIR / "vector_add" / "ref.py")

    def make(dims, seed):
        return build_instance(reference.setup, dims, seed, "cpu")

    instance = make({"n": 4097}, 0)
    events = Events()
    guard = PrimitiveGuard()  # after the patches above: they are this test's, not a solution's
    timed = benchmark_child._build_pool(make, Tolerances(), reference, instance, 0, Launcher(solution),
                                        Launcher(other) if other else None, events, guard)
    return timed, instance, events


def test_the_child_builds_its_pool_from_fresh_draws_and_checks_every_buffer_set(monkeypatch):
    timed, instance, events = child_pool(monkeypatch, Counting())
    rotation = timed.rotation
    assert rotation.buffers[0] is instance.values and len(rotation.buffers) == 3 and len(rotation.value_sets) == 4
    assert len(timed.expected.kept) == 4 and timed.expected.kept[0].truth is not None  # the reference-error rule
    from kernel_opt.solution.contract import load_reference
    from kernel_opt.solution.inputs import build_instance

    seed0 = build_instance(load_reference(REFERENCE_DIR / "vector_add" / "ref.py").setup, {"n": 4097}, 0, "cpu")
    assert not any(torch.equal(seed0.values["x"], value_set["x"]) for value_set in rotation.value_sets)  # seeds 1..4
    assert torch.equal(instance.values["x"], rotation.value_sets[0]["x"])  # buffer set 0 holds value set 0 now
    assert events.emitted[-1].text.startswith("the timed calls rotated through 3 input/output buffer set(s)")
    fake_timer(rotation, reps=10)
    timed.check_rotation("solution", rotation)
    check = events.emitted[-1]
    assert check.name == "solution" and check.passed
    assert [output["name"] for output in check.outputs] == [
        f"out (buffer set {buffer}, value set {values})" for buffer, values in rotation.results()]


def test_the_childs_check_fails_an_output_cached_by_pointer(monkeypatch):
    timed, _, events = child_pool(monkeypatch, CachedByPointer(), other=Counting())
    fake_timer(timed.rotation, reps=10)
    fake_timer(timed.other, reps=10)
    timed.check_rotation("solution", timed.rotation)
    timed.check_rotation("against", timed.other)
    solution_check, against_check = events.emitted[-2:]
    assert not solution_check.passed and against_check.passed
    assert all(output["mismatches"] > 4000 for output in solution_check.outputs)
    assert not set(map(id, timed.other.buffers)) & set(map(id, timed.rotation.buffers))  # its own buffer sets


# vector_add at n = 4097: the full pool's buffers (229,432 bytes) fit in half of this, its expected outputs beside
# them (196,656 bytes more) do not.
ROOM_FOR_BUFFERS_ONLY = 500_000


@pytest.mark.parametrize("solution, passed", [(Counting, True), (CachedByPointer, False)])
def test_without_room_to_keep_them_the_expected_outputs_are_computed_as_each_is_checked(monkeypatch, solution,
                                                                                          passed):
    timed, _, events = child_pool(monkeypatch, solution(), free_bytes=ROOM_FOR_BUFFERS_ONLY)
    assert timed.expected.kept is None and len(timed.rotation.buffers) == 3 and len(timed.rotation.value_sets) == 4
    assert "computed after the timed calls" in events.emitted[-1].plan
    fake_timer(timed.rotation, reps=10)
    timed.check_rotation("solution", timed.rotation)
    check = events.emitted[-1]
    assert check.passed is passed and len(check.outputs) == 3
    if not passed:
        assert all(output["mismatches"] > 4000 for output in check.outputs)


def test_the_childs_check_refuses_outputs_timed_with_a_replaced_timer(monkeypatch):
    timed, _, events = child_pool(monkeypatch, Counting())
    fake_timer(timed.rotation, reps=3)
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.001)  # as a solution's call might
    with pytest.raises(SolutionError, match="replaced torch.cuda.Event.elapsed_time"):
        timed.check_rotation("solution", timed.rotation)
    assert not any(getattr(event, "name", None) == "solution" for event in events.emitted)  # nothing recorded


def test_without_room_for_a_pool_every_call_sees_the_same_inputs_and_the_report_says_so(monkeypatch):
    timed, instance, events = child_pool(monkeypatch, Counting(), free_bytes=1000)
    assert len(timed.rotation.buffers) == 1 and timed.rotation.value_sets[0]["x"] is instance.values["x"]
    note, plan = events.emitted[-2:]
    assert "could not rotate inputs" in note.text and plan.step == "input pool" and plan.plan == note.text
    fake_timer(timed.rotation, reps=3)
    timed.check_fixed("solution (kernel time)")
    assert events.emitted[-1].passed


def test_a_held_worker_gives_back_what_preparing_freed_before_it_waits(monkeypatch):
    """The checks run beside the wait (compute-sanitizer among them): the allocator's cached blocks must not
    starve them (a fresh agent's memcheck ran out of memory beside a held worker at 4096 x 393216)."""
    from kernel_opt.measure import benchmark_child
    from kernel_opt.run.request import BenchmarkPart, ChildRequest, SolutionSpec

    order = []
    monkeypatch.setattr(benchmark_child, "_prepare", lambda request, events: order.append("prepare"))
    monkeypatch.setattr(benchmark_child, "_release_cached_memory", lambda: order.append("release cached"))
    monkeypatch.setattr(benchmark_child, "wait_for_release", lambda events: order.append("wait"))  # stopped: None
    request = ChildRequest(SolutionSpec("triton", "v.py"), "ref.py", "cuda", {}, BenchmarkPart(wait_for_release=True))
    benchmark_child.run_benchmark(request, Events())
    assert order == ["prepare", "release cached", "wait"]


# --- the eager baseline, timed in alternation with the solution on its buffer sets -----------------------------


def test_the_eager_baseline_alternates_with_the_solution_on_the_buffer_set_the_solution_last_used(monkeypatch):
    """Where a tensor lies and what state the GPU is in both move a call's time, so eager runs in pairs with the
    solution (A B, B A, ...), each time on the buffer set the solution last used; it writes only its own returned
    tensor, so every buffer set still holds the solution's checked outputs; the speedup reads the pairs' medians."""
    from kernel_opt.measure import baseline_timing
    from kernel_opt.measure.timing import interleaved
    from kernel_opt.measure.timing.samples import TimingSamples
    from kernel_opt.run.events import PostTimingCheckEvent
    from kernel_opt.run.request import BenchmarkPart, ChildRequest, SolutionSpec
    from kernel_opt.solution.contract import load_reference

    timed, _, events = child_pool(monkeypatch, Counting())
    rotation, order = timed.rotation, []

    def fake_time_interleaved(fn_a, fn_b, before_a=None, before_b=None, min_pairs=30, **_):
        assert before_b is None  # eager neither loads values nor poisons the solution's outputs
        assert min_pairs == 10  # one timing's samples: medians, not a comparison's bootstrap
        fn_a(), fn_b()
        for pair in range(8):
            for fn in (fn_a, fn_b) if pair % 2 == 0 else (fn_b, fn_a):
                if fn is fn_a:
                    before_a()
                    order.append(("solution", rotation.current))
                else:
                    order.append(("eager", rotation.current))
                fn()
        common = dict(warmup=1, reps=8, flush_l2=True, method="events", interleaved=True)
        return TimingSamples([10.0] * 8, **common), TimingSamples([12.0] * 8, **common)

    monkeypatch.setattr(interleaved, "time_interleaved", fake_time_interleaved)
    reference = load_reference(REFERENCE_DIR / "vector_add" / "ref.py")
    request = ChildRequest(SolutionSpec("triton", "v.py"), "ref.py", "cpu", {}, BenchmarkPart(baselines=["eager"]))
    assert baseline_timing.time_eager_beside_solution(reference, timed, {"n": 4097}, request, events) is True
    assert order[:6] == [("solution", 1), ("eager", 1), ("eager", 1), ("solution", 2), ("solution", 0), ("eager", 0)]
    solution_sets = [buffer for who, buffer in order if who == "solution"]
    assert solution_sets == [1, 2, 0, 1, 2, 0, 1, 2]  # the solution never sees the same buffer set twice in a row
    assert all(torch.equal(buffers["out"], buffers["x"] + buffers["y"]) for buffers in rotation.buffers)
    check = next(event for event in events.emitted if isinstance(event, PostTimingCheckEvent))
    assert check.name == "solution (beside eager)" and check.passed
    entry = events.emitted[-1].entry
    assert (entry["name"], entry["median_us"], entry["paired_solution_us"]) == ("eager", 12.0, 10.0)
    assert entry["paired_solution_samples_us"] == [10.0] * 8
    assert baseline_timing.EAGER_PAIRED_NOTE in entry["timing"]["notes"]
    none = ChildRequest(SolutionSpec("triton", "v.py"), "ref.py", "cpu", {}, BenchmarkPart(baselines=["compile"]))
    assert baseline_timing.time_eager_beside_solution(reference, timed, {"n": 4097}, none, events) is False


def test_a_solution_that_raises_beside_the_eager_baseline_is_blamed_and_an_eager_error_is_eager_s(monkeypatch):
    from kernel_opt.core.errors import SolutionError
    from kernel_opt.measure import baseline_timing
    from kernel_opt.measure.timing import interleaved
    from kernel_opt.run.request import BenchmarkPart, ChildRequest, SolutionSpec
    from kernel_opt.solution.contract import load_reference

    timed, _, events = child_pool(monkeypatch, Counting())
    reference = load_reference(REFERENCE_DIR / "vector_add" / "ref.py")
    request = ChildRequest(SolutionSpec("triton", "v.py"), "ref.py", "cpu", {}, BenchmarkPart(baselines=["eager"]))
    timed.rotation.calls[1] = lambda: (_ for _ in ()).throw(RuntimeError("CUDA error: an illegal memory access"))

    def run_both(fn_a, fn_b, before_a=None, **_):
        fn_b()
        before_a()
        fn_a()

    monkeypatch.setattr(interleaved, "time_interleaved", run_both)
    with pytest.raises(SolutionError, match="the solution raised RuntimeError: CUDA error: an illegal memory access "
                                            "while timed beside the eager baseline"):
        baseline_timing.time_eager_beside_solution(reference, timed, {"n": 4097}, request, events)

    def eager_fails(fn_a, fn_b, **_):
        raise RuntimeError("the reference's own failure")

    monkeypatch.setattr(interleaved, "time_interleaved", eager_fails)
    assert baseline_timing.time_eager_beside_solution(reference, timed, {"n": 4097}, request, events) is True
    entry = events.emitted[-1].entry
    assert (entry["name"], entry["error"], entry["median_us"]) == ("eager", "RuntimeError: the reference's own failure",
                                                                  None)


def test_a_kernelbench_model_is_built_once_and_called_on_each_buffer_set_s_inputs():
    from kernel_opt.measure.baseline_timing import eager_calls
    from kernel_opt.solution.contract import load_reference
    from kernel_opt.solution.inputs import build_instance

    reference = load_reference(FIXTURES_DIR / "kernelbench" / "problems" / "3_Sum_reduction.py")
    sets = [build_instance(reference.setup, {}, seed, "cpu").values for seed in (1, 2)]
    dims = {name: value for name, value in sets[0].items() if not isinstance(value, torch.Tensor)}
    first, second = eager_calls(reference, sets, dims)
    assert first.func is second.func  # one Model
    inputs = [name for name, value in sets[0].items() if isinstance(value, torch.Tensor) and name != "output"]
    assert [argument is sets[1][name] for argument, name in zip(second.args, inputs, strict=True)] == [True]
    assert torch.allclose(second(), sets[1][inputs[0]].sum(dim=1, keepdim=True))
