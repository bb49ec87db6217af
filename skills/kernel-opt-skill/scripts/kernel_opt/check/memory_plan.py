"""What each step of a check needs in memory, from the problem's own tensors, and what to do where it does not fit.

Pure arithmetic on byte counts, no torch: the correctness child (check/truth.py) and the
benchmark child (measure/input_pool.py) pass in the problem's sizes and the memory available now
(env/memory.py), and get their choices back; tests pass made-up numbers.

One case of the correctness check holds, for a problem with inputs I and outputs O (bytes):

    instance               I + O           the inputs, the weights, the output buffers
    reference run          + I + O + X     private copies, and what the reference allocates (X, measured)
    expected outputs       + O             kept until the comparison
    float64 truth run      + I64 + O64 + X64   copies upcast to float64, and the reference's own allocations in
                                               float64 (X scaled by 8 / the output's element size)
    float64 truth          + O64           kept until the comparison
    input-mutation copy    + I             during the solution's call
    solution's call        + whatever the solution allocates (its own business)
    comparison             a few chunks of CHUNK_ELEMENTS float64 values (check/chunked.py)

The float64 run is the largest step: 58 GB for a 6.4 GB softmax input (4096 x 393216 float32).
Where it does not fit, the truth is computed in row chunks (a KernelBench Model: its forward
inputs sliced along their first dimension, after a probe shows the rows do not depend on each
other), kept on the host where the GPU cannot hold it; else the whole float64 run goes to the host;
else a sample of rows. Copies kept only until the comparison (expected outputs, the truth, the
input-mutation copy) go to the host where the GPU would not keep room for the solution's call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Left free on the GPU beyond any plan: cuBLAS and cuDNN workspaces, the caching allocator's
# rounding (blocks of 2 MiB and more) and fragmentation, and the CUDA context's own growth when a
# library first loads. 5 % of an 80 GB H100 is 4 GB; 1 GiB at the least.
HEADROOM_FRACTION = 0.05
HEADROOM_MIN_BYTES = 1 << 30
# Of the host's available memory (MemAvailable), what copies kept there may take: the rest stays
# for the page cache and the other processes on the machine.
HOST_FRACTION = 0.8
# A float64 truth in more row chunks than this is slower than its value (each chunk is a launch of
# the whole model); past it, a sample of rows is taken instead.
MAX_TRUTH_CHUNKS = 256
# A sample of rows is this many evenly spaced pieces: the first rows, the middle, the last.
SAMPLE_PIECES = 3
FLOAT64_BYTES = 8

TruthHow = Literal["whole", "row chunks", "host", "row sample"]
Place = Literal["device", "host"]


def headroom(total_bytes: int) -> int:
    """What every plan leaves free on a GPU of `total_bytes`."""
    return max(HEADROOM_MIN_BYTES, int(total_bytes * HEADROOM_FRACTION))


@dataclass(frozen=True)
class Budget:
    """The memory a step may plan with, in bytes: on the device the tensors live on, and on the host.

    `device_available` is free plus cached by torch's allocator; `on_gpu` False means the tensors
    live on the host (a CPU run), so device and host are one memory and nothing moves between them.
    """

    device_available: int
    device_total: int
    host_available: int | None
    on_gpu: bool = True

    @property
    def device(self) -> int:
        """What a step may take on the device."""
        return max(0, self.device_available - headroom(self.device_total))

    @property
    def host(self) -> int:
        """What copies kept on the host may take (0 on a CPU run: the host is the device)."""
        if not self.on_gpu or self.host_available is None:
            return 0
        return int(self.host_available * HOST_FRACTION)


def place(nbytes: int, budget: Budget, reserve_bytes: int = 0) -> Place:
    """Where to keep a copy of `nbytes` until the comparison: the device while `reserve_bytes` (what the rest of
    the case still needs, the solution's call above all) stays free beside it, else the host where it has room."""
    if nbytes + reserve_bytes <= budget.device or not budget.on_gpu or nbytes > budget.host:
        return "device"
    return "host"


@dataclass(frozen=True)
class TruthSizes:
    """One set of the problem's tensors as the float64 truth sees them, in bytes.

    `rows` is the outputs' common first dimension where rows may be computed apart (0: they may
    not); `row_inputs_float64` the part of `inputs_float64` that is sliced by rows (the forward
    inputs; the weights are not). `reference_transient` is what the reference's own run took beyond
    what was allocated before it (measured: its private copies of I and O, and what it allocated).
    """

    inputs: int
    outputs: int
    inputs_float64: int
    outputs_float64: int
    row_inputs_float64: int = 0
    rows: int = 0
    reference_transient: int = 0

    @property
    def float64_ratio(self) -> float:
        """How much larger the float64 run's own allocations are than the reference's: 2 for float32 outputs."""
        return self.outputs_float64 / self.outputs if self.outputs else 2.0

    @property
    def whole(self) -> int:
        """The float64 run of all rows at its peak: its copies, its output and its own allocations."""
        own = max(0, self.reference_transient - self.inputs - self.outputs)
        return self.inputs_float64 + self.outputs_float64 + int(own * self.float64_ratio)

    @property
    def case_reserve(self) -> int:
        """What the rest of the case needs free on the device once the truth is kept: the input-mutation copy of
        the inputs, and what the solution's call allocates, taken to be what the reference's run allocated
        beyond its copies (0 where that was not measured)."""
        if self.reference_transient <= 0:
            return 0
        return max(0, self.reference_transient - self.outputs)

    @property
    def fixed(self) -> int:
        """The part of the float64 run that row chunks do not divide: the float64 copies of the weights."""
        return self.inputs_float64 - self.row_inputs_float64

    def rows_run(self, count: int) -> int:
        """The float64 run of `count` rows at its peak (the weights' copies whole, the rest in proportion)."""
        if self.rows <= 0:
            return self.whole
        return self.fixed + -(-(self.whole - self.fixed) * count // self.rows)


@dataclass(frozen=True)
class TruthAttempt:
    """One way to compute the float64 truth, and what it needs at its peak (bytes of the device, or of the host)."""

    how: TruthHow
    needed_bytes: int
    kept_on: Place = "device"
    chunk_rows: int = 0  # "row chunks" and "row sample": rows per run of the reference
    sample_rows: int = 0  # "row sample": rows the truth covers

    def text(self, sizes: TruthSizes) -> str:
        """What it does, for the record: 'the float64 truth in 8 row chunks of 512 rows, kept on the host'."""
        kept = "" if self.kept_on == "device" else ", kept on the host"
        if self.how == "whole":
            return f"the float64 truth in one run on the device ({_gb(self.needed_bytes)} planned){kept}"
        if self.how == "host":
            return f"the float64 truth on the host (CPU): {_gb(sizes.whole)} would not fit on the GPU"
        if self.how == "row chunks":
            chunks = -(-sizes.rows // self.chunk_rows)
            return (f"the float64 truth in {chunks} row chunks of {self.chunk_rows} of {sizes.rows} rows{kept} "
                    f"({_gb(self.needed_bytes)} per chunk; {_gb(sizes.whole)} in one run would not fit)")
        return (f"the float64 truth of a sample of {self.sample_rows} of {sizes.rows} rows in {SAMPLE_PIECES} "
                f"pieces (the whole truth, {_gb(sizes.outputs_float64)}, fits neither on the GPU nor on the host)")


def plan_truth(sizes: TruthSizes, budget: Budget, reserve_bytes: int = 0) -> list[TruthAttempt]:
    """The ways to compute the float64 truth that fit, best first; the caller tries them in order.

    In one run where it fits; in row chunks; the whole run on the host; a sample of rows. The truth
    is kept on the device while `reserve_bytes` (what the rest of the case needs: the input-mutation
    copy and the solution's call) stays free beside it, else on the host. Where nothing is planned
    to fit, one run is tried all the same (the estimate of the reference's allocations may be high).
    """
    kept_on = place(sizes.outputs_float64, budget, reserve_bytes)
    # Kept on the device only because the host cannot take it: the whole truth would leave the solution's call
    # too little room, and its failing allocation would read as the solution's. A sample comes first then.
    crowded = kept_on == "device" and sizes.outputs_float64 + reserve_bytes > budget.device
    attempts: list[TruthAttempt] = []
    if sizes.whole <= budget.device:
        attempts.append(TruthAttempt("whole", sizes.whole, kept_on=kept_on))
    chunks = _row_chunks(sizes, budget, kept_on)
    if chunks is not None:
        attempts.append(chunks)
    if budget.on_gpu and 0 < sizes.whole <= budget.host:
        attempts.append(TruthAttempt("host", sizes.whole, kept_on="host"))
    sample = _row_sample(sizes, budget, reserve_bytes if crowded else 0)
    if sample is not None and crowded:
        attempts.insert(0, sample)
    elif sample is not None and chunks is None:
        attempts.append(sample)
    if not attempts:
        attempts.append(TruthAttempt("whole", sizes.whole, kept_on=kept_on))
    return attempts


def _row_chunks(sizes: TruthSizes, budget: Budget, kept_on: Place) -> TruthAttempt | None:
    """Row chunks that fit beside the truth where it is kept; None where rows cannot be chunked or even
    MAX_TRUTH_CHUNKS chunks would not fit."""
    if sizes.rows < 2:
        return None
    fewest = max(1, -(-sizes.rows // MAX_TRUTH_CHUNKS))
    most = -(-sizes.rows // 2)  # at least two chunks: one would be the whole run
    kept = sizes.outputs_float64 if kept_on == "device" else 0
    rows = _rows_fitting(sizes, budget.device - kept, most)
    if rows < fewest:
        return None
    return TruthAttempt("row chunks", sizes.rows_run(rows) + kept, kept_on=kept_on, chunk_rows=rows)


def _row_sample(sizes: TruthSizes, budget: Budget, reserve_bytes: int = 0) -> TruthAttempt | None:
    """A sample of rows whose truth is kept on the device: SAMPLE_PIECES pieces, computed one at a time; as many
    rows as fit beside `reserve_bytes`, up to half of them."""
    room = budget.device - reserve_bytes
    if sizes.rows < 2 * SAMPLE_PIECES or room <= sizes.fixed:
        return None
    per_row = -(-sizes.outputs_float64 // sizes.rows)
    scaled_per_row = (sizes.whole - sizes.fixed) / sizes.rows

    def needed(sample: int) -> int:
        return sizes.rows_run(-(-sample // SAMPLE_PIECES)) + per_row * sample

    sample = min(sizes.rows // 2, int((room - sizes.fixed) / (scaled_per_row / SAMPLE_PIECES + per_row)))
    while sample >= SAMPLE_PIECES and needed(sample) > room:
        sample -= 1
    if sample < SAMPLE_PIECES:
        return None
    return TruthAttempt("row sample", needed(sample), chunk_rows=-(-sample // SAMPLE_PIECES), sample_rows=sample)


def _rows_fitting(sizes: TruthSizes, room: int, most: int) -> int:
    """The most rows (up to `most`) whose float64 run fits in `room` bytes; 0 where not one does."""
    scaled = sizes.whole - sizes.fixed
    if room <= sizes.fixed or scaled <= 0:
        return 0 if room <= sizes.fixed else most
    return min(most, (room - sizes.fixed) * sizes.rows // scaled)


def _gb(count: int) -> str:
    return f"{count / 1e9:.1f} GB"
