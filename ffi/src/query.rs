//! World queries through the C ABI: ray casts (closest, all, batches, callback),
//! box and shape overlaps and shape casts over a world's bodies and its terrain,
//! with a filter.
//!
//! Results name what they found by a `KilnQueryTarget`: a body and the index of its
//! shape, or a terrain chunk and triangle. Lists come sorted (rays by distance, then
//! target; overlaps by body slot and shape, then terrain chunk and triangle), the same
//! for any worker count.

use std::ffi::c_void;

use kiln_core::math::{Isometry, Ray, Vec3};
use kiln_core::physics::{QueryFilter, QueryTarget, RayHit, ShapeCastHit};

use crate::abi::{
    ffi_call, non_null, read_checked, read_def, CountedOut, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT,
    KILN_ERROR_NULL_POINTER, KILN_ERROR_STRUCT_SIZE,
};
use crate::runtime::{on_runtime, KilnRuntimeId};
use crate::shapes::{shape_of, KilnShapeId};
use crate::terrain_query::{check_distance, check_ray, KilnRay};
use crate::types::{kint, kvec, read_aabb, vec3, KilnAabb, KilnInt3, KilnTransform, KilnVec3};
use crate::world::{
    body_error, body_key, check_placement, public_body, with_world, KilnBodyId, KilnWorldId, WorldEntry,
    KILN_WORLD_MAX_COORDINATE,
};

/// Query flag: static bodies are seen.
pub const KILN_QUERY_STATIC: u32 = 1;
/// Query flag: kinematic bodies are seen.
pub const KILN_QUERY_KINEMATIC: u32 = 2;
/// Query flag: dynamic bodies are seen.
pub const KILN_QUERY_DYNAMIC: u32 = 4;
/// Query flag: the world's terrain is seen.
pub const KILN_QUERY_TERRAIN: u32 = 8;
/// All bodies and the terrain (the default; sensors are not included).
pub const KILN_QUERY_ALL: u32 = 15;
/// Query flag: sensor shapes are seen too (add it to `KILN_QUERY_ALL`).
pub const KILN_QUERY_SENSORS: u32 = 16;
/// Query flag for overlaps: the terrain is listed once, by the first triangle
/// touched (lowest chunk, then index), and the search stops there, as other engines
/// list a mesh collider once ("which objects are here"). Without it every triangle
/// touched is listed. Rays and shape casts report one target either way.
pub const KILN_QUERY_TERRAIN_ONCE: u32 = 32;
/// Every flag a filter may carry.
const KNOWN_FLAGS: u32 = KILN_QUERY_ALL | KILN_QUERY_SENSORS | KILN_QUERY_TERRAIN_ONCE;

/// Which shapes a world query sees. Initialise with `kiln_default_query_filter()`.
/// A body shape is seen when `(shape category & mask_bits) != 0` and
/// `(shape mask & category_bits) != 0` (the rule two shapes collide by), its body's
/// motion type is in `flags`, it is not on `ignore_body`, and it is not a sensor
/// unless `flags` has `KILN_QUERY_SENSORS`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnQueryFilter {
    /// `sizeof(KilnQueryFilter)`, set by `kiln_default_query_filter()`.
    pub struct_size: u32,
    /// The query's own category. Default 1 (what default shapes accept).
    pub category_bits: u32,
    /// The shape categories the query sees. Default all (0xFFFFFFFF).
    pub mask_bits: u32,
    /// `KILN_QUERY_*` flags: which motion types, whether the terrain, whether
    /// sensors, whether overlaps list the terrain once. Default `KILN_QUERY_ALL`
    /// (no sensors, every terrain triangle).
    pub flags: u32,
    /// A body to leave out (the caster itself), or the null handle for none. It must
    /// be a live body of the queried world.
    pub ignore_body: KilnBodyId,
}

