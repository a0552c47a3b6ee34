//! Box–box contact: the 15 separating axes in closed form (Gottschalk's OBB test, as
//! in ODE's `dBoxBox`), the incident face read off the rotation matrix, then the
//! clipping of `sat.rs` with buffers sized for quads.
//!
//! With B's axes written as the columns of `R` in A's frame and `t` the vector from
//! A's centre to B's:
//!
//! - A's face axis `i`: `|t_i| - a_i - Σ_j |R_ij| b_j`;
//! - B's face axis `j`: `|(Rᵀt)_j| - b_j - Σ_i |R_ij| a_i`;
//! - edge axis `A_i × B_j` (unit `n`, oriented along `t`): `n·t - |n|·a - |Rᵀn|·b`.
//!
//! These are the separations the general test finds through support points and
//! Gauss-map-pruned edge pairs, at a tenth of the cost; the axis is chosen with the
//! same face-favouring tolerances, so both paths agree on features and ids.

use glam::{Mat3, Vec3, Vec3A};

use super::manifold::Manifold;
use super::sat::{clip, edge_contact, favour, Clip, EdgeQuery, EDGE_RELATIVE, FACE_RELATIVE};
use crate::math::Isometry;
use crate::shapes::{BoxPoly, Polytope, BOX_FACES};

/// Edge axes shorter than this (nearly parallel edges) are covered by face axes.
const PARALLEL: f32 = 1e-5;

/// The box edge along `axis` whose other two coordinates have the signs of `dir`
/// (positive when `> 0`, as `BoxPoly::support`): its index in `BoxPoly`'s edge list.
fn edge_index(axis: usize, dir: Vec3) -> usize {
    let (lo, hi) = match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    4 * axis + (dir[lo] > 0.0) as usize + 2 * (dir[hi] > 0.0) as usize
}

/// Contact between boxes `a` and `b` with separation up to `margin`, or an empty
/// manifold.
pub(crate) fn collide_boxes(a: &BoxPoly, xf_a: &Isometry, b: &BoxPoly, xf_b: &Isometry, margin: f32) -> Manifold {
    let rel = xf_a.inv_mul(xf_b);
    let r = Mat3::from_quat(rel.rotation);
    let rt = r.transpose();
    let t = rel.translation;
    let t_b = rt * t;
    let (ha, hb) = (a.half, b.half);

    // A's faces: face 2i is +axis i, 2i + 1 is -axis i.
    let mut face_a = (0, f32::NEG_INFINITY);
    for i in 0..3 {
        let s = t[i].abs() - ha[i] - rt.col(i).abs().dot(hb);
        if s > face_a.1 {
            face_a = (2 * i + (t[i] < 0.0) as usize, s);
        }
    }
    if face_a.1 > margin {
        return Manifold::EMPTY;
    }
    let mut face_b = (0, f32::NEG_INFINITY);
    for j in 0..3 {
        // B's face along -t_b faces A.
        let s = t_b[j].abs() - hb[j] - r.col(j).abs().dot(ha);
        if s > face_b.1 {
            face_b = (2 * j + (t_b[j] > 0.0) as usize, s);
        }
    }
    if face_b.1 > margin {
        return Manifold::EMPTY;
    }
    let edge = edge_axes(&r, &rt, t, ha, hb);
    if edge.separation > margin {
        return Manifold::EMPTY;
    }
    let face_max = face_a.1.max(face_b.1);
    let local = if edge.separation > favour(face_max, EDGE_RELATIVE) {
        edge_contact(a, b, &rel, &edge)
    } else if face_b.1 > favour(face_a.1, FACE_RELATIVE) {
        // B's face is the reference: clip in B's frame, then turn the normal to A→B.
        let rel_b = rel.inverse();
        let m = face_contact(b, a, &rel_b, &rt, face_b.0, margin, 1 << 29, true);
        return m.transformed(xf_b);
    } else {
        face_contact(a, b, &rel, &r, face_a.0, margin, 0, false)
    };
    local.transformed(xf_a)
}

/// The deepest of the nine edge axes `A_i x B_j` (A's frame, oriented along `t`).
///
/// All nine in closed form from `R`'s entries, three at a time (`j` across the
/// lanes): with `(i1, i2)` and `(j1, j2)` the axes after `i` and `j` in cyclic order,
/// the unnormalised axis is `e_i x R_j`, whose entries are `-R[i2][j]` at `i1` and
/// `R[i1][j]` at `i2`; in B's frame it is `row_i(R) x e_j`, whose entries are
/// `R[i][j2]` at `j1` and `-R[i][j1]` at `j2`. Its separation is `(|n.t| - |n|.a -
/// |Rt n|.b) / |n|`. The unit normal and the edges are worked out for the winner
/// alone. (One axis at a time, with a cross product, a normalisation and `Rt n` for
/// each, took half of a resting pair's box test.)
#[inline(always)]
fn edge_axes(r: &Mat3, rt: &Mat3, t: Vec3, ha: Vec3, hb: Vec3) -> EdgeQuery {
    // Row k of R across j, and the same rotated by one and by two lanes.
    let rows = [rt.x_axis, rt.y_axis, rt.z_axis].map(Vec3A::from);
    let (hb_next, hb_after) = (Vec3A::new(hb.y, hb.z, hb.x), Vec3A::new(hb.z, hb.x, hb.y));
    let mut separations = [[f32::NEG_INFINITY; 3]; 3];
    for (i, row) in separations.iter_mut().enumerate() {
        let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
        let (a, b) = (rows[i1], rows[i2]);
        let length_squared = a * a + b * b;
        let along_t = a * t[i2] - b * t[i1];
        let extent_a = b.abs() * ha[i1] + a.abs() * ha[i2];
        let ri = rows[i];
        // R[i][j2] and R[i][j1] across j.
        let (r_j2, r_j1) = (Vec3A::new(ri.z, ri.x, ri.y), Vec3A::new(ri.y, ri.z, ri.x));
        let extent_b = r_j2.abs() * hb_next + r_j1.abs() * hb_after;
        let s = (along_t.abs() - extent_a - extent_b) / length_squared.sqrt();
        for j in 0..3 {
            // Nearly parallel edges are covered by the face axes.
            if length_squared[j] >= PARALLEL * PARALLEL {
                row[j] = s[j];
            }
        }
    }
    let mut best = (0, 0, f32::NEG_INFINITY);
    for (i, row) in separations.iter().enumerate() {
        for (j, &s) in row.iter().enumerate() {
            if s > best.2 {
                best = (i, j, s);
            }
        }
    }
    let (i, j, separation) = best;
    if separation == f32::NEG_INFINITY {
        // Every edge pair parallel: no edge axis.
        return EdgeQuery { a: 0, b: 0, separation, normal: Vec3::ZERO };
    }
    let mut axis_a = Vec3::ZERO;
    axis_a[i] = 1.0;
    let mut n = axis_a.cross(r.col(j)).normalize();
    if n.dot(t) < 0.0 {
        n = -n;
    }
    let n_b = *rt * n;
    EdgeQuery { a: edge_index(i, n), b: edge_index(j, -n_b), separation, normal: n }
}

