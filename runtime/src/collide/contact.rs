//! The contact dispatcher: picks the algorithm for a pair of shapes and returns
//! manifolds with normals from A to B.
//!
//! | pair | algorithm |
//! | --- | --- |
//! | sphere/capsule – sphere/capsule | closest points of the cores (`rounded.rs`) |
//! | sphere – box | the centre clamped to the box, or the nearest face when inside |
//! | sphere/capsule – box/hull/triangle | GJK on the core (direct against triangles), SAT when the core is inside (`rounded.rs`) |
//! | box – box | the 15 axes in closed form, then clipping (`box_box.rs`) |
//! | box/hull/triangle – box/hull/triangle | SAT and clipping (`sat.rs`); a hull pair may keep its separating axis ([`collide_coherent`]) |
//! | compound – anything | each part whose bounds overlap, as its own manifold |
//!
//! A triangle always goes second into the polyhedron test, so the edge-axis
//! orientation uses the solid shape's centroid.

use glam::Vec3;

use super::box_box::collide_boxes;
use super::gjk::{distance, Distance, Proxy};
use super::manifold::Manifold;
use super::rounded::{
    collide_rounded, collide_rounded_polytope, collide_rounded_triangle, collide_sphere_box, Rounded, TriangleEdges,
};
use super::sat::{collide_polytopes, collide_polytopes_cached, SatCache, SatTest};
use crate::math::{Aabb, Isometry};
use crate::shapes::{BoxPoly, ConvexHull, Polytope, Shape, TrianglePoly};

/// A convex shape in the form the algorithms take.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Convex<'a> {
    Rounded(Rounded),
    Box(BoxPoly),
    Hull(&'a ConvexHull),
    Triangle(TrianglePoly),
}

