//! The Vulkan context: loader, instance, validation messages, device choice, one
//! compute queue and gpu-allocator.
//!
//! ```text
//!  Gpu::new(config)                      standalone: Kiln owns instance + device
//!    Entry::load()            -> NoLoader when libvulkan is missing
//!    instance 1.2 (+ debug_utils, + Khronos validation when asked)
//!    rank devices: discrete > integrated > virtual > cpu (lavapipe), or by name/index
//!    device: one compute queue; features bufferDeviceAddress + vulkanMemoryModel
//!            (+ device scope)
//!    gpu-allocator with buffer device addresses
//!
//!  Gpu::embedded(desc)                   embedded: the engine owns them
//!    Entry::from_static_fn(its vkGetInstanceProcAddr)
//!    Instance::load / Device::load on its handles; its queue family and index
//!    checks: Vulkan 1.2, the family computes, the features are supported
//!    (enabling them is the engine's part); nothing of the engine's is destroyed
//! ```
//!
//! Kernels address buffers through `VK_KHR_buffer_device_address` pointers passed in
//! push constants, so no descriptor sets exist anywhere: a dispatch is a pipeline, a
//! push-constant block and a group count. The refit kernel's parent-climbing atomics
//! need the Vulkan memory model (acquire/release at queue-family scope).
//!
//! Everything that must outlive a buffer or kernel sits in [`Shared`] behind an `Arc`,
//! so buffers and kernels free themselves on drop in any order, and the device is
//! destroyed after the last of them.

use super::error::{GpuError, VkContext};
use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use std::collections::BTreeMap;
use std::ffi::{c_void, CStr, CString};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// How to pick the physical device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    /// Discrete GPU first, then integrated, virtual, CPU (lavapipe), then the rest.
    #[default]
    Best,
    /// The first device whose name contains this text (case-insensitive).
    Name(String),
    /// The device at this index in the driver's enumeration order.
    Index(usize),
}

/// Options for a standalone context.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuConfig {
    /// Enables `VK_LAYER_KHRONOS_validation` and collects its warnings and errors
    /// (see [`crate::gpu::Gpu::validation_messages`]). Missing layer: [`GpuError::MissingFeature`].
    pub validation: bool,
    pub device: DeviceChoice,
    /// The most device memory Kiln's buffers may hold at once, in bytes; a buffer
    /// beyond it fails with [`GpuError::OutOfMemory`] before Vulkan is asked. `None`:
    /// only the device's own limits.
    pub memory_budget: Option<u64>,
}

impl GpuConfig {
    /// Reads `KILN_GPU_VALIDATION` (`1` turns validation on) and `KILN_GPU_DEVICE`
    /// (a device index, or text contained in the device name).
    pub fn from_env() -> GpuConfig {
        let validation = std::env::var("KILN_GPU_VALIDATION").is_ok_and(|v| v == "1");
        let device = match std::env::var("KILN_GPU_DEVICE") {
            Ok(text) if text.trim().is_empty() => DeviceChoice::Best,
            Ok(text) => match text.trim().parse::<usize>() {
                Ok(index) => DeviceChoice::Index(index),
                Err(_) => DeviceChoice::Name(text.trim().to_owned()),
            },
            Err(_) => DeviceChoice::Best,
        };
        GpuConfig { validation, device, memory_budget: None }
    }
}

/// What kind of device it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    Discrete,
    Integrated,
    Virtual,
    Cpu,
    Other,
}

impl DeviceKind {
    fn from_vk(kind: vk::PhysicalDeviceType) -> DeviceKind {
        match kind {
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceKind::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceKind::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceKind::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceKind::Cpu,
            _ => DeviceKind::Other,
        }
    }

    fn rank(self) -> u32 {
        match self {
            DeviceKind::Discrete => 0,
            DeviceKind::Integrated => 1,
            DeviceKind::Virtual => 2,
            DeviceKind::Cpu => 3,
            DeviceKind::Other => 4,
        }
    }
}

