//! Buffer helpers: storage buffers, uploads, read-backs, and the params slots of one group.

use std::marker::PhantomData;

use super::context::GpuContext;
use crate::model::wgsl::WgslStruct;
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
/// bytes in order as values of `T` (bytes, or f32 straight from the mapped range); one round trip
/// for any number of pieces.
pub fn read_back<T: bytemuck::Pod>(
    context: &GpuContext,
    pieces: &[(&wgpu::Buffer, u64, u64)],
) -> Result<Vec<T>> {
    let encoder = context
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    read_back_after(context, encoder, pieces)
}

/// The largest staging buffer kept between read-backs; a larger read-back gets its own.
const KEPT_STAGING_BYTES: u64 = 512 << 20;

/// As `read_back`, after the work already recorded in `encoder`, in the same submission. The
/// values are collected with one copy out of the mapped staging buffer, which is reused from one
/// read-back to the next up to `KEPT_STAGING_BYTES`.
pub fn read_back_after<T: bytemuck::Pod>(
    context: &GpuContext,
    mut encoder: wgpu::CommandEncoder,
    pieces: &[(&wgpu::Buffer, u64, u64)],
) -> Result<Vec<T>> {
    let total: u64 = pieces.iter().map(|p| p.2).sum();
    if total == 0 {
        context.queue.submit([encoder.finish()]);
        return Ok(Vec::new());
    }
    let kept = context
        .staging
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .take()
        .filter(|b| b.size() >= total);
    let staging = kept.unwrap_or_else(|| {
        context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read back"),
            size: total.div_ceil(wgpu::COPY_BUFFER_ALIGNMENT) * wgpu::COPY_BUFFER_ALIGNMENT,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    });
    let mut at = 0;
    for &(buffer, offset, bytes) in pieces {
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, at, bytes);
        at += bytes;
    }
    context.queue.submit([encoder.finish()]);
    let (sender, receiver) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, ..total, move |result| {
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
    let values = {
        let view = staging
            .get_mapped_range(..total)
            .map_err(|e| Error::Gpu(format!("cannot read the mapped buffer: {e}")))?;
        bytemuck::pod_collect_to_vec(&view[..])
    };
    staging.unmap();
    if staging.size() <= KEPT_STAGING_BYTES {
        let mut slot = context
            .staging
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if slot.as_ref().is_none_or(|b| b.size() < staging.size()) {
            *slot = Some(staging);
        }
    }
    Ok(values)
}

/// Reads `len` f32 values from the start of `buffer`.
pub fn read_f32(context: &GpuContext, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
    read_back(context, &[(buffer, 0, 4 * len as u64)])
}

/// Where one family's params slots lie in a `ParamSlots` buffer (`SlotLayout::per_step` and
/// `once`): `count` slots of `P`, `stride` bytes apart from byte `first`. Per step: slot s holds
/// step s (dispatches name their step); once: one slot, whatever the step (the family's WGSL
/// reads none).
pub struct Slots<P> {
    /// The `ParamSlots` buffer it lies in (`SlotLayout`'s number).
    pub(super) buffer: u64,
    first: u64,
    stride: u64,
    count: usize,
    per_step: bool,
    params: PhantomData<fn() -> P>,
}

impl<P> Clone for Slots<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Slots<P> {}

impl<P> Slots<P> {
    /// Number of slots.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The slot a dispatch at `step` reads: `step` per step, else the one slot.
    ///
    /// # Panics
    /// When a per-step family has no slot `step` (a programming error; never another slot).
    fn slot(&self, step: usize) -> usize {
        if !self.per_step {
            return 0;
        }
        assert!(
            step < self.count,
            "step {step} outside the {} params slots",
            self.count
        );
        step
    }

    /// The dynamic offset of the slot a dispatch at `step` reads.
    pub fn offset(&self, step: usize) -> u32 {
        (self.first + self.slot(step) as u64 * self.stride) as u32
    }

    /// The same slots without their params type (a bound kernel keeps them so).
    pub(super) fn untyped(self) -> Slots<()> {
        Slots {
            buffer: self.buffer,
            first: self.first,
            stride: self.stride,
            count: self.count,
            per_step: self.per_step,
            params: PhantomData,
        }
    }
}

/// A uniform buffer of params slots: each family's slots in a section of their own (`Slots`),
/// every slot at the device's offset alignment, all written in one queue write.
pub struct ParamSlots {
    /// The uniform buffer.
    pub buffer: wgpu::Buffer,
    id: u64,
    size: u64,
}

/// The sections of a `ParamSlots` buffer, laid out before it is created.
pub struct SlotLayout {
    /// A number of its own, which its sections carry (binding a section of another buffer is
    /// refused).
    id: u64,
    align: u64,
    size: u64,
}

