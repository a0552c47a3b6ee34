//! Terrain ray casts: walk the chunk grid along the ray (3D DDA), test the kD trees
//! of the chunks whose triangles can be there, stop once the next cell starts beyond
//! the closest hit.
//!
//! Triangles spill half a voxel out of their chunk (see the mesher), so in each cell
//! the walk also tests the neighbours whose spill the ray's segment comes near, and
//! only chunks that can have triangles (mixed masks, or edited since the last
//! regeneration). Every chunk the ray comes within the spill of is a candidate of a
//! contiguous run of cells (a line crosses a 3^3 block once), so it is tested once,
//! in the first cell of its run. All of this is bit operations on 27-bit masks of
//! neighbour offsets: the offsets the segment comes near, less those the previous
//! cell covered (its mask shifted by one step), and the terrain's surface set
//! answers for all 27 neighbours in one query (`surface.rs`).
//!
//! A walk is resumable: when it needs a chunk whose mesh is not cached it stops and
//! names the chunk. A single cast builds it and goes on; a batch runs every ray until
//! it stops, builds all the chunks the batch named as parallel jobs, and repeats, so
//! chunks are meshed only when a ray really reaches them, and each only once.
//!
//! A ray's tree set-up (the triangle test's shear, see [`TreeWalk`]) is done once per
//! ray and carried from chunk tree to chunk tree. A batch's job keeps
//! [`RAY_LANES`] walks in flight and steps each a tree node at a time, prefetching
//! what the step after reads (as [`KdMesh::ray_closest_batch`] does), so on a terrain
//! whose cached meshes outgrow the CPU caches the misses of different rays overlap:
//! 10,000 rays over the 400^2-voxel hills (660k triangles meshed), 33 -> 22 ms.

use glam::{IVec3, Vec3};

use super::regions::RegionPass;
use super::surface::Neighbourhood;
use super::voxels::{Material, CHUNK};
use super::Terrain;
use crate::jobs::Column;
use crate::math::{triangle_normal, Aabb, Ray};
use crate::spatial::{KdMesh, MeshHit, TreeWalk, RAY_LANES};

/// How close (in chunks) a segment must come to a neighbour for its spill to
/// matter: half a voxel, plus slack for rounding.
pub(super) const SPILL: f32 = 0.5 / CHUNK as f32 + 1.0 / 1024.0;

/// The closest hit of a ray on the terrain surface.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TerrainHit {
    /// Ray parameter: `point = origin + t * dir`.
    pub t: f32,
    pub point: Vec3,
    /// The surface's unit normal, pointing out of the solid (a ray that starts inside
    /// solid terrain meets it with `normal . dir > 0`).
    pub normal: Vec3,
    pub material: Material,
    pub chunk: IVec3,
    /// Triangle index in the chunk's mesh.
    pub triangle: u32,
}

impl TerrainHit {
    /// Closer, or as close and from a lower (chunk, triangle): the tie-break that makes
    /// the result independent of the walk order.
    pub(super) fn beats(&self, other: &TerrainHit) -> bool {
        (self.t, self.chunk.to_array(), self.triangle) < (other.t, other.chunk.to_array(), other.triangle)
    }
}

/// Offset index `(dx + 1) + 3 (dz + 1) + 9 (dy + 1)` of a neighbour, bit in a mask.
pub(super) fn offset(bit: u32) -> IVec3 {
    IVec3::new(bit as i32 % 3 - 1, bit as i32 / 9 - 1, bit as i32 / 3 % 3 - 1)
}

/// A neighbour offset's weight in its bit index, per axis (x, y, z).
const WEIGHT: [u32; 3] = [1, 9, 3];

/// The neighbour bits whose offset on `axis` is not `d`.
const fn without(axis: usize, d: i32) -> u32 {
    let mut mask = 0;
    let mut bit = 0;
    while bit < 27 {
        if (bit / WEIGHT[axis]) % 3 != (d + 1) as u32 {
            mask |= 1 << bit;
        }
        bit += 1;
    }
    mask
}

