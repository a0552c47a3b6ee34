//! Collision shapes and pairwise queries through the C ABI: create shapes, read their
//! bounds and mass, and ask two placed shapes for their distance, contact manifolds
//! and time of impact.
//!
//! Shapes are immutable once created, so any number of threads may query with the
//! same shape at once. A compound copies its parts: destroying a part's shape later
//! does not change the compound.

use kiln_core::collide::{collide_all, shape_distance, shape_time_of_impact, Sweep, ToiState};
use kiln_core::shapes::{Shape, ShapeError};

use crate::abi::{ffi_call, non_null, read_checked, CountedOut, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT};
use crate::handles::HandleTable;
use crate::types::{check_transform, kvec, read_transform, vec3, KilnAabb, KilnQuat, KilnTransform, KilnVec3};

/// Handle to a shape. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnShapeId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed shape's handles no longer match.
    pub generation: u32,
}

/// One part of a compound: a convex shape (sphere, capsule, box or hull) placed in
/// the compound's frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnCompoundPart {
    /// The part's shape (copied into the compound).
    pub shape: KilnShapeId,
    /// Where the part sits in the compound's frame.
    pub pose: KilnTransform,
}

/// Mass, centre of mass and inertia of a shape of uniform density.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnMassProperties {
    /// Mass in kilograms (density × volume).
    pub mass: f32,
    /// Centre of mass in the shape's frame.
    pub center: KilnVec3,
    /// Inertia tensor about `center` in the shape's axes, column-major 3x3.
    pub inertia: [f32; 9],
}

/// The distance between two placed shapes, from `kiln_shape_distance`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnDistanceResult {
    /// Gap between the surfaces in metres: negative when only the rounded parts
    /// (sphere and capsule radii) overlap, zero when the cores overlap.
    pub distance: f32,
    /// Closest point on A's surface (world space).
    pub point_a: KilnVec3,
    /// Closest point on B's surface.
    pub point_b: KilnVec3,
    /// Unit vector from A towards B; zero when `overlap`.
    pub normal: KilnVec3,
    /// The cores overlap: the shapes penetrate deeper than their radii; use
    /// `kiln_shape_contact` for the depth and normal.
    pub overlap: bool,
}

/// One contact point of a manifold.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnContactPoint {
    /// World position midway between the two surfaces.
    pub point: KilnVec3,
    /// Distance between the surfaces along the normal; negative when they overlap.
    pub separation: f32,
    /// Which features touch: stable while the same features touch, for matching
    /// points across frames (warm starting).
    pub id: u32,
}

/// A contact manifold between one convex piece of A and one of B.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnManifold {
    /// Unit normal from A to B: moving B along it separates them.
    pub normal: KilnVec3,
    /// Valid entries of `points` (1 to 4).
    pub point_count: u32,
    /// The contact points, chosen to span the largest area.
    pub points: [KilnContactPoint; 4],
    /// Index of A's compound part (0 when A is not a compound).
    pub part_a: u32,
    /// Index of B's compound part (0 when B is not a compound).
    pub part_b: u32,
}

/// A rigid motion over `t` in `[0, 1]`: the point `local_center` (in the shape's
/// frame, usually its centre of mass) moves on a straight line from where `start`
/// puts it to where `end` puts it, while the rotation turns from `start`'s to `end`'s.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnSweep {
    /// Placement at `t = 0`.
    pub start: KilnTransform,
    /// Placement at `t = 1`.
    pub end: KilnTransform,
    /// The point that moves on a straight line, in the shape's frame.
    pub local_center: KilnVec3,
}

/// The shapes stay apart over the interval; `t` is `t_max`.
pub const KILN_TOI_SEPARATED: u32 = 0;
/// They come within the target distance at `t`.
pub const KILN_TOI_HIT: u32 = 1;
/// They already overlap at `t = 0`.
pub const KILN_TOI_OVERLAPPING: u32 = 2;
/// The iteration bound ran out; the shapes are still apart at `t`, a safe time to
/// advance to.
pub const KILN_TOI_FAILED: u32 = 3;

/// The first time two moving shapes touch, from `kiln_shape_time_of_impact`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnToiResult {
    /// `KILN_TOI_SEPARATED`, `KILN_TOI_HIT`, `KILN_TOI_OVERLAPPING` or `KILN_TOI_FAILED`.
    pub state: u32,
    /// Time of the event in `[0, t_max]`.
    pub t: f32,
    /// Unit normal from A to B at a hit; zero otherwise.
    pub normal: KilnVec3,
    /// World point midway between the shapes at a hit.
    pub point: KilnVec3,
    /// Distance queries used.
    pub iterations: u32,
}

