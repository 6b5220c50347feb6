//! Launcher for `shaders/prior/ssgl_update.wgsl`: the SSGL prior's stochastic-approximation update of every chain's latent state (CPU twin: `backend::cpu::ssgl`), with its own parameter block.

use bytemuck::{Pod, Zeroable};

use crate::backend::cpu::ssgl::UpdateScalars;
use crate::backend::gpu::buffers::{read_back, upload};
use crate::backend::gpu::context::GpuContext;
use crate::model::prior::ssgl::stride;
use crate::Result;

const SSGL_UPDATE: &str = include_str!("../../../../shaders/prior/ssgl_update.wgsl");

/// Mirrors `struct SsglParams` in `shaders/prior/ssgl_update.wgsl` field by field (a uniform of
/// 48 bytes): this kernel's own parameters, apart from the shared `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct SsglParams {
    /// Chains in the buffers.
    pub chains: u32,
    /// Residual length d (N of equation 14).
    pub d: u32,
    /// Coefficients per chain p.
    pub p: u32,
    /// Values per chain in the state, 3p + 2.
    pub stride: u32,
    /// ω_k.
    pub omega: f32,
    /// 1/v0.
    pub inv_v0: f32,
    /// 1/v1.
    pub inv_v1: f32,
    /// ln(2 v0) − ½ ln(2π v1).
    pub log_ratio: f32,
    /// R_a = N + p + ν.
    pub r_a: f32,
    /// ν·λ.
    pub nu_lambda: f32,
    /// a − 1.
    pub a_minus_1: f32,
    /// a + b + p − 2.
    pub beta_denominator: f32,
}

impl SsglParams {
    /// The block for `chains` chains of d × p with the host-rounded `scalars`.
    pub fn new(s: &UpdateScalars, chains: usize, d: usize, p: usize) -> Self {
        SsglParams {
            chains: chains as u32,
            d: d as u32,
            p: p as u32,
            stride: stride(p) as u32,
            omega: s.omega,
            inv_v0: s.inv_v0,
            inv_v1: s.inv_v1,
            log_ratio: s.log_ratio,
            r_a: s.r_a,
            nu_lambda: s.nu_lambda,
            a_minus_1: s.a_minus_1,
            beta_denominator: s.beta_denominator,
        }
    }
}

/// The compiled `ssgl_update` pipeline and its bind-group layout (binding 0: `SsglParams`;
/// 1 x, 2 residual (read); 3 state, 4 status (read-write)).
pub struct SsglUpdateKernel {
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

impl SsglUpdateKernel {
    /// Compiles the module on `device`.
    pub fn new(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("ssgl_update"),
            source: wgpu::ShaderSource::Wgsl(SSGL_UPDATE.into()),
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
            label: Some("ssgl_update"),
            entries: &[
                entry(0, wgpu::BufferBindingType::Uniform),
                entry(1, storage(true)),
                entry(2, storage(true)),
                entry(3, storage(false)),
                entry(4, storage(false)),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("ssgl_update"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("ssgl_update"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("ssgl_update"),
            compilation_options: Default::default(),
            cache: None,
        });
        SsglUpdateKernel { layout, pipeline }
    }

    /// Records one update of `params.chains` chains (one workgroup each) into `encoder`.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        params: &wgpu::Buffer,
        chains: u32,
        x: &wgpu::Buffer,
        residual: &wgpu::Buffer,
        state: &wgpu::Buffer,
        status: &wgpu::Buffer,
    ) {
        let buffers = [params, x, residual, state, status];
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("ssgl_update"),
            layout: &self.layout,
            entries: &entries,
        });
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(chains, 1, 1);
    }
}

/// One update on host slices (the parity test's probe): the new state and each chain's status
/// (1: its new state was not finite and it kept the old one).
pub fn sa_update(
    context: &GpuContext,
    scalars: &UpdateScalars,
    state: &[f32],
    x: &[f32],
    residual: &[f32],
    d: usize,
    p: usize,
) -> Result<(Vec<f32>, Vec<u32>)> {
    let chains = x.len() / p.max(1);
    let kernel = context.checked("compiling ssgl_update", || {
        SsglUpdateKernel::new(&context.device)
    })?;
    let params = SsglParams::new(scalars, chains, d, p);
    let params_buffer = context.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("ssgl params"),
        size: std::mem::size_of::<SsglParams>() as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    context
        .queue
        .write_buffer(&params_buffer, 0, bytemuck::bytes_of(&params));
    let x_buffer = upload(context, "x", bytemuck::cast_slice(x));
    let residual_buffer = upload(context, "residual", bytemuck::cast_slice(residual));
    let state_buffer = upload(context, "ssgl state", bytemuck::cast_slice(state));
    // Poisoned: a chain the kernel skipped shows as u32::MAX.
    let status_buffer = upload(
        context,
        "status",
        bytemuck::cast_slice(&vec![u32::MAX; chains]),
    );
    let bytes = context.checked("running ssgl_update", || {
        let mut encoder = context
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        kernel.record(
            &context.device,
            &mut encoder,
            &params_buffer,
            chains as u32,
            &x_buffer,
            &residual_buffer,
            &state_buffer,
            &status_buffer,
        );
        context.queue.submit([encoder.finish()]);
        read_back(
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
