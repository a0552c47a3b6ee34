//! Water: buoyancy and drag for bodies in the terrain's water voxels, and water
//! enter/leave events.
//!
//! Roblox's terrain treats its water voxels this way: a body is lifted by the weight
//! of the water its shapes displace, at the centroid of the displaced volume, and
//! slowed by drag. Each step, before the solve, every awake dynamic body with a
//! water contact (the terrain contacts already list them) gets:
//!
//! - **buoyancy** `-ρ V g` at the centre of buoyancy. `V` is the exact volume of its
//!   shapes inside the water voxels: the voxels under the shape are read as columns
//!   of bits, columns with the same water merged into rectangles, and each run of
//!   water in a rectangle is a prism with a flat top, whose intersection with the
//!   shape `shapes::SurfaceMesh` integrates (boxes and hulls exactly, spheres and
//!   capsules within about 2%). It is taken at the pose the body's velocities lead to
//!   at the step's end, not at its start: the force is computed once but acts over
//!   every substep, and a spring held for a whole step gains energy (a long capsule
//!   rocked ever harder); evaluated ahead it is backward Euler, which loses a little
//!   instead. At rest both poses are the same, so the waterline is exact;
//! - **drag** as Jolt's `Body::ApplyBuoyancyImpulse` has it: quadratic linear drag
//!   `½ ρ C A |v| v` of the centre of buoyancy's velocity, with `A` the body's box
//!   area facing that velocity times the submerged fraction, and angular drag
//!   `C_ω m (V / V_body) l² ω` (`l` the mean box side), each clamped so it never
//!   reverses the motion in a step (the linear drag counting the turn it causes).
//!   Below 1 m/s the linear drag is taken as if at 1 m/s, so linear in the speed:
//!   quadratic drag alone fades with the speed and left floating bodies drifting
//!   and jostling for minutes;
//! - **wave damping** of bobbing: 20% of critical damping of the buoyancy spring
//!   along gravity (stiffness `ρ g A_w`, `A_w` the waterline area `dV/dh`), the
//!   energy a bobbing body's waves carry away, so a dropped plank settles in a few
//!   seconds and sleeps.
//!
//! The forces join the body's force and torque accumulators, so the solver applies
//! them each substep as it applies gravity: a body at rest at its waterline keeps
//! zero velocity. Sleeping bodies are left alone (a terrain edit near them wakes
//! them). The bodies are computed as parallel jobs (16 fixed lanes, each with its own
//! scratch) and their forces added in body-slot order, so the result is the same
//! for any worker count; nothing is allocated once the buffers have grown.
//!
//! Events: a body enters the water when its submerged volume becomes positive and
//! leaves when it returns to zero (or it is destroyed, reported with the next step,
//! or becomes static or kinematic). Sleeping bodies stay where they were. Events come
//! in body-slot order, each enter followed by exactly one leave.

use glam::{IVec3, Quat, Vec3};

use super::body::{flags, BodyId, BodyShape, SetKind};
use super::narrow::shape_ref;
use super::world::World;
use crate::jobs::Jobs;
use crate::math::{Aabb, Isometry};
use crate::shapes::{sphere_below, Prism, Shape, SurfaceMesh, VolumeMoments};
use crate::spatial::ProxyId;
use crate::terrain::{ContactKind, Terrain, CHUNK};

/// Share of critical damping of a floating body's bobbing (the energy its waves
/// carry away; real hulls lose 10–30%).
const HEAVE_DAMPING_RATIO: f32 = 0.2;

/// Below this speed (m/s) drag is linear in the speed, as if the body moved this
/// fast: quadratic drag alone fades with the speed and leaves bodies drifting for
/// minutes (at low speed real water's drag is viscous, linear).
const DRAG_FLOOR_SPEED: f32 = 1.0;

/// A body entered (`begin`) or left the water.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaterEvent {
    pub body: BodyId,
    pub begin: bool,
}

/// How much of a body is under water now: the submerged volume (m³), its centroid
/// (the centre of buoyancy; the body's centre of mass when nothing is submerged)
/// and the body's whole volume.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Submerged {
    pub volume: f32,
    pub center: Vec3,
    pub body_volume: f32,
}

