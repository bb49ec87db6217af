"""Measured ceilings of this GPU: copy bandwidth and matmul throughput per dtype, cached.

METHOD.md: "Datasheet rates are leads: measure the two ceilings once on the device machine
(a large device-to-device copy, counting bytes read plus bytes written; a large matrix
product through whatever library is there) and use those." This module does exactly that,
with the same timer the kernels are timed by (`measure/timing/events.py`'s `time_callable`), and caches the result
per GPU model and driver so later benchmarks reuse it instead of spending a minute on it.

- Bandwidth: `dst.copy_(src)` between two 1 GiB buffers (at most 1/8 of device memory each);
  bytes moved = bytes read + bytes written = 2 x 1 GiB, over the median time. 1 GiB is far
  beyond any L2, so the figure is DRAM bandwidth.
- Throughput: `torch.matmul(a, b, out=c)` on square random matrices, 2*n^3 FLOPs over the
  median time, the best of several sizes (MATMUL_SIZES), for bf16, fp16, fp32 with TF32
  explicitly allowed, and strict fp32 (TF32 disabled through both `torch.backends.cuda.matmul.allow_tf32 = False` and
  `torch.set_float32_matmul_precision("highest")`). Random inputs, never zeros: a matmul on
  zeros can run faster than on real data (METHOD.md records 13% on an H200).
- FP8, on GPUs with FP8 tensor cores (compute capability 8.9 and up): `torch._scaled_mm` (cuBLASLt)
  on e4m3 operands with per-tensor scales and a bf16 result, with fast accumulation, the faster of
  its two modes; the roof of every float8 dtype (e5m2 runs at the same rate).

Cache file: $KERNEL_OPT_CACHE_DIR, else $XDG_CACHE_HOME/kernel-opt-skill, else
~/.cache/kernel-opt-skill; named ceilings-<gpu-name-slug>-<driver>.json. It records the date,
GPU name, driver, torch and CUDA versions, so a stale or foreign cache is visible.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.cache import cache_dir
from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import write_json_atomic
from kernel_opt.core.records import now_iso
from kernel_opt.env.probes import driver_version, probe_nvidia_smi
from kernel_opt.measure import roofline
from kernel_opt.measure.timing.events import time_callable
from kernel_opt.measure.timing.gpu import cuda_device

# 2: several matmul sizes per precision (a cache of one size is measured again); 3: the FP8 matmul
SCHEMA_VERSION = 3

COPY_BYTES = 1024**3  # per buffer; read 1 GiB + write 1 GiB per copy
COPY_MAX_FRACTION_OF_MEMORY = 8  # two buffers plus the L2 flush buffer must fit comfortably

# Square matmul sizes, several per precision: the roof is the best of them. One size is not a
# roof: on an H100, cuBLAS ran bf16 at about 770 TFLOP/s at 4096^3 but 708 at 8192^3,
# so a roof measured at 8192 alone put honest GEMMs at 100.5-104.5% of it. 4096 and 8192 fill
# every GPU this skill targets with full-size tiles; strict fp32 runs on the CUDA cores (67
# TFLOP/s on an H100, 19.5 on an A100), so 2048 and 4096 keep each call near 0.3-7 ms and the
# whole measurement around a minute.
MATMUL_SIZES: dict[str, tuple[int, ...]] = {
    "bfloat16": (4096, 8192),
    "float16": (4096, 8192),
    "tf32": (4096, 8192),
    "float32": (2048, 4096),
    "float8_e4m3fn": (4096, 8192),
}
FP8_LABEL = "float8_e4m3fn"
FP8_MIN_CAPABILITY = (8, 9)  # Ada and Hopper: the first with FP8 tensor cores
MATMUL_SEED = 0
# GPU time per measurement: steadier medians than the 100 ms default for a once-per-GPU figure.
MEASURE_REP_MS = 300.0

_PRECISION_NOTES = {
    "bfloat16": "bf16 inputs and output, FP32 accumulation (cuBLAS default)",
    "float16": "fp16 inputs and output, cuBLAS default accumulation",
    "tf32": "fp32 tensors with TF32 allowed: allow_tf32=True, float32_matmul_precision='high'",
    "float32": "strict fp32, TF32 disabled: allow_tf32=False, float32_matmul_precision='highest'",
    FP8_LABEL: "e4m3 inputs, per-tensor scales, bf16 output: torch._scaled_mm (cuBLASLt), fast accumulation",
}


@dataclass(frozen=True)
class DeviceIdentity:
    """What the cache is keyed on (name, driver) plus the versions recorded beside it."""

    name: str
    driver_version: str
    torch_version: str
    cuda_version: str | None
    compute_capability: str | None = None
    sm_count: int | None = None
    l2_cache_bytes: int | None = None
    total_memory_bytes: int | None = None


@dataclass(frozen=True)
class CopyCeiling:
    buffer_bytes: int
    bytes_moved: int
    bandwidth_gbps: float
    median_us: float
    p20_us: float
    p80_us: float
    method: str = "torch.Tensor.copy_ between two device buffers; bytes moved = read + written"


@dataclass(frozen=True)
class MatmulCeiling:
    dtype: str
    size: int
    tflops: float | None
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    precision: str = ""
    error: str | None = None
    tried: tuple[dict[str, Any], ...] = ()  # every size measured: {"size", "tflops", "error"}; the best is this one


@dataclass
class MeasuredCeilings:
    device: DeviceIdentity
    measured_at: str
    copy: CopyCeiling | None
    matmul: dict[str, MatmulCeiling] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    copy_error: str | None = None

    @property
    def complete(self) -> bool:
        """Every ceiling was measured (none failed, e.g. out of memory while another job ran)."""
        return self.copy is not None and all(entry.tflops is not None for entry in self.matmul.values())

    @property
    def memory_bandwidth_gbps(self) -> float | None:
        return None if self.copy is None else self.copy.bandwidth_gbps

    def peak_tflops(self, dtype: str, allow_tf32: bool = False) -> float | None:
        """Measured matmul throughput for a torch dtype name; float32 is strict unless allow_tf32."""
        name = dtype.removeprefix("torch.")
        if name == "float32" and allow_tf32:
            name = "tf32"
        if name.startswith("float8"):
            name = FP8_LABEL
        entry = self.matmul.get(name)
        return None if entry is None else entry.tflops

    def roofline_ceilings(self, dtype: str, allow_tf32: bool = False) -> roofline.Ceilings | None:
        """The measured roofs for one dtype, or None when either was not measured."""
        bandwidth = self.memory_bandwidth_gbps
        throughput, source = roofline.dtype_compute_roof(dtype, allow_tf32, self.peak_tflops(dtype, allow_tf32),
                                                         self.peak_tflops("tf32"), f"measured {self.measured_at[:10]}")
        if not bandwidth or not throughput:
            return None
        label = "tf32" if dtype.removeprefix("torch.") == "float32" and allow_tf32 else dtype.removeprefix("torch.")
        return roofline.Ceilings(bandwidth, throughput, source=source, dtype=label)

    def to_dict(self) -> dict:
        return {
            "schema_version": self.schema_version,
            "measured_at": self.measured_at,
            "device": asdict(self.device),
            "copy": None if self.copy is None else asdict(self.copy),
            "copy_error": self.copy_error,
            "matmul": {name: asdict(entry) for name, entry in self.matmul.items()},
        }

    @classmethod
    def from_dict(cls, payload: dict) -> MeasuredCeilings:
        return cls(
            device=DeviceIdentity(**payload["device"]),
            measured_at=payload["measured_at"],
            copy=None if payload.get("copy") is None else CopyCeiling(**payload["copy"]),
            copy_error=payload.get("copy_error"),
            matmul={name: MatmulCeiling(**{**entry, "tried": tuple(entry.get("tried") or ())})
                    for name, entry in payload.get("matmul", {}).items()},
            schema_version=payload.get("schema_version", 0),
        )


@dataclass(frozen=True)
class CeilingsResult:
    ceilings: MeasuredCeilings
    from_cache: bool
    cache_path: Path


# --- cache -------------------------------------------------------------------------------


def slugify(text: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'; safe in any file name."""
    slug = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    return slug or "unknown"


