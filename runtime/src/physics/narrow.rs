//! The narrowphase: contact constraints for every broadphase pair with an awake
//! body and for every awake shape touching terrain, computed in parallel jobs.
//!
//! Work items come in a fixed order (the broadphase's pairs in pair-key order, then
//! terrain items in proxy order); each job handles a fixed chunk of items into its
//! own output buffer, and the buffers are joined in chunk order, so the constraint
//! list is the same for any worker count. The jobs skip the pairs that need no
//! contacts (both bodies asleep or not dynamic, filtered out), so no thread has to
//! list the pairs first.
//!
//! A pair that has hardly moved since its manifold was found reuses it (Jolt's body
//! pair cache, with a bound on the error: see `reuse_manifolds`), and every item takes
//! its warm-start impulses from last step's matching constraint while it has it at
//! hand. In a resting pyramid most pairs collide once and then only when they move.
//! A shape on terrain does the same while it keeps its triangles (below): a box come
//! to rest on the hills collides with its triangles once.
//!
//! Terrain: a shape's triangles come from the chunk meshes its terrain contacts name
//! (already built: see `Terrain::prepare_meshes`). Every triangle's manifold is
//! gathered, clustered by normal (a shape in a crease touches two or three faces),
//! and each cluster reduced to at most four points, load-bearing ones before
//! speculative ones (see `reduce`; each point keeps its own normal). One constraint
//! per cluster instead of one per triangle keeps the graph colouring small: a box
//! resting on eight coplanar triangles is one constraint.
//!
//! Gathering a shape's triangles (kD-tree queries, then edge classification) cost as
//! much as colliding with them, so it is done for a fattened box and kept, as parry's
//! trimesh manifolds do: while the shape's box stays inside the fat box, its contacts
//! name the same chunks and the terrain is unedited, later steps collide with the
//! kept triangles. Each step copies what it used into its job's [`Gathered`] (the
//! last step's are read-only by then), so the kept sets follow the items without
//! allocation and the same for any worker count.

use std::ops::Range;

use glam::{IVec3, Vec3};

use super::body::{flags, Bodies, BodyShape, SetKind};
use super::constraint_graph::Colorable;
use super::contact_solver::{Constraint, ConstraintTable, FoundAt, Header, NONE};
use super::joint::Apart;
use super::near::{Kind, Near};
use crate::codec::{Codec, Corrupt, Reader, Writer};
use crate::collide::{
    collide_all, collide_coherent, collide_triangles_with, Manifold, SatCache, SatTest, TriangleAxes, TriangleSet,
};
use crate::jobs::{chunk_count, chunk_range, Column, Jobs};
use crate::math::{Aabb, Isometry};
use crate::shapes::Shape;
use crate::spatial::{DynamicTree, Pair, ProxyId};
use crate::terrain::{ContactKind, Terrain, TerrainContact};

/// Items per narrowphase job.
const GRAIN: usize = 32;

/// The key half that marks terrain in a pair key.
pub(crate) const TERRAIN: u32 = u32::MAX;

/// A shape against terrain: its contacts are `terrain_contacts[start..end]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TerrainItem {
    pub proxy: ProxyId,
    pub start: u32,
    pub end: u32,
}

/// A job's output and scratch.
#[derive(Debug)]
pub(crate) struct NarrowOut {
    /// The job's constraints in item order: [`KEPT`]` | i` for last step's constraint
    /// `i`, renewed where it is, else an index into `fresh`.
    pub order: Vec<u32>,
    /// Constraints made anew (the world copies them into its store).
    pub fresh: Vec<Constraint>,
    /// What colouring needs of each constraint of `order`, with its awake rows set
    /// (see [`set_rows`]), made while the constraint is still in cache.
    pub colorables: Vec<Colorable>,
    /// Contact points in the constraints of `order`.
    pub points: u32,
    /// Pairs whose manifolds were reused.
    pub reused: u32,
    /// Terrain items whose manifolds were reused.
    pub reused_terrain: u32,
    /// Where the job's last search of last step's constraints ended (`last_step`).
    cursor: usize,
    /// The hull pairs this job found apart, with the axis that separated them, in
    /// key order: the next step tests that axis first (`collide_coherent`).
    pub axes: Vec<(u64, SatCache)>,
    /// Where the job's last search of last step's axes ended.
    axis_cursor: usize,
    /// Hull pairs tested in full, those a cached separating axis decided, and those
    /// it kept apart without a search.
    pub sat_full: u32,
    pub sat_cached: u32,
    pub sat_skipped: u32,
    /// Slots of sleeping bodies touched by an awake dynamic or moving body.
    pub wake: Vec<u32>,
    /// The terrain triangles this job's shapes used, kept for the next step.
    pub gathered: Gathered,
    triangles: TriangleSet,
    triangle_ids: Vec<u32>,
    candidates: Vec<Candidate>,
}

/// How far a gathering box reaches past the shape's box, plus
/// [`GATHER_PREDICTION`] steps of its motion.
const GATHER_MARGIN: f32 = 0.1;
/// Steps of motion a gathering box reaches ahead. In the `rain` scene's first 240
/// steps (the fall and the landing), 2 steps kept 72% of the terrain shapes'
/// triangle sets from one step to the next; 6 keep 84%, at 11.5 triangles per
/// gather instead of 7.7, and the step is 6-9% faster (fewer cold chunk-tree
/// queries, and a kept set lets a manifold be reused). 8 kept 87% but was no faster.
const GATHER_PREDICTION: f32 = 6.0;

/// Terrain triangles gathered for shapes, with their edge flags and ids.
#[derive(Clone, Debug, Default)]
pub(crate) struct Gathered {
    sets: Vec<GatheredSet>,
    chunks: Vec<IVec3>,
    triangles: Vec<[Vec3; 3]>,
    active: Vec<[bool; 3]>,
    ids: Vec<u32>,
    /// For a shape with hulls, per convex part (a compound's parts in
    /// order, else one) and triangle, the axis that last separated them.
    axes: Vec<SatCache>,
}

/// Triangles, their edge flags and their ids.
type Triangles<'t> = (&'t [[Vec3; 3]], &'t [[bool; 3]], &'t [u32]);

/// The triangles of `chunks` touching `fat` at terrain revision `revision`.
#[derive(Clone, Debug, Default)]
struct GatheredSet {
    proxy: u32,
    revision: u64,
    fat: Aabb,
    chunks: Range<u32>,
    triangles: Range<u32>,
    axes: Range<u32>,
}

/// A set's revision is written as 1 when it is the attached terrain's revision and 0
/// otherwise (a restore may put the terrain's voxels back under another revision),
/// and read back as the restoring terrain's revision or one no terrain reaches.
impl Codec for GatheredSet {
    fn put(&self, w: &mut Writer) {
        self.proxy.put(w);
        ((self.revision == w.revision) as u8).put(w);
        self.fat.put(w);
        self.chunks.put(w);
        self.triangles.put(w);
        self.axes.put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.proxy.take(r)?;
        self.revision = if r.tag(2)? == 1 { r.revision } else { u64::MAX };
        self.fat.take(r)?;
        Codec::take(&mut self.chunks, r)?;
        Codec::take(&mut self.triangles, r)?;
        Codec::take(&mut self.axes, r)
    }
}
crate::codec::fields!(Gathered { sets, chunks, triangles, active, ids, axes });

impl Gathered {
    /// Renames terrain revision `from` as `to` (the triangles it named are back).
    pub fn rename_revision(&mut self, from: u64, to: u64) {
        for set in &mut self.sets {
            if set.revision == from {
                set.revision = to;
            }
        }
    }

    /// The sets, chunks, triangles and axes it holds.
    fn lens(&self) -> [usize; 4] {
        [self.sets.len(), self.chunks.len(), self.triangles.len(), self.axes.len()]
    }

