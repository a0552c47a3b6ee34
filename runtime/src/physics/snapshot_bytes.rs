//! World snapshots as bytes: the state [`WorldSnapshot`] holds, written into a
//! caller's buffer and read back into a live or fresh world, in this process or
//! another (the encoding is `codec`'s: little-endian, field by field).
//!
//! ```text
//!  offset  size  field
//!       0     8  magic "KILNSNAP"
//!       8     4  format version (SNAPSHOT_FORMAT)
//!      12     4  library version (major << 16 | minor << 8 | patch)
//!      16     8  total size in bytes, header included
//!      24     8  checksum of every byte from offset 32 to the end
//!      32     4  flags: bit 0, a terrain is attached; bit 1, awake only
//!      36     4  zero
//!      40     8  the terrain's base fingerprint (voxels and voxel size at the
//!                  base, see `Terrain::rebase`; 0: no terrain)
//!      48     8  awake only: the checksum of the resting bodies and sleeping
//!                  groups left out (0 otherwise)
//!      56        terrain edits (with a terrain only): the chunks edited since the
//!                  base, by increasing coordinates, each with its 512 voxels or
//!                  as all air; the chunks waiting for regeneration
//!                hull table: count, then per hull its fingerprint, byte length
//!                  and encoding, by increasing fingerprint
//!                compound table: the same (parts name hulls by fingerprint)
//!                the world's state: settings, bodies and shapes (hulls and
//!                  compounds by fingerprint), broadphase, terrain contacts,
//!                  sleeping groups, joints, contact store and tables, warm-start
//!                  cache, gathered terrain triangles, hull axes, touching pairs,
//!                  sensors, events, water membership and step counters (not
//!                  the step's timings)
//! ```
//!
//! Shared shape data is written once per snapshot and named by its fingerprint (the
//! checksum of its encoding); a restore reuses the hulls and compounds the world or
//! the last restore already holds, so a rollback loop allocates no shapes. A restore
//! checks the header, the size, the checksum and the terrain before it decodes, and
//! decodes into a staging snapshot before it touches the world: a refused snapshot
//! changes nothing. The terrain's voxels travel as edits since its base: a restore
//! puts the ground back as it was at the save (a dig rolled back fills in again),
//! rebuilding the masks of the chunks that change without waking anything.
//!
//! An awake-only snapshot leaves out the resting set (static and sleeping bodies)
//! and the sleeping groups with their contacts, and names them by the checksum of
//! their encoding: it restores only into a world whose resting bodies and sleeping
//! groups are still bit for bit those it was saved beside (else
//! `SnapshotError::SleepingChanged`), which is what a rollback a few frames back
//! over a mostly sleeping world has.

use std::sync::Arc;

use super::body::Bodies;
use super::island::Islands;
use super::narrow::NarrowOut;
use super::snapshot::WorldSnapshot;
use super::world::World;
use crate::codec::{checksum, Codec, Corrupt, Reader, ShapeTables, Shared, TakeNew, Writer};
use crate::shapes::{Compound, ConvexHull, Shape};
use crate::terrain::TerrainEdits;
use glam::IVec3;

/// The snapshot format's version: any change to what the format holds or how it
/// is encoded takes the next number.
pub const SNAPSHOT_FORMAT: u32 = 5;

const MAGIC: [u8; 8] = *b"KILNSNAP";
const HEADER: usize = 56;
/// Where the checksummed bytes start.
const CHECKED: usize = 32;
/// Header flag: a terrain is attached (its edits follow the header).
const HAS_TERRAIN: u64 = 1;
/// Header flag: the resting bodies and sleeping groups are left out.
const AWAKE_ONLY: u64 = 2;

/// The checksum a snapshot's header holds of its bytes from offset 32 on (for tools
/// and fuzzers that build snapshots by hand).
pub fn snapshot_checksum(bytes: &[u8]) -> u64 {
    checksum(bytes)
}

