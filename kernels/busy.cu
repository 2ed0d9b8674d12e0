// A calibrated amount of GPU work that transforms its data in place: each thread runs
// `iterations` dependent fused multiply-adds on every element it owns, starting from
// the element's value, so run time grows linearly with `iterations`, the compiler
// cannot skip the loop, and the result depends on the input: in the streams
// experiment a lost or misordered copy changes the output (cpu::busy_from is the same
// loop on the CPU).
#include "common.cuh"

extern "C" __global__ void busy_f32(float* data, unsigned long long n, unsigned int iterations) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        float x = data[i];
        for (unsigned int k = 0; k < iterations; ++k) {
            x = fmaf(x, 0.999999f, 1e-6f);
        }
        data[i] = x;
    }
}