    /// Empties it. A job with terrain items this step (`largest`: the most any job's
    /// buffer held a step earlier) keeps room for twice the larger of its own last
    /// use and `largest`, and, once it has held triangles at all, for a floor of 16
    /// per item. The terrain items follow the pairs, so as pairs come and go they
    /// shift between jobs, and any job may get the densest share: sizing a job by its
    /// own last use (or the same job's a step earlier) still allocated in a scene whose
    /// bodies kept rolling. Jobs without terrain items keep what they have.
    fn restart(&mut self, largest: Option<[usize; 4]>) {
        let own = self.lens();
        self.sets.clear();
        self.chunks.clear();
        self.triangles.clear();
        self.active.clear();
        self.ids.clear();
        self.axes.clear();
        let Some([sets, chunks, triangles, axes]) = largest else { return };
        let floor = if self.triangles.capacity() > 0 || triangles > 0 { 1 } else { 0 };
        let (sets, chunks, triangles, axes) = (
            (2 * sets.max(own[0])).max(floor * GRAIN),
            (2 * chunks.max(own[1])).max(floor * 4 * GRAIN),
            (2 * triangles.max(own[2])).max(floor * 16 * GRAIN),
            (2 * axes.max(own[3])).max(floor * 16 * GRAIN),
        );
        self.sets.reserve(sets);
        self.chunks.reserve(chunks);
        self.triangles.reserve(triangles);
        self.active.reserve(triangles);
        self.ids.reserve(triangles);
        self.axes.reserve(axes);
    }

    /// How many shapes' sets it holds.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// The proxy of set `i`.
    pub fn proxy(&self, i: usize) -> u32 {
        self.sets[i].proxy
    }

    fn range<'t, T>(items: &'t [T], r: &Range<u32>) -> &'t [T] {
        &items[r.start as usize..r.end as usize]
    }

    /// Appends a set for `proxy` gathered at `revision` for `fat`; the chunk list and
    /// the triangle data are copied.
    fn push(&mut self, (proxy, revision, fat): (u32, u64, Aabb), chunks: &[IVec3], data: Triangles) {
        let (c0, t0) = (self.chunks.len() as u32, self.triangles.len() as u32);
        self.chunks.extend_from_slice(chunks);
        self.triangles.extend_from_slice(data.0);
        self.active.extend_from_slice(data.1);
        self.ids.extend_from_slice(data.2);
        let (c1, t1) = (self.chunks.len() as u32, self.triangles.len() as u32);
        let a = self.axes.len() as u32;
        self.sets.push(GatheredSet { proxy, revision, fat, chunks: c0..c1, triangles: t0..t1, axes: a..a });
    }

    /// Gives the last set `parts` axes per triangle, none of them found yet.
    fn add_axes(&mut self, parts: usize) {
        let set = self.sets.last_mut().expect("a set");
        let count = parts * set.triangles.len();
        self.axes.resize(self.axes.len() + count, SatCache::default());
        set.axes.end = self.axes.len() as u32;
    }

    /// Gives the last set's triangles the axes they had in set `i` of `from` (the
    /// same shape's set a step earlier, `parts` axes per triangle) when both were
    /// gathered at the same terrain revision, so the same id names the same triangle.
    /// The ids come in chunk and query order, so regions that overlap list their
    /// common triangles in much the same order: each search starts past the last find.
    fn carry_axes(&mut self, from: &Gathered, i: usize, parts: usize) {
        let (old, new) = (&from.sets[i], self.sets.last().expect("a set"));
        let (m, n) = (old.triangles.len(), new.triangles.len());
        if old.revision != new.revision || old.axes.len() != parts * m || m == 0 {
            return;
        }
        let old_ids = Gathered::range(&from.ids, &old.triangles);
        let old_axes = Gathered::range(&from.axes, &old.axes);
        let (ids, axes) = (&self.ids[new.triangles.start as usize..], &mut self.axes[new.axes.start as usize..]);
        let mut at = 0;
        for (j, id) in ids[..n].iter().enumerate() {
            let Some(k) = (0..m).map(|step| (at + step) % m).find(|&k| old_ids[k] == *id) else { continue };
            for p in 0..parts {
                axes[p * n + j] = old_axes[p * m + k];
            }
            at = k + 1;
        }
    }

    /// Copies set `i` of `from`, unchanged.
    fn push_from(&mut self, from: &Gathered, i: usize) {
        let set = &from.sets[i];
        let t = &set.triangles;
        let data =
            (Gathered::range(&from.triangles, t), Gathered::range(&from.active, t), Gathered::range(&from.ids, t));
        self.push((set.proxy, set.revision, set.fat), Gathered::range(&from.chunks, &set.chunks), data);
        self.axes.extend_from_slice(Gathered::range(&from.axes, &set.axes));
        self.sets.last_mut().expect("just pushed").axes.end = self.axes.len() as u32;
    }

    /// The last set's triangles, edge flags and ids.
    fn last(&self) -> Triangles<'_> {
        let t = &self.sets.last().expect("a set").triangles;
        (Gathered::range(&self.triangles, t), Gathered::range(&self.active, t), Gathered::range(&self.ids, t))
    }

    /// The last set's triangles, edge flags and ids, and its axes for convex part
    /// `part` (empty when it keeps none).
    fn last_with_axes(&mut self, part: u32) -> (Triangles<'_>, &mut [SatCache]) {
        let set = self.sets.last().expect("a set");
        let (t, a) = (set.triangles.clone(), set.axes.clone());
        let n = t.len();
        let axes = &mut self.axes[a.start as usize..a.end as usize];
        let axes = if axes.is_empty() { axes } else { &mut axes[part as usize * n..(part as usize + 1) * n] };
        let ids = Gathered::range(&self.ids, &t);
        ((Gathered::range(&self.triangles, &t), Gathered::range(&self.active, &t), ids), axes)
    }
}

/// Last step's gathered sets: the jobs' [`Gathered`] and a sorted index
/// `(proxy, job, set)` over them.
#[derive(Clone, Copy)]
pub(crate) struct Kept<'a> {
    pub outs: &'a [NarrowOut],
    pub index: &'a [(u32, u32, u32)],
}

impl<'a> Kept<'a> {
    /// Builds `index` over `outs` (in job order, so sorted when the items were).
    pub fn build_index(outs: &[NarrowOut], index: &mut Vec<(u32, u32, u32)>) {
        index.clear();
        for (k, out) in outs.iter().enumerate() {
            index.extend((0..out.gathered.len()).map(|i| (out.gathered.proxy(i), k as u32, i as u32)));
        }
        if !index.is_sorted() {
            index.sort_unstable();
        }
    }

    /// The kept set of `proxy` that covers `region` and was gathered from `chunks`
    /// at `revision`: (its owner, its index).
    fn find(&self, proxy: u32, revision: u64, region: &Aabb, chunks: &[IVec3]) -> Option<(&'a Gathered, usize)> {
        let (g, i) = self.set_of(proxy)?;
        let set = &g.sets[i];
        let fits =
            set.revision == revision && set.fat.contains(region) && Gathered::range(&g.chunks, &set.chunks) == chunks;
        fits.then_some((g, i))
    }

    /// The triangles of `proxy`'s set if it was gathered at `revision` and its box
    /// contains `region`: every triangle of the set's chunks that touches `region`
    /// is among them, in the order a query of `region` visits them.
    pub fn triangles_covering(&self, proxy: u32, revision: u64, region: &Aabb) -> Option<&'a [[Vec3; 3]]> {
        let (g, i) = self.set_of(proxy)?;
        let set = &g.sets[i];
        (set.revision == revision && set.fat.contains(region)).then(|| Gathered::range(&g.triangles, &set.triangles))
    }

    /// `proxy`'s set: its owner and its index there.
    fn set_of(&self, proxy: u32) -> Option<(&'a Gathered, usize)> {
        let at = self.index.binary_search_by_key(&proxy, |e| e.0).ok()?;
        let (_, k, i) = self.index[at];
        Some((&self.outs[k as usize].gathered, i as usize))
    }
}