/// Most points `kiln_shape_create_hull` takes (the hull keeps at most 256 vertices).
pub const KILN_MAX_HULL_INPUT_POINTS: u32 = 1 << 16;
/// Most parts of a compound.
pub const KILN_MAX_COMPOUND_PARTS: u32 = 1 << 16;
/// Largest magnitude (m) of any shape coordinate, radius or half extent, of a compound
/// part's offset and of a shape's offset on its body. Larger shapes are refused:
/// their contacts and mass leave `float` range.
pub const KILN_SHAPE_MAX_EXTENT: f32 = 1.0e5;
const _: () = assert!(KILN_SHAPE_MAX_EXTENT == kiln_core::shapes::MAX_EXTENT);

static SHAPES: HandleTable<Shape> = HandleTable::new("shape");

/// A copy of the shape behind a handle (cheap: hulls and compounds are shared).
pub(crate) fn shape_of(id: KilnShapeId) -> Result<Shape, Error> {
    SHAPES.read(id.index1, id.generation, Shape::clone)
}

fn shape_error(error: ShapeError) -> Error {
    Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("shape refused: {error}"))
}

fn finite_number(value: f32, name: &str) -> Result<f32, Error> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("{name} is {value}, must be finite")))
    }
}

/// Stores a shape and writes its handle.
fn create(out: *mut KilnShapeId, make: impl FnOnce() -> Result<Shape, Error>) -> Result<(), Error> {
    let out = non_null(out, "out_shape")?;
    let shape = make()?;
    let (index1, generation) = SHAPES.insert(shape);
    // SAFETY: non-null and writable per the contract.
    unsafe { out.cast_mut().write(KilnShapeId { index1, generation }) };
    Ok(())
}

/// The identity transform: no rotation, at the origin.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_transform_identity() -> KilnTransform {
    KilnTransform { position: KilnVec3::default(), rotation: KilnQuat { x: 0.0, y: 0.0, z: 0.0, w: 1.0 } }
}

/// Creates a sphere of `radius` (finite, > 0) around `center`. Every number is within
/// `KILN_SHAPE_MAX_EXTENT`, as for all shapes.
///
/// Pointers: `out_shape` is NULL or valid for writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_create_sphere(
    center: KilnVec3,
    radius: f32,
    out_shape: *mut KilnShapeId,
) -> KilnStatus {
    ffi_call("kiln_shape_create_sphere", || {
        create(out_shape, || Shape::sphere(vec3(center), radius).map_err(shape_error))
    })
}

/// Creates a capsule: the points within `radius` (finite, > 0) of segment `a`-`b`.
/// `a == b` gives a sphere-shaped capsule.
///
/// Pointers: `out_shape` is NULL or valid for writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_create_capsule(
    a: KilnVec3,
    b: KilnVec3,
    radius: f32,
    out_shape: *mut KilnShapeId,
) -> KilnStatus {
    ffi_call("kiln_shape_create_capsule", || {
        create(out_shape, || Shape::capsule(vec3(a), vec3(b), radius).map_err(shape_error))
    })
}

/// Creates a box centred on the origin with half extents `half_extents` (each
/// finite and > 0).
///
/// Pointers: `out_shape` is NULL or valid for writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_create_box(half_extents: KilnVec3, out_shape: *mut KilnShapeId) -> KilnStatus {
    ffi_call("kiln_shape_create_box", || create(out_shape, || Shape::cuboid(vec3(half_extents)).map_err(shape_error)))
}

/// Creates the convex hull of `count` points (quickhull; coplanar faces merged).
/// Needs 4 points not in one plane, at most `KILN_MAX_HULL_INPUT_POINTS` points, and
/// a hull of at most 256 vertices with at most 64 per face.
///
/// Pointers: `points` is NULL or readable for `count` entries; `out_shape` is NULL or
/// writable.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_create_hull(
    points: *const KilnVec3,
    count: u32,
    out_shape: *mut KilnShapeId,
) -> KilnStatus {
    ffi_call("kiln_shape_create_hull", || {
        create(out_shape, || {
            if count > KILN_MAX_HULL_INPUT_POINTS {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("count is {count}, more than KILN_MAX_HULL_INPUT_POINTS"),
                ));
            }
            // SAFETY: readable for `count` entries per the contract.
            let cloud = unsafe { read_checked(points, count, "points", |p, _| Ok(vec3(*p)))? };
            Shape::hull(&cloud).map_err(shape_error)
        })
    })
}

