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

// FP32 or BF16 activations read as FP32, and FP32 results stored in either (rounded to
// nearest even for BF16), so one template serves both element types below.
__device__ __forceinline__ float widen(float v) { return v; }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void store(float* at, float v) { *at = v; }
__device__ __forceinline__ void store(__nv_bfloat16* at, float v) { *at = __float2bfloat16(v); }
// The ReLU's gradient: `grad` where the activation is positive, else 0 (a BF16 value
// stays BF16: nothing is rounded).
__device__ __forceinline__ float masked(float act, float grad) { return act > 0.0f ? grad : 0.0f; }
__device__ __forceinline__ __nv_bfloat16 masked(__nv_bfloat16 act, __nv_bfloat16 grad) {
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    return __hgt(act, zero) ? grad : zero;
}

// a[row, col] = max(z[row, col] + bias[col], 0): the bias add and the ReLU in one pass
// (what cuBLASLt's RELU_BIAS epilogue does after a GEMM), reading z once and writing
// only a; the backward pass takes its mask from a (a > 0 exactly where z + bias > 0).
// Each thread takes two adjacent columns (a warp spans 64 columns: whole 128-byte lines
// of BF16) and a stride of rows down a 2-D grid, so the bias is loaded once per thread
// and no element needs a division to find its column. `__restrict__`: z and a never
// overlap, so the compiler may keep several rows' loads in flight.
template <class T>
__device__ __forceinline__ void bias_relu(const T* __restrict__ z, const float* __restrict__ bias,
                                          T* __restrict__ a, unsigned long long rows,
                                          unsigned long long cols) {
    for (unsigned long long c = 2 * global_index(); c < cols; c += 2 * grid_stride()) {
        const bool pair = c + 1 < cols;
        const float b0 = bias[c];
        const float b1 = pair ? bias[c + 1] : 0.0f;
        for (unsigned long long r = blockIdx.y; r < rows; r += gridDim.y) {
            const unsigned long long i = r * cols + c;
            store(a + i, fmaxf(widen(z[i]) + b0, 0.0f));
            if (pair) store(a + i + 1, fmaxf(widen(z[i + 1]) + b1, 0.0f));
        }
    }
}

extern "C" __global__ void bias_relu_f32(const float* z, const float* bias, float* a,
                                         unsigned long long rows, unsigned long long cols) {
    bias_relu(z, bias, a, rows, cols);
}

// The same on BF16 activations (mixed precision): z from a BF16 GEMM, the bias added in
// FP32, the result rounded to BF16 as autocast's BF16 ReLU output is.
extern "C" __global__ void bias_relu_bf16(const __nv_bfloat16* z, const float* bias, __nv_bfloat16* a,
                                          unsigned long long rows, unsigned long long cols) {
    bias_relu(z, bias, a, rows, cols);
}

// The ReLU's backward pass fused with stage 1 of its bias gradient (cuBLASLt's
// DRELU_BGRAD epilogue does the same): dz = da where a > 0, else 0, written out for the
// weight gradient's GEMM, and summed per chunk of `chunk_rows` rows into
// partial[k, col] as column_partial_sums_f32 would, without reading dz again. Two
// adjacent columns per thread, chunks down the grid's y, as bias_relu.
template <class T>
__device__ __forceinline__ void relu_backward_partials(const T* __restrict__ a, const T* __restrict__ da,
                                                       T* __restrict__ dz, float* __restrict__ partial,
                                                       unsigned long long rows, unsigned long long cols,
                                                       unsigned long long chunk_rows) {
    const unsigned long long chunks = chunk_count(rows, chunk_rows);
    for (unsigned long long k = blockIdx.y; k < chunks; k += gridDim.y) {
        const unsigned long long first = k * chunk_rows, last = chunk_end(k, rows, chunk_rows);
        for (unsigned long long c = 2 * global_index(); c < cols; c += 2 * grid_stride()) {
            const bool pair = c + 1 < cols;
            float s0 = 0.0f, s1 = 0.0f;
            for (unsigned long long r = first; r < last; ++r) {
                const unsigned long long i = r * cols + c;
                const T g0 = masked(a[i], da[i]);
                dz[i] = g0;
                s0 += widen(g0);
                if (pair) {
                    const T g1 = masked(a[i + 1], da[i + 1]);
                    dz[i + 1] = g1;
                    s1 += widen(g1);
                }
            }
            partial[k * cols + c] = s0;
            if (pair) partial[k * cols + c + 1] = s1;
        }
    }
}

extern "C" __global__ void relu_backward_partials_f32(const float* a, const float* da, float* dz,
                                                      float* partial, unsigned long long rows,
                                                      unsigned long long cols,
                                                      unsigned long long chunk_rows) {
    relu_backward_partials(a, da, dz, partial, rows, cols, chunk_rows);
}

// The same on BF16 activations and gradients; the partial sums are FP32.
extern "C" __global__ void relu_backward_partials_bf16(const __nv_bfloat16* a, const __nv_bfloat16* da,
                                                       __nv_bfloat16* dz, float* partial,
                                                       unsigned long long rows, unsigned long long cols,
                                                       unsigned long long chunk_rows) {
    relu_backward_partials(a, da, dz, partial, rows, cols, chunk_rows);
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
