"""The timers' event discipline, checked against a fake torch.cuda with a simulated clock.

Only the order of operations and the arithmetic can be checked without a GPU: every sample
must bracket exactly one call of the timed function, with the L2 flush (and the benchmark's
output poisoning) before the start event, never inside the timed region.
"""

import contextlib

import pytest
import torch

from kernel_opt.measure.timing import cuda_graph, events, interleaved, l2_flush
from kernel_opt.measure.timing.samples import GraphCaptureFailure


class FakeCuda:
    """Just enough of torch.cuda for the timers: events read a simulated clock in ms."""

    def __init__(self):
        self.log: list[str] = []
        self.clock_ms = 0.0
        self.capturing = None
        fake = self

        class Stream:
            device = torch.device("cuda", 0)
            cuda_stream = 0

            def wait_stream(self, other):
                fake.log.append("wait_stream")

        class Event:
            def __init__(self, enable_timing=False):
                self.time_ms = None

            def record(self, stream=None):
                fake.log.append("record")
                self.time_ms = fake.clock_ms

            def elapsed_time(self, other):
                return other.time_ms - self.time_ms

        class Graph:
            def __init__(self):
                self.calls = 0
                self.durations_ms: list[float] = []  # what was captured, replayed in order

            def replay(self):
                fake.log.append("replay")
                fake.clock_ms += sum(self.durations_ms)

            def reset(self):
                fake.log.append("reset")

        @contextlib.contextmanager
        def graph(captured, stream=None, **_):
            fake.capturing = captured
            try:
                yield
            finally:
                fake.capturing = None

        self.patches = dict(
            is_available=lambda: True, current_device=lambda: 0, device=lambda d: contextlib.nullcontext(),
            current_stream=lambda d=None: Stream(), Event=Event, synchronize=lambda d=None: self.log.append("sync"),
            get_device_name=lambda d=None: "Fake GPU", Stream=lambda d=None: Stream(),
            stream=lambda s: contextlib.nullcontext(), CUDAGraph=Graph, graph=graph,
        )

    def kernel(self, label: str, duration_ms: float):
        def call():
            if self.capturing is not None:
                self.capturing.calls += 1
                self.capturing.durations_ms.append(duration_ms)
                self.log.append(f"captured {label}")
                return
            self.log.append(label)
            self.clock_ms += duration_ms

        return call


@pytest.fixture
def fake(monkeypatch):
    cuda = FakeCuda()
    for name, value in cuda.patches.items():
        monkeypatch.setattr(torch.cuda, name, value)

    class Flusher:
        def __init__(self, torch_module, device, mode):
            self.nbytes = 100 << 20

        def __call__(self):
            if cuda.capturing is not None:
                cuda.capturing.durations_ms.append(0.05)
                cuda.log.append("captured flush")
                return
            cuda.log.append("flush")
            cuda.clock_ms += 0.05

    monkeypatch.setattr(l2_flush, "L2Flusher", Flusher)
    return cuda


def test_each_sample_brackets_one_call_with_flush_and_hook_outside(fake):
    run = fake.kernel("fn", 0.002)
    samples = events.time_callable(run, rep_ms=0.1, warmup_ms=0.02, min_reps=10,
                                   before_each=lambda: fake.log.append("poison"))
    assert samples.samples_us == pytest.approx([2.0] * samples.reps)
    assert samples.median_us == pytest.approx(2.0) and samples.flush_l2 and samples.method == "events"
    timed = fake.log[-(5 * samples.reps + 1):]
    assert timed[-1] == "sync"
    for index in range(samples.reps):
        assert timed[5 * index: 5 * index + 5] == ["poison", "flush", "record", "fn", "record"]


def test_reps_follow_the_time_budget(fake):
    samples = events.time_callable(fake.kernel("fn", 0.01), rep_ms=1.0, warmup_ms=0.1, min_reps=5, max_reps=1000)
    assert samples.reps == 100  # 1 ms of budget / 10 us per call


def test_cuda_graph_timing_divides_replays_by_captured_calls(fake):
    graph = cuda_graph.time_callable_cudagraph(fake.kernel("fn", 0.002), rep_ms=0.02, replays=5)
    assert graph.method == "cuda_graph"
    assert graph.samples_us == pytest.approx([2.0] * len(graph.samples_us))
    assert fake.log.count("captured fn") == graph.calls_per_sample
    assert "flush" not in fake.log


def test_kernel_only_time_subtracts_the_flush_graph(fake):
    """(k x [flush, call]) - (k x [flush]) over k: the call's own time, flushes and launches cancel."""
    samples = cuda_graph.time_kernel_only(fake.kernel("fn", 0.04), rep_ms=1.0, replays=6)
    assert samples.method == "cuda_graph_differential" and samples.flush_l2
    assert samples.samples_us == pytest.approx([40.0] * 6)
    assert fake.log.count("captured flush") == 2 * samples.calls_per_sample  # one flush per call in each graph
    assert fake.log.count("captured fn") == samples.calls_per_sample
    # one replay lasts about rep_ms with the flushes: 1 ms / (50 us flush + 40 us call), rounded up
    assert samples.calls_per_sample == 12 and samples.estimate_us == pytest.approx(40.0)


def test_graph_capture_failure_is_a_result_not_an_exception(fake, monkeypatch):
    @contextlib.contextmanager
    def refusing(captured, stream=None, **_):
        yield
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    monkeypatch.setattr(torch.cuda, "graph", refusing)
    failed = cuda_graph.time_callable_cudagraph(fake.kernel("fn", 0.002), rep_ms=0.02, replays=5)
    assert isinstance(failed, GraphCaptureFailure)
    assert failed.message.startswith("graph capture failed: RuntimeError")


def test_interleaved_pairs_alternate_and_keep_their_own_times(fake):
    a, b = interleaved.time_interleaved(
        fake.kernel("A", 0.003), fake.kernel("B", 0.004), rep_ms=0.1, warmup_ms=0.01, min_pairs=6,
        before_a=lambda: fake.log.append("poison A"), before_b=lambda: fake.log.append("poison B"),
    )
    assert a.reps == b.reps >= 6
    assert a.samples_us == pytest.approx([3.0] * a.reps) and b.samples_us == pytest.approx([4.0] * b.reps)
    order = [entry for entry in fake.log if entry in ("A", "B")][-2 * a.reps:]
    assert [tuple(order[i:i + 2]) for i in range(0, 6, 2)] == [("A", "B"), ("B", "A"), ("A", "B")]
    # each call is preceded by its own hook only: poisoning the other's outputs would erase them
    calls = [i for i, entry in enumerate(fake.log) if entry in ("A", "B")]
    for index in calls[-2 * a.reps:]:
        assert fake.log[index - 3: index] == [f"poison {fake.log[index]}", "flush", "record"]


def test_cuda_graph_is_reported_for_short_kernels_only():
    assert cuda_graph.should_report_cuda_graph(5.0) and not cuda_graph.should_report_cuda_graph(50.0)