/// `without(axis, 1)` and `without(axis, -1)` per axis.
const WITHOUT: [[u32; 2]; 3] =
    [[without(0, 1), without(0, -1)], [without(1, 1), without(1, -1)], [without(2, 1), without(2, -1)]];

/// The neighbour bits of the offsets picked per axis (bit 0: -1, bit 1: 0, bit 2: +1):
/// the x row, repeated at each picked z (shifts of 3), repeated at each picked y
/// (shifts of 9). The factors' bits are far enough apart that no product carries.
fn block(x: u32, y: u32, z: u32) -> u32 {
    let spread = |s: u32, w: u32| (s & 1) | (s & 2) << (w - 1) | (s & 4) << (2 * w - 2);
    x * spread(z, 3) * spread(y, 9)
}

/// What a walk does next (see [`RayWalk::next_chunk`]).
pub(crate) enum Next<'t> {
    /// The walk is over.
    Done,
    /// The chunk is not cached: mesh it, then go on.
    Build(IVec3),
    /// Walk this chunk's tree.
    Tree(IVec3, &'t KdMesh),
}

/// A walk along a ray through a grid of cubes (a 3D DDA), with the bookkeeping of
/// the neighbours whose spill the ray comes near: what the chunk walk and the
/// region walk (`regions.rs`) share. Coordinates are in cells.
#[derive(Clone, Debug)]
pub(super) struct GridWalk {
    /// The ray in cell units.
    origin: Vec3,
    dir: Vec3,
    cell: IVec3,
    /// The cell range walked (inclusive); leaving it ends the walk.
    bounds: (IVec3, IVec3),
    step: IVec3,
    t_next: Vec3,
    t_delta: Vec3,
    t_in: f32,
    t_end: f32,
    /// How close (in cells) the segment must come to a neighbour for it to count.
    spill: f32,
    /// The neighbours this cell's segment comes within the spill of (offset bits).
    covered: u32,
}

impl GridWalk {
    /// The walk of `ray` (valid, `max_t` not NaN nor negative) over cells of `edge`
    /// metres in the range `lo..=hi`, and the first cell's neighbour bits; `None`
    /// when the ray misses the range.
    pub(super) fn new(
        ray: &Ray,
        max_t: f32,
        edge: f32,
        (lo, hi): (IVec3, IVec3),
        spill: f32,
    ) -> Option<(GridWalk, u32)> {
        let world = Aabb::new(lo.as_vec3() * edge, (hi + IVec3::ONE).as_vec3() * edge);
        let (t_in, t_end) = ray.clip(&world, max_t)?;
        let (origin, dir) = (ray.origin / edge, ray.dir / edge);
        let cell = (origin + dir * t_in).floor().as_ivec3().clamp(lo, hi);
        let mut walk = GridWalk {
            origin,
            dir,
            cell,
            bounds: (lo, hi),
            step: IVec3::ZERO,
            t_next: Vec3::INFINITY,
            t_delta: Vec3::INFINITY,
            t_in,
            t_end,
            spill,
            covered: 0,
        };
        for axis in 0..3 {
            let d = dir[axis];
            if d != 0.0 {
                let boundary = cell[axis] + (d > 0.0) as i32;
                walk.step[axis] = d.signum() as i32;
                walk.t_delta[axis] = (1.0 / d).abs();
                walk.t_next[axis] = ((boundary as f32 - origin[axis]) / d).max(t_in);
            }
        }
        let fresh = walk.enter(0);
        Some((walk, fresh))
    }

    pub(super) fn cell(&self) -> IVec3 {
        self.cell
    }

