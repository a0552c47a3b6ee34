//! World snapshots in memory: everything of a world that decides its next steps,
//! saved between two steps and restored for rollback (a networked game's "restore,
//! re-apply the inputs, step again"). A restored world continues bit for bit as the
//! saved one did, for any worker count: the state below is all a step reads that an
//! earlier step wrote (Jolt's `StateRecorder` saves bodies and constraints; Box2D v3's
//! warm starting, sleep and pair state are what make this list longer).
//!
//! ```text
//!  saved                               left out (rebuilt by the next step)
//!  world settings                      colouring, solver rows and bundles
//!  bodies: both sets, slots, free      per-step body states and start poses
//!    list, shapes, motion types        job buffers and scratch
//!  broadphase tree, pairs, proxies     the query cache of escaped shapes
//!  terrain contact cache               the terrain itself: the world's must be
//!  sleeping groups with constraints      the one it was saved with, unedited
//!  joints (settings, impulses, events)   (`BodyError::SnapshotMismatch`)
//!  contact store, last step's table,
//!    warm-start cache, hull SAT axes
//!  touching pairs, sensors' visitors,
//!    water membership, last events
//!  terrain triangles last step gathered
//! ```
//!
//! Handles stay what they were at the save: a body created after the save is stale
//! after the restore, one destroyed after it is alive again.

use super::body::{Bodies, BodyError};
use super::events::{ContactHitEvent, Sensors};
use super::island::Islands;
use super::joint::Joints;
use super::narrow::{Gathered, NarrowOut};
use super::store::ConstraintStore;
use super::water::WaterState;
use super::world::{BodyMoveEvent, ContactEvent, Extent, Solver, StepCounters, StepProfile, World, WorldDef};
use crate::collide::SatCache;
use crate::spatial::{BroadPhase, ProxyId, TreeConfig};
use crate::terrain::TerrainContacts;

/// A world's state between two steps ([`World::snapshot`], [`World::restore`]).
#[derive(Clone, Debug)]
pub struct WorldSnapshot {
    pub(super) def: WorldDef,
    pub(super) solver: Solver,
    pub(super) bodies: Bodies,
    pub(super) broadphase: BroadPhase,
    pub(super) proxies: Vec<Vec<ProxyId>>,
    pub(super) extents: Vec<Extent>,
    /// The attached terrain's revision (`None`: no terrain).
    pub(super) terrain: Option<u64>,
    pub(super) terrain_contacts: TerrainContacts,
    pub(super) islands: Islands,
    pub(super) joints: Joints,
    pub(super) store: ConstraintStore,
    /// This step's and last step's tables, as slots of `store`.
    pub(super) constraints: Vec<u32>,
    pub(super) previous: Vec<u32>,
    pub(super) cache: Vec<(u64, u64, u32)>,
    pub(super) cache_ready: bool,
    /// The terrain triangles last step's narrowphase jobs gathered, and their index:
    /// the next step reads them again where a shape stayed inside their region.
    pub(super) gathered: Vec<Gathered>,
    pub(super) gathered_index: Vec<(u32, u32, u32)>,
    pub(super) axes: Vec<(u64, SatCache)>,
    pub(super) touching: Vec<u64>,
    pub(super) events: Vec<ContactEvent>,
    pub(super) pending_events: Vec<ContactEvent>,
    pub(super) sensors: Sensors,
    pub(super) hit_shapes: usize,
    pub(super) hit_events: Vec<ContactHitEvent>,
    pub(super) moves: Vec<BodyMoveEvent>,
    pub(super) water: WaterState,
    pub(super) profile: StepProfile,
    pub(super) counters: StepCounters,
}

impl WorldSnapshot {
    /// The number of live bodies saved.
    pub fn body_count(&self) -> usize {
        self.bodies.len()
    }

    /// A snapshot of nothing, to be filled ([`World::snapshot_into`] or a decode).
    pub(super) fn empty() -> WorldSnapshot {
        WorldSnapshot {
            def: WorldDef::default(),
            solver: Solver::default(),
            bodies: Bodies::default(),
            broadphase: BroadPhase::new(TreeConfig { margin: super::world::FAT_MARGIN, ..TreeConfig::default() }),
            proxies: Vec::new(),
            extents: Vec::new(),
            terrain: None,
            terrain_contacts: TerrainContacts::default(),
            islands: Islands::default(),
            joints: Joints::default(),
            store: ConstraintStore::default(),
            constraints: Vec::new(),
            previous: Vec::new(),
            cache: Vec::new(),
            cache_ready: false,
            gathered: Vec::new(),
            gathered_index: Vec::new(),
            axes: Vec::new(),
            touching: Vec::new(),
            events: Vec::new(),
            pending_events: Vec::new(),
            sensors: Sensors::default(),
            hit_shapes: 0,
            hit_events: Vec::new(),
            moves: Vec::new(),
            water: WaterState::default(),
            profile: StepProfile::default(),
            counters: StepCounters::default(),
        }
    }
}

