//! World queries over bodies and terrain: ray casts (closest, all, batches), box and
//! shape overlaps, and shape casts, each with a [`QueryFilter`] (Box2D v3's
//! `b2QueryFilter` plus motion-type and terrain switches).
//!
//! Bodies are found through the broadphase tree (fat boxes) and tested exactly: rays
//! by [`Shape::ray_cast`] in the shape's frame, overlaps by GJK
//! ([`shape_distance`]), casts by conservative advancement
//! ([`shape_time_of_impact`]). Terrain triangles come from the chunk walk (rays) or
//! the bit broadphase and the chunks' kD trees (boxes). Every result is ordered by a
//! key of its own ([`QueryTarget::key`]), never by traversal order, so it is the same
//! for any worker count and tree shape.

use glam::{IVec3, Vec3};

use super::body::{flags, BodyId, BodyShape};
use super::world::World;
use crate::collide::gjk::triangle_closest;
use crate::collide::{shape_distance, shape_time_of_impact, Sweep, ToiState};
use crate::jobs::Jobs;
use crate::math::{triangle_overlaps_aabb, Aabb, Isometry, Ray};
use crate::shapes::Shape;
use crate::terrain::{Material, TerrainHit};

/// Which shapes a query sees. A body shape passes when its category meets the
/// filter's mask and its mask meets the filter's category (as two shapes' filters
/// decide whether they collide), its body's motion type is included, its body is
/// not the ignored one, and it is not a sensor unless sensors are asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryFilter {
    pub category: u32,
    pub mask: u32,
    /// A body to leave out (the caster itself), if any.
    pub ignore: Option<BodyId>,
    pub static_bodies: bool,
    pub kinematic_bodies: bool,
    pub dynamic_bodies: bool,
    /// Whether the world's terrain is queried.
    pub terrain: bool,
    /// Whether sensor shapes are seen (a shot passes through triggers by default).
    pub sensors: bool,
    /// Overlaps list the terrain once, by the first triangle touched in
    /// [`QueryTarget::key`] order, and stop looking there: "which objects are
    /// here", as other engines list a mesh collider once. Off (the default), every
    /// triangle touched is listed (decals, digging). Rays and casts report one
    /// target either way.
    pub terrain_once: bool,
}

impl Default for QueryFilter {
    /// Everything solid: category 1 (which default shapes accept), every category,
    /// every body, the terrain; no sensors.
    fn default() -> Self {
        QueryFilter {
            category: 1,
            mask: u32::MAX,
            ignore: None,
            static_bodies: true,
            kinematic_bodies: true,
            dynamic_bodies: true,
            terrain: true,
            sensors: false,
            terrain_once: false,
        }
    }
}

/// What a query found: a body's shape or a terrain triangle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryTarget {
    /// Shape `shape` (in the order shapes were added) of `body`.
    Body { body: BodyId, shape: u32 },
    /// Triangle `triangle` of chunk `chunk`'s mesh.
    Terrain { chunk: IVec3, triangle: u32 },
}

impl QueryTarget {
    /// The order of results: bodies by slot, then shape; then terrain triangles by
    /// chunk (y, z, x), then index (the terrain's own query order).
    pub fn key(&self) -> (u8, [i32; 3], u32, u32) {
        match *self {
            QueryTarget::Body { body, shape } => (0, [0; 3], body.index, shape),
            QueryTarget::Terrain { chunk, triangle } => (1, [chunk.y, chunk.z, chunk.x], triangle, 0),
        }
    }
}

/// Where a ray met a shape or the terrain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayHit {
    /// Ray parameter: `point = origin + t * dir` (a distance for a unit `dir`).
    pub t: f32,
    pub point: Vec3,
    /// Unit surface normal: out of solid shapes (against the ray for a ray starting
    /// inside one), a triangle's front normal, out of solid terrain.
    pub normal: Vec3,
    pub target: QueryTarget,
    /// The terrain material; [`Material::AIR`] on bodies.
    pub material: Material,
}

impl RayHit {
    fn terrain(h: TerrainHit) -> RayHit {
        RayHit {
            t: h.t,
            point: h.point,
            normal: h.normal,
            target: QueryTarget::Terrain { chunk: h.chunk, triangle: h.triangle },
            material: h.material,
        }
    }

    /// Earlier, or as early and first by target key.
    fn beats(&self, other: &RayHit) -> bool {
        (self.t, self.target.key()) < (other.t, other.target.key())
    }
}

