//! Comparing a kernel's output with its reference, element by element, in units in
//! the last place (ULP) of FP32: 0 ULP is bit-exact.

use half::bf16;

/// How many FP32 values lie between `a` and `b`. Equal values are 0 apart, +0 and −0
/// included (which zero `max(−0, +0)` returns is unspecified, in C and in Rust alike);
/// two NaNs are 0 apart (the GPU's canonical NaN and the `half` crate's, which keeps
/// the payload, differ in bits and in nothing else); a NaN and a number are infinitely
/// far apart.
pub(super) fn ulps(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if a == b {
        return 0;
    }
    // FP32 bit patterns in numeric order: negatives mirrored below zero.
    let key = |x: f32| {
        let bits = x.to_bits() as i32;
        i64::from(if bits < 0 { i32::MIN - bits } else { bits })
    };
    (key(a) - key(b)).unsigned_abs()
}

/// Asserts `got` and `want` have the same length and every pair lies within
/// `max_ulps`, naming the first pair that does not and how many more there are.
pub(super) fn assert_within_ulps(what: &str, got: &[f32], want: &[f32], max_ulps: u64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| ulps(got[i], want[i]) > max_ulps)
        .collect();
    if let Some(&first) = bad.first() {
        panic!(
            "{what}: {} of {} elements differ by more than {max_ulps} ULP; first at [{first}]: kernel {:e} ({:#010x}), reference {:e} ({:#010x}), {} ULP apart",
            bad.len(),
            got.len(),
            got[first],
            got[first].to_bits(),
            want[first],
            want[first].to_bits(),
            ulps(got[first], want[first]),
        );
    }
}

/// Bit-exact comparison of FP32 values (up to the sign of zero and NaN payloads).
pub(super) fn assert_same(what: &str, got: &[f32], want: &[f32]) {
    assert_within_ulps(what, got, want, 0);
}

/// Bit-exact comparison of BF16 values, through their exact FP32 widening.
pub(super) fn assert_same_bf16(what: &str, got: &[bf16], want: &[bf16]) {
    let widen = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect::<Vec<_>>();
    assert_same(what, &widen(got), &widen(want));
}

#[test]
fn ulps_count_representable_values_between() {
    assert_eq!(ulps(1.0, 1.0), 0);
    assert_eq!(ulps(0.0, -0.0), 0);
    assert_eq!(ulps(1.0, f32::from_bits(1.0f32.to_bits() + 3)), 3);
    // Across zero: the smallest subnormals either side are two steps apart.
    assert_eq!(ulps(f32::from_bits(1), f32::from_bits(0x8000_0001)), 2);
    assert_eq!(ulps(f32::MAX, f32::INFINITY), 1);
    assert_eq!(ulps(f32::NAN, -f32::NAN), 0);
    assert_eq!(ulps(f32::NAN, 1.0), u64::MAX);
}
