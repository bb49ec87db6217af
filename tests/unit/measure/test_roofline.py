"""Roofline arithmetic on hand-computed cases, floor flagging, traffic and FLOP counting."""

from __future__ import annotations

import pytest
import torch

from kernel_opt.core.errors import UsageError
from kernel_opt.measure import roofline

# Vector add of 2^28 fp32 elements: reads 2 x 1 GiB, writes 1 GiB, 2^28 additions.
VECTOR_ADD_BYTES = 3 * 2**30
VECTOR_ADD_FLOPS = 2**28
H100_LIKE = roofline.Ceilings(memory_bandwidth_gbps=3000.0, compute_tflops=60.0, source="test")


def test_vector_add_at_3000_gbps():
    point = roofline.roofline_point(VECTOR_ADD_FLOPS, VECTOR_ADD_BYTES, time_us=1200.0, ceilings=H100_LIKE)
    # floor = 3 * 2^30 B / 3e12 B/s = 1073.741824 us
    assert point.memory_floor_us == pytest.approx(1073.741824)
    assert point.compute_floor_us == pytest.approx(2**28 / 60e12 * 1e6)  # 4.474 us
    assert point.floor_time_us == pytest.approx(1073.741824)
    assert point.achieved_bandwidth_gbps == pytest.approx(3 * 2**30 / 1.2e-3 / 1e9)  # 2684.35 GB/s
    assert point.achieved_tflops == pytest.approx(2**28 / 1.2e-3 / 1e12)
    assert point.arithmetic_intensity_flop_per_byte == pytest.approx(1 / 12)
    assert point.ridge_point_flop_per_byte == pytest.approx(20.0)  # 60e12 / 3e12
    assert point.bound == "memory"
    assert point.attainable_tflops == pytest.approx(3000.0 / 12 / 1000)  # intensity x bandwidth
    assert point.percent_of_ceiling == pytest.approx(100 * 1073.741824 / 1200.0)  # 89.48%
    assert point.percent_of_ceiling == pytest.approx(100 * point.achieved_bandwidth_gbps / 3000.0)
    assert point.faster_than_floor is False


def test_square_bf16_matmul_is_compute_bound():
    n = 4096
    flops = 2 * n**3
    traffic = 3 * n * n * 2
    ceilings = roofline.Ceilings(3000.0, 800.0, source="test", dtype="bfloat16")
    point = roofline.roofline_point(flops, traffic, time_us=200.0, ceilings=ceilings)
    assert point.arithmetic_intensity_flop_per_byte == pytest.approx(flops / traffic)  # 1365.3
    assert ceilings.ridge_point_flop_per_byte == pytest.approx(800e12 / 3000e9)  # 266.7
    assert point.bound == "compute"
    assert point.floor_time_us == pytest.approx(flops / 800e12 * 1e6)  # 171.8 us
    assert point.percent_of_ceiling == pytest.approx(100 * point.achieved_tflops / 800.0)
    assert point.attainable_tflops == 800.0


def test_intensity_exactly_at_the_ridge_counts_as_compute_bound():
    ceilings = roofline.Ceilings(1000.0, 10.0, source="test")  # ridge 10 FLOP/byte
    point = roofline.roofline_point(10_000, 1_000, time_us=1.0, ceilings=ceilings)
    assert point.arithmetic_intensity_flop_per_byte == 10.0
    assert point.bound == "compute"
    assert point.memory_floor_us == pytest.approx(point.compute_floor_us)


def test_faster_than_floor_is_flagged_beyond_the_tolerance():
    floor = 1073.741824
    assert roofline.FASTER_THAN_FLOOR_TOLERANCE == 0.03
    suspicious = roofline.roofline_point(VECTOR_ADD_FLOPS, VECTOR_ADD_BYTES, time_us=1000.0, ceilings=H100_LIKE)
    assert suspicious.faster_than_floor is True and suspicious.percent_of_ceiling > 100
    within = roofline.roofline_point(VECTOR_ADD_FLOPS, VECTOR_ADD_BYTES, time_us=1050.0, ceilings=H100_LIKE)
    assert within.faster_than_floor is False  # 2.2% under the floor: ceiling noise, not a miscount
    assert roofline.is_faster_than_floor(floor * 0.969, floor) is True
    assert roofline.is_faster_than_floor(floor * 0.971, floor) is False
    assert roofline.is_faster_than_floor(floor * 0.99, floor, tolerance=0.0) is True