impl World {
    /// Points this step's and last step's tables at `constraints` and `previous`, slots
    /// of the store just restored (distinct, live: checked when decoded).
    pub(super) fn set_tables(&mut self, constraints: &[u32], previous: &[u32]) {
        for (table, slots) in [(&mut self.constraints, constraints), (&mut self.previous, previous)] {
            table.clear();
            for &slot in slots {
                // SAFETY: a slot of the store just restored, holding the constraint
                // the saved table held there; the tables are the only way in.
                unsafe { table.push(self.store.address(slot)) };
            }
        }
    }

    /// Saves the world's state (see the module docs). Between steps only: in the
    /// middle of a staged step it is [`BodyError::OutOfOrder`].
    pub fn snapshot(&self) -> Result<WorldSnapshot, BodyError> {
        let mut s = WorldSnapshot::empty();
        self.snapshot_into(&mut s)?;
        Ok(s)
    }

    /// [`World::snapshot`] into `s`, reusing its buffers: saving into a snapshot of
    /// the same size allocates nothing.
    pub fn snapshot_into(&self, s: &mut WorldSnapshot) -> Result<(), BodyError> {
        if self.next_stage != 0 {
            return Err(BodyError::OutOfOrder);
        }
        s.def = self.def;
        s.solver = self.solver;
        s.bodies.clone_from(&self.bodies);
        s.broadphase.clone_from(&self.broadphase);
        s.proxies.clone_from(&self.proxies);
        s.extents.clone_from(&self.extents);
        s.terrain = self.terrain.as_ref().map(|t| t.revision());
        s.terrain_contacts.clone_from(&self.terrain_contacts);
        s.islands.clone_from(&self.islands);
        s.joints.clone_from(&self.joints);
        s.store.clone_from(&self.store);
        self.store.slots_into(&self.constraints, &mut s.constraints);
        self.store.slots_into(&self.previous, &mut s.previous);
        s.cache.clone_from(&self.cache);
        s.cache_ready = self.cache_ready;
        let outs = &self.scratch.outs[..self.scratch.joined];
        s.gathered.truncate(outs.len());
        s.gathered.resize_with(outs.len(), Gathered::default);
        for (to, out) in s.gathered.iter_mut().zip(outs) {
            to.clone_from(&out.gathered);
        }
        s.gathered_index.clone_from(&self.scratch.kept_index);
        s.axes.clone_from(&self.axes);
        s.touching.clone_from(&self.touching);
        s.events.clone_from(&self.events);
        s.pending_events.clone_from(&self.pending_events);
        s.sensors.clone_from(&self.sensors);
        s.hit_shapes = self.hit_shapes;
        s.hit_events.clone_from(&self.hit_events);
        s.moves.clone_from(&self.moves);
        self.water.save_into(&mut s.water);
        s.profile = self.profile;
        s.counters = self.counters;
        Ok(())
    }

    /// Puts the world back in the state `snapshot` saved (from this world or another
    /// with the same terrain). Between steps only ([`BodyError::OutOfOrder`]); a
    /// snapshot saved with another terrain, or before the terrain was edited, is
    /// [`BodyError::SnapshotMismatch`]. Either error changes nothing.
    pub fn restore(&mut self, snapshot: &WorldSnapshot) -> Result<(), BodyError> {
        if self.next_stage != 0 {
            return Err(BodyError::OutOfOrder);
        }
        if self.terrain.as_ref().map(|t| t.revision()) != snapshot.terrain {
            return Err(BodyError::SnapshotMismatch);
        }
        let s = snapshot;
        self.def = s.def;
        self.solver = s.solver;
        self.bodies.clone_from(&s.bodies);
        self.broadphase.clone_from(&s.broadphase);
        self.proxies.clone_from(&s.proxies);
        self.extents.clone_from(&s.extents);
        self.terrain_contacts.clone_from(&s.terrain_contacts);
        self.islands.clone_from(&s.islands);
        self.joints.clone_from(&s.joints);
        self.store.clone_from(&s.store);
        self.set_tables(&s.constraints, &s.previous);
        self.cache.clone_from(&s.cache);
        self.cache_ready = s.cache_ready;
        let scratch = &mut self.scratch;
        if scratch.outs.len() < s.gathered.len() {
            scratch.outs.resize_with(s.gathered.len(), NarrowOut::default);
        }
        for (out, gathered) in scratch.outs.iter_mut().zip(&s.gathered) {
            out.gathered.clone_from(gathered);
        }
        scratch.joined = s.gathered.len();
        scratch.kept_index.clone_from(&s.gathered_index);
        self.axes.clone_from(&s.axes);
        self.touching.clone_from(&s.touching);
        self.events.clone_from(&s.events);
        self.pending_events.clone_from(&s.pending_events);
        self.sensors.clone_from(&s.sensors);
        self.hit_shapes = s.hit_shapes;
        self.hit_events.clone_from(&s.hit_events);
        self.moves.clone_from(&s.moves);
        self.water.restore(&s.water);
        self.profile = s.profile;
        self.counters = s.counters;
        // The query cache and the list of awake shapes describe the bodies as they
        // were before the restore.
        self.escaped_fresh = false;
        self.moving_layout = None;
        self.coloring.forget();
        Ok(())
    }
}
