//! Octrees for level editors, and ray picking across many of them.
//!
//! An [`Octree`] is an axis-aligned cube at a world position with an edge length;
//! each cube in it is empty, solid, or an octant of 8 child cubes. Editors change it
//! by path (the child indices from the root) or load it whole from a compact byte
//! description. An [`OctreeSet`] holds many octrees of any position and size,
//! overlapping or nested, and picks the cube, face, point, corner and edge under a
//! ray.
//!
//! The design follows Inexor's multi-octree collision design and fixes the
//! shortcuts it takes (`docs/terrain.md`):
//!
//! | Inexor                                   | Kiln                                          |
//! |------------------------------------------|-----------------------------------------------|
//! | linear loop over octrees (sphere + box)  | a [`DynamicTree`] over each octree's solid bounds, visited near first |
//! | all 8 children tested, nearest by centre | only the children the ray crosses, in crossing order (Revelles et al. 2000, parametric) |
//! | octrees must not overlap                 | closest hit over all octrees; ties go to the older octree |
//!
//! Files: `mod.rs` storage and edits, `pick.rs` the ray traversal and the hit
//! description (face, corner, edge tables), `set.rs` the set with its tree and batch
//! picking, `reference.rs` the brute-force and Inexor-style pickers that tests and
//! benches compare against.
//!
//! # Storage
//!
//! Nodes live in one `Vec<u32>`: the root at 0, and the 8 children of an octant in a
//! block of 8 consecutive words; freed blocks are reused. A word is `0` (empty), `1`
//! (solid) or `block << 2 | 2` (octant). Empty space carries no structure: an octant
//! whose 8 children are all empty collapses to empty, so every octant holds at least
//! one solid cube. Solid octants are kept (an editor subdivides a cube to edit its
//! parts); [`Octree::subdivide`] makes one.
//!
//! # Coordinates
//!
//! Child `i` of a cube takes the upper half along x when bit 0 of `i` is set, along y
//! (up) for bit 1, along z for bit 2. A cube at depth `d` has integer coordinates
//! `k` in `0..2^d` per axis; its planes are `position + size * (k / 2^d)`, computed by
//! [`Octree::plane`] alone so that a plane shared by cubes of different depths is the
//! same float everywhere. Cubes are half-open boxes `[min, max)`: a point belongs to
//! exactly one cube of an octree.
//!
//! # Compact description
//!
//! Two bits per cube in pre-order (a cube, then its 8 children if it is an octant):
//! `0` empty, `1` solid, `2` octant (`3` is invalid), packed four to a byte from the
//! low bits up; unused bits of the last byte are zero. A solid 8-cube grid of depth 1
//! is `[0b01_01_01_10, 0b01_01_01_01, 0b01]`.

mod pick;
mod reference;
mod set;

use std::fmt;

use glam::Vec3;

use crate::math::Aabb;

#[cfg(doc)]
use super::DynamicTree;

pub use pick::{
    Cube, CubeHit, OctreeHit, PickRay, CORNERS_ON_FACE, EDGES_ON_FACE, EDGE_MIDPOINTS, FACE_BACK, FACE_BOTTOM,
    FACE_FRONT, FACE_LEFT, FACE_NAMES, FACE_NORMALS, FACE_RIGHT, FACE_TOP,
};
pub use reference::{pick_brute_force, pick_linear_scan, BruteForce};
pub use set::{OctreeId, OctreeSet};

/// Deepest cube level: paths hold at most this many child indices.
pub const OCTREE_MAX_DEPTH: usize = 16;

const EMPTY: u32 = 0;
const SOLID: u32 = 1;
const OCTANT_TAG: u32 = 2;

/// What a cube is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CubeKind {
    Empty,
    Solid,
    /// Eight child cubes.
    Octant,
}

