//! Voxel storage: 8x8x8 chunks in a sparse map over an unbounded integer grid, one
//! material byte per voxel. A missing chunk is all air.
//!
//! Besides the material bytes each chunk keeps its raw occupancy as bits (one `u64`
//! per Y slice for solid, one for water; bit `x + 8 * z`), updated on every edit, so
//! the broadphase masks are built from bits alone (see `masks.rs`).

use glam::IVec3;

use crate::math::FastMap;

/// Voxels per chunk edge.
pub const CHUNK: i32 = 8;

/// A voxel's material: 0 is air, 1 water, 2..=255 solid materials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct Material(pub u8);

impl Material {
    pub const AIR: Material = Material(0);
    pub const WATER: Material = Material(1);
    /// The first solid material; any value from here up is solid.
    pub const ROCK: Material = Material(2);
    pub const GRASS: Material = Material(3);
    pub const SAND: Material = Material(4);

    pub fn is_solid(self) -> bool {
        self.0 >= 2
    }

    pub fn is_water(self) -> bool {
        self == Material::WATER
    }
}

/// Raw (undilated) occupancy bits of one chunk: bit `x + 8 * z` of slice `y`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    pub solid: [u64; 8],
    pub water: [u64; 8],
}

impl Occupancy {
    pub const EMPTY: Occupancy = Occupancy { solid: [0; 8], water: [0; 8] };
}

/// One chunk's voxels, index `x + 8 * z + 64 * y`.
#[derive(Clone, Debug)]
pub struct Chunk {
    voxels: Box<[Material; 512]>,
    occupancy: Occupancy,
    /// Non-air voxels; a chunk that drops to zero is removed from the map.
    filled: u16,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk { voxels: Box::new([Material::AIR; 512]), occupancy: Occupancy::EMPTY, filled: 0 }
    }

    pub fn get(&self, local: IVec3) -> Material {
        self.voxels[index(local)]
    }

    pub fn occupancy(&self) -> &Occupancy {
        &self.occupancy
    }

    /// The chunk's materials, index `x + 8 * z + 64 * y`.
    pub fn materials(&self) -> &[Material; 512] {
        &self.voxels
    }

    fn set(&mut self, local: IVec3, material: Material) {
        let i = index(local);
        let old = self.voxels[i];
        if old == material {
            return;
        }
        self.voxels[i] = material;
        self.filled = self.filled + (material != Material::AIR) as u16 - (old != Material::AIR) as u16;
        let (slice, bit) = (local.y as usize, 1u64 << (local.x + 8 * local.z));
        let o = &mut self.occupancy;
        o.solid[slice] = if material.is_solid() { o.solid[slice] | bit } else { o.solid[slice] & !bit };
        o.water[slice] = if material.is_water() { o.water[slice] | bit } else { o.water[slice] & !bit };
    }
}

fn index(local: IVec3) -> usize {
    (local.x + CHUNK * local.z + CHUNK * CHUNK * local.y) as usize
}

/// Chunk coordinate of a voxel (floor division, correct for negatives).
pub fn chunk_of(voxel: IVec3) -> IVec3 {
    voxel >> 3
}

/// A voxel's position inside its chunk.
pub fn local_of(voxel: IVec3) -> IVec3 {
    voxel & (CHUNK - 1)
}

/// Chunks by coordinate.
pub type CoordMap<V> = FastMap<IVec3, V>;

/// The voxel grid. Edits record the chunks whose broadphase masks they affect.
#[derive(Clone, Debug, Default)]
pub struct Voxels {
    chunks: CoordMap<Chunk>,
}

impl Voxels {
    pub fn new() -> Voxels {
        Voxels::default()
    }

    /// A checksum of every chunk holding anything (its coordinates and materials),
    /// independent of the order chunks were made in: two terrains with equal voxels
    /// have equal fingerprints.
    pub fn fingerprint(&self) -> u64 {
        let mut sum = 0u64;
        let mut bytes = [0u8; 12 + 512];
        for (coord, chunk) in self.chunks.iter().filter(|(_, c)| c.filled > 0) {
            for (i, c) in coord.to_array().iter().enumerate() {
                bytes[4 * i..4 * i + 4].copy_from_slice(&c.to_le_bytes());
            }
            for (b, m) in bytes[12..].iter_mut().zip(chunk.voxels.iter()) {
                *b = m.0;
            }
            sum = sum.wrapping_add(crate::codec::checksum(&bytes));
        }
        sum
    }

