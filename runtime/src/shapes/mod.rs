//! Collision shapes: sphere, capsule, box, convex hull, compound of convex parts, and
//! triangle. Every shape is validated when it is made (a bad shape is an error, never
//! a NaN later), reports its bounds under a transform, and its mass properties from a
//! density.
//!
//! Rounded shapes are a *core* plus a radius: a sphere is a point, a capsule a segment
//! (see `collide`). Boxes, hulls and triangles are polyhedra behind the one
//! [`Polytope`] view the separating-axis test reads; boxes and triangles provide it
//! from closed forms, so they cost no heap.

mod block;
mod hull;
mod mass;
pub mod polytope;
mod ray;
mod submerged;

use std::fmt;
use std::sync::Arc;

use glam::{Mat3, Vec3};

pub use hull::{ConvexHull, MAX_HULL_VERTICES};
pub use mass::MassProperties;
pub use polytope::{ArcTable, BoxPoly, Plane, PolyEdge, Polytope, TrianglePoly, MAX_FACE_VERTICES};
pub(crate) use polytope::{BOX_EDGE_AXES, BOX_FACES};
pub use ray::ShapeRayHit;
pub use submerged::{sphere_below, Prism, SurfaceMesh, VolumeMoments};

use crate::codec::{Codec, Corrupt, Fingerprint, Reader, ShapeTables, Shared, TakeNew, Writer};
use crate::math::{Aabb, Isometry};

/// Largest magnitude (m) of any coordinate, radius or half extent of a shape, and of
/// a compound part's offset. Beyond it, products in contact and mass computations
/// leave `f32` range (a sphere of radius 1e30 made NaN velocities), and nothing that
/// large is one rigid piece in a game.
pub const MAX_EXTENT: f32 = 1.0e5;

/// Why a shape was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// A coordinate, radius or transform is NaN or infinite.
    NotFinite,
    /// A radius or half extent is zero or negative (or the box is flat).
    NonPositive,
    /// A coordinate, radius, half extent or part offset is larger than [`MAX_EXTENT`].
    TooLarge,
    /// Fewer than 4 points not in one plane (hull), or a zero-area triangle.
    Degenerate,
    /// The hull would keep more than [`MAX_HULL_VERTICES`] vertices or a face with
    /// more than [`MAX_FACE_VERTICES`].
    TooManyVertices,
    /// A compound with no parts, or with a part that is a compound or a triangle.
    BadCompound,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShapeError::NotFinite => "a coordinate, radius or transform is NaN or infinite",
            ShapeError::NonPositive => "a radius or half extent is zero or negative",
            ShapeError::TooLarge => "a coordinate, radius, half extent or part offset is beyond 1e5 m (MAX_EXTENT)",
            ShapeError::Degenerate => "the points do not span a volume (hull) or an area (triangle)",
            ShapeError::TooManyVertices => "the hull has more than 256 vertices or a face with more than 64",
            ShapeError::BadCompound => "a compound needs at least one part, and parts must be convex shapes",
        })
    }
}

impl std::error::Error for ShapeError {}

/// A convex part of a compound, placed by `pose` in the compound's frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompoundPart {
    pub pose: Isometry,
    pub shape: Shape,
    /// The part's bounds in the compound's frame.
    pub bounds: Aabb,
}

/// Convex parts with local poses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compound {
    parts: Vec<CompoundPart>,
    bounds: Aabb,
    fingerprint: Fingerprint,
}

crate::codec::fields!(CompoundPart { pose, shape, bounds });
crate::codec::fields!(Compound { parts, bounds });

impl Compound {
    pub fn parts(&self) -> &[CompoundPart] {
        &self.parts
    }

    pub fn bounds(&self) -> Aabb {
        self.bounds
    }

    /// The checksum of the compound's snapshot encoding (its hull parts by their
    /// fingerprints), by which snapshots name it.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint.get(self)
    }

    /// A compound read from its snapshot encoding `bytes`, its hull parts from `hulls`.
    pub(crate) fn from_snapshot(bytes: &[u8], tables: ShapeTables) -> Result<Compound, Corrupt> {
        let mut r = Reader::new(bytes, 0, tables);
        let compound = Compound::take_new(&mut r)?;
        if r.remaining() != 0 || compound.parts.iter().any(|p| !p.shape.is_convex()) {
            return Err(Corrupt);
        }
        compound.fingerprint.set_from(bytes);
        Ok(compound)
    }
}