/// Creates a triangle with corners `a`, `b`, `c` (counter-clockwise seen from its
/// front). Refused when it has no area.
///
/// Pointers: `out_shape` is NULL or valid for writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_create_triangle(
    a: KilnVec3,
    b: KilnVec3,
    c: KilnVec3,
    out_shape: *mut KilnShapeId,
) -> KilnStatus {
    ffi_call("kiln_shape_create_triangle", || {
        create(out_shape, || Shape::triangle([vec3(a), vec3(b), vec3(c)]).map_err(shape_error))
    })
}

/// Creates a compound of `count` (1 to `KILN_MAX_COMPOUND_PARTS`) convex parts; each
/// part's shape is copied, so it may be destroyed afterwards. Parts that are
/// triangles or compounds are refused.
///
/// Pointers: `parts` is NULL or readable for `count` entries; `out_shape` is NULL or
/// writable.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_create_compound(
    parts: *const KilnCompoundPart,
    count: u32,
    out_shape: *mut KilnShapeId,
) -> KilnStatus {
    ffi_call("kiln_shape_create_compound", || {
        create(out_shape, || {
            if count == 0 || count > KILN_MAX_COMPOUND_PARTS {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("count is {count}, must be 1..=KILN_MAX_COMPOUND_PARTS"),
                ));
            }
            // SAFETY: readable for `count` entries per the contract.
            let parts = unsafe {
                read_checked(parts, count, "parts", |p, name| {
                    let pose = check_transform(&p.pose, &format!("{name}.pose"))?;
                    Ok((pose, shape_of(p.shape)?))
                })?
            };
            Shape::compound(parts).map_err(shape_error)
        })
    })
}

/// Destroys a shape; its handle becomes invalid. Compounds holding copies of it are
/// not affected.
///
/// Threads: one call at a time per shape (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_shape_destroy(shape: KilnShapeId) -> KilnStatus {
    ffi_call("kiln_shape_destroy", || {
        drop(SHAPES.remove(shape.index1, shape.generation)?);
        Ok(())
    })
}

/// Whether `shape` refers to a live shape.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_shape_is_valid(shape: KilnShapeId) -> bool {
    std::panic::catch_unwind(|| SHAPES.is_valid(shape.index1, shape.generation)).unwrap_or(false)
}

/// Writes the world-space bounding box of `shape` placed by `transform`.
///
/// Pointers: `transform` is NULL or readable; `out_aabb` is NULL or writable.
///
/// Threads: one call at a time per shape (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_get_aabb(
    shape: KilnShapeId,
    transform: *const KilnTransform,
    out_aabb: *mut KilnAabb,
) -> KilnStatus {
    ffi_call("kiln_shape_get_aabb", || {
        let xf = read_transform(transform, "transform")?;
        let out = non_null(out_aabb, "out_aabb")?;
        let b = shape_of(shape)?.aabb(&xf);
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(KilnAabb { min: kvec(b.min), max: kvec(b.max) }) };
        Ok(())
    })
}

/// Writes the mass properties of `shape` at `density` (kg/m³, finite and > 0).
/// Triangles have no volume: their mass is zero.
///
/// Pointers: `out_mass` is NULL or valid for writing.
///
/// Threads: one call at a time per shape (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_get_mass(
    shape: KilnShapeId,
    density: f32,
    out_mass: *mut KilnMassProperties,
) -> KilnStatus {
    ffi_call("kiln_shape_get_mass", || {
        if !(density.is_finite() && density > 0.0) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("density is {density}, must be finite and > 0"),
            ));
        }
        let out = non_null(out_mass, "out_mass")?;
        let m = shape_of(shape)?.mass_properties(density);
        let result = KilnMassProperties { mass: m.mass, center: kvec(m.center), inertia: m.inertia.to_cols_array() };
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(result) };
        Ok(())
    })
}

/// Writes the distance and closest points between `a` placed by `transform_a` and
/// `b` placed by `transform_b` (GJK; compounds: the closest pair of parts).
///
/// Pointers: The transforms are NULL or readable; `out_result` is NULL or writable.
///
/// Threads: one call at a time per shape (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_distance(
    a: KilnShapeId,
    transform_a: *const KilnTransform,
    b: KilnShapeId,
    transform_b: *const KilnTransform,
    out_result: *mut KilnDistanceResult,
) -> KilnStatus {
    ffi_call("kiln_shape_distance", || {
        let (xf_a, xf_b) = (read_transform(transform_a, "transform_a")?, read_transform(transform_b, "transform_b")?);
        let out = non_null(out_result, "out_result")?;
        let (sa, sb) = (shape_of(a)?, shape_of(b)?);
        let d = shape_distance(&sa, &xf_a, &sb, &xf_b)
            .ok_or_else(|| Error::new(KILN_ERROR_INVALID_ARGUMENT, "a shape has no convex piece"))?;
        let result = KilnDistanceResult {
            distance: d.distance,
            point_a: kvec(d.point_a),
            point_b: kvec(d.point_b),
            normal: kvec(d.normal),
            overlap: d.overlap,
        };
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(result) };
        Ok(())
    })
}