    /// Steps into the next cell and returns its neighbour bits not covered before;
    /// `None` once the walk is over: the next cell starts beyond `limit` or the
    /// ray's end, or lies outside the range.
    pub(super) fn next(&mut self, limit: f32) -> Option<u32> {
        let axis = self.t_next.min_position();
        let t = self.t_next[axis];
        if t > self.t_end || t > limit {
            return None;
        }
        self.t_in = t;
        self.cell[axis] += self.step[axis];
        // Leaving the range ends the walk. The `t` test alone is not enough: far
        // from the origin (a ray from 1e30 m back to the terrain) `t_next + t_delta`
        // rounds to `t_next`, `t` stops growing and the walk never ended.
        if self.cell[axis] < self.bounds.0[axis] || self.cell[axis] > self.bounds.1[axis] {
            return None;
        }
        self.t_next[axis] += self.t_delta[axis];
        // Neighbour d of this cell is neighbour d + step of the previous one: a shift
        // of the previous cell's bits by the axis's weight, where that offset exists.
        let (w, keep) = (WEIGHT[axis], WITHOUT[axis]);
        let seen = if self.step[axis] > 0 { self.covered >> w & keep[0] } else { self.covered << w & keep[1] };
        Some(self.enter(seen))
    }

    /// The neighbours the current cell's segment comes within the spill of, less
    /// those the previous cell covered (`seen`).
    fn enter(&mut self, seen: u32) -> u32 {
        self.covered = self.near_until(f32::INFINITY);
        self.covered & !seen
    }

    /// The neighbours the current cell's segment, cut at `t`, comes within the
    /// spill of: once a hit is known, the neighbours that can no longer matter drop
    /// out. (A walk goes on to the next cell only when its start is before the hit,
    /// so the cut segment is then the whole one.)
    pub(super) fn near_until(&self, t: f32) -> u32 {
        let t_out = self.t_next.min_element().min(self.t_end).min(t);
        let (a, b) = (self.origin + self.dir * self.t_in, self.origin + self.dir * t_out);
        let (lo, hi) = (a.min(b) - self.cell.as_vec3(), a.max(b) - self.cell.as_vec3());
        let spill = self.spill;
        let pick = |a: usize| (lo[a] < spill) as u32 | 2 | ((hi[a] > 1.0 - spill) as u32) << 2;
        block(pick(0), pick(1), pick(2))
    }
}

/// The chunks among a cell's `fresh` neighbours that may have triangles.
fn candidates(grid: &GridWalk, fresh: u32, hood: &mut Neighbourhood) -> u32 {
    if fresh == 0 {
        0
    } else {
        hood.of(grid.cell(), fresh)
    }
}

/// The resumable state of one ray's walk. See the module docs.
#[derive(Clone, Debug)]
pub(crate) struct RayWalk {
    ray: Ray,
    /// Largest `t` a hit may have.
    max_t: f32,
    /// The chunk grid walk; `None` when done.
    grid: Option<GridWalk>,
    /// Candidate neighbours of this cell still to test (offset bits).
    pending: u32,
    pub(crate) best: Option<TerrainHit>,
}