/// Why an octree edit or load was refused. Nothing changed when one is returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OctreeError {
    /// Position or size not finite, size not > 0, or the far corner overflows.
    BadBounds,
    /// A path longer than [`OCTREE_MAX_DEPTH`].
    PathTooDeep(usize),
    /// A child index above 7 at this path position.
    BadChildIndex { position: usize, value: u8 },
    /// `subdivide` on a cube that is not solid.
    NotSolid,
    /// The byte description ended inside a cube list.
    Truncated,
    /// Code 3 at this cube of the byte description.
    BadCode { cube: usize },
    /// Octants nested deeper than [`OCTREE_MAX_DEPTH`] in the byte description.
    TooDeep,
    /// Bytes or non-zero bits after the last cube of the byte description.
    TrailingData,
}

impl fmt::Display for OctreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OctreeError::BadBounds => {
                write!(f, "octree position and size must be finite, size > 0 and position + size finite")
            }
            OctreeError::PathTooDeep(len) => {
                write!(f, "path has {len} child indices; at most {OCTREE_MAX_DEPTH} are allowed")
            }
            OctreeError::BadChildIndex { position, value } => {
                write!(f, "path[{position}] is {value}; child indices are 0..=7")
            }
            OctreeError::NotSolid => write!(f, "only a solid cube can be subdivided"),
            OctreeError::Truncated => write!(f, "the octree description ends inside an octant"),
            OctreeError::BadCode { cube } => write!(f, "cube {cube} of the octree description has the invalid code 3"),
            OctreeError::TooDeep => {
                write!(f, "the octree description nests octants deeper than {OCTREE_MAX_DEPTH} levels")
            }
            OctreeError::TrailingData => write!(f, "the octree description has data after its last cube"),
        }
    }
}

impl std::error::Error for OctreeError {}

/// One octree: a cube of `size` at `position` (its lowest corner), subdivided.
#[derive(Clone, Debug)]
pub struct Octree {
    position: Vec3,
    size: f32,
    /// Root at 0, then blocks of 8 children (see the module doc).
    nodes: Vec<u32>,
    /// First word of each free 8-block.
    free_blocks: Vec<u32>,
    /// Union of the solid cubes, `Aabb::EMPTY` when there are none.
    solid_bounds: Aabb,
}

fn check_path(path: &[u8]) -> Result<(), OctreeError> {
    if path.len() > OCTREE_MAX_DEPTH {
        return Err(OctreeError::PathTooDeep(path.len()));
    }
    match path.iter().position(|&c| c > 7) {
        Some(position) => Err(OctreeError::BadChildIndex { position, value: path[position] }),
        None => Ok(()),
    }
}

fn block_of(word: u32) -> Option<usize> {
    (word & 3 == OCTANT_TAG).then_some((word >> 2) as usize)
}

fn kind_of(word: u32) -> CubeKind {
    match word & 3 {
        EMPTY => CubeKind::Empty,
        SOLID => CubeKind::Solid,
        _ => CubeKind::Octant,
    }
}

/// `inner` touches no face of `outer`: clearing it cannot shrink a union that
/// `outer` bounds tightly.
fn strictly_inside(inner: &Aabb, outer: &Aabb) -> bool {
    inner.min.cmpgt(outer.min).all() && inner.max.cmplt(outer.max).all()
}

impl Octree {
    /// An empty octree. Fails unless `position` and `size` are finite, `size > 0`,
    /// and the far corner `position + size` is finite.
    pub fn new(position: Vec3, size: f32) -> Result<Octree, OctreeError> {
        if !(position.is_finite() && size.is_finite() && size > 0.0 && (position + size).is_finite()) {
            return Err(OctreeError::BadBounds);
        }
        Ok(Octree { position, size, nodes: vec![EMPTY], free_blocks: Vec::new(), solid_bounds: Aabb::EMPTY })
    }

    /// Lowest corner.
    pub fn position(&self) -> Vec3 {
        self.position
    }

    /// Edge length of the root cube.
    pub fn size(&self) -> f32 {
        self.size
    }

    /// The root cube's box.
    pub fn bounds(&self) -> Aabb {
        Aabb::new(self.position, self.position + self.size)
    }

    /// The union of the solid cubes (`Aabb::EMPTY` when nothing is solid).
    pub fn solid_bounds(&self) -> Aabb {
        self.solid_bounds
    }