impl SlotLayout {
    /// No sections yet, at `context`'s uniform offset alignment.
    pub fn new(context: &GpuContext) -> SlotLayout {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        SlotLayout {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            align: u64::from(context.limits.min_uniform_buffer_offset_alignment).max(16),
            size: 0,
        }
    }

    fn add<P: WgslStruct>(&mut self, count: usize, per_step: bool) -> Slots<P> {
        let stride = (std::mem::size_of::<P>() as u64).div_ceil(self.align) * self.align;
        let count = count.max(1);
        let slots = Slots {
            buffer: self.id,
            first: self.size,
            stride,
            count,
            per_step,
            params: PhantomData,
        };
        self.size += stride * count as u64;
        slots
    }

    /// A section of `steps` slots of `P`, slot s for step s (a family whose WGSL reads the step,
    /// or FISTA's iterations).
    pub fn per_step<P: WgslStruct>(&mut self, steps: usize) -> Slots<P> {
        self.add(steps, true)
    }

    /// A section of one slot of `P`, whatever the step of a dispatch.
    pub fn once<P: WgslStruct>(&mut self) -> Slots<P> {
        self.add(1, false)
    }

    /// The buffer, zeroed.
    pub fn build(self, context: &GpuContext) -> ParamSlots {
        let size = self.size.max(16);
        let buffer = context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("params"),
            size,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ParamSlots {
            buffer,
            id: self.id,
            size,
        }
    }
}

impl ParamSlots {
    /// Its layout's number, which its sections carry.
    pub(super) fn id(&self) -> u64 {
        self.id
    }

    /// A buffer of one section: one slot of `P` (the probes and benches).
    pub fn one<P: WgslStruct>(context: &GpuContext) -> (ParamSlots, Slots<P>) {
        let mut layout = SlotLayout::new(context);
        let slots = layout.once();
        (layout.build(context), slots)
    }

    /// Stages a write of every slot (slots not set are written as zeros).
    pub fn writer(&self) -> SlotWriter<'_> {
        SlotWriter {
            slots: self,
            bytes: vec![0; self.size as usize],
        }
    }
}

/// The staged contents of a `ParamSlots` buffer; `finish` queues them in one write.
pub struct SlotWriter<'a> {
    slots: &'a ParamSlots,
    bytes: Vec<u8>,
}

impl SlotWriter<'_> {
    /// Slot `slot` of the section `slots` holds `params`.
    ///
    /// # Panics
    /// When the section has no slot `slot` or lies in another buffer (programming errors).
    pub fn set<P: WgslStruct>(&mut self, slots: Slots<P>, slot: usize, params: P) -> &mut Self {
        assert_eq!(
            slots.buffer,
            self.slots.id,
            "{}: params slots of another buffer",
            P::LAYOUT.name
        );
        assert!(
            slot < slots.count,
            "slot {slot} outside the {} slots of {}",
            slots.count,
            P::LAYOUT.name
        );
        let at = (slots.first + slot as u64 * slots.stride) as usize;
        self.bytes[at..at + std::mem::size_of::<P>()].copy_from_slice(bytemuck::bytes_of(&params));
        self
    }

    /// Every slot of the section `slots` holds `params(slot)`.
    pub fn set_all<P: WgslStruct>(
        &mut self,
        slots: Slots<P>,
        params: impl Fn(usize) -> P,
    ) -> &mut Self {
        for slot in 0..slots.count {
            self.set(slots, slot, params(slot));
        }
        self
    }

    /// Queues the write (it takes effect at the next submission).
    pub fn finish(&self, context: &GpuContext) {
        write(context, &self.slots.buffer, 0, &self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(per_step: bool) -> Slots<()> {
        Slots {
            buffer: 0,
            first: 64,
            stride: 32,
            count: if per_step { 3 } else { 1 },
            per_step,
            params: PhantomData,
        }
    }

    /// A dispatch at step s reads slot s of a per-step section, the one slot of the others.
    #[test]
    fn slots_give_each_step_its_own_offset() {
        let per_step = slots(true);
        let offsets: Vec<u32> = (0..3).map(|s| per_step.offset(s)).collect();
        assert_eq!(offsets, [64, 96, 128]);
        let once = slots(false);
        assert_eq!((once.offset(0), once.offset(7)), (64, 64));
    }

    /// A step past a per-step section is refused, never another slot.
    #[test]
    #[should_panic(expected = "step 3 outside the 3 params slots")]
    fn slots_refuse_a_step_past_the_section() {
        slots(true).offset(3);
    }
}
