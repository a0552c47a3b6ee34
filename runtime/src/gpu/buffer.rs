//! GPU buffers: one `VkBuffer` + one gpu-allocator allocation + its device address.
//!
//! Every buffer is usable as a storage buffer, a copy source and destination, and
//! through its device address; kernels see it only as that 64-bit address. Device
//! buffers live in device-local memory; the staging ring and read-back buffers are
//! host-visible (see `recorder.rs`).

use super::context::SharedRef;
use super::error::{GpuError, VkContext};
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::MemoryLocation;

/// Where a buffer's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferMemory {
    /// Device-local: what kernels read and write.
    Device,
    /// Host-visible, written by the CPU and read by the GPU (staging).
    Upload,
    /// Host-visible and cached, written by the GPU and read by the CPU.
    Readback,
}

/// The largest buffer Kiln creates (4 GiB - 1: offsets in kernels are 32-bit).
pub const MAX_BUFFER_BYTES: u64 = u32::MAX as u64;

/// A buffer on the device. Frees itself on drop; the caller makes sure no submitted
/// work still uses it (Kiln's own submissions wait before returning).
pub struct GpuBuffer {
    shared: SharedRef,
    pub(crate) buffer: vk::Buffer,
    allocation: Option<Allocation>,
    size: u64,
    /// Bytes taken from the memory budget (the allocation's size).
    reserved: u64,
    address: vk::DeviceAddress,
    memory: BufferMemory,
}

impl GpuBuffer {
    pub(crate) fn new(shared: &SharedRef, name: &str, size: u64, memory: BufferMemory) -> Result<GpuBuffer, GpuError> {
        if size == 0 || size > MAX_BUFFER_BYTES {
            return Err(GpuError::InvalidInput(format!(
                "buffer '{name}': size {size} is outside 1..={MAX_BUFFER_BYTES} bytes"
            )));
        }
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS;
        let info = vk::BufferCreateInfo::default().size(size).usage(usage).sharing_mode(vk::SharingMode::EXCLUSIVE);
        let device = &shared.device;
        // SAFETY: valid create info on a live device.
        let buffer = unsafe { device.create_buffer(&info, None) }.call("vkCreateBuffer")?;
        // SAFETY: `buffer` was just created on this device.
        let requirements = unsafe { device.get_buffer_memory_requirements(buffer) };
        if let Err(err) = shared.reserve(name, requirements.size) {
            // SAFETY: the buffer is unbound and unused.
            unsafe { device.destroy_buffer(buffer, None) };
            return Err(err);
        }
        let location = match memory {
            BufferMemory::Device => MemoryLocation::GpuOnly,
            BufferMemory::Upload => MemoryLocation::CpuToGpu,
            BufferMemory::Readback => MemoryLocation::GpuToCpu,
        };
        let allocation = shared.allocator().allocate(&AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        });
        let allocation = match allocation {
            Ok(allocation) => allocation,
            Err(err) => {
                shared.release(requirements.size);
                // SAFETY: the buffer is unbound and unused.
                unsafe { device.destroy_buffer(buffer, None) };
                return Err(err.into());
            }
        };
        // SAFETY: the allocation satisfies the buffer's requirements.
        let bound = unsafe { device.bind_buffer_memory(buffer, allocation.memory(), allocation.offset()) };
        if let Err(result) = bound {
            let _ = shared.allocator().free(allocation);
            shared.release(requirements.size);
            // SAFETY: the buffer is unused.
            unsafe { device.destroy_buffer(buffer, None) };
            return Err(GpuError::vk("vkBindBufferMemory", result));
        }
        // SAFETY: the buffer has SHADER_DEVICE_ADDRESS usage and bound memory.
        let address =
            unsafe { device.get_buffer_device_address(&vk::BufferDeviceAddressInfo::default().buffer(buffer)) };
        shared.name_object(buffer, name);
        if let Some(registry) = &shared.registry {
            registry.lock().unwrap_or_else(|p| p.into_inner()).insert(address, (size, name.to_owned()));
        }
        let reserved = requirements.size;
        Ok(GpuBuffer { shared: shared.clone(), buffer, allocation: Some(allocation), size, reserved, address, memory })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The address kernels use (`buffer_reference`).
    pub fn address(&self) -> u64 {
        self.address
    }

    pub fn memory(&self) -> BufferMemory {
        self.memory
    }

    /// The raw handle, for an engine that records its own commands on the buffer.
    pub fn raw(&self) -> vk::Buffer {
        self.buffer
    }

    /// Host view of a host-visible buffer (`Upload`, `Readback`).
    pub(crate) fn mapped(&self) -> Option<&[u8]> {
        self.allocation.as_ref()?.mapped_slice().map(|s| &s[..self.size as usize])
    }

    pub(crate) fn mapped_mut(&mut self) -> Option<&mut [u8]> {
        let size = self.size as usize;
        self.allocation.as_mut()?.mapped_slice_mut().map(|s| &mut s[..size])
    }

    /// Checks that `[offset, offset + len)` lies inside the buffer.
    pub(crate) fn check_range(&self, what: &str, offset: u64, len: u64) -> Result<(), GpuError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(GpuError::InvalidInput(format!(
                "{what}: range {offset}+{len} exceeds the buffer's {} bytes",
                self.size
            ))),
        }
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        if let Some(allocation) = self.allocation.take() {
            let _ = self.shared.allocator().free(allocation);
        }
        self.shared.release(self.reserved);
        if let Some(registry) = &self.shared.registry {
            registry.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.address);
        }
        // SAFETY: Kiln waits for its submissions before returning, so the buffer is no
        // longer in use; it belongs to this device.
        unsafe { self.shared.device.destroy_buffer(self.buffer, None) };
    }
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer").field("size", &self.size).field("memory", &self.memory).finish()
    }
}
