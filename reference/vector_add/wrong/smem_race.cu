// WRONG (shared-memory race): each warp stages its sums in shared memory and every lane then
// writes its neighbour's element (lane ^ 1) from there, with no __syncwarp() between the write
// and the read. Correct while a warp runs in lockstep, as it does here, so the plain check
// passes (exit 0); under independent thread scheduling (sm_70 and later) nothing orders the
// neighbour's write before the read. compute-sanitizer racecheck must report the race between
// the write at smem_race.cu:19 and the read at smem_race.cu:22 (exit 3 with --sanitize racecheck).
#include <cuda_runtime.h>

constexpr int kThreads = 256;

__global__ void vector_add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                  float* __restrict__ out, int n) {
    // volatile: the read stays after the write, as in the source; the race is the missing
    // __syncwarp(), not a reordering by the compiler
    __shared__ volatile float staged[kThreads];
    const int t = threadIdx.x;
    const int base = blockIdx.x * blockDim.x;
    const int i = base + t;
    staged[t] = i < n ? x[i] + y[i] : 0.0f;
    const int partner = t ^ 1;  // the bug: a __syncwarp() belongs here
    if (base + partner < n) {
        out[base + partner] = staged[partner];
    }
}

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    vector_add_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(x, y, out, n);
}