    /// Coordinate of plane `k` (of `2^depth + 1`) along `axis`: the single formula
    /// every cube box, mid-plane and reference test uses.
    #[inline]
    pub fn plane(&self, axis: usize, k: u32, depth: u32) -> f32 {
        // `k / 2^depth` is exact in f32 for `depth <= OCTREE_MAX_DEPTH`.
        self.position[axis] + self.size * (k as f32 / (1u32 << depth) as f32)
    }

    /// The box of the cube at integer coordinates `k` and `depth`.
    pub fn cube_box(&self, k: [u32; 3], depth: u32) -> Aabb {
        let min = Vec3::from_array(std::array::from_fn(|a| self.plane(a, k[a], depth)));
        let max = Vec3::from_array(std::array::from_fn(|a| self.plane(a, k[a] + 1, depth)));
        Aabb::new(min, max)
    }

    /// Words in use (root plus 8 per octant); a size figure for tests and stats.
    pub fn cube_count(&self) -> usize {
        self.nodes.len() - 8 * self.free_blocks.len()
    }

    pub(crate) fn word(&self, node: usize) -> u32 {
        self.nodes[node]
    }

    /// The kind of the cube at `path`, or of the leaf above it when the path runs
    /// past a leaf (a cube inside a solid cube is solid).
    pub fn cube(&self, path: &[u8]) -> Result<CubeKind, OctreeError> {
        check_path(path)?;
        let mut node = 0;
        for &child in path {
            match block_of(self.nodes[node]) {
                Some(block) => node = block + child as usize,
                None => break,
            }
        }
        Ok(kind_of(self.nodes[node]))
    }

    /// Makes the cube at `path` empty or solid (`Octant` is refused: use
    /// [`Octree::subdivide`]), first splitting any leaf on the way into 8 copies of
    /// itself. Whatever was inside the cube is dropped.
    pub fn set_cube(&mut self, path: &[u8], solid: bool) -> Result<(), OctreeError> {
        check_path(path)?;
        let leaf = if solid { SOLID } else { EMPTY };
        let mut trail = [0usize; OCTREE_MAX_DEPTH + 1];
        let mut node = 0;
        for (level, &child) in path.iter().enumerate() {
            trail[level] = node;
            let block = match block_of(self.nodes[node]) {
                Some(block) => block,
                None if self.nodes[node] == leaf => return Ok(()), // already inside such a leaf
                None => {
                    let fill = self.nodes[node];
                    let block = self.alloc_block(fill);
                    self.nodes[node] = (block as u32) << 2 | OCTANT_TAG;
                    block
                }
            };
            node = block + child as usize;
        }
        self.free_subtree(node);
        let was_empty = self.nodes[node] == EMPTY;
        self.nodes[node] = leaf;
        // Collapse ancestors whose children all became empty.
        for level in (0..path.len()).rev() {
            let parent = trail[level];
            let block = block_of(self.nodes[parent]).expect("ancestors are octants");
            if self.nodes[block..block + 8].iter().any(|&w| w != EMPTY) {
                break;
            }
            self.free_block(block);
            self.nodes[parent] = EMPTY;
        }
        let cube = self.path_box(path);
        if solid {
            self.solid_bounds = self.solid_bounds.union(&cube);
        } else if !was_empty && !strictly_inside(&cube, &self.solid_bounds) {
            self.update_bounds(); // the cleared cube may have held the bounds' edge
        }
        Ok(())
    }

    /// Splits the solid cube at `path` into 8 solid children.
    pub fn subdivide(&mut self, path: &[u8]) -> Result<(), OctreeError> {
        check_path(path)?;
        if path.len() == OCTREE_MAX_DEPTH {
            return Err(OctreeError::PathTooDeep(path.len() + 1));
        }
        let mut node = 0;
        for &child in path {
            match block_of(self.nodes[node]) {
                Some(block) => node = block + child as usize,
                None => return Err(OctreeError::NotSolid), // a leaf above the path
            }
        }
        if self.nodes[node] != SOLID {
            return Err(OctreeError::NotSolid);
        }
        let block = self.alloc_block(SOLID);
        self.nodes[node] = (block as u32) << 2 | OCTANT_TAG;
        Ok(())
    }