/// A query result is a body's shape.
pub const KILN_QUERY_TARGET_BODY: u32 = 1;
/// A query result is a terrain triangle.
pub const KILN_QUERY_TARGET_TERRAIN: u32 = 2;

/// What a world query found.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnQueryTarget {
    /// `KILN_QUERY_TARGET_BODY` or `KILN_QUERY_TARGET_TERRAIN` (0 in an empty hit).
    pub kind: u32,
    /// Body targets: the shape's index on its body, in the order shapes were added.
    pub shape_index: u32,
    /// Body targets: the body; the null handle for terrain.
    pub body: KilnBodyId,
    /// Terrain targets: the chunk whose mesh holds the triangle.
    pub chunk: KilnInt3,
    /// Terrain targets: the triangle's index in that chunk's mesh.
    pub triangle: u32,
}

/// Where a ray met a body or the terrain.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnWorldRayHit {
    /// Whether there is a hit; the other fields are zero when there is not.
    pub hit: bool,
    /// The terrain material (0 on bodies).
    pub material: u8,
    /// Distance from the ray's origin in metres (0 for a ray starting inside a solid
    /// shape).
    pub distance: f32,
    /// The hit point.
    pub point: KilnVec3,
    /// Unit surface normal: out of solid shapes and solid terrain (against the ray
    /// for a ray starting inside a shape); a triangle shape's front
    /// (counter-clockwise) normal from either side.
    pub normal: KilnVec3,
    /// What was hit.
    pub target: KilnQueryTarget,
}

/// Where a cast shape first touched a body or the terrain.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnShapeCastHit {
    /// Whether there is a hit; the other fields are zero when there is not.
    pub hit: bool,
    /// Fraction of the translation travelled before the touch, 0 to 1 (0 when the
    /// shape overlaps something where it starts).
    pub fraction: f32,
    /// The contact point.
    pub point: KilnVec3,
    /// Unit normal of the surface touched, pointing back at the cast shape (against
    /// the translation for a start in overlap).
    pub normal: KilnVec3,
    /// What was touched.
    pub target: KilnQueryTarget,
}

/// The default query filter: category 1, every category, every body and the terrain,
/// no body left out.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_query_filter() -> KilnQueryFilter {
    KilnQueryFilter {
        struct_size: size_of::<KilnQueryFilter>() as u32,
        category_bits: 1,
        mask_bits: u32::MAX,
        flags: KILN_QUERY_ALL,
        ignore_body: KilnBodyId::default(),
    }
}

/// Reads a filter (NULL: the default) and checks it against the queried world.
fn read_filter(ptr: *const KilnQueryFilter, entry: &WorldEntry, world: KilnWorldId) -> Result<QueryFilter, Error> {
    let f = if ptr.is_null() {
        kiln_default_query_filter()
    } else {
        // SAFETY: non-null; readable per the caller's contract.
        unsafe { read_def(ptr, "filter")? }
    };
    check_filter(&f, "filter", entry, world)
}

/// Checks a filter (its size, flags and ignored body) against the queried world.
pub(crate) fn check_filter(
    f: &KilnQueryFilter,
    name: &str,
    entry: &WorldEntry,
    world: KilnWorldId,
) -> Result<QueryFilter, Error> {
    if f.struct_size as usize != size_of::<KilnQueryFilter>() {
        return Err(Error::new(
            KILN_ERROR_STRUCT_SIZE,
            format!(
                "{name}.struct_size is {}, expected {} (use kiln_default_query_filter())",
                f.struct_size,
                size_of::<KilnQueryFilter>()
            ),
        ));
    }
    if f.flags & !KNOWN_FLAGS != 0 {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!(
                "{name}->flags {:#x} has bits beyond KILN_QUERY_ALL | KILN_QUERY_SENSORS | KILN_QUERY_TERRAIN_ONCE",
                f.flags
            ),
        ));
    }
    let ignore = if f.ignore_body == KilnBodyId::default() {
        None
    } else {
        if f.ignore_body.world != world {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("{name}->ignore_body belongs to another world than the one queried"),
            ));
        }
        let key = body_key(f.ignore_body)?;
        if !entry.world.bodies().is_valid(key) {
            return Err(body_error(kiln_core::physics::BodyError::InvalidBody, f.ignore_body, ""));
        }
        Some(key)
    };
    Ok(QueryFilter {
        category: f.category_bits,
        mask: f.mask_bits,
        ignore,
        static_bodies: f.flags & KILN_QUERY_STATIC != 0,
        kinematic_bodies: f.flags & KILN_QUERY_KINEMATIC != 0,
        dynamic_bodies: f.flags & KILN_QUERY_DYNAMIC != 0,
        terrain: f.flags & KILN_QUERY_TERRAIN != 0,
        sensors: f.flags & KILN_QUERY_SENSORS != 0,
        terrain_once: f.flags & KILN_QUERY_TERRAIN_ONCE != 0,
    })
}

