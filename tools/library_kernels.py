#!/usr/bin/env python3
"""Library kernels nobody here wrote, profiled exactly as ncu_profile.py profiles a solution.

cuBLAS GEMMs through torch.matmul (bf16, fp16, strict fp32) and PyTorch's scaled-dot-product
attention backends (flash, cuDNN, memory-efficient) are the kernels the classifier must read
like an H100 engineer. Each case is called a few times to warm up, then once inside
the project's NVTX range (`kernel_opt_solution`), so ncu profiles only that call's kernels.
`profile` runs ncu with the command `build_ncu_command` gives ncu_profile.py (targeted sections,
this chip's extra metrics, `--clock-control none`: clocks are never touched). The recording
script is tools/record_classification_fixtures.sh.

Usage:
  python3 tools/library_kernels.py list
  python3 tools/library_kernels.py run gemm_bf16_8192                   # the profiled program itself
  python3 tools/library_kernels.py command gemm_bf16_8192 OUT/gemm_bf16_8192/profile --ncu /usr/local/cuda/bin/ncu
  python3 tools/library_kernels.py profile sdpa_cudnn OUT/sdpa_cudnn/profile --capability 9.0 --timeout 150

Exit codes: 0 done; 2 usage error (unknown case); 3 this case cannot run here (no GPU, the SDPA
backend is unavailable); 4 ncu failed or timed out (its output is in ncu.log beside the report).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "skills" / "kernel-opt-skill" / "scripts"))
from kernel_opt.env.device import gpu_capability_if_any  # noqa: E402
from kernel_opt.profile.ncu.collection import (  # noqa: E402
    NVTX_RANGE,
    NcuCommandOptions,
    build_ncu_command,
    environment_for_child,
    extra_metrics_for,
    run_ncu,
)

WARMUP_CALLS = 3
MAX_LAUNCHES = 4  # a GEMM is one or two kernels (split-K adds a reduction), attention one or two
DEFAULT_TIMEOUT_S = 150.0


@dataclass(frozen=True)
class Case:
    """One library call: a GEMM (m, n, k, dtype) or an SDPA backend (batch, heads, sequence, head dim, dtype)."""

    name: str
    kind: str  # "gemm" or "sdpa"
    dtype: str  # "bfloat16", "float16", "float32" (strict: no TF32)
    shape: tuple[int, ...]
    backend: str = ""  # SDPA: FLASH_ATTENTION, CUDNN_ATTENTION, EFFICIENT_ATTENTION

    def describe(self) -> str:
        if self.kind == "gemm":
            m, n, k = self.shape
            return f"torch.matmul {self.dtype} M={m} N={n} K={k}" + (" (TF32 off)" if self.dtype == "float32" else "")
        batch, heads, sequence, head_dim = self.shape
        return f"SDPA {self.backend} {self.dtype} B={batch} H={heads} S={sequence} D={head_dim}"


GEMM_SHAPES = {"8192": (8192, 8192, 8192), "4096": (4096, 4096, 4096), "8192x8192x1024": (8192, 8192, 1024)}
GEMM_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
SDPA_BACKENDS = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION", "efficient": "EFFICIENT_ATTENTION"}
SDPA_SHAPE = (8, 16, 2048, 64)

CASES: dict[str, Case] = {
    **{f"gemm_{short}_{shape}": Case(f"gemm_{short}_{shape}", "gemm", dtype, dims)
       for short, dtype in GEMM_DTYPES.items() for shape, dims in GEMM_SHAPES.items()},
    **{f"sdpa_{short}": Case(f"sdpa_{short}", "sdpa", "bfloat16", SDPA_SHAPE, backend)
       for short, backend in SDPA_BACKENDS.items()},
}


class CaseUnavailable(Exception):
    """This machine cannot run the case (exit 3)."""


def _call(case: Case):
    """Allocate the inputs and return the call to profile (torch is imported only here)."""
    import torch

    if not torch.cuda.is_available():
        raise CaseUnavailable("no GPU")
    dtype = getattr(torch, case.dtype)
    torch.manual_seed(0)
    if case.kind == "gemm":
        torch.backends.cuda.matmul.allow_tf32 = False  # strict fp32: the FFMA path, not TF32 tensor cores
        m, n, k = case.shape
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
        return lambda: torch.matmul(a, b)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    q, k, v = (torch.randn(*case.shape, device="cuda", dtype=dtype) for _ in range(3))
    backend = getattr(SDPBackend, case.backend)

    def attention():
        with sdpa_kernel(backend):
            return scaled_dot_product_attention(q, k, v)

    try:
        attention()
    except RuntimeError as error:  # the backend refuses this GPU, dtype or shape
        raise CaseUnavailable(f"{case.backend}: {str(error).splitlines()[0]}") from error
    return attention


def run_case(case: Case) -> None:
    """Warm up outside the NVTX range, then one call inside it: the only launches ncu profiles."""
    import torch

    call = _call(case)
    for _ in range(WARMUP_CALLS):
        call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def ncu_command(case: Case, export_base: Path, ncu: str, compute_capability: str | None) -> list[str]:
    """The ncu command for one case: ncu_profile.py's own, around `library_kernels.py run CASE`."""
    options = NcuCommandOptions(export_base=export_base, max_launches=MAX_LAUNCHES,
                                extra_metrics=extra_metrics_for(compute_capability))
    program = [sys.executable, str(Path(__file__).resolve()), "run", case.name]
    return build_ncu_command(ncu, program, options)


def profile_case(case: Case, export_base: Path, ncu: str, timeout_s: float, compute_capability: str | None) -> int:
    """Run ncu on one case; ncu.log beside the report keeps the command and ncu's output."""
    export_base.parent.mkdir(parents=True, exist_ok=True)
    command = ncu_command(case, export_base, ncu, compute_capability)
    run = run_ncu(command, env=environment_for_child(), timeout_s=timeout_s)
    (export_base.parent / "ncu.log").write_text(f"$ {shlex.join(command)}\n{run.output}")
    if "CASE UNAVAILABLE" in run.output:
        return 3
    report = Path(f"{export_base}.ncu-rep")
    return 0 if not run.timed_out and report.is_file() else 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("action", choices=["list", "run", "command", "profile"])
    parser.add_argument("case", nargs="?")
    parser.add_argument("export_base", nargs="?", type=Path, help="report path without .ncu-rep (command, profile)")
    parser.add_argument("--ncu", default="ncu", help="the ncu binary (default: ncu on PATH)")
    parser.add_argument("--capability", help="compute capability, e.g. 9.0 (default: this GPU's, through torch)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds ncu may take (profile)")
    args = parser.parse_args(argv)
    if args.action == "list":
        print("\n".join(f"{name}\t{case.describe()}" for name, case in CASES.items()))
        return 0
    if args.case not in CASES:
        print(f"unknown case {args.case!r}; `list` shows them", file=sys.stderr)
        return 2
    case = CASES[args.case]
    if args.action == "run":
        try:
            run_case(case)
        except CaseUnavailable as error:
            print(f"CASE UNAVAILABLE: {error}", file=sys.stderr)
            return 3
        return 0
    if args.export_base is None:
        print(f"{args.action} needs EXPORT_BASE (the report path without .ncu-rep)", file=sys.stderr)
        return 2
    capability = args.capability or gpu_capability_if_any()
    if args.action == "command":
        print(json.dumps(ncu_command(case, args.export_base, args.ncu, capability)))
        return 0
    return profile_case(case, args.export_base, args.ncu, args.timeout, capability)


if __name__ == "__main__":
    sys.exit(main())
