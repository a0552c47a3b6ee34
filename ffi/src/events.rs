//! The step's sensor and body move events through the C ABI, read after
//! `kiln_world_step` like the contact events.

use crate::abi::{ffi_call, non_null, CountedOut, KilnStatus};
use crate::types::KilnTransform;
use crate::world::{ktransform, public_body, with_world, KilnBodyId, KilnWorldId};

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
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_sensor_events(
    world: KilnWorldId,
    out_events: *mut KilnSensorEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_sensor_events", || {
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_events, capacity, "out_events")? };
        let count = with_world(world, |entry| {
            for e in entry.world.sensor_events() {
                out.push(KilnSensorEvent {
                    sensor_body: public_body(world, e.sensor),
                    sensor_shape_index: e.sensor_shape,
                    visitor_shape_index: e.visitor_shape,
                    visitor_body: public_body(world, e.visitor),
                    begin: e.begin,
                });
            }
            Ok(out.count())
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(count) };
        Ok(())
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
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_move_events(
    world: KilnWorldId,
    out_events: *mut KilnBodyMoveEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_move_events", || {
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_events, capacity, "out_events")? };
        let count = with_world(world, |entry| {
            for m in entry.world.move_events() {
                out.push(KilnBodyMoveEvent {
                    body: public_body(world, m.body),
                    transform: ktransform(&m.transform),
                    fell_asleep: m.fell_asleep,
                });
            }
            Ok(out.count())
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(count) };
        Ok(())
    })
}
