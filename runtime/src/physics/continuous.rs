//! Continuous collision: fast bodies swept against static bodies and terrain from
//! their start pose (conservative advancement through `collide::shape_time_of_impact`),
//! moved back to the time of impact with their velocity kept, so that the next step's
//! contact stops them; then bullets, the same way, against static bodies, terrain and
//! every body that is not a bullet at its final pose. Box2D v3 does the same.

use glam::{Quat, Vec3};

use super::body::{flags, Bodies};
use super::joint::Apart;
use super::narrow::{shape_ref, Kept};
use super::world::*;
use crate::collide::{shape_time_of_impact, Sweep, ToiState};
use crate::jobs::Column;
use crate::jobs::Jobs;
use crate::math::{triangle_overlaps_aabb, world_inertia, Aabb, Isometry};
use crate::shapes::Shape;
use crate::spatial::ProxyId;
use crate::terrain::{ContactKind, Terrain, TerrainContacts};

impl World {
    /// The terrain near the shapes as the continuous stage sees it, and every awake
    /// shape's proxy with its fat box.
    #[cfg(test)]
    pub(crate) fn near_terrain(&self) -> Option<(NearTerrain<'_>, Vec<(u32, Aabb)>)> {
        let s = &self.scratch;
        let near = NearTerrain {
            terrain: self.terrain.as_ref()?,
            contacts: &self.terrain_contacts,
            gathered: Kept { outs: &s.outs[..s.joined], index: &s.kept_index },
        };
        let (tree, a) = (self.broadphase.tree(), &self.bodies.awake);
        let shapes = (0..a.len()).flat_map(|row| &self.proxies[a.id[row].index as usize]);
        Some((near, shapes.map(|&p| (p.0, tree.fat_aabb(p))).collect()))
    }

    /// Fast bodies (moved more than half their thinnest shape, or bullets) are swept
    /// from their start pose; a hit moves them back to the time of impact, keeping
    /// their velocity, so the next step's contact stops them. As in Box2D v3, two
    /// passes: the fast non-bullets against static bodies and terrain, then the
    /// bullets against those and every other body that is not a bullet (dynamic,
    /// kinematic or asleep, at its pose after the first pass), so a bullet stops at
    /// a moving crate.
    pub(super) fn continuous_stage(&mut self, jobs: Jobs) {
        let mut count = 0;
        for bullets in [false, true] {
            count += self.sweep_fast(bullets, jobs);
        }
        self.counters.continuous_hits = count;
    }

    /// One pass of [`World::continuous_stage`]: the fast bodies that are bullets (or
    /// are not), swept in parallel, then moved in row order. Returns the hits.
    fn sweep_fast(&mut self, bullets: bool, jobs: Jobs) -> u32 {
        let s = &mut self.scratch;
        s.fast.clear();
        let a = &self.bodies.awake;
        for i in 0..a.len() {
            if a.inv_mass[i] == 0.0 || (a.flags[i] & flags::BULLET != 0) != bullets {
                continue;
            }
            let moved = (a.position[i] - self.start_poses[i].0).length();
            let e = self.extents[a.id[i].index as usize];
            if (bullets && moved > 0.0) || moved > 0.5 * e.min {
                s.fast.push(i as u32);
            }
        }
        if s.fast.is_empty() {
            return 0;
        }
        s.hits.clear();
        s.hits.resize(s.fast.len(), None);
        // The body tree holds every body: with no static one in it, the first pass's
        // sweeps skip it (a fifth of the rain scene's sweep time went to finding
        // nothing there). Bullets always look.
        let tree = self.broadphase.tree();
        let statics = bullets || self.bodies.resting.flags.iter().any(|&f| f & flags::STATIC != 0);
        let tree = statics.then_some(tree);
        let terrain = self.terrain.as_ref().map(|terrain| NearTerrain {
            terrain,
            contacts: &self.terrain_contacts,
            gathered: Kept { outs: &s.outs[..s.joined], index: &s.kept_index },
        });
        let (fast, bodies, starts) = (&s.fast, &self.bodies, &self.start_poses);
        let (extents, proxies) = (&self.extents, &self.proxies);
        let against = Against { tree, terrain: terrain.as_ref(), bodies: bullets, apart: &self.joints.apart };
        let hits = Column::new(&mut s.hits);
        jobs.parallel_for(0..fast.len(), 4, |range, _| {
            // SAFETY: `parallel_for` hands each chunk range to exactly one job.
            let out = unsafe { hits.rows(range.clone()) };
            for (k, i) in range.enumerate() {
                let row = fast[i] as usize;
                let slot = bodies.awake.id[row].index as usize;
                out[k] = sweep_body(bodies, &against, starts, row, &extents[slot], &proxies[slot]);
            }
        });
        let mut count = 0;
        for (&row, hit) in s.fast.iter().zip(&s.hits) {
            if let Some((x, q)) = *hit {
                let a = &mut self.bodies.awake;
                a.position[row as usize] = x;
                a.rotation[row as usize] = q;
                a.world_inv_inertia[row as usize] = world_inertia(q, a.local_inv_inertia[row as usize]);
                count += 1;
            }
        }
        count
    }
}

