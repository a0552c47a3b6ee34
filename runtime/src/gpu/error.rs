//! What can go wrong on the GPU side, as one error type.

use ash::vk;
use std::fmt;

/// A GPU failure. Every variant carries enough text to act on; none of them is a
/// panic, and after any of them the CPU side of Kiln keeps working.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuError {
    /// The Vulkan loader (`libvulkan.so.1`, `vulkan-1.dll`) could not be loaded.
    NoLoader(String),
    /// The loader works but offers no usable device (no ICD, or no device with Vulkan
    /// 1.2, a compute queue and the features Kiln needs), or the requested device
    /// name or index matches none.
    NoDevice(String),
    /// A layer, extension or feature Kiln was asked to use is missing.
    MissingFeature(String),
    /// Host or device memory ran out.
    OutOfMemory(String),
    /// The device was lost (driver reset, hang, removal). The context is unusable.
    DeviceLost,
    /// A buffer, size or argument was refused before any Vulkan call.
    InvalidInput(String),
    /// Any other Vulkan error, with the call that returned it.
    Vulkan { call: &'static str, result: vk::Result },
}

impl GpuError {
    /// Maps a Vulkan result of `call` to the matching variant.
    pub(crate) fn vk(call: &'static str, result: vk::Result) -> GpuError {
        match result {
            vk::Result::ERROR_DEVICE_LOST => GpuError::DeviceLost,
            vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => {
                GpuError::OutOfMemory(format!("{call}: {result:?}"))
            }
            vk::Result::ERROR_INCOMPATIBLE_DRIVER | vk::Result::ERROR_INITIALIZATION_FAILED => {
                GpuError::NoDevice(format!("{call}: {result:?} (no Vulkan driver is installed or it is too old)"))
            }
            _ => GpuError::Vulkan { call, result },
        }
    }
}

impl From<gpu_allocator::AllocationError> for GpuError {
    fn from(err: gpu_allocator::AllocationError) -> GpuError {
        match err {
            gpu_allocator::AllocationError::OutOfMemory => GpuError::OutOfMemory("gpu-allocator: out of memory".into()),
            other => GpuError::InvalidInput(format!("gpu-allocator: {other}")),
        }
    }
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoLoader(why) => write!(f, "no Vulkan loader: {why}"),
            GpuError::NoDevice(why) => write!(f, "no usable Vulkan device: {why}"),
            GpuError::MissingFeature(what) => write!(f, "missing Vulkan feature: {what}"),
            GpuError::OutOfMemory(why) => write!(f, "out of memory: {why}"),
            GpuError::DeviceLost => write!(f, "the Vulkan device was lost"),
            GpuError::InvalidInput(why) => write!(f, "invalid GPU input: {why}"),
            GpuError::Vulkan { call, result } => write!(f, "{call} failed: {result:?}"),
        }
    }
}

impl std::error::Error for GpuError {}

/// Shorthand used by every Vulkan call site.
pub(crate) trait VkContext<T> {
    fn call(self, call: &'static str) -> Result<T, GpuError>;
}

impl<T> VkContext<T> for Result<T, vk::Result> {
    fn call(self, call: &'static str) -> Result<T, GpuError> {
        self.map_err(|result| GpuError::vk(call, result))
    }
}

impl From<crate::raytrace::SceneError> for GpuError {
    fn from(err: crate::raytrace::SceneError) -> GpuError {
        GpuError::InvalidInput(err.0)
    }
}
