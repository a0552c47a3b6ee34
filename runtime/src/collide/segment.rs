//! Closest points between segments (Ericson, *Real-Time Collision Detection*, 5.1.9),
//! the core query of capsules.

use glam::Vec3;

/// Parameters `(s, t)` of the closest points `p1 + s (q1 - p1)` and `p2 + t (q2 - p2)`,
/// both in `[0, 1]`; degenerate segments are points.
pub fn closest_parameters(p1: Vec3, q1: Vec3, p2: Vec3, q2: Vec3) -> (f32, f32) {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.dot(d1), d2.dot(d2), d2.dot(r));
    const EPS: f32 = 1e-12;
    if a <= EPS && e <= EPS {
        return (0.0, 0.0);
    }
    if a <= EPS {
        return (0.0, (f / e).clamp(0.0, 1.0));
    }
    let c = d1.dot(r);
    if e <= EPS {
        return ((-c / a).clamp(0.0, 1.0), 0.0);
    }
    let b = d1.dot(d2);
    let denom = a * e - b * b;
    // Parallel segments: any s works; 0 then clamp t.
    let mut s = if denom > EPS * a * e { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (s, t)
}

/// The closest points of segments `p1`-`q1` and `p2`-`q2`.
pub fn closest_segment_segment(p1: Vec3, q1: Vec3, p2: Vec3, q2: Vec3) -> (Vec3, Vec3) {
    let (s, t) = closest_parameters(p1, q1, p2, q2);
    (p1 + (q1 - p1) * s, p2 + (q2 - p2) * t)
}

/// The closest point to `p` on segment `a`-`b`, as a parameter in `[0, 1]`.
pub fn closest_on_segment(a: Vec3, b: Vec3, p: Vec3) -> f32 {
    let d = b - a;
    let len2 = d.dot(d);
    if len2 <= 1e-12 {
        return 0.0;
    }
    ((p - a).dot(d) / len2).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments() {
        let (a, b) = closest_segment_segment(
            Vec3::new(-1.0, 0.0, 0.0),
            Vec3::X,
            Vec3::new(0.5, 1.0, -1.0),
            Vec3::new(0.5, 1.0, 1.0),
        );
        assert_eq!((a, b), (Vec3::new(0.5, 0.0, 0.0), Vec3::new(0.5, 1.0, 0.0)));
        // Parallel and overlapping: a valid pair at the right distance.
        let (a, b) =
            closest_segment_segment(Vec3::ZERO, Vec3::X * 2.0, Vec3::new(1.0, 1.0, 0.0), Vec3::new(3.0, 1.0, 0.0));
        assert!((a.distance(b) - 1.0).abs() < 1e-6);
        // Points.
        let (a, b) = closest_segment_segment(Vec3::ZERO, Vec3::ZERO, Vec3::ONE, Vec3::ONE);
        assert_eq!((a, b), (Vec3::ZERO, Vec3::ONE));
        assert_eq!(closest_on_segment(Vec3::ZERO, Vec3::X, Vec3::new(2.0, 1.0, 0.0)), 1.0);
    }
}
