//! The basic C types every part of the API shares (vectors, boxes, rotations,
//! transforms) and their conversions and checks. Every other C module imports them
//! from here; this module imports none of them.

use kiln_core::math::{Aabb, IVec3, Isometry, Quat, Vec3};

use crate::abi::{non_null, Error, KILN_ERROR_INVALID_ARGUMENT};

/// A 3D vector of floats.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnVec3 {
    /// X.
    pub x: f32,
    /// Y (up).
    pub y: f32,
    /// Z.
    pub z: f32,
}

/// A 3D vector of integers (voxel and chunk coordinates).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnInt3 {
    /// X.
    pub x: i32,
    /// Y (up).
    pub y: i32,
    /// Z.
    pub z: i32,
}

/// An axis-aligned box; valid when finite and `min <= max` on every axis.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnAabb {
    /// Lower corner.
    pub min: KilnVec3,
    /// Upper corner.
    pub max: KilnVec3,
}

/// A rotation as a unit quaternion (`w` is the scalar part).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnQuat {
    /// X of the vector part.
    pub x: f32,
    /// Y of the vector part.
    pub y: f32,
    /// Z of the vector part.
    pub z: f32,
    /// Scalar part.
    pub w: f32,
}

/// A rigid placement: rotate by `rotation`, then move by `position`. The rotation
/// must be finite and of unit length within 1% (Kiln renormalises it).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnTransform {
    /// Translation.
    pub position: KilnVec3,
    /// Rotation.
    pub rotation: KilnQuat,
}

pub(crate) fn vec3(v: KilnVec3) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

pub(crate) fn kvec(v: Vec3) -> KilnVec3 {
    KilnVec3 { x: v.x, y: v.y, z: v.z }
}

pub(crate) fn ivec(v: KilnInt3) -> IVec3 {
    IVec3::new(v.x, v.y, v.z)
}

pub(crate) fn kint(v: IVec3) -> KilnInt3 {
    KilnInt3 { x: v.x, y: v.y, z: v.z }
}

/// Reads and checks a box argument.
pub(crate) fn read_aabb(ptr: *const KilnAabb, name: &str) -> Result<Aabb, Error> {
    let ptr = non_null(ptr, name)?;
    // SAFETY: non-null; readable per the caller's contract.
    let b = unsafe { ptr.read() };
    let aabb = Aabb::new(Vec3::new(b.min.x, b.min.y, b.min.z), Vec3::new(b.max.x, b.max.y, b.max.z));
    if !aabb.is_valid() {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{name}` {b:?} is not a finite box with min <= max"),
        ));
    }
    Ok(aabb)
}

/// Checks a transform: finite, rotation of unit length within 1%.
pub(crate) fn check_transform(t: &KilnTransform, name: &str) -> Result<Isometry, Error> {
    let q = Quat::from_xyzw(t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w);
    let p = vec3(t.position);
    if !p.is_finite() || !q.is_finite() || (q.length() - 1.0).abs() > 0.01 {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{name}` {t:?} needs a finite position and a unit quaternion rotation"),
        ));
    }
    Ok(Isometry::new(p, q.normalize()))
}

/// Reads and checks a transform argument.
pub(crate) fn read_transform(ptr: *const KilnTransform, name: &str) -> Result<Isometry, Error> {
    let ptr = non_null(ptr, name)?;
    // SAFETY: non-null; readable per the caller's contract.
    check_transform(unsafe { &ptr.read() }, name)
}