impl RayWalk {
    /// `hood` answers for the terrain's surface set (a walk's neighbourhood, reused
    /// from walk to walk).
    pub(crate) fn new(terrain: &Terrain, ray: &Ray, max_t: f32, hood: &mut Neighbourhood) -> RayWalk {
        let mut walk = RayWalk { ray: *ray, max_t, grid: None, pending: 0, best: None };
        let Some((lo, hi)) = terrain.geometry_bounds() else { return walk };
        if !ray.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return walk;
        }
        // The chunks that may hold triangles, grown by one for the spill.
        let range = (lo - IVec3::ONE, hi + IVec3::ONE);
        let edge = CHUNK as f32 * terrain.voxel_size();
        if let Some((grid, fresh)) = GridWalk::new(ray, max_t, edge, range, SPILL) {
            walk.pending = candidates(&grid, fresh, hood);
            walk.grid = Some(grid);
        }
        walk
    }

    /// [`RayWalk::new`], starting from the closest hit `seed` found elsewhere.
    pub(crate) fn seeded(
        terrain: &Terrain,
        ray: &Ray,
        max_t: f32,
        seed: Option<TerrainHit>,
        hood: &mut Neighbourhood,
    ) -> RayWalk {
        let mut walk = RayWalk::new(terrain, ray, seed.map_or(max_t, |s| s.t), hood);
        (walk.max_t, walk.best) = (max_t, seed);
        walk
    }

    /// Sets `tree` up for this walk's ray. (A walk whose ray no triangle can hit is
    /// already done: `new` refuses rays without a finite, non-zero direction.)
    pub(crate) fn aim(&mut self, tree: &mut TreeWalk) {
        if self.grid.is_some() && !tree.aim(&self.ray) {
            self.grid = None;
        }
    }

    /// The next chunk whose tree the ray must walk, taken off the walk; or the chunk
    /// to mesh first (left on it, so the walk resumes there); or the end.
    pub(crate) fn next_chunk<'t>(&mut self, terrain: &'t Terrain, hood: &mut Neighbourhood) -> Next<'t> {
        while let Some(grid) = &mut self.grid {
            while self.pending != 0 {
                let bit = self.pending.trailing_zeros();
                let coord = grid.cell() + offset(bit);
                let Some(mesh) = terrain.meshes.get(coord) else { return Next::Build(coord) };
                self.pending &= !(1 << bit);
                if let Some(mesh) = mesh {
                    return Next::Tree(coord, mesh);
                }
            }
            let limit = self.best.map_or(f32::INFINITY, |b| b.t);
            match grid.next(limit) {
                Some(fresh) => self.pending = candidates(grid, fresh, hood),
                None => self.grid = None,
            }
        }
        Next::Done
    }

    /// The largest `t` a hit may still have: the closest hit's, or the cast's limit.
    pub(crate) fn limit(&self) -> f32 {
        self.best.map_or(self.max_t, |b| b.t)
    }

    /// Takes `hit`, the closest hit in chunk `coord`'s tree (`mesh`), if it beats
    /// the closest so far.
    pub(crate) fn offer(&mut self, coord: IVec3, mesh: &KdMesh, hit: MeshHit) {
        let hit = TerrainHit {
            t: hit.t,
            point: self.ray.at(hit.t),
            normal: triangle_normal(mesh.triangle(hit.triangle)),
            material: Material(mesh.material(hit.triangle)),
            chunk: coord,
            triangle: hit.triangle,
        };
        if self.best.is_none_or(|b| hit.beats(&b)) {
            self.best = Some(hit);
        }
    }

    /// Runs the walk on this thread until it finishes (`None`) or needs chunk
    /// `Some(coord)` meshed, walking each chunk's tree to the end with `tree` (aimed).
    pub(crate) fn advance(
        &mut self,
        terrain: &Terrain,
        tree: &mut TreeWalk,
        hood: &mut Neighbourhood,
    ) -> Option<IVec3> {
        loop {
            match self.next_chunk(terrain, hood) {
                Next::Done => return None,
                Next::Build(coord) => return Some(coord),
                Next::Tree(coord, mesh) => {
                    if tree.enter(mesh, self.limit()) {
                        tree.finish(mesh);
                        if let Some(hit) = tree.best() {
                            self.offer(coord, mesh, hit);
                        }
                    }
                }
            }
        }
    }
}

impl Terrain {
    /// The closest hit of `ray` on the terrain surface with `t` in `[0, max_t]`.
    /// The ray walks the trees of the regions it reaches (see `regions.rs`), and
    /// chunk by chunk where a region has none yet; chunks the ray reaches are meshed
    /// on first use and cached. At most one region gets its tree in a cast. The
    /// caches are trimmed to their budgets afterwards.
    pub fn ray_cast(&mut self, ray: &Ray, max_t: f32) -> Option<TerrainHit> {
        self.meshes.begin_round();
        self.regions.begin_round();
        let mut seed = None;
        if self.regions.enabled() && ray.is_valid() && !max_t.is_nan() && max_t >= 0.0 {
            let mut pass = self.region_pass(ray, max_t);
            if let Some(region) = pass.missing {
                if self.regions.warm(region) {
                    self.build_region(region);
                    pass = self.region_pass(ray, max_t);
                }
            }
            if pass.missing.is_none() {
                self.regions.evict_to_budget();
                return pass.best;
            }
            seed = pass.best;
        }
        let mut tree = TreeWalk::new();
        let mut hood = Neighbourhood::new(&self.surface);
        let mut walk = RayWalk::seeded(self, ray, max_t, seed, &mut hood);
        walk.aim(&mut tree);
        while let Some(coord) = walk.advance(self, &mut tree, &mut hood) {
            // Meshing leaves the surface set (and so the walk's region blocks) as it is.
            self.meshes.build_one(&self.voxels, self.voxel_size, coord);
        }
        self.meshes.evict_to_budget();
        self.regions.evict_to_budget();
        walk.best
    }

