//! The world: bodies, shapes, terrain, and the step.
//!
//! A step runs these stages in order; each stage's per-item work runs as parallel
//! jobs where the data allows, and each stage's serial part works in a fixed order, so
//! the result is the same bits for any worker count and any scheduler:
//!
//! | stage | work | parallel |
//! | --- | --- | --- |
//! | terrain | regenerate edited chunks' masks; wake bodies touching them | chunks |
//! | broadphase | shape boxes, tree moves, terrain contacts, new pairs | boxes, pairs, terrain |
//! | narrowphase | manifolds for pairs with an awake body (reused while a pair is still) and for terrain; warm-start impulses matched by feature id; awake rows | items |
//! | wake | wake sleeping islands touched by awake bodies | — |
//! | prepare | constraints joined (rows set again only where bodies changed rows since the narrowphase) | constraints |
//! | coloring | graph colours over dynamic bodies | beside the lists |
//! | lists | the next step's warm-start cache, sorted by pair key; contact begin/end from it | beside the colouring |
//! | solve | soft step: substeps of integrate, warm start, solve, relax | bodies, colours |
//! | finalize | poses, inertia, sleep timers | bodies |
//! | continuous | time of impact of fast bodies against static geometry | fast bodies |
//! | sleep | islands linked by the contact events; quiet islands split if they lost a link, then to sleep | — |
//!
//! [`StepStage`] groups these rows into the six stages a frame graph sees:
//! `physics.broadphase` (terrain, broadphase), `physics.narrowphase` (narrowphase,
//! wake), `physics.prepare` (prepare, coloring, lists), `physics.solve` (solve,
//! finalize), `physics.continuous` and `physics.sleep`. [`World::add_step_passes`]
//! declares them as passes of an engine's frame graph, where they run on the graph's
//! executor and show in its per-pass profile; [`World::step`] runs the same stages
//! directly.
//!
//! Nothing in a step allocates once the buffers have grown to the scene (tested with
//! a counting allocator), and nothing calls platform `libm` (only `sqrt`, which IEEE
//! 754 defines exactly); Rust never contracts `a * b + c` into a fused multiply-add
//! on its own, so the step does not depend on the compiler's contraction choices.

use glam::{IVec3, Quat, Vec3};

use super::body::{flags, saturate, Bodies, BodyDef, BodyError, BodyId, MotionType, SetKind, ShapeDef};
use super::constraint_graph::Op;
use super::constraint_graph::{Colorable, Coloring};
use super::contact_solver::{BodyState, Constraint, ConstraintTable, NONE};
use super::events::{ContactHitEvent, HitCandidate, Sensors};
use super::island::Islands;
use super::joint::Joints;
use super::narrow::{shape_ref, NarrowOut, TerrainItem, TERRAIN};
use super::store::ConstraintStore;
use super::water::Water;
use crate::codec::{fields, Codec, Corrupt, Reader, TakeNew, Writer};
use crate::collide::SatCache;
use crate::jobs::Jobs;
use crate::math::{Aabb, Isometry};
use crate::shapes::Shape;
use crate::spatial::{BroadPhase, DynamicTree, ProxyId, TreeConfig};
use crate::terrain::{Terrain, TerrainContacts};

/// Contacts are reported this far before the shapes touch (speculative contacts).
pub const SPECULATIVE_DISTANCE: f32 = 4.0 * LINEAR_SLOP;
/// How far a body shape's fat box in the broadphase reaches past its tight box on
/// every side (m), before the motion's share. Half of Box2D's 0.1 m: a pile of
/// small shapes (the drum's 0.4 m cubes) then holds a third fewer broadphase
/// pairs, none of which could touch, while the shapes escape their fat boxes
/// hardly more often (`step_scene drum 500 1`: 124k pairs and 20.9 ms a step with
/// 0.1 m, 86k and 18.8 ms with 0.05 m, the same state bits). It stays above half
/// the speculative distance, so every pair that can touch is found.
pub const FAT_MARGIN: f32 = 0.05;
const _: () = assert!(2.0 * FAT_MARGIN > SPECULATIVE_DISTANCE);
/// Penetration the solver tolerates (m).
pub const LINEAR_SLOP: f32 = 0.005;
/// Largest linear speed a body reaches (m/s): faster ones are slowed to it.
pub const MAX_LINEAR_SPEED: f32 = 1.0e5;
/// Largest turn of a body per substep (rad), as in Box2D v3: faster spins are slowed.
pub const MAX_ROTATION: f32 = 0.25 * std::f32::consts::PI;

/// How a world is built and stepped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldDef {
    pub gravity: Vec3,
    /// Solver substeps per step (1..=64).
    pub substeps: u32,
    /// Contact stiffness (Hz), capped at a quarter of the substep rate.
    pub contact_hertz: f32,
    pub contact_damping_ratio: f32,
    /// Fastest push out of penetration (m/s).
    pub contact_push_out: f32,
    /// Approach speed below which contacts do not bounce (m/s).
    pub restitution_threshold: f32,
    /// A body slower than this (m/s, angular speed times the body's reach included)
    /// counts as resting.
    pub sleep_threshold: f32,
    /// Seconds an island must rest before it sleeps.
    pub time_to_sleep: f32,
    pub enable_sleep: bool,
    /// Time of impact against static geometry for fast bodies.
    pub enable_continuous: bool,
    /// Friction of the voxel terrain's surface.
    pub terrain_friction: f32,
    /// Approach speed (m/s) above which a contact of a shape with
    /// [`ShapeDef::hit_events`] is reported as a hit.
    pub hit_event_threshold: f32,
    /// Density of the terrain's water (kg/m³); 0 turns buoyancy and water events
    /// off. A body floats when its density is below this.
    pub water_density: f32,
    /// Quadratic drag coefficient of bodies moving through water (Jolt's linear
    /// drag: the force is `½ ρ C A v²` over the wetted box area facing the motion).
    pub water_linear_drag: f32,
    /// Angular drag of bodies in water (per second, scaled by mass, submerged share
    /// and size²).
    pub water_angular_drag: f32,
}

