//! The lazy chunk mesh cache: a chunk's triangles and kD tree exist only once a
//! contact or a ray has touched the chunk, and stay in a least-recently-used cache
//! under a byte budget the user sets.
//!
//! - **Build.** Queries collect the chunks they need but find missing, then
//!   [`MeshCache::build`] meshes them all as parallel jobs (one per chunk) and inserts
//!   the results in sorted chunk order. Chunks that produce no triangles are cached
//!   too (as `None`), so empty space is not re-meshed.
//! - **Invalidation.** An edit removes the entries of every chunk whose mesh it may
//!   change (the chunks the bit broadphase marks dirty): no query can see stale
//!   triangles, since entries are built from the voxels as they are now.
//! - **Eviction.** Every entry carries the query round that last used it; after a
//!   query, [`MeshCache::evict_to_budget`] drops the least recently used entries
//!   (ties by chunk coordinate, so the result is deterministic) until the cache fits.
//!   Within one query the cache may hold more than the budget while a round's
//!   missing chunks are built and read; it never does between queries.

use std::sync::atomic::{AtomicU64, Ordering};

use glam::IVec3;

use super::mesher::mesh_chunk;
use super::voxels::{CoordMap, Voxels};
use crate::jobs::Jobs;
use crate::spatial::{KdMesh, MeshMode, TriMesh};

/// Bytes charged per entry on top of its mesh (map slot and bookkeeping).
pub const CACHE_ENTRY_OVERHEAD: usize = 64;
/// The default budget: 64 MiB.
pub const DEFAULT_CACHE_BUDGET: usize = 64 << 20;

/// Counters and sizes of a [`MeshCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Cached chunks (with or without triangles).
    pub entries: usize,
    /// Bytes held: meshes, trees and per-entry overhead.
    pub bytes: usize,
    pub budget: usize,
    /// Triangles held.
    pub triangles: usize,
    /// Chunk meshes built since creation.
    pub builds: u64,
    /// Entries dropped to fit the budget.
    pub evictions: u64,
    /// Entries dropped because an edit changed their voxels.
    pub invalidations: u64,
}

#[derive(Debug)]
struct Entry {
    mesh: Option<KdMesh>,
    bytes: usize,
    /// The query round that last read this entry.
    last_used: AtomicU64,
}

/// See the module docs.
#[derive(Debug)]
pub struct MeshCache {
    entries: CoordMap<Entry>,
    mode: MeshMode,
    budget: usize,
    bytes: usize,
    triangles: usize,
    round: u64,
    builds: u64,
    evictions: u64,
    invalidations: u64,
    /// Scratch of `build` and `evict_to_budget`.
    built: Vec<(IVec3, Option<KdMesh>)>,
    order: Vec<(u64, [i32; 3])>,
}

impl MeshCache {
    pub fn new(mode: MeshMode, budget: usize) -> MeshCache {
        MeshCache {
            entries: CoordMap::default(),
            mode,
            budget,
            bytes: 0,
            triangles: 0,
            round: 1,
            builds: 0,
            evictions: 0,
            invalidations: 0,
            built: Vec::new(),
            order: Vec::new(),
        }
    }

    pub fn mode(&self) -> MeshMode {
        self.mode
    }

