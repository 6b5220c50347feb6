//! The one wgpu device of the process: instance, adapter, device, queue and the compiled kernels.

use std::sync::{Arc, Mutex};

use super::kernels::{GemmTile, Kernels};
use crate::model::{Laplace, Precision, Prior};
use crate::{Error, Result};

/// What a set of pipelines is compiled for: the prior's WGSL, the dictionary's storage and the
/// products' tile.
type KernelsKey = (&'static str, Precision, GemmTile);

/// The environment variable that overrides `GemmTile::choose`: `narrow`, `wide` or `auto`.
pub const GEMM_TILE_VARIABLE: &str = "RMLD_GEMM_TILE";

/// A device with the adapter's own limits and every pipeline compiled once.
pub struct GpuContext {
    /// The adapter the device came from.
    pub adapter: wgpu::Adapter,
    /// The logical device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The limits the device was created with (the adapter's).
    pub limits: wgpu::Limits,
    /// The compiled pipelines and their layouts (with the Laplace prior, the default, f32 and
    /// the narrow tile).
    pub kernels: Arc<Kernels>,
    /// The pipelines of other priors, precisions and tiles, compiled on first use.
    prior_kernels: Mutex<Vec<(KernelsKey, Arc<Kernels>)>>,
    info: wgpu::AdapterInfo,
}

impl GpuContext {
    /// Finds an adapter (honouring WGPU_BACKEND and friends), creates the device with the
    /// adapter's limits rather than wgpu's defaults, and compiles the kernels.
    pub fn new() -> Result<GpuContext> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| {
            Error::Gpu(format!(
                "no adapter found ({e}); is a Vulkan, Metal or DX12 driver installed?"
            ))
        })?;
        let limits = adapter.limits();
        // Timestamp queries cost nothing until a pass asks for them (`rmld bench` does).
        let features = adapter.features() & wgpu::Features::TIMESTAMP_QUERY;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("rmld"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| Error::Gpu(format!("cannot open the device: {e}")))?;
        let info = adapter.get_info();
        let kernels = scoped(&device, "compiling the kernels", || {
            Kernels::new(&device, Prior::Laplace(Laplace { lam: 0.0 }).wgsl())
        })?;
        Ok(GpuContext {
            adapter,
            device,
            queue,
            limits,
            kernels: Arc::new(kernels),
            prior_kernels: Mutex::new(Vec::new()),
            info,
        })
    }

    /// One context per process, built on first use and shared (building compiles every kernel).
    pub fn shared() -> Result<Arc<GpuContext>> {
        static SHARED: Mutex<Option<Arc<GpuContext>>> = Mutex::new(None);
        let mut slot = SHARED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(context) = slot.as_ref() {
            return Ok(context.clone());
        }
        let context = Arc::new(GpuContext::new()?);
        *slot = Some(context.clone());
        Ok(context)
    }

    /// The pipelines compiled with `prior`'s WGSL, A stored in `precision` and the products'
    /// `tile`: the default ones for Laplace, f32 and the narrow tile, others compiled once on
    /// first use and cached by the three.
    pub fn kernels_for(
        &self,
        prior: &Prior,
        precision: Precision,
        tile: GemmTile,
    ) -> Result<Arc<Kernels>> {
        let source = prior.wgsl();
        let key = (source, precision, tile);
        if key
            == (
                Prior::Laplace(Laplace { lam: 0.0 }).wgsl(),
                Precision::F32,
                GemmTile::Narrow,
            )
        {
            return Ok(self.kernels.clone());
        }
        if !tile.fits(&self.limits) {
            return Err(Error::Gpu(format!(
                "the {} GEMM tile needs {} invocations and {} bytes of workgroup memory per \
                 workgroup; this adapter allows {} and {}",
                tile.name(),
                tile.invocations(),
                tile.workgroup_bytes(),
                self.limits.max_compute_invocations_per_workgroup,
                self.limits.max_compute_workgroup_storage_size
            )));
        }
        let mut cache = self
            .prior_kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, kernels)) = cache.iter().find(|(k, _)| *k == key) {
            return Ok(kernels.clone());
        }
        let kernels = Arc::new(scoped(
            &self.device,
            "compiling the kernels for this prior, precision and tile",
            || Kernels::with_state(&self.device, source, prior.has_state(), precision, tile),
        )?);
        cache.push((key, kernels.clone()));
        Ok(kernels)
    }

    /// The products' tile for `chains` chains: `asked` when given, else `RMLD_GEMM_TILE`'s
    /// (`narrow`, `wide`; `auto` or unset: `GemmTile::choose` from this adapter's type and
    /// limits). A value it cannot read is refused by name.
    pub fn gemm_tile(&self, asked: Option<GemmTile>, chains: usize) -> Result<GemmTile> {
        if let Some(tile) = asked {
            return Ok(tile);
        }
        let chosen = GemmTile::choose(self.info.device_type, &self.limits, chains);
        match std::env::var(GEMM_TILE_VARIABLE) {
            Err(_) => Ok(chosen),
            Ok(value) if value == "auto" || value.is_empty() => Ok(chosen),
            Ok(value) => GemmTile::parse(&value).ok_or_else(|| Error::Usage {
                field: GEMM_TILE_VARIABLE,
                message: format!("expected narrow, wide or auto, found {value:?}"),
            }),
        }
    }

    /// The adapter's subgroup sizes (smallest, largest), as wgpu reports them.
    pub fn subgroup_sizes(&self) -> (u32, u32) {
        (self.info.subgroup_min_size, self.info.subgroup_max_size)
    }

    /// The adapter's name, driver and backend, for reports.
    pub fn describe(&self) -> String {
        format!(
            "{} ({} {}, {:?})",
            self.info.name, self.info.driver, self.info.driver_info, self.info.backend
        )
    }

    /// Whether the device was opened with timestamp queries (the adapter offers them).
    pub fn has_timestamps(&self) -> bool {
        self.device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// The adapter's driver and its version.
    pub fn driver(&self) -> String {
        format!("{} {}", self.info.driver, self.info.driver_info)
    }

    /// The largest buffer a kernel may bind: the smaller of the binding and buffer limits.
    pub fn binding_limit(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    /// Runs `f`, turning validation and out-of-memory errors it raises into `Error::Gpu`.
    pub fn checked<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        scoped(&self.device, what, f)
    }
}

fn scoped<T>(device: &wgpu::Device, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    let memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let value = f();
    let errors = [
        pollster::block_on(validation.pop()),
        pollster::block_on(memory.pop()),
    ];
    match errors.into_iter().flatten().next() {
        Some(e) => Err(Error::Gpu(format!("{what}: {e}"))),
        None => Ok(value),
    }
}

/// The adapter's name when the process's adapter is a software renderer (lavapipe/llvmpipe),
/// which the CPU backend outruns; None for a real GPU or when there is no adapter.
pub fn software_adapter() -> Option<String> {
    if !adapter_available() {
        return None;
    }
    let info = GpuContext::shared().ok()?.adapter.get_info();
    (info.device_type == wgpu::DeviceType::Cpu).then_some(info.name)
}

/// True when wgpu finds an adapter (without opening a device).
pub fn adapter_available() -> bool {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).is_ok()
}
