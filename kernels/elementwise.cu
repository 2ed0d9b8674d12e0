// Element-wise kernels used by the training run and the lessons' examples:
// fill, bias add, ReLU and its backward pass, in FP32 and BF16.
#include "common.cuh"

extern "C" __global__ void fill_f32(float* x, unsigned long long n, float value) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        x[i] = value;
    }
}

// y[row, col] += bias[col] for a row-major (rows, cols) matrix.
extern "C" __global__ void add_bias_f32(float* y, const float* bias, unsigned long long rows, unsigned long long cols) {
    unsigned long long n = rows * cols;
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        y[i] += bias[i % cols];
    }
}

// a[row, col] = max(z[row, col] + bias[col], 0): the bias add and the ReLU in one pass
// (what cuBLASLt's RELU_BIAS epilogue does after a GEMM), reading z once and writing
// only a. The backward pass takes its mask from a (a > 0 exactly where z + bias > 0).
extern "C" __global__ void bias_relu_f32(const float* z, const float* bias, float* a,
                                         unsigned long long rows, unsigned long long cols) {
    unsigned long long n = rows * cols;
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        a[i] = fmaxf(z[i] + bias[i % cols], 0.0f);
    }
}

// The same on BF16 activations (mixed precision): z from a BF16 GEMM, the bias added in
// FP32, the result rounded to BF16 as autocast's BF16 ReLU output is.
extern "C" __global__ void bias_relu_bf16(const __nv_bfloat16* z, const float* bias, __nv_bfloat16* a,
                                          unsigned long long rows, unsigned long long cols) {
    unsigned long long n = rows * cols;
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        a[i] = __float2bfloat16(fmaxf(__bfloat162float(z[i]) + bias[i % cols], 0.0f));
    }
}

// The ReLU's backward pass fused with stage 1 of its bias gradient (cuBLASLt's
// DRELU_BGRAD epilogue does the same): dz = da where a > 0, else 0, written out for the
// weight gradient's GEMM, and summed per chunk of `chunk_rows` rows into
// partial[k, col] as column_partial_sums_f32 would, without reading dz again.
extern "C" __global__ void relu_backward_partials_f32(const float* a, const float* da, float* dz,
                                                      float* partial, unsigned long long rows,
                                                      unsigned long long cols,
                                                      unsigned long long chunk_rows) {
    const unsigned long long chunks = (rows + chunk_rows - 1) / chunk_rows;
    for (unsigned long long k = blockIdx.y; k < chunks; k += gridDim.y) {
        const unsigned long long first = k * chunk_rows;
        const unsigned long long last = first + chunk_rows < rows ? first + chunk_rows : rows;
        for (unsigned long long c = global_index(); c < cols; c += grid_stride()) {
            float s = 0.0f;
            for (unsigned long long r = first; r < last; ++r) {
                const unsigned long long i = r * cols + c;
                const float g = a[i] > 0.0f ? da[i] : 0.0f;
                dz[i] = g;
                s += g;
            }
            partial[k * cols + c] = s;
        }
    }
}

// The same on BF16 activations and gradients; the partial sums are FP32.
extern "C" __global__ void relu_backward_partials_bf16(const __nv_bfloat16* a, const __nv_bfloat16* da,
                                                       __nv_bfloat16* dz, float* partial,
                                                       unsigned long long rows, unsigned long long cols,
                                                       unsigned long long chunk_rows) {
    const unsigned long long chunks = (rows + chunk_rows - 1) / chunk_rows;
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    for (unsigned long long k = blockIdx.y; k < chunks; k += gridDim.y) {
        const unsigned long long first = k * chunk_rows;
        const unsigned long long last = first + chunk_rows < rows ? first + chunk_rows : rows;
        for (unsigned long long c = global_index(); c < cols; c += grid_stride()) {
            float s = 0.0f;
            for (unsigned long long r = first; r < last; ++r) {
                const unsigned long long i = r * cols + c;
                const __nv_bfloat16 g = __hgt(a[i], zero) ? da[i] : zero;
                dz[i] = g;
                s += __bfloat162float(g);
            }
            partial[k * cols + c] = s;
        }
    }
}

extern "C" __global__ void relu_f32(const float* x, float* y, unsigned long long n) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        y[i] = fmaxf(x[i], 0.0f);
    }
}

extern "C" __global__ void relu_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, unsigned long long n) {
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        y[i] = __hgt(x[i], zero) ? x[i] : zero;
    }
}

// grad_in = grad_out where the forward input was positive, else 0.
extern "C" __global__ void relu_backward_f32(const float* x, const float* grad_out, float* grad_in, unsigned long long n) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        grad_in[i] = x[i] > 0.0f ? grad_out[i] : 0.0f;
    }
}

extern "C" __global__ void f32_to_bf16(const float* x, __nv_bfloat16* y, unsigned long long n) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        y[i] = __float2bfloat16(x[i]);
    }
}

// y = x rounded to BF16 and widened back to FP32: the values a BF16 tensor holds,
// kept in FP32 buffers for the FP32 backward GEMMs of the mixed-precision step.
extern "C" __global__ void round_bf16_f32(const float* x, float* y, unsigned long long n) {
    for (unsigned long long i = global_index(); i < n; i += grid_stride()) {
        y[i] = __bfloat162float(__float2bfloat16(x[i]));
    }
}