    /// Builds an octree from the compact description (see the module doc). Octants
    /// whose children are all empty are collapsed.
    pub fn from_bytes(position: Vec3, size: f32, bytes: &[u8]) -> Result<Octree, OctreeError> {
        let mut tree = Octree::new(position, size)?;
        let code_count = bytes.len() * 4;
        let code = |i: usize| (bytes[i / 4] >> (2 * (i % 4))) & 3;
        // Pre-order walk: the stack holds (node word index, children left to read)
        // of open octants.
        let mut stack: Vec<(usize, u8)> = Vec::with_capacity(OCTREE_MAX_DEPTH);
        let mut next = 0usize;
        let mut target = 0usize; // node the next code fills
        loop {
            if next >= code_count {
                return Err(OctreeError::Truncated);
            }
            let c = code(next);
            next += 1;
            match c as u32 {
                EMPTY | SOLID => tree.nodes[target] = c as u32,
                OCTANT_TAG => {
                    if stack.len() == OCTREE_MAX_DEPTH {
                        return Err(OctreeError::TooDeep);
                    }
                    let block = tree.alloc_block(EMPTY);
                    tree.nodes[target] = (block as u32) << 2 | OCTANT_TAG;
                    stack.push((block, 0));
                }
                _ => return Err(OctreeError::BadCode { cube: next - 1 }),
            }
            // Find the next node to fill, closing finished octants.
            loop {
                let Some((block, filled)) = stack.last_mut() else {
                    // The root is complete: the rest must be zero padding.
                    let used_bytes = next.div_ceil(4);
                    let tail_bits = if next.is_multiple_of(4) { 0 } else { bytes[used_bytes - 1] >> (2 * (next % 4)) };
                    if used_bytes != bytes.len() || tail_bits != 0 {
                        return Err(OctreeError::TrailingData);
                    }
                    tree.collapse_empty(0);
                    tree.update_bounds();
                    return Ok(tree);
                };
                if *filled < 8 {
                    target = *block + *filled as usize;
                    *filled += 1;
                    break;
                }
                stack.pop();
            }
        }
    }

