//! Launcher for `dense.wgsl`: one dense layer with an optional leaky ReLU (the learned sampler's network).
//!
//! Its params: `DenseParams`, mirrored in `shaders/dense.wgsl`.

use super::{read, write, Entry, Family, Kernel, Source, WgslStruct};

const DENSE: &str = include_str!("../../../../shaders/dense.wgsl");

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

/// The dense module and its one entry point.
pub(super) const FAMILY: Family = Family {
    module: "dense",
    sources: &[Source::File(DENSE)],
    params: &DenseParams::LAYOUT,
    entries: &[Entry {
        kernel: Kernel::DenseLayer,
        entry_point: "dense_layer",
        bindings: &[
            read(1, "weights"),
            read(2, "bias"),
            read(3, "input"),
            write(4, "output"),
        ],
    }],
};

buffers! {
    /// Buffers of `dense_layer`.
    DenseBuffers(DenseParams) => Kernel::DenseLayer, { weights, bias, input, output }
}