/// A ray within the world's coordinate range, with a unit direction.
fn world_ray(r: &KilnRay, name: &str) -> Result<Ray, Error> {
    let ray = check_ray(r, name)?;
    if ray.origin.abs().max_element() > KILN_WORLD_MAX_COORDINATE {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{name}` origin {:?} is farther than KILN_WORLD_MAX_COORDINATE from the origin", r.origin),
        ));
    }
    Ok(ray)
}

fn target_to_c(world: KilnWorldId, target: QueryTarget) -> KilnQueryTarget {
    match target {
        QueryTarget::Body { body, shape } => KilnQueryTarget {
            kind: KILN_QUERY_TARGET_BODY,
            shape_index: shape,
            body: public_body(world, body),
            ..KilnQueryTarget::default()
        },
        QueryTarget::Terrain { chunk, triangle } => KilnQueryTarget {
            kind: KILN_QUERY_TARGET_TERRAIN,
            chunk: kint(chunk),
            triangle,
            ..KilnQueryTarget::default()
        },
    }
}

fn ray_hit_to_c(world: KilnWorldId, hit: Option<RayHit>) -> KilnWorldRayHit {
    hit.map_or_else(KilnWorldRayHit::default, |h| KilnWorldRayHit {
        hit: true,
        material: h.material.0,
        distance: h.t,
        point: kvec(h.point),
        normal: kvec(h.normal),
        target: target_to_c(world, h.target),
    })
}

fn cast_hit_to_c(world: KilnWorldId, hit: Option<ShapeCastHit>) -> KilnShapeCastHit {
    hit.map_or_else(KilnShapeCastHit::default, |h| KilnShapeCastHit {
        hit: true,
        fraction: h.fraction,
        point: kvec(h.point),
        normal: kvec(h.normal),
        target: target_to_c(world, h.target),
    })
}

/// Reads and checks a ray argument.
fn read_ray(ray: *const KilnRay) -> Result<Ray, Error> {
    let ray = non_null(ray, "ray")?;
    // SAFETY: non-null; readable per the caller's contract.
    world_ray(&unsafe { ray.read() }, "ray")
}

/// Writes the closest hit of `ray` within `max_distance` metres (>= 0, INFINITY
/// allowed) over the world's bodies and terrain that `filter` lets through (NULL: the
/// default filter) to `out_hit` (`hit` false when there is none). On equal distance,
/// bodies come before terrain, lower slots and shape indices first. A ray starting
/// inside a solid shape hits it at distance 0. Terrain chunks the ray reaches are
/// meshed on first use.
///
/// Pointers: `ray` is NULL or readable; `filter` is NULL or readable; `out_hit` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_cast_ray(
    world: KilnWorldId,
    ray: *const KilnRay,
    max_distance: f32,
    filter: *const KilnQueryFilter,
    out_hit: *mut KilnWorldRayHit,
) -> KilnStatus {
    ffi_call("kiln_world_cast_ray", || {
        let ray = read_ray(ray)?;
        let max_distance = check_distance(max_distance)?;
        let out = non_null(out_hit, "out_hit")?;
        let hit = with_world(world, |entry| {
            let filter = read_filter(filter, entry, world)?;
            Ok(entry.world.cast_ray(&ray, max_distance, &filter))
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(ray_hit_to_c(world, hit)) };
        Ok(())
    })
}

/// Called by `kiln_world_cast_ray_callback` for each hit, with the caller's
/// `user_context`. Returns what the ray does next: a negative number ignores the hit,
/// 0 stops the cast, any other value clips the ray to that distance (the hit's
/// `distance` narrows the search to closer hits; the full length goes on).
pub type KilnRayHitFn = Option<unsafe extern "C" fn(hit: *const KilnWorldRayHit, user_context: *mut c_void) -> f32>;

/// Casts `ray` over the world's bodies and terrain that `filter` lets through (NULL:
/// the default filter) and calls `callback` with each hit within `max_distance` as
/// it is found (Box2D's `b2World_CastRay`): first the terrain's first hit, then body
/// shapes in the order of the world's trees, the same for any worker count. The
/// callback's answer ignores the hit, stops, or clips the ray (see `KilnRayHitFn`);
/// hits beyond the clipped length are not reported. For a closest hit that skips
/// some bodies (glass, the shooter's own parts), return -1 for those and the hit's
/// distance for the rest, keeping the nearest. The callback may call Kiln, but not
/// on this world (such calls return `KILN_ERROR_INVALID_STATE`).
///
/// Pointers: `ray` is NULL or readable; `filter` is NULL or readable; `callback` is
/// NULL or a function that may be called with `user_context`, which Kiln never reads.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_cast_ray_callback(
    world: KilnWorldId,
    ray: *const KilnRay,
    max_distance: f32,
    filter: *const KilnQueryFilter,
    callback: KilnRayHitFn,
    user_context: *mut c_void,
) -> KilnStatus {
    ffi_call("kiln_world_cast_ray_callback", || {
        let ray = read_ray(ray)?;
        let max_distance = check_distance(max_distance)?;
        let Some(callback) = callback else {
            return Err(Error::new(KILN_ERROR_NULL_POINTER, "`callback` is NULL"));
        };
        with_world(world, |entry| {
            let filter = read_filter(filter, entry, world)?;
            entry.world.cast_ray_with(&ray, max_distance, &filter, |hit| {
                let hit = ray_hit_to_c(world, Some(*hit));
                // SAFETY: the caller's contract: `callback` may be called with its context.
                unsafe { callback(&hit, user_context) }
            });
            Ok(())
        })
    })
}

/// Lists every body shape `ray` meets within `max_distance` (each once, at its first
/// point) and the terrain's first hit, sorted by distance (then bodies before
/// terrain, lower slots and shapes first): writes up to `capacity` hits to `out_hits`
/// (NULL allowed when `capacity` is 0) and the total to `out_count`, so a call with
/// capacity 0 sizes the array.
///
/// Pointers: `ray` is NULL or readable; `filter` is NULL or readable; `out_hits` is
/// NULL or writable for `capacity` entries; `out_count` is NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_cast_ray_all(
    world: KilnWorldId,
    ray: *const KilnRay,
    max_distance: f32,
    filter: *const KilnQueryFilter,
    out_hits: *mut KilnWorldRayHit,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_cast_ray_all", || {
        let ray = read_ray(ray)?;
        let max_distance = check_distance(max_distance)?;
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_hits, capacity, "out_hits")? };
        let mut hits = Vec::new();
        with_world(world, |entry| {
            let filter = read_filter(filter, entry, world)?;
            entry.world.cast_ray_all(&ray, max_distance, &filter, &mut hits);
            Ok(())
        })?;
        for hit in hits {
            out.push(ray_hit_to_c(world, Some(hit)));
        }
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(out.count()) };
        Ok(())
    })
}

/// Casts `count` rays as parallel jobs on `runtime`'s workers (the null handle runs
/// them on the calling thread) and writes ray `i`'s closest hit, as
/// `kiln_world_cast_ray` finds it, to `out_hits[i]`. Results do not depend on the
/// worker count. Every ray is checked first: one bad ray fails the call, naming its
/// index, and nothing is written. `count` 0 does nothing (NULL arrays allowed). Must
/// not be called from inside one of the runtime's passes.
///
/// Pointers: `rays` is readable and `out_hits` writable for `count` entries (or NULL
/// when `count` is 0); `filter` is NULL or readable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_cast_ray_batch(
    world: KilnWorldId,
    runtime: KilnRuntimeId,
    rays: *const KilnRay,
    count: u32,
    max_distance: f32,
    filter: *const KilnQueryFilter,
    out_hits: *mut KilnWorldRayHit,
) -> KilnStatus {
    ffi_call("kiln_world_cast_ray_batch", || {
        let max_distance = check_distance(max_distance)?;
        // SAFETY: readable for `count` entries per the contract.
        let rays = unsafe { read_checked(rays, count, "rays", world_ray)? };
        if count > 0 {
            non_null(out_hits, "out_hits")?;
        }
        let mut hits = vec![None; rays.len()];
        on_runtime(runtime, |jobs| {
            with_world(world, |entry| {
                let filter = read_filter(filter, entry, world)?;
                entry.world.cast_ray_batch(&rays, max_distance, &filter, &mut hits, jobs);
                Ok(())
            })
        })?;
        for (i, hit) in hits.into_iter().enumerate() {
            // SAFETY: writable for `count` entries per the contract; `i < count`.
            unsafe { out_hits.add(i).write(ray_hit_to_c(world, hit)) };
        }
        Ok(())
    })
}

/// Writes the targets of a list query to `out` and the total to `out_count`.
///
/// # Safety
/// `out_targets` is NULL or writable for `capacity` entries; `out_count` is NULL or
/// writable.
unsafe fn list_targets(
    world: KilnWorldId,
    targets: &[QueryTarget],
    out_targets: *mut KilnQueryTarget,
    capacity: u32,
    out_count: *mut u32,
) -> Result<(), Error> {
    let out_count = non_null(out_count, "out_count")?;
    // SAFETY: writable for `capacity` entries per the contract.
    let mut out = unsafe { CountedOut::new(out_targets, capacity, "out_targets")? };
    for &t in targets {
        out.push(target_to_c(world, t));
    }
    // SAFETY: non-null and writable per the contract.
    unsafe { out_count.cast_mut().write(out.count()) };
    Ok(())
}

/// Lists the body shapes whose bounds overlap `aabb` and the terrain triangles
/// touching it (exact triangle/box test): writes up to `capacity` targets to
/// `out_targets` (NULL allowed when `capacity` is 0), bodies by slot and shape index,
/// then terrain triangles by chunk (y, z, x) and index, and the total to
/// `out_count`. Chunks not yet meshed are meshed as jobs on `runtime` (null handle:
/// the calling thread).
///
/// Pointers: `aabb` and `filter` are NULL or readable (a NULL filter is the
/// default); `out_targets` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_overlap_aabb(
    world: KilnWorldId,
    runtime: KilnRuntimeId,
    aabb: *const KilnAabb,
    filter: *const KilnQueryFilter,
    out_targets: *mut KilnQueryTarget,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_overlap_aabb", || {
        let aabb = read_aabb(aabb, "aabb")?;
        if aabb.min.abs().max(aabb.max.abs()).max_element() > KILN_WORLD_MAX_COORDINATE {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                "aabb reaches farther than KILN_WORLD_MAX_COORDINATE from the origin",
            ));
        }
        non_null(out_count, "out_count")?;
        let mut targets = Vec::new();
        on_runtime(runtime, |jobs| {
            with_world(world, |entry| {
                let filter = read_filter(filter, entry, world)?;
                entry.world.overlap_aabb(&aabb, &filter, jobs, &mut targets);
                Ok(())
            })
        })?;
        // SAFETY: the caller's contract for both pointers.
        unsafe { list_targets(world, &targets, out_targets, capacity, out_count) }
    })
}

/// Reads the shape and placement arguments of the shape queries.
fn shape_and_placement(
    shape: KilnShapeId,
    transform: *const KilnTransform,
) -> Result<(kiln_core::shapes::Shape, Isometry), Error> {
    let shape = shape_of(shape)?;
    let transform = non_null(transform, "transform")?;
    // SAFETY: non-null; readable per the caller's contract.
    let xf = check_placement(&unsafe { transform.read() }, "transform")?;
    Ok((shape, xf))
}

/// Lists the body shapes and terrain triangles that `shape` placed at `transform`
/// overlaps or touches (exact, by GJK): writes up to `capacity` targets to
/// `out_targets` (NULL allowed when `capacity` is 0), in the order of
/// `kiln_world_overlap_aabb`, and the total to `out_count`. Any shape works,
/// compounds included; a triangle shape is a flat probe.
///
/// Pointers: `transform` is NULL or readable; `filter` is NULL or readable;
/// `out_targets` is NULL or writable for `capacity` entries; `out_count` is NULL or
/// writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_overlap_shape(
    world: KilnWorldId,
    runtime: KilnRuntimeId,
    shape: KilnShapeId,
    transform: *const KilnTransform,
    filter: *const KilnQueryFilter,
    out_targets: *mut KilnQueryTarget,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_overlap_shape", || {
        let (shape, xf) = shape_and_placement(shape, transform)?;
        non_null(out_count, "out_count")?;
        let mut targets = Vec::new();
        on_runtime(runtime, |jobs| {
            with_world(world, |entry| {
                let filter = read_filter(filter, entry, world)?;
                entry.world.overlap_shape(&shape, &xf, &filter, jobs, &mut targets);
                Ok(())
            })
        })?;
        // SAFETY: the caller's contract for both pointers.
        unsafe { list_targets(world, &targets, out_targets, capacity, out_count) }
    })
}

/// Sweeps `shape` from `transform` along `translation` (no rotation; length at most
/// `KILN_WORLD_MAX_COORDINATE`) and writes the first body shape or terrain triangle
/// it touches to `out_hit` (`hit` false when it touches none): the fraction of the
/// translation travelled (0 when it overlaps something at the start), the contact
/// point and the surface normal. On equal fractions, bodies come first, lower slots
/// and shape indices first. Touching means within 0.1 mm.
///
/// Pointers: `transform` is NULL or readable; `filter` is NULL or readable; `out_hit`
/// is NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_cast_shape(
    world: KilnWorldId,
    runtime: KilnRuntimeId,
    shape: KilnShapeId,
    transform: *const KilnTransform,
    translation: KilnVec3,
    filter: *const KilnQueryFilter,
    out_hit: *mut KilnShapeCastHit,
) -> KilnStatus {
    ffi_call("kiln_world_cast_shape", || {
        let (shape, xf) = shape_and_placement(shape, transform)?;
        let delta: Vec3 = vec3(translation);
        if !delta.is_finite() || delta.length() > KILN_WORLD_MAX_COORDINATE {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("translation {translation:?} must be finite and no longer than KILN_WORLD_MAX_COORDINATE"),
            ));
        }
        let out = non_null(out_hit, "out_hit")?;
        let hit = on_runtime(runtime, |jobs| {
            with_world(world, |entry| {
                let filter = read_filter(filter, entry, world)?;
                Ok(entry.world.cast_shape(&shape, &xf, delta, &filter, jobs))
            })
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(cast_hit_to_c(world, hit)) };
        Ok(())
    })
}
