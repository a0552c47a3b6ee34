//! Ray tests for every shape, in the shape's own frame: sphere and capsule by their
//! quadratics, box by slabs, hull by clipping the ray against its face planes
//! (Cyrus–Beck, as Box2D's polygon ray cast), triangle by the watertight test the
//! terrain uses, compound by its parts.
//!
//! Solid shapes are solid (Jolt's default): a ray starting inside one hits at `t = 0`
//! with the normal against the ray. Triangles have no inside; they are hit from either
//! side and report their front (counter-clockwise) normal, as terrain triangles do.

use glam::Vec3;

use super::{Polytope, Shape};
use crate::math::{ray_triangle, triangle_normal, Ray};

/// Where a ray meets a shape: `point = ray.at(t)`, `normal` unit, in the frame the
/// ray was given in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeRayHit {
    pub t: f32,
    pub normal: Vec3,
}

impl Shape {
    /// The first point of the shape on `ray` with `t` in `[0, max_t]` (`t` in
    /// multiples of `ray.dir`), the ray in the shape's frame. Compounds report their
    /// earliest part (the lower part on equal `t`).
    pub fn ray_cast(&self, ray: &Ray, max_t: f32) -> Option<ShapeRayHit> {
        if !ray.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return None;
        }
        match self {
            Shape::Sphere { center, radius } => sphere(ray, *center, *radius, max_t),
            Shape::Capsule { a, b, radius } => capsule(ray, *a, *b, *radius, max_t),
            Shape::Box { half } => cuboid(ray, *half, max_t),
            Shape::Hull(hull) => polytope(ray, hull.as_ref(), max_t),
            Shape::Triangle(v) => {
                let hit = ray_triangle(ray, *v, 0.0, max_t)?;
                Some(ShapeRayHit { t: hit.t, normal: triangle_normal(*v) })
            }
            Shape::Compound(c) => {
                let mut best: Option<ShapeRayHit> = None;
                for part in c.parts() {
                    let local = Ray::new(
                        part.pose.inverse_transform_point(ray.origin),
                        part.pose.inverse_transform_vector(ray.dir),
                    );
                    let limit = best.map_or(max_t, |b| b.t);
                    if let Some(hit) = part.shape.ray_cast(&local, limit) {
                        if best.is_none_or(|b| hit.t < b.t) {
                            best = Some(ShapeRayHit { t: hit.t, normal: part.pose.transform_vector(hit.normal) });
                        }
                    }
                }
                best
            }
        }
    }
}

/// The hit of a ray starting inside a solid: at the origin, facing the ray.
fn inside(ray: &Ray) -> ShapeRayHit {
    ShapeRayHit { t: 0.0, normal: -ray.dir.normalize() }
}

/// Entry of the ray into a ball, by the distance along the unit direction from the
/// point of the line nearest the centre (exact for far origins, unlike the raw
/// quadratic's `b² - ac`).
fn sphere(ray: &Ray, center: Vec3, radius: f32, max_t: f32) -> Option<ShapeRayHit> {
    let m = ray.origin - center;
    if m.length_squared() <= radius * radius {
        return Some(inside(ray));
    }
    let length = ray.dir.length();
    let unit = ray.dir / length;
    let along = -m.dot(unit);
    if along < 0.0 {
        return None;
    }
    let nearest = m + unit * along;
    let h2 = radius * radius - nearest.length_squared();
    if h2 < 0.0 {
        return None;
    }
    let s = along - h2.sqrt();
    let t = s / length;
    (t <= max_t).then(|| ShapeRayHit { t, normal: (m + unit * s).normalize() })
}

/// Entry into a capsule from outside: the earliest of the side of its cylinder
/// (within the segment) and its two end balls, which together bound it.
fn capsule(ray: &Ray, a: Vec3, b: Vec3, radius: f32, max_t: f32) -> Option<ShapeRayHit> {
    let axis = b - a;
    let len2 = axis.length_squared();
    let m = ray.origin - a;
    let s0 = if len2 > 0.0 { (m.dot(axis) / len2).clamp(0.0, 1.0) } else { 0.0 };
    if (m - axis * s0).length_squared() <= radius * radius {
        return Some(inside(ray));
    }
    let mut best = sphere(ray, a, radius, max_t);
    let mut keep = |hit: Option<ShapeRayHit>| {
        if let Some(h) = hit {
            if best.is_none_or(|b| h.t < b.t) {
                best = Some(h);
            }
        }
    };
    keep(sphere(ray, b, radius, max_t));
    if len2 > 0.0 {
        let e = axis / len2.sqrt();
        let (dp, mp) = (ray.dir - e * ray.dir.dot(e), m - e * m.dot(e));
        let a2 = dp.length_squared();
        if a2 > f32::EPSILON * ray.dir.length_squared() {
            let half_b = mp.dot(dp);
            let disc = half_b * half_b - a2 * (mp.length_squared() - radius * radius);
            if disc >= 0.0 && half_b < 0.0 {
                let t = (-half_b - disc.sqrt()) / a2;
                let s = (m + ray.dir * t).dot(axis);
                if t >= 0.0 && t <= max_t && (0.0..=len2).contains(&s) {
                    keep(Some(ShapeRayHit { t, normal: (mp + dp * t).normalize() }));
                }
            }
        }
    }
    best
}

/// Slabs of a box centred on the origin; the entry face is the slab entered last.
fn cuboid(ray: &Ray, half: Vec3, max_t: f32) -> Option<ShapeRayHit> {
    let (mut lower, mut upper, mut axis) = (f32::NEG_INFINITY, max_t, usize::MAX);
    for k in 0..3 {
        let (o, d) = (ray.origin[k], ray.dir[k]);
        if d == 0.0 {
            if o.abs() > half[k] {
                return None;
            }
            continue;
        }
        let (t1, t2) = ((-half[k] - o) / d, (half[k] - o) / d);
        let (near, far) = (t1.min(t2), t1.max(t2));
        if near > lower {
            lower = near;
            axis = k;
        }
        upper = upper.min(far);
    }
    if lower > upper || upper < 0.0 {
        return None;
    }
    if lower < 0.0 || axis == usize::MAX {
        // Inside every slab: the origin is in the box.
        return Some(inside(ray));
    }
    let mut normal = Vec3::ZERO;
    normal[axis] = -ray.dir[axis].signum();
    Some(ShapeRayHit { t: lower, normal })
}

/// Cyrus–Beck: the ray is clipped to the inside of every face plane; the entry is the
/// plane entered last.
fn polytope(ray: &Ray, p: &impl Polytope, max_t: f32) -> Option<ShapeRayHit> {
    let (mut lower, mut upper, mut face) = (0.0f32, max_t, usize::MAX);
    for f in 0..p.face_count() {
        let plane = p.plane(f);
        // Distance to the plane, positive while the origin is inside it.
        let num = plane.offset - plane.normal.dot(ray.origin);
        let den = plane.normal.dot(ray.dir);
        if den == 0.0 {
            if num < 0.0 {
                return None;
            }
        } else if den < 0.0 {
            let t = num / den;
            if t > lower {
                lower = t;
                face = f;
            }
        } else {
            upper = upper.min(num / den);
        }
        if upper < lower {
            return None;
        }
    }
    Some(match face {
        usize::MAX => inside(ray),
        f => ShapeRayHit { t: lower, normal: p.plane(f).normal },
    })
}

#[cfg(test)]
#[path = "ray_tests.rs"]
mod tests;
