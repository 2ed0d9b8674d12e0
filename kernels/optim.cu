// Optimiser updates for the training run, on FP32 master weights.
#include "common.cuh"

// p -= lr · g
extern "C" __global__ void sgd_f32(float* p, const float* g, float lr, unsigned long long n) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        p[i] -= lr * g[i];
    }
}

// Adam (Kingma & Ba) with bias correction: c1 = 1 − β1^t, c2 = 1 − β2^t.
extern "C" __global__ void adam_f32(float* p, const float* g, float* m, float* v,
                                    float lr, float beta1, float beta2, float eps,
                                    float c1, float c2, unsigned long long n) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        const float gi = g[i];
        m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
        v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
    }
}