#[derive(Clone, Copy, Debug)]
struct Candidate {
    point: Vec3,
    normal: Vec3,
    separation: f32,
    id: u32,
    /// Normal cluster (see `collide_terrain`).
    group: u8,
}

/// Candidates whose normals are within about 18° share a cluster.
const CLUSTER_COS: f32 = 0.95;
/// Clusters per convex part; further normals join the nearest cluster.
const MAX_CLUSTERS: usize = 4;

/// Marks an entry of [`NarrowOut::order`] as last step's constraint, renewed.
pub(crate) const KEPT: u32 = 1 << 31;

/// Triangles a job's terrain buffers hold before they grow.
pub(crate) const TERRAIN_ROOM: usize = 256;

impl NarrowOut {
    /// Lists `c` as the next fresh constraint; returns it in its place.
    fn push_fresh(&mut self, c: Constraint) -> &mut Constraint {
        self.order.push(self.fresh.len() as u32);
        self.fresh.push(c);
        self.fresh.last_mut().expect("just pushed")
    }

    /// Room for a busy chunk's terrain triangles, made the first time the world has
    /// terrain items (then for every job: items shift between jobs as pairs come and
    /// go). A world without terrain items never makes it: at 46 KB a job, the two
    /// lists of 468 jobs of `large_pyramid` made 43 MB that nothing used, and their
    /// first touches cost its first two steps 5,000 page faults.
    fn reserve_terrain(&mut self) {
        if self.triangle_ids.capacity() < TERRAIN_ROOM {
            self.triangles.reserve(TERRAIN_ROOM);
            self.triangle_ids.reserve(TERRAIN_ROOM);
            self.candidates.reserve(TERRAIN_ROOM);
        }
    }

    /// Terrain triangles the job holds room for.
    #[cfg(test)]
    pub(crate) fn terrain_room(&self) -> usize {
        self.triangle_ids.capacity()
    }
}

impl Default for NarrowOut {
    /// With room for a busy chunk's pairs, so buffers rarely grow after the first
    /// steps; the terrain buffers come with the first terrain item
    /// ([`NarrowOut::reserve_terrain`]).
    fn default() -> Self {
        NarrowOut {
            order: Vec::with_capacity(4 * GRAIN),
            fresh: Vec::with_capacity(GRAIN),
            colorables: Vec::with_capacity(4 * GRAIN),
            points: 0,
            reused: 0,
            reused_terrain: 0,
            cursor: 0,
            axes: Vec::with_capacity(GRAIN),
            axis_cursor: 0,
            sat_full: 0,
            sat_cached: 0,
            sat_skipped: 0,
            wake: Vec::with_capacity(GRAIN),
            gathered: Gathered::default(),
            triangles: TriangleSet::new(),
            triangle_ids: Vec::new(),
            candidates: Vec::new(),
        }
    }
}

/// Slot and shape index packed into a proxy's user data.
pub(crate) fn shape_ref(user: u64) -> (u32, u32) {
    ((user >> 32) as u32, user as u32)
}

pub(crate) fn pair_key(a: ProxyId, b: ProxyId) -> u64 {
    ((a.0 as u64) << 32) | b.0 as u64
}

/// Everything the jobs read.
pub(crate) struct NarrowInput<'a> {
    pub bodies: &'a Bodies,
    pub tree: &'a DynamicTree,
    pub terrain: Option<&'a Terrain>,
    pub terrain_contacts: &'a [TerrainContact],
    pub terrain_friction: f32,
    pub margin: f32,
    /// Body slot pairs kept apart by their joints.
    pub apart: &'a Apart,
    /// Where the awake bodies' shapes are this step.
    pub near: &'a Near,
    /// Last step's constraints and their sorted `(key, sub, index)` lookup: for the
    /// warm start, for reusing a still pair's manifolds, and for terrain point
    /// reduction, which keeps last step's points where it can.
    pub previous: &'a ConstraintTable,
    pub cache: &'a [(u64, u64, u32)],
    /// Last step's separated hull pairs and their axes, sorted by key.
    pub axes: &'a [(u64, SatCache)],
    /// Last step's gathered terrain triangles.
    pub kept: Kept<'a>,
    /// A flag per constraint of `previous`, all false on entry: set by the item that
    /// renews the constraint.
    pub renewed: Column<bool>,
    /// The step's time, for the gathering box's motion prediction.
    pub dt: f32,
}

fn mix_friction(a: f32, b: f32) -> f32 {
    (a * b).sqrt()
}

/// The rolling radius of a shape: spheres and capsules roll, other shapes do not.
/// Also the radius of the rounding whose core a contact's separation follows.
fn rolling_radius(shape: &Shape) -> f32 {
    match shape {
        Shape::Sphere { radius, .. } | Shape::Capsule { radius, .. } => *radius,
        _ => 0.0,
    }
}

/// How many convex parts of `shape` a terrain set keeps axes for: every part of a
/// compound with a hull among them, one for a hull, else none.
fn hull_parts(shape: &Shape) -> usize {
    let hull = |s: &Shape| matches!(s, Shape::Hull(_));
    match shape {
        Shape::Compound(c) if c.parts().iter().any(|p| hull(&p.shape)) => c.parts().len(),
        other => hull(other) as usize,
    }
}

/// Part `part` of a shape (the shape itself unless it is a compound).
fn part_of(shape: &Shape, part: u32) -> &Shape {
    match shape {
        Shape::Compound(c) => &c.parts()[part as usize].shape,
        other => other,
    }
}

/// The placement of a body's shape.
fn shape_transform(bodies: &Bodies, slot: u32, shape: &BodyShape) -> Isometry {
    let (set, row) = bodies.place_of_slot(slot).expect("live body");
    bodies.set(set).transform(row).mul(&shape.def.pose)
}

/// How many pairs ahead [`run`] prefetches a pair's shapes and last step's
/// constraints.
const PREFETCH_PAIRS: usize = 4;
/// The ring of [`run`]'s far-apart flags: a power of two above `PREFETCH_PAIRS`.
const FAR_RING: usize = 8;