/// The library's version as one number, `major << 16 | minor << 8 | patch`.
pub const fn library_version() -> u32 {
    let v = env!("CARGO_PKG_VERSION").as_bytes();
    let (mut parts, mut part, mut i) = ([0u32; 3], 0, 0);
    while i < v.len() && part < 3 {
        match v[i] {
            b'.' => part += 1,
            b'0'..=b'9' => parts[part] = parts[part] * 10 + (v[i] - b'0') as u32,
            _ => break,
        }
        i += 1;
    }
    parts[0] << 16 | parts[1] << 8 | parts[2]
}

/// Why a snapshot was not saved or not restored. A refused restore changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// In the middle of a staged step (see `World::step_stage`).
    OutOfOrder,
    /// The buffer holds fewer bytes than the snapshot needs (that many).
    BufferTooSmall(usize),
    /// The bytes do not start with a snapshot header.
    NotASnapshot,
    /// Another format or library version wrote it (its format and library version).
    Version { format: u32, library: u32 },
    /// Fewer or more bytes than the header says.
    Truncated,
    /// The checksum does not match, or the contents do not decode or hang together.
    Corrupt,
    /// Saved with another terrain or none, or against another base of this one (see
    /// `Terrain::rebase`).
    ForeignTerrain,
    /// An awake-only snapshot, and the world's resting bodies or sleeping groups are
    /// not those it was saved beside (restore a full snapshot).
    SleepingChanged,
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::OutOfOrder => f.write_str("a snapshot is saved or restored between steps, not inside one"),
            SnapshotError::BufferTooSmall(n) => write!(f, "the snapshot needs {n} bytes"),
            SnapshotError::NotASnapshot => f.write_str("the bytes are not a Kiln world snapshot (no header)"),
            SnapshotError::Version { format, library } => write!(
                f,
                "the snapshot is of format {format} from library {}.{}.{}; this library reads format {SNAPSHOT_FORMAT} of {}.{}.{}",
                library >> 16,
                library >> 8 & 255,
                library & 255,
                library_version() >> 16,
                library_version() >> 8 & 255,
                library_version() & 255
            ),
            SnapshotError::Truncated => f.write_str("the snapshot is shorter or longer than its header says"),
            SnapshotError::Corrupt => f.write_str("the snapshot's checksum or contents are damaged"),
            SnapshotError::ForeignTerrain => f.write_str(
                "the snapshot was saved with another terrain (or none), or against another base of this one",
            ),
            SnapshotError::SleepingChanged => f.write_str(
                "the snapshot holds the awake bodies only, and the world's resting bodies or sleeping groups \
                 changed since it was saved (restore a full snapshot)",
            ),
        }
    }
}

impl std::error::Error for SnapshotError {}

impl From<Corrupt> for SnapshotError {
    fn from(_: Corrupt) -> SnapshotError {
        SnapshotError::Corrupt
    }
}

/// What saving and restoring reuse from call to call.
#[derive(Debug)]
pub(super) struct SnapshotScratch {
    staging: WorldSnapshot,
    hulls: Vec<(u64, Shared)>,
    compounds: Vec<(u64, Shared)>,
    known_hulls: Vec<(u64, Shared)>,
    known_compounds: Vec<(u64, Shared)>,
    seen: Vec<u64>,
    slots: [Vec<u32>; 2],
    /// The terrain edits of the snapshot being restored, and the chunk list a save
    /// sorts.
    edits: TerrainEdits,
    chunks: Vec<IVec3>,
    /// The encoding of the resting bodies and sleeping groups, for their checksum.
    remainder: Vec<u8>,
}

impl World {
    /// The bytes [`World::save_bytes`] needs now (a pass over the whole state).
    pub fn snapshot_size(&mut self) -> Result<usize, SnapshotError> {
        match self.save_bytes(&mut []) {
            Err(SnapshotError::BufferTooSmall(n)) => Ok(n),
            other => other,
        }
    }

