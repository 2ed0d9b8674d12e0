// Software __half for the CPU emulation of kernels/*.cu (tests only), found first for
// `#include <cuda_fp16.h>` as cuda_bf16.h is. Conversions follow the GPU's
// cvt.rn.f16.f32: round to nearest, ties to even, including into and out of the
// subnormals; values from 65520 up round to infinity; every NaN becomes 0x7fff.
// No kernel uses __half yet; the harness's emulation_f16_round_trip checks these
// conversions against the `half` crate so the first one that does can rely on them.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

struct __half {
    uint16_t x;  // the bits, as CUDA's __half_raw holds them
};

inline float __half2float(__half h) {
    const uint32_t sign = uint32_t(h.x & 0x8000u) << 16;
    const uint32_t exponent = (h.x >> 10) & 0x1fu;
    const uint32_t fraction = h.x & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (fraction << 13);  // infinity, or NaN with its payload
    } else if (exponent == 0) {
        const float magnitude = std::ldexp(float(fraction), -24);  // zero or subnormal: exact
        return sign ? -magnitude : magnitude;
    } else {
        bits = sign | ((exponent + 127 - 15) << 23) | (fraction << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline __half __float2half(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return {0x7fff};
    if (magnitude >= 0x477ff000u) return {uint16_t(sign | 0x7c00u)};  // >= 65520: infinity
    const int exponent = int(magnitude >> 23) - 127;
    if (exponent < -25) return {sign};  // below 2^-25, half the smallest subnormal: zero
    // The 24-bit significand, shifted down to half's 11 (normal) or fewer (subnormal)
    // bits, then rounded to nearest, ties to even, on the bits shifted out.
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const int shift = exponent >= -14 ? 13 : 13 + (-14 - exponent);
    uint32_t kept = significand >> shift;
    const uint32_t dropped = significand & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (dropped > halfway || (dropped == halfway && (kept & 1u))) ++kept;
    // Normal: kept holds the implicit bit (0x400), which adds one to the biased
    // exponent (exponent + 14); a rounding carry moves into the exponent on its own.
    // Subnormal: kept is the whole encoding (0x400 after a carry: the smallest normal).
    const uint32_t encoded = exponent >= -14 ? (uint32_t(exponent + 14) << 10) + kept : kept;
    return {uint16_t(sign | encoded)};
}
