"""What a KernelBench problem costs in PyTorch eager on an H100, counted op by op on the meta device.

Eager runs one kernel per ATen op, and each reads its tensor arguments and writes its results,
so the Model's forward is run on PyTorch's meta device (shapes only, no arithmetic, no GPU)
under a dispatch mode that records every op: the bytes it reads and writes (views and other
ops whose results alias an argument move nothing), and the FLOPs torch.utils.flop_counter
knows for it (matmul, convolution, attention). Each op costs max(bytes / copy bandwidth,
FLOPs / matmul rate of its dtype); the problem's eager estimate is the sum. It is a floor in
spirit: passes an ATen kernel makes over its input beyond the first (softmax's max and sum),
launch gaps and kernels slower than the roofline are not counted, so real eager times sit above
it. The same counts give a fused kernel's floor: the Model's inputs, weights and outputs moved
once.

Rates: the H100's ceilings the tools measured (demo/triton/rmsnorm/v0/benchmark.json, NVIDIA
H100 80GB HBM3, 2026-11-22): copy 3,027 GB/s (read + written), matmul 51.2 TFLOP/s in strict
float32, 678 in float16 and 708 in bfloat16 (cuBLAS, FP32 accumulation).

Usage (from the repository root; no GPU needed):
  python3 tools/kernelbench_estimate.py demo/kernelbench/problems
  python3 tools/kernelbench_estimate.py demo/kernelbench/problems/L1_01_rms_norm.py --json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parents[1] / "skills" / "kernel-opt-skill" / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

COPY_BYTES_PER_S = 3027e9  # measured copy ceiling, bytes read + written per second (module docstring)
MATMUL_FLOPS_PER_S = {"float32": 51.2e12, "float16": 678e12, "bfloat16": 708e12}
MB = 1e6  # decimal, as bandwidths are quoted
# Ops whose result is a view whose schema does not say so: no kernel runs.
NO_KERNEL_OPS = frozenset({"_unsafe_view", "_reshape_alias", "lift_fresh"})
# Ops that read only the elements their index tensor names from their first argument (nll_loss's
# gather of one log-probability per row), not the whole tensor.
INDEXED_READ_OPS = frozenset({"nll_loss_forward", "gather", "index_select", "embedding"})


@dataclass
class OpCost:
    """One ATen op of the forward: what it moves and computes, and its time at the H100's ceilings."""

    op: str
    bytes_moved: int
    flops: int
    dtype: str

    @property
    def time_us(self) -> float:
        memory = self.bytes_moved / COPY_BYTES_PER_S
        compute = self.flops / MATMUL_FLOPS_PER_S.get(self.dtype, MATMUL_FLOPS_PER_S["float32"])
        return max(memory, compute) * 1e6


@dataclass
class ProblemCost:
    """A problem's eager estimate at its sizes, and the traffic a single fused kernel could not avoid."""

    name: str
    sizes: dict[str, Any]
    input_bytes: int  # get_inputs()' tensors
    weight_bytes: int  # the Model's parameters and buffers
    output_bytes: int  # what forward returns
    ops: list[OpCost] = field(default_factory=list)

    @property
    def eager_us(self) -> float:
        return sum(op.time_us for op in self.ops)

    @property
    def eager_bytes(self) -> int:
        return sum(op.bytes_moved for op in self.ops)

    @property
    def flops(self) -> int:
        return sum(op.flops for op in self.ops)

    @property
    def fused_floor_bytes(self) -> int:
        return self.input_bytes + self.weight_bytes + self.output_bytes

    @property
    def fused_floor_us(self) -> float:
        """One kernel that moves the inputs, weights and outputs once and does every op's FLOPs at its rate."""
        compute_s = sum(op.flops / MATMUL_FLOPS_PER_S.get(op.dtype, MATMUL_FLOPS_PER_S["float32"]) for op in self.ops)
        return max(self.fused_floor_bytes / COPY_BYTES_PER_S, compute_s) * 1e6

    @property
    def created_bytes(self) -> int:
        """Inputs, weights and every op's result kept at once: more than eager ever holds on the GPU."""
        return self.input_bytes + self.weight_bytes + sum(op.bytes_moved for op in self.ops)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "eager_us": self.eager_us, "eager_bytes": self.eager_bytes, "flops": self.flops,
                "fused_floor_bytes": self.fused_floor_bytes, "fused_floor_us": self.fused_floor_us,
                "created_bytes": self.created_bytes}