/// A rectangle of voxel columns `x0..=x1`, `z0..=z1` with the same water bits.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    x0: i32,
    x1: i32,
    z0: i32,
    z1: i32,
    mask: u64,
}

/// The water state of a world: the bodies in water, events, and scratch.
#[derive(Debug, Default)]
pub(super) struct Water {
    /// Bodies in water after the last step, sorted; the next list being built.
    inside: Vec<BodyId>,
    next: Vec<BodyId>,
    pub(super) events: Vec<WaterEvent>,
    /// Leave events of bodies destroyed since the last step.
    pub(super) pending: Vec<WaterEvent>,
    /// Scratch: this step's (body slot, shape) pairs in water, sorted; the bodies
    /// they group into; the parallel lanes; the scratch of [`World::submerged`].
    shapes: Vec<(u32, u32)>,
    groups: Vec<Group>,
    lanes: Vec<Lane>,
    mesh: SurfaceMesh,
    segments: Vec<Segment>,
}

/// Lanes the bodies in water are split into (a fixed number, so the split is the
/// same for any worker count).
const LANES: usize = 16;

/// An awake dynamic body with shapes in water: its row, and its shapes as
/// `Water::shapes[start..end]`.
#[derive(Clone, Copy, Debug)]
struct Group {
    row: u32,
    start: u32,
    end: u32,
}

/// One parallel lane: scratch, and per body its submerged volume, force, torque.
/// Lanes start with room for a tessellated sphere or capsule and a few columns, so
/// a lane meeting its first one mid-run does not allocate.
#[derive(Debug)]
struct Lane {
    mesh: SurfaceMesh,
    segments: Vec<Segment>,
    out: Vec<(f32, Vec3, Vec3)>,
}

impl Water {
    pub(super) fn remove_body(&mut self, body: BodyId) {
        if let Ok(i) = self.inside.binary_search(&body) {
            self.inside.remove(i);
            self.pending.push(WaterEvent { body, begin: false });
        }
    }
}

/// Scratch of the submerged-volume computation.
struct Scratch<'a> {
    mesh: &'a mut SurfaceMesh,
    segments: &'a mut Vec<Segment>,
}

/// The water state that outlives a step (bodies in water, the last step's events,
/// leave events waiting for the next), for a snapshot.
#[derive(Clone, Debug, Default)]
pub(super) struct WaterState {
    inside: Vec<BodyId>,
    events: Vec<WaterEvent>,
    pending: Vec<WaterEvent>,
}

crate::codec::fields!(WaterEvent { body, begin });
crate::codec::fields!(WaterState { inside, events, pending });

impl Water {
    pub(super) fn save_into(&self, to: &mut WaterState) {
        to.inside.clone_from(&self.inside);
        to.events.clone_from(&self.events);
        to.pending.clone_from(&self.pending);
    }

    /// Takes `saved`'s state; keeps this one's scratch.
    /// Writes what [`WaterState`]'s encoding reads.
    pub(super) fn put_saved(&self, w: &mut crate::codec::Writer) {
        use crate::codec::Codec;
        self.inside.put(w);
        self.events.put(w);
        self.pending.put(w);
    }

    pub(super) fn swap_saved(&mut self, saved: &mut WaterState) {
        std::mem::swap(&mut self.inside, &mut saved.inside);
        std::mem::swap(&mut self.events, &mut saved.events);
        std::mem::swap(&mut self.pending, &mut saved.pending);
    }

    pub(super) fn restore(&mut self, saved: &WaterState) {
        self.inside.clone_from(&saved.inside);
        self.events.clone_from(&saved.events);
        self.pending.clone_from(&saved.pending);
    }
}

