//! The training run's model: its shape (32 features in, a hidden layer, 3 classes out)
//! and its parameters with their fixed-seed initialisation, shared by the CPU step
//! ([`super::step`]), the CPU run ([`super::model`]) and the GPU run.

/// Features per ticket (a pooled embedding of its tokens).
pub const FEATURES: usize = 32;
/// The three actions.
pub const CLASSES: usize = 3;

/// The model's parameters (FP32 master weights).
#[derive(Debug, Clone)]
pub struct Mlp {
    /// FEATURES × hidden.
    pub w1: Vec<f32>,
    /// hidden.
    pub b1: Vec<f32>,
    /// hidden × CLASSES.
    pub w2: Vec<f32>,
    /// CLASSES.
    pub b2: Vec<f32>,
    /// Hidden width.
    pub hidden: usize,
}

impl Mlp {
    /// PyTorch-style uniform(±1/√fan_in) initialisation from a fixed seed.
    pub fn init(hidden: usize) -> Self {
        let scale = |v: Vec<f32>, fan_in: usize| {
            v.into_iter()
                .map(|x| x / (fan_in as f32).sqrt())
                .collect::<Vec<_>>()
        };
        Self {
            w1: scale(crate::cpu::random_matrix(FEATURES * hidden, 21), FEATURES),
            b1: scale(crate::cpu::random_matrix(hidden, 22), FEATURES),
            w2: scale(crate::cpu::random_matrix(hidden * CLASSES, 23), hidden),
            b2: scale(crate::cpu::random_matrix(CLASSES, 24), hidden),
            hidden,
        }
    }

    /// Parameters as slices, in a fixed order (for optimisers and checks).
    pub fn tensors_mut(&mut self) -> [&mut Vec<f32>; 4] {
        [&mut self.w1, &mut self.b1, &mut self.w2, &mut self.b2]
    }
}
