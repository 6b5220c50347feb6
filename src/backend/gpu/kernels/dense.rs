//! Launchers for `dense.wgsl` and `adam.wgsl`: the learned sampler's network, forward, backward and Adam.
//!
//! Their params: `DenseParams`, mirrored in `shaders/dense.wgsl`; `AdamParams`, in
//! `shaders/adam.wgsl`.

use super::{read, wgsl_struct, write, Entry, Family, Kernel, Source, WgslStruct};

const DENSE: &str = include_str!("../../../../shaders/dense.wgsl");
const ADAM: &str = include_str!("../../../../shaders/adam.wgsl");

wgsl_struct! {
    /// `struct DenseParams` in `shaders/dense.wgsl` (a uniform, one slot per layer).
    pub struct DenseParams {
        /// Rows of the input (samples in the batch).
        rows: u32,
        /// Inputs per row.
        n_in: u32,
        /// Outputs per row.
        n_out: u32,
        /// 1: the leaky ReLU after the affine map; 0: none (the last layer).
        leaky: u32,
        /// The leaky ReLU's slope below zero.
        leak: f32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
        /// Padding to 16 bytes.
        _pad2: u32,
    }
}

wgsl_struct! {
    /// `struct AdamParams` in `shaders/adam.wgsl` (a uniform, one slot per parameter tensor).
    pub struct AdamParams {
        /// Parameters in the tensor.
        count: u32,
        /// Learning rate.
        lr: f32,
        /// First-moment decay.
        beta1: f32,
        /// Second-moment decay.
        beta2: f32,
        /// 1 − beta1^t.
        c1: f32,
        /// 1 − beta2^t.
        c2: f32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
    }
}

/// The dense module: the forward layer and the three backward kernels.
pub(super) const FAMILY: Family = Family {
    module: "dense",
    sources: &[Source::File(DENSE)],
    params: &DenseParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::DenseLayer,
            entry_point: "dense_layer",
            bindings: &[
                read(1, "weights"),
                read(2, "bias"),
                read(3, "input"),
                write(4, "output"),
            ],
        },
        Entry {
            kernel: Kernel::DenseInputGrad,
            entry_point: "dense_input_grad",
            bindings: &[
                read(1, "weights"),
                read(3, "input"),
                read(5, "grad_out"),
                write(6, "grad_in"),
            ],
        },
        Entry {
            kernel: Kernel::DenseWeightGrad,
            entry_point: "dense_weight_grad",
            bindings: &[
                read(3, "input"),
                read(5, "grad_out"),
                write(7, "grad_weights"),
            ],
        },
        Entry {
            kernel: Kernel::DenseBiasGrad,
            entry_point: "dense_bias_grad",
            bindings: &[read(5, "grad_out"), write(8, "grad_bias")],
        },
    ],
};

/// The Adam module.
pub(super) const ADAM_FAMILY: Family = Family {
    module: "adam",
    sources: &[Source::File(ADAM)],
    params: &AdamParams::LAYOUT,
    entries: &[Entry {
        kernel: Kernel::AdamStep,
        entry_point: "adam_step",
        bindings: &[
            write(1, "values"),
            read(2, "gradient"),
            write(3, "first_moment"),
            write(4, "second_moment"),
        ],
    }],
};

buffers! {
    /// Buffers of `dense_layer`.
    DenseBuffers(DenseParams) => Kernel::DenseLayer, { weights, bias, input, output }
}

buffers! {
    /// Buffers of `dense_input_grad`.
    DenseInputGradBuffers(DenseParams) => Kernel::DenseInputGrad, { weights, input, grad_out, grad_in }
}

buffers! {
    /// Buffers of `dense_weight_grad`.
    DenseWeightGradBuffers(DenseParams) => Kernel::DenseWeightGrad, { input, grad_out, grad_weights }
}

buffers! {
    /// Buffers of `dense_bias_grad`.
    DenseBiasGradBuffers(DenseParams) => Kernel::DenseBiasGrad, { grad_out, grad_bias }
}

buffers! {
    /// Buffers of `adam_step`.
    AdamBuffers(AdamParams) => Kernel::AdamStep, { values, gradient, first_moment, second_moment }
}
