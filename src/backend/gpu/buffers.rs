//! Buffer helpers: storage buffers, uploads, read-backs, and the params slots of one group.

use super::context::GpuContext;
use super::kernels::Params;
use crate::{Error, Result};

/// A storage buffer of `bytes` (rounded up to 4, at least 4) that can be copied in and out.
pub fn storage(context: &GpuContext, label: &str, bytes: u64) -> wgpu::Buffer {
    context.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(4).div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A storage buffer holding `data` (padded with zeros to a multiple of 4 bytes).
pub fn upload(context: &GpuContext, label: &str, data: &[u8]) -> wgpu::Buffer {
    let buffer = storage(context, label, data.len() as u64);
    write(context, &buffer, 0, data);
    buffer
}

/// Queues a write of `data` at `offset` (padded to a multiple of 4 bytes).
pub fn write(context: &GpuContext, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    if data.len().is_multiple_of(4) {
        context.queue.write_buffer(buffer, offset, data);
    } else {
        let mut padded = data.to_vec();
        padded.resize(data.len().div_ceil(4) * 4, 0);
        context.queue.write_buffer(buffer, offset, &padded);
    }
}

/// Copies each (buffer, byte offset, bytes) into one staging buffer, submits, waits and returns the
/// bytes in order; one round trip for any number of pieces.
pub fn read_back(context: &GpuContext, pieces: &[(&wgpu::Buffer, u64, u64)]) -> Result<Vec<u8>> {
    let encoder = context
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    read_back_after(context, encoder, pieces)
}

/// As `read_back`, after the work already recorded in `encoder`, in the same submission.
pub fn read_back_after(
    context: &GpuContext,
    mut encoder: wgpu::CommandEncoder,
    pieces: &[(&wgpu::Buffer, u64, u64)],
) -> Result<Vec<u8>> {
    let total: u64 = pieces.iter().map(|p| p.2).sum();
    if total == 0 {
        context.queue.submit([encoder.finish()]);
        return Ok(Vec::new());
    }
    let staging = context.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read back"),
        size: total,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut at = 0;
    for &(buffer, offset, bytes) in pieces {
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, at, bytes);
        at += bytes;
    }
    context.queue.submit([encoder.finish()]);
    let (sender, receiver) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        let _ = sender.send(result);
    });
    context
        .device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| Error::Gpu(format!("waiting for the device: {e}")))?;
    receiver
        .recv()
        .map_err(|e| Error::Gpu(format!("read-back never completed: {e}")))?
        .map_err(|e| Error::Gpu(format!("cannot map the read-back buffer: {e}")))?;
    let bytes = {
        let view = staging
            .get_mapped_range(..)
            .map_err(|e| Error::Gpu(format!("cannot read the mapped buffer: {e}")))?;
        view.to_vec()
    };
    staging.unmap();
    Ok(bytes)
}

/// Reads `len` f32 values from the start of `buffer`.
pub fn read_f32(context: &GpuContext, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
    let bytes = read_back(context, &[(buffer, 0, 4 * len as u64)])?;
    Ok(bytemuck::pod_collect_to_vec(&bytes))
}

/// A uniform buffer of params slots, one per dispatch stage, at the device's offset alignment.
pub struct ParamSlots {
    /// The uniform buffer.
    pub buffer: wgpu::Buffer,
    stride: u64,
    slots: u64,
}

impl ParamSlots {
    /// Room for `slots` params blocks.
    pub fn new(context: &GpuContext, slots: usize) -> ParamSlots {
        let align = u64::from(context.limits.min_uniform_buffer_offset_alignment).max(16);
        let stride = (std::mem::size_of::<Params>() as u64).div_ceil(align) * align;
        let slots = slots.max(1) as u64;
        let buffer = context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("params"),
            size: stride * slots,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ParamSlots {
            buffer,
            stride,
            slots,
        }
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots as usize
    }

    /// The dynamic offset of slot `slot`.
    pub fn offset(&self, slot: usize) -> u32 {
        (slot as u64 * self.stride) as u32
    }

    /// Writes `params` into consecutive slots from 0 (they take effect at the next submission).
    pub fn write(&self, context: &GpuContext, params: &[Params]) {
        let mut bytes = vec![0u8; (self.stride as usize) * params.len()];
        for (slot, p) in params.iter().enumerate() {
            let at = slot * self.stride as usize;
            bytes[at..at + std::mem::size_of::<Params>()].copy_from_slice(bytemuck::bytes_of(p));
        }
        write(context, &self.buffer, 0, &bytes);
    }
}
