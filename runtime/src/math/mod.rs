//! A thin layer over glam: axis-aligned boxes, rays and rigid transforms, the types
//! every spatial structure shares, the triangle tests (`ray_triangle` and friends), a fast
//! hasher for Kiln's own map keys, and the process's SIMD ceiling.

mod hash;
mod isometry;
mod simd_level;
mod triangle;

pub use glam::{IVec3, Mat3, Quat, Vec3};
pub use hash::{hash_floats, FastHasher, FastMap};
pub use isometry::Isometry;
pub(crate) use simd_level::simd_allows;
pub use simd_level::{set_simd_ceiling, simd_ceiling, SimdLevel};
pub use triangle::{ray_triangle, triangle_normal, triangle_overlaps_aabb, RayShear, TriangleHit};

/// An axis-aligned box, `min <= max` on every axis for a valid box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Default for Aabb {
    fn default() -> Aabb {
        Aabb::EMPTY
    }
}

impl Aabb {
    /// The box that contains nothing; the identity of [`Aabb::union`].
    pub const EMPTY: Aabb = Aabb { min: Vec3::splat(f32::INFINITY), max: Vec3::splat(f32::NEG_INFINITY) };

    pub const fn new(min: Vec3, max: Vec3) -> Aabb {
        Aabb { min, max }
    }

    pub fn from_center_half_extents(center: Vec3, half: Vec3) -> Aabb {
        Aabb { min: center - half, max: center + half }
    }

    /// Finite corners with `min <= max` on every axis.
    pub fn is_valid(&self) -> bool {
        self.min.is_finite() && self.max.is_finite() && self.min.cmple(self.max).all()
    }

    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    pub fn extents(&self) -> Vec3 {
        self.max - self.min
    }

    /// Surface area (the SAH cost measure). Zero for the empty box.
    pub fn area(&self) -> f32 {
        let d = (self.max - self.min).max(Vec3::ZERO);
        2.0 * (d.x * d.y + d.y * d.z + d.z * d.x)
    }

    pub fn union(&self, other: &Aabb) -> Aabb {
        Aabb { min: self.min.min(other.min), max: self.max.max(other.max) }
    }

    /// Grows `self` to contain `other`; returns whether it changed.
    pub fn enlarge(&mut self, other: &Aabb) -> bool {
        let grown = self.union(other);
        let changed = grown != *self;
        *self = grown;
        changed
    }

    /// `other` lies inside `self` (boundaries included).
    pub fn contains(&self, other: &Aabb) -> bool {
        self.min.cmple(other.min).all() && other.max.cmple(self.max).all()
    }

    /// The boxes share at least one point (touching counts).
    pub fn overlaps(&self, other: &Aabb) -> bool {
        self.min.cmple(other.max).all() && other.min.cmple(self.max).all()
    }

    /// Grown by `margin` on every side.
    pub fn expanded(&self, margin: f32) -> Aabb {
        Aabb { min: self.min - Vec3::splat(margin), max: self.max + Vec3::splat(margin) }
    }

    /// Index of the longest axis (0 = x, 1 = y, 2 = z).
    pub fn longest_axis(&self) -> usize {
        let d = self.extents();
        if d.x >= d.y && d.x >= d.z {
            0
        } else if d.y >= d.z {
            1
        } else {
            2
        }
    }
}

/// A ray `origin + t * dir`, with the reciprocal direction precomputed for slab tests.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ray {
    pub origin: Vec3,
    pub dir: Vec3,
    pub inv_dir: Vec3,
}

impl Ray {
    /// `dir` need not be normalised; `t` is measured in multiples of it. A zero
    /// component gives an infinite reciprocal, which the slab test handles.
    pub fn new(origin: Vec3, dir: Vec3) -> Ray {
        Ray { origin, dir, inv_dir: dir.recip() }
    }

    pub fn at(&self, t: f32) -> Vec3 {
        self.origin + self.dir * t
    }

    /// Finite origin and a finite, non-zero direction.
    pub fn is_valid(&self) -> bool {
        self.origin.is_finite() && self.dir.is_finite() && self.dir != Vec3::ZERO
    }

    /// Entry parameter of the ray into `aabb` within `[0, max_t]`, if it enters.
    /// A ray starting inside the box enters at 0.
    pub fn intersect_aabb(&self, aabb: &Aabb, max_t: f32) -> Option<f32> {
        self.clip(aabb, max_t).map(|(t_in, _)| t_in)
    }

