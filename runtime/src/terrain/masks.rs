//! The bit broadphase data of one chunk, built with bit operations as in the
//! reference (Roblox's voxel terrain physics):
//!
//! 1. The chunk's 10^3 neighbourhood (its 8^3 voxels plus a one-voxel border taken
//!    from the 26 neighbours' occupancy bits) becomes 10x10 rows of 10 bits, indexed
//!    `[y][z]`, bit `x`. Solid bits sit in bits 0..10 of a `u32` and water bits in bits
//!    16..26, so every step below processes both masks at once.
//! 2. Dilation along x by shifts (`r | r << 1 | r >> 1`), then along z and y by ORing
//!    neighbouring rows: a voxel is marked when any of its 27 neighbours is filled,
//!    because the mesher's geometry may spill one voxel out of the voxel that made it.
//! 3. The 8^3 interior is extracted into `solid[8]` and `water[8]`, one `u64` per Y
//!    slice with bit `x + 8 * z`.
//!
//! Chunks whose whole neighbourhood is air store nothing; chunks whose neighbourhood
//! is all solid or all water are tagged without masks (no geometry, but they still
//! report containment, e.g. submersion).

use super::voxels::Occupancy;

/// Dilated masks of a chunk with geometry (128 bytes: 2 bits per voxel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Masks {
    pub solid: [u64; 8],
    pub water: [u64; 8],
}

/// The broadphase data of a chunk that is not all air.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChunkMask {
    /// The neighbourhood is solid throughout.
    FullSolid,
    /// The neighbourhood is water throughout.
    FullWater,
    Mixed(Box<Masks>),
}

impl ChunkMask {
    /// Heap bytes this entry owns.
    pub fn heap_bytes(&self) -> usize {
        match self {
            ChunkMask::Mixed(_) => std::mem::size_of::<Masks>(),
            _ => 0,
        }
    }

    /// Whether the solid (water) mask has any bit in `slices` under `xz`.
    pub fn test(&self, y0: usize, y1: usize, xz: u64) -> (bool, bool) {
        match self {
            ChunkMask::FullSolid => (true, false),
            ChunkMask::FullWater => (false, true),
            ChunkMask::Mixed(m) => {
                let (mut solid, mut water) = (0u64, 0u64);
                for y in y0..=y1 {
                    solid |= m.solid[y];
                    water |= m.water[y];
                }
                (solid & xz != 0, water & xz != 0)
            }
        }
    }

    /// Whether voxel `(x, y, z)` of the chunk is marked (solid, water).
    pub fn bit(&self, x: usize, y: usize, z: usize) -> (bool, bool) {
        self.test(y, y, 1u64 << (x + 8 * z))
    }
}

/// Index of neighbour `(dx, dy, dz)` (each in -1..=1) in the 27-entry array.
pub const fn neighbour_index(dx: i32, dy: i32, dz: i32) -> usize {
    ((dx + 1) + 3 * (dz + 1) + 9 * (dy + 1)) as usize
}

