//! Ray regions: a four-wide ray BVH ([`RayBvh`]) over each cube of 16^3 chunks that
//! rays keep reaching, walked instead of the chunks' kD trees.
//!
//! The chunk walk (`raycast.rs`) steps through every chunk cell along a ray and walks
//! a binary kD tree per chunk; its cost is the cells and the tree's many small nodes.
//! A region's tree holds the triangles of all its chunks, so a ray crosses a few
//! region cells (the same DDA, 128 voxels to a cell) and walks a shallow tree per
//! region, as a ray tracer walks a TLAS of instances and their BLASes.
//!
//! - **Same hits.** A region's triangles are its chunks' mesh triangles (the same
//!   vertex bits), in chunk order (`x`, then `y`, then `z`) and mesh order within a
//!   chunk, so the tree's tie-break (lowest triangle on equal `t`) is the chunk walk's
//!   `(t, chunk, triangle)` and both tests give the same `t` bits: a cast returns the
//!   same hit whether its regions have trees or not.
//! - **When a region gets its tree.** A region without one is walked chunk by chunk;
//!   once [`REGION_HEAT`] rays have reached it so, it is built (its chunks meshed,
//!   their triangles gathered, the tree built): casts of one ray build at most one
//!   region, a batch up to [`BATCH_REGION_BUILDS`] as parallel jobs. A stray ray never
//!   pays for a region it crosses once.
//! - **Edits.** An edit drops the trees of the regions whose chunks it re-shapes; they
//!   go back to the chunk walk and may be rebuilt [`REGION_COOLDOWN`] regenerations
//!   (world steps) later, so a region being dug every frame costs no rebuild per
//!   frame.
//! - **Memory.** The trees have a byte budget of their own, set with the chunk mesh
//!   cache's and equal to it; after a query the least recently used trees are dropped
//!   to fit (and wait out the cool-down before a rebuild), and a region whose tree
//!   would not fit alone is never built.

use std::sync::atomic::{AtomicU64, Ordering};

use glam::IVec3;

use super::cache::{evict_lru, CacheStats, MeshCache};
use super::raycast::{GridWalk, TerrainHit, SPILL};
use super::voxels::{CoordMap, Material, CHUNK};
use super::Terrain;
use crate::math::{triangle_normal, Ray};
use crate::spatial::{MeshHit, RayAim, RayBvh, StepWalk, TriMesh};

/// Chunks per region edge: the surface set's regions, so whether a region may have
/// triangles is whether the set has its block.
pub const REGION_CHUNKS: i32 = 1 << super::surface::REGION_SHIFT;
/// Ray walks that must reach a region without a tree before it gets one.
pub const REGION_HEAT: u32 = 64;
/// Regenerations ([`Terrain::regenerate`], once per world step) a region waits
/// before a rebuild after an edit or the budget dropped its tree.
pub const REGION_COOLDOWN: u64 = 30;
/// Region trees a batch of rays builds at most.
pub const BATCH_REGION_BUILDS: usize = 16;
/// The offset bit of a cell's own neighbour (`(0, 0, 0)`: 1 + 3 + 9).
const OWN: u32 = 13;
/// Bytes charged per region on top of its tree and tables.
const REGION_OVERHEAD: usize = 128;

/// The region (cube of 16^3 chunks) of chunk `c`.
pub fn region_of(c: IVec3) -> IVec3 {
    c.div_euclid(IVec3::splat(REGION_CHUNKS))
}

/// One region's tree and the tables that name its triangles.
#[derive(Debug, Default)]
struct Region {
    bvh: RayBvh,
    /// The region's chunks with triangles, in order, and the tree number of each
    /// one's first triangle.
    chunks: Vec<(IVec3, u32)>,
    materials: Vec<u8>,
    bytes: usize,
    /// The query round that last read this region.
    last_used: AtomicU64,
}

