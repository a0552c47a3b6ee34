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
//! | sleep | islands by union-find; quiet islands to sleep | — |
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

use std::ops::Range;
use std::time::Instant;

use glam::{IVec3, Mat3, Quat, Vec3};

use super::body::{flags, Bodies, BodyDef, BodyError, BodyId, MotionType, SetKind, ShapeDef};
use super::island::Islands;
use super::narrow::{self, shape_ref, Kept, NarrowInput, NarrowOut, TerrainItem, KEPT, TERRAIN};
use super::runs;
use super::solver::{
    self, BodyPass, BodyState, Colorable, Coloring, Column, Constraint, ConstraintTable, Frame, Op, Pass, Softness,
    StepContext, NONE,
};
use super::store::ConstraintStore;
use crate::collide::{shape_time_of_impact, Sweep, ToiState};
use crate::frame::{FrameGraph, GraphError, PassId, Res};
use crate::jobs::Jobs;
use crate::math::{triangle_overlaps_aabb, world_inertia, Aabb, Isometry};
use crate::shapes::Shape;
use crate::spatial::{BroadPhase, DynamicTree, ProxyId, TreeConfig};
use crate::terrain::{ContactKind, Terrain, TerrainContacts};

/// Contacts are reported this far before the shapes touch (speculative contacts).
pub const SPECULATIVE_DISTANCE: f32 = 4.0 * LINEAR_SLOP;
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
        ];
        self.gravity.is_finite()
            && (1..=64).contains(&self.substeps)
            && finite.iter().all(|x| x.is_finite() && *x >= 0.0)
    }
}

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
    /// (see `solver::correct_positions`). With 8 and 3, the 12 passes of the soft
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    pub colors: u32,
    pub overflow_constraints: u32,
    pub sleeping_groups: u32,
    pub continuous_hits: u32,
}

/// Reach of a body's shapes from its centre of mass, for sleep and continuous.
#[derive(Clone, Copy, Debug, Default)]
struct Extent {
    /// Largest distance of any shape's box corner from the centre of mass.
    max: f32,
    /// Half the smallest box side of any shape (how far it may move per step
    /// without tunnelling).
    min: f32,
}