    /// [`Terrain::ray_cast`] for every ray, as parallel jobs: `hits[i]` is ray `i`'s
    /// closest hit. First every ray walks the region trees (16 walks in flight per
    /// job, each stepping its tree a node at a time); the regions rays reached
    /// without a tree warm up, and those now due (at most
    /// [`BATCH_REGION_BUILDS`](super::BATCH_REGION_BUILDS), lowest first) are built as
    /// jobs and their rays walked again. The rays that still reached a region without
    /// a tree finish chunk by chunk: rounds of "walk every ray until it needs a mesh"
    /// and "mesh every chunk named, in parallel" repeat until all are done. Within a
    /// job, [`RAY_LANES`] chunk walks are interleaved a tree node at a time, as in
    /// [`KdMesh::ray_closest_batch`], so their cache misses overlap. The result does
    /// not depend on the worker count. Panics if `hits` and `rays` differ in length.
    pub fn ray_cast_batch(
        &mut self,
        rays: &[Ray],
        max_t: f32,
        hits: &mut [Option<TerrainHit>],
        jobs: crate::jobs::Jobs,
    ) {
        assert_eq!(rays.len(), hits.len(), "one hit slot per ray");
        self.meshes.begin_round();
        self.regions.begin_round();
        // The scratch lists, taken out so the walks can read the terrain beside them.
        let (mut walks, mut needed) = (std::mem::take(&mut self.batch_walks), std::mem::take(&mut self.batch_needed));
        let mut passes = std::mem::take(&mut self.batch_passes);
        passes.clear();
        passes.resize(rays.len(), RegionPass::default());
        // Rays whose cast the chunk walk finishes: every one when the regions are off.
        let usable = !max_t.is_nan() && max_t >= 0.0;
        let regions_on = self.regions.enabled() && usable;
        for (pass, ray) in passes.iter_mut().zip(rays) {
            pass.missing = (!regions_on || !ray.is_valid()).then_some(IVec3::ZERO);
        }
        if regions_on {
            self.region_passes(rays, max_t, &mut passes, jobs, false);
            needed.clear();
            for (pass, _) in passes.iter().zip(rays).filter(|(_, ray)| ray.is_valid()) {
                if let Some(region) = pass.missing {
                    if self.regions.warm(region) {
                        needed.push(region);
                    }
                }
            }
            needed.sort_unstable_by_key(|c| c.to_array());
            needed.dedup();
            needed.truncate(super::BATCH_REGION_BUILDS);
            if !needed.is_empty() {
                self.build_regions(&needed, jobs);
                self.region_passes(rays, max_t, &mut passes, jobs, true);
            }
        }
        let mut hood = Neighbourhood::new(&self.surface);
        walks.clear();
        for (i, (pass, ray)) in passes.iter().zip(rays).enumerate() {
            hits[i] = pass.best;
            if pass.missing.is_some() {
                walks.push((RayWalk::seeded(self, ray, max_t, pass.best, &mut hood), None, i));
            }
        }
        for round in 0.. {
            let terrain = &*self;
            let blocks = Column::new(&mut walks);
            jobs.parallel_for(0..blocks.len(), BATCH_BLOCK, |range, _| {
                // SAFETY: `parallel_for` hands each chunk of the range to one job.
                walk_interleaved(terrain, unsafe { blocks.rows(range) }, round == 0)
            });
            needed.clear();
            needed.extend(walks.iter().filter_map(|(_, need, _)| *need));
            self.meshes.evict_to_budget();
            if needed.is_empty() {
                break;
            }
            self.meshes.begin_round();
            self.meshes.build(&self.voxels, self.voxel_size, &needed, jobs);
        }
        for (walk, _, i) in &walks {
            hits[*i] = walk.best;
        }
        self.regions.evict_to_budget();
        (self.batch_walks, self.batch_needed, self.batch_passes) = (walks, needed, passes);
    }