impl<'a> Convex<'a> {
    /// `None` for compounds and degenerate triangles.
    pub(crate) fn of(shape: &'a Shape) -> Option<Convex<'a>> {
        Some(match shape {
            Shape::Sphere { center, radius } => Convex::Rounded(Rounded { a: *center, b: *center, radius: *radius }),
            Shape::Capsule { a, b, radius } => Convex::Rounded(Rounded { a: *a, b: *b, radius: *radius }),
            Shape::Box { half } => Convex::Box(BoxPoly { half: *half }),
            Shape::Hull(h) => Convex::Hull(h),
            Shape::Triangle(v) => Convex::Triangle(TrianglePoly::new(*v)?),
            Shape::Compound(_) => return None,
        })
    }
}

fn box_points(b: &BoxPoly) -> [Vec3; 8] {
    std::array::from_fn(|i| b.vertex(i))
}

/// Rounded A against polyhedral B.
fn rounded_vs(
    r: &Rounded,
    xf_a: &Isometry,
    b: &Convex,
    xf_b: &Isometry,
    margin: f32,
    edges: Option<&TriangleEdges>,
) -> Manifold {
    match b {
        Convex::Rounded(rb) => collide_rounded(r, xf_a, rb, xf_b, margin),
        Convex::Box(bp) if r.a == r.b => collide_sphere_box(r.a, r.radius, xf_a, bp.half, xf_b, margin),
        Convex::Box(bp) => collide_rounded_polytope(r, xf_a, bp, &box_points(bp), xf_b, margin, None),
        Convex::Hull(h) => collide_rounded_polytope(r, xf_a, *h, h.vertices(), xf_b, margin, None),
        Convex::Triangle(t) => collide_rounded_triangle(r, xf_a, t, xf_b, margin, edges),
    }
}

/// The contact between two convex pieces; `edges` gives B's active edges when B is a
/// mesh triangle.
pub(crate) fn collide_convex(
    a: &Convex,
    xf_a: &Isometry,
    b: &Convex,
    xf_b: &Isometry,
    margin: f32,
    edges: Option<&TriangleEdges>,
) -> Manifold {
    match (a, b) {
        (Convex::Rounded(ra), _) => rounded_vs(ra, xf_a, b, xf_b, margin, edges),
        (_, Convex::Rounded(rb)) => rounded_vs(rb, xf_b, a, xf_a, margin, None).flipped(),
        (Convex::Triangle(_), Convex::Triangle(_)) => Manifold::EMPTY,
        (Convex::Triangle(_), _) => collide_convex(b, xf_b, a, xf_a, margin, None).flipped(),
        (Convex::Box(pa), Convex::Box(pb)) => collide_boxes(pa, xf_a, pb, xf_b, margin),
        (Convex::Box(pa), Convex::Hull(pb)) => collide_polytopes(pa, xf_a, *pb, xf_b, margin, None),
        (Convex::Box(pa), Convex::Triangle(pb)) => collide_polytopes(pa, xf_a, pb, xf_b, margin, edges),
        (Convex::Hull(pa), Convex::Box(pb)) => collide_polytopes(*pa, xf_a, pb, xf_b, margin, None),
        (Convex::Hull(pa), Convex::Hull(pb)) => collide_polytopes(*pa, xf_a, *pb, xf_b, margin, None),
        (Convex::Hull(pa), Convex::Triangle(pb)) => collide_polytopes(*pa, xf_a, pb, xf_b, margin, edges),
    }
}

/// The contact between two convex shapes (compounds: see [`collide_all`]). `margin`
/// is the largest separation still reported (speculative contacts).
pub fn collide(a: &Shape, xf_a: &Isometry, b: &Shape, xf_b: &Isometry, margin: f32) -> Manifold {
    match (Convex::of(a), Convex::of(b)) {
        (Some(ca), Some(cb)) => collide_convex(&ca, xf_a, &cb, xf_b, margin, None),
        _ => Manifold::EMPTY,
    }
}

/// [`collide`] for a pair of polyhedra of which one at least is a hull (a box and a
/// hull, two hulls), with what their last test found in `cache` (see
/// `sat::collide_polytopes_cached`): the same manifold, and, while the pair stays
/// apart along the axis that separated it, a support search or two instead of the
/// whole test, or nothing at all while it cannot have moved far enough to touch.
/// `None` for any other pair (two boxes have their closed form).
pub fn collide_coherent(
    a: &Shape,
    xf_a: &Isometry,
    b: &Shape,
    xf_b: &Isometry,
    margin: f32,
    cache: &mut SatCache,
) -> Option<(Manifold, SatTest)> {
    Some(match (Convex::of(a)?, Convex::of(b)?) {
        (Convex::Box(pa), Convex::Hull(pb)) => collide_polytopes_cached(&pa, xf_a, pb, xf_b, margin, None, cache),
        (Convex::Hull(pa), Convex::Box(pb)) => collide_polytopes_cached(pa, xf_a, &pb, xf_b, margin, None, cache),
        (Convex::Hull(pa), Convex::Hull(pb)) => collide_polytopes_cached(pa, xf_a, pb, xf_b, margin, None, cache),
        _ => return None,
    })
}

/// Every manifold between `a` and `b`: one per pair of convex parts within `margin`,
/// reported as `(part of A, part of B, manifold)` in part order (part 0 for a
/// shape that is not a compound).
pub fn collide_all(
    a: &Shape,
    xf_a: &Isometry,
    b: &Shape,
    xf_b: &Isometry,
    margin: f32,
    out: &mut dyn FnMut(u32, u32, &Manifold),
) {
    let parts = |s: &Shape, xf: &Isometry, visit: &mut dyn FnMut(u32, &Shape, Isometry)| match s {
        Shape::Compound(c) => {
            for (i, p) in c.parts().iter().enumerate() {
                visit(i as u32, &p.shape, xf.mul(&p.pose));
            }
        }
        _ => visit(0, s, *xf),
    };
    // Boxes rule out a compound's far parts before their test; two convex shapes go
    // straight to theirs (it finds a gap past `margin` as soon as the boxes would,
    // and the broadphase's boxes already overlapped).
    let filter = matches!(a, Shape::Compound(_)) || matches!(b, Shape::Compound(_));
    parts(a, xf_a, &mut |ia, sa, xa| {
        let box_a = if filter { sa.aabb(&xa).expanded(margin) } else { Aabb::EMPTY };
        parts(b, xf_b, &mut |ib, sb, xb| {
            if filter && !box_a.overlaps(&sb.aabb(&xb)) {
                return;
            }
            let m = collide(sa, &xa, sb, &xb, margin);
            if !m.is_empty() {
                out(ia, ib, &m);
            }
        });
    });
}

/// The GJK proxy of a convex shape: its core points (in the shape's frame) and radius.
/// Boxes write their corners into `corners`. `None` for compounds.
pub fn proxy<'a>(shape: &'a Shape, corners: &'a mut [Vec3; 8]) -> Option<Proxy<'a>> {
    Some(match shape {
        Shape::Sphere { center, radius } => Proxy { points: std::slice::from_ref(center), radius: *radius },
        Shape::Capsule { a, b, radius } => {
            corners[0] = *a;
            corners[1] = *b;
            Proxy { points: &corners[..2], radius: *radius }
        }
        Shape::Box { half } => {
            *corners = box_points(&BoxPoly { half: *half });
            Proxy { points: &corners[..], radius: 0.0 }
        }
        Shape::Hull(h) => Proxy { points: h.vertices(), radius: 0.0 },
        Shape::Triangle(v) => Proxy { points: &v[..], radius: 0.0 },
        Shape::Compound(_) => return None,
    })
}

/// Calls `visit(proxy, placement)` for each convex piece of `shape` placed by `xf`:
/// the shape itself, or every part of a compound.
pub fn for_each_proxy(shape: &Shape, xf: &Isometry, visit: &mut dyn FnMut(&Proxy, &Isometry)) {
    match shape {
        Shape::Compound(c) => {
            for part in c.parts() {
                for_each_proxy(&part.shape, &xf.mul(&part.pose), visit);
            }
        }
        _ => {
            let mut corners = [Vec3::ZERO; 8];
            if let Some(p) = proxy(shape, &mut corners) {
                visit(&p, xf);
            }
        }
    }
}

/// The distance between two shapes, compounds included (the closest pair of parts;
/// overlapping when any pair's cores overlap). `None` when a shape has no convex
/// piece (a degenerate triangle).
pub fn shape_distance(a: &Shape, xf_a: &Isometry, b: &Shape, xf_b: &Isometry) -> Option<Distance> {
    let mut best: Option<Distance> = None;
    for_each_proxy(a, xf_a, &mut |pa, xa| {
        for_each_proxy(b, xf_b, &mut |pb, xb| {
            let d = distance(pa, xa, pb, xb);
            let better = match &best {
                None => true,
                Some(old) => (d.overlap && !old.overlap) || (d.overlap == old.overlap && d.distance < old.distance),
            };
            if better {
                best = Some(d);
            }
        });
    });
    best
}
