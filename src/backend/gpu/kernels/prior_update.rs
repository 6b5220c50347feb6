//! Launcher for a prior's update of its per-chain latent state (`Prior::update_kernel`: its own
//! module, entry point `prior_update`, one workgroup per chain, and its own params uniform), the
//! WGSL twin of `Prior::update_state`.

use std::sync::Arc;

use crate::backend::gpu::buffers::{read_back, upload};
use crate::backend::gpu::context::GpuContext;
use crate::model::wgsl::WgslBytes;
use crate::model::Prior;
use crate::Result;

/// A prior's compiled update pipeline and its bind-group layout (binding 0: its params uniform;
/// 1 x, 2 residual (read); 3 state, 4 status (read-write)).
pub struct PriorUpdateKernel {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

/// The buffers one update reads and writes, for `chains` chains.
pub struct UpdateBuffers<'a> {
    /// The update's params uniform (written before each update).
    pub params: &'a wgpu::Buffer,
    /// Positions, chains × p.
    pub x: &'a wgpu::Buffer,
    /// Residuals A x − y, chains × d.
    pub residual: &'a wgpu::Buffer,
    /// The latent state, chains × `Prior::state_width(p)`.
    pub state: &'a wgpu::Buffer,
    /// One status word per chain.
    pub status: &'a wgpu::Buffer,
    /// Chains (one workgroup each).
    pub chains: u32,
}

impl PriorUpdateKernel {
    /// The update kernel of the prior whose update module is `wgsl`, compiled once per device.
    pub fn for_prior(context: &GpuContext, wgsl: &'static str) -> Result<Arc<Self>> {
        let key = format!("prior update {:p}", wgsl.as_ptr());
        context.cached(&key, "compiling the prior's update", || {
            Ok(Self::new(&context.device, wgsl))
        })
    }

    /// Compiles `wgsl` on `device`.
    fn new(device: &wgpu::Device, wgsl: &str) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("prior_update"),
            source: wgpu::ShaderSource::Wgsl(wgsl.into()),
        });
        let entry = |binding: u32, ty: wgpu::BufferBindingType| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let storage = |read_only| wgpu::BufferBindingType::Storage { read_only };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("prior_update"),
            entries: &[
                entry(0, wgpu::BufferBindingType::Uniform),
                entry(1, storage(true)),
                entry(2, storage(true)),
                entry(3, storage(false)),
                entry(4, storage(false)),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("prior_update"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("prior_update"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("prior_update"),
            compilation_options: Default::default(),
            cache: None,
        });
        PriorUpdateKernel { layout, pipeline }
    }

    /// Records one update of `buffers.chains` chains into `encoder`.
    pub fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &UpdateBuffers,
    ) {
        let bound = [
            buffers.params,
            buffers.x,
            buffers.residual,
            buffers.state,
            buffers.status,
        ];
        let entries: Vec<wgpu::BindGroupEntry> = bound
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("prior_update"),
            layout: &self.layout,
            entries: &entries,
        });
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(buffers.chains, 1, 1);
    }
}

/// A uniform buffer holding `params` (the update's).
pub fn params_buffer(context: &GpuContext, params: &WgslBytes) -> wgpu::Buffer {
    let buffer = context.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("prior update params"),
        size: params.bytes.len().max(16) as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    context.queue.write_buffer(&buffer, 0, &params.bytes);
    buffer
}

/// One update of `prior`'s state after outer iteration `outer` on host slices (the parity test's
/// probe): the new state and each chain's status (1: its new state was not finite and it kept
/// the old one).
///
/// Fails (`Error::Internal`) for a prior without state, or as the device does.
#[allow(clippy::too_many_arguments)]
pub fn prior_update(
    context: &GpuContext,
    prior: &Prior,
    outer: u32,
    state: &[f32],
    x: &[f32],
    residual: &[f32],
    d: usize,
    p: usize,
) -> Result<(Vec<f32>, Vec<u32>)> {
    let chains = x.len() / p.max(1);
    let Some((wgsl, params)) = prior.update_kernel(outer, chains, (d, p)) else {
        return Err(crate::Error::Internal(format!(
            "the {} prior keeps no state to update",
            prior.name()
        )));
    };
    let kernel = PriorUpdateKernel::for_prior(context, wgsl)?;
    let params_buffer = params_buffer(context, &params);
    let x_buffer = upload(context, "x", bytemuck::cast_slice(x));
    let residual_buffer = upload(context, "residual", bytemuck::cast_slice(residual));
    let state_buffer = upload(context, "prior state", bytemuck::cast_slice(state));
    // Poisoned: a chain the kernel skipped shows as u32::MAX.
    let status_buffer = upload(
        context,
        "status",
        bytemuck::cast_slice(&vec![u32::MAX; chains]),
    );
    let bytes = context.checked("running the prior's update", || {
        let mut encoder = context
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        kernel.record(
            &context.device,
            &mut encoder,
            &UpdateBuffers {
                params: &params_buffer,
                x: &x_buffer,
                residual: &residual_buffer,
                state: &state_buffer,
                status: &status_buffer,
                chains: chains as u32,
            },
        );
        context.queue.submit([encoder.finish()]);
        read_back::<u8>(
            context,
            &[
                (&state_buffer, 0, (state.len() * 4) as u64),
                (&status_buffer, 0, (chains * 4) as u64),
            ],
        )
    })??;
    let (state_bytes, status_bytes) = bytes.split_at(state.len() * 4);
    Ok((
        bytemuck::pod_collect_to_vec(state_bytes),
        bytemuck::pod_collect_to_vec(status_bytes),
    ))
}
