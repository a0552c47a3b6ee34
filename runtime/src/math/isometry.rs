//! A rigid transform: a unit rotation followed by a translation.

use glam::{Mat3, Quat, Vec3};

/// `x -> rotation * x + translation`. The rotation is a unit quaternion; shapes and
/// queries never scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Isometry {
    pub rotation: Quat,
    pub translation: Vec3,
}

impl Default for Isometry {
    fn default() -> Self {
        Isometry::IDENTITY
    }
}

impl Isometry {
    pub const IDENTITY: Isometry = Isometry { rotation: Quat::IDENTITY, translation: Vec3::ZERO };

    pub const fn new(translation: Vec3, rotation: Quat) -> Isometry {
        Isometry { rotation, translation }
    }

    pub const fn from_translation(translation: Vec3) -> Isometry {
        Isometry { rotation: Quat::IDENTITY, translation }
    }

    /// The seven components' bits: equal exactly when anything computed from the
    /// two placements is (`==` takes -0 for 0 and never a NaN for itself).
    pub fn bits(&self) -> [u32; 7] {
        let (q, t) = (self.rotation, self.translation);
        [q.x, q.y, q.z, q.w, t.x, t.y, t.z].map(f32::to_bits)
    }

    /// Finite translation and a finite rotation within 1e-3 of unit length.
    pub fn is_valid(&self) -> bool {
        self.translation.is_finite() && self.rotation.is_finite() && (self.rotation.length_squared() - 1.0).abs() < 2e-3
    }

    #[inline]
    pub fn transform_point(&self, p: Vec3) -> Vec3 {
        self.rotation * p + self.translation
    }

    #[inline]
    pub fn transform_vector(&self, v: Vec3) -> Vec3 {
        self.rotation * v
    }

    #[inline]
    pub fn inverse_transform_point(&self, p: Vec3) -> Vec3 {
        self.rotation.inverse() * (p - self.translation)
    }

    #[inline]
    pub fn inverse_transform_vector(&self, v: Vec3) -> Vec3 {
        self.rotation.inverse() * v
    }

    pub fn inverse(&self) -> Isometry {
        let r = self.rotation.inverse();
        Isometry { rotation: r, translation: -(r * self.translation) }
    }

    /// `self * other`: first `other`, then `self`.
    #[inline]
    pub fn mul(&self, other: &Isometry) -> Isometry {
        Isometry { rotation: self.rotation * other.rotation, translation: self.transform_point(other.translation) }
    }

    /// `self⁻¹ * other`: `other` expressed in `self`'s frame.
    #[inline]
    pub fn inv_mul(&self, other: &Isometry) -> Isometry {
        let r = self.rotation.inverse();
        Isometry { rotation: r * other.rotation, translation: r * (other.translation - self.translation) }
    }

    pub fn matrix(&self) -> Mat3 {
        Mat3::from_quat(self.rotation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_and_invert() {
        let a = Isometry::new(Vec3::new(1.0, 2.0, 3.0), Quat::from_rotation_y(0.7));
        let b = Isometry::new(Vec3::new(-4.0, 0.5, 2.0), Quat::from_rotation_x(-1.1));
        let p = Vec3::new(0.3, -0.2, 0.9);
        let ab = a.mul(&b);
        assert!(ab.transform_point(p).abs_diff_eq(a.transform_point(b.transform_point(p)), 1e-5));
        assert!(a.inverse().transform_point(a.transform_point(p)).abs_diff_eq(p, 1e-5));
        assert!(a.inv_mul(&ab).transform_point(p).abs_diff_eq(b.transform_point(p), 1e-5));
        assert!(a.inverse_transform_point(p).abs_diff_eq(a.inverse().transform_point(p), 1e-5));
        assert!(a.is_valid());
        assert!(!Isometry::new(Vec3::NAN, Quat::IDENTITY).is_valid());
        assert!(!Isometry::new(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 2.0)).is_valid());
    }
}