/// Builds a chunk's masks from its own and its 26 neighbours' occupancy (`None` for
/// all-air chunks), indexed by [`neighbour_index`]. `None` when the whole
/// neighbourhood is air.
// The row dilations read rows at z - 1, z, z + 1: index loops say that most plainly.
#[allow(clippy::needless_range_loop)]
pub fn build_mask(occupancy: &[Option<&Occupancy>; 27]) -> Option<ChunkMask> {
    if occupancy.iter().all(Option::is_none) {
        return None;
    }
    const EMPTY: Occupancy = Occupancy::EMPTY;
    let occ = |dx: i32, dy: i32, dz: i32| occupancy[neighbour_index(dx, dy, dz)].unwrap_or(&EMPTY);
    // Neighbourhood coordinate 0..10 -> (neighbour offset, local coordinate).
    let split = |c: usize| -> (i32, usize) {
        match c {
            0 => (-1, 7),
            9 => (1, 0),
            _ => (0, c - 1),
        }
    };

    // 1. 10x10 rows of 10 bits, solid in the low half-word, water in the high one.
    let mut rows = [[0u32; 10]; 10];
    let (mut all, mut any) = (u32::MAX, 0u32);
    for (y, plane) in rows.iter_mut().enumerate() {
        let (dy, ly) = split(y);
        for (z, row) in plane.iter_mut().enumerate() {
            let (dz, lz) = split(z);
            let shift = 8 * lz as u32;
            let row_of = |o: &Occupancy| {
                let s = ((o.solid[ly] >> shift) & 0xFF) as u32;
                let w = ((o.water[ly] >> shift) & 0xFF) as u32;
                s | (w << 16)
            };
            let (left, center, right) = (row_of(occ(-1, dy, dz)), row_of(occ(0, dy, dz)), row_of(occ(1, dy, dz)));
            // Bit 7 of the left chunk's row becomes bit 0; the right chunk's bit 0 bit 9.
            let r = ((left >> 7) & 0x0001_0001) | (center << 1) | ((right & 0x0001_0001) << 9);
            *row = r;
            all &= r;
            any |= r;
        }
    }
    const FULL_SOLID: u32 = 0x3FF;
    const FULL_WATER: u32 = 0x3FF << 16;
    if all & FULL_SOLID == FULL_SOLID {
        return Some(ChunkMask::FullSolid);
    }
    if all & FULL_WATER == FULL_WATER {
        return Some(ChunkMask::FullWater);
    }
    if any == 0 {
        return None;
    }

    // 2. Dilate along x, then z, then y.
    for plane in rows.iter_mut() {
        for r in plane.iter_mut() {
            *r |= (*r << 1) | (*r >> 1);
        }
    }
    let mut zdil = [[0u32; 10]; 10];
    for (out, plane) in zdil.iter_mut().zip(rows.iter()) {
        for z in 1..9 {
            out[z] = plane[z - 1] | plane[z] | plane[z + 1];
        }
    }

    // 3. Dilate along y while extracting the 8^3 interior.
    let mut masks = Masks::default();
    for y in 1..9 {
        let (mut solid, mut water) = (0u64, 0u64);
        for z in 1..9 {
            let r = zdil[y - 1][z] | zdil[y][z] | zdil[y + 1][z];
            solid |= (((r >> 1) & 0xFF) as u64) << (8 * (z - 1));
            water |= (((r >> 17) & 0xFF) as u64) << (8 * (z - 1));
        }
        masks.solid[y - 1] = solid;
        masks.water[y - 1] = water;
    }
    Some(ChunkMask::Mixed(Box::new(masks)))
}

/// `X_RANGE[min][max]`: ones at x in `min..=max` in every z row of a slice.
pub static X_RANGE: [[u64; 8]; 8] = range_table(1);
/// `Z_RANGE[min][max]`: ones in rows z in `min..=max` (all x).
pub static Z_RANGE: [[u64; 8]; 8] = range_table(8);

/// The reference's `masksVer` / `masksHor` lookup tables: for `stride` 1, bits
/// `x + 8 * z` with `x` in range (any z); for `stride` 8, with `z` in range (any x).
const fn range_table(stride: usize) -> [[u64; 8]; 8] {
    let mut table = [[0u64; 8]; 8];
    let mut lo = 0;
    while lo < 8 {
        let mut hi = lo;
        while hi < 8 {
            let mut mask = 0u64;
            let mut a = 0;
            while a < 8 {
                let mut b = lo;
                while b <= hi {
                    // stride 1: bit b + 8a (x = b in range); stride 8: bit a + 8b.
                    mask |= 1u64 << (b * stride + a * (9 - stride));
                    b += 1;
                }
                a += 1;
            }
            table[lo][hi] = mask;
            hi += 1;
        }
        lo += 1;
    }
    table
}