def test_unknown_flops_gives_a_memory_only_point():
    point = roofline.roofline_point(None, VECTOR_ADD_BYTES, time_us=1200.0, ceilings=H100_LIKE)
    assert point.flops_known is False
    assert point.bound == "memory"
    assert point.achieved_tflops is None and point.arithmetic_intensity_flop_per_byte is None
    assert point.floor_time_us == pytest.approx(1073.741824)
    payload = point.to_dict()
    assert payload["ceilings"]["ridge_point_flop_per_byte"] == pytest.approx(20.0)


@pytest.mark.parametrize(
    ("flops", "traffic", "time_us"),
    [(1, 1, 0.0), (1, 1, -5.0), (1, -1, 1.0), (0, 0, 1.0), (-1, 10, 1.0)],
)
def test_nonsense_inputs_are_rejected(flops, traffic, time_us):
    with pytest.raises(UsageError):
        roofline.roofline_point(flops, traffic, time_us, H100_LIKE)


def test_ceilings_must_be_positive():
    with pytest.raises(UsageError):
        roofline.Ceilings(0.0, 10.0, source="test")


# --- minimum traffic -----------------------------------------------------------------------


def test_minimum_traffic_over_several_dtypes_ignores_scalars():
    x = torch.zeros(1000, dtype=torch.float32)  # 4000 B
    y = torch.zeros(1000, dtype=torch.float16)  # 2000 B
    index = torch.zeros(10, dtype=torch.int64)  # 80 B
    out = torch.zeros(1000, dtype=torch.bfloat16)  # 2000 B
    traffic = roofline.count_minimum_traffic(
        {"x": x, "y": y, "index": index, "alpha": 3.0, "mode": "fast", "bias": None}, out
    )
    assert (traffic.read_bytes, traffic.written_bytes, traffic.total_bytes) == (6080, 2000, 8080)
    assert roofline.minimum_traffic_bytes([x, (y, [index])], (out,)) == 8080


def test_a_tensor_passed_twice_is_read_once():
    x = torch.zeros(256, dtype=torch.float32)
    assert roofline.minimum_traffic_bytes({"a": x, "b": x, "c": x.view(16, 16)}, []) == 1024


def test_in_place_output_counts_as_read_and_written():
    x = torch.zeros(256, dtype=torch.float32)
    traffic = roofline.count_minimum_traffic({"x": x}, x)
    assert (traffic.read_bytes, traffic.written_bytes) == (1024, 1024)


def test_float8_and_meta_tensors_count_by_shape():
    a = torch.empty(64, 64, dtype=torch.float8_e4m3fn, device="meta")  # 4096 B
    b = torch.empty(64, 64, dtype=torch.float8_e4m3fn, device="meta")
    out = torch.empty(64, 64, dtype=torch.bfloat16, device="meta")  # 8192 B
    assert roofline.minimum_traffic_bytes([a, b], out) == 2 * 4096 + 8192


# --- FLOP counting -------------------------------------------------------------------------


def _matmul(a, b):
    return a @ b


def test_flop_counter_on_a_matmul_gives_2mnk():
    m, n, k = 64, 48, 32
    count = roofline.count_flops(_matmul, {"a": torch.randn(m, k), "b": torch.randn(k, n)})
    assert count.flops == 2 * m * n * k
    assert count.reason is None and count.uncounted_operators == []