/// What a sweep tests against: static bodies (in `tree`, when given), the terrain,
/// and with `bodies` every other body that is not a bullet, unless a joint keeps
/// the pair apart.
pub(super) struct Against<'a> {
    pub tree: Option<&'a crate::spatial::DynamicTree>,
    pub terrain: Option<&'a NearTerrain<'a>>,
    pub bodies: bool,
    pub apart: &'a Apart,
}

/// The terrain with what the step learnt of it near each shape: the shapes' terrain
/// contacts, complete for any box inside a shape's last queried voxel range, and
/// the triangles the narrowphase gathered for them.
pub(crate) struct NearTerrain<'a> {
    pub(crate) terrain: &'a Terrain,
    contacts: &'a TerrainContacts,
    gathered: Kept<'a>,
}

/// What [`NearTerrain::around`] knows of a box.
pub(crate) enum Near<'a> {
    /// No solid terrain within reach.
    Nothing,
    /// Every triangle touching the box is in this set, in query order.
    Triangles(&'a [[Vec3; 3]]),
    /// The chunks must be looked up.
    Unknown,
}

impl<'a> NearTerrain<'a> {
    /// What the step knows of the terrain around `region`, a box of the shape with
    /// proxy `proxy`. The shape's contacts cover `region` when its voxel range lies
    /// inside the one they were found for, with the masks unchanged since: then no
    /// solid contact means no triangle near, and a gathered set whose box contains
    /// `region` holds every triangle of those chunks that touches it.
    pub(crate) fn around(&self, proxy: u32, region: &Aabb) -> Near<'a> {
        let (terrain, contacts) = (self.terrain, self.contacts);
        let Some(([lo, hi], stamp)) = contacts.range_of(proxy) else { return Near::Unknown };
        let Some((a, b)) = terrain.voxel_range(region) else { return Near::Unknown };
        if stamp != terrain.mask_stamp() || a.cmplt(lo).any() || b.cmpgt(hi).any() {
            return Near::Unknown;
        }
        if !contacts.contacts_of(proxy).iter().any(|c| c.kind == ContactKind::Solid) {
            return Near::Nothing;
        }
        match self.gathered.triangles_covering(proxy, terrain.revision(), region) {
            Some(set) => Near::Triangles(set),
            None => Near::Unknown,
        }
    }
}

/// Box2D v3's core fraction: a body's core is this fraction of its smallest extent.
pub(super) const CORE_FRACTION: f32 = 0.25;