impl Region {
    /// Gathers the triangles of `chunks` (sorted, all meshed in `meshes`) and builds
    /// the tree (an empty one when they have no triangles).
    fn build(meshes: &MeshCache, chunks: &[IVec3], round: u64) -> Region {
        let mut mesh = TriMesh::new();
        let mut firsts = Vec::new();
        for &c in chunks {
            let Some(Some(kd)) = meshes.get(c) else { continue };
            firsts.push((c, mesh.triangles.len() as u32));
            for i in 0..kd.triangle_count() as u32 {
                let base = mesh.vertices.len() as u32;
                mesh.vertices.extend(kd.triangle(i));
                mesh.triangles.push([base, base + 1, base + 2]);
                mesh.materials.push(kd.material(i));
            }
        }
        // Chunk meshes hold finite vertices, so the build cannot fail.
        let bvh = RayBvh::build(&mesh).unwrap_or_default();
        let bytes = REGION_OVERHEAD + bvh.bytes() + mesh.materials.len() + firsts.len() * size_of::<(IVec3, u32)>();
        Region { bvh, chunks: firsts, materials: mesh.materials, bytes, last_used: AtomicU64::new(round) }
    }

    /// Takes the tree's hit on triangle `index` at `t` into `best` if it beats it
    /// (closer, or as close on a lower chunk and triangle).
    fn offer(&self, ray: &Ray, t: f32, index: u32, best: &mut Option<TerrainHit>) {
        let k = self.chunks.partition_point(|&(_, first)| first <= index) - 1;
        let (chunk, first) = self.chunks[k];
        let key = (t, chunk.to_array(), index - first);
        if best.is_some_and(|b| key >= (b.t, b.chunk.to_array(), b.triangle)) {
            return;
        }
        *best = Some(TerrainHit {
            t,
            point: ray.at(t),
            normal: triangle_normal(self.bvh.triangle(index)),
            material: Material(self.materials[index as usize]),
            chunk,
            triangle: index - first,
        });
    }
}

/// A region without a tree that rays have reached.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    heat: u32,
    /// The first regeneration tick at which it may be built.
    not_before: u64,
}

/// The regions' trees, the regions waiting for one, and their budget.
#[derive(Debug)]
pub(super) struct RayRegions {
    enabled: bool,
    ready: CoordMap<Region>,
    waiting: CoordMap<Waiting>,
    /// Regenerations so far: the cool-down's clock.
    tick: u64,
    round: u64,
    budget: usize,
    bytes: usize,
    triangles: usize,
    builds: u64,
    evictions: u64,
    invalidations: u64,
    /// Scratch of `evict_to_budget`.
    order: Vec<(u64, [i32; 3])>,
}

impl RayRegions {
    pub(super) fn new(budget: usize) -> RayRegions {
        RayRegions {
            enabled: true,
            ready: CoordMap::default(),
            waiting: CoordMap::default(),
            tick: 0,
            round: 1,
            budget,
            bytes: 0,
            triangles: 0,
            builds: 0,
            evictions: 0,
            invalidations: 0,
            order: Vec::new(),
        }
    }

    /// The trees' counters, as the mesh cache's: an entry is a region's tree.
    pub(super) fn stats(&self) -> CacheStats {
        CacheStats {
            entries: self.ready.len(),
            bytes: self.bytes,
            budget: self.budget,
            triangles: self.triangles,
            builds: self.builds,
            evictions: self.evictions,
            invalidations: self.invalidations,
        }
    }

    pub(super) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Turns the regions on or off; off drops every tree.
    pub(super) fn set_enabled(&mut self, on: bool) {
        self.enabled = on;
        if !on {
            self.clear();
        }
    }

    pub(super) fn set_budget(&mut self, budget: usize) {
        if budget > self.budget {
            // Regions too large for the old budget may fit now.
            for w in self.waiting.values_mut().filter(|w| w.not_before == u64::MAX) {
                w.not_before = 0;
            }
        }
        self.budget = budget;
        self.evict_to_budget();
    }