/// Computes the contact manifolds between `a` and `b`: one per pair of convex parts
/// whose surfaces are within `margin` (finite, >= 0; contacts up to `margin` apart
/// are speculative). Writes up to `capacity` manifolds to `out_manifolds` (NULL
/// allowed when `capacity` is 0) and the total count to `out_count`, so a call with
/// capacity 0 sizes the array; zero manifolds means the shapes are apart.
///
/// Pointers: The transforms are NULL or readable; `out_manifolds` is NULL or writable
/// for `capacity` entries; `out_count` is NULL or writable.
///
/// Threads: one call at a time per shape (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_contact(
    a: KilnShapeId,
    transform_a: *const KilnTransform,
    b: KilnShapeId,
    transform_b: *const KilnTransform,
    margin: f32,
    out_manifolds: *mut KilnManifold,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_shape_contact", || {
        let (xf_a, xf_b) = (read_transform(transform_a, "transform_a")?, read_transform(transform_b, "transform_b")?);
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("margin is {margin}, must be finite and >= 0"),
            ));
        }
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_manifolds, capacity, "out_manifolds")? };
        let (sa, sb) = (shape_of(a)?, shape_of(b)?);
        collide_all(&sa, &xf_a, &sb, &xf_b, margin, &mut |part_a, part_b, m| {
            let mut points = [KilnContactPoint::default(); 4];
            for (slot, p) in points.iter_mut().zip(m.points()) {
                *slot = KilnContactPoint { point: kvec(p.point), separation: p.separation, id: p.id };
            }
            out.push(KilnManifold { normal: kvec(m.normal), point_count: m.count as u32, points, part_a, part_b });
        });
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(out.count()) };
        Ok(())
    })
}

fn read_sweep(ptr: *const KilnSweep, name: &str) -> Result<Sweep, Error> {
    let ptr = non_null(ptr, name)?;
    // SAFETY: non-null; readable per the caller's contract.
    let s = unsafe { ptr.read() };
    let local_center = vec3(s.local_center);
    if !local_center.is_finite() {
        return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("`{name}`.local_center is not finite")));
    }
    Ok(Sweep {
        start: check_transform(&s.start, &format!("{name}.start"))?,
        end: check_transform(&s.end, &format!("{name}.end"))?,
        local_center,
    })
}

/// Finds the first time in `[0, t_max]` (`t_max` in `[0, 1]`) at which `a` and `b`,
/// moving by their sweeps, come within `target` metres (finite, >= 0) of each other,
/// to a tolerance of a quarter of `target` (at least 0.1 mm): swept support rejects
/// misses at once, conservative advancement finds hits in a bounded number of steps.
/// Fast rotations are handled; the result never lets the shapes pass through each
/// other.
///
/// Pointers: The sweeps are NULL or readable; `out_result` is NULL or writable.
///
/// Threads: one call at a time per shape (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_shape_time_of_impact(
    a: KilnShapeId,
    sweep_a: *const KilnSweep,
    b: KilnShapeId,
    sweep_b: *const KilnSweep,
    t_max: f32,
    target: f32,
    out_result: *mut KilnToiResult,
) -> KilnStatus {
    ffi_call("kiln_shape_time_of_impact", || {
        let (sweep_a, sweep_b) = (read_sweep(sweep_a, "sweep_a")?, read_sweep(sweep_b, "sweep_b")?);
        if !(0.0..=1.0).contains(&t_max) {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("t_max is {t_max}, must be in [0, 1]")));
        }
        if finite_number(target, "target")? < 0.0 {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("target is {target}, must be >= 0")));
        }
        let out = non_null(out_result, "out_result")?;
        let (sa, sb) = (shape_of(a)?, shape_of(b)?);
        let toi = shape_time_of_impact(&sa, &sweep_a, &sb, &sweep_b, t_max, target, (0.25 * target).max(1e-4));
        let state = match toi.state {
            ToiState::Separated => KILN_TOI_SEPARATED,
            ToiState::Hit => KILN_TOI_HIT,
            ToiState::Overlapping => KILN_TOI_OVERLAPPING,
            ToiState::Failed => KILN_TOI_FAILED,
        };
        let result = KilnToiResult {
            state,
            t: toi.t,
            normal: kvec(toi.normal),
            point: kvec(toi.point),
            iterations: toi.iterations,
        };
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(result) };
        Ok(())
    })
}
