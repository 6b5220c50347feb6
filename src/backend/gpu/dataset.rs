//! The dataset on the device and the gather kernel's params.

use super::buffers;
use super::context::GpuContext;
use super::kernels::{GatherParams, Stream};
use crate::io::Pixels;
use crate::model::Observations;
use crate::{Error, Result};

/// The dataset on the device: 8-bit data packed four bytes per word, float data as f32 bits.
pub fn upload_observations(
    context: &GpuContext,
    observations: &Observations,
) -> Result<wgpu::Buffer> {
    let bytes: &[u8] = match &observations.pixels {
        Pixels::U8(v) => v,
        Pixels::F32(v) => bytemuck::cast_slice(v),
    };
    if bytes.len() as u64 > context.binding_limit() {
        return Err(Error::Gpu(format!(
            "the dataset takes {} bytes, more than the device binds at once ({} bytes)",
            bytes.len(),
            context.binding_limit()
        )));
    }
    context.checked("uploading the dataset", || {
        buffers::upload(context, "observations", bytes)
    })
}

/// The params of the gather kernel for chains starting at 0 (callers set
/// `stream.chain_offset`).
pub fn gather_params(
    observations: &Observations,
    seed: u64,
    outer: u32,
    step: u32,
    batch: u32,
) -> GatherParams {
    GatherParams {
        stream: Stream::new(seed, 0, outer),
        d: observations.d as u32,
        batch,
        step,
        u8_data: u8_data(observations),
        // The CPU's factor, rounded alike: scale / m in f32.
        gather_factor: observations.scale / batch as f32,
        ..Default::default()
    }
}

/// 1 when the dataset is packed 8-bit data (4 bytes per word), 0 for f32 bits.
pub(super) fn u8_data(observations: &Observations) -> u32 {
    matches!(observations.pixels, Pixels::U8(_)) as u32
}