/// Where a cast shape first touches a shape or the terrain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeCastHit {
    /// Fraction of the translation travelled, in `[0, 1]`; 0 when the shape overlaps
    /// something where it starts.
    pub fraction: f32,
    /// The contact point (midway between the two surfaces' closest points); the
    /// start position's deepest-core point for an initial overlap.
    pub point: Vec3,
    /// Unit normal of the surface hit, pointing back at the cast shape (against the
    /// translation for an initial overlap).
    pub normal: Vec3,
    pub target: QueryTarget,
}

/// How close (m) a cast shape comes before it counts as touching: the tolerance of
/// the conservative advancement.
pub const CAST_TOLERANCE: f32 = 1.0e-4;

/// Whether `shape` at `xf` touches the world-space triangle `tri`: closed forms for
/// boxes (the triangle in the box's frame against the box: the separating-axis test
/// of `triangle_overlaps_aabb`) and spheres (the triangle's closest point), GJK for
/// the rest. The closed forms are 5–10x faster than GJK and the terrain's
/// triangles dominate box and sphere overlaps.
fn touches_triangle(shape: &Shape, xf: &Isometry, tri: [Vec3; 3]) -> bool {
    match shape {
        Shape::Box { half } => {
            let local = tri.map(|p| xf.inverse_transform_point(p));
            triangle_overlaps_aabb(local, &Aabb::new(-*half, *half))
        }
        Shape::Sphere { center, radius } => {
            let c = xf.transform_point(*center);
            let rel = tri.map(|p| p - c);
            let (feature, w) = triangle_closest(rel);
            let nearest: Vec3 = (0..feature.count).map(|k| rel[feature.index[k]] * w[k]).sum();
            nearest.length_squared() <= radius * radius
        }
        _ => shape_distance(shape, xf, &Shape::Triangle(tri), &Isometry::IDENTITY)
            .is_some_and(|d| d.overlap || d.distance <= 0.0),
    }
}

impl World {
    /// Lists the awake shapes whose bounds left their fat boxes since the broadphase
    /// moved them (the step moves bodies after its broadphase stage) and puts them in
    /// a tree of their own: queries search both trees, skipping the stale entries of
    /// the first, so a query between steps sees every body where it is, and the
    /// broadphase is left as the next step expects it. Once per step, O(awake
    /// shapes). (Falling and rolling bodies escape often: 465 of 3,886 awake ones in
    /// `samples-c/queries.c`, which a list made every ray test one by one.)
    pub(super) fn refresh_escaped(&mut self) {
        if self.escaped_fresh {
            return;
        }
        self.escaped.clear();
        for p in self.escaped_proxies.drain(..) {
            self.escaped_tree.destroy_proxy(p);
        }
        let (awake, tree) = (&self.bodies.awake, self.broadphase.tree());
        // Room for every awake shape at once, so a step with more escapes than any
        // before does not allocate (the sensors refresh this list every step).
        let shapes: usize = awake.id.iter().map(|id| self.proxies[id.index as usize].len()).sum();
        self.escaped.reserve(shapes);
        self.escaped_proxies.reserve(shapes);
        for row in 0..awake.len() {
            let slot = awake.id[row].index;
            let xf = awake.transform(row);
            for (k, (s, &proxy)) in
                self.bodies.shapes_of_slot(slot).iter().zip(&self.proxies[slot as usize]).enumerate()
            {
                let tight = s.shape.aabb(&xf.mul(&s.def.pose));
                if !tree.fat_aabb(proxy).contains(&tight) {
                    let user = (slot as u64) << 32 | k as u64;
                    self.escaped.push(user);
                    self.escaped_proxies.push(self.escaped_tree.create_proxy(&tight, user));
                }
            }
        }
        self.escaped.sort_unstable();
        self.escaped_fresh = true;
    }

    /// Whether the tree's box of the shape behind `user` is out of date (the shape
    /// is in the escaped tree instead).
    fn is_escaped(&self, user: u64) -> bool {
        !self.escaped.is_empty() && self.escaped.binary_search(&user).is_ok()
    }

    /// Calls `visit` with the proxy user value of every shape whose box (the tree's,
    /// or its own for escaped ones) may overlap `bounds`.
    pub(super) fn for_each_candidate(&self, bounds: &Aabb, mut visit: impl FnMut(u64)) {
        let escaped = &self.escaped_tree;
        escaped.query(bounds, |proxy| {
            visit(escaped.user_data(proxy));
            true
        });
        let tree = self.broadphase.tree();
        tree.query(bounds, |proxy| {
            let user = tree.user_data(proxy);
            if !self.is_escaped(user) {
                visit(user);
            }
            true
        });
    }

