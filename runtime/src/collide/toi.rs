//! Time of impact of two moving convex shapes by conservative advancement (Mirtich
//! 1996; Catto, "Continuous Collision", GDC 2013): at each step GJK gives the distance
//! `d` and normal `n`; no point of either shape can approach the other faster than
//! the relative linear speed along `n` plus each shape's angular speed times its
//! core's reach, so advancing time by `(d - target) / that bound` can never overshoot.
//! The loop stops within `tolerance` of the `target` distance, or when the bound says
//! the shapes separate, or after `MAX_TOI_ITERATIONS`.
//!
//! A pure translation first tries the swept-support test (Ericson 5.5.7): GJK against
//! the hull of the moving shape at both ends of its motion. If even that stays
//! farther than `target`, nothing along the way can hit.
//!
//! Rotations interpolate by normalised lerp. The rotation angle between unit
//! quaternions is bounded without trigonometry: it is at most `π |q1 - q0|`, and
//! nlerp's angular speed exceeds the average by at most `4/π` (about 1.27); the bound
//! uses 1.3.

use glam::{Quat, Vec3};

use super::contact::for_each_proxy;
use super::gjk::{distance, Proxy};
use crate::math::Isometry;
use crate::shapes::Shape;

pub const MAX_TOI_ITERATIONS: u32 = 32;

/// A rigid motion over `t` in `[0, 1]`: the centre `local_center` (in the shape's
/// frame) moves in a straight line from where `start` puts it to where `end` puts it,
/// and the rotation turns by normalised lerp.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sweep {
    pub start: Isometry,
    pub end: Isometry,
    pub local_center: Vec3,
}

impl Sweep {
    /// A shape resting at `xf`.
    pub fn fixed(xf: Isometry) -> Sweep {
        Sweep { start: xf, end: xf, local_center: Vec3::ZERO }
    }

    /// A pure translation by `delta` from `xf`.
    pub fn translation(xf: Isometry, delta: Vec3) -> Sweep {
        Sweep { start: xf, end: Isometry { translation: xf.translation + delta, ..xf }, local_center: Vec3::ZERO }
    }

    fn end_rotation(&self) -> Quat {
        let q = self.end.rotation;
        if self.start.rotation.dot(q) < 0.0 {
            -q
        } else {
            q
        }
    }

    pub fn at(&self, t: f32) -> Isometry {
        let c0 = self.start.transform_point(self.local_center);
        let c1 = self.end.transform_point(self.local_center);
        let q = (self.start.rotation + (self.end_rotation() - self.start.rotation) * t).normalize();
        let c = c0 + (c1 - c0) * t;
        Isometry { rotation: q, translation: c - q * self.local_center }
    }

    fn center_velocity(&self) -> Vec3 {
        self.end.transform_point(self.local_center) - self.start.transform_point(self.local_center)
    }

