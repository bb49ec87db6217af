"""SASS and resource parsing on recorded cuobjdump output, and on kernels nvcc compiles here."""

import json
import textwrap

import pytest

from kernel_opt.backends.cuda.static_analysis import analyze_cuda
from kernel_opt.backends.triton.compile_only import compile_triton_solution
from kernel_opt.backends.triton.static_analysis import analyze_triton
from kernel_opt.commands.static_analysis import main as static_analysis_main
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.sass import cuobjdump
from kernel_opt.sass.instruction_mix import access_width_bits, instruction_mix
from kernel_opt.sass.report import KernelStaticAnalysis, static_findings

# Recorded from cuobjdump 12.8 (the triton wheel's) on a library nvcc 13.0 built for sm_90;
# shortened. A library holds the same function once per embedded cubin: it must count once.
SASS_OUTPUT = """\
Fatbin elf code:
================
arch = sm_90
code version = [1,8]

	code for sm_90
		Function : _Z17vector_add_kernelPKfS0_Pfi
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
                                                                          /* 0x000fe20000000800 */
        /*0070*/               @P0 EXIT ;                                 /* 0x000000000000094d */
                                                                          /* 0x000fea0003800000 */
        /*00d0*/                   LDG.E.CONSTANT R3, desc[UR4][R2.64] ;  /* 0x0000000402037981 */
        /*00f0*/              @!P1 LDG.E.128 R4, desc[UR4][R4.64] ;       /* 0x0000000404047981 */
        /*0120*/                   FADD R9, R4, R3 ;                      /* 0x0000000304097221 */
        /*0130*/                   STG.E.64 desc[UR4][R6.64], R8 ;        /* 0x0000000806007986 */
        /*0140*/                   EXIT ;                                 /* 0x000000000000794d */
        /*0150*/                   BRA 0x150;                             /* 0xfffffffc00fc7947 */

Fatbin elf code:
================
arch = sm_90
		Function : _Z17vector_add_kernelPKfS0_Pfi
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
"""

