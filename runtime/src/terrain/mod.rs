//! Voxel terrain: sparse 8^3 chunks of material bytes, the per-chunk bit broadphase
//! (dilated solid/water masks), box overlap queries against it, per body-chunk
//! contact management, and the narrowphase data: chunk meshes (surface nets) with
//! loose kD trees, built lazily into an LRU cache, for triangle queries and ray casts.
//!
//! Coordinates: voxel `v` covers `[v * voxel_size, (v + 1) * voxel_size)` on each
//! axis; chunk `c` holds voxels `8c .. 8c + 8`.

mod cache;
mod contacts;
mod generate;
mod journal;
mod masks;
mod mesher;
mod raycast;
mod regions;
mod surface;
mod voxels;

use glam::{IVec3, Vec3};

pub use cache::{build_chunk, CacheStats, MeshCache, CACHE_ENTRY_OVERHEAD, DEFAULT_CACHE_BUDGET};
pub use contacts::{ContactKind, TerrainContact, TerrainContacts};
pub use generate::generate_hills;
pub use journal::TerrainEdits;
pub use masks::{build_mask, neighbour_index, ChunkMask, Masks, X_RANGE, Z_RANGE};
pub use mesher::{chunk_mesh_bounds, mesh_chunk};
pub use raycast::TerrainHit;
pub use regions::{region_of, BATCH_REGION_BUILDS, REGION_CHUNKS, REGION_COOLDOWN, REGION_HEAT};
pub use voxels::{chunk_of, local_of, Chunk, CoordMap, Material, Occupancy, Voxels, CHUNK};

use crate::jobs::{chunk_count, Jobs};
use crate::math::Aabb;
use crate::spatial::{KdMesh, MeshMode};
use surface::SurfaceChunks;

/// What a box touches in the terrain's dilated masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overlap {
    pub solid: bool,
    pub water: bool,
}

impl Overlap {
    pub fn any(self) -> bool {
        self.solid || self.water
    }
}

/// Memory figures of the broadphase data.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MaskStats {
    /// Chunks with masks (geometry).
    pub mixed_chunks: usize,
    /// Chunks tagged all solid or all water (no masks).
    pub full_chunks: usize,
    /// Bytes of mask data (`mixed_chunks * 128`).
    pub mask_bytes: usize,
    /// Bytes of the ray walks' set of chunks with surface (one bit per chunk in
    /// 512-byte blocks of 16^3 chunks, plus map slots).
    pub surface_bytes: usize,
}

/// One triangle of the terrain surface, as triangle queries report it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TerrainTriangle {
    pub chunk: IVec3,
    /// Index in the chunk's mesh.
    pub index: u32,
    pub vertices: [Vec3; 3],
    pub material: Material,
}

/// Voxels plus their broadphase masks and cached chunk meshes. Edits mark chunks
/// dirty and drop their cached meshes; [`Terrain::regenerate`] rebuilds the dirty
/// chunks' masks as parallel jobs.
#[derive(Debug)]
pub struct Terrain {
    voxel_size: f32,
    voxels: Voxels,
    masks: CoordMap<ChunkMask>,
    dirty: CoordMap<()>,
    /// The chunks [`Terrain::may_have_triangles`] names, for ray walks.
    surface: SurfaceChunks,
    meshes: MeshCache,
    /// Ray BVHs over cubes of chunks, for ray casts.
    regions: regions::RayRegions,
    /// Chunk range of every chunk ever dirtied: all chunks with geometry lie inside.
    geometry: Option<(IVec3, IVec3)>,
    /// Scratch of `regenerate`: the dirty list (sorted) and its results.
    dirty_list: Vec<IVec3>,
    results: Vec<Option<ChunkMask>>,
    /// Scratch of `prepare_meshes`: a bit per chunk asked about, set when it must be
    /// meshed (64 per word, a word per job), and those chunks.
    missing: Vec<u64>,
    needed: Vec<IVec3>,
    /// Scratch of `query_triangles`: the chunks a box touches.
    query_chunks: Vec<IVec3>,
    /// Scratch of `fill`: the chunks whose masks an edit makes stale.
    touched: Vec<IVec3>,
    /// Scratch of `ray_cast_batch`: the walks and the chunks they wait for.
    batch_walks: Vec<(raycast::RayWalk, Option<IVec3>, usize)>,
    batch_needed: Vec<IVec3>,
    batch_passes: Vec<regions::RegionPass>,
    /// Bumped by every change of the triangles a query can return (edits, mesh mode).
    revision: u64,
    /// Per chunk whose geometry an edit may have changed: the [`Terrain::edit_stamp`]
    /// of its last such edit (for copies of the geometry elsewhere, e.g. on a GPU).
    chunk_stamps: CoordMap<u64>,
    edit_stamp: u64,
    /// Names the masks as they are (see [`Terrain::mask_stamp`]).
    mask_stamp: u64,
    /// The edits since the base, for world snapshots (`None` before a base is set).
    journal: Option<journal::Journal>,
}

