//! Mass properties: mass, centre of mass, and the inertia tensor about the centre, in
//! the shape's frame, from closed forms for spheres, capsules and boxes, tetrahedra
//! for hulls (see `hull.rs`), and the parallel-axis theorem for compounds.

use std::f32::consts::PI;

use glam::{Mat3, Vec3};

use crate::math::Isometry;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MassProperties {
    pub mass: f32,
    pub center: Vec3,
    /// About `center`, axes of the shape's frame.
    pub inertia: Mat3,
}

impl MassProperties {
    /// The inverse of the inertia tensor. The tensor is scaled to unit size first: a
    /// plain 3×3 inverse forms the determinant, the cube of the entries, which leaves
    /// `f32` range for a 140 m box of water (entries near 1e13) although the inverse
    /// itself is ordinary. Not finite when the tensor is singular or not finite.
    pub fn inverse_inertia(&self) -> Mat3 {
        let scale = self.inertia.abs().to_cols_array().into_iter().fold(0.0f32, f32::max);
        if !(scale > 0.0 && scale.is_finite()) {
            return Mat3::from_diagonal(Vec3::splat(f32::INFINITY));
        }
        (self.inertia * scale.recip()).inverse() * scale.recip()
    }

    pub fn sphere(center: Vec3, radius: f32, density: f32) -> MassProperties {
        let mass = density * 4.0 / 3.0 * PI * radius * radius * radius;
        MassProperties { mass, center, inertia: Mat3::from_diagonal(Vec3::splat(0.4 * mass * radius * radius)) }
    }

    /// A cylinder of the segment's length plus two hemispherical caps.
    pub fn capsule(a: Vec3, b: Vec3, radius: f32, density: f32) -> MassProperties {
        let axis = b - a;
        let h = axis.length();
        let r2 = radius * radius;
        let cylinder = density * PI * r2 * h;
        let caps = density * 4.0 / 3.0 * PI * r2 * radius;
        let axial = cylinder * r2 / 2.0 + caps * 0.4 * r2;
        // Caps: each hemisphere's centre sits 3r/8 beyond the segment's end.
        let perpendicular =
            cylinder * (h * h / 12.0 + r2 / 4.0) + caps * (0.4 * r2 + h * h / 4.0 + 3.0 * h * radius / 8.0);
        let u = if h > 0.0 { axis / h } else { Vec3::Y };
        let inertia = Mat3::from_diagonal(Vec3::splat(perpendicular)) + outer(u, u) * (axial - perpendicular);
        MassProperties { mass: cylinder + caps, center: (a + b) * 0.5, inertia }
    }

    pub fn cuboid(half: Vec3, density: f32) -> MassProperties {
        let mass = density * 8.0 * half.x * half.y * half.z;
        let s = half * half;
        let inertia = Mat3::from_diagonal(Vec3::new(s.y + s.z, s.x + s.z, s.x + s.y) * (mass / 3.0));
        MassProperties { mass, center: Vec3::ZERO, inertia }
    }

    /// These properties of a part placed by `pose` in its parent's frame.
    pub fn transformed(&self, pose: &Isometry) -> MassProperties {
        let r = pose.matrix();
        MassProperties {
            mass: self.mass,
            center: pose.transform_point(self.center),
            inertia: r * self.inertia * r.transpose(),
        }
    }

    /// The parts together: summed mass, mass-weighted centre, inertias shifted to it
    /// by the parallel-axis theorem. Massless parts count for nothing.
    pub fn combine(parts: impl Iterator<Item = MassProperties> + Clone) -> MassProperties {
        let mass: f32 = parts.clone().map(|p| p.mass).sum();
        if mass <= 0.0 {
            let n = parts.clone().count().max(1) as f32;
            return MassProperties {
                mass: 0.0,
                center: parts.map(|p| p.center).sum::<Vec3>() / n,
                inertia: Mat3::ZERO,
            };
        }
        let center = parts.clone().map(|p| p.center * p.mass).sum::<Vec3>() / mass;
        let inertia = parts.fold(Mat3::ZERO, |acc, p| {
            let d = p.center - center;
            acc + p.inertia + (Mat3::from_diagonal(Vec3::splat(d.dot(d))) - outer(d, d)) * p.mass
        });
        MassProperties { mass, center, inertia }
    }
}