/// Clips the incident box's face against `reference`'s face `face`, in the reference
/// box's frame; `rel` places the incident box there and `r` is its rotation matrix.
/// The normal points out of the reference face, or into it with `flip`.
#[allow(clippy::too_many_arguments)]
fn face_contact(
    reference: &BoxPoly,
    incident: &BoxPoly,
    rel: &Isometry,
    r: &Mat3,
    face: usize,
    margin: f32,
    key: u32,
    flip: bool,
) -> Manifold {
    let plane = reference.plane(face);
    // The incident face is the one most opposed to the reference normal.
    let m = r.transpose() * plane.normal;
    let j = if m.x.abs() >= m.y.abs() && m.x.abs() >= m.z.abs() {
        0
    } else if m.y.abs() >= m.z.abs() {
        1
    } else {
        2
    };
    let incident_face = 2 * j + (m[j] > 0.0) as usize;
    let place = |i: u16| *r * incident.vertex(i as usize) + rel.translation;
    let ref_points = BOX_FACES[face].map(|i| reference.vertex(i as usize));
    let incident_points = BOX_FACES[incident_face].map(|i| Clip { p: place(i), id: i as u32 });
    let deepest = incident.support(-m);
    let fallback = Clip { p: place(deepest as u16), id: 0x4000 | deepest as u32 };
    let normal = if flip { -plane.normal } else { plane.normal };
    // A quad clipped by four side planes keeps at most eight corners.
    clip::<8>(
        &ref_points,
        plane.normal,
        plane.offset,
        &incident_points,
        fallback,
        margin,
        key | (face as u32) << 16,
        normal,
    )
}

#[cfg(test)]
mod tests {
    use glam::Quat;

    use super::*;
    use crate::collide::sat::collide_polytopes;
    use crate::collide::tests::lcg;

    /// On random touching, resting and tipped poses the closed form finds what the
    /// general polyhedron test finds: the same normal, depth, points and ids.
    #[test]
    fn matches_the_general_polyhedron_test() {
        let mut seed = 5u64;
        let mut rnd = || lcg(&mut seed);
        let (mut contacts, mut agree) = (0, 0);
        for case in 0..2000 {
            let a = BoxPoly { half: Vec3::new(0.5 + rnd().abs(), 0.2 + rnd().abs(), 0.5 + rnd().abs()) };
            let b = BoxPoly { half: Vec3::new(0.3 + rnd().abs(), 0.3 + rnd().abs(), 0.2 + rnd().abs()) };
            let axis = Vec3::new(rnd(), rnd(), rnd()).normalize_or(Vec3::Y);
            let angle = if case % 3 == 0 { 0.02 * rnd() } else { 3.0 * rnd() };
            let xf_a = Isometry::new(Vec3::new(rnd(), rnd(), rnd()) * 10.0, Quat::from_rotation_y(rnd() * 3.0));
            let offset = Vec3::new(rnd(), rnd(), rnd()) * (a.half + b.half) * 1.2;
            let xf_b = xf_a.mul(&Isometry::new(offset, Quat::from_axis_angle(axis, angle)));
            let fast = collide_boxes(&a, &xf_a, &b, &xf_b, 0.05);
            let general = collide_polytopes(&a, &xf_a, &b, &xf_b, 0.05, None);
            assert_eq!(fast.is_empty(), general.is_empty(), "case {case}: {fast:?} vs {general:?}");
            if fast.is_empty() {
                continue;
            }
            contacts += 1;
            assert!(fast.normal.is_finite() && (fast.normal.length() - 1.0).abs() < 1e-4);
            assert!((fast.min_separation() - general.min_separation()).abs() < 0.01, "case {case}");
            let same = fast.normal.dot(general.normal) > 0.9999
                && fast.count == general.count
                && (fast.min_separation() - general.min_separation()).abs() < 1e-4
                && fast
                    .points()
                    .iter()
                    .zip(general.points())
                    .all(|(p, q)| p.id == q.id && p.point.distance(q.point) < 1e-3);
            agree += same as u32;
        }
        // Near-ties between axes may tip either way after rounding; nothing else may differ.
        assert!(contacts > 600, "{contacts} contacts");
        assert!(agree as f32 >= 0.99 * contacts as f32, "{agree} of {contacts} agree");
    }
}
