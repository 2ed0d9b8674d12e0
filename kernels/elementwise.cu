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