impl Default for WorldDef {
    fn default() -> Self {
        WorldDef {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            substeps: 4,
            contact_hertz: 30.0,
            contact_damping_ratio: 10.0,
            contact_push_out: 3.0,
            restitution_threshold: 1.0,
            sleep_threshold: 0.05,
            time_to_sleep: 0.5,
            enable_sleep: true,
            enable_continuous: true,
            terrain_friction: 0.6,
            hit_event_threshold: 1.0,
            water_density: 1000.0,
            water_linear_drag: 0.5,
            water_angular_drag: 0.05,
        }
    }
}

impl WorldDef {
    /// Every number finite and in range.
    pub fn is_valid(&self) -> bool {
        let finite = [
            self.contact_hertz,
            self.contact_damping_ratio,
            self.contact_push_out,
            self.restitution_threshold,
            self.sleep_threshold,
            self.time_to_sleep,
            self.terrain_friction,
            self.hit_event_threshold,
            self.water_density,
            self.water_linear_drag,
            self.water_angular_drag,
        ];
        self.gravity.is_finite()
            && (1..=64).contains(&self.substeps)
            && finite.iter().all(|x| x.is_finite() && *x >= 0.0)
            && self.water_density <= MAX_WATER_DENSITY
            && self.water_linear_drag.max(self.water_angular_drag) <= MAX_WATER_DRAG
    }
}

/// Densest water a world takes (kg/m³; mercury is 13,600): keeps buoyancy forces
/// far inside `f32` range.
pub const MAX_WATER_DENSITY: f32 = 1.0e5;
/// Largest water drag coefficient a world takes.
pub const MAX_WATER_DRAG: f32 = 1.0e3;

/// The contact solver a world steps with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Solver {
    /// Box2D v3's soft step (the default): [`WorldDef::substeps`] substeps, each of
    /// warm start, soft solve and relax: with 4 substeps, 12 passes over the
    /// constraints per step.
    #[default]
    SoftStep,
    /// Sequential impulses as Box2D v2.4 steps: a warm start, `velocity_iterations`
    /// rigid passes, the positions integrated over the whole step, then
    /// `position_iterations` passes of non-linear Gauss-Seidel position correction
    /// (see `contact_solver::correct_positions`). With 8 and 3, the 12 passes of the soft
    /// step. The reference the soft step was chosen over (`physics::tests`,
    /// `step_scene`).
    SequentialImpulses { velocity_iterations: u32, position_iterations: u32 },
}

impl Solver {
    /// Sequential impulses with the usual iteration counts (8 and 3).
    pub const SEQUENTIAL_IMPULSES: Solver =
        Solver::SequentialImpulses { velocity_iterations: 8, position_iterations: 3 };
}

/// A contact starting or ending between two shapes (or a shape and the terrain).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContactEvent {
    pub begin: bool,
    pub body_a: BodyId,
    pub shape_a: u32,
    /// `None` for the terrain.
    pub body_b: Option<BodyId>,
    pub shape_b: u32,
}

/// One contact point of the last step, as solved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactPointInfo {
    pub body_a: BodyId,
    /// `None` for the terrain.
    pub body_b: Option<BodyId>,
    pub point: Vec3,
    /// From A to B.
    pub normal: Vec3,
    /// At the start of the step (negative: overlap).
    pub separation: f32,
    /// Accumulated normal impulse (N s).
    pub normal_impulse: f32,
    pub feature: u32,
}

/// Wall-clock milliseconds of the last step's stages.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepProfile {
    pub broadphase: f32,
    pub narrowphase: f32,
    pub prepare: f32,
    pub solve: f32,
    pub continuous: f32,
    pub sleep: f32,
    pub total: f32,
}

/// Counters of the last step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepCounters {
    pub awake_bodies: u32,
    pub pairs: u32,
    pub constraints: u32,
    pub contact_points: u32,
    /// Pairs whose manifolds were reused: they had hardly moved since the manifolds
    /// were found (see `narrow::reuse_manifolds`).
    pub reused_pairs: u32,
    /// Shapes on terrain whose manifolds were reused, the same way.
    pub reused_terrain: u32,
    /// Hull pairs (hull–hull, hull–box, a hull and a terrain triangle) given the
    /// whole separating-axis test, those the axis that separated them at their last
    /// test still proved apart, and those kept apart without a search (their
    /// bounding spheres or boxes lie farther apart than the margin, or they cannot
    /// have moved far enough along that axis to touch).
    pub sat_full: u32,
    pub sat_cached: u32,
    pub sat_skipped: u32,
    pub colors: u32,
    pub overflow_constraints: u32,
    pub sleeping_groups: u32,
    /// Islands of awake bodies after the step, and how many the sleep stage split
    /// (only a quiet island that lost a link is split).
    pub awake_islands: u32,
    pub island_splits: u32,
    pub continuous_hits: u32,
}

/// Reach of a body's shapes from its centre of mass, for sleep and continuous.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Extent {
    /// Largest distance of any shape's box corner from the centre of mass.
    pub(super) max: f32,
    /// Half the smallest box side of any shape (how far it may move per step
    /// without tunnelling).
    pub(super) min: f32,
}

fields!(WorldDef {
    gravity,
    substeps,
    contact_hertz,
    contact_damping_ratio,
    contact_push_out,
    restitution_threshold,
    sleep_threshold,
    time_to_sleep,
    enable_sleep,
    enable_continuous,
    terrain_friction,
    hit_event_threshold,
    water_density,
    water_linear_drag,
    water_angular_drag,
});
fields!(ContactEvent { begin, body_a, shape_a, body_b, shape_b });
fields!(StepProfile { broadphase, narrowphase, prepare, solve, continuous, sleep, total });
fields!(StepCounters {
    awake_bodies,
    pairs,
    constraints,
    contact_points,
    reused_pairs,
    reused_terrain,
    sat_full,
    sat_cached,
    sat_skipped,
    colors,
    overflow_constraints,
    sleeping_groups,
    awake_islands,
    island_splits,
    continuous_hits,
});
fields!(Extent { max, min });
fields!(BodyMoveEvent { body, transform, fell_asleep });

