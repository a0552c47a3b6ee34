//! The step's sensor, contact hit, body move and water events through the C ABI,
//! read after `kiln_world_step` like the contact events; how much of a body is under
//! water.

use kiln_core::physics::World;

use crate::abi::{ffi_call, non_null, write_out, CountedOut, Error, KilnStatus};
use crate::types::{kvec, KilnTransform, KilnVec3};
use crate::world::{body_error, ktransform, public_body, with_body, with_world, KilnBodyId, KilnWorldId};

/// Writes a world's event list: up to `capacity` entries to `out_events` and the
/// total to `out_count` (the list convention of every event function here).
///
/// # Safety
/// `out_events` is NULL or writable for `capacity` entries; `out_count` is NULL or
/// writable.
unsafe fn list_events<T>(
    world: KilnWorldId,
    out_events: *mut T,
    capacity: u32,
    out_count: *mut u32,
    events: impl FnOnce(&World, &mut dyn FnMut(T)),
) -> Result<(), Error> {
    let out_count = non_null(out_count, "out_count")?;
    // SAFETY: writable for `capacity` entries per the contract.
    let mut out = unsafe { CountedOut::new(out_events, capacity, "out_events")? };
    let count = with_world(world, |entry| {
        events(&entry.world, &mut |e| out.push(e));
        Ok(out.count())
    })?;
    // SAFETY: non-null and writable per the contract.
    unsafe { out_count.cast_mut().write(count) };
    Ok(())
}

/// A shape began or stopped overlapping a sensor shape in the last step, from
/// `kiln_world_get_sensor_events`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnSensorEvent {
    /// The sensor's body.
    pub sensor_body: KilnBodyId,
    /// The sensor shape's index on its body (in the order shapes were added).
    pub sensor_shape_index: u32,
    /// The visiting shape's index on its body.
    pub visitor_shape_index: u32,
    /// The visiting shape's body (possibly destroyed since, for an end event).
    pub visitor_body: KilnBodyId,
    /// True: began overlapping; false: stopped.
    pub begin: bool,
}

/// A contact that struck faster than the world's `hit_event_threshold` in the last
/// step, from `kiln_world_get_contact_hit_events`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnContactHitEvent {
    /// The first body.
    pub body_a: KilnBodyId,
    /// The second body, or the null handle when A struck the voxel terrain.
    pub body_b: KilnBodyId,
    /// Index of A's shape.
    pub shape_a: u32,
    /// Index of B's shape (`UINT32_MAX` for the terrain).
    pub shape_b: u32,
    /// The contact point that approached fastest.
    pub point: KilnVec3,
    /// Unit contact normal, from A to B.
    pub normal: KilnVec3,
    /// How fast the surfaces approached along the normal at the step's start, m/s.
    pub approach_speed: f32,
}

/// A body the last step moved, from `kiln_world_get_move_events`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnBodyMoveEvent {
    /// The body.
    pub body: KilnBodyId,
    /// Its placement after the step.
    pub transform: KilnTransform,
    /// True when the step also put it to sleep: it will not move until woken.
    pub fell_asleep: bool,
}

/// Lists the sensor events of the last step: first the ends of the visits of sensors
/// whose bodies were destroyed since the step before, then for each sensor shape (by
/// body slot, then shape index) the shapes that stopped and began overlapping it.
/// Every begin is followed by exactly one end, when the visitor leaves, either body is
/// destroyed, or the sensor is. Sensors see every non-sensor shape whose filter meets
/// theirs, on any other body, sleeping and static ones included, and wake nothing.
/// Writes up to `capacity` events to `out_events` (NULL allowed when `capacity` is 0)
/// and the total to `out_count`.
///
/// Pointers: `out_events` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_sensor_events(
    world: KilnWorldId,
    out_events: *mut KilnSensorEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_sensor_events", || {
        // SAFETY: the caller's contract for both pointers.
        unsafe {
            list_events(world, out_events, capacity, out_count, |w, push| {
                for e in w.sensor_events() {
                    push(KilnSensorEvent {
                        sensor_body: public_body(world, e.sensor),
                        sensor_shape_index: e.sensor_shape,
                        visitor_shape_index: e.visitor_shape,
                        visitor_body: public_body(world, e.visitor),
                        begin: e.begin,
                    });
                }
            })
        }
    })
}

