//! The world: bodies, gravity, and the step's stages as parallel jobs.

use std::ops::Range;

use glam::{Mat3, Quat, Vec3};

use super::body::{flags, Bodies, BodyDef, BodyError, BodyId, BodySet, SetKind, ShapeDef};
use crate::jobs::Jobs;
use crate::math::Isometry;
use crate::shapes::Shape;

/// How a world is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldDef {
    pub gravity: Vec3,
}

impl Default for WorldDef {
    fn default() -> Self {
        WorldDef { gravity: Vec3::new(0.0, -9.81, 0.0) }
    }
}

/// Bodies per job in the integration stages.
const GRAIN: usize = 256;

/// A rigid-body world.
#[derive(Debug, Default)]
pub struct World {
    pub def: WorldDef,
    bodies: Bodies,
}

/// Mutable access to disjoint row ranges of one column from parallel jobs.
struct Column<T>(*mut T, usize);

// SAFETY: jobs touch disjoint ranges (see `rows`), and T: Send moves across threads.
unsafe impl<T: Send> Sync for Column<T> {}

impl<T> Column<T> {
    fn new(v: &mut [T]) -> Column<T> {
        Column(v.as_mut_ptr(), v.len())
    }

    /// # Safety
    /// No other live borrow overlaps `range` (each job gets its own chunk).
    #[allow(clippy::mut_from_ref)]
    unsafe fn rows(&self, range: Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.1, "row range out of bounds");
        // SAFETY: in bounds (checked), disjoint per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(range.start), range.len()) }
    }
}

impl World {
    pub fn new(def: WorldDef) -> World {
        World { def, bodies: Bodies::default() }
    }

    pub fn bodies(&self) -> &Bodies {
        &self.bodies
    }

    pub fn create_body(&mut self, def: &BodyDef) -> Result<BodyId, BodyError> {
        self.bodies.create(def)
    }

    pub fn destroy_body(&mut self, id: BodyId) -> Result<(), BodyError> {
        self.bodies.destroy(id)
    }

    pub fn add_shape(&mut self, id: BodyId, shape: Shape, def: ShapeDef) -> Result<(), BodyError> {
        self.bodies.add_shape(id, shape, def)
    }

    pub fn transform(&self, id: BodyId) -> Result<Isometry, BodyError> {
        self.bodies.transform(id)
    }

    /// Linear and angular velocity.
    pub fn velocity(&self, id: BodyId) -> Result<(Vec3, Vec3), BodyError> {
        let (set, row) = self.bodies.locate(id)?;
        let s = self.bodies.set(set);
        Ok((s.linear_velocity[row], s.angular_velocity[row]))
    }

    /// Wakes a sleeping dynamic body (static bodies stay resting).
    fn wake(&mut self, id: BodyId) -> Result<(SetKind, usize), BodyError> {
        let (set, row) = self.bodies.locate(id)?;
        if set == SetKind::Resting && self.bodies.resting.flags[row] & flags::STATIC == 0 {
            self.bodies.move_to(id, SetKind::Awake)?;
            return self.bodies.locate(id);
        }
        Ok((set, row))
    }