impl Codec for Solver {
    fn put(&self, w: &mut Writer) {
        match *self {
            Solver::SoftStep => 0u8.put(w),
            Solver::SequentialImpulses { velocity_iterations, position_iterations } => {
                (1u8, velocity_iterations, position_iterations).put(w)
            }
        }
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = match r.tag(2)? {
            0 => Solver::SoftStep,
            _ => Solver::SequentialImpulses {
                velocity_iterations: u32::take_new(r)?,
                position_iterations: u32::take_new(r)?,
            },
        };
        Ok(())
    }
}

/// A rigid-body world.
#[derive(Debug)]
pub struct World {
    pub(super) def: WorldDef,
    pub(super) bodies: Bodies,
    pub(super) broadphase: BroadPhase,
    /// Per body slot: the proxy of each shape.
    pub(super) proxies: Vec<Vec<ProxyId>>,
    pub(super) extents: Vec<Extent>,
    pub(super) terrain: Option<Terrain>,
    pub(super) terrain_contacts: TerrainContacts,
    pub(super) islands: Islands,
    pub(super) joints: Joints,
    /// This step's constraints (in narrowphase order, woken ones last), and last
    /// step's with a sorted `(key, sub, index)` lookup for warm starting: tables of
    /// the constraints in `store` (last step's until this step's narrowphase has
    /// renewed or released them, then cleared).
    pub(super) store: ConstraintStore,
    pub(super) constraints: ConstraintTable,
    pub(super) previous: ConstraintTable,
    pub(super) cache: Vec<(u64, u64, u32)>,
    /// Whether `cache` already lists this step's table for the next step (the
    /// prepare stage makes it; a table changed since, or a proxy forgotten, clears it).
    pub(super) cache_ready: bool,
    /// The hull pairs found apart last step and the axis that separated each, sorted
    /// by key (see `narrow::NarrowOut::axes`).
    pub(super) axes: Vec<(u64, SatCache)>,
    /// What colouring needs of each of this step's constraints (from the prepare).
    pub(super) colorables: Vec<Colorable>,
    pub(super) coloring: Coloring,
    pub(super) solver: Solver,
    pub(super) states: Vec<BodyState>,
    pub(super) start_poses: Vec<(Vec3, Quat)>,
    /// Pair keys touching after the last step (sleeping ones included), sorted.
    pub(super) touching: Vec<u64>,
    pub(super) events: Vec<ContactEvent>,
    /// End events of bodies destroyed since the last step.
    pub(super) pending_events: Vec<ContactEvent>,
    pub(super) profile: StepProfile,
    pub(super) counters: StepCounters,
    /// The next stage of the step in progress (an index into `StepStage::ALL`) and
    /// that step's `dt`.
    pub(super) next_stage: usize,
    pub(super) stage_dt: f32,
    pub(super) scratch: Scratch,
    /// For queries between steps: the awake shapes (proxy user values, sorted) whose
    /// bounds left their fat boxes since the broadphase last moved them, a tree of
    /// them and its proxies, and whether these are up to date (see `query.rs`).
    pub(super) escaped: Vec<u64>,
    pub(super) escaped_tree: DynamicTree,
    pub(super) escaped_proxies: Vec<ProxyId>,
    pub(super) escaped_fresh: bool,
    /// The `Bodies::layout` under which the step's list of awake shapes
    /// (`Scratch::moving`) was made, `None` once shapes were added or bodies created
    /// or destroyed since: while it holds, the list holds (see `World::list_moving`).
    pub(super) moving_layout: Option<u64>,
    pub(super) sensors: Sensors,
    /// Shapes with hit events on (none: the hit pass is skipped), this step's
    /// candidates and events.
    pub(super) hit_shapes: usize,
    pub(super) hit_candidates: Vec<HitCandidate>,
    pub(super) hit_events: Vec<ContactHitEvent>,
    /// The bodies the last step moved (see [`World::move_events`]).
    pub(super) moves: Vec<BodyMoveEvent>,
    /// Bodies in water and water events (`water.rs`).
    pub(super) water: Water,
}

/// A body the last step moved: its handle and new placement; `fell_asleep` when the
/// step also put it to sleep (it will not move again until woken). An engine syncs
/// only these bodies' render transforms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BodyMoveEvent {
    pub body: BodyId,
    pub transform: Isometry,
    pub fell_asleep: bool,
}

/// The stages of a step, in order (the module docs tell what each does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepStage {
    /// Terrain edits, shape boxes into the tree, terrain contacts, new pairs.
    Broadphase,
    /// Manifolds of every pair and terrain contact with an awake body, in parallel.
    Narrowphase,
    /// Constraint rows; graph colouring beside the next step's warm-start cache
    /// and the contact begin and end events.
    Prepare,
    /// The soft-step solver over all substeps.
    Solve,
    /// Time of impact of fast bodies.
    Continuous,
    /// Islands and sleep.
    Sleep,
}

impl StepStage {
    pub const ALL: [StepStage; 6] = [
        StepStage::Broadphase,
        StepStage::Narrowphase,
        StepStage::Prepare,
        StepStage::Solve,
        StepStage::Continuous,
        StepStage::Sleep,
    ];

    /// The frame-graph pass name of this stage.
    pub fn name(self) -> &'static str {
        match self {
            StepStage::Broadphase => "physics.broadphase",
            StepStage::Narrowphase => "physics.narrowphase",
            StepStage::Prepare => "physics.prepare",
            StepStage::Solve => "physics.solve",
            StepStage::Continuous => "physics.continuous",
            StepStage::Sleep => "physics.sleep",
        }
    }
}