    /// [`World::save_bytes`] without the resting bodies and sleeping groups, which
    /// the snapshot names by a checksum instead (see the module docs): the smaller
    /// snapshot a rollback over a mostly sleeping world keeps. It restores only while
    /// those are unchanged ([`SnapshotError::SleepingChanged`] otherwise). Saving
    /// checksums the part left out: it is smaller, not much faster.
    pub fn save_awake_bytes(&mut self, out: &mut [u8]) -> Result<usize, SnapshotError> {
        // SAFETY: a slice is writable for its length.
        unsafe { self.save_raw(out.as_mut_ptr(), out.len(), true) }
    }

    /// [`World::save_awake_bytes`] into `capacity` bytes at `out`.
    ///
    /// # Safety
    /// As [`World::save_bytes_raw`].
    pub unsafe fn save_awake_bytes_raw(&mut self, out: *mut u8, capacity: usize) -> Result<usize, SnapshotError> {
        // SAFETY: the caller's contract.
        unsafe { self.save_raw(out, capacity, true) }
    }

    /// Writes the world's state into `out` (see the module docs) and returns the
    /// bytes written: [`SnapshotError::BufferTooSmall`] with the size needed when it
    /// does not fit (then `out`'s contents are unspecified). Between steps only.
    /// Saving into a buffer of the size needed allocates nothing once a first save
    /// has sized the world's scratch.
    pub fn save_bytes(&mut self, out: &mut [u8]) -> Result<usize, SnapshotError> {
        // SAFETY: a slice is writable for its length.
        unsafe { self.save_bytes_raw(out.as_mut_ptr(), out.len()) }
    }

    /// [`World::save_bytes`] into `capacity` bytes at `out`, of which only the
    /// snapshot's are written (for a C caller's buffer).
    ///
    /// # Safety
    /// `out` is writable for `capacity` bytes (or `capacity` is 0), and nothing else
    /// reads or writes them during the call.
    pub unsafe fn save_bytes_raw(&mut self, out: *mut u8, capacity: usize) -> Result<usize, SnapshotError> {
        // SAFETY: the caller's contract.
        unsafe { self.save_raw(out, capacity, false) }
    }

    /// # Safety
    /// As [`World::save_bytes_raw`].
    unsafe fn save_raw(&mut self, out: *mut u8, capacity: usize, awake_only: bool) -> Result<usize, SnapshotError> {
        if self.next_stage != 0 {
            return Err(SnapshotError::OutOfOrder);
        }
        let mut x = self.scratch.snapshot.take().unwrap_or_else(|| Box::new(SnapshotScratch::new()));
        // SAFETY: the caller's contract.
        let mut w = unsafe { Writer::from_raw(out, capacity, self.terrain.as_ref().map_or(0, |t| t.mask_stamp())) };
        w.revision = self.terrain.as_ref().map_or(0, |t| t.revision());
        let result = self.save_with(&mut x, &mut w, awake_only);
        x.hulls.clear();
        x.compounds.clear();
        self.scratch.snapshot = Some(x);
        result
    }

    fn save_with(&mut self, x: &mut SnapshotScratch, w: &mut Writer, awake_only: bool) -> Result<usize, SnapshotError> {
        collect_shapes(&self.bodies, &mut x.hulls, &mut x.compounds);
        let base = self.terrain_base();
        let flags = if base.is_some() { HAS_TERRAIN } else { 0 } | if awake_only { AWAKE_ONLY } else { 0 };
        let remainder = if awake_only { self.remainder_checksum(&mut x.remainder) } else { 0 };
        w.bytes(&MAGIC);
        (SNAPSHOT_FORMAT, library_version()).put(w);
        (0u64, 0u64).put(w);
        (flags, base.unwrap_or(0), remainder).put(w);
        debug_assert_eq!(w.len(), HEADER);
        if let Some(terrain) = &self.terrain {
            terrain.put_edits(&mut x.chunks, w);
        }
        put_table::<ConvexHull>(&x.hulls, w);
        put_table::<Compound>(&x.compounds, w);
        self.put_state(&mut x.slots, w, awake_only);
        let len = w.len();
        if !w.fits() {
            return Err(SnapshotError::BufferTooSmall(len));
        }
        w.patch_u64(16, len as u64);
        let sum = checksum(w.written(CHECKED..len).expect("it fits"));
        w.patch_u64(24, sum);
        Ok(len)
    }