/// Runs every item in parallel: the broadphase pairs (sorted keys, see
/// [`BroadPhase::pair_keys`](crate::spatial::BroadPhase::pair_keys)), then the
/// terrain items; `outs` grows to one buffer per chunk.
pub(crate) fn run(
    input: &NarrowInput,
    pairs: &[u64],
    terrain: &[TerrainItem],
    outs: &mut Vec<NarrowOut>,
    jobs: Jobs,
) -> usize {
    let items = pairs.len() + terrain.len();
    let chunks = chunk_count(items, GRAIN);
    if outs.len() < chunks {
        outs.resize_with(chunks, NarrowOut::default);
    }
    let largest =
        input.kept.outs.iter().map(|o| o.gathered.lens()).fold([0; 4], |m, l| std::array::from_fn(|i| m[i].max(l[i])));
    jobs.for_each_mut(&mut outs[..chunks], |chunk, out, _| {
        out.order.clear();
        out.fresh.clear();
        out.colorables.clear();
        out.points = 0;
        out.wake.clear();
        out.reused = 0;
        out.reused_terrain = 0;
        out.cursor = 0;
        out.axes.clear();
        out.axis_cursor = 0;
        out.sat_full = 0;
        out.sat_cached = 0;
        out.sat_skipped = 0;
        if !terrain.is_empty() {
            out.reserve_terrain();
        }
        let range = chunk_range(&(0..items), GRAIN, chunk);
        out.gathered.restart((range.end > pairs.len()).then_some(largest));
        let (mut ahead, mut axes_ahead) = (0, 0);
        // Whether each pair up to `PREFETCH_PAIRS` ahead is too far apart to touch
        // (`Near::apart`), by index modulo `FAR_RING`: only the others are fetched.
        let far = |i: usize| {
            pairs.get(i).is_some_and(|&key| {
                let Pair { a, b } = Pair::from_key(key);
                input.near.apart(a, b, input.tree, input.margin)
            })
        };
        let mut apart = [false; FAR_RING];
        for i in range.start..range.start + PREFETCH_PAIRS {
            apart[i % FAR_RING] = far(i);
        }
        for i in range {
            // The shapes and last step's constraints of the pair a few ahead: each
            // is behind loads that depend on each other (a shape behind the slot's
            // list, a constraint behind the cache and the table), and the pairs are
            // known.
            let next = i + PREFETCH_PAIRS;
            apart[next % FAR_RING] = far(next);
            if let Some(&key) = pairs.get(next).filter(|_| !apart[next % FAR_RING]) {
                let Pair { a, b } = Pair::from_key(key);
                for proxy in [a, b] {
                    let (slot, shape) = shape_ref(input.tree.user_data(proxy));
                    if let Some(s) = input.bodies.shapes_of_slot(slot).get(shape as usize) {
                        crate::math::prefetch(s);
                    }
                }
                for e in last_step(input.cache, key, &mut ahead) {
                    crate::math::prefetch(input.previous.ptr(e.2 as usize));
                }
            }
            // The hulls of the pair half as far ahead, where it has no separating
            // axis from last step (its whole test runs): its shapes are in by now.
            let near = i + PREFETCH_PAIRS / 2;
            if let Some(&key) = pairs.get(near).filter(|_| !apart[near % FAR_RING]) {
                if gallop(input.axes, key, |e| e.0, &mut axes_ahead).is_empty() {
                    let Pair { a, b } = Pair::from_key(key);
                    for proxy in [a, b] {
                        let (slot, shape) = shape_ref(input.tree.user_data(proxy));
                        if let Some(Shape::Hull(h)) =
                            input.bodies.shapes_of_slot(slot).get(shape as usize).map(|s| &s.shape)
                        {
                            h.prefetch();
                        }
                    }
                }
            }
            let before = out.order.len();
            match pairs.get(i) {
                Some(&key) if apart[i % FAR_RING] => rule_out(input, key, out),
                Some(&key) => collide_pair(input, Pair::from_key(key), out),
                None => {
                    let t = terrain[i - pairs.len()];
                    collide_terrain(input, t.proxy, t.start..t.end, out);
                }
            }
            let NarrowOut { order, fresh, colorables, points, .. } = out;
            for &e in &order[before..] {
                let c = match e & KEPT {
                    0 => &mut fresh[e as usize],
                    _ => {
                        let at = (e & !KEPT) as usize;
                        // SAFETY: last step's constraint `at`, and so its flag,
                        // belong to this item alone (see `reuse_manifolds`).
                        unsafe {
                            *input.renewed.get(at) = true;
                            input.previous.get_unchecked(at)
                        }
                    }
                };
                *points += c.count;
                colorables.push(set_rows(input.bodies, c));
            }
        }
    });
    chunks
}

/// Sets `c`'s awake rows (`NONE` for a body not in the awake set) and returns what
/// colouring needs of it. The rows hold while [`Bodies::layout`] does.
pub(crate) fn set_rows(bodies: &Bodies, c: &mut Constraint) -> Colorable {
    let awake_row = |slot: u32| match (slot != NONE).then(|| bodies.place_of_slot(slot)).flatten() {
        Some((SetKind::Awake, row)) => row as u32,
        _ => NONE,
    };
    c.row_a = awake_row(c.body_a);
    c.row_b = awake_row(c.body_b);
    let mass = |row: u32| if row == NONE { 0.0 } else { bodies.awake.inv_mass[row as usize] };
    Colorable::of(c, (mass(c.row_a), mass(c.row_b)))
}

/// A pair too far apart to touch (`Near::apart`): most of a dense scene's pairs end
/// here (the broadphase's boxes are fattened), before any body is read. A hull pair
/// keeps the axis that last separated it for when it comes near again.
fn rule_out(input: &NarrowInput, key: u64, out: &mut NarrowOut) {
    let kind = |p: ProxyId| {
        input.near.kind(p).unwrap_or_else(|| {
            let (slot, shape) = shape_ref(input.tree.user_data(p));
            Kind::of(&input.bodies.shapes_of_slot(slot)[shape as usize].shape)
        })
    };
    let Pair { a, b } = Pair::from_key(key);
    // (Only such pairs keep axes.)
    if Kind::coherent(kind(a), kind(b)) {
        out.sat_skipped += 1;
        if let Some(e) = gallop(input.axes, key, |e| e.0, &mut out.axis_cursor).first() {
            out.axes.push(*e);
        }
    }
}

/// The contacts of a broadphase pair, unless both bodies sleep or neither is
/// dynamic, they are one body, their filters or a joint keep them apart, or one is
/// a sensor.
fn collide_pair(input: &NarrowInput, Pair { a, b }: Pair, out: &mut NarrowOut) {
    let bodies = input.bodies;
    let (slot_a, shape_a) = shape_ref(input.tree.user_data(a));
    let (slot_b, shape_b) = shape_ref(input.tree.user_data(b));
    let (set_a, row_a) = bodies.place_of_slot(slot_a).expect("live body");
    let (set_b, row_b) = bodies.place_of_slot(slot_b).expect("live body");
    let dynamic = |set: SetKind, row: usize| bodies.set(set).inv_mass[row] > 0.0;
    if slot_a == slot_b
        || (set_a != SetKind::Awake && set_b != SetKind::Awake)
        || (!dynamic(set_a, row_a) && !dynamic(set_b, row_b))
        || !input.apart.may_collide(slot_a, slot_b)
    {
        return;
    }
    let (sa, sb) = (&bodies.shapes_of_slot(slot_a)[shape_a as usize], &bodies.shapes_of_slot(slot_b)[shape_b as usize]);
    if !sa.def.collides_with(&sb.def) || sa.def.sensor || sb.def.sensor {
        return;
    }
    // (Most shapes sit at their body's origin: no product then.)
    let place = |set: SetKind, row: usize, shape: &BodyShape| {
        let body = bodies.set(set).transform(row);
        if shape.def.pose == Isometry::IDENTITY {
            body
        } else {
            body.mul(&shape.def.pose)
        }
    };
    let (xa, xb) = (place(set_a, row_a, sa), place(set_b, row_b, sb));
    let friction = mix_friction(sa.def.friction, sb.def.friction);
    let restitution = sa.def.restitution.max(sb.def.restitution);
    let rolling = (sa.def.rolling_resistance * rolling_radius(&sa.shape))
        .max(sb.def.rolling_resistance * rolling_radius(&sb.shape));
    let key = pair_key(a, b);
    let manifold = |sub: u64| {
        let (pa, pb) = ((sub >> 32) as u32, sub as u32);
        Header {
            key,
            sub,
            body_a: slot_a,
            body_b: slot_b,
            friction,
            restitution,
            rolling_resistance: rolling,
            round_a: rolling_radius(part_of(&sa.shape, pa)),
            round_b: rolling_radius(part_of(&sb.shape, pb)),
        }
    };
    let before = out.order.len();
    let frame = xa.inv_mul(&xb);
    let centers = (bodies.set(set_a).position[row_a], bodies.set(set_b).position[row_b]);
    let found = |frame: &Isometry, normal: Vec3| {
        let (a, b) = (sa.shape.local_aabb(), sb.shape.local_aabb());
        let (ra, rb) = (0.5 * (a.max - a.min).length(), 0.5 * (b.max - b.min).length());
        let (center, radius) = if ra <= rb { (a.center(), ra) } else { (frame.transform_point(b.center()), rb) };
        FoundAt { frame: *frame, normal, center, radius, turn: xa.rotation }
    };
    let old = last_step(input.cache, key, &mut out.cursor);
    if reuse_manifolds(input, old, (&xa, &frame), centers, Normals::OfA, &manifold, &mut out.order) {
        out.reused += 1;
    } else {
        let take = |out: &mut NarrowOut, pa: u32, pb: u32, m: &Manifold| {
            let sub = ((pa as u64) << 32) | pb as u64;
            // Made in its place in the job's list (a constraint is six cache lines).
            let c = out.push_fresh(Constraint::with_header(manifold(sub)));
            c.found = found(&frame, xa.inverse_transform_vector(m.normal));
            c.found_offset = centers.0 - centers.1;
            for p in m.points() {
                let half = 0.5 * p.separation * m.normal;
                let local = (xa.inverse_transform_point(p.point - half), xb.inverse_transform_point(p.point + half));
                push_local(c, p.point, m.normal, p.separation, p.id, local);
            }
            if let Some(e) = old.iter().find(|e| e.1 == sub) {
                c.warm_from(input.previous.get(e.2 as usize));
            }
        };
        let mut cache =
            gallop(input.axes, key, |e| e.0, &mut out.axis_cursor).first().map_or(SatCache::default(), |e| e.1);
        match collide_coherent(&sa.shape, &xa, &sb.shape, &xb, input.margin, &mut cache) {
            Some((m, test)) => {
                match test {
                    SatTest::Skipped => out.sat_skipped += 1,
                    SatTest::Cached => out.sat_cached += 1,
                    SatTest::Full => out.sat_full += 1,
                }
                if m.is_empty() {
                    out.axes.push((key, cache));
                } else {
                    take(out, 0, 0, &m);
                }
            }
            None => collide_all(&sa.shape, &xa, &sb.shape, &xb, input.margin, &mut |pa, pb, m: &Manifold| {
                take(out, pa, pb, m)
            }),
        }
    }
    if out.order.len() == before {
        return;
    }
    // An awake dynamic or moving body touching a sleeping one wakes it.
    let wakes = |(set, row): (SetKind, usize)| {
        let s = bodies.set(set);
        set == SetKind::Awake
            && (s.inv_mass[row] > 0.0 || s.linear_velocity[row] != Vec3::ZERO || s.angular_velocity[row] != Vec3::ZERO)
    };
    let sleeping =
        |(set, row): (SetKind, usize)| set == SetKind::Resting && bodies.resting.flags[row] & flags::STATIC == 0;
    if sleeping((set_a, row_a)) && wakes((set_b, row_b)) {
        out.wake.push(slot_a);
    } else if sleeping((set_b, row_b)) && wakes((set_a, row_a)) {
        out.wake.push(slot_b);
    }
}

