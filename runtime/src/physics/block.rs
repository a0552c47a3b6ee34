//! A manifold's normal points solved together: Box2D v2.4's block solver, for up to
//! four points and with the soft step's compliance, on the scalar path (the bundles
//! run the same operations in `wide::normal_block`). Why: `docs/physics-stability.md`.

use glam::Vec3;

use super::contact_solver::{Constraint, ContactPoint, Prepared, PreparedPoint};

/// The diagonal term a relax pass adds to each point of [`normal_block`], relative
/// to the point's own: four points on a face are three degrees of freedom of the
/// bodies, and the rigid system they make is singular without it. (The solve pass's
/// softness makes its system regular.) It weights the step's increment only, never
/// the accumulated impulse: the soft pass's `- C λ` on the right-hand side, with
/// this `C`, made every point creep at a speed proportional to its load, which tipped
/// a tall wall toward its more loaded face a little more every step (`large_pyramid`
/// fell out of its plane, faster for a larger term; see docs/physics-stability.md).
pub(crate) const BLOCK_REGULARIZATION: f32 = 1e-4;

/// A manifold's normal points solved together (Box2D v2.4's block solver, for up to
/// four points), rather than one after another.
///
/// Solved one after another, the first point of a manifold took more of the load
/// than the others: a resting box always leaned toward its first corner, a column of
/// thirty drifted 25 cm in 100 steps. The
/// points' impulses `x` solve `(K + C) x = -(vn + bias) - C λ` in the soft pass and
/// `(K + ε D) x = -(vn + bias)` in the relax pass (`D` the diagonal of `K`, `ε`
/// [`BLOCK_REGULARIZATION`]), for the current
/// normal velocities `vn`, where `K` is the manifold's effective mass matrix (the
/// inverse of `1 / normal_mass` on the diagonal) and `C` each point's compliance:
/// for one point alone this is exactly the soft step's impulse
/// `-normal_mass mass_scale (vn + bias) - impulse_scale λ`, since
/// `C = K_ii impulse_scale / mass_scale`. Gaussian elimination without pivoting, in
/// slot order; the bundles (`wide::solve`) run the same operations on every lane, with
/// a lane's empty slots as identity rows, which change none of the bits.
///
/// `None` (the caller solves the points one after another) where fewer than two
/// points take part (a point takes part when its normal mass is positive), where the
/// system is singular, or where a point's accumulated impulse would turn negative (a
/// point that lifts: the block would pull it back).
// The elimination's indices are the algebra's, as in `wide::normal_block`.
#[allow(clippy::needless_range_loop)]
pub(crate) fn normal_block(
    c: &mut Constraint,
    s: &mut Prepared,
    (va, wa, vb, wb): (Vec3, Vec3, Vec3, Vec3),
    use_bias: bool,
    terms: &dyn Fn(&ContactPoint, &PreparedPoint) -> (f32, f32, f32),
) -> Option<((Vec3, Vec3), (Vec3, Vec3))> {
    let count = c.count as usize;
    let (ma, mb, ia, ib) = (s.inv_mass_a, s.inv_mass_b, s.inv_inertia_a, s.inv_inertia_b);
    let mut k = [[0.0f32; 4]; 4];
    let mut x = [0.0f32; 4];
    let mut arms = [(Vec3::ZERO, Vec3::ZERO); 4];
    let mut turned = [(Vec3::ZERO, Vec3::ZERO); 4];
    let mut active = [false; 4];
    let mut taking_part = 0;
    for i in 0..count {
        let (p, q) = (&c.points[i], &s.points[i]);
        active[i] = q.normal_mass > 0.0;
        if !active[i] {
            k[i][i] = 1.0;
            continue;
        }
        taking_part += 1;
        let (bias, mass_scale, impulse_scale) = terms(p, q);
        arms[i] = (q.anchor_a.cross(p.normal), q.anchor_b.cross(p.normal));
        turned[i] = (ia * arms[i].0, ib * arms[i].1);
        let vn = (vb - va).dot(p.normal) + wb.dot(arms[i].1) - wa.dot(arms[i].0);
        let own = 1.0 / q.normal_mass;
        // The relax pass's term regularizes the increment alone: as `- C λ` it let
        // each point give way in proportion to its load (see BLOCK_REGULARIZATION).
        let (compliance, leak) = if use_bias {
            let compliance = own * (impulse_scale / mass_scale);
            (compliance, compliance * c.normal_impulse[i])
        } else {
            (own * BLOCK_REGULARIZATION, 0.0)
        };
        x[i] = -(vn + bias) - leak;
        k[i][i] = compliance;
    }
    if taking_part < 2 {
        return None;
    }
    for i in 0..count {
        for j in 0..count {
            if active[i] && active[j] {
                let (ni, nj) = (c.points[i].normal, c.points[j].normal);
                k[i][j] += (ma + mb) * ni.dot(nj) + arms[i].0.dot(turned[j].0) + arms[i].1.dot(turned[j].1);
            }
        }
    }
    for col in 0..count {
        for r in col + 1..count {
            let f = k[r][col] / k[col][col];
            for cc in col..count {
                k[r][cc] -= f * k[col][cc];
            }
            x[r] -= f * x[col];
        }
    }
    for r in (0..count).rev() {
        let mut sum = x[r];
        for cc in r + 1..count {
            sum -= k[r][cc] * x[cc];
        }
        x[r] = sum / k[r][r];
    }
    // (Written so that NaN and infinities fail.)
    let holds = |i: usize| (c.normal_impulse[i] + x[i]) >= 0.0 && x[i].is_finite();
    if !(0..count).all(holds) {
        return None;
    }
    let (mut va, mut wa, mut vb, mut wb) = (va, wa, vb, wb);
    for i in (0..count).filter(|&i| active[i]) {
        let total = c.normal_impulse[i] + x[i];
        let impulse = total - c.normal_impulse[i];
        c.normal_impulse[i] = total;
        s.points[i].max_normal_impulse = s.points[i].max_normal_impulse.max(impulse);
        let j = c.points[i].normal * impulse;
        va -= j * ma;
        wa -= turned[i].0 * impulse;
        vb += j * mb;
        wb += turned[i].1 * impulse;
    }
    Some(((va, wa), (vb, wb)))
}