    /// Puts the world back in the state `bytes` (from [`World::save_bytes`]) hold,
    /// from this world or another with the same terrain, in this process or another.
    /// Refused, changing nothing, when the bytes are not a snapshot, are of another
    /// version, truncated or damaged, or were saved with another terrain. Handles
    /// issued before the save are valid after. Between steps only. Restoring a
    /// snapshot of the same size as the last allocates nothing.
    pub fn restore_bytes(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        if self.next_stage != 0 {
            return Err(SnapshotError::OutOfOrder);
        }
        let header = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        if bytes.len() < HEADER || bytes[..8] != MAGIC {
            return Err(SnapshotError::NotASnapshot);
        }
        let (format, library) = (header(8) as u32, (header(8) >> 32) as u32);
        if format != SNAPSHOT_FORMAT || library != library_version() {
            return Err(SnapshotError::Version { format, library });
        }
        if header(16) != bytes.len() as u64 {
            return Err(SnapshotError::Truncated);
        }
        let flags = header(32);
        let awake_only = flags & AWAKE_ONLY != 0;
        if header(24) != checksum(&bytes[CHECKED..])
            || flags & !(HAS_TERRAIN | AWAKE_ONLY) != 0
            || (!awake_only && header(48) != 0)
        {
            return Err(SnapshotError::Corrupt);
        }
        let base = (flags & HAS_TERRAIN != 0).then(|| header(40));
        let mut x = self.scratch.snapshot.take().unwrap_or_else(|| Box::new(SnapshotScratch::new()));
        let result = if awake_only && header(48) != self.remainder_checksum(&mut x.remainder) {
            Err(SnapshotError::SleepingChanged)
        } else {
            self.restore_with(&mut x, bytes, base, awake_only)
        };
        for list in [&mut x.hulls, &mut x.known_hulls] {
            list.clear();
        }
        for list in [&mut x.compounds, &mut x.known_compounds] {
            list.clear();
        }
        self.scratch.snapshot = Some(x);
        result
    }

