//! Linear blend skinning on the CPU, the reference of `vulkan-shaders/skin.comp`: up to
//! four joints per vertex, bones as affine 3x4 row matrices.

use super::SceneError;

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
    ) -> Result<SkinData, SceneError> {
        let bad = |why: String| Err(SceneError(format!("skin: {why}")));
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