#[cfg(test)]
mod tests {
    use glam::Mat3;

    use super::*;
    use crate::physics::contact_solver::{prepare, BodyState, Frame};

    /// A loaded face at rest (no normal velocity) keeps its impulses through the relax
    /// pass: the regularization weights the increment, not the load. With `- C λ` on
    /// the right-hand side each point gave way in proportion to its load.
    #[test]
    fn the_relax_block_leaves_a_resting_loaded_face_alone() {
        let mut c = Constraint::new(0, 0, 0, 1, 0.6, 0.0);
        for (k, (x, z)) in [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)].into_iter().enumerate() {
            c.push(Vec3::new(x, 0.0, z), Vec3::Y, -0.001, k as u32);
        }
        c.normal_impulse = [40.0, 55.0, 70.0, 35.0];
        let frame = Frame {
            center_a: Vec3::new(0.0, -0.5, 0.0),
            center_b: Vec3::new(0.0, 0.5, 0.0),
            state_a: BodyState::STILL,
            state_b: BodyState::STILL,
            inv_mass_a: 0.01,
            inv_mass_b: 0.01,
            inv_inertia_a: Mat3::from_diagonal(Vec3::splat(0.06)),
            inv_inertia_b: Mat3::from_diagonal(Vec3::splat(0.06)),
        };
        let mut s = Prepared::default();
        prepare(&c, &mut s, &frame);
        let before = c.normal_impulse;
        let rigid = |_: &ContactPoint, _: &PreparedPoint| (0.0, 1.0, 0.0);
        let solved = normal_block(&mut c, &mut s, (Vec3::ZERO, Vec3::ZERO, Vec3::ZERO, Vec3::ZERO), false, &rigid);
        let ((va, wa), (vb, wb)) = solved.expect("a block of four points");
        for (k, (&now, &was)) in c.normal_impulse.iter().zip(&before).enumerate() {
            assert!((now - was).abs() <= 1e-4 * was, "point {k}: {was} -> {now}");
        }
        assert!(va.length() + wa.length() + vb.length() + wb.length() < 1e-5, "the bodies were moved");
    }
}