    fn restore_with(
        &mut self,
        x: &mut SnapshotScratch,
        bytes: &[u8],
        base: Option<u64>,
        awake_only: bool,
    ) -> Result<(), SnapshotError> {
        if base != self.terrain_base() {
            return Err(SnapshotError::ForeignTerrain);
        }
        // The shapes this world and the last restore hold, to reuse by fingerprint.
        collect_shapes(&x.staging.bodies, &mut x.known_hulls, &mut x.known_compounds);
        let (mut hulls, mut compounds) = (std::mem::take(&mut x.hulls), std::mem::take(&mut x.compounds));
        for shape in self.bodies.every_shape() {
            push_shape(&shape.shape, &mut hulls, &mut compounds);
        }
        merge_known(&mut x.known_hulls, &mut hulls);
        merge_known(&mut x.known_compounds, &mut compounds);
        (x.hulls, x.compounds) = (hulls, compounds);

        // Values the snapshot names as the terrain's current mask stamp and revision
        // read back as this terrain's; renamed below when the restore changes them.
        let (mask_stamp, revision) = self.terrain.as_ref().map_or((0, 0), |t| (t.mask_stamp(), t.revision()));
        let reader = |at: usize, tables| {
            let mut r = Reader::new(&bytes[at..], mask_stamp, tables);
            r.revision = revision;
            r
        };
        let mut r = reader(HEADER, ShapeTables::default());
        if base.is_some() {
            x.edits.take(&mut r)?;
        }
        take_table(&mut r, &x.known_hulls, &mut x.hulls, ConvexHull::from_snapshot)?;
        let at = bytes.len() - r.remaining();
        let tables = ShapeTables { hulls: &x.hulls, compounds: &[] };
        let mut r = reader(at, tables);
        take_table(&mut r, &x.known_compounds, &mut x.compounds, |b| Compound::from_snapshot(b, tables))?;
        let at = bytes.len() - r.remaining();
        let tables = ShapeTables { hulls: &x.hulls, compounds: &x.compounds };
        let mut r = reader(at, tables);
        let s = &mut x.staging;
        let kept = awake_only.then_some((&self.bodies, &self.islands));
        s.take_checked(&mut r, &mut x.seen, kept)?;
        if r.remaining() != 0 {
            return Err(SnapshotError::Corrupt);
        }
        // Everything decoded: from here the restore cannot fail.
        if let Some(terrain) = &mut self.terrain {
            terrain.restore_edits(&mut x.edits);
            if terrain.mask_stamp() != mask_stamp {
                s.terrain_contacts.restamp(mask_stamp, terrain.mask_stamp());
            }
            if terrain.revision() != revision {
                s.gathered.iter_mut().for_each(|g| g.rename_revision(revision, terrain.revision()));
            }
        }
        self.swap_state(s);
        Ok(())
    }

    /// Writes the world's state; `slots` is scratch for its two tables' slot lists.
    /// Reads back with [`WorldSnapshot::take_checked`], field for field.
    fn put_state(&self, slots: &mut [Vec<u32>; 2], w: &mut Writer, awake_only: bool) {
        self.def.put(w);
        self.solver.put(w);
        if awake_only {
            self.bodies.put_without_resting(w);
        } else {
            self.bodies.put(w);
        }
        self.broadphase.put(w);
        self.proxies.put(w);
        self.extents.put(w);
        self.terrain_contacts.put(w);
        if awake_only {
            self.islands.put_without_groups(w);
        } else {
            self.islands.put(w);
        }
        self.joints.put(w);
        self.store.slots_into(&self.constraints, &mut slots[0]);
        self.store.slots_into(&self.previous, &mut slots[1]);
        self.store.put_with_tables([&slots[0], &slots[1]], w);
        self.cache.put(w);
        self.cache_ready.put(w);
        let outs = &self.scratch.outs[..self.scratch.joined];
        (outs.len() as u32).put(w);
        outs.iter().for_each(|out| out.gathered.put(w));
        self.scratch.kept_index.put(w);
        self.axes.put(w);
        self.touching.put(w);
        self.events.put(w);
        self.pending_events.put(w);
        self.sensors.put(w);
        self.hit_shapes.put(w);
        self.hit_events.put(w);
        self.moves.put(w);
        self.water.put_saved(w);
        self.counters.put(w);
    }