    /// Whether the body shape `(slot, k)` passes `filter`.
    fn passes(&self, slot: u32, shape: &BodyShape, filter: &QueryFilter) -> bool {
        let Some((set, row)) = self.bodies.place_of_slot(slot) else { return false };
        if filter.ignore.is_some_and(|id| id.index == slot) {
            return false;
        }
        let f = self.bodies.set(set).flags[row];
        let motion_ok = if f & flags::STATIC != 0 {
            filter.static_bodies
        } else if f & flags::KINEMATIC != 0 {
            filter.kinematic_bodies
        } else {
            filter.dynamic_bodies
        };
        motion_ok
            && (filter.sensors || !shape.def.sensor)
            && shape.def.category & filter.mask != 0
            && shape.def.mask & filter.category != 0
    }

    /// The body shape behind a broadphase proxy's user value, with its world
    /// placement, if it passes `filter`.
    fn filtered_shape(&self, user: u64, filter: &QueryFilter) -> Option<(QueryTarget, &Shape, Isometry)> {
        let (slot, k) = ((user >> 32) as u32, user as u32);
        let shape = self.bodies.shapes_of_slot(slot).get(k as usize)?;
        if !self.passes(slot, shape, filter) {
            return None;
        }
        let (set, row) = self.bodies.place_of_slot(slot)?;
        let xf = self.bodies.set(set).transform(row).mul(&shape.def.pose);
        Some((QueryTarget::Body { body: self.bodies.id_of_slot(slot), shape: k }, &shape.shape, xf))
    }

    /// `ray` against the body shape behind `user`, within `max_t`.
    fn ray_shape(&self, user: u64, ray: &Ray, max_t: f32, filter: &QueryFilter) -> Option<RayHit> {
        let (target, shape, xf) = self.filtered_shape(user, filter)?;
        let local = Ray::new(xf.inverse_transform_point(ray.origin), xf.inverse_transform_vector(ray.dir));
        let hit = shape.ray_cast(&local, max_t)?;
        Some(RayHit {
            t: hit.t,
            point: ray.at(hit.t),
            normal: xf.transform_vector(hit.normal),
            target,
            material: Material::AIR,
        })
    }

    /// Improves `best` with the bodies' shapes (the tree is clipped by the best hit).
    fn closest_body(&self, ray: &Ray, max_t: f32, filter: &QueryFilter, mut best: Option<RayHit>) -> Option<RayHit> {
        let mut limit = best.map_or(max_t, |b| b.t);
        let mut visit = |user: u64, max: f32| match self.ray_shape(user, ray, max, filter) {
            Some(hit) if best.is_none_or(|b| hit.beats(&b)) => {
                best = Some(hit);
                hit.t
            }
            _ => max,
        };
        let escaped = &self.escaped_tree;
        escaped.ray_cast(ray, limit, |proxy, max| {
            let new_max = visit(escaped.user_data(proxy), max);
            limit = limit.min(new_max);
            new_max
        });
        let tree = self.broadphase.tree();
        tree.ray_cast(ray, limit, |proxy, max| {
            let user = tree.user_data(proxy);
            if self.is_escaped(user) {
                max
            } else {
                visit(user, max)
            }
        });
        best
    }