RESOURCE_OUTPUT = """\
Resource usage:
 Common:
  GLOBAL:0
 Function _Z7k_localPKiPKfPf:
  REG:32 STACK:256 SHARED:0 LOCAL:0 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z5k_vecPK6float4PS_:
  REG:12 STACK:0 SHARED:4096 LOCAL:8 CONSTANT[0]:544 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_parse_sass_reads_opcodes_with_predicates_and_counts_a_function_once():
    (function,) = cuobjdump.parse_sass(SASS_OUTPUT)
    assert function.mangled_name == "_Z17vector_add_kernelPKfS0_Pfi" and function.arch == "sm_90"
    assert function.opcodes == ["LDC", "EXIT", "LDG.E.CONSTANT", "LDG.E.128", "FADD", "STG.E.64", "EXIT", "BRA"]


def test_parse_resource_usage():
    usage = cuobjdump.parse_resource_usage(RESOURCE_OUTPUT)
    assert usage["_Z7k_localPKiPKfPf"] == cuobjdump.ResourceUsage(32, 256, 0, 0, 552)
    assert usage["_Z5k_vecPK6float4PS_"] == cuobjdump.ResourceUsage(12, 0, 4096, 8, 544)


@pytest.mark.parametrize("opcode, bits", [("LDG.E.128", 128), ("LDG.E.128.CONSTANT", 128), ("STG.E.64", 64),
                                           ("LDG.E", 32), ("LDG.E.CONSTANT", 32), ("LDG.E.U8", 8), ("LDG.E.S16", 16),
                                           ("LDG.E.LTC128B.128", 128), ("LDG.E.EL.LTC128B", 32)])
def test_access_width(opcode, bits):
    assert access_width_bits(opcode) == bits


def test_instruction_mix_counts_what_matters():
    opcodes = ["LDG.E.128", "LDG.E.128", "LDG.E", "STG.E.128", "LDL", "STL", "STL", "LDS.128", "STS", "LDSM.16.M88.4",
               "STSM.16.M88.4", "LDGSTS.E.BYPASS.128", "UTMALDG.2D", "UTMASTG.2D", "UBLKCP.S.G", "HGMMA.64x128x16.F32",
               "HGMMA.64x128x16.F32", "HMMA.16816.F32", "QGMMA.64x64x32.F32.E4M3.E4M3", "BAR.SYNC.DEFER_BLOCKING",
               "SYNCS.ARRIVE.TRANS64.RED.A1T0", "WARPGROUP.ARRIVE", "ATOMG.E.ADD.F32", "RED.E.ADD", "FFMA", "FFMA"]
    mix = instruction_mix(opcodes)
    assert mix.total_instructions == len(opcodes)
    assert mix.global_loads_by_width_bits == {128: 2, 32: 1} and mix.global_stores_by_width_bits == {128: 1}
    assert (mix.global_loads, mix.global_stores) == (3, 1)
    assert (mix.local_loads, mix.local_stores, mix.shared_loads, mix.shared_stores) == (1, 2, 1, 1)
    assert (mix.shared_matrix_loads, mix.shared_matrix_stores) == (1, 1)
    assert (mix.async_copies, mix.tma_loads, mix.tma_stores, mix.bulk_copies) == (1, 1, 1, 1)
    assert mix.tensor_by_opcode == {"HGMMA": 2, "HMMA": 1, "QGMMA": 1}
    assert mix.barriers_by_opcode == {"BAR": 1, "SYNCS": 1, "WARPGROUP": 1}
    assert (mix.atomics, mix.ffma) == (2, 2)
    assert list(mix.opcode_counts)[:3] == ["LDG", "STL", "HGMMA"]


def analysis(opcodes, arch="sm_90", **resources):
    values = dict(registers_per_thread=32, shared_memory_per_block_bytes=0, stack_frame_bytes=0, spill_stores_bytes=0,
                  spill_loads_bytes=0, local_memory_bytes=0)
    values.update(resources)
    kernel = KernelStaticAnalysis(name="k", mangled_name="_Z1kv", arch=arch, mix=instruction_mix(opcodes),
                                       **values)
    return {finding.key: finding for finding in static_findings(kernel)}


def test_static_findings_name_the_strategy_and_carry_the_counts():
    scalar = analysis(["LDG.E", "LDG.E.CONSTANT", "STG.E.128"])
    assert scalar["scalar_global_loads"].evidence == {"global_loads_by_width_bits": {32: 2}}
    assert "scalar_global_stores" not in scalar
    assert "local_memory" in analysis(["LDG.E.128"], spill_stores_bytes=8)
    assert analysis(["LDL"])["local_memory"].evidence["local_loads"] == 1
    hopper = analysis(["HMMA.16816.F32"], arch="sm_90a")
    assert "hmma_on_hopper" in hopper and hopper["tensor_instructions"].text == "tensor instructions: HMMA x1"
    assert "hmma_on_hopper" not in analysis(["HMMA.16816.F32"], arch="sm_80")
    assert "hmma_on_hopper" not in analysis(["HMMA.16816.F32", "HGMMA.64x64x16.F32"])
    assert "async_copies" in analysis(["UTMALDG.2D"])
    assert analysis(["LDG.E.128", "STG.E.128"]) == {}


# --- real compiles (nvcc here, cuobjdump from the toolkit or the triton wheel) -----------------

TEST_KERNELS = textwrap.dedent("""\
    // Three kernels whose SASS is known: a run-time-indexed local array, float4 copies, one WMMA tile.
    #include <mma.h>
    __global__ void k_local(const int* idx, const float* x, float* out) {
        float buf[64];
        for (int i = 0; i < 64; ++i) buf[i] = 0.0f;
        for (int i = 0; i < 64; ++i) buf[idx[threadIdx.x * 64 + i] & 63] += x[threadIdx.x * 64 + i];
        float sum = 0.0f;
        for (int i = 0; i < 64; ++i) sum += buf[i] * i;
        out[threadIdx.x] = sum;
    }
    __global__ void k_vec(const float4* x, float4* out) { out[threadIdx.x] = x[threadIdx.x]; }
    __global__ void k_wmma(const half* a, const half* b, float* c) {
        using namespace nvcuda;
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
        wmma::fill_fragment(fc, 0.0f);
        wmma::load_matrix_sync(fa, a, 16);
        wmma::load_matrix_sync(fb, b, 16);
        wmma::mma_sync(fc, fa, fb, fc);
        wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
    }
