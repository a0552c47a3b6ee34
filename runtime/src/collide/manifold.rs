//! Contact manifolds: up to four points sharing one normal, each with a feature id the
//! solver matches across frames to warm-start its impulses.

use glam::Vec3;

use crate::math::Isometry;

/// One contact point.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ManifoldPoint {
    /// World position midway between the two surfaces.
    pub point: Vec3,
    /// Distance between the surfaces along the normal: negative when they overlap.
    pub separation: f32,
    /// Which features made this point (stable while the same features touch).
    pub id: u32,
}

/// Contact between two convex pieces: the normal points from A to B (moving B along
/// it separates them).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Manifold {
    pub normal: Vec3,
    pub points: [ManifoldPoint; 4],
    pub count: usize,
}

impl Manifold {
    pub const EMPTY: Manifold = Manifold {
        normal: Vec3::ZERO,
        points: [ManifoldPoint { point: Vec3::ZERO, separation: 0.0, id: 0 }; 4],
        count: 0,
    };

    pub fn points(&self) -> &[ManifoldPoint] {
        &self.points[..self.count]
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The deepest (smallest) separation, or infinity when empty.
    pub fn min_separation(&self) -> f32 {
        self.points().iter().map(|p| p.separation).fold(f32::INFINITY, f32::min)
    }

    pub(crate) fn push(&mut self, p: ManifoldPoint) {
        if self.count < 4 {
            self.points[self.count] = p;
            self.count += 1;
        }
    }

    /// The same contact seen from B: normal reversed, ids marked.
    pub fn flipped(mut self) -> Manifold {
        self.normal = -self.normal;
        for p in &mut self.points[..self.count] {
            p.id ^= FLIP_BIT;
        }
        self
    }

    /// Moves a manifold computed in a local frame to world space.
    pub(crate) fn transformed(mut self, xf: &Isometry) -> Manifold {
        self.normal = xf.transform_vector(self.normal);
        for p in &mut self.points[..self.count] {
            p.point = xf.transform_point(p.point);
        }
        self
    }
}

/// Set in ids of manifolds whose shapes were swapped.
pub const FLIP_BIT: u32 = 1 << 31;

/// A candidate point before reduction.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Candidate {
    pub point: Vec3,
    pub separation: f32,
    pub id: u32,
}

/// Keeps at most four of `points` spanning the largest area (Gregorius, "Robust
/// Contact Creation for Physics Simulations", GDC 2015): the deepest point, the point
/// farthest from it, the point making the largest triangle with both, and the point
/// adding the most area on the other side.
pub(crate) fn reduce(points: &[Candidate], normal: Vec3, out: &mut Manifold) {
    out.normal = normal;
    out.count = 0;
    let emit = |out: &mut Manifold, c: &Candidate| {
        out.push(ManifoldPoint { point: c.point, separation: c.separation, id: c.id })
    };
    if points.len() <= 4 {
        for c in points {
            emit(out, c);
        }
        return;
    }
    let argmax = |key: &dyn Fn(&Candidate) -> f32| {
        let mut best = (0, f32::NEG_INFINITY);
        for (i, c) in points.iter().enumerate() {
            let k = key(c);
            if k > best.1 {
                best = (i, k);
            }
        }
        best.0
    };
    let a = argmax(&|c| -c.separation);
    let pa = points[a].point;
    let b = argmax(&|c| c.point.distance_squared(pa));
    let pb = points[b].point;
    let area = |p: Vec3, q: Vec3, r: Vec3| (q - p).cross(r - p).dot(normal);
    let c = argmax(&|x| area(pa, pb, x.point));
    let d = argmax(&|x| -area(pa, pb, x.point));
    let mut chosen = [a, b, c, d];
    let mut n = 0;
    for i in 0..4 {
        if !chosen[..n].contains(&chosen[i]) {
            chosen[n] = chosen[i];
            n += 1;
        }
    }
    for &i in &chosen[..n] {
        emit(out, &points[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduction_keeps_the_corners() {
        // A 5x5 grid of points in the plane y = 0: the corners span the largest area.
        let mut pts = Vec::new();
        for i in 0..5 {
            for j in 0..5 {
                let sep = if (i, j) == (2, 2) { -0.2 } else { -0.1 };
                pts.push(Candidate {
                    point: Vec3::new(i as f32, 0.0, j as f32),
                    separation: sep,
                    id: (i * 5 + j) as u32,
                });
            }
        }
        let mut m = Manifold::EMPTY;
        reduce(&pts, Vec3::Y, &mut m);
        assert_eq!(m.count, 4);
        // The deepest point is kept; the farthest from it is a corner, and the other two
        // are the corners on either side of that diagonal.
        assert!(m.points().iter().any(|p| p.id == 12));
        let corners = m.points().iter().filter(|p| [0, 4, 20, 24].contains(&p.id)).count();
        assert_eq!(corners, 3);
    }
}