/// The volume of `shape` placed by `xf` inside `terrain`'s water, with its first
/// moment about `origin`, and the waterline area `dV/dh`.
fn shape_in_water(terrain: &Terrain, shape: &BodyShape, xf: &Isometry, origin: Vec3, s: &mut Scratch) -> VolumeMoments {
    let mut total = VolumeMoments::default();
    let placed = xf.mul(&shape.def.pose);
    let bounds = shape.shape.aabb(&placed);
    let Some((cmin, cmax)) = terrain.geometry_bounds() else { return total };
    let size = terrain.voxel_size();
    if !bounds.is_valid() || !bounds.min.is_finite() || !bounds.max.is_finite() {
        return total;
    }
    // Voxels under the shape, clamped to where the terrain has ever had anything.
    let (gmin, gmax) = ((cmin * CHUNK).as_vec3(), (cmax * CHUNK + IVec3::splat(CHUNK - 1)).as_vec3());
    let (lo, hi) = ((bounds.min / size).floor(), (bounds.max / size).floor());
    if hi.cmplt(gmin).any() || lo.cmpgt(gmax).any() {
        return total;
    }
    let (lo, hi) = (lo.max(gmin).as_ivec3(), hi.min(gmax).as_ivec3());
    let mut meshed = false;
    let mut y0 = lo.y;
    while y0 <= hi.y {
        let count = ((hi.y - y0 + 1) as u32).min(64);
        columns(terrain, lo, hi, y0, count, s.segments);
        for seg in s.segments.iter() {
            let (x0, x1) = (seg.x0 as f32 * size, (seg.x1 + 1) as f32 * size);
            let (z0, z1) = (seg.z0 as f32 * size, (seg.z1 + 1) as f32 * size);
            let holds = |b: &Aabb| b.min.x >= x0 && b.max.x <= x1 && b.min.z >= z0 && b.max.z <= z1;
            if let (Shape::Sphere { center, radius }, true) = (&shape.shape, holds(&bounds)) {
                // A whole sphere over the same water: the closed form.
                let c = placed.transform_point(*center);
                for (bottom, top) in runs(seg.mask, y0, size) {
                    total.add(sphere_below(c, *radius, top, origin), 1.0);
                    total.add(sphere_below(c, *radius, bottom, origin), -1.0);
                }
                continue;
            }
            if !meshed {
                s.mesh.set(&shape.shape, &placed, origin);
                meshed = true;
            }
            let prism = Prism { min_x: x0, max_x: x1, min_z: z0, max_z: z1 };
            for (bottom, top) in runs(seg.mask, y0, size) {
                total.add(s.mesh.below(&prism, top), 1.0);
                if bottom > bounds.min.y {
                    total.add(s.mesh.below(&prism, bottom), -1.0);
                }
            }
        }
        y0 += count as i32;
    }
    through_axis(&shape.shape, &placed, origin, total)
}

/// Water pushes on a sphere or a capsule along its surface normals, which all pass
/// through its centre or axis: the lift's line (vertical, through the centroid)
/// must cross that axis, or a ball half over the shore would be turned forever by a
/// torque that no turn changes. Moves the centroid across, in the vertical plane
/// through the axis; other shapes keep theirs.
fn through_axis(shape: &Shape, placed: &Isometry, origin: Vec3, sub: VolumeMoments) -> VolumeMoments {
    let (a, b) = match shape {
        Shape::Sphere { center, .. } => (*center, *center),
        Shape::Capsule { a, b, .. } => (*a, *b),
        _ => return sub,
    };
    if sub.volume <= 0.0 {
        return sub;
    }
    let (a, b) = (placed.transform_point(a), placed.transform_point(b));
    let c = origin + sub.moment / sub.volume;
    let across = Vec3::Y.cross(b - a);
    let moved = if across.length_squared() > 1e-12 {
        let n = across.normalize();
        c - n * (c - a).dot(n)
    } else {
        Vec3::new(a.x, c.y, a.z)
    };
    VolumeMoments { moment: (moved - origin) * sub.volume, ..sub }
}

/// The runs of set bits of `mask` (voxels from `y0` up) as (bottom, top) heights.
fn runs(mut mask: u64, y0: i32, size: f32) -> impl Iterator<Item = (f32, f32)> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let start = mask.trailing_zeros();
        let run = (!(mask >> start)).trailing_zeros();
        mask &= if start + run >= 64 { 0 } else { !0u64 << (start + run) };
        Some(((y0 + start as i32) as f32 * size, (y0 + (start + run) as i32) as f32 * size))
    })
}