/// A rigid-body world.
#[derive(Debug)]
pub struct World {
    def: WorldDef,
    bodies: Bodies,
    broadphase: BroadPhase,
    /// Per body slot: the proxy of each shape.
    proxies: Vec<Vec<ProxyId>>,
    extents: Vec<Extent>,
    terrain: Option<Terrain>,
    terrain_contacts: TerrainContacts,
    islands: Islands,
    /// This step's constraints (in narrowphase order, woken ones last), and last
    /// step's with a sorted `(key, sub, index)` lookup for warm starting: tables of
    /// the constraints in `store` (last step's until this step's narrowphase has
    /// renewed or released them, then cleared).
    store: ConstraintStore,
    constraints: ConstraintTable,
    previous: ConstraintTable,
    cache: Vec<(u64, u64, u32)>,
    /// Whether `cache` already lists this step's table for the next step (the
    /// prepare stage makes it; a table changed since, or a proxy forgotten, clears it).
    cache_ready: bool,
    /// What colouring needs of each of this step's constraints (from the prepare).
    colorables: Vec<Colorable>,
    coloring: Coloring,
    solver: Solver,
    states: Vec<BodyState>,
    start_poses: Vec<(Vec3, Quat)>,
    /// Pair keys touching after the last step (sleeping ones included), sorted.
    touching: Vec<u64>,
    events: Vec<ContactEvent>,
    /// End events of bodies destroyed since the last step.
    pending_events: Vec<ContactEvent>,
    profile: StepProfile,
    counters: StepCounters,
    /// The next stage of the step in progress (an index into `StepStage::ALL`) and
    /// that step's `dt`.
    next_stage: usize,
    stage_dt: f32,
    scratch: Scratch,
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
struct Scratch {
    /// The solve's plan (see `solver::run_plan`).
    ops: Vec<Op>,
    moving: Vec<(u32, ProxyId, u32)>,
    /// Each moving proxy's tight box, its motion this step, and whether the box left
    /// the proxy's fat box (a finite box only).
    boxes: Vec<(Aabb, Vec3, bool)>,
    terrain_query: Vec<(u32, Aabb)>,
    chunks: Vec<IVec3>,
    items: Vec<TerrainItem>,
    /// This step's narrowphase outputs (fresh constraints, until they are copied into
    /// the store; terrain triangles gathered for the next step).
    outs: Vec<NarrowOut>,
    /// [`Bodies::layout`] when the narrowphase set its constraints' rows.
    rows_layout: u64,
    /// Last step's `outs` (their gathered terrain triangles are read again) and the
    /// index of those (see `narrow::Kept`).
    kept_outs: Vec<NarrowOut>,
    kept_index: Vec<(u32, u32, u32)>,
    /// Which of last step's constraints this step's narrowphase renewed.
    renewed: Vec<bool>,
    /// Where each chunk's constraints start in the step's table.
    out_starts: Vec<u32>,
    /// How many chunks this step's narrowphase filled.
    joined: usize,
    wake: Vec<u32>,
    groups: Vec<u32>,
    /// Constraints of groups woken by this step's narrowphase (copied into the store).
    woken: Vec<Constraint>,
    touching: Vec<u64>,
    /// The merge buffer of key lists (`runs::sort_runs`, the touching keys' merge).
    key_merge: Vec<u64>,
    /// The merge buffer of the cache's sort.
    cache_merge: Vec<(u64, u64, u32)>,
    fast: Vec<u32>,
    hits: Vec<Option<(Vec3, Quat)>>,
    sleepers: Vec<(u32, BodyId)>,
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
            broadphase: BroadPhase::new(TreeConfig::default()),
            proxies: Vec::new(),
            extents: Vec::new(),
            terrain: None,
            terrain_contacts: TerrainContacts::new(),
            islands: Islands::default(),
            store: ConstraintStore::default(),
            constraints: ConstraintTable::default(),
            colorables: Vec::new(),
            previous: ConstraintTable::default(),
            cache: Vec::new(),
            cache_ready: false,
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
        }
    }

    /// Checks every invariant of the world: body sets and handles, each shape's proxy
    /// in the broadphase tree (user data, sleeping flag), the tree itself, the
    /// sleeping groups, and the terrain's mesh cache. Panics with a description on
    /// violation. O(n); for tests, fuzzing and `kiln_world_validate`.
    pub fn validate(&self) {
        let bodies = &self.bodies;
        bodies.validate();
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
        // Every constraint in the store is in one of the tables, once.
        let tables = self.previous.len() + self.constraints.len();
        assert_eq!(self.store.len(), tables, "constraints in the store and in the tables");
        let mut slots: Vec<*const Constraint> =
            self.previous.iter().chain(self.constraints.iter()).map(std::ptr::from_ref).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), tables, "a constraint twice in the tables");
        if let Some(terrain) = &self.terrain {
            terrain.meshes().validate();
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

    /// The terrain near the shapes as the continuous stage sees it, and every awake
    /// shape's proxy with its fat box.
    #[cfg(test)]
    pub(crate) fn near_terrain(&self) -> Option<(NearTerrain<'_>, Vec<(u32, Aabb)>)> {
        let s = &self.scratch;
        let near = NearTerrain {
            terrain: self.terrain.as_ref()?,
            contacts: &self.terrain_contacts,
            gathered: Kept { outs: &s.outs[..s.joined], index: &s.kept_index },
        };
        let (tree, a) = (self.broadphase.tree(), &self.bodies.awake);
        let shapes = (0..a.len()).flat_map(|row| &self.proxies[a.id[row].index as usize]);
        Some((near, shapes.map(|&p| (p.0, tree.fat_aabb(p))).collect()))
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

    /// Gives the world a voxel terrain (replacing any previous one).
    pub fn set_terrain(&mut self, terrain: Terrain) {
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
        let slot = id.index as usize;
        if self.proxies.len() <= slot {
            self.proxies.resize_with(slot + 1, Vec::new);
            self.extents.resize(slot + 1, Extent::default());
        }
        self.proxies[slot].clear();
        self.extents[slot] = Extent { max: 0.0, min: f32::INFINITY };
        Ok(id)
    }

    /// Destroys a body, its shapes and contacts. Contacts it was touching end (the
    /// events come with the next step's); islands resting on it wake.
    pub fn destroy_body(&mut self, id: BodyId) -> Result<(), BodyError> {
        self.bodies.locate(id)?;
        self.wake_touching(id.index);
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
    fn forget_proxy(&mut self, proxy: ProxyId) {
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
        self.refresh_shapes(id);
        Ok(())
    }

    /// After shapes or mass changed: proxies, extents.
    fn refresh_shapes(&mut self, id: BodyId) {
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

    fn wake_all(&mut self) {
        let mut groups = std::mem::take(&mut self.scratch.groups);
        groups.clear();
        self.islands.live_groups(&mut groups);
        self.wake_groups(groups, false);
    }

    /// Wakes every group with a stored constraint on body slot `slot`.
    fn wake_touching(&mut self, slot: u32) {
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
    fn wake_groups(&mut self, mut groups: Vec<u32>, keep: bool) {
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
    fn wake_group(&mut self, g: u32, keep: bool) {
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
    fn event(&self, begin: bool, key: u64) -> Option<ContactEvent> {
        contact_event(self.broadphase.tree(), &self.bodies, begin, key)
    }

    /// Advances the world by `dt` seconds (finite, >= 0): every stage of
    /// [`StepStage::ALL`] in order.
    pub fn step(&mut self, dt: f32, jobs: Jobs) -> Result<(), BodyError> {
        for stage in StepStage::ALL {
            self.step_stage(stage, dt, jobs)?;
        }
        Ok(())
    }

    /// Runs one stage of a step. Stages run in the order of [`StepStage::ALL`] (anything
    /// else is [`BodyError::OutOfOrder`] and changes nothing); the first takes and checks
    /// `dt` (finite, >= 0), the others use that step's. [`World::add_step_passes`] makes
    /// each stage a frame-graph pass; [`World::step`] runs them all here.
    pub fn step_stage(&mut self, stage: StepStage, dt: f32, jobs: Jobs) -> Result<(), BodyError> {
        if stage != StepStage::ALL[self.next_stage] {
            return Err(BodyError::OutOfOrder);
        }
        if stage == StepStage::Broadphase {
            if !(dt.is_finite() && dt >= 0.0) {
                return Err(BodyError::InvalidArgument);
            }
            self.stage_dt = dt;
        }
        let dt = self.stage_dt;
        let start = Instant::now();
        match stage {
            StepStage::Broadphase => {
                self.events.clear();
                self.events.append(&mut self.pending_events);
                let _ = self.terrain_stage(jobs);
                self.broadphase_stage(dt, jobs);
            }
            StepStage::Narrowphase => self.narrowphase_stage(dt, jobs),
            StepStage::Prepare => {
                self.prepare_stage(jobs);
                self.color_and_list(dt, jobs);
            }
            StepStage::Solve => {
                if dt > 0.0 {
                    self.solve_stage(dt, jobs);
                }
            }
            StepStage::Continuous => {
                if dt > 0.0 && self.def.enable_continuous {
                    self.continuous_stage(jobs);
                }
            }
            StepStage::Sleep => {
                self.sleep_stage(dt);
                self.remember_constraints();
                if let Some(t) = self.terrain.as_mut() {
                    t.trim_meshes();
                }
            }
        }
        let ms = start.elapsed().as_secs_f32() * 1000.0;
        let p = &mut self.profile;
        match stage {
            StepStage::Broadphase => p.broadphase = ms,
            StepStage::Narrowphase => p.narrowphase = ms,
            StepStage::Prepare => p.prepare = ms,
            StepStage::Solve => p.solve = ms,
            StepStage::Continuous => p.continuous = ms,
            StepStage::Sleep => {
                p.sleep = ms;
                p.total = p.broadphase + p.narrowphase + p.prepare + p.solve + p.continuous + p.sleep;
                self.counters.awake_bodies = self.bodies.awake.len() as u32;
                self.counters.pairs = self.broadphase.pair_count() as u32;
                self.counters.sleeping_groups = self.islands.group_count() as u32;
            }
        }
        self.next_stage = (self.next_stage + 1) % StepStage::ALL.len();
        Ok(())
    }

    /// Declares the stages of a step as passes of `graph` (named as
    /// [`StepStage::name`] says), each writing `world`, so they run in order after the
    /// graph's earlier writers of `world` and their jobs run on the graph's executor.
    /// Each execution of the graph steps the world by the frame's `delta_time`.
    pub fn add_step_passes(graph: &mut FrameGraph, world: Res<World>) -> [PassId; 6] {
        StepStage::ALL.map(|stage| {
            graph.pass(stage.name()).writes(world).run(move |ctx| {
                let mut w = ctx.write(&world)?;
                w.step_stage(stage, ctx.frame().delta_time, ctx.jobs())
                    .map_err(|e| GraphError::PassFailed { pass: ctx.name().to_owned(), message: e.to_string() })
            })
        })
    }

    /// Regenerates edited terrain chunks and wakes the groups touching them.
    fn terrain_stage(&mut self, jobs: Jobs) -> usize {
        let Some(terrain) = self.terrain.as_mut() else { return 0 };
        if terrain.dirty_count() == 0 {
            return 0;
        }
        let changed = &mut self.scratch.chunks;
        changed.clear();
        changed.extend_from_slice(terrain.regenerate(jobs));
        changed.sort_unstable_by_key(|c| c.to_array());
        let count = changed.len();
        let mut groups = std::mem::take(&mut self.scratch.groups);
        groups.clear();
        let tree = self.broadphase.tree();
        for c in self.terrain_contacts.contacts() {
            if changed.binary_search_by_key(&c.chunk.to_array(), |x| x.to_array()).is_ok() {
                let (slot, _) = shape_ref(tree.user_data(ProxyId(c.body)));
                let g = self.islands.group_of(slot);
                if g != NONE {
                    groups.push(g);
                }
            }
        }
        self.wake_groups(groups, false);
        count
    }

    /// Shape boxes of awake bodies into the tree, terrain contacts, new pairs.
    fn broadphase_stage(&mut self, dt: f32, jobs: Jobs) {
        /// How many shapes ahead the box pass prefetches.
        const PREFETCH_SHAPES: usize = 4;
        let s = &mut self.scratch;
        s.moving.clear();
        let awake = &self.bodies.awake;
        for row in 0..awake.len() {
            let slot = awake.id[row].index;
            for (k, &proxy) in self.proxies[slot as usize].iter().enumerate() {
                s.moving.push((row as u32, proxy, k as u32));
            }
        }
        s.boxes.clear();
        s.boxes.resize(s.moving.len(), (Aabb::EMPTY, Vec3::ZERO, false));
        let (moving, bodies, tree) = (&s.moving, &self.bodies, self.broadphase.tree());
        let boxes = Column::new(&mut s.boxes);
        jobs.parallel_for(0..moving.len(), 128, |range, _| {
            // SAFETY: `parallel_for` hands each chunk range to exactly one job.
            let out = unsafe { boxes.rows(range.clone()) };
            for (k, i) in range.enumerate() {
                // The shape a few entries ahead: it sits behind the slot's own list.
                if let Some(&(row, _, shape)) = moving.get(i + PREFETCH_SHAPES) {
                    let slot = bodies.awake.id[row as usize].index;
                    if let Some(s) = bodies.shapes_of_slot(slot).get(shape as usize) {
                        crate::math::prefetch(s);
                    }
                }
                let (row, proxy, shape) = moving[i];
                let a = &bodies.awake;
                let xf = a.transform(row as usize);
                let s = &bodies.shapes_of_slot(a.id[row as usize].index)[shape as usize];
                let tight = s.shape.aabb(&xf.mul(&s.def.pose));
                // The containment test here, in parallel: the serial tree moves below
                // then visit only the boxes that left their fat boxes (a move changes
                // only its own proxy's fat box).
                let finite = tight.is_valid() && tight.min.is_finite() && tight.max.is_finite();
                let escaped = finite && !tree.fat_aabb(proxy).contains(&tight);
                out[k] = (tight, a.linear_velocity[row as usize] * dt, escaped);
            }
        });
        // The tree's moves are serial, and the terrain contacts do not read the tree:
        // the two run side by side.
        let (moving, boxes) = (&s.moving, &s.boxes);
        let broadphase = &mut self.broadphase;
        let mut move_proxies = move || {
            for (&(_, proxy, _), (tight, d, _)) in moving.iter().zip(boxes).filter(|(_, b)| b.2) {
                broadphase.move_proxy(proxy, tight, *d);
            }
            broadphase.update(jobs);
        };
        let Some(terrain) = self.terrain.as_mut() else {
            move_proxies();
            return;
        };
        s.terrain_query.clear();
        for (&(_, proxy, _), (tight, d, _)) in moving.iter().zip(boxes) {
            let mut swept = *tight;
            swept.min += d.min(Vec3::ZERO);
            swept.max += d.max(Vec3::ZERO);
            s.terrain_query.push((proxy.0, swept.expanded(SPECULATIVE_DISTANCE)));
        }
        let (contacts, query, shared): (_, _, &Terrain) = (&mut self.terrain_contacts, &s.terrain_query, terrain);
        jobs.join(move_proxies, || contacts.update(shared, query, jobs));
        // Meshes of every chunk an awake shape touches, built in parallel if missing.
        // The update's added and kept contacts are exactly the awake shapes' contacts;
        // the list repeats chunks, which `prepare_meshes` takes.
        s.chunks.clear();
        let (added, kept) = (self.terrain_contacts.added(), self.terrain_contacts.kept());
        s.chunks.extend(added.iter().chain(kept).filter(|c| c.kind == ContactKind::Solid).map(|c| c.chunk));
        terrain.prepare_meshes(&s.chunks, jobs);
    }

    /// Manifolds for every pair with an awake body and every awake shape on terrain;
    /// wakes the sleeping groups they touch.
    fn narrowphase_stage(&mut self, dt: f32, jobs: Jobs) {
        // Last step's table already moved to `previous` (see `remember_constraints`).
        self.constraints.clear();
        let s = &mut self.scratch;
        std::mem::swap(&mut s.outs, &mut s.kept_outs);
        s.woken.clear();
        // Both lists as long as the longer, so neither grows later than the other.
        let n = s.outs.len().max(s.kept_outs.len());
        s.outs.resize_with(n, NarrowOut::default);
        s.items.clear();
        let tree = self.broadphase.tree();
        let bodies = &self.bodies;
        let place = |p: ProxyId| {
            let (slot, _) = shape_ref(tree.user_data(p));
            bodies.place_of_slot(slot).expect("live body")
        };
        let contacts = self.terrain_contacts.contacts();
        let mut i = 0;
        while i < contacts.len() {
            let proxy = contacts[i].body;
            let start = i;
            while i < contacts.len() && contacts[i].body == proxy {
                i += 1;
            }
            let (set, row) = place(ProxyId(proxy));
            if set == SetKind::Awake && bodies.awake.inv_mass[row] > 0.0 {
                s.items.push(TerrainItem { proxy: ProxyId(proxy), start: start as u32, end: i as u32 });
            }
        }
        s.renewed.clear();
        s.renewed.resize(self.previous.len(), false);
        let input = NarrowInput {
            bodies,
            tree,
            terrain: self.terrain.as_ref(),
            terrain_contacts: contacts,
            terrain_friction: self.def.terrain_friction,
            margin: SPECULATIVE_DISTANCE,
            previous: &self.previous,
            cache: &self.cache,
            kept: Kept { outs: &s.kept_outs, index: &s.kept_index },
            renewed: Column::new(&mut s.renewed),
            dt,
        };
        let chunks = narrow::run(&input, self.broadphase.pair_keys(), &s.items, &mut s.outs, jobs);
        s.rows_layout = bodies.layout();
        Kept::build_index(&s.outs[..chunks], &mut s.kept_index);
        // Last step's constraints that no item renewed (the items marked theirs)
        // give their slots back; then the chunks' constraints join
        // `World::constraints` in chunk order, fresh ones copied into the store
        // (renewed ones are there already).
        for (i, _) in s.renewed.iter().enumerate().filter(|(_, &renewed)| !renewed) {
            // SAFETY: every table entry is a live constraint of the store, and last
            // step's table is cleared below, unread since.
            unsafe { self.store.release(self.previous.at(i)) };
        }
        s.wake.clear();
        let mut points = 0;
        self.counters.reused_pairs = 0;
        self.counters.reused_terrain = 0;
        s.out_starts.clear();
        for out in &s.outs[..chunks] {
            s.out_starts.push(self.constraints.len() as u32);
            for &e in &out.order {
                // A fresh constraint gets its slot now and its bits below, in
                // parallel (the first step of a large scene makes thousands).
                let c = match e & KEPT {
                    0 => self.store.take(),
                    _ => self.previous.at((e & !KEPT) as usize),
                };
                // SAFETY: the store keeps it in place until its slot is released,
                // which happens after the table has moved on (see above, and the
                // sleep stage's `retain`); a fresh slot is written below before
                // anything reads the table.
                unsafe { self.constraints.push(c) };
            }
            points += out.points;
            self.counters.reused_pairs += out.reused;
            self.counters.reused_terrain += out.reused_terrain;
            s.wake.extend_from_slice(&out.wake);
        }
        let (outs, starts, table) = (&s.outs[..chunks], &s.out_starts, &self.constraints);
        jobs.parallel_for(0..chunks, 16, |range, _| {
            for k in range {
                let fresh = outs[k].order.iter().enumerate().filter(|(_, &e)| e & KEPT == 0);
                for (j, &e) in fresh {
                    // SAFETY: entry `starts[k] + j` is this chunk's alone.
                    unsafe { table.write(starts[k] as usize + j, &outs[k].fresh[e as usize]) };
                }
            }
        });
        self.previous.clear();
        s.joined = chunks;
        // Wake touched groups; their stored constraints join this step, last.
        let mut wake = std::mem::take(&mut self.scratch.wake);
        let mut groups = std::mem::take(&mut self.scratch.groups);
        groups.clear();
        groups.extend(wake.iter().map(|&slot| self.islands.group_of(slot)).filter(|&g| g != NONE));
        wake.clear();
        self.scratch.wake = wake;
        self.wake_groups(groups, true);
        for c in &self.scratch.woken {
            let at = self.store.insert(c);
            // SAFETY: as above.
            unsafe { self.constraints.push(at) };
            points += c.count;
        }
        self.counters.constraints = self.constraints.len() as u32;
        self.counters.contact_points = points;
    }

    /// What colouring needs of this step's constraints, in table order. The
    /// narrowphase made it with each constraint's awake rows while the constraint was
    /// in cache; where bodies changed rows since (a group woke, or bodies were added,
    /// removed or given new masses between the stages), every constraint's rows are
    /// set again here.
    fn prepare_stage(&mut self, jobs: Jobs) {
        let bodies = &self.bodies;
        let s = &self.scratch;
        self.colorables.clear();
        if bodies.layout() == s.rows_layout {
            debug_assert!(s.woken.is_empty(), "waking moves bodies");
            for out in &s.outs[..s.joined] {
                self.colorables.extend_from_slice(&out.colorables);
            }
            return;
        }
        let constraints = &self.constraints;
        self.colorables.resize(constraints.len(), Colorable::NONE);
        let colorables = Column::new(&mut self.colorables);
        jobs.parallel_for(0..constraints.len(), 256, |range, _| {
            // SAFETY: `parallel_for` hands each range to exactly one job.
            let out = unsafe { colorables.rows(range.clone()) };
            for (slot, i) in out.iter_mut().zip(range) {
                // SAFETY: constraint `i` is this job's alone (as above).
                *slot = narrow::set_rows(bodies, unsafe { constraints.get_unchecked(i) });
            }
        });
    }

    /// Colours this step's constraints for the solve (when one runs) and, beside
    /// that on another worker, makes the contact lists (see [`ContactLists::make`]):
    /// neither side reads what the other writes, so the serial colouring and the
    /// serial lists take the time of the longer one (a `large_pyramid` step has
    /// 15,000 constraints; each side takes about 0.15 ms on one thread).
    fn color_and_list(&mut self, dt: f32, jobs: Jobs) {
        let n = self.bodies.awake.len();
        let (coloring, colorables) = (&mut self.coloring, &self.colorables);
        let color = move || {
            if dt > 0.0 {
                coloring.color(colorables, n);
            }
        };
        let s = &mut self.scratch;
        let lists = ContactLists {
            table: &self.constraints,
            tree: self.broadphase.tree(),
            bodies: &self.bodies,
            cache: &mut self.cache,
            cache_merge: &mut s.cache_merge,
            touching: &mut self.touching,
            now: &mut s.touching,
            next: &mut s.key_merge,
            events: &mut self.events,
        };
        jobs.join(color, move || lists.make());
        self.cache_ready = true;
        if dt > 0.0 {
            self.counters.colors = self.coloring.color_count() as u32;
            self.counters.overflow_constraints = self.coloring.overflow() as u32;
        }
    }

    /// The solver over the colours the prepare stage made (the soft step over all
    /// substeps, or sequential impulses), then poses and sleep timers.
    fn solve_stage(&mut self, dt: f32, jobs: Jobs) {
        let n = self.bodies.awake.len();

        let substeps = match self.solver {
            Solver::SoftStep => self.def.substeps,
            Solver::SequentialImpulses { .. } => 1,
        };
        let h = dt / substeps as f32;
        let hertz = self.def.contact_hertz.min(0.25 / h);
        let ctx = StepContext {
            inv_h: 1.0 / h,
            soft: Softness::new(hertz, self.def.contact_damping_ratio, h),
            static_soft: Softness::new(2.0 * hertz, self.def.contact_damping_ratio, h),
            push_out: self.def.contact_push_out,
            restitution_threshold: self.def.restitution_threshold,
        };
        let a = &self.bodies.awake;
        self.states.clear();
        self.states.extend((0..n).map(|i| BodyState {
            v: a.linear_velocity[i],
            w: a.angular_velocity[i],
            ..BodyState::STILL
        }));
        self.start_poses.clear();
        self.start_poses.extend((0..n).map(|i| (a.position[i], a.rotation[i])));

        // Prepare (and pack into bundles).
        let (states, centers, bodies) = (&self.states, &a.position, &self.bodies);
        // The states only when asked: the bundles' prepare reads only the centres.
        let frame = |c: &Constraint, motion: bool| {
            let at = |row: u32| match row {
                NONE => (Vec3::ZERO, BodyState::STILL),
                r if motion => (centers[r as usize], states[r as usize]),
                r => (centers[r as usize], BodyState::STILL),
            };
            let ((center_a, state_a), (center_b, state_b)) = (at(c.row_a), at(c.row_b));
            // Terrain and static bodies: anchors from a fixed point of their own.
            let center_a = if c.row_a == NONE { static_center(bodies, c.body_a, c) } else { center_a };
            // A pair's lever arms are frozen where its manifold was found (see
            // `narrow::reuse_manifolds`): B's arms are A's plus the found offset.
            let center_b = if c.body_b != NONE {
                center_a - c.found.offset
            } else if c.row_b == NONE {
                static_center(bodies, c.body_b, c)
            } else {
                center_b
            };
            let mass = |row: u32| match row {
                NONE => (0.0, Mat3::ZERO),
                r => (a.inv_mass[r as usize], a.world_inv_inertia[r as usize]),
            };
            let ((inv_mass_a, inv_inertia_a), (inv_mass_b, inv_inertia_b)) = (mass(c.row_a), mass(c.row_b));
            Frame { center_a, center_b, state_a, state_b, inv_mass_a, inv_mass_b, inv_inertia_a, inv_inertia_b }
        };
        // Position correction reads the prepared constraints, not the bundles.
        let write_back = matches!(self.solver, Solver::SequentialImpulses { .. });
        self.coloring.prepare(&mut self.constraints, frame, write_back, jobs);
        self.coloring.alternate = !write_back;

        // The substeps (or the rigid passes) as one plan, run in one parallel region.
        let ops = &mut self.scratch.ops;
        ops.clear();
        match self.solver {
            Solver::SoftStep => {
                for _ in 0..substeps {
                    ops.extend([
                        Op::Bodies(BodyPass::IntegrateVelocities),
                        Op::Pass(Pass::WarmStart),
                        Op::Pass(Pass::Solve),
                        Op::Bodies(BodyPass::IntegratePositions),
                        Op::Pass(Pass::Relax),
                    ]);
                }
            }
            Solver::SequentialImpulses { velocity_iterations, position_iterations } => {
                // Rigid passes: the relax pass is the solve without a position bias.
                ops.extend([Op::Bodies(BodyPass::IntegrateVelocities), Op::Pass(Pass::WarmStart)]);
                ops.extend((0..velocity_iterations).map(|_| Op::Pass(Pass::Relax)));
                ops.push(Op::Bodies(BodyPass::IntegratePositions));
                ops.extend((0..position_iterations).map(|_| Op::Pass(Pass::CorrectPositions)));
            }
        }
        let (bodies, gravity) = (&self.bodies, self.def.gravity);
        let body_loop = |body: BodyPass, rows: Range<usize>, states: &Column<BodyState>| {
            // SAFETY: `run_plan` hands each chunk of rows to exactly one job.
            let states = unsafe { states.rows(rows.clone()) };
            match body {
                BodyPass::IntegrateVelocities => integrate_velocities(bodies, rows, states, gravity, h),
                BodyPass::IntegratePositions => integrate_positions(states, h),
            }
        };
        solver::run_plan(ops, &mut self.coloring, &self.constraints, &mut self.states, &ctx, jobs, body_loop);
        self.coloring.unpack(&mut self.constraints, jobs);
        solver::run_pass(Pass::Restitute, &mut self.coloring, &self.constraints, &mut self.states, &ctx, jobs);
        self.finalize(dt, jobs);
    }

    /// Velocities and poses back into the awake set; world inertia; sleep timers;
    /// force accumulators cleared.
    fn finalize(&mut self, dt: f32, jobs: Jobs) {
        let s = &mut self.bodies.awake;
        let n = s.len();
        let (x, q, v, w) = (
            Column::new(&mut s.position),
            Column::new(&mut s.rotation),
            Column::new(&mut s.linear_velocity),
            Column::new(&mut s.angular_velocity),
        );
        let (ii, sleep) = (Column::new(&mut s.world_inv_inertia), Column::new(&mut s.sleep_time));
        let rest = Column::new(&mut s.rest_pose);
        let (force, torque) = (Column::new(&mut s.force), Column::new(&mut s.torque));
        let (local, flags_col, ids) = (&s.local_inv_inertia, &s.flags, &s.id);
        let (states, extents) = (&self.states, &self.extents);
        let (threshold, enable_sleep) = (self.def.sleep_threshold, self.def.enable_sleep);
        let tolerance = self.def.sleep_threshold * self.def.time_to_sleep;
        jobs.parallel_for(0..n, 256, |range, _| {
            // SAFETY: `parallel_for` hands each chunk range to exactly one job.
            let (x, q, v, w, ii, sleep, f, t, rest) = unsafe {
                (
                    x.rows(range.clone()),
                    q.rows(range.clone()),
                    v.rows(range.clone()),
                    w.rows(range.clone()),
                    ii.rows(range.clone()),
                    sleep.rows(range.clone()),
                    force.rows(range.clone()),
                    torque.rows(range.clone()),
                    rest.rows(range.clone()),
                )
            };
            for (k, i) in range.enumerate() {
                let st = &states[i];
                x[k] += st.dp;
                q[k] = (st.dq * q[k]).normalize();
                v[k] = st.v;
                w[k] = st.w;
                ii[k] = world_inertia(q[k], local[i]);
                f[k] = Vec3::ZERO;
                t[k] = Vec3::ZERO;
                // Resting = slow (Box2D: speed, angular speed times reach, under the
                // threshold) or still (Jolt: near the pose where resting began, the
                // rotation weighted by reach; |q - q0| is about half the angle).
                // Slow creep sleeps by the first rule, jitter in place by the second.
                let reach = extents[ids[i].index as usize].max;
                let slow = v[k].length().max(w[k].length() * reach) < threshold;
                let (x0, q0) = rest[k];
                let turn = (q[k] - q0).length().min((q[k] + q0).length()) * 2.0 * reach;
                let still = x[k].distance(x0) + turn < tolerance;
                let may =
                    enable_sleep && flags_col[i] & flags::ALLOW_SLEEP != 0 && flags_col[i] & flags::KINEMATIC == 0;
                if may && (slow || still) {
                    if !still {
                        rest[k] = (x[k], q[k]);
                    }
                    sleep[k] += dt;
                } else {
                    rest[k] = (x[k], q[k]);
                    sleep[k] = 0.0;
                }
            }
        });
    }

    /// Fast bodies (moved more than half their thinnest shape, or bullets) are swept
    /// against static bodies and terrain from their start pose; a hit moves them back
    /// to the time of impact, keeping their velocity, so the next step's contact
    /// stops them.
    fn continuous_stage(&mut self, jobs: Jobs) {
        let s = &mut self.scratch;
        s.fast.clear();
        let a = &self.bodies.awake;
        for i in 0..a.len() {
            if a.inv_mass[i] == 0.0 {
                continue;
            }
            let moved = (a.position[i] - self.start_poses[i].0).length();
            let e = self.extents[a.id[i].index as usize];
            if (a.flags[i] & flags::BULLET != 0 && moved > 0.0) || moved > 0.5 * e.min {
                s.fast.push(i as u32);
            }
        }
        s.hits.clear();
        s.hits.resize(s.fast.len(), None);
        // The body tree holds every body: with no static one in it, the sweeps skip
        // it (a fifth of the rain scene's sweep time went to finding nothing there).
        let tree = self.broadphase.tree();
        let statics = !s.fast.is_empty() && self.bodies.resting.flags.iter().any(|&f| f & flags::STATIC != 0);
        let tree = statics.then_some(tree);
        let terrain = self.terrain.as_ref().map(|terrain| NearTerrain {
            terrain,
            contacts: &self.terrain_contacts,
            gathered: Kept { outs: &s.outs[..s.joined], index: &s.kept_index },
        });
        let (fast, bodies, starts) = (&s.fast, &self.bodies, &self.start_poses);
        let (extents, proxies) = (&self.extents, &self.proxies);
        let hits = Column::new(&mut s.hits);
        jobs.parallel_for(0..fast.len(), 4, |range, _| {
            // SAFETY: `parallel_for` hands each chunk range to exactly one job.
            let out = unsafe { hits.rows(range.clone()) };
            for (k, i) in range.enumerate() {
                let row = fast[i] as usize;
                let slot = bodies.awake.id[row].index as usize;
                out[k] = sweep_body(bodies, tree, terrain.as_ref(), starts, row, &extents[slot], &proxies[slot]);
            }
        });
        let mut count = 0;
        for (&row, hit) in s.fast.iter().zip(&s.hits) {
            if let Some((x, q)) = *hit {
                let a = &mut self.bodies.awake;
                a.position[row as usize] = x;
                a.rotation[row as usize] = q;
                a.world_inv_inertia[row as usize] = world_inertia(q, a.local_inv_inertia[row as usize]);
                count += 1;
            }
        }
        self.counters.continuous_hits = count;
    }

    /// Islands by union-find; quiet islands go to sleep with their constraints.
    fn sleep_stage(&mut self, dt: f32) {
        let n = self.bodies.awake.len();
        if !self.def.enable_sleep || dt == 0.0 || n == 0 {
            return;
        }
        let a = &self.bodies.awake;
        // Cheap exit: no body has rested long enough.
        let time = self.def.time_to_sleep;
        if !(0..n).any(|i| a.sleep_time[i] >= time) {
            return;
        }
        self.islands.begin(n);
        let dynamic = |row: u32| row != NONE && a.inv_mass[row as usize] > 0.0;
        let moving_kinematic = |row: u32| {
            row != NONE
                && a.flags[row as usize] & flags::KINEMATIC != 0
                && (a.linear_velocity[row as usize] != Vec3::ZERO || a.angular_velocity[row as usize] != Vec3::ZERO)
        };
        for c in self.constraints.iter() {
            if c.count == 0 {
                continue;
            }
            if dynamic(c.row_a) && dynamic(c.row_b) {
                self.islands.union(c.row_a, c.row_b);
            }
        }
        for i in 0..n {
            let root = self.islands.find(i as u32) as usize;
            if a.sleep_time[i] < time || a.inv_mass[i] == 0.0 {
                self.islands.may_sleep[root] = false;
            }
        }
        for c in self.constraints.iter() {
            if c.count == 0 {
                continue;
            }
            for (me, other) in [(c.row_a, c.row_b), (c.row_b, c.row_a)] {
                if dynamic(me) && moving_kinematic(other) {
                    let root = self.islands.find(me) as usize;
                    self.islands.may_sleep[root] = false;
                }
            }
        }
        // Groups in row order of their first body.
        let mut sleepers = std::mem::take(&mut self.scratch.sleepers);
        sleepers.clear();
        for i in 0..n {
            let root = self.islands.find(i as u32) as usize;
            if !self.islands.may_sleep[root] || a.inv_mass[i] == 0.0 {
                continue;
            }
            if self.islands.root_group[root] == NONE {
                self.islands.root_group[root] = self.islands.new_group();
            }
            sleepers.push((self.islands.root_group[root], a.id[i]));
        }
        if sleepers.is_empty() {
            self.scratch.sleepers = sleepers;
            return;
        }
        // Constraints of sleeping islands move into their groups (not those with a
        // kinematic body: that pair is recomputed while the kinematic body is awake).
        let islands = &mut self.islands;
        let store = &mut self.store;
        self.cache_ready = false;
        self.constraints.retain(
            // SAFETY: a constraint dropped from the table is read nowhere else.
            |c| unsafe { store.release(c) },
            |c| {
                let row = if dynamic(c.row_a) { c.row_a } else { c.row_b };
                let group = if dynamic(row) {
                    let root = islands.find(row) as usize;
                    islands.root_group[root]
                } else {
                    NONE
                };
                let kinematic = |r: u32| r != NONE && a.flags[r as usize] & flags::KINEMATIC != 0;
                if group != NONE && !kinematic(c.row_a) && !kinematic(c.row_b) {
                    islands.add_constraint(group, *c);
                }
                group == NONE
            },
        );
        for &(g, id) in &sleepers {
            self.islands.add_body(g, id);
            self.bodies.move_to(id, SetKind::Resting).expect("live body");
            let (_, row) = self.bodies.locate(id).expect("live body");
            self.bodies.resting.linear_velocity[row] = Vec3::ZERO;
            self.bodies.resting.angular_velocity[row] = Vec3::ZERO;
            for &p in &self.proxies[id.index as usize] {
                self.broadphase.set_sleeping(p, true);
            }
        }
        self.scratch.sleepers = sleepers;
    }

    /// Keeps this step's constraints for the next step's warm start, with the cache
    /// the prepare stage made of them unless the table changed since.
    fn remember_constraints(&mut self) {
        std::mem::swap(&mut self.previous, &mut self.constraints);
        // It held the step before's, whose buffers the next narrowphase rewrites.
        self.constraints.clear();
        if !std::mem::take(&mut self.cache_ready) {
            list_cache(&self.previous, &mut self.cache, &mut self.scratch.cache_merge);
        }
    }
}

/// The contact event of pair `key` (its proxies' bodies and shapes).
fn contact_event(tree: &DynamicTree, bodies: &Bodies, begin: bool, key: u64) -> Option<ContactEvent> {
    let (pa, pb) = ((key >> 32) as u32, key as u32);
    let (slot_a, shape_a) = shape_ref(tree.user_data(ProxyId(pa)));
    let body_a = bodies.id_of_slot(slot_a);
    if pb == TERRAIN {
        return Some(ContactEvent { begin, body_a, shape_a, body_b: None, shape_b: u32::MAX });
    }
    let (slot_b, shape_b) = shape_ref(tree.user_data(ProxyId(pb)));
    Some(ContactEvent { begin, body_a, shape_a, body_b: Some(bodies.id_of_slot(slot_b)), shape_b })
}

/// The warm-start cache of `table`: `(key, sub, index)` of each constraint, sorted.
fn list_cache(table: &ConstraintTable, cache: &mut Vec<(u64, u64, u32)>, merge: &mut Vec<(u64, u64, u32)>) {
    cache.clear();
    cache.extend(table.iter().enumerate().map(|(i, c)| (c.key, c.sub, i as u32)));
    runs::sort_runs(cache, merge);
}

/// What the contact lists read and write (see [`ContactLists::make`]).
struct ContactLists<'a> {
    table: &'a ConstraintTable,
    tree: &'a DynamicTree,
    bodies: &'a Bodies,
    /// The next step's warm-start cache.
    cache: &'a mut Vec<(u64, u64, u32)>,
    cache_merge: &'a mut Vec<(u64, u64, u32)>,
    /// Keys touching after the last step, then after this one.
    touching: &'a mut Vec<u64>,
    /// Buffers: this step's touching keys, and the merged list.
    now: &'a mut Vec<u64>,
    next: &'a mut Vec<u64>,
    events: &'a mut Vec<ContactEvent>,
}

impl ContactLists<'_> {
    /// The next step's warm-start cache of this step's table, sorted by key, and
    /// from it the begin and end events: this step's touching keys (the cache's
    /// keys with points, already in order) against the last step's, where keys of
    /// groups still asleep stay touching. One merge of the two sorted lists: only a
    /// key that is no longer in the table looks up its bodies (it stays if both
    /// sleep), so a step whose touches all go on reads no body. Events come in key
    /// order.
    fn make(self) {
        let ContactLists { table, tree, bodies, cache, cache_merge, touching, now, next, events } = self;
        list_cache(table, cache, cache_merge);
        now.clear();
        for &(key, _, i) in cache.iter() {
            if table.get(i as usize).count > 0 && now.last() != Some(&key) {
                now.push(key);
            }
        }
        let asleep = |proxy: u32| {
            proxy == TERRAIN
                || !matches!(
                    bodies.place_of_slot(shape_ref(tree.user_data(ProxyId(proxy))).0),
                    Some((SetKind::Awake, _))
                )
        };
        let old = &*touching;
        next.clear();
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < now.len() {
            let (a, b) = (old.get(i).copied(), now.get(j).copied());
            if a.is_some() && a == b {
                next.push(now[j]);
                (i, j) = (i + 1, j + 1);
            } else if let Some(b) = b.filter(|&b| a.is_none_or(|a| b < a)) {
                // In the table only: a touch began.
                next.push(b);
                events.extend(contact_event(tree, bodies, true, b));
                j += 1;
            } else {
                // Touching last step only: asleep on both sides, or ended.
                let a = old[i];
                if asleep((a >> 32) as u32) && asleep(a as u32) {
                    next.push(a);
                } else {
                    events.extend(contact_event(tree, bodies, false, a));
                }
                i += 1;
            }
        }
        std::mem::swap(touching, next);
    }
}

/// The centre a static body's anchors are measured from (any fixed point works: its
/// velocity is zero); terrain uses the contact's first point.
fn static_center(bodies: &Bodies, slot: u32, c: &Constraint) -> Vec3 {
    match (slot != NONE).then(|| bodies.place_of_slot(slot)).flatten() {
        Some((set, row)) => bodies.set(set).position[row],
        None => c.points[0].point,
    }
}

/// Gravity, forces and damping into the solver's velocities of the awake rows `rows`
/// (dynamic bodies; `states` holds those rows' states), which saturate at
/// [`MAX_LINEAR_SPEED`] and [`MAX_ROTATION`] per substep.
fn integrate_velocities(bodies: &Bodies, rows: Range<usize>, states: &mut [BodyState], gravity: Vec3, h: f32) {
    let s = &bodies.awake;
    let max_spin = (MAX_ROTATION / h).min(MAX_LINEAR_SPEED);
    for (st, i) in states.iter_mut().zip(rows) {
        let m = s.inv_mass[i];
        if m == 0.0 {
            continue;
        }
        let dv = (gravity * s.gravity_scale[i] + s.force[i] * m) * h;
        let dw = s.world_inv_inertia[i] * s.torque[i] * h;
        st.v = saturate((st.v + dv) * (1.0 / (1.0 + h * s.linear_damping[i])), MAX_LINEAR_SPEED);
        st.w = saturate((st.w + dw) * (1.0 / (1.0 + h * s.angular_damping[i])), max_spin);
    }
}

/// `v` with at most `max` length. Absurd but finite forces (1e38 N on a light body)
/// overflow to infinities, and an inertia tensor can mix them into NaN: those
/// components saturate (NaN to 0), so the state stays finite whatever was applied.
/// Found by `samples-c/tests/fuzz_api.c`.
pub(crate) fn saturate(v: Vec3, max: f32) -> Vec3 {
    if v.is_finite() {
        return v.clamp_length_max(max);
    }
    let v = Vec3::select(v.is_nan_mask(), Vec3::ZERO, v);
    v.clamp(Vec3::splat(-max), Vec3::splat(max)).clamp_length_max(max)
}

/// Velocities into the solver's delta positions and rotations.
fn integrate_positions(states: &mut [BodyState], h: f32) {
    for st in states {
        st.dp += st.v * h;
        let spin = st.w * (0.5 * h);
        let dq = Quat::from_xyzw(spin.x, spin.y, spin.z, 0.0) * st.dq;
        st.dq = (st.dq + dq).normalize();
    }
}

/// The terrain with what the step learnt of it near each shape: the shapes' terrain
/// contacts, complete for any box inside a shape's last queried voxel range, and
/// the triangles the narrowphase gathered for them.
pub(crate) struct NearTerrain<'a> {
    pub(crate) terrain: &'a Terrain,
    contacts: &'a TerrainContacts,
    gathered: Kept<'a>,
}

/// What [`NearTerrain::around`] knows of a box.
pub(crate) enum Near<'a> {
    /// No solid terrain within reach.
    Nothing,
    /// Every triangle touching the box is in this set, in query order.
    Triangles(&'a [[Vec3; 3]]),
    /// The chunks must be looked up.
    Unknown,
}

impl<'a> NearTerrain<'a> {
    /// What the step knows of the terrain around `region`, a box of the shape with
    /// proxy `proxy`. The shape's contacts cover `region` when its voxel range lies
    /// inside the one they were found for, with the masks unchanged since: then no
    /// solid contact means no triangle near, and a gathered set whose box contains
    /// `region` holds every triangle of those chunks that touches it.
    pub(crate) fn around(&self, proxy: u32, region: &Aabb) -> Near<'a> {
        let (terrain, contacts) = (self.terrain, self.contacts);
        let Some(([lo, hi], stamp)) = contacts.range_of(proxy) else { return Near::Unknown };
        let Some((a, b)) = terrain.voxel_range(region) else { return Near::Unknown };
        if stamp != terrain.mask_stamp() || a.cmplt(lo).any() || b.cmpgt(hi).any() {
            return Near::Unknown;
        }
        if !contacts.contacts_of(proxy).iter().any(|c| c.kind == ContactKind::Solid) {
            return Near::Nothing;
        }
        match self.gathered.triangles_covering(proxy, terrain.revision(), region) {
            Some(set) => Near::Triangles(set),
            None => Near::Unknown,
        }
    }
}

/// Box2D v3's core fraction: a body's core is this fraction of its smallest extent.
const CORE_FRACTION: f32 = 0.25;

/// The earliest time of impact of an awake body's shapes, swept from its start pose
/// to its current pose, against static bodies (found in `tree`, when given) and
/// terrain; the pose there. `extent` is the body's [`Extent`].
///
/// Terrain triangles are one-sided surfaces, and a shape's sweep skips one, as Box2D
/// v3 skips its one-sided chain segments, when the shape's centroid starts behind
/// the triangle's plane, or closes in on it by less than the core distance
/// ([`CORE_FRACTION`] of the smallest extent) and ends farther than that in front:
/// a shape moving fast along the surface, or slowly towards it, clips it at most
/// by a little, which the speculative contacts resolve. Only the time of impact
/// of a centroid coming through a surface (or close to it) fast pauses the body.
///
/// The step already knows the terrain near most shapes ([`NearTerrain`]): then a
/// sweep tests the triangles the narrowphase gathered, or none, instead of finding
/// chunks and querying their trees; the same triangles in the same order.
fn sweep_body(
    bodies: &Bodies,
    tree: Option<&crate::spatial::DynamicTree>,
    terrain: Option<&NearTerrain>,
    starts: &[(Vec3, Quat)],
    row: usize,
    extent: &Extent,
    proxies: &[ProxyId],
) -> Option<(Vec3, Quat)> {
    let core = CORE_FRACTION * extent.min;
    // The body lies within `extent.max` of its centre of mass, which moves on a
    // straight line: a triangle whose plane it stays this far in front of, at both
    // ends, is never within the time of impact's reach.
    let clear = extent.max + 2.0 * LINEAR_SLOP;
    let a = &bodies.awake;
    let center = a.local_center[row];
    let (c0, q0) = starts[row];
    let (c1, q1) = (a.position[row], a.rotation[row]);
    let frame = |c: Vec3, q: Quat| Isometry::new(c - q * center, q);
    let body = Sweep { start: frame(c0, q0), end: frame(c1, q1), local_center: center };
    let slot = a.id[row].index;
    let mut best = 1.0f32;
    for (shape, proxy) in bodies.shapes_of_slot(slot).iter().zip(proxies) {
        let pose = &shape.def.pose;
        let sweep = Sweep {
            start: body.start.mul(pose),
            end: body.end.mul(pose),
            local_center: pose.inverse_transform_point(center),
        };
        let swept = shape.shape.aabb(&sweep.start).union(&shape.shape.aabb(&sweep.end));
        let centroid = (sweep.start.transform_point(sweep.local_center), sweep.end.transform_point(sweep.local_center));
        let mut test = |other: &Shape, xf: Isometry| {
            let toi = shape_time_of_impact(
                &shape.shape,
                &sweep,
                other,
                &Sweep::fixed(xf),
                best,
                LINEAR_SLOP,
                0.25 * LINEAR_SLOP,
            );
            // A shape already touching at the start is the contact solver's business
            // (Box2D skips `t = 0` the same way).
            if matches!(toi.state, ToiState::Hit | ToiState::Failed) && toi.t > 0.0 && toi.t < best {
                best = toi.t;
            }
        };
        if let Some(tree) = tree {
            tree.query(&swept, |p| {
                let (other, k) = shape_ref(tree.user_data(p));
                if let Some((SetKind::Resting, r)) = bodies.place_of_slot(other) {
                    if bodies.resting.flags[r] & flags::STATIC != 0 {
                        let s = &bodies.shapes_of_slot(other)[k as usize];
                        if shape.def.collides_with(&s.def) {
                            test(&s.shape, bodies.resting.transform(r).mul(&s.def.pose));
                        }
                    }
                }
                true
            });
        }
        let Some(near) = terrain else { continue };
        // One-sided, as in the narrowphase: skip triangles the shape starts behind,
        // and those it only clips.
        let mut triangle = |v: [Vec3; 3]| {
            let n = (v[1] - v[0]).cross(v[2] - v[0]).normalize_or_zero();
            let (s1, s2) = (n.dot(centroid.0 - v[0]), n.dot(centroid.1 - v[0]));
            if s1 > 0.0 && !(s1 - s2 < core && s2 > core) && s1.min(s2) <= clear {
                test(&Shape::Triangle(v), Isometry::IDENTITY);
            }
        };
        match near.around(proxy.0, &swept) {
            Near::Nothing => {}
            Near::Triangles(set) => {
                for &v in set.iter().filter(|&&v| triangle_overlaps_aabb(v, &swept)) {
                    triangle(v);
                }
            }
            Near::Unknown => near.terrain.for_each_overlap(&swept, |chunk, overlap| {
                if let Some(mesh) = overlap.solid.then(|| near.terrain.chunk_mesh(chunk)).flatten() {
                    mesh.query_aabb(&swept, |i| {
                        triangle(mesh.triangle(i));
                        true
                    });
                }
                true
            }),
        }
    }
    if best >= 1.0 {
        return None;
    }
    let q = (q0 + (if q0.dot(q1) < 0.0 { -q1 } else { q1 } - q0) * best).normalize();
    Some((c0 + (c1 - c0) * best, q))
}