/// The chosen device, for logs and for the demo's "running on ..." line.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub kind: DeviceKind,
    /// Vulkan version the device supports: (major, minor, patch).
    pub api_version: (u32, u32, u32),
    /// Driver name and version text (`VkPhysicalDeviceDriverProperties`).
    pub driver: String,
    /// Default subgroup size (8 on lavapipe, 32 or 64 on GPUs).
    pub subgroup_size: u32,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f32,
    /// Whether the compute queue writes timestamps.
    pub timestamps: bool,
    /// Largest group count per dispatch dimension.
    pub max_group_count: [u32; 3],
}

/// Validation and driver messages of warning or error severity, collected by the
/// debug messenger. Boxed, so its address stays fixed for the callback.
#[derive(Default)]
pub(crate) struct MessageLog {
    messages: Mutex<Vec<String>>,
}

impl MessageLog {
    pub(crate) fn push(&self, text: String) {
        if let Ok(mut messages) = self.messages.lock() {
            messages.push(text);
        }
    }

    fn len(&self) -> usize {
        self.messages.lock().map_or(0, |m| m.len())
    }

    fn since(&self, start: usize) -> Vec<String> {
        self.messages.lock().map_or_else(|_| Vec::new(), |m| m.get(start..).unwrap_or_default().to_vec())
    }
}