/// A stamp no terrain's masks have had before, in this process.
fn fresh_mask_stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Terrain {
    /// A terrain of `voxel_size`-metre voxels (must be finite and positive).
    pub fn new(voxel_size: f32) -> Terrain {
        assert!(voxel_size.is_finite() && voxel_size > 0.0, "voxel size must be finite and positive");
        Terrain {
            voxel_size,
            voxels: Voxels::new(),
            masks: CoordMap::default(),
            dirty: CoordMap::default(),
            surface: SurfaceChunks::default(),
            meshes: MeshCache::new(MeshMode::Full, DEFAULT_CACHE_BUDGET),
            regions: regions::RayRegions::new(DEFAULT_CACHE_BUDGET),
            geometry: None,
            dirty_list: Vec::new(),
            results: Vec::new(),
            missing: Vec::new(),
            needed: Vec::new(),
            query_chunks: Vec::new(),
            touched: Vec::new(),
            batch_walks: Vec::new(),
            batch_needed: Vec::new(),
            batch_passes: Vec::new(),
            revision: 0,
            chunk_stamps: CoordMap::default(),
            edit_stamp: 0,
            mask_stamp: fresh_mask_stamp(),
            journal: None,
        }
    }

    pub fn voxel_size(&self) -> f32 {
        self.voxel_size
    }

    pub fn voxels(&self) -> &Voxels {
        &self.voxels
    }

    /// A counter that changes whenever the triangles of some chunk may have changed
    /// (an edit, a new mesh mode): what callers that keep triangles compare.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Names the voxels and voxel size: two terrains with the same fingerprint hold
    /// the same ground (what a snapshot checks a terrain by). Reads every chunk.
    pub fn fingerprint(&self) -> u64 {
        self.voxels.fingerprint() ^ (self.voxel_size.to_bits() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    /// Names the current broadphase masks: two equal stamps, of this terrain or any
    /// other in the process, mean the same masks and voxel size, so an overlap query
    /// of the same voxel range gives the same answer. [`Terrain::regenerate`] takes a
    /// new one when it changes a mask; edits alone do not (their chunks' masks change
    /// at the regeneration).
    pub fn mask_stamp(&self) -> u64 {
        self.mask_stamp
    }

    pub fn get(&self, voxel: IVec3) -> Material {
        self.voxels.get(voxel)
    }

    /// Sets every voxel in `min..=max` (inclusive voxel coordinates), marks the
    /// affected chunks dirty and drops their cached meshes. Returns the number of
    /// voxels that changed.
    pub fn fill(&mut self, min: IVec3, max: IVec3, material: Material) -> usize {
        self.revision += 1;
        let mut journal = self.journal.take();
        let mut touched = std::mem::take(&mut self.touched);
        touched.clear();
        let changed = self.voxels.fill(
            min,
            max,
            material,
            |c, chunk| {
                if let Some(j) = &mut journal {
                    j.record(c, chunk.map(Chunk::materials));
                }
            },
            |c| touched.push(c),
        );
        self.journal = journal;
        for &c in &touched {
            self.mark_dirty(c);
        }
        self.touched = touched;
        changed
    }

    /// Chunks waiting for [`Terrain::regenerate`].
    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    /// Rebuilds the masks of every dirty chunk, one job per chunk batch, and returns
    /// the regenerated chunk coordinates (sorted), so contacts near them can be
    /// refreshed. Results are applied in sorted order: deterministic.
    pub fn regenerate(&mut self, jobs: Jobs) -> &[IVec3] {
        self.regions.tick();
        self.dirty_list.clear();
        self.dirty_list.extend(self.dirty.drain().map(|(c, ())| c));
        self.dirty_list.sort_unstable_by_key(|c| c.to_array());
        self.results.clear();
        self.results.resize(self.dirty_list.len(), None);
        let (voxels, list) = (&self.voxels, &self.dirty_list);
        jobs.for_each_mut(&mut self.results, |i, out, _| *out = build_mask(&neighbourhood(voxels, list[i])));
        if !self.dirty_list.is_empty() {
            self.mask_stamp = fresh_mask_stamp();
        }
        for (coord, result) in self.dirty_list.iter().zip(self.results.drain(..)) {
            self.surface.set(*coord, matches!(result, Some(ChunkMask::Mixed(_))));
            match result {
                Some(mask) => self.masks.insert(*coord, mask),
                None => self.masks.remove(coord),
            };
        }
        &self.dirty_list
    }

    /// The masks of chunk `coord`, if it has any geometry or is full.
    pub fn mask(&self, coord: IVec3) -> Option<&ChunkMask> {
        self.masks.get(&coord)
    }

    /// Whether chunk `coord` can have triangles: its masks are mixed, or it was
    /// edited since the last [`Terrain::regenerate`].
    pub fn may_have_triangles(&self, coord: IVec3) -> bool {
        let may = self.surface.contains(coord);
        debug_assert_eq!(
            may,
            matches!(self.masks.get(&coord), Some(ChunkMask::Mixed(_))) || self.dirty.contains_key(&coord)
        );
        may
    }

    /// A counter bumped by every chunk an edit (or a snapshot restore) may have
    /// re-shaped: a copy of the terrain's geometry made at stamp `s` is current
    /// except for [`Terrain::chunks_changed_since`]`(s)`.
    pub fn edit_stamp(&self) -> u64 {
        self.edit_stamp
    }

    /// Appends to `out`, sorted, every chunk re-shaped after stamp `since` (an
    /// earlier [`Terrain::edit_stamp`]); the chunks around an edited voxel count,
    /// since a chunk's mesh reads one voxel beyond it.
    pub fn chunks_changed_since(&self, since: u64, out: &mut Vec<IVec3>) {
        let start = out.len();
        out.extend(self.chunk_stamps.iter().filter(|(_, &stamp)| stamp > since).map(|(&c, _)| c));
        out[start..].sort_unstable_by_key(|c| c.to_array());
    }

    /// The inclusive chunk range that holds every chunk with geometry (`None` for a
    /// terrain never edited). It never shrinks.
    pub fn geometry_bounds(&self) -> Option<(IVec3, IVec3)> {
        self.geometry
    }

    /// The water voxels of column `(x, z)` from `y0` up, `count` (at most 64) of
    /// them: bit `i` set when voxel `(x, y0 + i, z)` is water. Reads the chunks'
    /// occupancy bits, one map lookup per chunk.
    pub fn water_column(&self, x: i32, z: i32, y0: i32, count: u32) -> u64 {
        debug_assert!(count <= 64);
        let (lx, lz) = (x & (CHUNK - 1), z & (CHUNK - 1));
        let bit = (lx + CHUNK * lz) as u32;
        let mut out = 0u64;
        let mut i = 0;
        while i < count {
            let y = y0 + i as i32;
            let take = ((CHUNK - (y & (CHUNK - 1))) as u32).min(count - i);
            if let Some(chunk) = self.voxels.chunk(chunk_of(IVec3::new(x, y, z))) {
                let water = &chunk.occupancy().water;
                for k in 0..take {
                    let slice = ((y + k as i32) & (CHUNK - 1)) as usize;
                    out |= ((water[slice] >> bit) & 1) << (i + k);
                }
            }
            i += take;
        }
        out
    }

    // ---- chunk meshes ------------------------------------------------------------

    /// The ray regions' trees (see [`Terrain::ray_cast`]): `entries` counts the
    /// regions with a tree, `invalidations` the trees edits dropped.
    pub fn region_stats(&self) -> CacheStats {
        self.regions.stats()
    }

    /// Checks the mesh cache's and the ray regions' totals (tests, debug builds).
    pub fn validate_caches(&self) {
        self.meshes.validate();
        self.regions.validate();
    }

    /// Whether ray casts build and walk region trees (on by default); off drops
    /// them and casts walk chunk by chunk. The hits are the same either way.
    pub fn set_ray_regions(&mut self, on: bool) {
        self.regions.set_enabled(on);
    }

    /// The mesh cache: statistics, budget and mode.
    pub fn meshes(&self) -> &MeshCache {
        &self.meshes
    }

    /// Sets the cache's byte budget, evicting least recently used meshes to fit.
    /// The ray regions' trees get a budget of the same size (see
    /// [`Terrain::region_stats`]).
    pub fn set_mesh_budget(&mut self, bytes: usize) {
        self.meshes.set_budget(bytes);
        self.regions.set_budget(bytes);
    }

    /// Full or compact (16-bit) chunk meshes; switching drops the cache and the ray
    /// regions' trees.
    pub fn set_mesh_mode(&mut self, mode: MeshMode) {
        self.revision += 1;
        if mode != self.meshes.mode() {
            self.regions.clear();
        }
        self.meshes.set_mode(mode);
    }

    /// Meshes the chunks in `coords` that can have triangles and are not cached, as
    /// parallel jobs: what the narrowphase calls with the chunks its new contacts
    /// touch, before reading them with [`Terrain::chunk_mesh`]. `coords` may repeat
    /// chunks.
    pub fn prepare_meshes(&mut self, coords: &[IVec3], jobs: Jobs) {
        self.meshes.begin_round();
        // Most chunks are cached: the lookups that find out run as parallel jobs, 64
        // chunks to a job, each setting a bit per chunk that is missing and can have
        // triangles. A step asks about thousands of chunks, so done on one thread this
        // was a serial part of the broadphase stage.
        let words = chunk_count(coords.len(), 64);
        self.missing.clear();
        self.missing.resize(words, 0);
        let (meshes, surface) = (&self.meshes, &self.surface);
        let missing = |range: std::ops::Range<usize>| {
            let start = range.start;
            range.fold(0u64, |bits, i| {
                let c = coords[i];
                bits | ((!meshes.contains(c) && surface.contains(c)) as u64) << (i - start)
            })
        };
        if words == 1 {
            // A query's few chunks: one word, not worth a job.
            self.missing[0] = missing(0..coords.len());
        } else {
            jobs.map_chunks(0..coords.len(), 64, &mut self.missing, |range, _| missing(range));
        }
        self.needed.clear();
        for (w, &bits) in self.missing.iter().enumerate() {
            let mut bits = bits;
            while bits != 0 {
                let c = coords[w * 64 + bits.trailing_zeros() as usize];
                debug_assert!(self.may_have_triangles(c));
                self.needed.push(c);
                bits &= bits - 1;
            }
        }
        if !self.needed.is_empty() {
            self.meshes.build(&self.voxels, self.voxel_size, &self.needed, jobs);
        }
    }

    /// The cached mesh of chunk `coord`: `None` when the chunk has no triangles or is
    /// not cached (see [`Terrain::prepare_meshes`]).
    /// Every non-empty chunk mesh from one chunk below the geometry's bounds to one
    /// above, built from the voxels now (not taken from the cache): the reference
    /// that brute-force checks of queries compare against.
    pub fn all_chunk_meshes(&self) -> Vec<(IVec3, KdMesh)> {
        let Some((lo, hi)) = self.geometry_bounds() else { return Vec::new() };
        let mut out = Vec::new();
        for y in lo.y - 1..=hi.y + 1 {
            for z in lo.z - 1..=hi.z + 1 {
                for x in lo.x - 1..=hi.x + 1 {
                    let c = IVec3::new(x, y, z);
                    if let Some(mesh) = build_chunk(&self.voxels, c, self.voxel_size, self.meshes.mode()) {
                        out.push((c, mesh));
                    }
                }
            }
        }
        out
    }

    pub fn chunk_mesh(&self, coord: IVec3) -> Option<&KdMesh> {
        self.meshes.get(coord).flatten()
    }

    /// Trims the mesh cache to its budget (after a step's narrowphase).
    pub fn trim_meshes(&mut self) {
        self.meshes.evict_to_budget();
    }

    /// Calls `visit` for every terrain triangle touching `aabb`, chunk by chunk in
    /// ascending (y, z, x) order, triangles in tree order; `visit` returns `false` to
    /// stop. The chunks come from the bit broadphase (plus chunks edited since the
    /// last regeneration); missing meshes are built first, in parallel.
    pub fn query_triangles(&mut self, aabb: &Aabb, jobs: Jobs, visit: impl FnMut(&TerrainTriangle) -> bool) {
        self.triangles_in(aabb, true, jobs, visit);
    }

    /// [`Terrain::query_triangles`] with each triangle's bounds instead of the exact
    /// triangle-box test: a superset, for callers that test each triangle exactly
    /// against their own shape (shape overlaps and casts).
    pub fn query_triangle_candidates(&mut self, aabb: &Aabb, jobs: Jobs, visit: impl FnMut(&TerrainTriangle) -> bool) {
        self.triangles_in(aabb, false, jobs, visit);
    }

    fn triangles_in(&mut self, aabb: &Aabb, exact: bool, jobs: Jobs, mut visit: impl FnMut(&TerrainTriangle) -> bool) {
        let mut chunks = std::mem::take(&mut self.query_chunks);
        chunks.clear();
        let range = self.voxel_range(aabb);
        if let Some(range) = range {
            // Chunks whose neighbourhood is all solid have no triangles (the surface
            // set holds only mixed and edited chunks): skipped here, they cost no
            // mesh cache lookups (half of the chunks a box near the ground meets).
            self.overlap_walk(range, |c, mask, o| {
                if o.solid && matches!(mask, ChunkMask::Mixed(_)) {
                    chunks.push(c);
                }
                true
            });
        }
        // In key order already, unless edited chunks are merged in.
        let merge = !self.dirty.is_empty();
        if let (Some((vmin, vmax)), true) = (range, merge) {
            let (cmin, cmax) = (chunk_of(vmin), chunk_of(vmax));
            // The smaller of the box's chunks and the dirty map: a freshly filled
            // terrain has every chunk dirty until its first regeneration, and a
            // small query walked all of them (10,000 box queries: 670 ms, not 44).
            let span = (cmax - cmin + IVec3::ONE).as_i64vec3();
            if (span.x * span.y * span.z) < self.dirty.len() as i64 {
                for z in cmin.z..=cmax.z {
                    for y in cmin.y..=cmax.y {
                        for x in cmin.x..=cmax.x {
                            let c = IVec3::new(x, y, z);
                            if self.dirty.contains_key(&c) {
                                chunks.push(c);
                            }
                        }
                    }
                }
            } else {
                chunks.extend(self.dirty.keys().filter(|c| c.cmpge(cmin).all() && c.cmple(cmax).all()));
            }
        }
        if merge {
            chunks.sort_unstable_by_key(|c| [c.y, c.z, c.x]);
            chunks.dedup();
        }
        debug_assert!(chunks.windows(2).all(|w| [w[0].y, w[0].z, w[0].x] < [w[1].y, w[1].z, w[1].x]));
        self.prepare_meshes(&chunks, jobs);
        'chunks: for &chunk in &chunks {
            let Some(mesh) = self.chunk_mesh(chunk) else { continue };
            let mut go_on = true;
            let query = if exact { KdMesh::query_aabb } else { KdMesh::query_aabb_candidates };
            query(mesh, aabb, &mut |index| {
                let triangle = TerrainTriangle {
                    chunk,
                    index,
                    vertices: mesh.triangle(index),
                    material: Material(mesh.material(index)),
                };
                go_on = visit(&triangle);
                go_on
            });
            if !go_on {
                break 'chunks;
            }
        }
        self.query_chunks = chunks;
        self.meshes.evict_to_budget();
    }

    pub fn stats(&self) -> MaskStats {
        let mut stats = MaskStats::default();
        for mask in self.masks.values() {
            match mask {
                ChunkMask::Mixed(_) => stats.mixed_chunks += 1,
                _ => stats.full_chunks += 1,
            }
            stats.mask_bytes += mask.heap_bytes();
        }
        stats.surface_bytes = self.surface.heap_bytes();
        stats
    }

    /// The inclusive voxel range a query box covers: the box grown by one voxel, as
    /// the reference does (geometry may spill one voxel out of the mask's voxels), then
    /// floor/ceil to voxel indices. `None` for boxes that are not finite and ordered.
    pub fn voxel_range(&self, aabb: &Aabb) -> Option<(IVec3, IVec3)> {
        if !aabb.is_valid() {
            return None;
        }
        let s = self.voxel_size;
        // Rounded by truncation (`floor`/`ceil` are library calls on baseline x86-64,
        // and a box query asked this twice: a tenth of a terrain overlap's work),
        // within i32 range, then clamped to the grid with room for the chunk
        // arithmetic.
        let room = Vec3::splat(2_147_483_392.0); // 2^31 - 256: truncates and steps in i32
        let lo = ((aabb.min - Vec3::splat(s)) / s).clamp(-room, room);
        let hi = ((aabb.max + Vec3::splat(s)) / s).clamp(-room, room);
        let (lo_t, hi_t) = (lo.as_ivec3(), hi.as_ivec3());
        let lo = IVec3::select(lo.cmplt(lo_t.as_vec3()), lo_t - IVec3::ONE, lo_t);
        let hi = IVec3::select(hi.cmpgt(hi_t.as_vec3()), hi_t + IVec3::ONE, hi_t) - IVec3::ONE;
        let limit = IVec3::splat(1 << 30);
        Some((lo.clamp(-limit, limit), hi.max(lo).clamp(-limit, limit)))
    }

    /// What `aabb` touches: the solid and water masks over the covered voxels.
    pub fn overlap(&self, aabb: &Aabb) -> Overlap {
        let mut result = Overlap::default();
        self.for_each_overlap(aabb, |_, o| {
            result.solid |= o.solid;
            result.water |= o.water;
            !(result.solid && result.water)
        });
        result
    }

    /// Calls `visit(chunk, overlap)` for every chunk where `aabb` touches solid or
    /// water bits, in ascending (y, z, x) chunk order; `visit` returns `false` to stop.
    /// Per chunk: an XZ mask from the two lookup tables, one AND per covered Y slice.
    pub fn for_each_overlap(&self, aabb: &Aabb, visit: impl FnMut(IVec3, Overlap) -> bool) {
        if let Some(range) = self.voxel_range(aabb) {
            self.for_each_overlap_in(range, visit);
        }
    }

    /// [`Terrain::for_each_overlap`] over the voxel range [`Terrain::voxel_range`] gave.
    fn for_each_overlap_in(&self, range: (IVec3, IVec3), mut visit: impl FnMut(IVec3, Overlap) -> bool) {
        self.overlap_walk(range, |c, _, o| visit(c, o));
    }

    /// [`Terrain::for_each_overlap_in`], with each chunk's mask.
    fn overlap_walk(&self, (vmin, vmax): (IVec3, IVec3), mut visit: impl FnMut(IVec3, &ChunkMask, Overlap) -> bool) {
        let (cmin, cmax) = (chunk_of(vmin), chunk_of(vmax));
        let span = (cmax - cmin + IVec3::ONE).as_i64vec3();
        let chunk_span = span.x.saturating_mul(span.y).saturating_mul(span.z);
        let mut test = |coord: IVec3, mask: &ChunkMask| -> bool {
            let base = coord * CHUNK;
            let lo = (vmin - base).max(IVec3::ZERO).as_uvec3();
            let hi = (vmax - base).min(IVec3::splat(CHUNK - 1)).as_uvec3();
            let xz = X_RANGE[lo.x as usize][hi.x as usize] & Z_RANGE[lo.z as usize][hi.z as usize];
            let (solid, water) = mask.test(lo.y as usize, hi.y as usize, xz);
            if solid || water {
                return visit(coord, mask, Overlap { solid, water });
            }
            true
        };
        if chunk_span > self.masks.len() as i64 {
            // A huge box: walk the stored chunks instead of the empty space.
            let mut hits: Vec<IVec3> =
                self.masks.keys().copied().filter(|c| c.cmpge(cmin).all() && c.cmple(cmax).all()).collect();
            hits.sort_unstable_by_key(|c| [c.y, c.z, c.x]);
            for coord in hits {
                if !test(coord, &self.masks[&coord]) {
                    return;
                }
            }
            return;
        }
        for y in cmin.y..=cmax.y {
            for z in cmin.z..=cmax.z {
                for x in cmin.x..=cmax.x {
                    let coord = IVec3::new(x, y, z);
                    if let Some(mask) = self.masks.get(&coord) {
                        if !test(coord, mask) {
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// The occupancy of chunk `coord` and its 26 neighbours (`None` for all-air chunks),
/// by [`neighbour_index`]: the input of [`build_mask`].
pub fn neighbourhood(voxels: &Voxels, coord: IVec3) -> [Option<&Occupancy>; 27] {
    let mut out = [None; 27];
    for dy in -1..=1 {
        for dz in -1..=1 {
            for dx in -1..=1 {
                out[neighbour_index(dx, dy, dz)] = voxels.chunk(coord + IVec3::new(dx, dy, dz)).map(Chunk::occupancy);
            }
        }
    }
    out
}

#[cfg(test)]
mod mesher_tests;
#[cfg(test)]
mod raycast_tests;
#[cfg(test)]
mod regions_tests;
#[cfg(test)]
mod tests;