    /// Drops every tree and every region's heat (new meshes, new mode).
    pub(super) fn clear(&mut self) {
        self.ready.clear();
        self.waiting.clear();
        (self.bytes, self.triangles) = (0, 0);
    }

    pub(super) fn begin_round(&mut self) {
        self.round += 1;
    }

    /// One regeneration passed (the cool-down's clock).
    pub(super) fn tick(&mut self) {
        self.tick += 1;
    }

    /// Chunk `c`'s triangles may change: its region loses its tree and cools down.
    pub(super) fn invalidate(&mut self, c: IVec3) {
        let region = region_of(c);
        if let Some(r) = self.ready.remove(&region) {
            self.forget(&r);
            self.invalidations += 1;
            self.waiting.insert(region, Waiting { heat: 0, not_before: self.tick + REGION_COOLDOWN });
        } else if let Some(w) = self.waiting.get_mut(&region) {
            (w.heat, w.not_before) = (0, w.not_before.max(self.tick + REGION_COOLDOWN));
        }
    }

    /// A ray reached `region`, which has no tree; whether it should be built now.
    pub(super) fn warm(&mut self, region: IVec3) -> bool {
        let w = self.waiting.entry(region).or_insert(Waiting { heat: 0, not_before: 0 });
        w.heat = w.heat.saturating_add(1);
        w.heat >= REGION_HEAT && self.tick >= w.not_before
    }

    /// Takes the built `region`.
    fn insert(&mut self, coord: IVec3, region: Region) {
        self.waiting.remove(&coord);
        self.builds += 1;
        if region.bytes > self.budget {
            // Never fits: stays on the chunk walk until the budget grows.
            self.waiting.insert(coord, Waiting { heat: 0, not_before: u64::MAX });
            return;
        }
        (self.bytes, self.triangles) = (self.bytes + region.bytes, self.triangles + region.bvh.triangle_count());
        self.ready.insert(coord, region);
    }

    fn forget(&mut self, r: &Region) {
        self.bytes -= r.bytes;
        self.triangles -= r.bvh.triangle_count();
    }

    /// Drops the least recently used trees until the rest fit the budget; they
    /// cool down before a rebuild.
    pub(super) fn evict_to_budget(&mut self) {
        if self.bytes <= self.budget {
            return;
        }
        let used = |r: &Region| r.last_used.load(Ordering::Relaxed);
        evict_lru(&mut self.ready, &mut self.order, used, |coord, r| {
            self.bytes -= r.bytes;
            self.triangles -= r.bvh.triangle_count();
            self.evictions += 1;
            self.waiting.insert(coord, Waiting { heat: 0, not_before: self.tick + REGION_COOLDOWN });
            self.bytes > self.budget
        });
    }

    /// Checks the byte and triangle totals against the trees.
    pub(super) fn validate(&self) {
        assert_eq!(self.ready.values().map(|r| r.bytes).sum::<usize>(), self.bytes, "region byte total");
        let triangles: usize = self.ready.values().map(|r| r.bvh.triangle_count()).sum();
        assert_eq!(triangles, self.triangles, "region triangle total");
        for (coord, r) in &self.ready {
            assert!(r.chunks.iter().all(|&(c, _)| region_of(c) == *coord), "region {coord} holds a foreign chunk");
        }
    }
}

/// What a ray's walk over the regions found.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RegionPass {
    /// The closest hit in the regions with trees.
    pub best: Option<TerrainHit>,
    /// The first region the ray reached (before `best`) that may have triangles but
    /// has no tree: the chunk walk must finish the cast.
    pub missing: Option<IVec3>,
}

/// One ray's walk over the region grid: where it is, the regions of the current
/// cell still to walk, and what it found.
struct RegionWalk {
    ray: Ray,
    max_t: f32,
    aim: RayAim,
    grid: GridWalk,
    /// The current cell's neighbour bits still to walk, rotated so that the cell's
    /// own region comes first (see [`RegionWalk::next_region`]).
    fresh: u32,
    pass: RegionPass,
}