/// Validation messages raised while standalone contexts were torn down (objects left
/// alive at `vkDestroyDevice`, hazards found at the last idle wait), which no
/// context is left to report: [`teardown_messages`] reads them.
static TEARDOWN_MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Every validation message raised while a standalone context with validation on
/// was torn down, in this process so far (each also printed to stderr when raised).
/// The list only grows: compare its length before and after.
pub fn teardown_messages() -> Vec<String> {
    TEARDOWN_MESSAGES.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

unsafe extern "system" fn debug_callback(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // Never unwind into the driver: a panic here is caught and dropped.
    let _ = std::panic::catch_unwind(|| {
        if user.is_null() || data.is_null() {
            return;
        }
        // SAFETY: `user` is the `MessageLog` boxed in `Shared`, alive until the
        // messenger is destroyed; `data` is valid for the duration of the callback.
        let (log, data) = unsafe { (&*(user as *const MessageLog), &*data) };
        let text = if data.p_message.is_null() {
            String::from("(no message)")
        } else {
            // SAFETY: the loader passes a NUL-terminated string.
            unsafe { CStr::from_ptr(data.p_message) }.to_string_lossy().into_owned()
        };
        log.push(format!("[{severity:?} {kind:?}] {text}"));
    });
    vk::FALSE
}

/// Everything buffers and kernels need to free themselves, shared by `Arc`.
pub(crate) struct Shared {
    pub(crate) _entry: ash::Entry,
    pub(crate) instance: ash::Instance,
    pub(crate) device: ash::Device,
    pub(crate) queue: vk::Queue,
    pub(crate) queue_family: u32,
    pub(crate) allocator: Mutex<ManuallyDrop<Allocator>>,
    pub(crate) debug_utils: Option<ash::ext::debug_utils::Device>,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    pub(crate) messages: Box<MessageLog>,
    pub(crate) info: DeviceInfo,
    /// [`GpuConfig::memory_budget`] and the bytes Kiln's buffers hold now.
    /// (`u64::MAX`: no budget)
    pub(crate) budget: AtomicU64,
    pub(crate) in_use: AtomicU64,
    /// With validation on: every live buffer by device address (size, name), so the
    /// recorder can report a kernel reaching a buffer it did not declare.
    pub(crate) registry: Option<Mutex<BTreeMap<u64, (u64, String)>>>,
    /// Standalone: Kiln created instance and device and destroys them. Embedded: the
    /// engine owns them.
    pub(crate) owned: bool,
}

/// What an engine hands Kiln to run on its own device (embedded mode). The engine
/// created the device with Vulkan 1.2 and the features `bufferDeviceAddress`,
/// `vulkanMemoryModel` and `vulkanMemoryModelDeviceScope` enabled; Kiln checks that
/// the device supports them but cannot see what was enabled.
#[derive(Clone, Copy, Debug)]
pub struct EmbeddedDevice {
    pub get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub instance: vk::Instance,
    pub physical_device: vk::PhysicalDevice,
    pub device: vk::Device,
    /// A queue family with compute; Kiln's own submissions (DDGI, the integrated
    /// frame, explicit reads; never the tracer's scene changes or traces) go to queue
    /// `queue_index` of it, and the engine submits
    /// the command buffers Kiln records into to a queue of this family.
    pub queue_family: u32,
    pub queue_index: u32,
    /// Command buffers in flight: a recording for slot `s` may reuse what the
    /// previous recording for `s` used, so that one must have completed. 1..=8.
    pub frames_in_flight: u32,
    /// The engine enabled `VK_EXT_debug_utils` on its instance: Kiln labels its passes.
    pub debug_utils: bool,
    /// Kiln's own checks (undeclared buffers) go to the validation messages; the
    /// validation layer's own messages go to the engine's messenger.
    pub validation: bool,
    /// As [`GpuConfig::memory_budget`].
    pub memory_budget: Option<u64>,
}

impl Shared {
    /// Takes `bytes` from the memory budget for buffer `name`.
    pub(crate) fn reserve(&self, name: &str, bytes: u64) -> Result<(), GpuError> {
        let before = self.in_use.fetch_add(bytes, Ordering::Relaxed);
        match self.budget.load(Ordering::Relaxed) {
            budget if before.saturating_add(bytes) > budget => {
                self.in_use.fetch_sub(bytes, Ordering::Relaxed);
                Err(GpuError::OutOfMemory(format!(
                    "buffer '{name}' needs {bytes} bytes; {before} of the {budget}-byte memory budget are in use"
                )))
            }
            _ => Ok(()),
        }
    }

    /// Returns `bytes` to the memory budget.
    pub(crate) fn release(&self, bytes: u64) {
        self.in_use.fetch_sub(bytes, Ordering::Relaxed);
    }

    pub(crate) fn allocator(&self) -> MutexGuard<'_, ManuallyDrop<Allocator>> {
        // A panic while holding the lock leaves the allocator usable: recover it.
        self.allocator.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Names a Vulkan object for captures and validation messages (no-op without
    /// debug utils).
    pub(crate) fn name_object<H: vk::Handle>(&self, handle: H, name: &str) {
        let (Some(debug), Ok(name)) = (&self.debug_utils, CString::new(name)) else { return };
        let info = vk::DebugUtilsObjectNameInfoEXT::default().object_handle(handle).object_name(&name);
        // SAFETY: the handle belongs to this device; the name outlives the call.
        let _ = unsafe { debug.set_debug_utils_object_name(&info) };
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let before = self.messages.len();
        // SAFETY: this is the last owner: every buffer, kernel and command pool holding
        // an `Arc<Shared>` is gone. Standalone, nothing uses the device after the idle
        // wait. Embedded, the engine's device and instance are left alone (and not
        // waited on: the engine finished the work Kiln recorded, per the contract).
        unsafe {
            if self.owned {
                let _ = self.device.device_wait_idle();
            }
            ManuallyDrop::drop(self.allocator.get_mut().unwrap_or_else(|poison| poison.into_inner()));
            if self.owned {
                self.device.destroy_device(None);
                if let Some((loader, messenger)) = self.messenger.take() {
                    loader.destroy_debug_utils_messenger(messenger, None);
                }
                self.instance.destroy_instance(None);
            }
        }
        let raised = self.messages.since(before);
        if !raised.is_empty() {
            for text in &raised {
                eprintln!("kiln: validation message at teardown: {text}");
            }
            TEARDOWN_MESSAGES.lock().unwrap_or_else(|p| p.into_inner()).extend(raised);
        }
    }
}

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";

/// Loads the Vulkan loader library.
fn load_entry() -> Result<ash::Entry, GpuError> {
    // SAFETY: loading the system loader runs its initialisers; that is the documented
    // way to use Vulkan and it is thread-safe.
    unsafe { ash::Entry::load() }.map_err(|err| GpuError::NoLoader(err.to_string()))
}

fn has_instance_layer(entry: &ash::Entry, name: &CStr) -> Result<bool, GpuError> {
    // SAFETY: plain enumeration through a loaded entry.
    let layers = unsafe { entry.enumerate_instance_layer_properties() }.call("vkEnumerateInstanceLayerProperties")?;
    Ok(layers.iter().any(|layer| layer.layer_name_as_c_str() == Ok(name)))
}

fn layer_has_extension(entry: &ash::Entry, layer: &CStr, name: &CStr) -> Result<bool, GpuError> {
    // SAFETY: plain enumeration through a loaded entry.
    let extensions = unsafe { entry.enumerate_instance_extension_properties(Some(layer)) }
        .call("vkEnumerateInstanceExtensionProperties")?;
    Ok(extensions.iter().any(|ext| ext.extension_name_as_c_str() == Ok(name)))
}

fn has_instance_extension(entry: &ash::Entry, name: &CStr) -> Result<bool, GpuError> {
    // SAFETY: plain enumeration through a loaded entry.
    let extensions = unsafe { entry.enumerate_instance_extension_properties(None) }
        .call("vkEnumerateInstanceExtensionProperties")?;
    Ok(extensions.iter().any(|ext| ext.extension_name_as_c_str() == Ok(name)))
}

/// A candidate device with the facts needed to rank and open it.
struct Candidate {
    physical: vk::PhysicalDevice,
    index: usize,
    info: DeviceInfo,
    queue_family: u32,
    missing: Vec<&'static str>,
}

fn describe(instance: &ash::Instance, physical: vk::PhysicalDevice, index: usize) -> Candidate {
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver).push_next(&mut subgroup);
    // SAFETY: `physical` came from this instance; the chained structs live on the stack.
    unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
    let props = props2.properties;
    let name = props.device_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let driver_text = format!(
        "{} {}",
        driver.driver_name_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        driver.driver_info_as_c_str().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    );
    let api = props.api_version;
    let api_version = (vk::api_version_major(api), vk::api_version_minor(api), vk::api_version_patch(api));

    // SAFETY: as above.
    let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
    let compute = |f: &vk::QueueFamilyProperties| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0;
    // Prefer a compute family with timestamps; a compute-only family (async compute)
    // is not chosen on purpose: Kiln's passes run in the engine's frame, and tests
    // want the simplest queue.
    let queue_family = families
        .iter()
        .position(|f| compute(f) && f.timestamp_valid_bits > 0)
        .or_else(|| families.iter().position(compute));

    let mut missing = Vec::new();
    if api_version < (1, 2, 0) {
        missing.push("Vulkan 1.2");
    }
    if queue_family.is_none() {
        missing.push("a compute queue");
    }
    if api_version >= (1, 2, 0) {
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut v12);
        // SAFETY: as above; Vulkan12Features is valid to chain on a 1.2 device.
        unsafe { instance.get_physical_device_features2(physical, &mut features) };
        for (present, name) in [
            (v12.buffer_device_address, "bufferDeviceAddress"),
            (v12.vulkan_memory_model, "vulkanMemoryModel"),
            (v12.vulkan_memory_model_device_scope, "vulkanMemoryModelDeviceScope"),
        ] {
            if present == vk::FALSE {
                missing.push(name);
            }
        }
    }
    let timestamps = queue_family
        .map(|f| families[f].timestamp_valid_bits > 0 && props.limits.timestamp_period > 0.0)
        .unwrap_or(false);
    Candidate {
        physical,
        index,
        info: DeviceInfo {
            name,
            kind: DeviceKind::from_vk(props.device_type),
            api_version,
            driver: driver_text.trim().to_owned(),
            subgroup_size: subgroup.subgroup_size,
            timestamp_period_ns: props.limits.timestamp_period,
            timestamps,
            max_group_count: props.limits.max_compute_work_group_count,
        },
        queue_family: queue_family.unwrap_or(0) as u32,
        missing,
    }
}