/// A collision shape in its local frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Sphere {
        center: Vec3,
        radius: f32,
    },
    /// The points within `radius` of the segment `a`-`b` (`a == b` is a sphere).
    Capsule {
        a: Vec3,
        b: Vec3,
        radius: f32,
    },
    /// A box centred on the origin.
    Box {
        half: Vec3,
    },
    Hull(Arc<ConvexHull>),
    Compound(Arc<Compound>),
    /// A one-sided-by-convention triangle (front: counter-clockwise). Triangles have
    /// no volume, so a body made of them can only be static.
    Triangle([Vec3; 3]),
}

/// A placeholder for a shape about to be read (see `codec`).
impl Default for Shape {
    fn default() -> Shape {
        Shape::Box { half: Vec3::ZERO }
    }
}

/// Hulls and compounds are written as their fingerprints and read from the
/// snapshot's shape tables (`World::restore_bytes`).
impl Codec for Shape {
    fn put(&self, w: &mut Writer) {
        match self {
            Shape::Sphere { center, radius } => (0u8, *center, *radius).put(w),
            Shape::Capsule { a, b, radius } => {
                (1u8, *a, *b).put(w);
                radius.put(w);
            }
            Shape::Box { half } => (2u8, *half).put(w),
            Shape::Hull(h) => (3u8, h.fingerprint()).put(w),
            Shape::Compound(c) => (4u8, c.fingerprint()).put(w),
            Shape::Triangle(t) => (5u8, *t).put(w),
        }
    }

    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        fn find<T: Send + Sync + 'static>(table: &[(u64, Shared)], print: u64) -> Result<Arc<T>, Corrupt> {
            let at = table.binary_search_by_key(&print, |e| e.0).map_err(|_| Corrupt)?;
            table[at].1.clone().downcast::<T>().map_err(|_| Corrupt)
        }
        *self = match r.tag(6)? {
            0 => Shape::Sphere { center: Vec3::take_new(r)?, radius: f32::take_new(r)? },
            1 => Shape::Capsule { a: Vec3::take_new(r)?, b: Vec3::take_new(r)?, radius: f32::take_new(r)? },
            2 => Shape::Box { half: Vec3::take_new(r)? },
            3 => Shape::Hull(find(r.tables.hulls, u64::take_new(r)?)?),
            4 => Shape::Compound(find(r.tables.compounds, u64::take_new(r)?)?),
            _ => Shape::Triangle(<[Vec3; 3]>::take_new(r)?),
        };
        Ok(())
    }
}

impl Shape {
    pub fn sphere(center: Vec3, radius: f32) -> Result<Shape, ShapeError> {
        in_range(&[center, Vec3::splat(radius)])?;
        positive(radius)?;
        Ok(Shape::Sphere { center, radius })
    }

    pub fn capsule(a: Vec3, b: Vec3, radius: f32) -> Result<Shape, ShapeError> {
        in_range(&[a, b, Vec3::splat(radius)])?;
        positive(radius)?;
        Ok(Shape::Capsule { a, b, radius })
    }

    /// A box with half extents `half`, centred on the origin.
    pub fn cuboid(half: Vec3) -> Result<Shape, ShapeError> {
        in_range(&[half])?;
        positive(half.min_element())?;
        Ok(Shape::Box { half })
    }

    /// The convex hull of `points` (see [`ConvexHull::new`]).
    pub fn hull(points: &[Vec3]) -> Result<Shape, ShapeError> {
        Ok(Shape::Hull(Arc::new(ConvexHull::new(points)?)))
    }

    pub fn triangle(v: [Vec3; 3]) -> Result<Shape, ShapeError> {
        in_range(&v)?;
        TrianglePoly::new(v).ok_or(ShapeError::Degenerate)?;
        Ok(Shape::Triangle(v))
    }