    /// Takes a decoded snapshot's state, swapping most of it in so that `s` keeps the
    /// world's former buffers for the next decode (nothing allocated once warm). The
    /// step's timings stay the world's: they are not state.
    fn swap_state(&mut self, s: &mut WorldSnapshot) {
        use std::mem::swap;
        self.def = s.def;
        self.solver = s.solver;
        // Bodies and islands are copied into the world's own memory, not swapped: the
        // steps after a restore push into their sets and groups, and a swapped-in
        // buffer would have only the capacity of the state decoded into it.
        self.bodies.copy_from(&s.bodies);
        swap(&mut self.broadphase, &mut s.broadphase);
        swap(&mut self.proxies, &mut s.proxies);
        swap(&mut self.extents, &mut s.extents);
        swap(&mut self.terrain_contacts, &mut s.terrain_contacts);
        self.islands.copy_from(&s.islands);
        swap(&mut self.joints, &mut s.joints);
        swap(&mut self.store, &mut s.store);
        self.set_tables(&s.constraints, &s.previous);
        swap(&mut self.cache, &mut s.cache);
        self.cache_ready = s.cache_ready;
        let scratch = &mut self.scratch;
        if scratch.outs.len() < s.gathered.len() {
            scratch.outs.resize_with(s.gathered.len(), NarrowOut::default);
        }
        for (out, gathered) in scratch.outs.iter_mut().zip(&mut s.gathered) {
            swap(&mut out.gathered, gathered);
        }
        scratch.joined = s.gathered.len();
        swap(&mut scratch.kept_index, &mut s.gathered_index);
        swap(&mut self.axes, &mut s.axes);
        swap(&mut self.touching, &mut s.touching);
        swap(&mut self.events, &mut s.events);
        swap(&mut self.pending_events, &mut s.pending_events);
        swap(&mut self.sensors, &mut s.sensors);
        self.hit_shapes = s.hit_shapes;
        swap(&mut self.hit_events, &mut s.hit_events);
        swap(&mut self.moves, &mut s.moves);
        self.water.swap_saved(&mut s.water);
        self.counters = s.counters;
        self.escaped_fresh = false;
        self.moving_layout = None;
        self.coloring.forget();
    }

    /// The checksum of the resting bodies' and sleeping groups' encoding (into
    /// `buf`, grown when short): what an awake-only snapshot names them by.
    fn remainder_checksum(&self, buf: &mut Vec<u8>) -> u64 {
        loop {
            let capacity = buf.capacity();
            buf.resize(capacity, 0);
            let mut w = Writer::new(buf, 0);
            self.bodies.resting.put(&mut w);
            self.islands.put_groups(&mut w);
            let len = w.len();
            if w.fits() {
                return checksum(&buf[..len]);
            }
            buf.reserve(len - buf.len());
        }
    }

    /// The attached terrain's base fingerprint (a terrain given no base yet takes
    /// its voxels now as the base).
    fn terrain_base(&mut self) -> Option<u64> {
        let terrain = self.terrain.as_mut()?;
        if terrain.base_fingerprint().is_none() {
            terrain.rebase();
        }
        terrain.base_fingerprint()
    }
}

impl SnapshotScratch {
    fn new() -> SnapshotScratch {
        SnapshotScratch {
            staging: WorldSnapshot::empty(),
            hulls: Vec::new(),
            compounds: Vec::new(),
            known_hulls: Vec::new(),
            known_compounds: Vec::new(),
            seen: Vec::new(),
            slots: [Vec::new(), Vec::new()],
            edits: TerrainEdits::default(),
            chunks: Vec::new(),
            remainder: Vec::new(),
        }
    }
}

impl WorldSnapshot {
    /// Reads a snapshot's state (as [`World::put_state`] wrote it) into `self`, then checks that the bodies and the
    /// contact store hang together (`seen` is scratch).
    /// With `kept` (an awake-only snapshot), the resting set and sleeping groups are
    /// copied from those bodies and islands instead.
    fn take_checked(
        &mut self,
        r: &mut Reader,
        seen: &mut Vec<u64>,
        kept: Option<(&Bodies, &Islands)>,
    ) -> Result<(), Corrupt> {
        self.def.take(r)?;
        self.solver.take(r)?;
        match kept {
            Some((bodies, _)) => self.bodies.take_without_resting(r, &bodies.resting)?,
            None => self.bodies.take(r)?,
        }
        self.broadphase.take(r)?;
        self.proxies.take(r)?;
        self.extents.take(r)?;
        self.terrain_contacts.take(r)?;
        match kept {
            Some((_, islands)) => self.islands.take_without_groups(r, islands)?,
            None => self.islands.take(r)?,
        }
        self.joints.take(r)?;
        self.store.take_with_tables([&mut self.constraints, &mut self.previous], seen, r)?;
        self.cache.take(r)?;
        self.cache_ready.take(r)?;
        self.gathered.take(r)?;
        self.gathered_index.take(r)?;
        self.axes.take(r)?;
        self.touching.take(r)?;
        self.events.take(r)?;
        self.pending_events.take(r)?;
        self.sensors.take(r)?;
        self.hit_shapes.take(r)?;
        self.hit_events.take(r)?;
        self.moves.take(r)?;
        self.water.take(r)?;
        self.counters.take(r)?;
        let slots = self.proxies.len();
        if !self.bodies.is_coherent() || self.extents.len() != slots {
            return Err(Corrupt);
        }
        Ok(())
    }
}