def cache_path(identity: DeviceIdentity, directory: Path | None = None) -> Path:
    directory = cache_dir() if directory is None else directory
    return directory / f"ceilings-{slugify(identity.name)}-{slugify(identity.driver_version)}.json"


def read_cache(path: Path, identity: DeviceIdentity) -> MeasuredCeilings | None:
    """The cached measurement at `path`, or None when absent, unreadable, old-schema or foreign.

    A file for another GPU or driver (copied in by hand, or a slug collision) is not reused:
    the name and driver recorded inside must match this device.
    """
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        cached = MeasuredCeilings.from_dict(payload)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if cached.schema_version != SCHEMA_VERSION:
        return None
    if cached.device.name != identity.name or cached.device.driver_version != identity.driver_version:
        return None
    return cached


def write_cache(path: Path, ceilings: MeasuredCeilings) -> Path:
    return write_json_atomic(path, ceilings.to_dict())


# --- device ------------------------------------------------------------------------------


def current_device_identity(device: Any = None) -> DeviceIdentity:
    """Name, driver and versions of the GPU torch would use; EnvironmentFault without one."""
    import torch

    resolved = cuda_device(device, purpose="ceilings cannot be measured")
    properties = torch.cuda.get_device_properties(resolved)
    return DeviceIdentity(
        name=torch.cuda.get_device_name(resolved),
        driver_version=driver_version(probe_nvidia_smi()) or "unknown",  # "unknown" where nvidia-smi cannot say
        torch_version=torch.__version__,
        cuda_version=torch.version.cuda,
        compute_capability=f"{properties.major}.{properties.minor}",
        sm_count=int(properties.multi_processor_count),
        l2_cache_bytes=int(getattr(properties, "L2_cache_size", 0) or 0) or None,
        total_memory_bytes=int(properties.total_memory),
    )