    /// The compact description of this octree (see the module doc).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut count = 0usize;
        let mut push = |c: u32| {
            if count.is_multiple_of(4) {
                out.push(0u8);
            }
            *out.last_mut().expect("pushed above") |= (c as u8) << (2 * (count % 4));
            count += 1;
        };
        let mut stack = vec![0usize];
        while let Some(node) = stack.pop() {
            let word = self.nodes[node];
            match block_of(word) {
                Some(block) => {
                    push(OCTANT_TAG);
                    stack.extend((block..block + 8).rev());
                }
                None => push(word),
            }
        }
        out
    }

    /// Checks the storage: every block reachable once, free blocks unreachable, no
    /// all-empty octant, depth within [`OCTREE_MAX_DEPTH`], and the solid bounds.
    /// Panics with a description on the first broken rule.
    pub fn validate(&self) {
        assert!((self.nodes.len() - 1).is_multiple_of(8), "node array is root + blocks of 8");
        let blocks = (self.nodes.len() - 1) / 8;
        let mut seen = vec![false; blocks];
        for &free in &self.free_blocks {
            let b = (free as usize - 1) / 8;
            assert!(!seen[b], "block {b} freed twice");
            seen[b] = true;
        }
        let mut bounds = Aabb::EMPTY;
        let mut stack = vec![(0usize, [0u32; 3], 0u32)];
        while let Some((node, k, depth)) = stack.pop() {
            assert!(depth as usize <= OCTREE_MAX_DEPTH, "cube deeper than the limit");
            let word = self.nodes[node];
            match block_of(word) {
                Some(block) => {
                    assert!(block >= 1 && (block - 1) % 8 == 0 && block + 8 <= self.nodes.len(), "bad block {block}");
                    let b = (block - 1) / 8;
                    assert!(!seen[b], "block {b} reachable twice or both free and used");
                    seen[b] = true;
                    assert!(depth < OCTREE_MAX_DEPTH as u32, "octant at the depth limit");
                    assert!(self.nodes[block..block + 8].iter().any(|&w| w != EMPTY), "all-empty octant at {node}");
                    for i in 0..8u32 {
                        let child_k = std::array::from_fn(|a| 2 * k[a] + (i >> a & 1));
                        stack.push((block + i as usize, child_k, depth + 1));
                    }
                }
                None => {
                    assert!(word == EMPTY || word == SOLID, "bad node word {word:#x} at {node}");
                    if word == SOLID {
                        bounds = bounds.union(&self.cube_box(k, depth));
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s), "a block is neither reachable nor free");
        assert_eq!(bounds, self.solid_bounds, "stale solid bounds");
    }

    /// The box of the cube at `path` (a checked path).
    fn path_box(&self, path: &[u8]) -> Aabb {
        let mut k = [0u32; 3];
        for &child in path {
            k = std::array::from_fn(|a| 2 * k[a] + (child as u32 >> a & 1));
        }
        self.cube_box(k, path.len() as u32)
    }

    fn alloc_block(&mut self, fill: u32) -> usize {
        let block = match self.free_blocks.pop() {
            Some(block) => block as usize,
            None => {
                let block = self.nodes.len();
                assert!(block + 8 <= (u32::MAX >> 2) as usize, "octree node array is full");
                self.nodes.resize(block + 8, EMPTY);
                block
            }
        };
        self.nodes[block..block + 8].fill(fill);
        block
    }

    fn free_block(&mut self, block: usize) {
        self.nodes[block..block + 8].fill(EMPTY);
        self.free_blocks.push(block as u32);
    }

    /// Frees every block below `node` (the node's own word is left as is).
    fn free_subtree(&mut self, node: usize) {
        let mut stack = Vec::new();
        if let Some(block) = block_of(self.nodes[node]) {
            stack.push(block);
        }
        while let Some(block) = stack.pop() {
            stack.extend(self.nodes[block..block + 8].iter().filter_map(|&w| block_of(w)));
            self.free_block(block);
        }
    }

    /// Collapses all-empty octants below and at `node`, bottom up. Returns whether
    /// `node` ended up empty.
    fn collapse_empty(&mut self, node: usize) -> bool {
        // Depth is bounded by OCTREE_MAX_DEPTH, so recursion is shallow.
        let Some(block) = block_of(self.nodes[node]) else {
            return self.nodes[node] == EMPTY;
        };
        let mut all_empty = true;
        for child in block..block + 8 {
            all_empty &= self.collapse_empty(child);
        }
        if all_empty {
            self.free_block(block);
            self.nodes[node] = EMPTY;
        }
        all_empty
    }

    fn update_bounds(&mut self) {
        let mut bounds = Aabb::EMPTY;
        self.for_each_leaf(OCTREE_MAX_DEPTH as u32, |k, depth| bounds = bounds.union(&self.cube_box(k, depth)));
        self.solid_bounds = bounds;
    }

    /// Calls `visit(k, depth)` for every cube a pick limited to `max_depth` can hit:
    /// solid leaves, and octants at `max_depth`.
    pub(crate) fn for_each_leaf(&self, max_depth: u32, mut visit: impl FnMut([u32; 3], u32)) {
        let mut stack = vec![(0usize, [0u32; 3], 0u32)];
        while let Some((node, k, depth)) = stack.pop() {
            let word = self.nodes[node];
            match block_of(word) {
                _ if word == EMPTY => {}
                Some(block) if depth < max_depth => {
                    for i in 0..8u32 {
                        let child_k = std::array::from_fn(|a| 2 * k[a] + (i >> a & 1));
                        stack.push((block + i as usize, child_k, depth + 1));
                    }
                }
                _ => visit(k, depth),
            }
        }
    }
}

#[cfg(test)]
mod tests;