    /// An upper bound of the rotation speed (radians per unit `t`).
    fn angular_bound(&self) -> f32 {
        let dq = self.end_rotation() - self.start.rotation;
        1.3 * std::f32::consts::PI * dq.length()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToiState {
    /// The shapes come within `target` at `t`.
    Hit,
    /// They stay apart over the whole interval (`t` is the interval's end).
    Separated,
    /// Their cores already overlap at `t = 0`.
    Overlapping,
    /// The iteration bound ran out (`t` is safe: they are still apart there).
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Toi {
    pub state: ToiState,
    pub t: f32,
    /// A to B at `t` (for hits; zero otherwise).
    pub normal: Vec3,
    /// Midway between the closest points at `t`.
    pub point: Vec3,
    pub iterations: u32,
}

/// When `a` and `b`, moving by their sweeps, first come within `target` of each
/// other in `[0, t_max]` (to `tolerance`).
pub fn time_of_impact(
    a: &Proxy,
    sweep_a: &Sweep,
    b: &Proxy,
    sweep_b: &Sweep,
    t_max: f32,
    target: f32,
    tolerance: f32,
) -> Toi {
    let reach = |p: &Proxy, c: Vec3| p.points.iter().map(|q| q.distance(c)).fold(0.0, f32::max);
    let spin = sweep_a.angular_bound() * reach(a, sweep_a.local_center)
        + sweep_b.angular_bound() * reach(b, sweep_b.local_center);
    let relative = sweep_b.center_velocity() - sweep_a.center_velocity();
    let target = target.max(0.0);
    let tolerance = tolerance.max(1e-6);
    if spin == 0.0 && !swept_may_hit(a, sweep_a, b, sweep_b, t_max, target + tolerance) {
        return Toi { state: ToiState::Separated, t: t_max, normal: Vec3::ZERO, point: Vec3::ZERO, iterations: 1 };
    }
    let mut t = 0.0;
    for iterations in 1..=MAX_TOI_ITERATIONS {
        let d = distance(a, &sweep_a.at(t), b, &sweep_b.at(t));
        if d.overlap {
            let state = if t == 0.0 { ToiState::Overlapping } else { ToiState::Hit };
            return Toi { state, t, normal: Vec3::ZERO, point: d.point_a, iterations };
        }
        if d.distance <= target + tolerance {
            return Toi { state: ToiState::Hit, t, normal: d.normal, point: (d.point_a + d.point_b) * 0.5, iterations };
        }
        let approach = -relative.dot(d.normal) + spin;
        if approach <= 0.0 {
            return Toi { state: ToiState::Separated, t: t_max, normal: Vec3::ZERO, point: Vec3::ZERO, iterations };
        }
        t += (d.distance - target) / approach;
        if t >= t_max {
            return Toi { state: ToiState::Separated, t: t_max, normal: Vec3::ZERO, point: Vec3::ZERO, iterations };
        }
    }
    Toi { state: ToiState::Failed, t, normal: Vec3::ZERO, point: Vec3::ZERO, iterations: MAX_TOI_ITERATIONS }
}

/// [`time_of_impact`] for whole shapes: the earliest event over every pair of convex
/// parts of compounds: an overlap at the start, else the earliest hit or safe time of
/// a pair that ran out of iterations, else separated (also when a shape has no convex
/// piece).
pub fn shape_time_of_impact(
    a: &Shape,
    sweep_a: &Sweep,
    b: &Shape,
    sweep_b: &Sweep,
    t_max: f32,
    target: f32,
    tolerance: f32,
) -> Toi {
    let rank = |toi: &Toi| match toi.state {
        ToiState::Overlapping => 0,
        ToiState::Hit | ToiState::Failed => 1,
        ToiState::Separated => 2,
    };
    let mut best = Toi { state: ToiState::Separated, t: t_max, normal: Vec3::ZERO, point: Vec3::ZERO, iterations: 0 };
    // A part placed by `pose` moves with its shape: the same centre path and turn.
    let part = |sweep: &Sweep, pose: &Isometry| Sweep {
        start: sweep.start.mul(pose),
        end: sweep.end.mul(pose),
        local_center: pose.inverse_transform_point(sweep.local_center),
    };
    for_each_proxy(a, &Isometry::IDENTITY, &mut |pa, pose_a| {
        for_each_proxy(b, &Isometry::IDENTITY, &mut |pb, pose_b| {
            let toi = time_of_impact(pa, &part(sweep_a, pose_a), pb, &part(sweep_b, pose_b), t_max, target, tolerance);
            if (rank(&toi), toi.t) < (rank(&best), best.t) {
                best = toi;
            }
        });
    });
    best
}

/// Swept support: the hull of A's start and end positions (relative to B, which may
/// translate too) against B. `false` means no hit is possible.
fn swept_may_hit(a: &Proxy, sweep_a: &Sweep, b: &Proxy, sweep_b: &Sweep, t_max: f32, reach: f32) -> bool {
    const MAX_SWEPT: usize = 16;
    if a.points.len() > MAX_SWEPT / 2 {
        return true;
    }
    let delta = (sweep_a.center_velocity() - sweep_b.center_velocity()) * t_max;
    let xf_a = sweep_a.start;
    let mut pts = [Vec3::ZERO; MAX_SWEPT];
    let local_delta = xf_a.inverse_transform_vector(delta);
    for (i, p) in a.points.iter().enumerate() {
        pts[2 * i] = *p;
        pts[2 * i + 1] = *p + local_delta;
    }
    let swept = Proxy { points: &pts[..2 * a.points.len()], radius: a.radius };
    let d = distance(&swept, &xf_a, b, &sweep_b.start);
    d.overlap || d.distance <= reach
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sphere_hits_a_box_at_the_right_time() {
        let point = [Vec3::ZERO];
        let ball = Proxy { points: &point, radius: 0.5 };
        let corners: Vec<Vec3> = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 != 0 { 1.0 } else { -1.0 },
                    if i & 2 != 0 { 1.0 } else { -1.0 },
                    if i & 4 != 0 { 0.1 } else { -0.1 },
                )
            })
            .collect();
        let wall = Proxy { points: &corners, radius: 0.0 };
        // From z = -10 to z = +10 through a 0.2 m wall: first touch when z = -0.6, t = 0.47.
        let sweep =
            Sweep::translation(Isometry::from_translation(Vec3::new(0.0, 0.0, -10.0)), Vec3::new(0.0, 0.0, 20.0));
        let toi = time_of_impact(&ball, &sweep, &wall, &Sweep::fixed(Isometry::IDENTITY), 1.0, 0.0, 1e-4);
        assert_eq!(toi.state, ToiState::Hit);
        assert!((toi.t - 0.47).abs() < 1e-4, "{toi:?}");
        assert!(toi.normal.abs_diff_eq(Vec3::Z, 1e-4));
        // Stopping 0.01 short (a target distance).
        let toi = time_of_impact(&ball, &sweep, &wall, &Sweep::fixed(Isometry::IDENTITY), 1.0, 0.01, 1e-4);
        assert!((toi.t * 20.0 - 9.39).abs() < 2e-3, "{toi:?}");
        // Missing the wall sideways, swept support rejects at once.
        let miss =
            Sweep::translation(Isometry::from_translation(Vec3::new(3.0, 0.0, -10.0)), Vec3::new(0.0, 0.0, 20.0));
        let toi = time_of_impact(&ball, &miss, &wall, &Sweep::fixed(Isometry::IDENTITY), 1.0, 0.0, 1e-4);
        assert_eq!((toi.state, toi.iterations), (ToiState::Separated, 1));
        // Already overlapping.
        let inside = Sweep::fixed(Isometry::IDENTITY);
        assert_eq!(time_of_impact(&ball, &inside, &wall, &inside, 1.0, 0.0, 1e-4).state, ToiState::Overlapping);
    }

    #[test]
    fn spinning_bar_hits_a_post() {
        // A 2 m bar spinning half a turn about its centre sweeps into a point 0.9 m away.
        let bar = [Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0)];
        let a = Proxy { points: &bar, radius: 0.05 };
        let post = [Vec3::new(0.0, 0.0, 0.0)];
        let b = Proxy { points: &post, radius: 0.05 };
        let sweep = Sweep {
            start: Isometry::IDENTITY,
            end: Isometry::new(Vec3::ZERO, Quat::from_rotation_y(std::f32::consts::PI * 0.9)),
            local_center: Vec3::ZERO,
        };
        let post_at = Sweep::fixed(Isometry::from_translation(Vec3::new(0.0, 0.0, 0.9)));
        let toi = time_of_impact(&a, &sweep, &b, &post_at, 1.0, 0.0, 1e-3);
        assert_eq!(toi.state, ToiState::Hit, "{toi:?}");
        // At the hit the bar is within the tolerance of the post and not through it.
        let d = distance(&a, &sweep.at(toi.t), &b, &post_at.start);
        assert!(!d.overlap && d.distance >= -1e-4 && d.distance < 2e-3, "{d:?}");
        assert!(toi.iterations < MAX_TOI_ITERATIONS);
    }
}
