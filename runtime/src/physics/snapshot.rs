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
use super::world::{BodyMoveEvent, ContactEvent, Extent, StepCounters, StepProfile, World, WorldDef};
use crate::collide::SatCache;
use crate::spatial::{BroadPhase, ProxyId};
use crate::terrain::TerrainContacts;

/// A world's state between two steps ([`World::snapshot`], [`World::restore`]).
#[derive(Clone, Debug)]
pub struct WorldSnapshot {
    def: WorldDef,
    bodies: Bodies,
    broadphase: BroadPhase,
    proxies: Vec<Vec<ProxyId>>,
    extents: Vec<Extent>,
    /// The attached terrain's revision (`None`: no terrain).
    terrain: Option<u64>,
    terrain_contacts: TerrainContacts,
    islands: Islands,
    joints: Joints,
    store: ConstraintStore,
    /// This step's and last step's tables, as slots of `store`.
    constraints: Vec<u32>,
    previous: Vec<u32>,
    cache: Vec<(u64, u64, u32)>,
    cache_ready: bool,
    /// The terrain triangles last step's narrowphase jobs gathered, and their index:
    /// the next step reads them again where a shape stayed inside their region.
    gathered: Vec<Gathered>,
    gathered_index: Vec<(u32, u32, u32)>,
    axes: Vec<(u64, SatCache)>,
    touching: Vec<u64>,
    events: Vec<ContactEvent>,
    pending_events: Vec<ContactEvent>,
    sensors: Sensors,
    hit_shapes: usize,
    hit_events: Vec<ContactHitEvent>,
    moves: Vec<BodyMoveEvent>,
    water: WaterState,
    profile: StepProfile,
    counters: StepCounters,
}

impl WorldSnapshot {
    /// The number of live bodies saved.
    pub fn body_count(&self) -> usize {
        self.bodies.len()
    }
}

impl World {
    /// Saves the world's state (see the module docs). Between steps only: in the
    /// middle of a staged step it is [`BodyError::OutOfOrder`].
    pub fn snapshot(&self) -> Result<WorldSnapshot, BodyError> {
        if self.next_stage != 0 {
            return Err(BodyError::OutOfOrder);
        }
        Ok(WorldSnapshot {
            def: self.def,
            bodies: self.bodies.clone(),
            broadphase: self.broadphase.clone(),
            proxies: self.proxies.clone(),
            extents: self.extents.clone(),
            terrain: self.terrain.as_ref().map(|t| t.revision()),
            terrain_contacts: self.terrain_contacts.clone(),
            islands: self.islands.clone(),
            joints: self.joints.clone(),
            store: self.store.clone(),
            constraints: self.store.slots(&self.constraints),
            previous: self.store.slots(&self.previous),
            cache: self.cache.clone(),
            cache_ready: self.cache_ready,
            gathered: self.scratch.outs[..self.scratch.joined].iter().map(|o| o.gathered.clone()).collect(),
            gathered_index: self.scratch.kept_index.clone(),
            axes: self.axes.clone(),
            touching: self.touching.clone(),
            events: self.events.clone(),
            pending_events: self.pending_events.clone(),
            sensors: self.sensors.clone(),
            hit_shapes: self.hit_shapes,
            hit_events: self.hit_events.clone(),
            moves: self.moves.clone(),
            water: self.water.saved(),
            profile: self.profile,
            counters: self.counters,
        })
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
        self.bodies.clone_from(&s.bodies);
        self.broadphase.clone_from(&s.broadphase);
        self.proxies.clone_from(&s.proxies);
        self.extents.clone_from(&s.extents);
        self.terrain_contacts.clone_from(&s.terrain_contacts);
        self.islands.clone_from(&s.islands);
        self.joints.clone_from(&s.joints);
        self.store.clone_from(&s.store);
        for (table, slots) in [(&mut self.constraints, &s.constraints), (&mut self.previous, &s.previous)] {
            table.clear();
            for &slot in slots {
                // SAFETY: a slot of the store just restored, holding the constraint
                // the saved table held there; the tables are the only way in.
                unsafe { table.push(self.store.address(slot)) };
            }
        }
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
        // The query cache describes the bodies as they were before the restore.
        self.escaped_fresh = false;
        Ok(())
    }
}