/// The rectangles of columns in `lo..=hi` (x, z) with water among voxels
/// `y0..y0 + count`: equal neighbours along x merged, then equal rows along z.
fn columns(terrain: &Terrain, lo: IVec3, hi: IVec3, y0: i32, count: u32, out: &mut Vec<Segment>) {
    out.clear();
    let mut row_start = 0;
    for z in lo.z..=hi.z {
        let this_row = out.len();
        let mut x = lo.x;
        let mut mask = terrain.water_column(x, z, y0, count);
        while x <= hi.x {
            // Each column is read once: the first that differs starts the next run.
            let mut x1 = x;
            let mut next = 0;
            while x1 < hi.x {
                next = terrain.water_column(x1 + 1, z, y0, count);
                if next != mask {
                    break;
                }
                x1 += 1;
            }
            if mask != 0 {
                // The same rectangle on the row before grows instead.
                let above = out[row_start..this_row]
                    .iter()
                    .position(|s| s.x0 == x && s.x1 == x1 && s.mask == mask && s.z1 == z - 1);
                match above {
                    Some(i) => out[row_start + i].z1 = z,
                    None => out.push(Segment { x0: x, x1, z0: z, z1: z, mask }),
                }
            }
            x = x1 + 1;
            mask = next;
        }
        // Rectangles that did not grow into this row are final: keep them before
        // `row_start` so later rows only search the open ones.
        let mut k = row_start;
        for i in row_start..out.len() {
            if out[i].z1 < z {
                out.swap(k, i);
                k += 1;
            }
        }
        row_start = k;
    }
}

impl World {
    /// Buoyancy, drag and heave damping into the force accumulators of awake
    /// dynamic bodies in water; the step's water events (see the module notes).
    pub(super) fn apply_water(&mut self, dt: f32, jobs: Jobs) {
        if dt <= 0.0 {
            // Nothing moves (and the solve that clears the forces does not run).
            return;
        }
        let water = &mut self.water;
        water.shapes.clear();
        water.groups.clear();
        water.next.clear();
        if let (Some(terrain), true) = (self.terrain.as_ref(), self.def.water_density > 0.0) {
            // The shapes with water contacts, grouped by body: awake dynamic ones.
            let tree = self.broadphase.tree();
            let mut last = u32::MAX;
            for c in self.terrain_contacts.contacts().iter().filter(|c| c.kind == ContactKind::Water) {
                if c.body != last {
                    last = c.body;
                    water.shapes.push(shape_ref(tree.user_data(ProxyId(c.body))));
                }
            }
            water.shapes.sort_unstable();
            let bodies = &self.bodies;
            let mut i = 0;
            while i < water.shapes.len() {
                let slot = water.shapes[i].0;
                let end = i + water.shapes[i..].iter().take_while(|s| s.0 == slot).count();
                if let Some((SetKind::Awake, row)) = bodies.place_of_slot(slot) {
                    let a = &bodies.awake;
                    if a.inv_mass[row] > 0.0 && a.flags[row] & flags::KINEMATIC == 0 {
                        water.groups.push(Group { row: row as u32, start: i as u32, end: end as u32 });
                    }
                }
                i = end;
            }
            // The bodies in fixed lanes (the same split for any worker count), each
            // with its own scratch, as parallel jobs.
            let per_lane = water.groups.len().div_ceil(LANES).max(1);
            water.lanes.resize_with(LANES, || Lane {
                mesh: SurfaceMesh::with_capacity(),
                segments: Vec::with_capacity(16),
                out: Vec::with_capacity(16),
            });
            let (groups, shapes, def) = (&water.groups, &water.shapes, &self.def);
            jobs.for_each_mut(&mut water.lanes, |k, lane, _| {
                let range = (k * per_lane).min(groups.len())..((k + 1) * per_lane).min(groups.len());
                lane.out.clear();
                let mut scratch = Scratch { mesh: &mut lane.mesh, segments: &mut lane.segments };
                for g in &groups[range] {
                    let shapes = &shapes[g.start as usize..g.end as usize];
                    lane.out.push(body_in_water(terrain, bodies, def, g.row as usize, shapes, dt, &mut scratch));
                }
            });
            let a = &mut self.bodies.awake;
            let results = water.lanes.iter().flat_map(|l| &l.out);
            for (g, &(volume, force, torque)) in water.groups.iter().zip(results) {
                if volume > 0.0 {
                    let row = g.row as usize;
                    water.next.push(a.id[row]);
                    a.force[row] += force;
                    a.torque[row] += torque;
                }
            }
        }
        // Who entered and left: sleeping bodies keep their state.
        let bodies = &self.bodies;
        for &id in &water.inside {
            if let Ok((SetKind::Resting, row)) = bodies.locate(id) {
                if bodies.resting.flags[row] & flags::STATIC == 0 {
                    water.next.push(id);
                }
            }
        }
        water.next.sort_unstable();
        let (mut i, mut j) = (0, 0);
        let (old, new) = (&water.inside, &water.next);
        while i < old.len() || j < new.len() {
            match (old.get(i), new.get(j)) {
                (Some(a), Some(b)) if a == b => {
                    i += 1;
                    j += 1;
                }
                (Some(&a), Some(b)) if a < *b => {
                    water.events.push(WaterEvent { body: a, begin: false });
                    i += 1;
                }
                (Some(&a), None) => {
                    water.events.push(WaterEvent { body: a, begin: false });
                    i += 1;
                }
                (_, Some(&b)) => {
                    water.events.push(WaterEvent { body: b, begin: true });
                    j += 1;
                }
                (None, None) => unreachable!(),
            }
        }
        std::mem::swap(&mut water.inside, &mut water.next);
    }

