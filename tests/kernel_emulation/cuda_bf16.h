// Software __nv_bfloat16 for the CPU emulation of kernels/*.cu (tests only): found
// before any CUDA toolkit's header because the harness is compiled with -I on this
// folder, so `#include <cuda_bf16.h>` in kernels/common.cuh lands here. Conversions
// follow the GPU's cvt.rn.bf16.f32: round to nearest, ties to even; overflow rounds to
// infinity; subnormals are kept; every NaN becomes the canonical NaN 0x7fff.
#pragma once

#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
    uint16_t x;  // the bits, as CUDA's __nv_bfloat16_raw holds them
};

inline float __bfloat162float(__nv_bfloat16 h) {
    const uint32_t bits = uint32_t(h.x) << 16;  // exact: BF16 is FP32's upper half
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline __nv_bfloat16 __float2bfloat16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return {0x7fff};
    // Adding 0x7fff, plus 1 when the kept half is odd, carries into the kept half
    // exactly when the dropped half is above one half, or equal to it and the kept half
    // is odd: round to nearest, ties to even (a carry out of the largest finite value
    // gives infinity, as it should).
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return {uint16_t(bits >> 16)};
}

// a > b, ordered: false when either is NaN.
inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __bfloat162float(a) > __bfloat162float(b);
}