impl RegionWalk {
    /// The walk of `ray` (valid; `max_t` neither NaN nor negative); `None` when it
    /// meets no region.
    fn new(terrain: &Terrain, ray: &Ray, max_t: f32) -> Option<RegionWalk> {
        let (lo, hi) = terrain.geometry_bounds()?;
        let range = (region_of(lo - IVec3::ONE), region_of(hi + IVec3::ONE));
        let edge = (CHUNK * REGION_CHUNKS) as f32 * terrain.voxel_size();
        let (grid, fresh) = GridWalk::new(ray, max_t, edge, range, SPILL / REGION_CHUNKS as f32)?;
        let aim = RayAim::new(ray)?;
        let pass = RegionPass::default();
        Some(RegionWalk { ray: *ray, max_t, aim, grid, fresh: fresh.rotate_right(OWN), pass })
    }

    /// The largest `t` a hit may still have.
    fn limit(&self) -> f32 {
        self.pass.best.map_or(self.max_t, |b| b.t)
    }

    /// The next region whose tree the ray must walk, or `None` when the walk is
    /// over. The cell's own region comes first: its hit bounds the walks of the
    /// neighbours whose spill the ray comes near, which it usually prunes at their
    /// root. Regions without a tree that may have triangles are noted in `missing`.
    fn next_region<'t>(&mut self, terrain: &'t Terrain) -> Option<&'t Region> {
        let regions = &terrain.regions;
        loop {
            while self.fresh != 0 {
                let bit = (self.fresh.trailing_zeros() + OWN) % 32;
                self.fresh &= self.fresh - 1;
                let coord = self.grid.cell() + super::raycast::offset(bit);
                if let Some(region) = regions.ready.get(&coord) {
                    if region.last_used.load(Ordering::Relaxed) != regions.round {
                        region.last_used.store(regions.round, Ordering::Relaxed);
                    }
                    return Some(region);
                }
                if self.pass.missing.is_none() && terrain.surface.any_in_region(coord) {
                    self.pass.missing = Some(coord);
                }
            }
            self.fresh = self.grid.next(self.pass.best.map_or(f32::INFINITY, |b| b.t))?.rotate_right(OWN);
        }
    }

    /// Takes `region`'s closest hit (found under [`RegionWalk::limit`]).
    fn take(&mut self, region: &Region, hit: MeshHit) {
        region.offer(&self.ray, hit.t, hit.triangle, &mut self.pass.best);
        // Neighbours the segment up to the hit does not come near cannot hold a
        // closer one.
        self.fresh &= self.grid.near_until(self.limit()).rotate_right(OWN);
    }
}

/// Region walks in flight per job of a batch.
const REGION_LANES: usize = 16;

impl Terrain {
    /// Walks `ray` (valid; `max_t` neither NaN nor negative) over the region grid,
    /// walking the trees of the regions it reaches.
    pub(super) fn region_pass(&self, ray: &Ray, max_t: f32) -> RegionPass {
        let Some(mut walk) = RegionWalk::new(self, ray, max_t) else { return RegionPass::default() };
        while let Some(region) = walk.next_region(self) {
            if let Some(hit) = region.bvh.ray_closest_aimed(&walk.aim, walk.limit()) {
                walk.take(region, hit);
            }
        }
        walk.pass
    }