/// The earliest time of impact of an awake body's shapes, swept from its start pose
/// to its current pose, against static bodies (found in `tree`, when given) and
/// terrain; the pose there. `extent` is the body's [`Extent`].
///
/// Terrain triangles are one-sided surfaces, and a shape's sweep skips one, as Box2D
/// v3 skips its one-sided chain segments, when the shape's centroid starts behind
/// the triangle's plane, or closes in on it by less than the core distance
/// ([`CORE_FRACTION`] of the smallest extent) and ends farther than that in front:
/// a shape moving fast along the surface, or slowly towards it, clips it at most
/// by a little, which the speculative contacts resolve. Only the time of impact
/// of a centroid coming through a surface (or close to it) fast pauses the body.
///
/// The step already knows the terrain near most shapes ([`NearTerrain`]): then a
/// sweep tests the triangles the narrowphase gathered, or none, instead of finding
/// chunks and querying their trees; the same triangles in the same order.
pub(super) fn sweep_body(
    bodies: &Bodies,
    against: &Against,
    starts: &[(Vec3, Quat)],
    row: usize,
    extent: &Extent,
    proxies: &[ProxyId],
) -> Option<(Vec3, Quat)> {
    let core = CORE_FRACTION * extent.min;
    // The body lies within `extent.max` of its centre of mass, which moves on a
    // straight line: a triangle whose plane it stays this far in front of, at both
    // ends, is never within the time of impact's reach.
    let clear = extent.max + 2.0 * LINEAR_SLOP;
    let a = &bodies.awake;
    let center = a.local_center[row];
    let (c0, q0) = starts[row];
    let (c1, q1) = (a.position[row], a.rotation[row]);
    let frame = |c: Vec3, q: Quat| Isometry::new(c - q * center, q);
    let body = Sweep { start: frame(c0, q0), end: frame(c1, q1), local_center: center };
    let slot = a.id[row].index;
    let mut best = 1.0f32;
    for (shape, proxy) in bodies.shapes_of_slot(slot).iter().zip(proxies) {
        // Sensors stop nothing and are stopped by nothing.
        if shape.def.sensor {
            continue;
        }
        let pose = &shape.def.pose;
        let sweep = Sweep {
            start: body.start.mul(pose),
            end: body.end.mul(pose),
            local_center: pose.inverse_transform_point(center),
        };
        let swept = shape.shape.aabb(&sweep.start).union(&shape.shape.aabb(&sweep.end));
        let centroid = (sweep.start.transform_point(sweep.local_center), sweep.end.transform_point(sweep.local_center));
        let mut test = |other: &Shape, xf: Isometry| {
            let toi = shape_time_of_impact(
                &shape.shape,
                &sweep,
                other,
                &Sweep::fixed(xf),
                best,
                LINEAR_SLOP,
                0.25 * LINEAR_SLOP,
            );
            // A shape already touching at the start is the contact solver's business
            // (Box2D skips `t = 0` the same way).
            if matches!(toi.state, ToiState::Hit | ToiState::Failed) && toi.t > 0.0 && toi.t < best {
                best = toi.t;
            }
        };
        if let Some(tree) = against.tree {
            tree.query(&swept, |p| {
                let (other, k) = shape_ref(tree.user_data(p));
                let Some((set, r)) = bodies.place_of_slot(other) else { return true };
                let f = bodies.set(set).flags[r];
                let fixed = f & flags::STATIC != 0;
                // Bullets: every other body but bullets, where it stands now.
                let moving = against.bodies && other != slot && f & flags::BULLET == 0;
                if (fixed || moving) && against.apart.may_collide(slot, other) {
                    let s = &bodies.shapes_of_slot(other)[k as usize];
                    if shape.def.collides_with(&s.def) && !s.def.sensor {
                        test(&s.shape, bodies.set(set).transform(r).mul(&s.def.pose));
                    }
                }
                true
            });
        }
        let Some(near) = against.terrain else { continue };
        // One-sided, as in the narrowphase: skip triangles the shape starts behind,
        // and those it only clips.
        let mut triangle = |v: [Vec3; 3]| {
            let n = (v[1] - v[0]).cross(v[2] - v[0]).normalize_or_zero();
            let (s1, s2) = (n.dot(centroid.0 - v[0]), n.dot(centroid.1 - v[0]));
            if s1 > 0.0 && !(s1 - s2 < core && s2 > core) && s1.min(s2) <= clear {
                test(&Shape::Triangle(v), Isometry::IDENTITY);
            }
        };
        match near.around(proxy.0, &swept) {
            Near::Nothing => {}
            Near::Triangles(set) => {
                for &v in set.iter().filter(|&&v| triangle_overlaps_aabb(v, &swept)) {
                    triangle(v);
                }
            }
            Near::Unknown => near.terrain.for_each_overlap(&swept, |chunk, overlap| {
                if let Some(mesh) = overlap.solid.then(|| near.terrain.chunk_mesh(chunk)).flatten() {
                    mesh.query_aabb(&swept, |i| {
                        triangle(mesh.triangle(i));
                        true
                    });
                }
                true
            }),
        }
    }
    if best >= 1.0 {
        return None;
    }
    let q = (q0 + (if q0.dot(q1) < 0.0 { -q1 } else { q1 } - q0) * best).normalize();
    Some((c0 + (c1 - c0) * best, q))
}
