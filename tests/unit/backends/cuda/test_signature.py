"""The solve() signature parser over signatures people really write."""

import pytest

from kernel_opt.backends.cuda.signature import parse_solve_signature, strip_comments
from kernel_opt.core.errors import SolutionError


def described(source: str) -> list[str]:
    return [p.describe() for p in parse_solve_signature(source).parameters]


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            'extern "C" void solve(float* in0, float* in1, float* out, int n) { }',
            ["float* in0", "float* in1", "float* out", "int n"],
        ),
        (
            'extern "C" void solve(const float* __restrict__ x, const float *__restrict__ y, float *out, int64_t n) {}',
            ["const float* x", "const float* y", "float* out", "int64_t n"],
        ),
        (
            'extern "C" void solve(const __half* a, half *b, __nv_bfloat16* c, nv_bfloat16 *d, double* e, '
            'int64_t* idx) {}',
            ["const __half* a", "half* b", "__nv_bfloat16* c", "nv_bfloat16* d", "double* e", "int64_t* idx"],
        ),
        (
            'extern "C" void solve(const float* input, float* output, int N, int D, float eps, cudaStream_t stream) {}',
            ["const float* input", "float* output", "int N", "int D", "float eps", "cudaStream_t stream"],
        ),
        (
            """
            // the entry point
            extern "C"
            void solve(
                const float4* __restrict__ src,   /* vectorised input */
                float* dst,                       // output
                size_t count,
                unsigned int flags
            )
            {
            }
            """,
            ["const float4* src", "float* dst", "size_t count", "unsigned int flags"],
        ),
        (
            'extern "C" { void solve(float const* x, float* y, long long n) { } }',
            ["const float* x", "float* y", "long long n"],
        ),
        (  # a declaration before the definition, and a device function named solve_helper
            'extern "C" void solve(float* x, int n);\n__device__ float solve_helper(float v) { return v; }\n'
            'extern "C" void solve(float* x, int n) { }',
            ["float* x", "int n"],
        ),
        ('extern "C" void solve(float x[], bool flag) {}', ["float* x", "bool flag"]),
    ],
)
def test_parses_real_signatures(source, expected):
    assert described(source) == expected


def test_dtypes_and_vector_widths():
    signature = parse_solve_signature(
        'extern "C" void solve(const float4* a, __half2* b, __nv_bfloat16* c, int* d, int n, double s, '
        'cudaStream_t st) {}'
    )
    by_name = {p.name: p for p in signature.parameters}
    assert (by_name["a"].dtype, by_name["a"].vector_width, by_name["a"].is_const) == ("float32", 4, True)
    assert (by_name["b"].dtype, by_name["b"].vector_width) == ("float16", 2)
    assert by_name["c"].dtype == "bfloat16"
    assert by_name["d"].dtype == "int32"
    assert (by_name["n"].is_pointer, by_name["n"].dtype) == (False, "int")
    assert by_name["s"].dtype == "float"
    assert by_name["st"].is_stream and signature.takes_stream
    assert [p.name for p in signature.pointers] == ["a", "b", "c", "d"]
    assert [p.name for p in signature.scalars] == ["n", "s"]


def test_commented_out_solve_is_ignored():
    source = ('// extern "C" void solve(double* x) {}\n/* extern "C" void solve(int* y) {} */\n'
              'extern "C" void solve(float* z) {}')
    assert described(source) == ["float* z"]


def test_strip_comments_keeps_strings():
    assert strip_comments('extern "C" // note\nvoid f(); /* a\nb */ int x;').count("\n") == 2
    assert 'extern "C"' in strip_comments('extern "C" void solve(); // "C"')


@pytest.mark.parametrize(
    "source, kind, fragment",
    [
        ("__global__ void kernel(float* x) {}", "missing_symbol", 'no `extern "C" void solve'),
        ("void solve(float* x, int n) {}", "missing_symbol", "not as extern"),
        ('extern "C" void solve(float** x) {}', "signature_mismatch", "pointer to pointer"),
        ('extern "C" void solve(MyStruct* x) {}', "signature_mismatch", "cannot bind"),
        ('extern "C" void solve(float* x, std::string name) {}', "signature_mismatch", "cannot bind"),
        ('extern "C" void solve(float* x, int& n) {}', "signature_mismatch", "reference"),
        ('extern "C" void solve(float*, int n) {}', "signature_mismatch", "no name"),
        ('extern "C" void solve(cudaStream_t s, float* x) {}', "signature_mismatch", "last one"),
        ('extern "C" void solve(float* x, float* x) {}', "signature_mismatch", "duplicate"),
    ],
)
def test_rejects_unbindable_signatures(source, kind, fragment):
    with pytest.raises(SolutionError) as caught:
        parse_solve_signature(source)
    assert caught.value.kind == kind
    assert fragment in caught.value.message
    assert caught.value.exit_code == 3


def test_empty_parameter_list():
    assert parse_solve_signature('extern "C" void solve(void) {}').parameters == ()
