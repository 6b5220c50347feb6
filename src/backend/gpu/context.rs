//! The one wgpu device of the process: instance, adapter, device, queue, and a cache of what is
//! compiled for it.

use std::any::Any;
use std::sync::{Arc, Mutex};

use crate::{Error, Result};

/// Something compiled for the device once and shared (`GpuContext::cached`), by its key.
type Compiled = (String, Arc<dyn Any + Send + Sync>);

/// A device with the adapter's own limits; what is compiled for it is cached by key.
pub struct GpuContext {
    /// The adapter the device came from.
    pub adapter: wgpu::Adapter,
    /// The logical device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The limits the device was created with (the adapter's).
    pub limits: wgpu::Limits,
    /// What was compiled for the device (the pipelines of each model, precision and tile), by key.
    compiled: Mutex<Vec<Compiled>>,
    /// The read-back staging buffer kept between read-backs (`buffers::read_back_after`): a fresh
    /// one per read-back cost more than the copy on an NVIDIA H200 (docs/benchmarks.md).
    pub(super) staging: Mutex<Option<wgpu::Buffer>>,
    info: wgpu::AdapterInfo,
}

impl GpuContext {
    /// Finds an adapter (honouring WGPU_BACKEND and friends) and creates the device with the
    /// adapter's limits rather than wgpu's defaults.
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
        Ok(GpuContext {
            adapter,
            device,
            queue,
            limits,
            compiled: Mutex::new(Vec::new()),
            staging: Mutex::new(None),
            info,
        })
    }

    /// Bytes of the read-back staging buffer kept now (0: none).
    pub fn kept_staging_bytes(&self) -> u64 {
        let slot = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_ref().map_or(0, |b| b.size())
    }

    /// Frees the kept read-back staging buffer (the next read-back makes one again).
    pub fn release_staging(&self) {
        let mut slot = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        *slot = None;
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

    /// What `build` makes, built once per `key` for this device and shared after (a failed
    /// build is not cached). `build` runs inside the device's error scope.
    pub fn cached<T: Any + Send + Sync>(
        &self,
        key: &str,
        what: &str,
        build: impl FnOnce() -> Result<T>,
    ) -> Result<Arc<T>> {
        let mut cache = self
            .compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, found)) = cache.iter().find(|(k, _)| k == key) {
            return Arc::clone(found)
                .downcast::<T>()
                .map_err(|_| Error::Internal(format!("{key} was cached as another type")));
        }
        let built = Arc::new(scoped(&self.device, what, build)??);
        cache.push((key.to_string(), built.clone()));
        Ok(built)
    }

    /// The adapter's type (a real GPU, or a software renderer).
    pub fn device_type(&self) -> wgpu::DeviceType {
        self.info.device_type
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