/// A pair reuses its manifold while none of its points has slid more than this (m)
/// along the other surface since the manifold was found: the points' positions are
/// then off by at most a fifth of the linear slop.
const REUSE_SLIDE: f32 = 0.4 * super::LINEAR_SLOP;

/// ... and while no point of the smaller shape has come closer or gone farther than
/// this (m) along the normal, by translation or by tilt: a feature outside the
/// manifold cannot have come much nearer than it was.
const REUSE_LIFT: f32 = super::LINEAR_SLOP;

/// Adds a point with its surface points in the shapes' frames (see `reuse_manifolds`).
fn push_local(c: &mut Constraint, point: Vec3, normal: Vec3, separation: f32, id: u32, local: (Vec3, Vec3)) {
    c.push(point, normal, separation, id);
    let s = &mut c.surface[c.count as usize - 1];
    (s.a, s.b) = local;
}

/// Last step's `(key, sub, index)` entries of the pair or terrain item `key`, in `sub`
/// order. `cursor` is where the job's last search ended: a job's keys mostly rise
/// (its pairs are in key order), so the search gallops forward from there and
/// costs a step or two instead of a binary search over the whole cache.
fn last_step<'a>(cache: &'a [(u64, u64, u32)], key: u64, cursor: &mut usize) -> &'a [(u64, u64, u32)] {
    gallop(cache, key, |e| e.0, cursor)
}

/// The entries of `items` (sorted by `key_of`) with key `key`, searched forward from
/// `cursor` (see [`last_step`]); `cursor` moves past them.
fn gallop<'a, T>(items: &'a [T], key: u64, key_of: impl Fn(&T) -> u64, cursor: &mut usize) -> &'a [T] {
    let mut lo = (*cursor).min(items.len());
    if lo > 0 && key_of(&items[lo - 1]) >= key {
        lo = 0;
    }
    // Everything before `lo` is below `key`; probe 1, 2, 4, ... entries further.
    let mut step = 1;
    while lo + step - 1 < items.len() && key_of(&items[lo + step - 1]) < key {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(items.len());
    let start = lo + items[lo..hi].partition_point(|e| key_of(e) < key);
    let end = start + items[start..].iter().take_while(|e| key_of(e) == key).count();
    *cursor = end;
    &items[start..end]
}

/// Where a reused manifold's normals come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Normals {
    /// The one normal found (`FoundAt::normal`, in A's shape frame), kept in the
    /// world as it was then (`FoundAt::turn`): it does not turn with A.
    OfA,
    /// Each point's own, fixed in the world: terrain, whose triangles never move.
    World,
}

/// Jolt's body pair cache, with a bound on the error. When last step had manifolds
/// (`old`) for a pair, pushes them again (made by `manifold(sub)`) instead of colliding
/// the shapes, and returns true, if since they were found (B's placement in A's frame
/// was `found.frame` then and is `xf.1` now; A's is `xf.0`; the bodies' origins are
/// `centers`):
/// - no point has slid more than [`REUSE_SLIDE`] along the surface: the tangential
///   part of the offset between its two surface points, one fixed in each shape;
/// - the smaller shape's bounding sphere has not moved more than [`REUSE_LIFT`] along
///   the normal, its centre's motion plus its radius times the sine of the tilt (the
///   normal's turn).
///
/// Each point's surface points are fixed in the shapes' frames, so its separation
/// follows the bodies' present placements exactly however far they have moved along
/// the normal; its position is off by at most half its slide, and
/// the normal by the tilt. The reference placement stays the one where the manifolds
/// were found, so slow creep cannot add up past the bounds. A resting stack collides
/// once, then only when something moves. (Jolt's test, 1 mm of B's origin and 2° of
/// turn, lets a corner of a 1 m box move 15 mm; parry's, 1 mm of slide per point and
/// 1° of tilt, bounds the points as here but not the rest of the shape.)
///
/// The first rule here bounded the whole sphere's motion, 2 mm in any direction: a
/// turn of 0.13° moved a 1 m box's corners that far, and `large_pyramid` collided 18%
/// of its pairs every step; with these rules 4% (`step_scene large_pyramid 60 1`,
/// counters of the last step: 12,322 and 14,292 of 14,950 pairs reused).
///
/// A pair's reused manifold keeps the linearization it was found with: its normal
/// stays the world normal of then, and each point's lever arms stay the arms of then
/// (`FoundAt::turn`, `FoundAt::offset`): they move with the bodies but do not turn
/// with them. Only the separations follow the bodies' present placements. Arms that
/// turned with the bodies carried a stack's load over each box's turned base: the
/// load of a leaning column then leaned it further, as a column on springs does, and
/// with the soft step's springs (30 Hz) a column of 16 boxes buckled, as did
/// `large_pyramid` out of its plane after 4 s; frozen, the load stays over the base
/// it was found on, as on rigid contacts, and both stand (rapier3d freezes its
/// recycled contacts' arms for the same reason). A fresh collision takes the
/// present geometry, so the arms are never off by more than the reuse bounds allow.
/// Terrain items keep following the shape (their normals are the world's already).
fn reuse_manifolds(
    input: &NarrowInput,
    entries: &[(u64, u64, u32)],
    xf: (&Isometry, &Isometry),
    centers: (Vec3, Vec3),
    normals: Normals,
    manifold: &dyn Fn(u64) -> Header,
    order: &mut Vec<u32>,
) -> bool {
    let (xa, frame) = xf;
    // Body A's origin in A's shape frame: its lever arms start there.
    let origin_a = xa.inverse_transform_point(centers.0);
    let before = order.len();
    // One pass: each entry is renewed where it is while it is checked, and a failed
    // check takes back the entries listed (about one pair in twenty in a resting
    // stack). What a failed entry had renewed by then (header, points, impulses of
    // repeated ids) is none of what the fresh manifolds then take from it: the ids
    // and each id's first impulse (`Constraint::warm_from`).
    for e in entries {
        // SAFETY: last step's constraints of this pair or terrain item are touched by
        // this item alone: the cache lists each under one key, and each key is one
        // item, which one job collides.
        let c = unsafe { input.previous.get_unchecked(e.2 as usize) };
        let found = c.found;
        // The turn since (in A's frame), and the motion of the sphere's centre.
        let turn = frame.rotation * found.frame.rotation.conjugate();
        let arm = found.center - found.frame.translation;
        let moved = turn * arm - arm + (frame.translation - found.frame.translation);
        let n = found.normal;
        // A point at distance d from the centre moves along the normal by at most
        // d sin(tilt) (to first order in the tilt) more than the centre.
        let lift = moved.dot(n).abs() + n.cross(turn * n).length() * found.radius;
        // (Written so that NaN is not close.)
        let close = lift <= REUSE_LIFT;
        if !close {
            order.truncate(before);
            return false;
        }
        // Last step's constraint made anew: the header, the points' positions,
        // normals and separations, and the impulses `warm_from` would take. Its other
        // solver fields are stale until the prepare rewrites them, before anything
        // reads them.
        c.set_header(manifold(c.sub));
        // The frozen linearization: the normal and lever arms as they were found,
        // moved with the bodies but not turned with them (see the notes above).
        let frozen_normal = found.turn * n;
        let count = c.count as usize;
        for (p, s) in c.points[..count].iter_mut().zip(&c.surface[..count]) {
            // From A's surface point to B's, in A's frame: its part along the surface
            // is the slide; its middle is the point, its part along the normal the
            // separation (`pb - pa` turned into the world, dotted with the normal).
            let d = frame.transform_point(s.b) - s.a;
            let close = (d - n * d.dot(n)).length_squared() <= REUSE_SLIDE * REUSE_SLIDE;
            if !close {
                order.truncate(before);
                return false;
            }
            (p.point, p.normal) = match normals {
                Normals::OfA => (centers.0 + found.turn * (s.a + 0.5 * d - origin_a), frozen_normal),
                Normals::World => (xa.transform_point(s.a + 0.5 * d), p.normal),
            };
            p.separation = xa.transform_vector(d).dot(p.normal);
        }
        order.push(KEPT | e.2);
        c.rewarm_in_place();
    }
    !entries.is_empty()
}