    /// How much of body `id` is under the terrain's water now (see [`Submerged`]).
    /// Sensor shapes displace nothing.
    pub fn submerged(&mut self, id: BodyId) -> Result<Submerged, super::BodyError> {
        let (set, row) = self.bodies.locate(id)?;
        let bodies = &self.bodies;
        let set = bodies.set(set);
        let (xf, com) = (set.transform(row), set.position[row]);
        let shapes = bodies.shapes(id)?;
        let body_volume = shapes.iter().filter(|s| !s.def.sensor).map(|s| s.shape.mass_properties(1.0).mass).sum();
        let mut sub = VolumeMoments::default();
        if let Some(terrain) = self.terrain.as_ref() {
            let water = &mut self.water;
            let mut scratch = Scratch { mesh: &mut water.mesh, segments: &mut water.segments };
            for shape in shapes.iter().filter(|s| !s.def.sensor) {
                sub.add(shape_in_water(terrain, shape, &xf, com, &mut scratch), 1.0);
            }
        }
        let center = if sub.volume > 0.0 { com + sub.moment / sub.volume } else { com };
        Ok(Submerged { volume: sub.volume.max(0.0), center, body_volume })
    }

    /// This step's water events: first the leaves of bodies destroyed since the last
    /// step, then enters and leaves in body-slot order.
    pub fn water_events(&self) -> &[WaterEvent] {
        &self.water.events
    }
}

/// Awake row `row` with shapes `shapes` (body slot, shape index) in water: its
/// submerged volume now, and the force and torque the water puts on it.
fn body_in_water(
    terrain: &Terrain,
    bodies: &super::Bodies,
    def: &super::WorldDef,
    row: usize,
    shapes: &[(u32, u32)],
    dt: f32,
    scratch: &mut Scratch,
) -> (f32, Vec3, Vec3) {
    let a = &bodies.awake;
    let all = bodies.shapes_of_slot(a.id[row].index);
    let mut in_water = |xf: &Isometry, com: Vec3| {
        let mut sub = VolumeMoments::default();
        for &(_, k) in shapes {
            let shape = &all[k as usize];
            if !shape.def.sensor {
                sub.add(shape_in_water(terrain, shape, xf, com, scratch), 1.0);
            }
        }
        sub
    };
    let (xf, com) = (a.transform(row), a.position[row]);
    let now = in_water(&xf, com);
    if now.volume <= 0.0 {
        return (0.0, Vec3::ZERO, Vec3::ZERO);
    }
    // Where the step will carry the body (see the module notes).
    let (v, w) = (a.linear_velocity[row], a.angular_velocity[row]);
    let turn = Quat::from_scaled_axis(w * dt);
    let (next_com, next_rotation) = (com + v * dt, (turn * a.rotation[row]).normalize());
    let next = Isometry::new(next_com - next_rotation * a.local_center[row], next_rotation);
    let ahead = in_water(&next, next_com);
    let (force, torque) = water_forces(def, all, a, row, &xf, (now, ahead), dt);
    (now.volume, force, torque)
}

