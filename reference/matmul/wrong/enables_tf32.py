"""WRONG (precision tampering): turns TF32 on for the whole process when it is loaded, then calls torch.matmul.

Setting `torch.backends.cuda.matmul.allow_tf32 = True` makes the solution's GEMM TF32 (about
3e-4 normwise error at K = 4096), and it would make the reference TF32 too, so the reference's
own error, and the error the checker allows, would grow to match. The harness fixes the
precision before loading a solution; what must report this one is the tampering check right
after loading it: correctness_check exit 3, kind `tampering`, "the solution changed
torch.backends.cuda.matmul.allow_tf32, torch.float32_matmul_precision (found after loading the
solution)", on a GPU and on the CPU alike (the setting exists in CPU builds too).
"""

import torch

torch.backends.cuda.matmul.allow_tf32 = True  # the cheat


def run_kernel(a, b, c, **_):
    torch.matmul(a, b, out=c)