/// Lists the contacts that struck in the last step: contacts with a shape made with
/// `enable_hit_events` whose fastest point approached faster than the world's
/// `hit_event_threshold` and pushed (a point that never touched is no hit), one
/// event per contact, in the order of the step's contacts. For sounds, sparks and
/// damage. Writes up to `capacity` events to `out_events` (NULL allowed when
/// `capacity` is 0) and the total to `out_count`.
///
/// Pointers: `out_events` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_contact_hit_events(
    world: KilnWorldId,
    out_events: *mut KilnContactHitEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_contact_hit_events", || {
        // SAFETY: the caller's contract for both pointers.
        unsafe {
            list_events(world, out_events, capacity, out_count, |w, push| {
                for h in w.contact_hit_events() {
                    push(KilnContactHitEvent {
                        body_a: public_body(world, h.body_a),
                        body_b: h.body_b.map(|b| public_body(world, b)).unwrap_or_default(),
                        shape_a: h.shape_a,
                        shape_b: h.shape_b,
                        point: kvec(h.point),
                        normal: kvec(h.normal),
                        approach_speed: h.approach_speed,
                    });
                }
            })
        }
    })
}

/// Lists the bodies the last step moved (every awake body) with their placements, so
/// an engine copies only these into its scene; a body the step put to sleep is listed
/// once more with `fell_asleep`, then not until it is woken. Writes up to `capacity`
/// events to `out_events` (NULL allowed when `capacity` is 0) and the total to
/// `out_count`.
///
/// Pointers: `out_events` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_move_events(
    world: KilnWorldId,
    out_events: *mut KilnBodyMoveEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_move_events", || {
        // SAFETY: the caller's contract for both pointers.
        unsafe {
            list_events(world, out_events, capacity, out_count, |w, push| {
                for m in w.move_events() {
                    push(KilnBodyMoveEvent {
                        body: public_body(world, m.body),
                        transform: ktransform(&m.transform),
                        fell_asleep: m.fell_asleep,
                    });
                }
            })
        }
    })
}

/// A body entered or left the terrain's water in the last step, from
/// `kiln_world_get_water_events`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnWaterEvent {
    /// The body (possibly destroyed since, for a leave event).
    pub body: KilnBodyId,
    /// True: some of it went under water; false: none of it is any more.
    pub begin: bool,
}

/// Lists the water events of the last step: first the leaves of bodies destroyed
/// since the step before, then by body slot the dynamic bodies whose submerged
/// volume became positive (enter) or returned to zero (leave). Every enter is
/// followed by exactly one leave; sleeping bodies stay where they were. Empty when
/// the world's `water_density` is 0. Writes up to `capacity` events to `out_events`
/// (NULL allowed when `capacity` is 0) and the total to `out_count`.
///
/// Pointers: `out_events` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_water_events(
    world: KilnWorldId,
    out_events: *mut KilnWaterEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_water_events", || {
        // SAFETY: the caller's contract for both pointers.
        unsafe {
            list_events(world, out_events, capacity, out_count, |w, push| {
                for e in w.water_events() {
                    push(KilnWaterEvent { body: public_body(world, e.body), begin: e.begin });
                }
            })
        }
    })
}

/// How much of a body is under the terrain's water, from `kiln_body_get_submerged`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnSubmerged {
    /// Volume under water, m³ (0 when dry).
    pub volume: f32,
    /// The centroid of that volume, where the lift acts (the body's centre of mass
    /// when dry).
    pub center: KilnVec3,
    /// The body's whole volume, m³ (sensor shapes left out): `volume / body_volume`
    /// is the submerged share.
    pub body_volume: f32,
}

/// Measures how much of `body` is under the terrain's water now, at its current
/// placement: the exact volume of its shapes inside water voxels (boxes and hulls
/// exactly, spheres exactly over open water, capsules within about 2%), its
/// centroid, and the body's volume. Any body kind; sensors displace nothing.
///
/// Pointers: `out` is writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_get_submerged(body: KilnBodyId, out: *mut KilnSubmerged) -> KilnStatus {
    ffi_call("kiln_body_get_submerged", || {
        non_null(out, "out")?;
        let s = with_body(body, |entry, key| entry.world.submerged(key).map_err(|e| body_error(e, body, "")))?;
        write_out(out, "out", KilnSubmerged { volume: s.volume, center: kvec(s.center), body_volume: s.body_volume })
    })
}
