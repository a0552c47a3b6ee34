//! Linear blend skinning on the GPU (`vulkan-shaders/skin.comp`) and its CPU
//! reference: up to four joints per vertex, bones as affine 3x4 row matrices.

use super::buffer::GpuBuffer;
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::SkinPush;
use super::queue::Gpu;
use super::recorder::{Recorder, Use};
use super::shaders;

/// An affine bone transform: three rows of `[m0, m1, m2, translation]`.
pub type BoneMatrix = [[f32; 4]; 3];

/// The skinning inputs of one mesh, validated.
#[derive(Clone, Debug)]
pub struct SkinData {
    pub rest: Vec<[f32; 3]>,
    pub joints: Vec<[u16; 4]>,
    pub weights: Vec<[f32; 4]>,
    pub bone_count: u32,
}

impl SkinData {
    /// Checks lengths, finite values, non-negative weights, joints below
    /// `bone_count`, and `1..=65536` bones.
    pub fn new(
        rest: Vec<[f32; 3]>,
        joints: Vec<[u16; 4]>,
        weights: Vec<[f32; 4]>,
        bone_count: u32,
    ) -> Result<SkinData, GpuError> {
        let bad = |why: String| Err(GpuError::InvalidInput(format!("skin: {why}")));
        if rest.len() != joints.len() || rest.len() != weights.len() {
            return bad(format!(
                "{} positions, {} joint sets, {} weight sets",
                rest.len(),
                joints.len(),
                weights.len()
            ));
        }
        if bone_count == 0 || bone_count > 65536 {
            return bad(format!("{bone_count} bones (1..=65536 allowed)"));
        }
        if let Some(v) = rest.iter().position(|p| !p.iter().all(|c| c.is_finite())) {
            return bad(format!("vertex {v} has a NaN or infinite position"));
        }
        if let Some(v) = weights.iter().position(|w| !w.iter().all(|c| c.is_finite() && *c >= 0.0)) {
            return bad(format!("vertex {v} has a negative, NaN or infinite weight"));
        }
        if let Some(v) = joints.iter().position(|j| j.iter().any(|&b| u32::from(b) >= bone_count)) {
            return bad(format!("vertex {v} names a joint outside 0..{bone_count}"));
        }
        Ok(SkinData { rest, joints, weights, bone_count })
    }

    /// CPU reference of the kernel, in the kernel's order of operations.
    pub fn skin(&self, bones: &[BoneMatrix]) -> Vec<[f32; 3]> {
        self.rest
            .iter()
            .zip(&self.joints)
            .zip(&self.weights)
            .map(|((&rest, joints), weights)| {
                let mut p = [0.0f32; 3];
                for i in 0..4 {
                    let bone = &bones[usize::from(joints[i]).min(bones.len() - 1)];
                    for (row, out) in bone.iter().zip(&mut p) {
                        let moved = row[0] * rest[0] + row[1] * rest[1] + row[2] * rest[2] + row[3];
                        *out += weights[i] * moved;
                    }
                }
                p
            })
            .collect()
    }
}

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
        let offset = address.checked_sub(out.address()).unwrap_or(u64::MAX);
        out.check_range("skin output", offset, 12 * u64::from(skin.vertex_count))?;
        rec.upload(&skin.bones, 0, bytemuck::cast_slice(bones))?;
        let push = SkinPush {
            rest: skin.rest.address(),
            joints: skin.joints.address(),
            weights: skin.weights.address(),
            bones: skin.bones.address(),
            skinned: address,
            vertex_count: skin.vertex_count,
            bone_count: skin.bone_count,
        };
        let uses = [
            Use::read(&skin.rest),
            Use::read(&skin.joints),
            Use::read(&skin.weights),
            Use::read(&skin.bones),
            Use::write(out),
        ];
        rec.dispatch_threads(&self.kernel, &push, skin.vertex_count, &uses)
    }
}