/// Every distinct hull and compound `bodies` hold (a compound's hulls included), by
/// increasing fingerprint.
fn collect_shapes(bodies: &Bodies, hulls: &mut Vec<(u64, Shared)>, compounds: &mut Vec<(u64, Shared)>) {
    hulls.clear();
    compounds.clear();
    for shape in bodies.every_shape() {
        push_shape(&shape.shape, hulls, compounds);
    }
    hulls.sort_unstable_by_key(|e| e.0);
    hulls.dedup_by_key(|e| e.0);
    compounds.sort_unstable_by_key(|e| e.0);
    compounds.dedup_by_key(|e| e.0);
}

fn push_shape(shape: &Shape, hulls: &mut Vec<(u64, Shared)>, compounds: &mut Vec<(u64, Shared)>) {
    match shape {
        Shape::Hull(h) => hulls.push((h.fingerprint(), h.clone())),
        Shape::Compound(c) => {
            compounds.push((c.fingerprint(), c.clone()));
            for part in c.parts() {
                if let Shape::Hull(h) = &part.shape {
                    hulls.push((h.fingerprint(), h.clone()));
                }
            }
        }
        _ => {}
    }
}

/// Adds `more` to the sorted `known`, sorted and without repeats (`more` is left empty).
fn merge_known(known: &mut Vec<(u64, Shared)>, more: &mut Vec<(u64, Shared)>) {
    known.append(more);
    known.sort_unstable_by_key(|e| e.0);
    known.dedup_by_key(|e| e.0);
}

/// Writes a shape table: the count, then per shape its fingerprint, its encoding's
/// length and its encoding.
fn put_table<T: Codec + 'static>(table: &[(u64, Shared)], w: &mut Writer) {
    (table.len() as u32).put(w);
    for (print, shape) in table {
        print.put(w);
        let at = w.len();
        0u32.put(w);
        shape.downcast_ref::<T>().expect("a table of one kind").put(w);
        let len = w.len() - at - 4;
        w.patch_u32(at, len as u32);
    }
}

/// Reads a shape table into `out`: each entry is taken from `known` when a shape
/// with its fingerprint is there, else decoded by `make`. Entries must come by
/// increasing fingerprint, and a decoded one must have the fingerprint it is filed under.
fn take_table<T: Send + Sync + 'static>(
    r: &mut Reader,
    known: &[(u64, Shared)],
    out: &mut Vec<(u64, Shared)>,
    make: impl Fn(&[u8]) -> Result<T, Corrupt>,
) -> Result<(), Corrupt> {
    out.clear();
    let n = r.count()?;
    for _ in 0..n {
        let print = u64::take_new(r)?;
        let len = u32::take_new(r)? as usize;
        let bytes = r.bytes(len)?;
        if out.last().is_some_and(|e| e.0 >= print) {
            return Err(Corrupt);
        }
        let shape = match known.binary_search_by_key(&print, |e| e.0) {
            Ok(i) => known[i].1.clone(),
            Err(_) => {
                if checksum(bytes) != print {
                    return Err(Corrupt);
                }
                Arc::new(make(bytes)?)
            }
        };
        out.push((print, shape));
    }
    Ok(())
}
