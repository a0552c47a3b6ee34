//! The step's events besides contact begin/end: sensor events (shapes that touch
//! nothing and report which shapes begin and end overlapping them, as Box2D v3's
//! `sensor.c`), contact hit events (contacts that struck harder than a threshold, for
//! sounds and damage: Box2D's `b2ContactHitEvent`) and body move events (Box2D's
//! `b2BodyMoveEvent`).
//!
//! Hit events: shapes opt in (`ShapeDef::hit_events`). Before the solve, each
//! contact with such a shape measures the approach speed of its points from the
//! bodies' velocities at the step's start; the fastest point above
//! `WorldDef::hit_event_threshold` is a candidate, reported after the solve if that
//! point pushed (a speculative point that never touched is not a hit). One event per
//! contact and step, in the constraint table's order.
//!
//! Sensors: at the end of every step each sensor finds the shapes overlapping it now (broadphase
//! candidates, then GJK: touching counts), in parallel jobs with a buffer per sensor;
//! the sorted list is compared with last step's, and the differences become begin and
//! end events in sensor order, then visitor order — the same for any worker count.
//! Sensors see every other non-sensor shape whose filter meets theirs, on any body but
//! their own, sleeping and static ones included. A visitor that is destroyed ends
//! with the next step's events; a sensor that is destroyed ends all its visits at
//! once (reported with the next step's events), so every begin has exactly one end.

use glam::Vec3;

use super::body::{Bodies, BodyId, SetKind};
use super::contact_solver::NONE;
use super::narrow::{shape_ref, TERRAIN};
use super::world::{BodyMoveEvent, World};
use crate::collide::shape_distance;
use crate::jobs::Jobs;

/// A shape began or ended overlapping a sensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SensorEvent {
    /// The sensor's body and the shape's index on it.
    pub sensor: BodyId,
    pub sensor_shape: u32,
    /// The visiting shape's body and index.
    pub visitor: BodyId,
    pub visitor_shape: u32,
    /// `true`: began overlapping; `false`: stopped.
    pub begin: bool,
}

/// A contact that struck: shape A of `body_a` hit shape B of `body_b` (`None`: the
/// terrain) at `point`, approaching along `normal` (from A to B) at
/// `approach_speed` m/s.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactHitEvent {
    pub body_a: BodyId,
    pub shape_a: u32,
    pub body_b: Option<BodyId>,
    pub shape_b: u32,
    pub point: Vec3,
    pub normal: Vec3,
    pub approach_speed: f32,
}

/// A contact point that approached fast enough, waiting for the solve to say
/// whether it pushed: its constraint (index and key) and point.
#[derive(Clone, Copy, Debug)]
pub(super) struct HitCandidate {
    index: u32,
    key: u64,
    point: u8,
    approach_speed: f32,
}

/// One sensor shape and the shapes overlapping it.
#[derive(Clone, Debug, Default)]
pub(super) struct Sensor {
    body: BodyId,
    shape: u32,
    /// Sorted visitors after the last update, and this update's.
    visitors: Vec<(BodyId, u32)>,
    next: Vec<(BodyId, u32)>,
}

/// Every sensor of a world, sorted by body slot and shape index, and the events.
#[derive(Clone, Debug, Default)]
pub(super) struct Sensors {
    list: Vec<Sensor>,
    /// This step's events, and those of sensors destroyed since (for the next step).
    pub(super) events: Vec<SensorEvent>,
    pub(super) pending: Vec<SensorEvent>,
}

crate::codec::fields!(SensorEvent { sensor, sensor_shape, visitor, visitor_shape, begin });
crate::codec::fields!(ContactHitEvent { body_a, shape_a, body_b, shape_b, point, normal, approach_speed });
crate::codec::fields!(Sensor { body, shape, visitors, next });
crate::codec::fields!(Sensors { list, events, pending });

impl Sensors {
    /// Registers shape `shape` of `body` as a sensor.
    pub(super) fn add(&mut self, body: BodyId, shape: u32) {
        let at = self.list.partition_point(|s| (s.body.index, s.shape) < (body.index, shape));
        self.list.insert(at, Sensor { body, shape, visitors: Vec::new(), next: Vec::new() });
    }