fn choose(mut candidates: Vec<Candidate>, choice: &DeviceChoice) -> Result<Candidate, GpuError> {
    let list = || candidates.iter().map(|c| format!("{}: {}", c.index, c.info.name)).collect::<Vec<_>>().join(", ");
    if candidates.is_empty() {
        return Err(GpuError::NoDevice("the Vulkan loader reports no physical device (no driver/ICD)".into()));
    }
    let position = match choice {
        DeviceChoice::Index(index) => candidates.iter().position(|c| c.index == *index),
        DeviceChoice::Name(name) => {
            let name = name.to_lowercase();
            candidates.iter().position(|c| c.info.name.to_lowercase().contains(&name))
        }
        DeviceChoice::Best => candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.missing.is_empty())
            .min_by_key(|(_, c)| (c.info.kind.rank(), c.index))
            .map(|(i, _)| i)
            .or(Some(0)),
    };
    let Some(position) = position else {
        return Err(GpuError::NoDevice(format!("no device matches {choice:?}; devices: {}", list())));
    };
    let chosen = candidates.swap_remove(position);
    if !chosen.missing.is_empty() {
        return Err(GpuError::NoDevice(format!("{} lacks {}", chosen.info.name, chosen.missing.join(", "))));
    }
    Ok(chosen)
}