    /// The part `[t_in, t_out]` of `[0, max_t]` where the ray is inside `aabb`. An
    /// axis the ray is parallel to (a zero direction) keeps it if its origin lies in
    /// the slab, boundary included; a NaN distance (a face through the origin of a
    /// ray with an infinite inverse direction) leaves the other face's distance, as
    /// `f32::min` and `max` would. In SIMD lanes: a terrain ray clips to a chunk
    /// tree's box per chunk it reaches, and with scalar `Vec3` indexing this was
    /// most of a tree entry's 300 instructions.
    pub fn clip(&self, aabb: &Aabb, max_t: f32) -> Option<(f32, f32)> {
        use glam::Vec3A;
        let (lo, hi, o) = (Vec3A::from(aabb.min), Vec3A::from(aabb.max), Vec3A::from(self.origin));
        let inv = Vec3A::from(self.inv_dir);
        let parallel = Vec3A::from(self.dir).cmpeq(Vec3A::ZERO);
        if (parallel & (o.cmplt(lo) | o.cmpgt(hi))).any() {
            return None;
        }
        let (t1, t2) = ((lo - o) * inv, (hi - o) * inv);
        // `f32::min`/`max` per lane: SSE's return the second operand when either is NaN.
        let t2_nan = t2.is_nan_mask();
        let (near, far) = (Vec3A::select(t2_nan, t1, t1.min(t2)), Vec3A::select(t2_nan, t1, t1.max(t2)));
        // Lanes that constrain nothing: parallel axes, and NaN on both faces.
        let near = Vec3A::select(parallel | near.is_nan_mask(), Vec3A::NEG_INFINITY, near);
        let far = Vec3A::select(parallel | far.is_nan_mask(), Vec3A::INFINITY, far);
        let (t_near, t_far) = (near.max_element().max(0.0), far.min_element().min(max_t));
        (t_near <= t_far).then_some((t_near, t_far))
    }
}

/// A body's world inverse inertia, `r * local * rᵀ` for its rotation `q`, made exactly
/// symmetric (the lower triangle mirrors the upper) whatever the product's rounding:
/// the wide solver keeps six of the nine values and must compute what the scalar
/// solver computes from all nine.
pub(crate) fn world_inertia(q: Quat, local: Mat3) -> Mat3 {
    let r = Mat3::from_quat(q);
    let m = r * local * r.transpose();
    let (x, y, z) = (m.x_axis, m.y_axis, m.z_axis);
    Mat3::from_cols(x, Vec3::new(x.y, y.y, y.z), Vec3::new(x.z, y.z, z.z))
}