""")


def needs_cuobjdump():
    try:
        cuobjdump.find_cuobjdump()
    except EnvironmentFault as error:  # no cuobjdump here: skip, the message says what is missing
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def compiled_test_kernels(tmp_path_factory):
    needs_cuobjdump()
    folder = tmp_path_factory.mktemp("sass")
    source = folder / "test_kernels.cu"
    source.write_text(TEST_KERNELS)
    report = analyze_cuda(source, folder / "build", "sm_90")
    return {kernel.name.split("(")[0]: kernel for kernel in report.kernels}


@pytest.fixture(scope="module")
def vector_add_dir(tmp_path_factory):
    """One output folder for the vector_add tests: the CLI reuses the build the first test made."""
    return tmp_path_factory.mktemp("vector_add")


@pytest.mark.slow
@pytest.mark.nvcc
def test_vector_add_has_scalar_loads_and_stores(reference_dir, vector_add_dir):
    needs_cuobjdump()
    report = analyze_cuda(reference_dir / "vector_add" / "good" / "vector_add.cu", vector_add_dir / "build", "sm_90")
    (kernel,) = report.kernels
    assert kernel.mangled_name == "_Z17vector_add_kernelPKfS0_Pfi" and kernel.arch == "sm_90"
    assert kernel.mix.global_loads_by_width_bits == {32: 2} and kernel.mix.global_stores_by_width_bits == {32: 1}
    assert kernel.registers_per_thread > 0 and kernel.spill_stores_bytes == 0 and kernel.mix.local_loads == 0
    assert {f.key for f in kernel.findings} == {"scalar_global_loads", "scalar_global_stores"}
    assert "-gencode=arch=compute_90,code=sm_90" in report.compiler and "cuobjdump" in report.disassembler


@pytest.mark.nvcc
def test_a_runtime_indexed_local_array_shows_ldl_stl_and_a_stack_frame(compiled_test_kernels):
    kernel = compiled_test_kernels["k_local"]
    assert kernel.mix.local_loads > 0 and kernel.mix.local_stores > 0
    assert kernel.stack_frame_bytes == 256  # 64 floats
    assert "local_memory" in {f.key for f in kernel.findings}


@pytest.mark.nvcc
def test_float4_copies_are_16_byte_loads_and_stores(compiled_test_kernels):
    kernel = compiled_test_kernels["k_vec"]
    assert kernel.mix.global_loads_by_width_bits == {128: 1} and kernel.mix.global_stores_by_width_bits == {128: 1}
    assert kernel.findings == []


@pytest.mark.nvcc
def test_wmma_on_sm_90_is_hmma_not_hgmma(compiled_test_kernels):
    kernel = compiled_test_kernels["k_wmma"]
    assert kernel.mix.tensor_by_opcode.get("HMMA", 0) >= 1 and "HGMMA" not in kernel.mix.tensor_by_opcode
    assert "hmma_on_hopper" in {f.key for f in kernel.findings}


def test_triton_kernel_compiles_for_sm_90_without_a_gpu(reference_dir, tmp_path):
    """Triton specialises on 16-byte-aligned pointers and emits 16-byte loads, GPU or not."""
    pytest.importorskip("triton")
    needs_cuobjdump()
    problem = reference_dir / "vector_add"
    report = analyze_triton(problem / "good" / "vector_add.py", problem / "ref.py", {"n": 4096}, tmp_path, "sm_90")
    (kernel,) = report.kernels
    assert kernel.name == "vector_add_kernel" and kernel.arch == "sm_90"
    assert kernel.mix.global_loads_by_width_bits == {128: 4} and kernel.mix.global_stores_by_width_bits == {128: 2}
    assert kernel.variant == "num_warps=4, num_stages=3, BLOCK=1024"
    assert kernel.registers_per_thread > 0 and kernel.local_memory_bytes == 0 and kernel.spill_stores_bytes is None
    assert report.backend == "triton" and "without a GPU" in report.compiler


AUTOTUNED_TRITON = textwrap.dedent("""\
    import torch
    import triton
    import triton.language as tl


    @triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4)],
                     key=["n"])
    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, 2.0 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


    def setup(seed=0, device="cuda", n=4096):
        x = torch.randn(n, device=device)
        return {"inputs": {"x": x, "out": torch.empty_like(x), "n": n}, "outputs": ["out"]}


    def run_kernel(x, out, n, **_):
        scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