    /// Convex parts (sphere, capsule, box, hull) with valid poses.
    pub fn compound(parts: impl IntoIterator<Item = (Isometry, Shape)>) -> Result<Shape, ShapeError> {
        let mut out = Vec::new();
        let mut bounds = Aabb::EMPTY;
        for (pose, shape) in parts {
            if !pose.is_valid() {
                return Err(ShapeError::NotFinite);
            }
            in_range(&[pose.translation])?;
            if matches!(shape, Shape::Compound(_) | Shape::Triangle(_)) {
                return Err(ShapeError::BadCompound);
            }
            let pose = Isometry { rotation: pose.rotation.normalize(), ..pose };
            let part_bounds = shape.aabb(&pose);
            bounds = bounds.union(&part_bounds);
            out.push(CompoundPart { pose, shape, bounds: part_bounds });
        }
        if out.is_empty() {
            return Err(ShapeError::BadCompound);
        }
        Ok(Shape::Compound(Arc::new(Compound { parts: out, bounds, fingerprint: Fingerprint::default() })))
    }

    /// Whether the shape is one convex piece (everything but compounds).
    pub fn is_convex(&self) -> bool {
        !matches!(self, Shape::Compound(_))
    }

    /// Bounds of the shape in its own frame: [`Shape::aabb`] at the identity, without
    /// the rotation's arithmetic (the narrowphase takes it for every manifold it
    /// makes).
    pub fn local_aabb(&self) -> Aabb {
        match self {
            Shape::Sphere { center, radius } => Aabb::from_center_half_extents(*center, Vec3::splat(*radius)),
            Shape::Capsule { a, b, radius } => Aabb::new(a.min(*b), a.max(*b)).expanded(*radius),
            Shape::Box { half } => Aabb::new(-*half, *half),
            Shape::Hull(hull) => hull.bounds(),
            Shape::Compound(c) => c.bounds,
            Shape::Triangle(v) => Aabb::new(v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2])),
        }
    }

    /// A sphere holding the shape in its own frame, as its centre and radius: exact
    /// for a sphere, capsule and box, around the centroid for a hull, around the box
    /// for a compound or a triangle. Two shapes whose spheres are farther apart than a
    /// margin are farther apart than it themselves (the narrowphase's first test).
    pub fn bounding_sphere(&self) -> (Vec3, f32) {
        match self {
            Shape::Sphere { center, radius } => (*center, *radius),
            Shape::Capsule { a, b, radius } => (0.5 * (*a + *b), 0.5 * (*b - *a).length() + radius),
            Shape::Box { half } => (Vec3::ZERO, half.length()),
            Shape::Hull(hull) => (Polytope::centroid(hull.as_ref()), Polytope::outer_radius(hull.as_ref())),
            Shape::Compound(_) | Shape::Triangle(_) => {
                let b = self.local_aabb();
                (b.center(), 0.5 * (b.max - b.min).length())
            }
        }
    }

    /// Bounds of the shape placed by `xf` (exact but for a compound's, the union of
    /// its parts').
    pub fn aabb(&self, xf: &Isometry) -> Aabb {
        match self {
            Shape::Sphere { center, radius } => {
                Aabb::from_center_half_extents(xf.transform_point(*center), Vec3::splat(*radius))
            }
            Shape::Capsule { a, b, radius } => {
                let (a, b) = (xf.transform_point(*a), xf.transform_point(*b));
                Aabb::new(a.min(b), a.max(b)).expanded(*radius)
            }
            Shape::Box { half } => rotated_box(xf, Vec3::ZERO, *half),
            Shape::Hull(hull) => hull.placed_bounds(xf),
            Shape::Compound(c) => c.parts.iter().fold(Aabb::EMPTY, |acc, p| acc.union(&p.shape.aabb(&xf.mul(&p.pose)))),
            Shape::Triangle(v) => {
                let w = v.map(|p| xf.transform_point(p));
                Aabb::new(w[0].min(w[1]).min(w[2]), w[0].max(w[1]).max(w[2]))
            }
        }
    }

    /// Mass, centre of mass and inertia about it, in the shape's frame, for a uniform
    /// `density` (kg/m³). Triangles have no volume: zero mass.
    pub fn mass_properties(&self, density: f32) -> MassProperties {
        match self {
            Shape::Sphere { center, radius } => MassProperties::sphere(*center, *radius, density),
            Shape::Capsule { a, b, radius } => MassProperties::capsule(*a, *b, *radius, density),
            Shape::Box { half } => MassProperties::cuboid(*half, density),
            Shape::Hull(h) => {
                MassProperties { mass: h.volume() * density, center: h.centroid(), inertia: h.unit_inertia() * density }
            }
            Shape::Compound(c) => {
                MassProperties::combine(c.parts.iter().map(|p| p.shape.mass_properties(density).transformed(&p.pose)))
            }
            Shape::Triangle(v) => MassProperties { mass: 0.0, center: (v[0] + v[1] + v[2]) / 3.0, inertia: Mat3::ZERO },
        }
    }
}