/// Buffers the step reuses.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// What snapshots to and from bytes reuse (`snapshot_bytes.rs`).
    pub(super) snapshot: Option<Box<super::snapshot_bytes::SnapshotScratch>>,
    /// The solve's plan (see `solver::run_plan`).
    pub(super) ops: Vec<Op>,
    /// The awake shapes' proxies as the broadphase stage listed them, and what it
    /// found of each, under [`Bodies::layout`] `boxes_layout`.
    pub(super) moving: Vec<(u32, ProxyId, u32)>,
    pub(super) boxes: Vec<super::step::Placed>,
    pub(super) boxes_layout: u64,
    /// The list again, as the narrowphase stage makes it.
    pub(super) near_moving: Vec<(u32, ProxyId, u32)>,
    pub(super) terrain_query: Vec<(u32, Aabb)>,
    /// The awake shapes' places for the narrowphase's first test (`near::Near`).
    pub(super) near: super::near::Near,
    pub(super) chunks: Vec<IVec3>,
    pub(super) items: Vec<TerrainItem>,
    /// This step's narrowphase outputs (fresh constraints, until they are copied into
    /// the store; terrain triangles gathered for the next step).
    pub(super) outs: Vec<NarrowOut>,
    /// [`Bodies::layout`] when the narrowphase set its constraints' rows.
    pub(super) rows_layout: u64,
    /// Last step's `outs` (their gathered terrain triangles are read again) and the
    /// index of those (see `narrow::Kept`).
    pub(super) kept_outs: Vec<NarrowOut>,
    pub(super) kept_index: Vec<(u32, u32, u32)>,
    /// Which of last step's constraints this step's narrowphase renewed.
    pub(super) renewed: Vec<bool>,
    /// Where each chunk's constraints start in the step's table.
    pub(super) out_starts: Vec<u32>,
    /// How many chunks this step's narrowphase filled.
    pub(super) joined: usize,
    pub(super) wake: Vec<u32>,
    pub(super) groups: Vec<u32>,
    /// Constraints of groups woken by this step's narrowphase (copied into the store).
    pub(super) woken: Vec<Constraint>,
    pub(super) touching: Vec<u64>,
    /// The merge buffer of key lists (`runs::sort_runs`, the touching keys' merge).
    pub(super) key_merge: Vec<u64>,
    /// The merge buffer of the cache's sort.
    pub(super) cache_merge: Vec<(u64, u64, u32)>,
    pub(super) fast: Vec<u32>,
    pub(super) hits: Vec<Option<(Vec3, Quat)>>,
    pub(super) sleepers: Vec<(u32, BodyId)>,
    /// Islands the sleep stage splits, and each awake row's island.
    pub(super) split: Vec<u32>,
    pub(super) row_island: Vec<u32>,
    /// The terrain's hits of a world ray batch (`World::cast_ray_batch`).
    pub(super) terrain_hits: Vec<Option<crate::terrain::TerrainHit>>,
    /// The targets a character's move asks the world for (`World::move_character`).
    pub(super) character_targets: [Vec<super::QueryTarget>; 2],
}

impl Default for World {
    fn default() -> Self {
        World::new(WorldDef::default())
    }
}

impl World {
    /// A world; `def` must be valid (see [`WorldDef::is_valid`]).
    pub fn try_new(def: WorldDef) -> Result<World, BodyError> {
        if def.is_valid() {
            Ok(World::new(def))
        } else {
            Err(BodyError::InvalidArgument)
        }
    }

    /// A world.
    ///
    /// # Panics
    /// When `def` is not valid (see [`WorldDef::is_valid`]); [`World::try_new`] reports it.
    pub fn new(def: WorldDef) -> World {
        assert!(def.is_valid(), "invalid world definition: {def:?}");
        World {
            def,
            bodies: Bodies::default(),
            broadphase: BroadPhase::new(TreeConfig { margin: FAT_MARGIN, ..TreeConfig::default() }),
            proxies: Vec::new(),
            extents: Vec::new(),
            terrain: None,
            terrain_contacts: TerrainContacts::new(),
            islands: Islands::default(),
            joints: Joints::default(),
            store: ConstraintStore::default(),
            constraints: ConstraintTable::default(),
            colorables: Vec::new(),
            previous: ConstraintTable::default(),
            cache: Vec::new(),
            cache_ready: false,
            axes: Vec::new(),
            coloring: Coloring::default(),
            solver: Solver::SoftStep,
            states: Vec::new(),
            start_poses: Vec::new(),
            touching: Vec::new(),
            events: Vec::new(),
            pending_events: Vec::new(),
            profile: StepProfile::default(),
            counters: StepCounters::default(),
            next_stage: 0,
            stage_dt: 0.0,
            scratch: Scratch::default(),
            escaped: Vec::new(),
            escaped_tree: DynamicTree::new(TreeConfig::default()),
            escaped_proxies: Vec::new(),
            escaped_fresh: false,
            moving_layout: None,
            sensors: Sensors::default(),
            hit_shapes: 0,
            hit_candidates: Vec::new(),
            hit_events: Vec::new(),
            moves: Vec::new(),
            water: Water::default(),
        }
    }

