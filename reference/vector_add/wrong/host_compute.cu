// WRONG (no GPU work): copies the inputs to the host, adds there, and copies the sum back.
// Right values without a single kernel: everything is ordered on the given stream, and
// cudaStreamSynchronize makes the host wait for the inputs. What must report it:
// - correctness_check on a GPU: FAIL (exit 1), "launched no GPU kernel during the call: it only
//   made copies (... Memcpy DtoH ..., ... Memcpy HtoD ...)";
// - without a GPU: compiled only, exit 4.
#include <cuda_runtime.h>
#include <vector>

extern "C" void solve(const float* __restrict__ x, const float* __restrict__ y, float* out, int n,
                      cudaStream_t stream) {
    std::vector<float> host_x(n), host_y(n);
    cudaMemcpyAsync(host_x.data(), x, sizeof(float) * n, cudaMemcpyDeviceToHost, stream);
    cudaMemcpyAsync(host_y.data(), y, sizeof(float) * n, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    for (int i = 0; i < n; ++i) host_x[i] += host_y[i];
    cudaMemcpyAsync(out, host_x.data(), sizeof(float) * n, cudaMemcpyHostToDevice, stream);
    cudaStreamSynchronize(stream);  // host_x goes out of scope: the copy must finish first
}