    /// Adds a force (N) at the centre of mass until the next step; wakes the body.
    pub fn apply_force(&mut self, id: BodyId, force: Vec3) -> Result<(), BodyError> {
        if !force.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            self.bodies.awake.force[row] += force;
        }
        Ok(())
    }

    /// Adds a torque (N m) until the next step; wakes the body.
    pub fn apply_torque(&mut self, id: BodyId, torque: Vec3) -> Result<(), BodyError> {
        if !torque.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            self.bodies.awake.torque[row] += torque;
        }
        Ok(())
    }

    /// Applies an impulse (N s) at world point `point`: changes linear and angular
    /// velocity at once; wakes the body. Static and kinematic bodies ignore it.
    pub fn apply_impulse(&mut self, id: BodyId, impulse: Vec3, point: Vec3) -> Result<(), BodyError> {
        if !impulse.is_finite() || !point.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            let s = &mut self.bodies.awake;
            let r = point - s.position[row];
            s.linear_velocity[row] += impulse * s.inv_mass[row];
            s.angular_velocity[row] += s.world_inv_inertia[row] * r.cross(impulse);
        }
        Ok(())
    }

    /// Sets the velocities of a dynamic or kinematic body; wakes it.
    pub fn set_velocity(&mut self, id: BodyId, linear: Vec3, angular: Vec3) -> Result<(), BodyError> {
        if !linear.is_finite() || !angular.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            self.bodies.awake.linear_velocity[row] = linear;
            self.bodies.awake.angular_velocity[row] = angular;
        }
        Ok(())
    }

    /// Advances the world by `dt` seconds (finite, >= 0), its stages as parallel jobs.
    pub fn step(&mut self, dt: f32, jobs: Jobs) -> Result<(), BodyError> {
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(BodyError::InvalidArgument);
        }
        let gravity = self.def.gravity;
        integrate_velocities(&mut self.bodies.awake, gravity, dt, jobs);
        integrate_positions(&mut self.bodies.awake, dt, jobs);
        Ok(())
    }
}

/// Gravity, forces and damping into velocities; clears the accumulators. Kinematic
/// bodies (zero inverse mass) keep their velocity.
fn integrate_velocities(s: &mut BodySet, gravity: Vec3, dt: f32, jobs: Jobs) {
    let n = s.len();
    let (v, w) = (Column::new(&mut s.linear_velocity), Column::new(&mut s.angular_velocity));
    let (force, torque) = (Column::new(&mut s.force), Column::new(&mut s.torque));
    let (inv_mass, inv_inertia) = (&s.inv_mass, &s.world_inv_inertia);
    let (lin_damp, ang_damp, gscale) = (&s.linear_damping, &s.angular_damping, &s.gravity_scale);
    jobs.parallel_for(0..n, GRAIN, |range, _| {
        // SAFETY: `parallel_for` hands each chunk range to exactly one job.
        let (v, w, f, t) = unsafe {
            (v.rows(range.clone()), w.rows(range.clone()), force.rows(range.clone()), torque.rows(range.clone()))
        };
        for (k, i) in range.enumerate() {
            let m = inv_mass[i];
            if m > 0.0 {
                let dv = (gravity * gscale[i] + f[k] * m) * dt;
                let dw = inv_inertia[i] * t[k] * dt;
                v[k] = (v[k] + dv) * (1.0 / (1.0 + dt * lin_damp[i]));
                w[k] = (w[k] + dw) * (1.0 / (1.0 + dt * ang_damp[i]));
            }
            f[k] = Vec3::ZERO;
            t[k] = Vec3::ZERO;
        }
    });
}

/// Velocities into positions and rotations; refreshes world inverse inertia.
fn integrate_positions(s: &mut BodySet, dt: f32, jobs: Jobs) {
    let n = s.len();
    let (x, q) = (Column::new(&mut s.position), Column::new(&mut s.rotation));
    let inv_inertia = Column::new(&mut s.world_inv_inertia);
    let (v, w, local) = (&s.linear_velocity, &s.angular_velocity, &s.local_inv_inertia);
    jobs.parallel_for(0..n, GRAIN, |range, _| {
        // SAFETY: `parallel_for` hands each chunk range to exactly one job.
        let (x, q, ii) = unsafe { (x.rows(range.clone()), q.rows(range.clone()), inv_inertia.rows(range.clone())) };
        for (k, i) in range.enumerate() {
            x[k] += v[i] * dt;
            let spin = w[i] * (0.5 * dt);
            let dq = Quat::from_xyzw(spin.x, spin.y, spin.z, 0.0) * q[k];
            q[k] = (q[k] + dq).normalize();
            let r = Mat3::from_quat(q[k]);
            ii[k] = r * local[i] * r.transpose();
        }
    });
}