    /// The closest hit of `ray` with `t` in `[0, max_t]` over the bodies and the
    /// terrain that pass `filter` (on equal `t`, the lower [`QueryTarget::key`]).
    /// Terrain chunks the ray reaches are meshed on first use.
    pub fn cast_ray(&mut self, ray: &Ray, max_t: f32, filter: &QueryFilter) -> Option<RayHit> {
        if !ray.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return None;
        }
        self.refresh_escaped();
        let terrain = match (&mut self.terrain, filter.terrain) {
            (Some(t), true) => t.ray_cast(ray, max_t).map(RayHit::terrain),
            _ => None,
        };
        self.closest_body(ray, max_t, filter, terrain)
    }

    /// Every shape `ray` meets within `max_t` (each at its first point) and the
    /// terrain's first hit, into `out` (cleared first), ordered by `t`, then target.
    pub fn cast_ray_all(&mut self, ray: &Ray, max_t: f32, filter: &QueryFilter, out: &mut Vec<RayHit>) {
        out.clear();
        if !ray.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return;
        }
        if let (Some(t), true) = (&mut self.terrain, filter.terrain) {
            out.extend(t.ray_cast(ray, max_t).map(RayHit::terrain));
        }
        self.refresh_escaped();
        let escaped = &self.escaped_tree;
        escaped.ray_cast(ray, max_t, |proxy, max| {
            out.extend(self.ray_shape(escaped.user_data(proxy), ray, max, filter));
            max
        });
        let tree = self.broadphase.tree();
        tree.ray_cast(ray, max_t, |proxy, max| {
            let user = tree.user_data(proxy);
            if !self.is_escaped(user) {
                out.extend(self.ray_shape(user, ray, max, filter));
            }
            max
        });
        out.sort_unstable_by(|a, b| a.t.total_cmp(&b.t).then(a.target.key().cmp(&b.target.key())));
    }

    /// Every hit of `ray` within `max_t`, handed to `visit` as it is found (Box2D's
    /// `b2World_CastRay` with its `b2CastResultFcn`): first the terrain's first hit,
    /// then the body shapes in the trees' order (the same for any worker count).
    /// `visit` says what the ray does next: a negative number (or NaN) ignores the
    /// hit, 0 stops the cast, any other value clips the ray to that length (the hit's
    /// `t` narrows the search to closer hits; `max_t` or more goes on unclipped).
    /// Hits beyond the clipped length are not reported.
    pub fn cast_ray_with(
        &mut self,
        ray: &Ray,
        max_t: f32,
        filter: &QueryFilter,
        mut visit: impl FnMut(&RayHit) -> f32,
    ) {
        if !ray.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return;
        }
        // The new length after a hit, or `None` to stop.
        let next = |answer: f32, max: f32| {
            if answer.is_nan() || answer < 0.0 {
                Some(max)
            } else if answer == 0.0 {
                None
            } else {
                Some(answer.min(max))
            }
        };
        let mut max = max_t;
        if let (Some(t), true) = (&mut self.terrain, filter.terrain) {
            if let Some(hit) = t.ray_cast(ray, max).map(RayHit::terrain) {
                match next(visit(&hit), max) {
                    Some(m) => max = m,
                    None => return,
                }
            }
        }
        self.refresh_escaped();
        // The length so far, or negative once stopped (both trees read it).
        let length = std::cell::Cell::new(max);
        let mut shapes = |user: u64, m: f32| {
            let Some(hit) = self.ray_shape(user, ray, m, filter) else { return m };
            let n = next(visit(&hit), m).unwrap_or(-1.0);
            length.set(n);
            n
        };
        let escaped = &self.escaped_tree;
        escaped.ray_cast(ray, max, |proxy, m| shapes(escaped.user_data(proxy), m));
        if length.get() < 0.0 {
            return;
        }
        let tree = self.broadphase.tree();
        tree.ray_cast(ray, length.get(), |proxy, m| {
            let user = tree.user_data(proxy);
            if self.is_escaped(user) {
                m
            } else {
                shapes(user, m)
            }
        });
    }

    /// [`World::cast_ray`] for every ray as parallel jobs: `hits[i]` is ray `i`'s
    /// closest hit. Chunks first reached by the batch are meshed in parallel. Panics
    /// if `hits` and `rays` differ in length.
    pub fn cast_ray_batch(
        &mut self,
        rays: &[Ray],
        max_t: f32,
        filter: &QueryFilter,
        hits: &mut [Option<RayHit>],
        jobs: Jobs,
    ) {
        assert_eq!(rays.len(), hits.len(), "one hit slot per ray");
        hits.fill(None);
        if max_t.is_nan() || max_t < 0.0 {
            return;
        }
        self.refresh_escaped();
        if let (Some(t), true) = (&mut self.terrain, filter.terrain) {
            let terrain_hits = &mut self.scratch.terrain_hits;
            terrain_hits.clear();
            terrain_hits.resize(rays.len(), None);
            t.ray_cast_batch(rays, max_t, terrain_hits, jobs);
            for (hit, t) in hits.iter_mut().zip(terrain_hits.iter()) {
                *hit = t.map(RayHit::terrain);
            }
        }
        let world = &*self;
        jobs.for_each_mut(hits, |i, hit, _| {
            if rays[i].is_valid() {
                *hit = world.closest_body(&rays[i], max_t, filter, *hit);
            }
        });
    }

    /// Every body shape whose bounds overlap `aabb` and every terrain triangle
    /// touching it (exact triangle/box test; only the first with
    /// [`QueryFilter::terrain_once`]), into `out` (cleared first), ordered by
    /// [`QueryTarget::key`]. `jobs` mesh chunks not yet meshed.
    pub fn overlap_aabb(&mut self, aabb: &Aabb, filter: &QueryFilter, jobs: Jobs, out: &mut Vec<QueryTarget>) {
        out.clear();
        if !aabb.is_valid() {
            return;
        }
        self.refresh_escaped();
        self.for_each_candidate(aabb, |user| {
            if let Some((target, shape, xf)) = self.filtered_shape(user, filter) {
                if shape.aabb(&xf).overlaps(aabb) {
                    out.push(target);
                }
            }
        });
        out.sort_unstable_by_key(QueryTarget::key);
        if let (Some(t), true) = (&mut self.terrain, filter.terrain) {
            t.query_triangles(aabb, jobs, |tri| {
                out.push(QueryTarget::Terrain { chunk: tri.chunk, triangle: tri.index });
                !filter.terrain_once
            });
        }
    }

    /// Every body shape and terrain triangle that `shape` placed at `xf` overlaps or
    /// touches (GJK distance ≤ 0; only the first triangle with
    /// [`QueryFilter::terrain_once`]), into `out` (cleared first), ordered by
    /// [`QueryTarget::key`].
    pub fn overlap_shape(
        &mut self,
        shape: &Shape,
        xf: &Isometry,
        filter: &QueryFilter,
        jobs: Jobs,
        out: &mut Vec<QueryTarget>,
    ) {
        out.clear();
        if !xf.is_valid() {
            return;
        }
        let bounds = shape.aabb(xf);
        let touches = |other: &Shape, other_xf: &Isometry| {
            shape_distance(shape, xf, other, other_xf).is_some_and(|d| d.overlap || d.distance <= 0.0)
        };
        self.refresh_escaped();
        self.for_each_candidate(&bounds, |user| {
            if let Some((target, other, other_xf)) = self.filtered_shape(user, filter) {
                if other.aabb(&other_xf).overlaps(&bounds) && touches(other, &other_xf) {
                    out.push(target);
                }
            }
        });
        out.sort_unstable_by_key(QueryTarget::key);
        if let (Some(t), true) = (&mut self.terrain, filter.terrain) {
            t.query_triangle_candidates(&bounds, jobs, |tri| {
                if touches_triangle(shape, xf, tri.vertices) {
                    out.push(QueryTarget::Terrain { chunk: tri.chunk, triangle: tri.index });
                    return !filter.terrain_once;
                }
                true
            });
        }
    }

    /// Sweeps `shape` from `xf` along `translation` (no rotation) and returns the
    /// first body shape or terrain triangle it touches (on equal fractions, the lower
    /// [`QueryTarget::key`]): a fraction of 0 when it overlaps something at the start.
    pub fn cast_shape(
        &mut self,
        shape: &Shape,
        xf: &Isometry,
        translation: Vec3,
        filter: &QueryFilter,
        jobs: Jobs,
    ) -> Option<ShapeCastHit> {
        if !xf.is_valid() || !translation.is_finite() {
            return None;
        }
        let start = shape.aabb(xf);
        let swept = start.union(&Aabb::new(start.min + translation, start.max + translation));
        let sweep = Sweep::translation(*xf, translation);
        let mut best: Option<ShapeCastHit> = None;
        let consider = |target: QueryTarget, other: &Shape, other_xf: &Isometry, best: &mut Option<ShapeCastHit>| {
            let limit = best.map_or(1.0, |b| b.fraction);
            let toi = shape_time_of_impact(shape, &sweep, other, &Sweep::fixed(*other_xf), limit, 0.0, CAST_TOLERANCE);
            let hit = match toi.state {
                ToiState::Separated => return,
                ToiState::Overlapping => {
                    ShapeCastHit { fraction: 0.0, point: toi.point, normal: -translation.normalize_or(Vec3::Y), target }
                }
                ToiState::Hit | ToiState::Failed => {
                    ShapeCastHit { fraction: toi.t, point: toi.point, normal: -toi.normal, target }
                }
            };
            if best.is_none_or(|b| (hit.fraction, hit.target.key()) < (b.fraction, b.target.key())) {
                *best = Some(hit);
            }
        };
        self.refresh_escaped();
        self.for_each_candidate(&swept, |user| {
            if let Some((target, other, other_xf)) = self.filtered_shape(user, filter) {
                if other.aabb(&other_xf).overlaps(&swept) {
                    consider(target, other, &other_xf, &mut best);
                }
            }
        });
        if let (Some(t), true) = (&mut self.terrain, filter.terrain) {
            t.query_triangle_candidates(&swept, jobs, |tri| {
                let target = QueryTarget::Terrain { chunk: tri.chunk, triangle: tri.index };
                consider(target, &Shape::Triangle(tri.vertices), &Isometry::IDENTITY, &mut best);
                true
            });
        }
        best.map(|mut hit| {
            if hit.normal == Vec3::ZERO {
                hit.normal = -translation.normalize_or(Vec3::Y);
            }
            hit
        })
    }
}

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