    /// Forgets the sensors of a destroyed body, ending their visits.
    pub(super) fn remove_body(&mut self, body: BodyId) {
        let pending = &mut self.pending;
        self.list.retain(|s| {
            if s.body != body {
                return true;
            }
            pending.extend(s.visitors.iter().map(|&(visitor, visitor_shape)| SensorEvent {
                sensor: body,
                sensor_shape: s.shape,
                visitor,
                visitor_shape,
                begin: false,
            }));
            false
        });
    }
}

impl Sensors {
    /// Every listed sensor is a sensor shape of a live body, in order, and every
    /// sensor shape is listed; visitor lists are sorted.
    pub(super) fn validate(&self, bodies: &Bodies) {
        for pair in self.list.windows(2) {
            assert!((pair[0].body.index, pair[0].shape) < (pair[1].body.index, pair[1].shape), "sensors out of order");
        }
        for s in &self.list {
            let shapes = bodies.shapes(s.body).expect("a sensor on a destroyed body");
            assert!(shapes[s.shape as usize].def.sensor, "{:?} shape {} is listed but no sensor", s.body, s.shape);
            assert!(s.visitors.windows(2).all(|w| w[0] < w[1]), "unsorted visitors");
        }
        let flagged: usize = [&bodies.awake, &bodies.resting]
            .iter()
            .flat_map(|set| set.id.iter())
            .map(|id| bodies.shapes_of_slot(id.index).iter().filter(|s| s.def.sensor).count())
            .sum();
        assert_eq!(flagged, self.list.len(), "sensor shapes and the sensor list differ");
    }
}

impl World {
    /// Before the solve: the fastest approaching point of every contact with a
    /// shape that reports hits, above the threshold.
    pub(super) fn find_hit_candidates(&mut self) {
        self.hit_candidates.clear();
        if self.hit_shapes == 0 {
            return;
        }
        let (tree, bodies, threshold) = (self.broadphase.tree(), &self.bodies, self.def.hit_event_threshold);
        let reports = |proxy: u32| {
            let (slot, k) = shape_ref(tree.user_data(crate::spatial::ProxyId(proxy)));
            bodies.shapes_of_slot(slot)[k as usize].def.hit_events
        };
        for (index, c) in self.constraints.iter().enumerate() {
            let (pa, pb) = ((c.key >> 32) as u32, c.key as u32);
            if !reports(pa) && (pb == TERRAIN || !reports(pb)) {
                continue;
            }
            let mut best: Option<(u8, f32)> = None;
            for (k, p) in c.points().iter().enumerate() {
                let vb = if c.body_b == NONE { Vec3::ZERO } else { bodies.velocity_at(c.body_b, p.point) };
                let approach = -p.normal.dot(vb - bodies.velocity_at(c.body_a, p.point));
                if approach > threshold && best.is_none_or(|(_, s)| approach > s) {
                    best = Some((k as u8, approach));
                }
            }
            if let Some((point, approach_speed)) = best {
                self.hit_candidates.push(HitCandidate { index: index as u32, key: c.key, point, approach_speed });
            }
        }
    }

    /// After the solve: the candidates whose point pushed become hit events.
    pub(super) fn report_hits(&mut self) {
        for h in &self.hit_candidates {
            if h.index as usize >= self.constraints.len() {
                continue;
            }
            let c = self.constraints.get(h.index as usize);
            if c.key != h.key || c.normal_impulse[h.point as usize] <= 0.0 {
                continue;
            }
            let Some(e) = self.event(true, c.key) else { continue };
            let p = &c.points()[h.point as usize];
            self.hit_events.push(ContactHitEvent {
                body_a: e.body_a,
                shape_a: e.shape_a,
                body_b: e.body_b,
                shape_b: e.shape_b,
                point: p.point,
                normal: p.normal,
                approach_speed: h.approach_speed,
            });
        }
    }

    /// This step's contact hit events (see the module docs).
    pub fn contact_hit_events(&self) -> &[ContactHitEvent] {
        &self.hit_events
    }