""")


def test_an_autotuned_triton_kernel_compiles_every_config(tmp_path):
    """Without a GPU nothing can be timed, so every config the autotuner would try is analysed."""
    pytest.importorskip("triton")
    needs_cuobjdump()
    solution = tmp_path / "tuned.py"
    solution.write_text(AUTOTUNED_TRITON)
    report = analyze_triton(solution, None, {}, tmp_path / "build", "sm_90")
    assert [(k.name, k.variant) for k in report.kernels] == [
        ("scale_kernel", "num_warps=2, num_stages=3, BLOCK=256"),
        ("scale_kernel", "num_warps=4, num_stages=3, BLOCK=1024"),
    ]
    assert [k.mix.global_loads_by_width_bits for k in report.kernels] == [{128: 1}, {128: 2}]


TWO_KERNELS_SECOND_BROKEN = textwrap.dedent("""\
    import torch
    import triton
    import triton.language as tl

    SCALE = 2.0  # a plain global: the interpreter reads it, the compiler refuses it


    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


    @triton.jit
    def scale_kernel(out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(out_ptr + offsets, mask=offsets < n) * SCALE, mask=offsets < n)


    def setup(seed=0, device="cuda", n=4096):
        x = torch.randn(n, device=device)
        return {"inputs": {"x": x, "out": torch.empty_like(x), "n": n}, "outputs": ["out"]}


    def run_kernel(x, out, n, **_):
        copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        scale_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
""")


def test_a_compile_error_in_a_later_kernel_is_not_hidden_by_an_earlier_one(tmp_path):
    pytest.importorskip("triton")
    from kernel_opt.core.errors import SolutionError

    solution = tmp_path / "two.py"
    solution.write_text(TWO_KERNELS_SECOND_BROKEN)
    with pytest.raises(SolutionError, match="the Triton kernel failed to compile") as caught:
        compile_triton_solution(solution, None, {}, "sm_90")
    assert caught.value.kind == "compile_error" and "SCALE" in caught.value.message


def test_triton_static_analysis_needs_inputs(reference_dir, tmp_path):
    pytest.importorskip("triton")
    from kernel_opt.core.errors import UsageError

    with pytest.raises(UsageError, match="setup"):
        compile_triton_solution(reference_dir / "vector_add" / "good" / "vector_add.py", None, {}, "sm_90")


@pytest.mark.nvcc
def test_static_analysis_cli_writes_both_reports(reference_dir, vector_add_dir, capsys):
    needs_cuobjdump()
    tmp_path = vector_add_dir
    code = static_analysis_main([str(reference_dir / "vector_add" / "good" / "vector_add.cu"), "--output-dir",
                                 str(tmp_path), "--arch", "sm_90", "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((tmp_path / "static_analysis.json").read_text())
    assert printed["kernels"] == saved["kernels"] and saved["arch"] == "sm_90"
    assert saved["kernels"][0]["mix"]["global_loads"] == 2
    markdown = (tmp_path / "static_analysis.md").read_text()
    assert "2 x 32-bit" in markdown and "scalar_global_loads" in markdown


def test_static_analysis_cli_usage_errors(tmp_path):
    assert static_analysis_main([str(tmp_path / "missing.cu"), "--output-dir", str(tmp_path)]) == 2
    solution = tmp_path / "k.txt"
    solution.write_text("")
    assert static_analysis_main([str(solution), "--output-dir", str(tmp_path)]) == 2  # unknown backend


def test_a_kernel_that_reads_global_memory_only_by_asynchronous_copies_says_so_beside_its_ldg_count():
    from kernel_opt.profile.static_analysis import _global_loads
    from kernel_opt.sass.instruction_mix import InstructionMix

    assert _global_loads(InstructionMix(async_copies=24)) == "none (global reads by 24 asynchronous copies)"
    assert _global_loads(InstructionMix(tma_loads=2, bulk_copies=1)) == "none (global reads by 3 asynchronous copies)"
    assert _global_loads(InstructionMix(global_loads_by_width_bits={128: 8}, async_copies=4)) == "8 x 128-bit"
    assert _global_loads(InstructionMix()) == "none"