/// A stable 32-bit id of a terrain triangle.
fn triangle_id(chunk: IVec3, index: u32) -> u32 {
    let mut h = 0x811c9dc5u32;
    for x in [chunk.x as u32, chunk.y as u32, chunk.z as u32, index] {
        h = (h ^ x).wrapping_mul(0x01000193);
    }
    h
}

fn collide_terrain(input: &NarrowInput, proxy: ProxyId, contacts: std::ops::Range<u32>, out: &mut NarrowOut) {
    let Some(terrain) = input.terrain else { return };
    let bodies = input.bodies;
    let (slot, shape_index) = shape_ref(input.tree.user_data(proxy));
    let shape = &bodies.shapes_of_slot(slot)[shape_index as usize];
    if shape.def.sensor {
        return;
    }
    let xf = shape_transform(bodies, slot, shape);
    let region = shape.shape.aabb(&xf).expanded(input.margin);
    // The chunks to gather from: the shape's solid contacts (a shape touching more
    // than 27 chunks gathers every step: its list is not recorded).
    let contacts = &input.terrain_contacts[contacts.start as usize..contacts.end as usize];
    let solid = |c: &&TerrainContact| c.kind == ContactKind::Solid;
    let chunk_count = contacts.iter().filter(solid).count();
    let mut chunks = [IVec3::ZERO; 27];
    let listed = chunk_count <= chunks.len();
    if listed {
        for (slot, c) in chunks.iter_mut().zip(contacts.iter().filter(solid)) {
            *slot = c.chunk;
        }
    }
    let chunks = if listed { &chunks[..chunk_count] } else { &[][..] };
    let revision = terrain.revision();
    let kept = match input.kept.find(proxy.0, revision, &region, chunks).filter(|_| listed) {
        Some((from, i)) => {
            out.gathered.push_from(from, i);
            #[cfg(debug_assertions)]
            check_kept(terrain, contacts, &region, out.gathered.last().2);
            true
        }
        None => {
            let (set, row) = bodies.place_of_slot(slot).expect("live body");
            let motion = bodies.set(set).linear_velocity[row] * (GATHER_PREDICTION * input.dt);
            let mut fat = region.expanded(GATHER_MARGIN);
            fat.min += motion.min(Vec3::ZERO);
            fat.max += motion.max(Vec3::ZERO);
            out.triangles.clear();
            out.triangle_ids.clear();
            for contact in contacts.iter().filter(solid) {
                let Some(mesh) = terrain.chunk_mesh(contact.chunk) else { continue };
                mesh.query_aabb(&fat, |index| {
                    out.triangles.push(mesh.triangle(index));
                    out.triangle_ids.push(triangle_id(contact.chunk, index));
                    true
                });
            }
            out.triangles.finish(false);
            let fat = if listed { fat } else { Aabb::EMPTY };
            let t = &out.triangles;
            out.gathered.push((proxy.0, revision, fat), chunks, (t.triangles(), t.active(), &out.triangle_ids));
            let parts = hull_parts(&shape.shape);
            out.gathered.add_axes(parts);
            if let Some((old, i)) = input.kept.set_of(proxy.0).filter(|_| parts > 0) {
                out.gathered.carry_axes(old, i, parts);
            }
            false
        }
    };
    if out.gathered.last().0.is_empty() {
        return;
    }
    let friction = mix_friction(shape.def.friction, input.terrain_friction);
    let key = ((proxy.0 as u64) << 32) | TERRAIN as u64;
    let manifold = |sub: u64| {
        let part = part_of(&shape.shape, (sub >> 8) as u32);
        Header {
            key,
            sub,
            body_a: slot,
            body_b: NONE,
            friction,
            restitution: shape.def.restitution,
            rolling_resistance: shape.def.rolling_resistance * rolling_radius(part),
            round_a: rolling_radius(part),
            round_b: 0.0,
        }
    };
    let last = last_step(input.cache, key, &mut out.cursor);
    // The terrain's placement in the shape's frame: B's, for `reuse_manifolds`.
    let frame = xf.inverse();
    // Kept triangles mean an unedited terrain since they were gathered, and so since
    // last step's manifolds were found (every step in between kept them too).
    let world = (&xf, &frame);
    let (set, row) = bodies.place_of_slot(slot).expect("live body");
    let centers = (bodies.set(set).position[row], Vec3::ZERO);
    if kept && reuse_manifolds(input, last, world, centers, Normals::World, &manifold, &mut out.order) {
        out.reused_terrain += 1;
        return;
    }
    let bounds = shape.shape.local_aabb();
    let (center, radius) = (bounds.center(), 0.5 * (bounds.max - bounds.min).length());
    let part = |index: u32, part: &Shape, part_xf: &Isometry, out: &mut NarrowOut| {
        out.candidates.clear();
        let (((triangles, active, ids), axes), candidates) = (out.gathered.last_with_axes(index), &mut out.candidates);
        let mut axes = TriangleAxes::new(axes);
        let keep = (!axes.axes.is_empty()).then_some(&mut axes);
        collide_triangles_with(triangles, active, part, part_xf, input.margin, keep, &mut |t, m: &Manifold| {
            let tid = ids[t as usize].wrapping_mul(0x9e3779b1);
            for p in m.points() {
                candidates.push(Candidate {
                    point: p.point,
                    normal: m.normal,
                    separation: p.separation,
                    id: tid ^ p.id,
                    group: 0,
                });
            }
        });
        (out.sat_full, out.sat_cached) = (out.sat_full + axes.full, out.sat_cached + axes.cached);
        out.sat_skipped += axes.skipped;
        if out.candidates.is_empty() {
            return;
        }
        // Cluster by normal (in candidate order), so a shape in a crease gets one
        // constraint per face it rests on, each with up to four points.
        let mut normals = [Vec3::ZERO; MAX_CLUSTERS];
        let mut clusters = 0;
        for cand in out.candidates.iter_mut() {
            let found = (0..clusters).find(|&g| normals[g].dot(cand.normal) > CLUSTER_COS);
            cand.group = match found {
                Some(g) => g as u8,
                None if clusters < MAX_CLUSTERS => {
                    normals[clusters] = cand.normal;
                    clusters += 1;
                    clusters as u8 - 1
                }
                None => (0..clusters)
                    .max_by(|&a, &b| normals[a].dot(cand.normal).total_cmp(&normals[b].dot(cand.normal)))
                    .expect("a cluster") as u8,
            };
        }
        out.candidates.sort_by_key(|c| c.group);
        let mut start = 0;
        while start < out.candidates.len() {
            let group = out.candidates[start].group;
            let end = start + out.candidates[start..].iter().take_while(|c| c.group == group).count();
            let mut c = Constraint::with_header(manifold(((index as u64) << 8) | group as u64));
            let old = last.iter().find(|e| e.1 == c.sub).map(|e| input.previous.get(e.2 as usize));
            reduce(&mut out.candidates[start..end], old, &mut c);
            // Surface points in the shape's frame and in the world's, as a pair's
            // (see `collide_pair`), for later steps to reuse.
            let normal = xf.inverse_transform_vector(normals[group as usize]);
            c.found = FoundAt { frame, normal, center, radius, turn: xf.rotation };
            c.found_offset = Vec3::ZERO;
            let count = c.count as usize;
            for (p, s) in c.points[..count].iter().zip(&mut c.surface[..count]) {
                let half = 0.5 * p.separation * p.normal;
                (s.a, s.b) = (xf.inverse_transform_point(p.point - half), p.point + half);
            }
            if let Some(old) = old {
                c.warm_from(old);
            }
            out.push_fresh(c);
            start = end;
        }
    };
    match &shape.shape {
        Shape::Compound(compound) => {
            for (i, p) in compound.parts().iter().enumerate() {
                part(i as u32, &p.shape, &xf.mul(&p.pose), out);
            }
        }
        other => part(0, other, &xf, out),
    }
}