    /// The shapes overlapping `sensor` now, sorted, into its `next` list.
    fn sensor_visitors(&self, sensor: &mut Sensor) {
        sensor.next.clear();
        let Ok(shapes) = self.bodies.shapes(sensor.body) else { return };
        let Ok(body_xf) = self.bodies.transform(sensor.body) else { return };
        let own = &shapes[sensor.shape as usize];
        let xf = body_xf.mul(&own.def.pose);
        let bounds = own.shape.aabb(&xf);
        self.for_each_candidate(&bounds, |user| {
            let (slot, k) = shape_ref(user);
            let Some((set, row)) = self.bodies.place_of_slot(slot) else { return };
            let other = &self.bodies.shapes_of_slot(slot)[k as usize];
            if slot == sensor.body.index || other.def.sensor || !own.def.collides_with(&other.def) {
                return;
            }
            let other_xf = self.bodies.set(set).transform(row).mul(&other.def.pose);
            if !other.shape.aabb(&other_xf).overlaps(&bounds) {
                return;
            }
            let touching = shape_distance(&own.shape, &xf, &other.shape, &other_xf)
                .is_some_and(|d| d.overlap || d.distance <= 0.0);
            if touching {
                sensor.next.push((self.bodies.id_of_slot(slot), k));
            }
        });
        sensor.next.sort_unstable();
    }

    /// Finds every sensor's visitors (in parallel) and appends this step's begin and
    /// end events.
    pub(super) fn update_sensors(&mut self, jobs: Jobs) {
        if self.sensors.list.is_empty() {
            return;
        }
        self.refresh_escaped();
        let mut list = std::mem::take(&mut self.sensors.list);
        let world = &*self;
        jobs.for_each_mut(&mut list, |_, sensor, _| world.sensor_visitors(sensor));
        let events = &mut self.sensors.events;
        for s in &mut list {
            let event = |&(visitor, visitor_shape): &(BodyId, u32), begin: bool| SensorEvent {
                sensor: s.body,
                sensor_shape: s.shape,
                visitor,
                visitor_shape,
                begin,
            };
            // Both lists are sorted: one merge finds who left and who came.
            let (mut i, mut j) = (0, 0);
            while i < s.visitors.len() || j < s.next.len() {
                match (s.visitors.get(i), s.next.get(j)) {
                    (Some(a), Some(b)) if a == b => {
                        i += 1;
                        j += 1;
                    }
                    (Some(a), Some(b)) if a < b => {
                        events.push(event(a, false));
                        i += 1;
                    }
                    (Some(a), None) => {
                        events.push(event(a, false));
                        i += 1;
                    }
                    (_, Some(b)) => {
                        events.push(event(b, true));
                        j += 1;
                    }
                    (None, None) => unreachable!(),
                }
            }
            std::mem::swap(&mut s.visitors, &mut s.next);
        }
        self.sensors.list = list;
    }

    /// Lists every awake body (what the step integrated) with its new placement.
    pub(super) fn record_moves(&mut self) {
        self.moves.clear();
        let awake = &self.bodies.awake;
        self.moves.extend((0..awake.len()).map(|row| BodyMoveEvent {
            body: awake.id[row],
            transform: awake.transform(row),
            fell_asleep: false,
        }));
    }

    /// Marks the listed bodies the sleep stage put to sleep.
    pub(super) fn mark_fell_asleep(&mut self) {
        for m in &mut self.moves {
            m.fell_asleep = !matches!(self.bodies.locate(m.body), Ok((SetKind::Awake, _)));
        }
    }

    /// The bodies the last step moved (every awake body, in the awake set's order),
    /// with their placements; those it put to sleep say so. An engine copies these
    /// transforms and leaves the rest of its scene alone.
    pub fn move_events(&self) -> &[BodyMoveEvent] {
        &self.moves
    }

    /// This step's sensor events: first the ends of the visits of sensors destroyed
    /// since the last step, then for each sensor in body-slot and shape order the
    /// shapes that stopped and began overlapping it, in visitor order.
    pub fn sensor_events(&self) -> &[SensorEvent] {
        &self.sensors.events
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