# --- measurement -------------------------------------------------------------------------


@contextlib.contextmanager
def matmul_precision(label: str) -> Iterator[None]:
    """Set torch's fp32 matmul mode for `label` ("float32" strict, "tf32" allowed), then restore it."""
    import torch

    saved_allow = torch.backends.cuda.matmul.allow_tf32
    saved_precision = torch.get_float32_matmul_precision()
    try:
        if label == "float32":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
        elif label == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.set_float32_matmul_precision("high")
        yield
    finally:
        torch.set_float32_matmul_precision(saved_precision)
        torch.backends.cuda.matmul.allow_tf32 = saved_allow


def measure_copy_bandwidth(
    device: Any = None, buffer_bytes: int = COPY_BYTES, rep_ms: float = MEASURE_REP_MS
) -> CopyCeiling:
    import torch

    device = cuda_device(device)
    total = torch.cuda.get_device_properties(device).total_memory
    buffer_bytes = min(buffer_bytes, total // COPY_MAX_FRACTION_OF_MEMORY)
    elements = buffer_bytes // 4
    generator = torch.Generator(device=device).manual_seed(MATMUL_SEED)
    source = torch.randn(elements, dtype=torch.float32, device=device, generator=generator)
    destination = torch.empty_like(source)
    try:
        samples = time_callable(lambda: destination.copy_(source), rep_ms=rep_ms, device=device)
    finally:
        # Drop both buffers (the lambda shares these names) so empty_cache can hand their memory
        # back; rebinding rather than `del` keeps the names the lambda reads defined.
        source = destination = None
        torch.cuda.empty_cache()
    moved = 2 * elements * 4
    return CopyCeiling(
        buffer_bytes=elements * 4,
        bytes_moved=moved,
        bandwidth_gbps=moved / (samples.median_us * 1e-6) / 1e9,
        median_us=samples.median_us,
        p20_us=samples.p20_us,
        p80_us=samples.p80_us,
    )


def measure_matmul(label: str, size: int, device: Any = None, rep_ms: float = MEASURE_REP_MS) -> MatmulCeiling:
    """Throughput of one square matmul in `label` precision; an error becomes a record, not a crash."""
    import torch

    if label not in _PRECISION_NOTES:
        raise UsageError(f"unknown matmul precision {label!r}; known: {', '.join(_PRECISION_NOTES)}")
    device = cuda_device(device)
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(label, torch.float32)
    try:
        generator = torch.Generator(device=device).manual_seed(MATMUL_SEED)
        a = torch.randn(size, size, dtype=dtype, device=device, generator=generator)
        b = torch.randn(size, size, dtype=dtype, device=device, generator=generator)
        c = torch.empty(size, size, dtype=dtype, device=device)
        with matmul_precision(label):
            call = _fp8_product(a, b) if label == FP8_LABEL else (lambda: torch.matmul(a, b, out=c))
            samples = time_callable(call, rep_ms=rep_ms, device=device)
    except RuntimeError as error:  # e.g. bf16 on a pre-Ampere GPU, or out of memory
        return MatmulCeiling(label, size, None, precision=_PRECISION_NOTES[label], error=str(error).splitlines()[0])
    finally:
        a = b = c = None
        torch.cuda.empty_cache()
    flops = 2.0 * size**3
    return MatmulCeiling(
        dtype=label,
        size=size,
        tflops=flops / (samples.median_us * 1e-6) / 1e12,
        median_us=samples.median_us,
        p20_us=samples.p20_us,
        p80_us=samples.p80_us,
        precision=_PRECISION_NOTES[label],
    )


def _fp8_product(a, b):
    """A call of torch._scaled_mm on `a` and `b` cast to e4m3 (b column-major, as cuBLASLt requires), unit scales."""
    import torch

    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()
    scale = torch.ones((), device=a.device)
    return lambda: torch._scaled_mm(a8, b8, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16,
                                    use_fast_accum=True)


def matmul_labels(identity: DeviceIdentity) -> list[str]:
    """The precisions this GPU has a matmul for: FP8 only from compute capability 8.9 on."""
    major, _, minor = (identity.compute_capability or "0.0").partition(".")
    fp8 = (int(major or 0), int(minor or 0)) >= FP8_MIN_CAPABILITY
    return [label for label in MATMUL_SIZES if label != FP8_LABEL or fp8]


def best_matmul(label: str, sizes: tuple[int, ...], measure=None) -> MatmulCeiling:
    """The fastest of one precision's matmul sizes, with every size it tried (a failed size is kept as tried).

    `measure(label, size)` defaults to measure_matmul on the current device; tests pass a fake.
    """
    measure = measure or measure_matmul
    results = [measure(label, size) for size in sizes]
    tried = tuple({"size": r.size, "tflops": r.tflops, "error": r.error} for r in results)
    succeeded = [r for r in results if r.tflops is not None]
    best = max(succeeded, key=lambda r: r.tflops) if succeeded else results[0]
    return dataclasses.replace(best, tried=tried)


def measure_ceilings(identity: DeviceIdentity, device: Any = None) -> MeasuredCeilings:
    """Measure copy bandwidth and every matmul precision in MATMUL_SIZES (the best size of each) on this GPU."""
    copy: CopyCeiling | None = None
    copy_error: str | None = None
    try:
        copy = measure_copy_bandwidth(device)
    except RuntimeError as error:
        copy_error = str(error).splitlines()[0]
    matmul = {label: best_matmul(label, MATMUL_SIZES[label], lambda name, size: measure_matmul(name, size, device))
              for label in matmul_labels(identity)}
    return MeasuredCeilings(
        device=identity,
        measured_at=now_iso(),
        copy=copy,
        copy_error=copy_error,
        matmul=matmul,
    )


def load_or_measure(refresh: bool = False, device: Any = None, directory: Path | None = None) -> CeilingsResult:
    """The cached ceilings of this GPU and driver, measuring (and caching) them when needed.

    A measurement in which some ceiling failed is returned but not cached.

    Args:
        refresh: measure again even when a valid cache exists, and overwrite it.
        device: the CUDA device (default: the current one).
        directory: cache folder (default: `cache_dir()`).

    Raises:
        EnvironmentFault: no GPU.
    """
    identity = current_device_identity(device)
    path = cache_path(identity, directory)
    if not refresh:
        cached = read_cache(path, identity)
        if cached is not None:
            return CeilingsResult(cached, from_cache=True, cache_path=path)
    measured = measure_ceilings(identity, device)
    if measured.complete:  # a failed measurement is shown, never cached: the next run retries it
        write_cache(path, measured)
    return CeilingsResult(measured, from_cache=False, cache_path=path)


def load_cached(device: Any = None, directory: Path | None = None) -> MeasuredCeilings | None:
    """The cached ceilings for this GPU without measuring anything; None when there are none yet.

    benchmark.py uses this so that a benchmark never silently spends a minute measuring
    ceilings: it tells the user to run measure_ceilings.py instead.
    """
    identity = current_device_identity(device)
    return read_cache(cache_path(identity, directory), identity)


def load_cached_for(gpu_name: str, directory: Path | None = None) -> MeasuredCeilings | None:
    """The cached ceilings of a GPU named as torch names it, on this machine's driver, without torch or a GPU context.

    The size sweep reads them in its parent, which never starts CUDA (its profiled process runs under ncu).
    """
    driver = driver_version(probe_nvidia_smi()) or "unknown"
    identity = DeviceIdentity(name=gpu_name, driver_version=driver, torch_version="", cuda_version=None)
    return read_cache(cache_path(identity, directory), identity)