    /// The region pass of every valid ray (`max_t` usable) as parallel jobs, or
    /// (`again`) of those whose pass met a region without a tree.
    fn region_passes(&self, rays: &[Ray], max_t: f32, passes: &mut [RegionPass], jobs: crate::jobs::Jobs, again: bool) {
        let blocks = Column::new(passes);
        jobs.parallel_for(0..rays.len(), BATCH_BLOCK, |range, _| {
            // SAFETY: `parallel_for` hands each chunk of the range to one job.
            let passes = unsafe { blocks.rows(range.clone()) };
            let pick = |ray: &Ray, pass: &RegionPass| ray.is_valid() && (!again || pass.missing.is_some());
            self.region_passes_interleaved(&rays[range], max_t, passes, pick);
        });
    }
}

/// Rays per job of a batch.
const BATCH_BLOCK: usize = 128;

/// Runs the walks of `block` (all of them in the first round, else those stopped for
/// a mesh) until each finishes or needs a mesh, [`RAY_LANES`] at a time: each lane
/// steps its current chunk tree a node per turn (see [`KdMesh::ray_closest_batch`]),
/// and between trees finds its walk's next chunk, or takes the next walk.
fn walk_interleaved(terrain: &Terrain, block: &mut [(RayWalk, Option<IVec3>, usize)], first_round: bool) {
    struct Lane<'t> {
        /// The walk in `block`, or `usize::MAX` when idle.
        walk: usize,
        /// The chunk whose tree `tree` is walking.
        chunk: Option<(IVec3, &'t KdMesh)>,
        tree: TreeWalk,
    }
    let mut lanes: [Lane; RAY_LANES] =
        std::array::from_fn(|_| Lane { walk: usize::MAX, chunk: None, tree: TreeWalk::new() });
    // One neighbourhood for all lanes: it reloads its blocks only when the regions
    // around the cell asked about change, which rays in the same part of the
    // terrain share.
    let mut hood = Neighbourhood::new(&terrain.surface);
    let mut next = 0;
    let mut busy = true;
    while busy {
        busy = false;
        for lane in &mut lanes {
            if let Some((coord, mesh)) = lane.chunk {
                if !lane.tree.done() {
                    lane.tree.step(mesh);
                    busy = true;
                    continue;
                }
                if let Some(hit) = lane.tree.best() {
                    block[lane.walk].0.offer(coord, mesh, hit);
                }
                lane.chunk = None;
            }
            // Between trees: the walk's next chunk whose box the ray meets, or the
            // next walk once this one finishes or stops for a mesh.
            loop {
                if lane.walk == usize::MAX {
                    while next < block.len() && !(first_round || block[next].1.is_some()) {
                        next += 1;
                    }
                    if next == block.len() {
                        break;
                    }
                    lane.walk = next;
                    next += 1;
                    block[lane.walk].0.aim(&mut lane.tree);
                }
                let (walk, need, _) = &mut block[lane.walk];
                match walk.next_chunk(terrain, &mut hood) {
                    Next::Done => {
                        *need = None;
                        lane.walk = usize::MAX;
                    }
                    Next::Build(coord) => {
                        *need = Some(coord);
                        lane.walk = usize::MAX;
                    }
                    Next::Tree(coord, mesh) => {
                        if lane.tree.enter(mesh, walk.limit()) {
                            lane.tree.prefetch_root(mesh);
                            lane.chunk = Some((coord, mesh));
                            busy = true;
                            break;
                        }
                    }
                }
            }
        }
    }
}