/// Checks that kept triangles (by `ids`) include every triangle a fresh query of
/// `region` finds in the shape's solid chunks: what reusing them relies on.
#[cfg(debug_assertions)]
fn check_kept(terrain: &Terrain, contacts: &[TerrainContact], region: &Aabb, ids: &[u32]) {
    for contact in contacts.iter().filter(|c| c.kind == ContactKind::Solid) {
        let Some(mesh) = terrain.chunk_mesh(contact.chunk) else { continue };
        mesh.query_aabb(region, |index| {
            let id = triangle_id(contact.chunk, index);
            assert!(ids.contains(&id), "kept triangles miss triangle {index} of chunk {}", contact.chunk);
            true
        });
    }
}

/// How far above the deepest candidate a point still counts as bearing load.
const SUPPORT_BAND: f32 = super::LINEAR_SLOP;

/// A last-step point is kept over a new one that scores at most this much better.
const KEEP: f32 = 0.8;

/// At most four of the candidates, stable from step to step, spanning the largest
/// support polygon of the points that bear load. Candidates within [`SUPPORT_BAND`] of
/// the deepest are chosen first, greedily, as in Jolt's and Bullet's manifold
/// reduction: the deepest point, the one farthest from it, the one making the largest
/// triangle, and the one adding the most area outside that triangle. At each choice a
/// last-step point (matched by feature id) wins when it scores at least [`KEEP`] of the
/// best, so near-equal scores do not flip the choice between steps and lose the warm
/// start. Only then do farther (speculative) candidates fill free slots: last step's
/// first, then repeatedly the one farthest from those chosen.
///
/// Two failures shaped this. Keeping speculative corners before touching points
/// balanced a box on its diagonal on uneven terrain. Keeping last step's points before
/// spreading (three of them 24 cm apart at one end of a box's edge, one on a slope)
/// left the box a seesaw on a two-point line while its true support was a quad: it
/// rocked over a convex ridge for good.
fn reduce(candidates: &mut [Candidate], old: Option<&Constraint>, c: &mut Constraint) {
    let deepest = candidates.iter().map(|p| p.separation).fold(f32::INFINITY, f32::min);
    // Load-bearing candidates to the front, each group in its original order.
    let mut near = 0;
    for i in 0..candidates.len() {
        if candidates[i].separation <= deepest + SUPPORT_BAND {
            candidates[near..=i].rotate_right(1);
            near += 1;
        }
    }
    let was_kept = |p: &Candidate| old.is_some_and(|o| o.points().iter().any(|q| q.id == p.id));
    let mut chosen = 0;
    while chosen < 4 && chosen < near {
        let (done, rest) = candidates.split_at(chosen);
        let rest = &rest[..near - chosen];
        let Some(pick) = (match chosen {
            // The deepest; a kept point within half a slop of it instead.
            0 => pick(rest, was_kept, |p| -p.separation, |best, s| s >= best - 0.5 * super::LINEAR_SLOP),
            1 => {
                let a = done[0].point;
                pick(rest, was_kept, |p| p.point.distance(a), |best, s| s >= KEEP * best).filter(|&(_, d)| d > 1e-4)
            }
            2 => {
                let (a, b) = (done[0].point, done[1].point);
                let area = |p: &Candidate| 0.5 * (b - a).cross(p.point - a).length();
                pick(rest, was_kept, area, |best, s| s >= KEEP * best).filter(|&(_, s)| s > 1e-6)
            }
            _ => {
                let tri = [done[0].point, done[1].point, done[2].point];
                let normal = (tri[1] - tri[0]).cross(tri[2] - tri[0]);
                let area = 0.5 * normal.length();
                let normal = normal.normalize_or_zero();
                // Area added outside the triangle, across its most exposed edge.
                let outside = |p: &Candidate| {
                    (0..3)
                        .map(|e| -0.5 * (tri[(e + 1) % 3] - tri[e]).cross(p.point - tri[e]).dot(normal))
                        .fold(0.0f32, f32::max)
                };
                match pick(rest, was_kept, outside, |best, s| s >= KEEP * best) {
                    Some(found) if found.1 > 0.05 * area => Some(found),
                    // Nothing widens the triangle much: the point farthest from it.
                    _ => {
                        let gap = |p: &Candidate| tri.iter().map(|q| q.distance(p.point)).fold(f32::INFINITY, f32::min);
                        pick(rest, was_kept, gap, |best, s| s >= KEEP * best).filter(|&(_, d)| d > 1e-4)
                    }
                }
            }
        }) else {
            break;
        };
        candidates.swap(chosen, chosen + pick.0);
        chosen += 1;
    }
    // Speculative points fill the free slots: last step's first, then repeatedly the
    // one farthest from those chosen (ties to the earlier candidate).
    for i in near..candidates.len() {
        if chosen < 4 && was_kept(&candidates[i]) {
            candidates.swap(chosen, i);
            chosen += 1;
        }
    }
    while chosen < 4 && chosen < candidates.len() {
        let mut best = (chosen, -1.0f32);
        for i in chosen..candidates.len() {
            let p = candidates[i].point;
            let d = candidates[..chosen].iter().map(|q| q.point.distance_squared(p)).fold(f32::INFINITY, f32::min);
            if d > best.1 {
                best = (i, d);
            }
        }
        if chosen > 0 && best.1 < 1e-8 {
            break;
        }
        candidates.swap(chosen, best.0);
        chosen += 1;
    }
    for p in &candidates[..chosen] {
        c.push(p.point, p.normal, p.separation, p.id);
    }
}

