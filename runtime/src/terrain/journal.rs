//! The terrain's edit journal: what a world snapshot needs to put the ground back.
//!
//! From a base (the voxels when the journal starts, named by their fingerprint) the
//! first edit of each chunk keeps a copy of the chunk as it was (copy on first
//! write). A snapshot then carries only the chunks edited since the base, as they
//! are now, and the chunks whose masks wait for regeneration. Restoring one puts
//! every chunk the journal or the snapshot names back to the snapshot's voxels (or
//! the base's, for a chunk the snapshot did not edit), rebuilds the masks around the
//! chunks that changed, and leaves waiting exactly the chunks that waited at the
//! save, so the next step regenerates and wakes what the saved world's step would.
//! Rolling back a dig restores the ground; a terrain never edited costs nothing.

use glam::IVec3;

use super::voxels::{CoordMap, Material};
use super::Terrain;
use crate::codec::{Codec, Corrupt, Reader, TakeNew, Writer};
use crate::jobs::{Jobs, ThreadPool};

/// A chunk's voxels as they were at the base: `None` when it was all air.
type Original = Option<Box<[Material; 512]>>;

/// The base's fingerprint and, per chunk edited since, its voxels at the base.
#[derive(Debug, Default)]
pub(super) struct Journal {
    base: u64,
    originals: CoordMap<Original>,
}

/// The terrain part of a decoded snapshot, checked and kept apart from the terrain
/// until the whole snapshot has decoded (a refused snapshot changes nothing).
#[derive(Debug, Default)]
pub struct TerrainEdits {
    /// Chunks edited since the base, by increasing coordinates, with the index of
    /// their voxels in `voxels` (`None`: all air).
    chunks: Vec<(IVec3, Option<u32>)>,
    voxels: Vec<[Material; 512]>,
    /// Chunks waiting for regeneration at the save, sorted.
    dirty: Vec<IVec3>,
    /// Scratch: every chunk a restore visits.
    visit: Vec<IVec3>,
}

fn order(c: &IVec3) -> [i32; 3] {
    c.to_array()
}

impl Journal {
    /// Records `voxels` as chunk `coord`'s base voxels unless it was edited before.
    pub(super) fn record(&mut self, coord: IVec3, voxels: Option<&[Material; 512]>) {
        self.originals.entry(coord).or_insert_with(|| voxels.map(|v| Box::new(*v)));
    }
}

impl Terrain {
    /// Makes the voxels as they are now the base that world snapshots record edits
    /// against (a snapshot then carries the chunks edited since). Snapshots saved
    /// against an earlier base no longer restore. Reads every chunk once.
    /// `World::set_terrain` calls it.
    pub fn rebase(&mut self) {
        self.journal = Some(Journal { base: self.fingerprint(), originals: CoordMap::default() });
    }

    /// The fingerprint of the voxels at the base (`None` before [`Terrain::rebase`]).
    pub fn base_fingerprint(&self) -> Option<u64> {
        self.journal.as_ref().map(|j| j.base)
    }

    /// Chunks edited since the base.
    pub fn edited_chunks(&self) -> usize {
        self.journal.as_ref().map_or(0, |j| j.originals.len())
    }

    /// Writes the chunks that differ from the base (by increasing coordinates, each
    /// with its voxels now) and the chunks waiting for regeneration; `scratch` holds
    /// the sorted coordinates. A chunk edited back to its base voxels is left out, so
    /// equal voxels write equal bytes.
    pub(crate) fn put_edits(&self, scratch: &mut Vec<IVec3>, w: &mut Writer) {
        scratch.clear();
        if let Some(j) = &self.journal {
            let differs = |(c, original): (&IVec3, &Original)| {
                let now = self.voxels.chunk(*c).map(|chunk| chunk.materials());
                match (now, original) {
                    (None, None) => false,
                    (Some(a), Some(b)) => a[..] != b[..],
                    _ => true,
                }
            };
            scratch.extend(j.originals.iter().filter(|e| differs(*e)).map(|(c, _)| *c));
        }
        scratch.sort_unstable_by_key(order);
        (scratch.len() as u32).put(w);
        for &c in scratch.iter() {
            c.to_array().put(w);
            match self.voxels.chunk(c) {
                None => 0u8.put(w),
                Some(chunk) => {
                    1u8.put(w);
                    // SAFETY: `Material` is a transparent byte.
                    w.bytes(unsafe { &*(chunk.materials() as *const [Material; 512] as *const [u8; 512]) });
                }
            }
        }
        scratch.clear();
        scratch.extend(self.dirty.keys().copied());
        scratch.sort_unstable_by_key(order);
        (scratch.len() as u32).put(w);
        scratch.iter().for_each(|c| c.to_array().put(w));
    }

