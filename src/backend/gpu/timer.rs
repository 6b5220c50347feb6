//! Device time of compute passes from timestamp queries, where the device offers them.

use super::context::GpuContext;

/// Beginning and end timestamps of `passes` compute passes of one submission, resolved into a
/// buffer that a later read-back carries home with the data it fetches anyway.
pub struct PassTimer {
    query_set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    passes: u32,
    period_ns: f64,
}

impl PassTimer {
    /// A timer for `passes` passes; None when the device was opened without timestamp queries.
    pub fn new(context: &GpuContext, passes: u32) -> Option<PassTimer> {
        if !context.has_timestamps() || passes == 0 {
            return None;
        }
        let query_set = context.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("pass timer"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * passes,
        });
        let resolved = context.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("pass timer resolved"),
            size: wgpu::QUERY_SIZE as u64 * 2 * passes as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Some(PassTimer {
            query_set,
            resolved,
            passes,
            period_ns: context.queue.get_timestamp_period() as f64,
        })
    }

    /// The timestamp writes of pass `pass` (0-based), for its `ComputePassDescriptor`.
    pub fn writes(&self, pass: u32) -> wgpu::ComputePassTimestampWrites<'_> {
        assert!(pass < self.passes, "pass {pass} of {}", self.passes);
        wgpu::ComputePassTimestampWrites {
            query_set: &self.query_set,
            beginning_of_pass_write_index: Some(2 * pass),
            end_of_pass_write_index: Some(2 * pass + 1),
        }
    }

    /// Records the resolve of every timestamp, after the timed passes in `encoder`.
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.query_set, 0..2 * self.passes, &self.resolved, 0);
    }

    /// The (buffer, offset, bytes) piece a read-back copies to fetch the resolved timestamps.
    pub fn piece(&self) -> (&wgpu::Buffer, u64, u64) {
        (&self.resolved, 0, self.resolved.size())
    }

    /// Bytes of `piece()`.
    pub fn bytes(&self) -> usize {
        self.resolved.size() as usize
    }

    /// Seconds of each pass from the bytes `piece()` read back. A driver may reorder or reset
    /// its counter; an end before its beginning counts as zero rather than wrapping.
    pub fn seconds(&self, bytes: &[u8]) -> Vec<f64> {
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(bytes);
        ticks
            .chunks_exact(2)
            .map(|t| t[1].saturating_sub(t[0]) as f64 * self.period_ns * 1e-9)
            .collect()
    }
}