/// The index in `rest` and score of the best candidate by `score`, or of the best
/// kept one if `keep(best, its score)` allows it; ties go to the earlier candidate.
fn pick(
    rest: &[Candidate],
    was_kept: impl Fn(&Candidate) -> bool,
    score: impl Fn(&Candidate) -> f32,
    keep: impl Fn(f32, f32) -> bool,
) -> Option<(usize, f32)> {
    let better = |acc: Option<(usize, f32)>, (i, s): (usize, f32)| match acc {
        Some((_, b)) if b >= s => acc,
        _ => Some((i, s)),
    };
    let best = rest.iter().map(&score).enumerate().fold(None, better)?;
    let kept = rest.iter().enumerate().filter(|(_, p)| was_kept(p)).map(|(i, p)| (i, score(p))).fold(None, better);
    Some(kept.filter(|&(_, s)| keep(best.1, s)).unwrap_or(best))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The galloping search finds every key's entries (or none) from any cursor,
    /// for rising keys, falling keys and keys past either end.
    #[test]
    fn last_step_finds_the_entries_from_any_cursor() {
        let mut seed = 7u64;
        let mut rng = || ((crate::collide::tests::lcg(&mut seed) + 1.0) * 1e6) as u32;
        let mut cache = Vec::new();
        for key in 0..500u64 {
            for sub in 0..(rng() % 4) as u64 {
                cache.push((3 * key + 1, sub, cache.len() as u32));
            }
        }
        let expected = |key: u64| cache.iter().filter(|e| e.0 == key).copied().collect::<Vec<_>>();
        let mut cursor = 0;
        let mut keys: Vec<u64> = (0..1502).collect();
        keys.extend((0..3000).map(|_| (rng() % 1600) as u64));
        for key in keys {
            assert_eq!(last_step(&cache, key, &mut cursor), &expected(key)[..], "key {key}");
            assert!(cursor <= cache.len());
        }
        assert!(last_step(&[], 5, &mut cursor).is_empty());
    }

    fn candidate(x: f32, z: f32, separation: f32, id: u32) -> Candidate {
        Candidate { point: Vec3::new(x, 0.0, z), normal: -Vec3::Y, separation, id, group: 0 }
    }

    /// A box on uneven terrain touches at two diagonal corners (B, D) and at a point F
    /// on an edge between them, while corner A hovers 18 mm up. Last step kept A, B,
    /// C, D. The reduction must keep the load-bearing F and drop the hovering A (keeping
    /// A balanced the box on its diagonal and it rocked forever).
    #[test]
    fn reduction_keeps_load_bearing_points_over_hovering_ones() {
        let mut old = Constraint::new(1, 0, 0, NONE, 0.6, 0.0);
        for (x, z, s, id) in [(0.0, 1.0, 0.018, 5), (0.0, 0.0, 0.0, 1), (1.0, 0.0, 0.004, 4), (1.0, 1.0, 0.0, 2)] {
            old.push(Vec3::new(x, 0.0, z), -Vec3::Y, s, id);
        }
        let mut candidates = vec![
            candidate(0.0, 1.0, 0.018, 5),   // A: hovering corner, kept last step
            candidate(0.0, 0.0, -0.0004, 1), // B
            candidate(1.0, 0.0, 0.0038, 4),  // C
            candidate(0.8, 0.2, 0.002, 3),   // F: touching, between B and C
            candidate(1.0, 1.0, -0.0001, 2), // D
            candidate(0.95, 0.97, 0.001, 6), // E: right next to D
        ];
        let mut c = Constraint::new(1, 0, 0, NONE, 0.6, 0.0);
        reduce(&mut candidates, Some(&old), &mut c);
        let mut ids: Vec<u32> = c.points().iter().map(|p| p.id).collect();
        ids.sort();
        assert_eq!(ids, [1, 2, 3, 4]);
        // With room to spare, hovering points still fill free slots (speculative
        // contacts for a landing body).
        let mut few = vec![candidate(0.0, 0.0, 0.0, 1), candidate(1.0, 1.0, 0.015, 2)];
        let mut c = Constraint::new(1, 0, 0, NONE, 0.6, 0.0);
        reduce(&mut few, None, &mut c);
        assert_eq!(c.count, 2);
    }

    /// The last body awake in the rain (a box across a convex ridge, an edge on flat
    /// ground and a corner on a 12° slope; its centre of mass 6 cm from the line A-C)
    /// had these candidates. Last step kept three points at one end of the edge and
    /// one on the slope, so the box balanced on the line A-C and rocked between it and
    /// B-C' for good. The reduction must span the whole support: the box's centre over
    /// the chosen polygon, with B and C' in it.
    #[test]
    fn reduction_spans_the_support_polygon_rather_than_keeping_clustered_points() {
        let flat = -Vec3::Y;
        let slope = Vec3::new(0.195, -0.977, 0.09).normalize();
        let p =
            |x, y, z, n, separation, id| Candidate { point: Vec3::new(x, y, z), normal: n, separation, id, group: 0 };
        let mut candidates = vec![
            p(26.767, 17.0003, 208.0, flat, 0.00065, 0x6cdf5b53),
            p(26.836, 17.0, 207.836, flat, 0.00008, 0x6cdf5853),
            p(27.0, 17.009, 208.0, flat, 0.0182, 0x6cdf5852),
            p(26.836, 17.0, 207.836, flat, 0.00007, 0xaa8bc8ac),
            p(26.859, 16.9999, 207.781, flat, -0.00012, 0xaa8b48ad), // A
            p(27.0, 17.006, 207.840, flat, 0.0126, 0xaa8bc9ad),
            p(27.0, 17.009, 208.0, flat, 0.0182, 0xaa8bc9af),
            p(26.540, 17.0013, 208.540, flat, 0.00254, 0xd298352a), // B
            p(26.540, 17.0013, 208.540, flat, 0.00254, 0x74ec42c9),
            p(26.767, 17.0003, 208.0, flat, 0.00065, 0x74ec40c9), // between A and B
            p(27.0, 17.009, 208.0, flat, 0.0182, 0x74ec40c8),
            p(27.428, 17.0856, 209.0, slope, -0.00009, 0x90439f85), // C
            p(27.391, 17.0864, 209.088, slope, -0.00116, 0x9d9f126d), // C'
            p(27.428, 17.0856, 209.0, slope, -0.00009, 0x9d9f906c),
        ];
        let mut old = Constraint::new(1, 0, 0, NONE, 0.6, 0.0);
        for id in [0x6cdf5853, 0xaa8b48ad, 0x74ec40c9, 0x90439f85] {
            let c = candidates.iter().find(|c| c.id == id).unwrap();
            old.push(c.point, c.normal, c.separation, c.id);
        }
        let mut c = Constraint::new(1, 0, 0, NONE, 0.6, 0.0);
        reduce(&mut candidates, Some(&old), &mut c);
        let near =
            |x: f32, z: f32| c.points().iter().any(|q| (q.point.x - x).abs() < 0.01 && (q.point.z - z).abs() < 0.01);
        assert!(near(26.540, 208.540), "B kept: {:?}", c.points());
        assert!(near(27.391, 209.088), "C' kept: {:?}", c.points());
        // The centre of mass projects inside the chosen polygon (xz, convex hull).
        let centre = glam::Vec2::new(27.088, 208.417);
        let hull: Vec<glam::Vec2> = c.points().iter().map(|q| glam::Vec2::new(q.point.x, q.point.z)).collect();
        let inside = |a: glam::Vec2, b: glam::Vec2, c2: glam::Vec2| {
            let s = |u: glam::Vec2, v: glam::Vec2| (v - u).perp_dot(centre - u);
            let (x, y, z) = (s(a, b), s(b, c2), s(c2, a));
            (x >= 0.0 && y >= 0.0 && z >= 0.0) || (x <= 0.0 && y <= 0.0 && z <= 0.0)
        };
        let covered = (0..hull.len())
            .any(|i| (i + 1..hull.len()).any(|j| (j + 1..hull.len()).any(|k| inside(hull[i], hull[j], hull[k]))));
        assert!(covered, "centre {centre} outside the support {hull:?}");
    }
}