    pub fn chunk(&self, coord: IVec3) -> Option<&Chunk> {
        self.chunks.get(&coord)
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Coordinates of every stored (not all-air) chunk, in no particular order.
    pub fn chunk_coords(&self) -> impl Iterator<Item = IVec3> + '_ {
        self.chunks.keys().copied()
    }

    pub fn get(&self, voxel: IVec3) -> Material {
        self.chunks.get(&chunk_of(voxel)).map_or(Material::AIR, |c| c.get(local_of(voxel)))
    }

    /// Puts `materials` (`None`: all air) in chunk `coord`; returns whether a voxel
    /// changed. The chunk's masks and those of its 26 neighbours are then stale.
    pub fn set_chunk(&mut self, coord: IVec3, materials: Option<&[Material; 512]>) -> bool {
        let same = match (self.chunks.get(&coord), materials) {
            (None, None) => true,
            (Some(c), Some(m)) => c.voxels[..] == m[..],
            _ => false,
        };
        if same {
            return false;
        }
        match materials.filter(|m| m.iter().any(|&v| v != Material::AIR)) {
            None => {
                self.chunks.remove(&coord);
            }
            Some(m) => {
                let chunk = self.chunks.entry(coord).or_insert_with(Chunk::new);
                for (i, &v) in m.iter().enumerate() {
                    let local = IVec3::new(i as i32 & 7, i as i32 >> 6, i as i32 >> 3 & 7);
                    chunk.set(local, v);
                }
            }
        }
        true
    }

    /// Sets every voxel in `min..=max` to `material`; calls `before(chunk, voxels)`
    /// with every chunk it may change before changing it, and `dirty(chunk)` for every
    /// chunk whose masks may change (the edited chunks and their 26 neighbours, as the
    /// masks are dilated by one voxel). Returns the number of voxels that changed.
    pub fn fill(
        &mut self,
        min: IVec3,
        max: IVec3,
        material: Material,
        mut before: impl FnMut(IVec3, Option<&Chunk>),
        mut dirty: impl FnMut(IVec3),
    ) -> usize {
        let mut changed = 0;
        // One map lookup per chunk, not per voxel.
        let (cmin, cmax) = (chunk_of(min), chunk_of(max));
        for cy in cmin.y..=cmax.y {
            for cz in cmin.z..=cmax.z {
                for cx in cmin.x..=cmax.x {
                    let coord = IVec3::new(cx, cy, cz);
                    let base = coord * CHUNK;
                    let lo = (min - base).max(IVec3::ZERO);
                    let hi = (max - base).min(IVec3::splat(CHUNK - 1));
                    let chunk = match self.chunks.get_mut(&coord) {
                        Some(chunk) => {
                            before(coord, Some(chunk));
                            chunk
                        }
                        None if material == Material::AIR => continue,
                        None => {
                            before(coord, None);
                            self.chunks.entry(coord).or_insert_with(Chunk::new)
                        }
                    };
                    for y in lo.y..=hi.y {
                        for z in lo.z..=hi.z {
                            for x in lo.x..=hi.x {
                                let local = IVec3::new(x, y, z);
                                changed += (chunk.get(local) != material) as usize;
                                chunk.set(local, material);
                            }
                        }
                    }
                    if chunk.filled == 0 {
                        self.chunks.remove(&coord);
                    }
                }
            }
        }
        if changed > 0 {
            let (lo, hi) = (chunk_of(min - IVec3::ONE), chunk_of(max + IVec3::ONE));
            for y in lo.y..=hi.y {
                for z in lo.z..=hi.z {
                    for x in lo.x..=hi.x {
                        dirty(IVec3::new(x, y, z));
                    }
                }
            }
        }
        changed
    }
}
