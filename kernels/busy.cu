// A calibrated amount of GPU work for the timing-trap experiment: each thread runs
// `iterations` dependent fused multiply-adds, so run time grows linearly with
// `iterations` and the compiler cannot skip the loop (the result is stored).
#include "common.cuh"

extern "C" __global__ void busy_f32(float* out, unsigned long long n, unsigned int iterations) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        float x = (float)(i & 1023) * 1e-3f;
        for (unsigned int k = 0; k < iterations; ++k) {
            x = fmaf(x, 0.999999f, 1e-6f);
        }
        out[i] = x;
    }
}
