//! Linear blend skinning on the GPU (`vulkan-shaders/skin.comp`); its CPU reference
//! and the skinning inputs are in `raytrace::skin`.

use super::buffer::GpuBuffer;
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::SkinPush;
use super::queue::Gpu;
use super::recorder::{Recorder, Use};
use super::shaders;
use crate::raytrace::{BoneMatrix, SkinData};

/// A skinned mesh's inputs on the device.
pub struct GpuSkin {
    rest: GpuBuffer,
    joints: GpuBuffer,
    weights: GpuBuffer,
    pub bones: GpuBuffer,
    pub vertex_count: u32,
    pub bone_count: u32,
}

impl GpuSkin {
    /// Buffers sized for `data`, left empty: [`GpuSkin::record_upload`] fills them
    /// inside a recording (an embedded device's command buffer).
    pub fn empty(gpu: &Gpu, data: &SkinData) -> Result<GpuSkin, GpuError> {
        let buffer = |name: &str, bytes: usize| gpu.buffer(name, bytes.max(4) as u64, super::BufferMemory::Device);
        Ok(GpuSkin {
            rest: buffer("skin rest positions", 12 * data.rest.len())?,
            joints: buffer("skin joints", 8 * data.joints.len())?,
            weights: buffer("skin weights", 16 * data.weights.len())?,
            bones: gpu.buffer("skin bones", 48 * u64::from(data.bone_count), super::BufferMemory::Device)?,
            vertex_count: data.rest.len() as u32,
            bone_count: data.bone_count,
        })
    }

    /// Records the upload of `data` into buffers from [`GpuSkin::empty`].
    pub fn record_upload(&self, rec: &mut Recorder<'_>, data: &SkinData) -> Result<u64, GpuError> {
        rec.upload(&self.rest, 0, bytemuck::cast_slice(&data.rest))?;
        rec.upload(&self.joints, 0, bytemuck::cast_slice(&data.joints))?;
        rec.upload(&self.weights, 0, bytemuck::cast_slice(&data.weights))?;
        Ok((12 * data.rest.len() + 8 * data.joints.len() + 16 * data.weights.len()) as u64)
    }

    pub fn upload(gpu: &mut Gpu, data: &SkinData) -> Result<GpuSkin, GpuError> {
        Ok(GpuSkin {
            rest: gpu.buffer_from("skin rest positions", &data.rest)?,
            joints: gpu.buffer_from("skin joints", &data.joints)?,
            weights: gpu.buffer_from("skin weights", &data.weights)?,
            bones: gpu.buffer("skin bones", 48 * u64::from(data.bone_count), super::BufferMemory::Device)?,
            vertex_count: data.rest.len() as u32,
            bone_count: data.bone_count,
        })
    }
}

/// The skinning kernel.
pub struct Skin {
    kernel: Kernel,
}

impl Skin {
    pub fn new(gpu: &Gpu) -> Result<Skin, GpuError> {
        Ok(Skin { kernel: gpu.kernel(&shaders::SKIN)? })
    }

    /// Uploads `bones` and records the skinning of `skin` into `out` (3 floats per
    /// vertex).
    pub fn record(
        &self,
        rec: &mut Recorder<'_>,
        skin: &GpuSkin,
        bones: &[BoneMatrix],
        out: &GpuBuffer,
    ) -> Result<(), GpuError> {
        self.record_at(rec, skin, bones, out, out.address())
    }

    /// As [`Skin::record`], writing at `address`, which must lie inside `out`.
    pub(crate) fn record_at(
        &self,
        rec: &mut Recorder<'_>,
        skin: &GpuSkin,
        bones: &[BoneMatrix],
        out: &GpuBuffer,
        address: u64,
    ) -> Result<(), GpuError> {
        if bones.len() != skin.bone_count as usize {
            return Err(GpuError::InvalidInput(format!(
                "skin: {} bones given, {} expected",
                bones.len(),
                skin.bone_count
            )));
        }
        if bones.iter().flatten().flatten().any(|c| !c.is_finite()) {
            return Err(GpuError::InvalidInput("skin: a bone matrix has a NaN or infinite entry".into()));
        }
        rec.upload(&skin.bones, 0, bytemuck::cast_slice(bones))?;
        self.record_posed(rec, skin, &skin.bones, 0, out, address)
    }

    /// Records the skinning of `skin` with the bones already in `bones` at byte
    /// `bone_offset`, writing at `address`, which must lie inside `out`.
    pub(crate) fn record_posed(
        &self,
        rec: &mut Recorder<'_>,
        skin: &GpuSkin,
        bones: &GpuBuffer,
        bone_offset: u64,
        out: &GpuBuffer,
        address: u64,
    ) -> Result<(), GpuError> {
        let offset = address.checked_sub(out.address()).unwrap_or(u64::MAX);
        out.check_range("skin output", offset, 12 * u64::from(skin.vertex_count))?;
        bones.check_range("skin bones", bone_offset, 48 * u64::from(skin.bone_count))?;
        let push = SkinPush {
            rest: skin.rest.address(),
            joints: skin.joints.address(),
            weights: skin.weights.address(),
            bones: bones.address() + bone_offset,
            skinned: address,
            vertex_count: skin.vertex_count,
            bone_count: skin.bone_count,
        };
        let uses = [
            Use::read(&skin.rest),
            Use::read(&skin.joints),
            Use::read(&skin.weights),
            Use::read(bones),
            Use::write(out),
        ];
        rec.dispatch_threads(&self.kernel, &push, skin.vertex_count, &uses)
    }
}
