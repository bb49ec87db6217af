"""v0 (first working version): one float per thread, scalar 32-bit loads/stores."""
import torch
from _common import build, ModelBase

CU = r"""
cudaError_t v0_launch(const float* x, float* y, int64_t n, cudaStream_t s) {
    launch_scalar(x, y, n, s);
    return cudaGetLastError();
}
"""
CPP = r"""
cudaError_t v0_launch(const float* x, float* y, int64_t n, cudaStream_t s);
torch::Tensor softsign_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = prep_out(xc);
    check_launch(v0_launch(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(),
                           c10::cuda::getCurrentCUDAStream().stream()));
    return y;
}
"""

_ext = None
def ext():
    global _ext
    if _ext is None:
        _ext = build("softsign_v0_scalar", CU, CPP)
    return _ext


class ModelNew(ModelBase):
    EXT = staticmethod(ext)
