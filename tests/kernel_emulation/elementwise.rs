//! `kernels/elementwise.cu` on the emulator against the CPU training step's own
//! functions (`experiments::training::ops`) and the `half` crate's BF16 conversion
//! that every CPU path uses. All bit-exact: each kernel performs the reference's
//! operations (a comparison, a max, one addition, one rounding) on the same values.
//! Output buffers start as NaN, so an element a kernel skips cannot pass.

use gpulab::experiments::training::ops;
use gpulab::gpu::launch::LaunchShape;
use half::{bf16, f16};

use super::compare::{assert_same, assert_same_bf16};
use super::emulator::{Arg, launch};
use super::inputs::{LENGTHS, any_floats, launches, values};

/// Runs an element-wise `kernel(const In* x, Out* y, u64 n)` over `x` at every launch
/// its launcher would use for `x.len()`, calling `check` with each output and a label.
fn each_launch(kernel: &str, x: Arg, poison: Arg, n: usize, check: impl Fn(&str, &Arg)) {
    for (config, order) in launches(LaunchShape::Elementwise { n }) {
        let out = launch(
            kernel,
            config,
            order,
            vec![x.clone(), poison.clone(), Arg::U64(n as u64)],
        );
        let label = format!(
            "{kernel}, n = {n}, grid {:?} × block {:?}, {order:?}",
            config.grid_dim, config.block_dim
        );
        check(&label, &out[1]);
    }
}

#[test]
fn relu_f32_is_the_cpu_relu() {
    for n in LENGTHS {
        let x = values(n, 1, 4.0);
        let want = ops::relu(&x);
        each_launch(
            "relu_f32",
            Arg::F32s(x),
            Arg::F32s(vec![f32::NAN; n]),
            n,
            |what, y| assert_same(what, y.f32s(), &want),
        );
    }
}

#[test]
fn relu_bf16_is_the_cpu_relu_on_bf16_values() {
    for n in LENGTHS {
        let x: Vec<bf16> = any_floats(n, 2).into_iter().map(bf16::from_f32).collect();
        let widened: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
        // ReLU of a BF16 value is a BF16 value: the FP32 reference narrows exactly.
        let want: Vec<bf16> = ops::relu(&widened)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        each_launch(
            "relu_bf16",
            Arg::Bf16s(x),
            Arg::Bf16s(vec![bf16::NAN; n]),
            n,
            |what, y| assert_same_bf16(what, y.bf16s(), &want),
        );
    }
}

#[test]
fn f32_to_bf16_rounds_as_the_cpu_does() {
    for n in LENGTHS {
        let x = any_floats(n, 3);
        let want: Vec<bf16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
        each_launch(
            "f32_to_bf16",
            Arg::F32s(x),
            Arg::Bf16s(vec![bf16::NAN; n]),
            n,
            |what, y| assert_same_bf16(what, y.bf16s(), &want),
        );
    }
}

#[test]
fn round_bf16_f32_is_the_cpu_rounding() {
    for n in LENGTHS {
        let x = any_floats(n, 4);
        let want = ops::round_bf16(&x);
        each_launch(
            "round_bf16_f32",
            Arg::F32s(x),
            Arg::F32s(vec![f32::NAN; n]),
            n,
            |what, y| assert_same(what, y.f32s(), &want),
        );
    }
}

/// Not a course kernel: the emulation's own `__half` conversions (no kernel uses FP16
/// yet) against the `half` crate, so the first kernel that does can trust them.
#[test]
fn the_emulated_half_rounds_as_the_half_crate_does() {
    for n in LENGTHS {
        let x = any_floats(n, 5);
        let want: Vec<f32> = x.iter().map(|v| f16::from_f32(*v).to_f32()).collect();
        each_launch(
            "emulation_f16_round_trip",
            Arg::F32s(x),
            Arg::F32s(vec![f32::NAN; n]),
            n,
            |what, y| assert_same(what, y.f32s(), &want),
        );
    }
}

#[test]
fn relu_backward_f32_is_the_cpu_relu_gradient() {
    for n in LENGTHS {
        let (x, grad_out) = (values(n, 6, 2.0), values(n, 7, 1.0));
        let want = ops::relu_backward(&x, &grad_out);
        for (config, order) in launches(LaunchShape::Elementwise { n }) {
            let args = vec![
                Arg::F32s(x.clone()),
                Arg::F32s(grad_out.clone()),
                Arg::F32s(vec![f32::NAN; n]),
                Arg::U64(n as u64),
            ];
            let out = launch("relu_backward_f32", config, order, args);
            let what = format!("relu_backward_f32, n = {n}, {order:?}");
            assert_same(&what, out[2].f32s(), &want);
        }
    }
}

#[test]
fn add_bias_f32_is_the_cpu_bias_add() {
    // Column counts below, at and past a block, and not multiples of anything.
    for (rows, cols) in [(1, 1), (3, 31), (64, 33), (5, 1025), (1025, 3)] {
        let (y, bias) = (values(rows * cols, 8, 3.0), values(cols, 9, 1.0));
        let mut want = y.clone();
        ops::add_bias(&mut want, &bias);
        for (config, order) in launches(LaunchShape::AddBias { rows, cols }) {
            let args = vec![
                Arg::F32s(y.clone()),
                Arg::F32s(bias.clone()),
                Arg::U64(rows as u64),
                Arg::U64(cols as u64),
            ];
            let out = launch("add_bias_f32", config, order, args);
            let what = format!("add_bias_f32, {rows} × {cols}, {order:?}");
            assert_same(&what, out[0].f32s(), &want);
        }
    }
}

/// No launcher uses `fill_f32` yet; it is launched as the element-wise kernels are.
#[test]
fn fill_f32_writes_the_value_everywhere() {
    for n in LENGTHS {
        for (config, order) in launches(LaunchShape::Elementwise { n }) {
            let args = vec![
                Arg::F32s(values(n, 10, 1.0)),
                Arg::U64(n as u64),
                Arg::F32(0.375),
            ];
            let out = launch("fill_f32", config, order, args);
            let what = format!("fill_f32, n = {n}, {order:?}");
            assert_same(&what, out[0].f32s(), &vec![0.375; n]);
        }
    }
}