def test_flop_counter_works_on_meta_tensors_and_views():
    m, n, k = 4096, 4096, 2048

    def reference(a, b):
        return (a.t() @ b).contiguous()

    kwargs = {"a": torch.empty(k, m, device="meta"), "b": torch.empty(k, n, device="meta")}
    assert roofline.count_flops(reference, kwargs).flops == 2 * m * n * k



def test_a_products_multiply_adds_with_a_zero_operand_are_left_out_of_the_count():
    """Triangular and diagonal operands (KernelBench's structured matmuls): a kernel may skip what adds nothing."""
    m = 64
    lower = {"a": torch.tril(torch.rand(m, m) + 0.5), "b": torch.tril(torch.rand(m, m) + 0.5)}
    count = roofline.count_flops(lambda a, b: torch.tril(a @ b), lower)
    useful = sum((m - k) * (k + 1) for k in range(m))  # column k of a has m - k nonzeros, row k of b has k + 1
    assert count.flops == 2 * useful and count.zero_product_flops == 2 * (m**3 - useful)
    assert useful == m * (m + 1) * (m + 2) // 6  # about a sixth of the dense m^3
    diagonal = roofline.count_flops(lambda a, b: torch.diag(a) @ b, {"a": torch.rand(m) + 0.5, "b": torch.rand(m, 32)})
    assert diagonal.flops == 2 * m * 32  # one multiply a column
    batched = roofline.count_flops(lambda a, b: torch.bmm(a, b), {"a": lower["a"].expand(3, m, m).contiguous(),
                                                                  "b": lower["b"].expand(3, m, m).contiguous()})
    assert batched.flops == 3 * 2 * useful
    linear = roofline.count_flops(lambda x, w, bias: torch.addmm(bias, x, w),
                                  {"x": torch.rand(8, m) + 0.5, "w": torch.triu(torch.rand(m, 16) + 0.5),
                                   "bias": torch.rand(16)})
    assert linear.flops == 2 * 8 * sum(max(16 - k, 0) for k in range(m))  # row k of triu(w) keeps columns k..15
    dense = roofline.count_flops(_matmul, {"a": torch.rand(m, m) + 0.5, "b": torch.rand(m, m) + 0.5})
    assert (dense.flops, dense.zero_product_flops) == (2 * m**3, 0)

def test_elementwise_reference_has_no_flop_count():
    count = roofline.count_flops(lambda x, y: x + y, {"x": torch.randn(100), "y": torch.randn(100)})
    assert count.flops is None and count.complete is False
    assert count.counted_flops == 0
    assert "aten.add" in count.uncounted_operators
    assert "flops(**dims)" in count.reason and "aten.add" in count.reason


def test_matmul_plus_softmax_is_counted_as_a_lower_bound_naming_what_was_left_out():
    m, n, k = 32, 16, 8
    count = roofline.count_flops(
        lambda a, b: torch.softmax(a @ b, dim=-1), {"a": torch.randn(m, k), "b": torch.randn(k, n)}
    )
    assert count.flops == count.counted_flops == 2 * m * n * k and count.complete is False
    assert "aten._softmax" in count.uncounted_operators
    assert count.reason.startswith("a lower bound") and "aten._softmax" in count.reason


def test_what_a_first_call_builds_is_not_counted_as_one_call_s_work():
    m, n, k = 16, 12, 8
    built = {}

    def reference(a, out):
        if "weight" not in built:  # a first call builds and initialises what later calls reuse
            built["weight"] = torch.randn(k, n)
            torch.mm(torch.randn(m, k), built["weight"])  # and runs a forward to find shapes
        out.copy_(a @ built["weight"])

    count = roofline.count_flops(reference, {"a": torch.randn(m, k), "out": torch.empty(m, n)})
    assert count.flops == 2 * m * n * k and count.complete and count.uncounted_operators == []


def test_reference_that_only_copies_has_no_flop_count():
    count = roofline.count_flops(lambda x: x.clone(), {"x": torch.randn(10)})
    assert count.flops is None and count.uncounted_operators == []
    assert "counted no FLOPs" in count.reason