    /// Switches storage mode; cached meshes are dropped (rebuilt on next use).
    pub fn set_mode(&mut self, mode: MeshMode) {
        if mode != self.mode {
            self.mode = mode;
            self.clear();
        }
    }

    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Sets the byte budget and evicts down to it.
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        self.evict_to_budget();
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.triangles = 0;
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            entries: self.entries.len(),
            bytes: self.bytes,
            budget: self.budget,
            triangles: self.triangles,
            builds: self.builds,
            evictions: self.evictions,
            invalidations: self.invalidations,
        }
    }

    /// Starts a query round: entries read from now on count as used later than any
    /// read before.
    pub fn begin_round(&mut self) {
        self.round += 1;
    }

    /// The cached mesh of chunk `coord`: `None` when it is not cached (build it),
    /// `Some(None)` for a chunk without triangles. Marks the entry used.
    pub fn get(&self, coord: IVec3) -> Option<Option<&KdMesh>> {
        let entry = self.entries.get(&coord)?;
        // Written only when it changes: a batch's workers read the same entries, and
        // a store on every read would bounce their cache lines between cores.
        if entry.last_used.load(Ordering::Relaxed) != self.round {
            entry.last_used.store(self.round, Ordering::Relaxed);
        }
        Some(entry.mesh.as_ref())
    }

    pub fn contains(&self, coord: IVec3) -> bool {
        self.entries.contains_key(&coord)
    }

    /// Drops chunk `coord`'s entry (its voxels changed).
    pub fn invalidate(&mut self, coord: IVec3) {
        if let Some(entry) = self.entries.remove(&coord) {
            self.forget(&entry);
            self.invalidations += 1;
        }
    }

    /// Meshes every chunk in `coords` that is not cached, in parallel, and inserts the
    /// results in chunk order. `coords` may hold duplicates.
    pub fn build(&mut self, voxels: &Voxels, voxel_size: f32, coords: &[IVec3], jobs: Jobs) {
        self.built.clear();
        self.built.extend(coords.iter().filter(|c| !self.entries.contains_key(c)).map(|&c| (c, None)));
        self.built.sort_unstable_by_key(|(c, _)| c.to_array());
        self.built.dedup_by_key(|(c, _)| *c);
        let mode = self.mode;
        jobs.for_each_mut(&mut self.built, |_, (coord, out), _| {
            *out = build_chunk(voxels, *coord, voxel_size, mode);
        });
        let mut built = std::mem::take(&mut self.built);
        for (coord, mesh) in built.drain(..) {
            self.insert(coord, mesh);
        }
        self.built = built;
    }

    /// Meshes chunk `coord` on this thread, unless it is cached.
    pub fn build_one(&mut self, voxels: &Voxels, voxel_size: f32, coord: IVec3) {
        if !self.entries.contains_key(&coord) {
            let mesh = build_chunk(voxels, coord, voxel_size, self.mode);
            self.insert(coord, mesh);
        }
    }

    fn insert(&mut self, coord: IVec3, mesh: Option<KdMesh>) {
        let bytes = CACHE_ENTRY_OVERHEAD + mesh.as_ref().map_or(0, KdMesh::heap_bytes);
        self.bytes += bytes;
        self.triangles += mesh.as_ref().map_or(0, KdMesh::triangle_count);
        self.builds += 1;
        let old = self.entries.insert(coord, Entry { mesh, bytes, last_used: AtomicU64::new(self.round) });
        debug_assert!(old.is_none(), "chunk {coord} built twice");
    }

    /// Drops least recently used entries until the cache fits its budget.
    pub fn evict_to_budget(&mut self) {
        if self.bytes <= self.budget {
            return;
        }
        let used = |e: &Entry| e.last_used.load(Ordering::Relaxed);
        evict_lru(&mut self.entries, &mut self.order, used, |_, entry| {
            self.bytes -= entry.bytes;
            self.triangles -= entry.mesh.as_ref().map_or(0, KdMesh::triangle_count);
            self.evictions += 1;
            self.bytes > self.budget
        });
    }

    fn forget(&mut self, entry: &Entry) {
        self.bytes -= entry.bytes;
        self.triangles -= entry.mesh.as_ref().map_or(0, KdMesh::triangle_count);
    }

    /// Checks the byte and triangle totals against the entries.
    pub fn validate(&self) {
        let bytes: usize = self.entries.values().map(|e| e.bytes).sum();
        let triangles: usize = self.entries.values().filter_map(|e| e.mesh.as_ref()).map(KdMesh::triangle_count).sum();
        assert_eq!(bytes, self.bytes, "cache byte total");
        assert_eq!(triangles, self.triangles, "cache triangle total");
        for e in self.entries.values().filter_map(|e| e.mesh.as_ref()) {
            e.validate();
        }
    }
}

/// Removes the entries of `map` least recently used first (`used`: the round that
/// last read one; ties by chunk coordinate, so the choice is deterministic), handing
/// each to `removed`, until it answers that the rest fit. `order` is scratch.
pub(super) fn evict_lru<E>(
    map: &mut CoordMap<E>,
    order: &mut Vec<(u64, [i32; 3])>,
    used: impl Fn(&E) -> u64,
    mut removed: impl FnMut(IVec3, E) -> bool,
) {
    order.clear();
    order.extend(map.iter().map(|(c, e)| (used(e), c.to_array())));
    order.sort_unstable();
    for &(_, coord) in order.iter() {
        let coord = IVec3::from_array(coord);
        if let Some(entry) = map.remove(&coord) {
            if !removed(coord, entry) {
                return;
            }
        }
    }
}

/// Meshes one chunk and builds its tree; `None` when it has no triangles.
pub fn build_chunk(voxels: &Voxels, coord: IVec3, voxel_size: f32, mode: MeshMode) -> Option<KdMesh> {
    let mut mesh = TriMesh::new();
    mesh_chunk(voxels, coord, voxel_size, &mut mesh);
    if mesh.triangles.is_empty() {
        return None;
    }
    // A chunk holds at most 3 * 512 quads (3072 triangles) over 729 cell vertices,
    // inside compact limits. Only a voxel size near f32::MAX could make a vertex
    // infinite; such a chunk has no usable triangles.
    let built = KdMesh::from_mesh(mesh, mode);
    debug_assert!(built.is_ok(), "chunk {coord}: {built:?}");
    built.ok()
}