fn rotated_box(xf: &Isometry, center: Vec3, half: Vec3) -> Aabb {
    let m = xf.matrix();
    let extent = Mat3::from_cols(m.x_axis.abs(), m.y_axis.abs(), m.z_axis.abs()) * half;
    Aabb::from_center_half_extents(xf.transform_point(center), extent)
}

/// Every value finite and within [`MAX_EXTENT`].
pub(crate) fn in_range(values: &[Vec3]) -> Result<(), ShapeError> {
    if !values.iter().all(|v| v.is_finite()) {
        return Err(ShapeError::NotFinite);
    }
    values.iter().all(|v| v.abs().max_element() <= MAX_EXTENT).then_some(()).ok_or(ShapeError::TooLarge)
}

fn positive(x: f32) -> Result<(), ShapeError> {
    (x > 0.0).then_some(()).ok_or(ShapeError::NonPositive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    #[test]
    fn invalid_shapes_are_refused() {
        assert_eq!(Shape::sphere(Vec3::ZERO, 0.0), Err(ShapeError::NonPositive));
        assert_eq!(Shape::sphere(Vec3::ZERO, -1.0), Err(ShapeError::NonPositive));
        assert_eq!(Shape::sphere(Vec3::ZERO, f32::NAN), Err(ShapeError::NotFinite));
        assert_eq!(Shape::sphere(Vec3::INFINITY, 1.0), Err(ShapeError::NotFinite));
        assert_eq!(Shape::capsule(Vec3::ZERO, Vec3::X, 0.0), Err(ShapeError::NonPositive));
        assert_eq!(Shape::capsule(Vec3::ZERO, Vec3::NAN, 1.0), Err(ShapeError::NotFinite));
        assert_eq!(Shape::cuboid(Vec3::new(1.0, 0.0, 1.0)), Err(ShapeError::NonPositive));
        assert_eq!(Shape::cuboid(Vec3::new(1.0, -2.0, 1.0)), Err(ShapeError::NonPositive));
        assert_eq!(Shape::triangle([Vec3::ZERO, Vec3::X, Vec3::X * 3.0]), Err(ShapeError::Degenerate));
        assert_eq!(Shape::triangle([Vec3::ZERO, Vec3::X, Vec3::NAN]), Err(ShapeError::NotFinite));
        assert_eq!(Shape::compound([]), Err(ShapeError::BadCompound));
        let tri = Shape::triangle([Vec3::ZERO, Vec3::X, Vec3::Y]).unwrap();
        assert_eq!(Shape::compound([(Isometry::IDENTITY, tri)]), Err(ShapeError::BadCompound));
        let ball = Shape::sphere(Vec3::ZERO, 1.0).unwrap();
        let bad_pose = Isometry::from_translation(Vec3::NAN);
        assert_eq!(Shape::compound([(bad_pose, ball.clone())]), Err(ShapeError::NotFinite));
        let far = Isometry::from_translation(Vec3::Z * 2.0 * MAX_EXTENT);
        assert_eq!(Shape::compound([(far, ball.clone())]), Err(ShapeError::TooLarge));
        let nested = Shape::compound([(Isometry::IDENTITY, ball)]).unwrap();
        assert_eq!(Shape::compound([(Isometry::IDENTITY, nested)]), Err(ShapeError::BadCompound));
        // Sizes beyond MAX_EXTENT (the fuzzer's sphere of radius 1e30 turned its
        // contacts NaN); the limit itself is allowed.
        assert!(Shape::sphere(Vec3::ZERO, MAX_EXTENT).is_ok());
        assert_eq!(Shape::sphere(Vec3::ZERO, 1e30), Err(ShapeError::TooLarge));
        assert_eq!(Shape::sphere(Vec3::X * -1e6, 1.0), Err(ShapeError::TooLarge));
        assert_eq!(Shape::capsule(Vec3::ZERO, Vec3::Y * 1e6, 1.0), Err(ShapeError::TooLarge));
        assert_eq!(Shape::cuboid(Vec3::new(1.0, 2e5, 1.0)), Err(ShapeError::TooLarge));
        assert_eq!(Shape::triangle([Vec3::ZERO, Vec3::X, Vec3::Y * 1e9]), Err(ShapeError::TooLarge));
        let far_points = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z * 1e6];
        assert_eq!(Shape::hull(&far_points).err(), Some(ShapeError::TooLarge));
    }

    #[test]
    fn bounds_contain_the_shape() {
        let xf = Isometry::new(Vec3::new(1.0, 2.0, 3.0), Quat::from_rotation_z(std::f32::consts::FRAC_PI_4));
        let b = Shape::cuboid(Vec3::new(1.0, 1.0, 0.5)).unwrap().aabb(&xf);
        let r = std::f32::consts::SQRT_2;
        assert!(b.min.abs_diff_eq(Vec3::new(1.0 - r, 2.0 - r, 2.5), 1e-5), "{b:?}");
        let c = Shape::capsule(Vec3::ZERO, Vec3::X * 2.0, 0.5).unwrap().aabb(&Isometry::IDENTITY);
        assert_eq!(c, Aabb::new(Vec3::splat(-0.5), Vec3::new(2.5, 0.5, 0.5)));
        let compound = Shape::compound([
            (Isometry::from_translation(Vec3::X * 5.0), Shape::sphere(Vec3::ZERO, 1.0).unwrap()),
            (Isometry::IDENTITY, Shape::cuboid(Vec3::ONE).unwrap()),
        ])
        .unwrap();
        assert_eq!(compound.aabb(&Isometry::IDENTITY), Aabb::new(Vec3::splat(-1.0), Vec3::new(6.0, 1.0, 1.0)));
    }

    #[test]
    fn local_bounds_are_the_bounds_at_the_identity() {
        let hull = Shape::hull(&[Vec3::ZERO, Vec3::new(2.0, 0.5, 0.0), Vec3::new(0.3, 1.5, -1.0), Vec3::Z]).unwrap();
        let shapes = [
            Shape::sphere(Vec3::new(0.5, -1.0, 2.0), 0.75).unwrap(),
            Shape::capsule(Vec3::new(1.0, 2.0, 0.0), Vec3::new(-1.0, 0.5, 3.0), 0.25).unwrap(),
            Shape::cuboid(Vec3::new(0.5, 1.5, 2.5)).unwrap(),
            hull.clone(),
            Shape::compound([
                (Isometry::from_translation(Vec3::X * 5.0), Shape::sphere(Vec3::ZERO, 1.0).unwrap()),
                (Isometry::new(Vec3::Y, Quat::from_rotation_x(0.7)), hull),
            ])
            .unwrap(),
            Shape::triangle([Vec3::ZERO, Vec3::new(1.0, 2.0, -3.0), Vec3::new(-0.5, 0.25, 1.0)]).unwrap(),
        ];
        for shape in &shapes {
            let (local, placed) = (shape.local_aabb(), shape.aabb(&Isometry::IDENTITY));
            assert!(
                local.min.abs_diff_eq(placed.min, 1e-6) && local.max.abs_diff_eq(placed.max, 1e-6),
                "{shape:?}: {local:?} vs {placed:?}"
            );
        }
    }
}