fn outer(a: Vec3, b: Vec3) -> Mat3 {
    Mat3::from_cols(a * b.x, a * b.y, a * b.z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes::Shape;
    use glam::Quat;

    /// The inverse tensor of very large and very small bodies is exact, where a plain
    /// inverse's determinant overflows (1e13³) or underflows (1e-15³).
    #[test]
    fn inverse_inertia_of_large_and_small_bodies() {
        let turned = Isometry::new(Vec3::ZERO, Quat::from_rotation_y(0.4) * Quat::from_rotation_x(0.3));
        for (half, density) in
            [(Vec3::new(70.0, 20.0, 50.0), 1000.0), (Vec3::splat(1e5), 1000.0), (Vec3::splat(1e-3), 1.0)]
        {
            let m = MassProperties::cuboid(half, density).transformed(&turned);
            let inv = m.inverse_inertia();
            assert!(inv.is_finite(), "{half}: {inv}");
            let product = (inv * m.inertia).to_cols_array();
            for (got, want) in product.iter().zip(Mat3::IDENTITY.to_cols_array()) {
                assert!((got - want).abs() < 1e-4, "{half}: inverse times tensor {product:?}");
            }
        }
        let flat = MassProperties { mass: 1.0, center: Vec3::ZERO, inertia: Mat3::ZERO };
        assert!(!flat.inverse_inertia().is_finite());
    }

    fn diag(m: Mat3) -> Vec3 {
        Vec3::new(m.x_axis.x, m.y_axis.y, m.z_axis.z)
    }

    #[test]
    fn closed_forms() {
        let s = MassProperties::sphere(Vec3::X, 2.0, 3.0);
        assert!((s.mass - 3.0 * 4.0 / 3.0 * PI * 8.0).abs() < 1e-3);
        assert!(diag(s.inertia).abs_diff_eq(Vec3::splat(0.4 * s.mass * 4.0), 1e-2));
        let b = MassProperties::cuboid(Vec3::new(1.0, 2.0, 3.0), 0.5);
        assert_eq!(b.mass, 24.0);
        assert!(diag(b.inertia).abs_diff_eq(Vec3::new(8.0 * 13.0, 8.0 * 10.0, 8.0 * 5.0), 1e-3));
        // A capsule of zero length is a sphere.
        let c = MassProperties::capsule(Vec3::ONE, Vec3::ONE, 1.5, 2.0);
        let sphere = MassProperties::sphere(Vec3::ONE, 1.5, 2.0);
        assert!((c.mass - sphere.mass).abs() < 1e-3);
        assert!(diag(c.inertia).abs_diff_eq(diag(sphere.inertia), 1e-3));
    }

    /// A capsule's mass and inertia match a voxel sum, and rotating the capsule
    /// rotates its tensor.
    #[test]
    fn capsule_matches_a_voxel_sum() {
        let (r, h) = (0.5f32, 2.0f32);
        let c = MassProperties::capsule(Vec3::new(0.0, -h / 2.0, 0.0), Vec3::new(0.0, h / 2.0, 0.0), r, 1.0);
        let n = 120;
        let cell = (h + 2.0 * r) / n as f32;
        let (mut mass, mut ixx, mut iyy) = (0.0f64, 0.0f64, 0.0f64);
        for x in 0..n {
            for y in 0..n {
                for z in 0..n {
                    let p = (Vec3::new(x as f32, y as f32, z as f32) + 0.5) * cell - Vec3::splat((h + 2.0 * r) / 2.0);
                    let on_axis = Vec3::new(0.0, p.y.clamp(-h / 2.0, h / 2.0), 0.0);
                    if p.distance(on_axis) <= r {
                        let dm = (cell * cell * cell) as f64;
                        mass += dm;
                        ixx += dm * (p.y * p.y + p.z * p.z) as f64;
                        iyy += dm * (p.x * p.x + p.z * p.z) as f64;
                    }
                }
            }
        }
        assert!((c.mass as f64 - mass).abs() / mass < 0.01, "{} vs {mass}", c.mass);
        assert!((c.inertia.x_axis.x as f64 - ixx).abs() / ixx < 0.02, "{} vs {ixx}", c.inertia.x_axis.x);
        assert!((c.inertia.y_axis.y as f64 - iyy).abs() / iyy < 0.02, "{} vs {iyy}", c.inertia.y_axis.y);
        let q = Quat::from_rotation_z(0.9);
        let rotated =
            MassProperties::capsule(q * Vec3::new(0.0, -h / 2.0, 0.0), q * Vec3::new(0.0, h / 2.0, 0.0), r, 1.0);
        let m = Mat3::from_quat(q);
        let expect = m * c.inertia * m.transpose();
        assert!(rotated.inertia.abs_diff_eq(expect, 1e-4));
    }

    /// Two boxes side by side as a compound equal one long box.
    #[test]
    fn compound_uses_the_parallel_axis_theorem() {
        let half = Vec3::new(0.5, 0.5, 0.5);
        let compound = Shape::compound([
            (Isometry::from_translation(Vec3::new(-0.5, 0.0, 0.0)), Shape::cuboid(half).unwrap()),
            (Isometry::from_translation(Vec3::new(0.5, 0.0, 0.0)), Shape::cuboid(half).unwrap()),
        ])
        .unwrap();
        let m = compound.mass_properties(2.0);
        let whole = MassProperties::cuboid(Vec3::new(1.0, 0.5, 0.5), 2.0);
        assert!((m.mass - whole.mass).abs() < 1e-5);
        assert!(m.center.abs_diff_eq(Vec3::ZERO, 1e-6));
        assert!(m.inertia.abs_diff_eq(whole.inertia, 1e-4), "{} vs {}", m.inertia, whole.inertia);
        // A hull of the same box agrees with the closed form.
        let corners: Vec<Vec3> = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 != 0 { 1.0 } else { -1.0 },
                    if i & 2 != 0 { 0.5 } else { -0.5 },
                    if i & 4 != 0 { 0.5 } else { -0.5 },
                )
            })
            .collect();
        let hull = Shape::hull(&corners).unwrap().mass_properties(2.0);
        assert!((hull.mass - whole.mass).abs() < 1e-5);
        assert!(hull.inertia.abs_diff_eq(whole.inertia, 1e-4));
    }
}