/// [`prefetch`] of every cache line of `values`.
#[inline]
pub(crate) fn prefetch_slice<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let base = values.as_ptr().cast::<i8>();
        for offset in (0..std::mem::size_of_val(values)).step_by(64) {
            // SAFETY: as in `prefetch` (the address stays inside `values`).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

/// Asks for `value`'s cache lines ahead of use (x86-64 only; a hint elsewhere
/// ignored). The solver's colour order visits constraints scattered over the whole
/// step's array, and a ray's far child in a tree lies far from its near one:
/// fetching them while other work runs hides the misses.
#[inline(always)]
pub(crate) fn prefetch<T>(value: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let base = value.cast::<i8>();
        for offset in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: SSE is part of x86-64; a prefetch is a hint and never faults
            // (the address stays inside `value` anyway).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// `atan2(y, x)` in `[-π, π]` from additions, products and one division only (no
/// platform `libm`, so every machine computes the same bits), within 2e-6 rad: a
/// polynomial for `atan` on `[0, 1]` and the octant's symmetries. `(0, 0)` gives 0.
pub fn atan2(y: f32, x: f32) -> f32 {
    use std::f32::consts::{FRAC_PI_2, PI};
    let (ax, ay) = (x.abs(), y.abs());
    let (big, small) = (ax.max(ay), ax.min(ay));
    if big == 0.0 {
        return 0.0;
    }
    let a = small / big;
    let s = a * a;
    let mut r = a
        * (0.999_977_3
            + s * (-0.332_623_5 + s * (0.193_543_5 + s * (-0.116_432_9 + s * (0.052_653_3 - s * 0.011_721_2)))));
    if ay > ax {
        r = FRAC_PI_2 - r;
    }
    if x < 0.0 {
        r = PI - r;
    }
    if y < 0.0 {
        -r
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The polynomial `atan2` agrees with the platform's within 2e-6 rad all round the
    /// circle, at the axes and diagonals, and at any scale.
    #[test]
    fn atan2_matches_the_platforms_within_two_microradians() {
        let mut worst = 0.0f32;
        for k in 0..=7200 {
            let angle = (k as f32 / 7200.0 - 0.5) * std::f32::consts::TAU;
            for scale in [1e-20f32, 1.0, 3e7] {
                let (y, x) = (angle.sin() * scale, angle.cos() * scale);
                worst = worst.max((atan2(y, x) - y.atan2(x)).abs());
            }
        }
        assert!(worst < 2e-6, "worst error {worst}");
        assert_eq!(atan2(0.0, 0.0), 0.0);
        assert_eq!(atan2(0.0, -1.0), std::f32::consts::PI);
        assert_eq!(atan2(1.0, 0.0), std::f32::consts::FRAC_PI_2);
    }

    /// `Ray::clip` as it was before it moved to SIMD lanes: one slab at a time.
    fn scalar_clip(ray: &Ray, aabb: &Aabb, max_t: f32) -> Option<(f32, f32)> {
        let (mut t_near, mut t_far) = (0.0f32, max_t);
        for axis in 0..3 {
            let (o, inv) = (ray.origin[axis], ray.inv_dir[axis]);
            if ray.dir[axis] == 0.0 {
                if o < aabb.min[axis] || o > aabb.max[axis] {
                    return None;
                }
                continue;
            }
            let t1 = (aabb.min[axis] - o) * inv;
            let t2 = (aabb.max[axis] - o) * inv;
            t_near = t_near.max(t1.min(t2));
            t_far = t_far.min(t1.max(t2));
        }
        (t_near <= t_far).then_some((t_near, t_far))
    }

    /// The SIMD clip gives the slab-by-slab result on random rays and boxes, and on
    /// the edge cases: zero and denormal direction components (an infinite inverse),
    /// origins on the faces (NaN distances), signed zeros, empty and flat boxes.
    #[test]
    fn ray_clip_equals_the_slab_by_slab_clip() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let specials = [0.0, -0.0, 1e-40, -1e-40, 1.0, -1.0];
        for round in 0..200_000 {
            let mut pick = |special: bool| {
                if special {
                    specials[(next() * specials.len() as f32) as usize % specials.len()]
                } else {
                    next() * 8.0 - 4.0
                }
            };
            let lo = Vec3::new(pick(false), pick(false), pick(false)).round();
            let hi = lo + Vec3::new(pick(false).abs(), pick(false).abs(), 0.0).round();
            let aabb = Aabb::new(lo, hi);
            let on_face = round % 3 == 0;
            let mut origin = Vec3::new(pick(false), pick(false), pick(false));
            if on_face {
                origin = Vec3::select(glam::BVec3::new(true, round % 2 == 0, false), lo, origin.round());
            }
            let dir = Vec3::new(pick(round % 2 == 0), pick(round % 5 == 0), pick(round % 7 == 0));
            let ray = Ray::new(origin, dir);
            let max_t = if round % 4 == 0 { f32::INFINITY } else { next() * 10.0 };
            // Compared as values: a zero end may come out as either sign (`f32::max`
            // and `min` of the two zeros may return either), which no comparison sees.
            // Neither end is ever NaN.
            assert_eq!(
                ray.clip(&aabb, max_t),
                scalar_clip(&ray, &aabb, max_t),
                "round {round}: {ray:?} {aabb:?} {max_t}"
            );
        }
    }

    #[test]
    fn aabb_basics() {
        let a = Aabb::new(Vec3::ZERO, Vec3::ONE);
        let b = Aabb::new(Vec3::splat(1.0), Vec3::splat(2.0));
        assert!(a.overlaps(&b), "touching boxes overlap");
        assert!(!a.overlaps(&b.expanded(-0.1)));
        assert_eq!(a.area(), 6.0);
        assert_eq!(Aabb::EMPTY.area(), 0.0);
        assert_eq!(Aabb::EMPTY.union(&a), a);
        assert!(a.union(&b).contains(&a));
        assert!(!Aabb::new(Vec3::ONE, Vec3::ZERO).is_valid());
        assert!(!Aabb::new(Vec3::ZERO, Vec3::new(f32::NAN, 1.0, 1.0)).is_valid());
    }

    #[test]
    fn ray_slab_test() {
        let b = Aabb::new(Vec3::ZERO, Vec3::ONE);
        let r = Ray::new(Vec3::new(-1.0, 0.5, 0.5), Vec3::X);
        assert_eq!(r.intersect_aabb(&b, 10.0), Some(1.0));
        assert_eq!(r.intersect_aabb(&b, 0.5), None);
        let inside = Ray::new(Vec3::splat(0.5), Vec3::Y);
        assert_eq!(inside.intersect_aabb(&b, 10.0), Some(0.0));
        let axis_parallel_miss = Ray::new(Vec3::new(-1.0, 2.0, 0.5), Vec3::X);
        assert_eq!(axis_parallel_miss.intersect_aabb(&b, 10.0), None);
        let on_face = Ray::new(Vec3::new(-1.0, 1.0, 0.5), Vec3::X);
        assert_eq!(on_face.intersect_aabb(&b, 10.0), Some(1.0));
    }
}
