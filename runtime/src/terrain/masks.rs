//! The bit broadphase data of one chunk, built with bit operations as in the
//! reference (Roblox's voxel terrain physics):
//!
//! 1. The chunk's 10^3 neighbourhood (its 8^3 voxels plus a one-voxel border taken
//!    from the 26 neighbours' occupancy bits) is read as 10 levels of 3x3 chunk
//!    slices: each chunk's slice is one `u64` of 8 rows of 8 bits (bit `x + 8 * z`),
//!    so a whole 8x8 slice moves per operation where the reference moves one row.
//! 2. Dilation along x by shifts within the rows (`s << 1`, `s >> 1`, masked at the
//!    row ends, which take column 7 or 0 of the chunk beside), then along z by
//!    shifting whole rows (`s << 8`, `s >> 8`, plus row 7 or 0 of the chunk in front
//!    or behind), then along y by ORing neighbouring levels: a voxel is marked when
//!    any of its 27 neighbours is filled, because the mesher's geometry may spill one
//!    voxel out of the voxel that made it.
//! 3. The 8 interior levels are the masks `solid[8]` and `water[8]`, one `u64` per Y
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
pub fn build_mask(occupancy: &[Option<&Occupancy>; 27]) -> Option<ChunkMask> {
    if occupancy.iter().all(Option::is_none) {
        return None;
    }
    const EMPTY: Occupancy = Occupancy::EMPTY;
    let occ: [&Occupancy; 27] = std::array::from_fn(|i| occupancy[i].unwrap_or(&EMPTY));

    // 1. + 2. Per level of the neighbourhood (local y = -1..=8) and per kind, the
    // slice dilated along x and z. `full` collects "every neighbourhood voxel of this
    // kind is set" for the two kinds.
    let mut planes = [[0u64; 2]; 10];
    let mut full = [u64::MAX; 2];
    for (level, plane) in planes.iter_mut().enumerate() {
        let (dy, ly) = match level {
            0 => (-1, 7),
            9 => (1, 0),
            _ => (0, level - 1),
        };
        for (kind, plane) in plane.iter_mut().enumerate() {
            // The slices of the 3x3 chunks of this level.
            let slice = |dx: i32, dz: i32| {
                let o = occ[neighbour_index(dx, dy, dz)];
                if kind == 0 {
                    o.solid[ly]
                } else {
                    o.water[ly]
                }
            };
            let (fl, f, fr) = (slice(-1, -1), slice(0, -1), slice(1, -1));
            let (l, m, r) = (slice(-1, 0), slice(0, 0), slice(1, 0));
            let (bl, b, br) = (slice(-1, 1), slice(0, 1), slice(1, 1));
            let (front, middle, back) = (dilate_x(fl, f, fr), dilate_x(l, m, r), dilate_x(bl, b, br));
            *plane = middle | middle << 8 | middle >> 8 | front >> 56 | back << 56;
            // The voxels each chunk lends the neighbourhood: all of the middle one, a
            // column or a row of the edge ones, one voxel of each corner.
            full[kind] &= m
                & (l | !COL7)
                & (r | !COL0)
                & (f | !ROW7)
                & (b | !ROW0)
                & (fl | !(1 << 63))
                & (fr | !(1 << 56))
                & (bl | !(1 << 7))
                & (br | !1);
        }
    }
    if full[0] == u64::MAX {
        return Some(ChunkMask::FullSolid);
    }
    if full[1] == u64::MAX {
        return Some(ChunkMask::FullWater);
    }

    // 3. Dilate along y while extracting the 8 interior slices. Every voxel of the
    // neighbourhood is within one voxel of the interior, so all-zero masks mean an
    // all-air neighbourhood.
    let mut masks = Masks::default();
    for y in 0..8 {
        masks.solid[y] = planes[y][0] | planes[y + 1][0] | planes[y + 2][0];
        masks.water[y] = planes[y][1] | planes[y + 1][1] | planes[y + 2][1];
    }
    if masks == Masks::default() {
        return None;
    }
    Some(ChunkMask::Mixed(Box::new(masks)))
}

/// Bits `x + 8 * z` with x = 0 (x = 7), and with z = 0 (z = 7).
const COL0: u64 = 0x0101_0101_0101_0101;
const COL7: u64 = COL0 << 7;
const ROW0: u64 = 0xFF;
const ROW7: u64 = ROW0 << 56;

/// A slice `mid` dilated along x by one voxel; `left` and `right` are the slices of
/// the chunks at x - 1 and x + 1, whose columns 7 and 0 border it.
#[inline(always)]
fn dilate_x(left: u64, mid: u64, right: u64) -> u64 {
    mid | ((mid << 1) & !COL0) | ((mid >> 1) & !COL7) | ((left >> 7) & COL0) | ((right << 7) & COL7)
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