impl Shared {
    /// Creates instance, device, queue and allocator (standalone mode).
    pub(crate) fn create(config: &GpuConfig) -> Result<Shared, GpuError> {
        let entry = load_entry()?;
        let debug_ext = ash::ext::debug_utils::NAME;
        let debug_available = has_instance_extension(&entry, debug_ext)?;
        if config.validation && !has_instance_layer(&entry, VALIDATION_LAYER)? {
            return Err(GpuError::MissingFeature(
                "VK_LAYER_KHRONOS_validation (install vulkan-validationlayers)".into(),
            ));
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"kiln")
            .engine_name(c"kiln")
            .api_version(vk::API_VERSION_1_2);
        let layers = if config.validation { vec![VALIDATION_LAYER.as_ptr()] } else { Vec::new() };
        let mut extensions = if debug_available { vec![debug_ext.as_ptr()] } else { Vec::new() };
        // With validation and `KILN_GPU_SYNC_VALIDATION=1`, the layer's synchronisation
        // validation too: hazards between passes (a read before the write it needs,
        // two unordered writes) are errors. Not by default: in the layer shipped with
        // Debian 12 (1.3.239) it keeps state past vkDestroyInstance that
        // LeakSanitizer reports from the unloaded layer.
        let features_ext = ash::ext::validation_features::NAME;
        let sync_wanted = std::env::var("KILN_GPU_SYNC_VALIDATION").is_ok_and(|v| v == "1");
        let sync_validation =
            config.validation && sync_wanted && layer_has_extension(&entry, VALIDATION_LAYER, features_ext)?;
        if sync_validation {
            extensions.push(features_ext.as_ptr());
        }
        let enabled_features = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut validation_features =
            vk::ValidationFeaturesEXT::default().enabled_validation_features(&enabled_features);
        let messages = Box::<MessageLog>::default();
        let mut messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
            )
            .message_type(
                vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                    | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                    | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
            )
            .pfn_user_callback(Some(debug_callback))
            .user_data(&*messages as *const MessageLog as *mut c_void);
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&extensions);
        if debug_available && config.validation {
            // Also catch messages from instance creation and destruction.
            info = info.push_next(&mut messenger_info);
        }
        if sync_validation {
            info = info.push_next(&mut validation_features);
        }
        // SAFETY: every pointer in `info` points at locals that outlive the call.
        let instance = unsafe { entry.create_instance(&info, None) }.call("vkCreateInstance")?;
        // From here on, failure must destroy the instance: `Partial` does it.
        let mut partial = Partial { instance: Some(instance.clone()), messenger: None };
        if debug_available && config.validation {
            let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
            // SAFETY: the messenger info is valid; its user data (the boxed log) lives
            // in `Shared` until after the messenger is destroyed.
            let messenger = unsafe { loader.create_debug_utils_messenger(&messenger_info, None) }
                .call("vkCreateDebugUtilsMessengerEXT")?;
            partial.messenger = Some((loader, messenger));
        }

        // SAFETY: plain enumeration on a live instance.
        let physicals = unsafe { instance.enumerate_physical_devices() }.call("vkEnumeratePhysicalDevices")?;
        let candidates = physicals.iter().enumerate().map(|(i, &p)| describe(&instance, p, i)).collect();
        let chosen = choose(candidates, &config.device)?;

        let priorities = [1.0f32];
        let queue_info = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(chosen.queue_family)
            .queue_priorities(&priorities)];
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default()
            .buffer_device_address(true)
            .vulkan_memory_model(true)
            .vulkan_memory_model_device_scope(true);
        let device_info = vk::DeviceCreateInfo::default().queue_create_infos(&queue_info).push_next(&mut v12);
        // SAFETY: `chosen.physical` belongs to `instance`; the features were checked.
        let device = unsafe { instance.create_device(chosen.physical, &device_info, None) }.call("vkCreateDevice")?;
        let debug = debug_available.then(|| ash::ext::debug_utils::Device::new(&instance, &device));
        let (instance, messenger) = partial.disarm();
        let mut shared = Shared::finish(
            entry,
            instance,
            chosen.physical,
            device,
            (chosen.queue_family, 0),
            debug,
            messenger,
            messages,
            chosen.info,
            true,
        )?;
        shared.budget = AtomicU64::new(config.memory_budget.unwrap_or(u64::MAX));
        if config.validation {
            shared.registry = Some(Mutex::new(BTreeMap::new()));
        }
        Ok(shared)
    }

    /// Loads Kiln's function pointers from an engine's instance and device.
    ///
    /// # Safety
    /// The handles are live, belong together, and were created by the loader behind
    /// `get_instance_proc_addr`; they outlive the returned context.
    pub(crate) unsafe fn import(desc: &EmbeddedDevice) -> Result<Shared, GpuError> {
        let null = |what: &str| GpuError::InvalidInput(format!("embedded device: {what} is null"));
        if desc.instance == vk::Instance::null() {
            return Err(null("the instance"));
        }
        if desc.physical_device == vk::PhysicalDevice::null() {
            return Err(null("the physical device"));
        }
        if desc.device == vk::Device::null() {
            return Err(null("the device"));
        }
        let static_fn = ash::StaticFn { get_instance_proc_addr: desc.get_instance_proc_addr };
        // SAFETY: the caller vouches for the function and the handles.
        let (entry, instance) = unsafe {
            let entry = ash::Entry::from_static_fn(static_fn);
            let instance = ash::Instance::load(entry.static_fn(), desc.instance);
            (entry, instance)
        };
        let mut candidate = describe(&instance, desc.physical_device, 0);
        candidate.missing.retain(|m| *m != "a compute queue");
        if !candidate.missing.is_empty() {
            return Err(GpuError::NoDevice(format!(
                "embedded device '{}' lacks {}",
                candidate.info.name,
                candidate.missing.join(", ")
            )));
        }
        // SAFETY: a live physical device of this instance.
        let families = unsafe { instance.get_physical_device_queue_family_properties(desc.physical_device) };
        let family = families.get(desc.queue_family as usize).ok_or_else(|| {
            GpuError::InvalidInput(format!(
                "embedded device: queue family {} of {} does not exist",
                desc.queue_family,
                families.len()
            ))
        })?;
        if !family.queue_flags.contains(vk::QueueFlags::COMPUTE) || desc.queue_index >= family.queue_count {
            return Err(GpuError::InvalidInput(format!(
                "embedded device: queue {} of family {} (flags {:?}, {} queues) is not a compute queue",
                desc.queue_index, desc.queue_family, family.queue_flags, family.queue_count
            )));
        }
        candidate.info.timestamps = family.timestamp_valid_bits > 0 && candidate.info.timestamp_period_ns > 0.0;
        // SAFETY: the caller vouches for the device handle.
        let device = unsafe { ash::Device::load(instance.fp_v1_0(), desc.device) };
        let debug = desc.debug_utils.then(|| ash::ext::debug_utils::Device::new(&instance, &device));
        let mut shared = Shared::finish(
            entry,
            instance,
            desc.physical_device,
            device,
            (desc.queue_family, desc.queue_index),
            debug,
            None,
            Box::default(),
            candidate.info,
            false,
        )?;
        shared.budget = AtomicU64::new(desc.memory_budget.unwrap_or(u64::MAX));
        if desc.validation {
            shared.registry = Some(Mutex::new(BTreeMap::new()));
        }
        Ok(shared)
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        entry: ash::Entry,
        instance: ash::Instance,
        physical: vk::PhysicalDevice,
        device: ash::Device,
        (queue_family, queue_index): (u32, u32),
        debug_utils: Option<ash::ext::debug_utils::Device>,
        messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
        messages: Box<MessageLog>,
        info: DeviceInfo,
        owned: bool,
    ) -> Result<Shared, GpuError> {
        // SAFETY: the family has this queue (created by Kiln, or checked on import).
        let queue = unsafe { device.get_device_queue(queue_family, queue_index) };
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: instance.clone(),
            device: device.clone(),
            physical_device: physical,
            debug_settings: Default::default(),
            buffer_device_address: true,
            allocation_sizes: Default::default(),
        });
        let allocator = match allocator {
            Ok(allocator) => allocator,
            Err(err) if !owned => return Err(err.into()),
            Err(err) => {
                // SAFETY: nothing was created on the device yet.
                unsafe {
                    device.destroy_device(None);
                    if let Some((loader, messenger)) = messenger {
                        loader.destroy_debug_utils_messenger(messenger, None);
                    }
                    instance.destroy_instance(None);
                }
                return Err(err.into());
            }
        };
        Ok(Shared {
            _entry: entry,
            instance,
            device,
            queue,
            queue_family,
            allocator: Mutex::new(ManuallyDrop::new(allocator)),
            debug_utils,
            messenger,
            messages,
            info,
            budget: AtomicU64::new(u64::MAX),
            in_use: AtomicU64::new(0),
            registry: None,
            owned,
        })
    }

    /// Warning and error messages collected so far.
    pub(crate) fn messages(&self) -> Vec<String> {
        self.messages.messages.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

/// Destroys a half-made instance (and its messenger) when creation fails midway.
struct Partial {
    instance: Option<ash::Instance>,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
}

impl Partial {
    #[allow(clippy::type_complexity)]
    fn disarm(mut self) -> (ash::Instance, Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>) {
        let instance = self.instance.take().expect("instance present until disarmed");
        (instance, self.messenger.take())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        let Some(instance) = self.instance.take() else { return };
        // SAFETY: creation failed before a device was made; nothing else uses these.
        unsafe {
            if let Some((loader, messenger)) = self.messenger.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            instance.destroy_instance(None);
        }
    }
}

/// Shared handle used by buffers and kernels.
pub(crate) type SharedRef = Arc<Shared>;