def tensor_bytes(tensor) -> int:
    """Bytes a kernel touches for this tensor: its elements, but no more than its storage (broadcast views)."""
    elements = tensor.numel() * tensor.element_size()
    try:
        return min(elements, tensor.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):
        return elements


def _tensors(value) -> list:
    """The distinct tensors in `value` (x * x reads x once)."""
    import torch
    from torch.utils._pytree import tree_leaves

    found: dict[int, Any] = {}
    for item in tree_leaves(value):
        if isinstance(item, torch.Tensor):
            found.setdefault(id(item), item)
    return list(found.values())


def _dtype_of(tensors: list) -> str:
    floating = [tensor for tensor in tensors if tensor.is_floating_point()]
    return str(floating[0].dtype).removeprefix("torch.") if floating else "float32"


def _recording_mode():
    """A dispatch mode that keeps an OpCost per op that moves data (defined on use: it needs torch)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class Recording(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[OpCost] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            name = str(func.overloadpacket.__name__)
            aliases = any(returned.alias_info is not None for returned in func._schema.returns)
            if aliases or name in NO_KERNEL_OPS:
                return result  # a view or an in-place alias: no kernel moves these bytes
            read = _tensors((args, kwargs))
            written = _tensors(result)
            counter = flop_registry.get(func._overloadpacket)
            flops = int(counter(*args, **kwargs, out_val=result)) if counter else 0
            moved = sum(tensor_bytes(tensor) for tensor in read + written)
            if name in INDEXED_READ_OPS and read:  # one element of the first argument per index
                source, indices = read[0], read[1:]
                moved += max((t.numel() for t in indices), default=0) * source.element_size() - tensor_bytes(source)
            if moved or flops:
                self.ops.append(OpCost(name, moved, flops, _dtype_of(read + written)))
            return result

    return Recording()


def estimate(path: Path, dims: dict[str, Any] | None = None) -> ProblemCost:
    """The problem at `path` (sizes overridden by `dims`) run once on the meta device, op by op."""
    import torch

    from kernel_opt.solution.kernelbench_problem import problem_for

    problem = problem_for(path)
    sizes = problem.sizes(dims or {})
    module = problem.module(sizes)
    with torch.device("meta"), torch.no_grad():
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
        mode = _recording_mode()
        with mode:
            returned = model(*inputs)
    weights = list(model.state_dict().values())
    return ProblemCost(name=path.stem, sizes={name: sizes[name] for name in problem.outline.input_sizes},
                       input_bytes=sum(tensor_bytes(t) for t in _tensors(inputs)),
                       weight_bytes=sum(tensor_bytes(t) for t in weights),
                       output_bytes=sum(tensor_bytes(t) for t in _tensors(returned)), ops=mode.ops)


def problem_files(target: Path) -> list[Path]:
    return sorted(target.glob("*.py")) if target.is_dir() else [target]


def table(costs: list[ProblemCost]) -> str:
    """A Markdown table: one row per problem, MB and GFLOP as counted, times in us at the H100's ceilings."""
    lines = ["| problem | sizes | eager ops | eager MB | GFLOP | eager estimate us | fused floor MB | fused floor us |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for cost in costs:
        sizes = ", ".join(f"{name}={value}" for name, value in cost.sizes.items())
        lines.append(f"| {cost.name} | {sizes} | {len(cost.ops)} | {cost.eager_bytes / MB:,.0f} | "
                     f"{cost.flops / 1e9:,.1f} | {cost.eager_us:,.0f} | {cost.fused_floor_bytes / MB:,.0f} | "
                     f"{cost.fused_floor_us:,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", type=Path, help="a KernelBench problem file, or a folder of them")
    parser.add_argument("--ops", action="store_true", help="also list every op of each problem")
    parser.add_argument("--json", action="store_true", help="one JSON object per problem instead of the table")
    args = parser.parse_args(argv)
    if not args.target.exists():
        print(f"error: {args.target} does not exist", file=sys.stderr)
        return 2
    costs = [estimate(path) for path in problem_files(args.target)]
    if args.json:
        for cost in costs:
            print(json.dumps(cost.to_dict()))
        return 0
    print(table(costs))
    if args.ops:
        for cost in costs:
            print(f"\n{cost.name}: " + "; ".join(f"{op.op} {op.bytes_moved / MB:,.0f} MB {op.flops / 1e9:.1f} GFLOP "
                                                 f"{op.time_us:.0f} us" for op in cost.ops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