    /// Puts the voxels and masks back as `edits` (read from a snapshot saved against
    /// this terrain's base) hold them, waking nothing; returns whether a voxel
    /// changed. Chunks it changes are regenerated now, with every chunk that waited
    /// for it; then the chunks that waited at the save wait again.
    pub fn restore_edits(&mut self, edits: &mut TerrainEdits) -> bool {
        let mut journal = self.journal.take().expect("a snapshot is restored against a base");
        let mut visit = std::mem::take(&mut edits.visit);
        visit.clear();
        visit.extend(journal.originals.keys().copied());
        visit.extend(edits.chunks.iter().map(|e| e.0));
        visit.sort_unstable_by_key(order);
        visit.dedup();
        let mut changed = false;
        for &c in &visit {
            let saved = edits.chunks.binary_search_by_key(&order(&c), |e| order(&e.0)).ok();
            // A chunk the snapshot edited and this terrain did not is still at the base.
            journal.record(c, self.voxels.chunk(c).map(|chunk| chunk.materials()));
            let target = match saved {
                Some(i) => edits.chunks[i].1.map(|v| &edits.voxels[v as usize]),
                None => journal.originals[&c].as_deref(),
            };
            if self.voxels.set_chunk(c, target) {
                changed = true;
                for n in neighbours(c) {
                    self.mark_dirty(n);
                }
            }
        }
        edits.visit = visit;
        self.journal = Some(journal);
        if changed {
            self.revision += 1;
        }
        if self.dirty_count() > 0 {
            // On the calling thread: a restore takes no workers.
            let inline = ThreadPool::new(0);
            self.regenerate(Jobs::new(&inline));
        }
        for &c in &edits.dirty {
            self.mark_dirty(c);
        }
        changed
    }

    /// Marks chunk `coord` for regeneration: it may have triangles until then, and its
    /// cached mesh is stale.
    pub(super) fn mark_dirty(&mut self, coord: IVec3) {
        self.edit_stamp += 1;
        self.chunk_stamps.insert(coord, self.edit_stamp);
        self.dirty.insert(coord, ());
        self.surface.set(coord, true);
        self.meshes.invalidate(coord);
        self.regions.invalidate(coord);
        self.geometry = Some(self.geometry.map_or((coord, coord), |(lo, hi)| (lo.min(coord), hi.max(coord))));
    }
}

/// Chunk `c` and its 26 neighbours.
fn neighbours(c: IVec3) -> impl Iterator<Item = IVec3> {
    (0..27).map(move |i| c + IVec3::new(i % 3 - 1, i / 9 - 1, i / 3 % 3 - 1))
}

impl TerrainEdits {
    /// Reads what [`Terrain::put_edits`] wrote, checking that the chunks come by
    /// increasing coordinates, each once, within the voxel grid.
    pub(crate) fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.chunks.clear();
        let mut used = 0;
        // Every chunk a voxel inside (i32::MIN, i32::MAX) lies in, and its neighbours.
        let limit = (i32::MAX >> 3) + 2;
        let coord = |r: &mut Reader| -> Result<IVec3, Corrupt> {
            let c = IVec3::from_array(<[i32; 3]>::take_new(r)?);
            let inside = c.cmpge(IVec3::splat(-limit)).all() && c.cmple(IVec3::splat(limit)).all();
            inside.then_some(c).ok_or(Corrupt)
        };
        let n = r.count()?;
        for _ in 0..n {
            let c = coord(r)?;
            if self.chunks.last().is_some_and(|e| order(&e.0) >= order(&c)) {
                return Err(Corrupt);
            }
            let voxels = match r.tag(2)? {
                0 => None,
                _ => {
                    let bytes = r.bytes(512)?;
                    if used == self.voxels.len() {
                        self.voxels.push([Material::AIR; 512]);
                    }
                    for (m, &b) in self.voxels[used].iter_mut().zip(bytes) {
                        *m = Material(b);
                    }
                    used += 1;
                    Some(used as u32 - 1)
                }
            };
            self.chunks.push((c, voxels));
        }
        self.dirty.clear();
        let n = r.count()?;
        for _ in 0..n {
            let c = coord(r)?;
            if self.dirty.last().is_some_and(|d| order(d) >= order(&c)) {
                return Err(Corrupt);
            }
            self.dirty.push(c);
        }
        Ok(())
    }
}