    /// [`Terrain::region_pass`] of `rays[i]` into `passes[i]` for every `i` whose
    /// ray and pass so far `pick` takes, with [`REGION_LANES`] walks in flight on
    /// this thread, each
    /// stepping its current tree a node at a time, so that the misses of one
    /// overlap the others' work (the 1M-triangle terrain's trees outgrow the
    /// caches). The same passes as one at a time.
    pub(super) fn region_passes_interleaved(
        &self,
        rays: &[Ray],
        max_t: f32,
        passes: &mut [RegionPass],
        pick: impl Fn(&Ray, &RegionPass) -> bool,
    ) {
        struct Lane<'t> {
            index: usize,
            walk: Option<RegionWalk>,
            region: Option<&'t Region>,
            tree: StepWalk,
        }
        let mut lanes: [Lane; REGION_LANES] =
            std::array::from_fn(|_| Lane { index: 0, walk: None, region: None, tree: StepWalk::default() });
        let mut next = 0;
        let mut busy = true;
        while busy {
            busy = false;
            for lane in &mut lanes {
                if let Some(region) = lane.region {
                    if region.bvh.step_walk(&mut lane.tree) {
                        busy = true;
                        continue;
                    }
                    let walk = lane.walk.as_mut().expect("a lane in a tree has a walk");
                    if let Some(hit) = lane.tree.hit() {
                        walk.take(region, hit);
                    }
                    lane.region = None;
                }
                // Between trees: the walk's next region, or the next ray once this
                // one's walk is over.
                loop {
                    let Some(walk) = &mut lane.walk else {
                        while next < rays.len() && !pick(&rays[next], &passes[next]) {
                            next += 1;
                        }
                        if next == rays.len() {
                            break;
                        }
                        let i = next;
                        next += 1;
                        passes[i] = RegionPass::default();
                        (lane.index, lane.walk) = (i, RegionWalk::new(self, &rays[i], max_t));
                        continue;
                    };
                    match walk.next_region(self) {
                        Some(region) => {
                            if region.bvh.start_walk(&mut lane.tree, &walk.aim, walk.limit()) {
                                lane.region = Some(region);
                                busy = true;
                                break;
                            }
                        }
                        None => {
                            passes[lane.index] = walk.pass;
                            lane.walk = None;
                        }
                    }
                }
            }
        }
    }

    /// The chunks of `region` that may have triangles, in chunk order, onto `out`.
    fn region_chunks(&self, region: IVec3, out: &mut Vec<IVec3>) {
        let base = region * REGION_CHUNKS;
        for x in 0..REGION_CHUNKS {
            for y in 0..REGION_CHUNKS {
                for z in 0..REGION_CHUNKS {
                    let c = base + IVec3::new(x, y, z);
                    if self.surface.contains(c) {
                        out.push(c);
                    }
                }
            }
        }
    }

    /// Builds `region`'s tree on this thread (its chunks meshed first).
    pub(super) fn build_region(&mut self, region: IVec3) {
        let mut chunks = std::mem::take(&mut self.needed);
        chunks.clear();
        self.region_chunks(region, &mut chunks);
        for &c in &chunks {
            self.meshes.build_one(&self.voxels, self.voxel_size, c);
        }
        let built = Region::build(&self.meshes, &chunks, self.regions.round);
        self.regions.insert(region, built);
        self.needed = chunks;
    }

    /// Builds the trees of `regions` (sorted, distinct): their chunks meshed as
    /// parallel jobs, then one job per tree.
    pub(super) fn build_regions(&mut self, regions: &[IVec3], jobs: crate::jobs::Jobs) {
        let mut chunks = std::mem::take(&mut self.needed);
        chunks.clear();
        let mut spans = Vec::with_capacity(regions.len());
        for &r in regions {
            let start = chunks.len();
            self.region_chunks(r, &mut chunks);
            spans.push((r, start..chunks.len(), Region::default()));
        }
        self.meshes.build(&self.voxels, self.voxel_size, &chunks, jobs);
        let (meshes, round) = (&self.meshes, self.regions.round);
        jobs.for_each_mut(&mut spans, |_, (_, span, out), _| {
            *out = Region::build(meshes, &chunks[span.clone()], round)
        });
        for (r, _, built) in spans {
            self.regions.insert(r, built);
        }
        self.needed = chunks;
    }
}