/// Force and torque (about the centre of mass) of the water on awake row `row`
/// with `sub` submerged now and `ahead` at the end of the step (moments about the
/// centre of mass at each).
fn water_forces(
    def: &super::WorldDef,
    shapes: &[BodyShape],
    a: &super::BodySet,
    row: usize,
    xf: &Isometry,
    (sub, ahead): (VolumeMoments, VolumeMoments),
    dt: f32,
) -> (Vec3, Vec3) {
    let rho = def.water_density;
    let g = def.gravity * a.gravity_scale[row];
    let r = sub.moment / sub.volume;
    // Buoyancy at the pose the step leads to (backward Euler), its torque about the
    // centre of mass there.
    let buoyancy = -g * (rho * ahead.volume);
    let lift_torque = if ahead.volume > 0.0 { (ahead.moment / ahead.volume).cross(buoyancy) } else { Vec3::ZERO };
    let (v, w) = (a.linear_velocity[row], a.angular_velocity[row]);
    let vc = v + w.cross(r);
    let mut volume = 0.0;
    let mut local = Aabb::EMPTY;
    for s in shapes.iter().filter(|s| !s.def.sensor) {
        volume += s.shape.mass_properties(1.0).mass;
        local = local.union(&s.shape.aabb(&s.def.pose));
    }
    let fraction = if volume > 0.0 { (sub.volume / volume).min(1.0) } else { 1.0 };
    let size = if local.is_valid() { local.max - local.min } else { Vec3::ZERO };
    let mass = 1.0 / a.inv_mass[row];
    // Quadratic drag on the centre of buoyancy's velocity, over the wetted share of
    // the box area facing it (Jolt's area rule).
    let speed = vc.length();
    let mut drag = Vec3::ZERO;
    if speed > 1e-6 {
        let lv = xf.rotation.inverse() * vc;
        let faces = Vec3::new(size.y * size.z, size.x * size.z, size.x * size.y);
        let area = lv.abs().dot(faces) / speed * fraction;
        drag = vc * (-0.5 * rho * def.water_linear_drag * area * speed.max(DRAG_FLOOR_SPEED));
    }
    // Wave damping of the heave: a share of critical damping of the buoyancy
    // spring (stiffness ρ g A_w).
    let mut heave = Vec3::ZERO;
    let g_len = g.length();
    if g_len > 0.0 && sub.area > 0.0 {
        let down = g / g_len;
        let k = rho * g_len * sub.area;
        let along = vc.dot(down);
        heave = down * (-2.0 * HEAVE_DAMPING_RATIO * (k * mass).sqrt() * along);
    }
    // Both act at the centre of buoyancy: together they may at most stop its motion
    // along them in one step, counting the turn they cause (the point's effective
    // mass), or a spinning ball's drag would reverse its spin every step.
    let mut damping = drag + heave;
    let strength = damping.length();
    if strength > 0.0 {
        let n = damping / strength;
        let rn = r.cross(n);
        let k = a.inv_mass[row] + rn.dot(a.world_inv_inertia[row] * rn);
        let allowed = (-vc.dot(n)).max(0.0) / (k * dt);
        if strength > allowed {
            damping *= allowed / strength;
        }
    }
    // Angular drag: C m (V / V_body) l² ω, never reversing the spin in a step.
    let l = (size.x + size.y + size.z) / 3.0;
    let mut spin = w * (-def.water_angular_drag * mass * fraction * l * l);
    let dw = (a.world_inv_inertia[row] * spin * dt).length();
    let wl = w.length();
    if dw > wl && dw > 0.0 {
        spin *= wl / dw;
    }
    (buoyancy + damping, lift_torque + r.cross(damping) + spin)
}

#[cfg(test)]
#[path = "water_tests.rs"]
mod tests;