    /// Checks every invariant of the world: body sets and handles, each shape's proxy
    /// in the broadphase tree (user data, sleeping flag), the tree itself, the
    /// sleeping groups, and the terrain's mesh cache. Panics with a description on
    /// violation. O(n); for tests, fuzzing and `kiln_world_validate`.
    pub fn validate(&self) {
        let bodies = &self.bodies;
        bodies.validate();
        self.sensors.validate(bodies);
        let tree = self.broadphase.tree();
        tree.validate();
        let mut proxies = 0;
        for (kind, set) in [(SetKind::Awake, &bodies.awake), (SetKind::Resting, &bodies.resting)] {
            for &id in &set.id {
                let slot = id.index;
                let shapes = bodies.shapes_of_slot(slot).len();
                let own = self.proxies.get(slot as usize).map_or(&[][..], Vec::as_slice);
                assert_eq!(own.len(), shapes, "{id:?}: {} proxies for {shapes} shapes", own.len());
                for (k, &p) in own.iter().enumerate() {
                    assert!(tree.is_proxy(p), "{id:?}: shape {k} has a dead proxy {p:?}");
                    assert_eq!(shape_ref(tree.user_data(p)), (slot, k as u32), "{id:?}: shape {k}'s proxy user data");
                    let sleeping = kind == SetKind::Resting;
                    assert_eq!(tree.is_sleeping(p), sleeping, "{id:?}: proxy sleeping flag in the {kind:?} set");
                }
                proxies += own.len();
                let group = self.islands.group_of(slot);
                let is_static = bodies.motion_type(id) == Ok(MotionType::Static);
                match kind {
                    SetKind::Awake => assert_eq!(group, NONE, "{id:?}: awake but in sleeping group {group}"),
                    SetKind::Resting if is_static => assert_eq!(group, NONE, "{id:?}: static but in group {group}"),
                    SetKind::Resting => {
                        assert!(group != NONE, "{id:?}: sleeping in no group");
                        assert!(
                            self.islands.group(group).bodies.contains(&id),
                            "{id:?}: missing from its group {group}"
                        );
                    }
                }
            }
        }
        assert_eq!(tree.proxy_count(), proxies, "the tree holds proxies of no body");
        self.validate_islands();
        // Every constraint in the store is in one of the tables, once.
        let tables = self.previous.len() + self.constraints.len();
        assert_eq!(self.store.len(), tables, "constraints in the store and in the tables");
        let mut slots: Vec<*const Constraint> =
            self.previous.iter().chain(self.constraints.iter()).map(std::ptr::from_ref).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), tables, "a constraint twice in the tables");
        if let Some(terrain) = &self.terrain {
            terrain.validate_caches();
        }
    }

    /// Every awake dynamic body is in one island, and every touching contact and
    /// joint between two of them joins bodies of the same island.
    fn validate_islands(&self) {
        let bodies = &self.bodies;
        let awake_dynamic = |slot: u32| {
            slot != NONE
                && matches!(bodies.place_of_slot(slot), Some((SetKind::Awake, row)) if bodies.awake.inv_mass[row] > 0.0)
        };
        self.islands.validate(awake_dynamic);
        for (row, id) in bodies.awake.id.iter().enumerate() {
            let has = self.islands.island_of(id.index) != NONE;
            assert_eq!(has, bodies.awake.inv_mass[row] > 0.0, "{id:?}: in an island unless kinematic");
        }
        // (The table may still hold constraints of bodies destroyed since the step,
        // whose slots a new body may have taken: only touching keys count.)
        let touching = |key: u64| self.touching.binary_search(&key).is_ok();
        let linked = self.previous.iter().filter(|c| c.count > 0 && touching(c.key));
        let contacts = linked.map(|c| (c.body_a, c.body_b));
        let joints = self.joints.live().map(|d| (d.body_a.index, d.body_b.index));
        for (a, b) in contacts.chain(joints) {
            if awake_dynamic(a) && awake_dynamic(b) {
                let (ia, ib) = (self.islands.island_of(a), self.islands.island_of(b));
                assert_eq!(ia, ib, "body slots {a} and {b} are linked but in islands {ia} and {ib}");
            }
        }
    }

    pub fn def(&self) -> &WorldDef {
        &self.def
    }

    /// Turns sleeping on or off; turning it off wakes every sleeping island.
    pub fn set_sleep_enabled(&mut self, enabled: bool) {
        self.def.enable_sleep = enabled;
        if !enabled {
            self.wake_all();
        }
    }

    pub fn bodies(&self) -> &Bodies {
        &self.bodies
    }

    pub fn broadphase(&self) -> &BroadPhase {
        &self.broadphase
    }

    /// The broadphase proxies of the shapes of the body in slot `slot`.
    pub(crate) fn shape_proxies(&self, slot: u32) -> &[ProxyId] {
        self.proxies.get(slot as usize).map_or(&[], Vec::as_slice)
    }

    pub fn profile(&self) -> StepProfile {
        self.profile
    }

    /// Steps with `solver` from the next step on (the default is the soft step).
    pub fn set_solver(&mut self, solver: Solver) {
        self.solver = solver;
    }

    pub fn solver(&self) -> Solver {
        self.solver
    }

    /// Solves colours in bundles of `lanes` constraints (4, 8 with AVX or 16 with
    /// AVX-512F; the default is the widest the CPU runs) or, with 1, one constraint at
    /// a time; the results are the same (tests compare them).
    #[cfg(test)]
    pub(crate) fn set_solver_lanes(&mut self, lanes: usize) {
        assert!(matches!(lanes, 1 | 4 | 8 | 16), "1, 4, 8 or 16 lanes");
        self.coloring.wide = lanes > 1;
        self.coloring.set_lanes(lanes.max(4));
        self.coloring.forget();
    }

    /// Terrain triangles each narrowphase job holds room for: both lists, then how
    /// many jobs ran in the last step.
    #[cfg(test)]
    pub(crate) fn narrow_terrain_rooms(&self) -> (Vec<usize>, usize) {
        let s = &self.scratch;
        (s.outs.iter().chain(&s.kept_outs).map(NarrowOut::terrain_room).collect(), s.joined)
    }

    pub fn counters(&self) -> StepCounters {
        self.counters
    }

    /// The determinism hash of bodies `ids`, in that order: the bits of each one's
    /// position, velocity, angular velocity and rotation (`x, y, z, w`), through
    /// [`hash_floats`](crate::math::hash_floats). Same inputs give the same hash for
    /// any worker count and host scheduler; a body that is not live hashes as one at
    /// rest at the origin.
    pub fn state_hash(&self, ids: &[BodyId]) -> u64 {
        crate::math::hash_floats(ids.iter().flat_map(|&id| self.hashed_state(id)))
    }

    /// The world's determinism hash: [`World::state_hash`] of every live body in slot
    /// order (the order bodies were created in, while none was destroyed). Two worlds
    /// stepped from the same inputs have the same hash for any worker count, host
    /// scheduler and SIMD width; `kiln_world_hash` in C.
    pub fn hash(&self) -> u64 {
        crate::math::hash_floats(self.bodies.live_ids().flat_map(|id| self.hashed_state(id)))
    }

    /// What the hashes read of a body (one not live reads as at rest at the origin).
    fn hashed_state(&self, id: BodyId) -> [f32; 13] {
        let xf = self.transform(id).unwrap_or_default();
        let (v, w) = self.velocity(id).unwrap_or_default();
        let (x, q) = (xf.translation, xf.rotation);
        [x.x, x.y, x.z, v.x, v.y, v.z, w.x, w.y, w.z, q.x, q.y, q.z, q.w]
    }

    /// Contact begin/end events of the last step, in pair-key order (plus, first, the
    /// end events of bodies destroyed before it).
    pub fn contact_events(&self) -> &[ContactEvent] {
        &self.events
    }

    /// Calls `visit` for every contact point the last step solved, in constraint order
    /// (sleeping islands' contacts are not included). Between the stages of a step
    /// (see [`World::step_stage`]), from its narrowphase on, these are the step's own
    /// contacts as far as its stages have made them: the narrowphase renews last
    /// step's where they are.
    pub fn for_each_contact(&self, mut visit: impl FnMut(&ContactPointInfo)) {
        let narrowed = StepStage::ALL[..self.next_stage].contains(&StepStage::Narrowphase);
        let table = if narrowed { &self.constraints } else { &self.previous };
        for c in table.iter() {
            let body_a = self.bodies.id_of_slot(c.body_a);
            let body_b = (c.body_b != NONE).then(|| self.bodies.id_of_slot(c.body_b));
            for (p, &normal_impulse) in c.points().iter().zip(&c.normal_impulse) {
                visit(&ContactPointInfo {
                    body_a,
                    body_b,
                    point: p.point,
                    normal: p.normal,
                    separation: p.separation,
                    normal_impulse,
                    feature: p.id,
                });
            }
        }
    }

    /// Gives the world a voxel terrain (replacing any previous one). Its voxels now
    /// become the base that snapshots record terrain edits against
    /// ([`Terrain::rebase`]).
    pub fn set_terrain(&mut self, mut terrain: Terrain) {
        terrain.rebase();
        self.terrain = Some(terrain);
        self.terrain_contacts = TerrainContacts::new();
        // Triangles kept from another terrain must not be reused (revisions restart).
        self.scratch.kept_index.clear();
        self.wake_all();
    }

    /// Takes the terrain out of the world (its contacts end; every island wakes).
    pub fn take_terrain(&mut self) -> Option<Terrain> {
        let terrain = self.terrain.take();
        if terrain.is_some() {
            self.terrain_contacts = TerrainContacts::new();
            self.scratch.kept_index.clear();
            self.wake_all();
        }
        terrain
    }

    /// Regenerates edited terrain chunks now (the step does it otherwise) and wakes
    /// the islands touching them; returns how many chunks were regenerated.
    pub fn regenerate_terrain(&mut self, jobs: Jobs) -> usize {
        self.terrain_stage(jobs)
    }

    pub fn terrain(&self) -> Option<&Terrain> {
        self.terrain.as_ref()
    }

    /// The terrain, for edits: edited chunks are regenerated at the next step, and
    /// sleeping bodies touching them wake.
    pub fn terrain_mut(&mut self) -> Option<&mut Terrain> {
        self.terrain.as_mut()
    }

    pub fn create_body(&mut self, def: &BodyDef) -> Result<BodyId, BodyError> {
        let id = self.bodies.create(def)?;
        self.escaped_fresh = false;
        self.moving_layout = None;
        if def.motion == MotionType::Dynamic {
            self.islands.add_lone_body(id.index);
        }
        let slot = id.index as usize;
        if self.proxies.len() <= slot {
            self.proxies.resize_with(slot + 1, Vec::new);
            self.extents.resize(slot + 1, Extent::default());
        }
        self.proxies[slot].clear();
        self.extents[slot] = Extent { max: 0.0, min: f32::INFINITY };
        Ok(id)
    }

    /// Destroys a body, its shapes, joints and contacts. Its joints are reported with
    /// the next step's joint events. Contacts it was touching end (the
    /// events come with the next step's); islands resting on it wake.
    pub fn destroy_body(&mut self, id: BodyId) -> Result<(), BodyError> {
        self.bodies.locate(id)?;
        self.escaped_fresh = false;
        self.moving_layout = None;
        self.sensors.remove_body(id);
        self.water.remove_body(id);
        let hit_shapes = self.bodies.shapes(id)?.iter().filter(|s| s.def.hit_events).count();
        self.hit_shapes -= hit_shapes;
        self.destroy_joints_of(id);
        self.wake_touching(id.index);
        self.islands.remove_body(id.index);
        let mut proxies = std::mem::take(&mut self.proxies[id.index as usize]);
        for &proxy in &proxies {
            self.forget_proxy(proxy);
            self.broadphase.destroy_proxy(proxy);
            self.terrain_contacts.remove_body(proxy.0);
        }
        proxies.clear();
        self.proxies[id.index as usize] = proxies;
        self.bodies.destroy(id)
    }

    /// Drops a proxy's touching keys (as end events) and warm-start entries.
    pub(super) fn forget_proxy(&mut self, proxy: ProxyId) {
        let involves = |key: u64| (key >> 32) as u32 == proxy.0 || key as u32 == proxy.0;
        let mut ended = Vec::new();
        // (Allocates only when destroying a body that touches something.)
        self.touching.retain(|&key| {
            if involves(key) {
                ended.push(key);
            }
            !involves(key)
        });
        for key in ended {
            if let Some(e) = self.event(false, key) {
                self.pending_events.push(e);
            }
        }
        self.cache.retain(|&(key, _, _)| !involves(key));
        self.axes.retain(|&(key, _)| !involves(key));
        // The proxy's gathered terrain triangles carry its shape's separating axes,
        // which must not pass to a shape that takes the proxy's id next.
        self.scratch.kept_index.retain(|&(p, _, _)| p != proxy.0);
        // Mid-step, the table still holds its constraints: the next step's cache
        // is made from the table again at the step's end.
        self.cache_ready = false;
    }

    /// Attaches a shape: it gets a broadphase proxy and gives the body mass.
    pub fn add_shape(&mut self, id: BodyId, shape: Shape, def: ShapeDef) -> Result<(), BodyError> {
        self.bodies.locate(id)?;
        if !def.is_valid() {
            return Err(BodyError::InvalidArgument);
        }
        self.wake(id)?;
        self.bodies.add_shape(id, shape, def)?;
        if def.sensor {
            let k = self.bodies.shapes(id).expect("live body").len() - 1;
            self.sensors.add(id, k as u32);
        }
        self.hit_shapes += def.hit_events as usize;
        self.refresh_shapes(id);
        Ok(())
    }

    /// After shapes or mass changed: proxies, extents.
    pub(super) fn refresh_shapes(&mut self, id: BodyId) {
        self.moving_layout = None;
        let slot = id.index as usize;
        let xf = self.bodies.transform(id).expect("live body");
        let (set, row) = self.bodies.locate(id).expect("live body");
        let center = self.bodies.set(set).local_center[row];
        let is_static = self.bodies.set(set).flags[row] & flags::STATIC != 0;
        let shapes = self.bodies.shapes(id).expect("live body");
        let mut extent = Extent { max: 0.0, min: f32::INFINITY };
        for (k, s) in shapes.iter().enumerate() {
            let local = s.shape.aabb(&s.def.pose);
            let reach = (local.min - center).abs().max((local.max - center).abs()).length();
            extent.max = extent.max.max(reach);
            extent.min = extent.min.min(local.extents().min_element() * 0.5);
            if k >= self.proxies[slot].len() {
                let tight = s.shape.aabb(&xf.mul(&s.def.pose));
                let proxy = self.broadphase.create_proxy(&tight, ((slot as u64) << 32) | k as u64);
                if is_static {
                    self.broadphase.set_sleeping(proxy, true);
                }
                if s.def.sensor {
                    self.broadphase.set_sensor(proxy);
                }
                self.proxies[slot].push(proxy);
            }
        }
        self.extents[slot] = extent;
    }

    pub fn transform(&self, id: BodyId) -> Result<Isometry, BodyError> {
        self.bodies.transform(id)
    }

    /// Places a body (teleport): wakes it and islands resting on it.
    pub fn set_transform(&mut self, id: BodyId, xf: &Isometry) -> Result<(), BodyError> {
        self.bodies.locate(id)?;
        if !xf.is_valid() {
            return Err(BodyError::InvalidArgument);
        }
        self.wake(id)?;
        self.bodies.set_transform(id, xf)?;
        self.wake_touching(id.index);
        // Static bodies are not re-boxed by the step: move their proxies now.
        let shapes = self.bodies.shapes(id).expect("live body");
        for (s, &proxy) in shapes.iter().zip(&self.proxies[id.index as usize]) {
            let tight = s.shape.aabb(&xf.mul(&s.def.pose));
            self.broadphase.move_proxy(proxy, &tight, Vec3::ZERO);
        }
        Ok(())
    }

    /// Moves a kinematic body to `target` over the next step of `dt` seconds: sets
    /// its velocities so that it arrives there (within the substeps' rotation
    /// integration error), pushing dynamic bodies in the way. Call it every step with
    /// that step's target; velocities persist, so stop a body with `set_velocity`.
    /// Wakes it. Refused for static and dynamic bodies, for `dt` not finite and > 0,
    /// and for a target that is not a valid transform.
    pub fn set_target_transform(&mut self, id: BodyId, target: &Isometry, dt: f32) -> Result<(), BodyError> {
        if self.bodies.motion_type(id)? != MotionType::Kinematic || !target.is_valid() || !(dt.is_finite() && dt > 0.0)
        {
            return Err(BodyError::InvalidArgument);
        }
        let (set, row) = self.wake(id)?;
        let s = self.bodies.set(set);
        let (position, rotation, center) = (s.position[row], s.rotation[row], s.local_center[row]);
        let goal_rotation = target.rotation.normalize();
        let goal_center = target.translation + goal_rotation * center;
        // Shortest rotation from now to the goal, as axis × angle.
        let mut delta = goal_rotation * rotation.conjugate();
        if delta.w < 0.0 {
            delta = -delta;
        }
        let (axis, angle) = delta.to_axis_angle();
        let angular = if angle.is_finite() && angle > 0.0 { axis * (angle / dt) } else { Vec3::ZERO };
        let linear = (goal_center - position) / dt;
        if !linear.is_finite() || !angular.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        self.set_velocity(id, linear, angular)
    }

    /// Mass in kg as the solver sees it: 0 for static and kinematic bodies (infinite
    /// mass); a dynamic body whose shapes give no mass weighs 1 kg.
    pub fn mass(&self, id: BodyId) -> Result<f32, BodyError> {
        let (set, row) = self.bodies.locate(id)?;
        let inv = self.bodies.set(set).inv_mass[row];
        Ok(if inv > 0.0 { 1.0 / inv } else { 0.0 })
    }

    /// Linear and angular velocity.
    pub fn velocity(&self, id: BodyId) -> Result<(Vec3, Vec3), BodyError> {
        let (set, row) = self.bodies.locate(id)?;
        let s = self.bodies.set(set);
        Ok((s.linear_velocity[row], s.angular_velocity[row]))
    }

    /// Whether a body is awake (static bodies never are).
    pub fn is_awake(&self, id: BodyId) -> Result<bool, BodyError> {
        Ok(self.bodies.locate(id)?.0 == SetKind::Awake)
    }

    /// Wakes a sleeping body's whole island (static bodies stay resting).
    pub fn wake(&mut self, id: BodyId) -> Result<(SetKind, usize), BodyError> {
        self.bodies.locate(id)?;
        let g = self.islands.group_of(id.index);
        if g != NONE {
            self.wake_group(g, false);
        }
        self.bodies.locate(id)
    }

    pub(super) fn wake_all(&mut self) {
        let mut groups = std::mem::take(&mut self.scratch.groups);
        groups.clear();
        self.islands.live_groups(&mut groups);
        self.wake_groups(groups, false);
    }

    /// Wakes every group with a stored constraint on body slot `slot`.
    pub(super) fn wake_touching(&mut self, slot: u32) {
        let mut groups = std::mem::take(&mut self.scratch.groups);
        groups.clear();
        self.islands.groups_touching(slot, &mut groups);
        let g = self.islands.group_of(slot);
        if g != NONE {
            groups.push(g);
        }
        self.wake_groups(groups, false);
    }

    /// Wakes the listed groups in ascending order (duplicates allowed), then returns
    /// the list's memory to the scratch.
    pub(super) fn wake_groups(&mut self, mut groups: Vec<u32>, keep: bool) {
        groups.sort_unstable();
        groups.dedup();
        for &g in &groups {
            self.wake_group(g, keep);
        }
        groups.clear();
        self.scratch.groups = groups;
    }

    /// Moves a group's bodies to the awake set. With `keep`, its constraints among
    /// its own bodies and fixed geometry go to `scratch.woken` (a constraint with a
    /// body of another group is left to the narrowphase); else all are dropped.
    pub(super) fn wake_group(&mut self, g: u32, keep: bool) {
        if self.islands.group(g).bodies.is_empty() {
            return;
        }
        let bodies = &self.bodies;
        let fixed = |slot: u32| matches!(bodies.place_of_slot(slot), Some((SetKind::Resting, row)) if bodies.resting.flags[row] & flags::STATIC != 0);
        let (woken, ids) = (&mut self.scratch.woken, &mut self.scratch.sleepers);
        ids.clear();
        self.islands.dissolve(
            g,
            fixed,
            |c, own| {
                if keep && own {
                    woken.push(*c);
                }
            },
            |id| ids.push((g, id)),
        );
        for &(_, id) in &self.scratch.sleepers {
            if self.bodies.move_to(id, SetKind::Awake).is_ok() {
                for &p in &self.proxies[id.index as usize] {
                    self.broadphase.set_sleeping(p, false);
                }
            }
        }
    }

    /// Adds a force (N) at the centre of mass until the next step; wakes the body.
    pub fn apply_force(&mut self, id: BodyId, force: Vec3) -> Result<(), BodyError> {
        if !force.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            self.bodies.awake.force[row] += force;
        }
        Ok(())
    }

    /// Adds a torque (N m) until the next step; wakes the body.
    pub fn apply_torque(&mut self, id: BodyId, torque: Vec3) -> Result<(), BodyError> {
        if !torque.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            self.bodies.awake.torque[row] += torque;
        }
        Ok(())
    }

    /// Applies an impulse (N s) at world point `point`: changes linear and angular
    /// velocity at once; wakes the body. Static and kinematic bodies ignore it. The
    /// velocities saturate at [`MAX_LINEAR_SPEED`] m/s and rad/s (the limit
    /// [`World::set_velocity`] takes), so no finite impulse makes them infinite.
    pub fn apply_impulse(&mut self, id: BodyId, impulse: Vec3, point: Vec3) -> Result<(), BodyError> {
        if !impulse.is_finite() || !point.is_finite() {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            let s = &mut self.bodies.awake;
            let r = point - s.position[row];
            let (v, w) = (s.linear_velocity[row], s.angular_velocity[row]);
            s.linear_velocity[row] = saturate(v + impulse * s.inv_mass[row], MAX_LINEAR_SPEED);
            s.angular_velocity[row] = saturate(w + s.world_inv_inertia[row] * r.cross(impulse), MAX_LINEAR_SPEED);
        }
        Ok(())
    }

    /// Sets the velocities of a dynamic or kinematic body (finite, at most
    /// [`MAX_LINEAR_SPEED`] m/s and rad/s); wakes it.
    pub fn set_velocity(&mut self, id: BodyId, linear: Vec3, angular: Vec3) -> Result<(), BodyError> {
        let fast = |v: Vec3| !v.is_finite() || v.length() > MAX_LINEAR_SPEED;
        if fast(linear) || fast(angular) {
            return Err(BodyError::InvalidArgument);
        }
        if let (SetKind::Awake, row) = self.wake(id)? {
            self.bodies.awake.linear_velocity[row] = linear;
            self.bodies.awake.angular_velocity[row] = angular;
        }
        Ok(())
    }

    /// Number of awake bodies (dynamic and kinematic).
    pub fn awake_count(&self) -> usize {
        self.bodies.awake.len()
    }

    /// The contact event for a pair key, if its bodies are alive.
    pub(super) fn event(&self, begin: bool, key: u64) -> Option<ContactEvent> {
        contact_event(self.broadphase.tree(), &self.bodies, begin, key)
    }
}

/// The contact event of pair `key` (its proxies' bodies and shapes).
pub(super) fn contact_event(tree: &DynamicTree, bodies: &Bodies, begin: bool, key: u64) -> Option<ContactEvent> {
    let (pa, pb) = ((key >> 32) as u32, key as u32);
    let (slot_a, shape_a) = shape_ref(tree.user_data(ProxyId(pa)));
    let body_a = bodies.id_of_slot(slot_a);
    if pb == TERRAIN {
        return Some(ContactEvent { begin, body_a, shape_a, body_b: None, shape_b: u32::MAX });
    }
    let (slot_b, shape_b) = shape_ref(tree.user_data(ProxyId(pb)));
    Some(ContactEvent { begin, body_a, shape_a, body_b: Some(bodies.id_of_slot(slot_b)), shape_b })
}
