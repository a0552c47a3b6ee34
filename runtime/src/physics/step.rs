//! The step's stages, in execution order (the table in `world.rs` says what each
//! does): terrain and broadphase, narrowphase and waking, the prepare with the
//! colouring and the contact lists, the solve and the finalize, then sleep. The
//! continuous stage is in `continuous.rs`; the solver's plan in `solver.rs`.

use std::ops::Range;
use std::time::Instant;

use glam::{Mat3, Quat, Vec3};

use super::body::{flags, saturate, Bodies, BodyError, BodyId, BodyShape, SetKind};
use super::constraint_graph::Colorable;
use super::constraint_graph::{BodyPass, Op, Pass};
use super::contact_solver::{BodyState, Constraint, ConstraintTable, Frame, Softness, StepContext, NONE};
use super::island::Islands;
use super::joint::{JOINT_DAMPING_RATIO, JOINT_HERTZ_PER_SUBSTEP_RATE};
use super::narrow::{self, shape_ref, Kept, NarrowInput, NarrowOut, TerrainItem, KEPT, TERRAIN};
use super::near::NearRecord;
use super::runs;
use super::solver;
use super::world::*;
use crate::frame::{FrameGraph, GraphError, PassId, Res};
use crate::jobs::{Column, Jobs};
use crate::math::{world_inertia, Isometry};
use crate::shapes::Shape;
use crate::spatial::{DynamicTree, ProxyId};
use crate::terrain::{ContactKind, Terrain};

impl World {
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
        // Bodies move: the query's list of escaped shapes is rebuilt on demand.
        self.escaped_fresh = false;
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
                self.joints.events.clear();
                self.joints.events.append(&mut self.joints.pending);
                self.sensors.events.clear();
                self.sensors.events.append(&mut self.sensors.pending);
                self.hit_events.clear();
                self.water.events.clear();
                self.water.events.append(&mut self.water.pending);
                let _ = self.terrain_stage(jobs);
                self.broadphase_stage(dt, jobs);
            }
            StepStage::Narrowphase => self.narrowphase_stage(dt, jobs),
            StepStage::Prepare => {
                self.find_hit_candidates();
                self.apply_water(dt, jobs);
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
                self.report_hits();
                self.record_moves();
                self.sleep_stage(dt);
                self.mark_fell_asleep();
                self.remember_constraints();
                self.update_sensors(jobs);
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
                self.counters.awake_islands = self.islands.island_count() as u32;
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
    pub(super) fn terrain_stage(&mut self, jobs: Jobs) -> usize {
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
    pub(super) fn broadphase_stage(&mut self, dt: f32, jobs: Jobs) {
        /// How many shapes ahead the box pass prefetches.
        const PREFETCH_SHAPES: usize = 4;
        self.list_moving();
        let s = &mut self.scratch;
        // Every row is overwritten below: only new ones need a value first (the
        // others are the last step's, and a serial pass writing them would first take
        // each line back from the workers that read it).
        s.boxes.resize(s.moving.len(), Placed::default());
        s.boxes_layout = self.bodies.layout();
        let (moving, bodies, tree) = (&s.moving, &self.bodies, self.broadphase.tree());
        let boxes = Column::new(&mut s.boxes);
        jobs.parallel_for(0..moving.len(), 128, |range, _| {
            // SAFETY: `parallel_for` hands each chunk range to exactly one job.
            let out = unsafe { boxes.rows(range.clone()) };
            let shape_at = |i: usize| {
                let &(row, _, shape) = moving.get(i)?;
                bodies.shapes_of_slot(bodies.awake.id[row as usize].index).get(shape as usize)
            };
            // The shapes up to `AHEAD` entries ahead, by index modulo `AHEAD`.
            const AHEAD: usize = 2 * PREFETCH_SHAPES;
            let mut ahead: [Option<&BodyShape>; AHEAD] = [None; AHEAD];
            for i in range.start..range.start + AHEAD {
                ahead[i % AHEAD] = shape_at(i);
            }
            for (k, i) in range.enumerate() {
                // The shape a few entries ahead: it sits behind the slot's own list,
                // and a hull's vertices behind the hull (in a pile of hulls that are
                // all different, both come from memory), so each is asked for once
                // the one before it is in.
                let far = shape_at(i + AHEAD);
                if let Some(s) = far {
                    crate::math::prefetch(s);
                }
                if let Some(Shape::Hull(h)) = ahead[(i + PREFETCH_SHAPES) % AHEAD].map(|s| &s.shape) {
                    h.prefetch_fields();
                }
                if let Some(Shape::Hull(h)) = ahead[(i + PREFETCH_SHAPES / 2) % AHEAD].map(|s| &s.shape) {
                    h.prefetch_vertices();
                }
                let s = ahead[i % AHEAD].expect("a listed shape");
                ahead[i % AHEAD] = far;
                let (row, proxy, _) = moving[i];
                let a = &bodies.awake;
                let xf = shape_placement(a.transform(row as usize), s);
                let near = NearRecord::of(&s.shape, &xf, 0);
                let tight = near.bounds();
                // The containment test here, in parallel: the serial tree moves below
                // then visit only the boxes that left their fat boxes (a move changes
                // only its own proxy's fat box).
                let finite = tight.is_valid() && tight.min.is_finite() && tight.max.is_finite();
                let escaped = finite && !tree.fat_aabb(proxy).contains(&tight);
                out[k] = Placed { xf, near, motion: a.linear_velocity[row as usize] * dt, escaped };
            }
        });
        // The tree's moves are serial, and the terrain contacts do not read the tree:
        // the two run side by side.
        let (moving, boxes) = (&s.moving, &s.boxes);
        let broadphase = &mut self.broadphase;
        let mut move_proxies = move || {
            for (&(_, proxy, _), b) in moving.iter().zip(boxes).filter(|(_, b)| b.escaped) {
                broadphase.move_proxy(proxy, &b.near.bounds(), b.motion);
            }
            broadphase.update(jobs);
        };
        let Some(terrain) = self.terrain.as_mut() else {
            move_proxies();
            return;
        };
        s.terrain_query.clear();
        for (&(_, proxy, _), b) in moving.iter().zip(boxes) {
            let mut swept = b.near.bounds();
            swept.min += b.motion.min(Vec3::ZERO);
            swept.max += b.motion.max(Vec3::ZERO);
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
    pub(super) fn narrowphase_stage(&mut self, dt: f32, jobs: Jobs) {
        self.joints.apart.index();
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
        // The awake shapes' spheres and boxes, by proxy, in parallel: the
        // broadphase's, where the shape is where the broadphase placed it (the list
        // is made again where bodies changed between the stages, see
        // `World::list_moving`; a hull's exact box costs a pass over its vertices).
        let listed = self.moving_layout == Some(bodies.layout());
        if !listed {
            list_awake_proxies(bodies, &self.proxies, &mut s.near_moving);
        }
        let moving = if listed { &s.moving } else { &s.near_moving };
        let same = (listed || s.near_moving == s.moving) && s.boxes_layout == bodies.layout();
        let placed: &[Placed] = if same { &s.boxes } else { &[] };
        let (records, stamp) = s.near.restart(tree.proxy_capacity());
        jobs.parallel_for(0..moving.len(), 256, |range, _| {
            for k in range {
                let (row, proxy, shape) = moving[k];
                let a = &bodies.awake;
                let s = &bodies.shapes_of_slot(a.id[row as usize].index)[shape as usize];
                let xf = shape_placement(a.transform(row as usize), s);
                let record = match placed.get(k) {
                    Some(p) if p.xf.bits() == xf.bits() => p.near.stamped(stamp),
                    _ => NearRecord::of(&s.shape, &xf, stamp),
                };
                // SAFETY: a proxy belongs to one shape of one body: each record is
                // written by one job.
                unsafe { *records.get(proxy.index()) = record };
            }
        });
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
            apart: &self.joints.apart,
            near: &s.near,
            previous: &self.previous,
            cache: &self.cache,
            axes: &self.axes,
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
        self.counters.sat_full = 0;
        self.counters.sat_cached = 0;
        self.counters.sat_skipped = 0;
        self.axes.clear();
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
            self.counters.sat_full += out.sat_full;
            self.counters.sat_cached += out.sat_cached;
            self.counters.sat_skipped += out.sat_skipped;
            // In key order: the jobs' pairs are consecutive runs of the sorted keys.
            self.axes.extend_from_slice(&out.axes);
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
    /// The joints with an awake body follow the contacts (see `World::list_joints`).
    pub(super) fn prepare_stage(&mut self, jobs: Jobs) {
        self.prepare_contacts(jobs);
        self.list_joints();
        let awake = &self.bodies.awake;
        let dynamic = |row: u32| if row != NONE && awake.inv_mass[row as usize] > 0.0 { row } else { NONE };
        self.colorables.extend(self.joints.refs.iter().map(|j| Colorable {
            a: dynamic(j.row_a),
            b: dynamic(j.row_b),
            bundles: false,
            bouncy: false,
            // Found with the joints' rows (see `Joints::fill`).
            ball: false,
        }));
    }

    fn prepare_contacts(&mut self, jobs: Jobs) {
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
    pub(super) fn color_and_list(&mut self, dt: f32, jobs: Jobs) {
        let n = self.bodies.awake.len();
        let (coloring, colorables) = (&mut self.coloring, &self.colorables);
        let mut kept = false;
        let kept_colors = &mut kept;
        let color = move || {
            if dt > 0.0 {
                *kept_colors = coloring.color(colorables, n);
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
            // The joints' rows, in the colours' order (see `Joints::fill`); kept
            // colours keep their numbering.
            let contacts = self.constraints.len();
            if !kept {
                self.coloring.number_joints(contacts, &mut self.joints.order);
            }
            debug_assert_eq!(self.joints.order.len(), self.joints.refs.len());
            self.joints.fill(&self.bodies, &mut self.coloring.balls[contacts..], jobs);
        }
    }

    /// The solver over the colours the prepare stage made (the soft step over all
    /// substeps, or sequential impulses), then poses and sleep timers.
    pub(super) fn solve_stage(&mut self, dt: f32, jobs: Jobs) {
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
            joint_soft: Softness::new(JOINT_HERTZ_PER_SUBSTEP_RATE / h, JOINT_DAMPING_RATIO, h),
            joint_bias_in_relax: matches!(self.solver, Solver::SequentialImpulses { .. }),
        };
        self.prepare_joints(h, jobs);
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
                center_a - c.found_offset
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
        let joints = &mut self.joints.solves;
        solver::run_plan(ops, &mut self.coloring, &self.constraints, joints, &mut self.states, &ctx, jobs, body_loop);
        self.coloring.unpack(&mut self.constraints, jobs);
        let (coloring, table, states) = (&mut self.coloring, &self.constraints, &mut self.states);
        solver::run_pass(Pass::Restitute, coloring, table, joints, states, &ctx, jobs);
        self.finish_joints(ctx.inv_h, jobs);
        self.finalize(dt, jobs);
    }

    /// Velocities and poses back into the awake set; world inertia; sleep timers;
    /// force accumulators cleared.
    pub(super) fn finalize(&mut self, dt: f32, jobs: Jobs) {
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

    /// This step's contact events into the islands: a touch that began between two
    /// awake dynamic bodies links their islands, one that ended counts a removal.
    pub(super) fn update_islands(&mut self) {
        let bodies = &self.bodies;
        let dynamic =
            |id: BodyId| matches!(bodies.locate(id), Ok((SetKind::Awake, row)) if bodies.awake.inv_mass[row] > 0.0);
        for e in &self.events {
            match e.body_b {
                Some(b) if dynamic(e.body_a) && dynamic(b) => {
                    if e.begin {
                        self.islands.link(e.body_a.index, b.index);
                    } else {
                        self.islands.count_removal(e.body_a.index);
                    }
                }
                _ => {}
            }
        }
    }

    /// Quiet islands go to sleep with their constraints; an island that counted a
    /// removal and has a body ready to sleep is split first into the parts its
    /// contacts and joints still link.
    #[inline(never)] // (out of line, so that profiles show the island stage)
    pub(super) fn sleep_stage(&mut self, dt: f32) {
        self.update_islands();
        self.counters.island_splits = 0;
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
        let islands = &mut self.islands;
        islands.begin_sleep_check();
        // Each row's island (`NONE`: kinematic), looked up once; and whether any
        // kinematic body moves.
        let moving = |i: usize| a.linear_velocity[i] != Vec3::ZERO || a.angular_velocity[i] != Vec3::ZERO;
        let mut kinematic_moves = false;
        let rows = &mut self.scratch.row_island;
        let fill = |rows: &mut Vec<u32>, islands: &Islands, kinematic_moves: &mut bool| {
            rows.clear();
            rows.extend((0..n).map(|i| {
                if a.inv_mass[i] > 0.0 {
                    islands.island_of(a.id[i].index)
                } else {
                    *kinematic_moves |= moving(i);
                    NONE
                }
            }));
        };
        fill(rows, islands, &mut kinematic_moves);
        let touching = || self.constraints.iter().filter(|c| c.count > 0).map(|c| (c.row_a, c.row_b));
        let joints = || self.joints.refs.iter().map(|j| (j.row_a, j.row_b));
        // An island with a body ready to sleep that lost a link since it formed is
        // split first, so its quiet parts may sleep (Box2D's split candidates); in
        // row order of their first such body (`LISTED` marks them meanwhile).
        const LISTED: u32 = NONE - 1;
        let mut split = std::mem::take(&mut self.scratch.split);
        split.clear();
        for (i, &k) in rows.iter().enumerate() {
            if k != NONE
                && a.sleep_time[i] >= time
                && islands.island_group[k as usize] == NONE
                && islands.needs_split(k)
            {
                islands.island_group[k as usize] = LISTED;
                split.push(k);
            }
        }
        if !split.is_empty() {
            islands.begin_split(&split);
            let island = |row: u32| if row == NONE { NONE } else { rows[row as usize] };
            for (row_a, row_b) in touching().chain(joints()) {
                let k = island(row_a);
                if k != NONE && k == island(row_b) && islands.island_group[k as usize] == LISTED {
                    islands.split_union(a.id[row_a as usize].index, a.id[row_b as usize].index);
                }
            }
            for &k in &split {
                islands.finish_split(k);
            }
            fill(rows, islands, &mut kinematic_moves);
        }
        self.counters.island_splits = split.len() as u32;
        self.scratch.split = split;
        let island = |row: u32| if row == NONE { NONE } else { rows[row as usize] };
        // An island sleeps when all its bodies are ready and none touches a moving
        // kinematic body.
        for (i, &k) in rows.iter().enumerate() {
            if k != NONE && a.sleep_time[i] < time {
                islands.quiet[k as usize] = false;
            }
        }
        if kinematic_moves {
            let moving_kinematic =
                |row: u32| row != NONE && a.flags[row as usize] & flags::KINEMATIC != 0 && moving(row as usize);
            for (row_a, row_b) in touching().chain(joints()) {
                for (me, other) in [(row_a, row_b), (row_b, row_a)] {
                    let k = island(me);
                    if k != NONE && moving_kinematic(other) {
                        islands.quiet[k as usize] = false;
                    }
                }
            }
        }
        // Groups in row order of their first body.
        let mut sleepers = std::mem::take(&mut self.scratch.sleepers);
        sleepers.clear();
        for (i, &k) in rows.iter().enumerate() {
            if k == NONE || !islands.quiet[k as usize] {
                continue;
            }
            if islands.island_group[k as usize] == NONE {
                islands.island_group[k as usize] = islands.new_group();
            }
            sleepers.push((islands.island_group[k as usize], a.id[i]));
        }
        if sleepers.is_empty() {
            self.scratch.sleepers = sleepers;
            return;
        }
        // Constraints of sleeping islands move into their groups (not those with a
        // kinematic body: that pair is recomputed while the kinematic body is awake).
        let store = &mut self.store;
        self.cache_ready = false;
        self.constraints.retain(
            // SAFETY: a constraint dropped from the table is read nowhere else.
            |c| unsafe { store.release(c) },
            |c| {
                let k = match island(c.row_a) {
                    NONE => island(c.row_b),
                    k => k,
                };
                let group = if k == NONE { NONE } else { islands.island_group[k as usize] };
                let kinematic = |r: u32| r != NONE && a.flags[r as usize] & flags::KINEMATIC != 0;
                if group != NONE && !kinematic(c.row_a) && !kinematic(c.row_b) {
                    islands.add_constraint(group, *c);
                }
                group == NONE
            },
        );
        for &(_, id) in &sleepers {
            let k = self.islands.island_of(id.index);
            if k != NONE {
                self.islands.free_island(k);
            }
        }
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
    pub(super) fn remember_constraints(&mut self) {
        std::mem::swap(&mut self.previous, &mut self.constraints);
        // It held the step before's, whose buffers the next narrowphase rewrites.
        self.constraints.clear();
        if !std::mem::take(&mut self.cache_ready) {
            list_cache(&self.previous, &mut self.cache, &mut self.scratch.cache_merge);
        }
    }
}

/// The warm-start cache of `table`: `(key, sub, index)` of each constraint, sorted.
pub(super) fn list_cache(table: &ConstraintTable, cache: &mut Vec<(u64, u64, u32)>, merge: &mut Vec<(u64, u64, u32)>) {
    cache.clear();
    cache.extend(table.iter().enumerate().map(|(i, c)| (c.key, c.sub, i as u32)));
    runs::sort_runs(cache, merge);
}

/// What the contact lists read and write (see [`ContactLists::make`]).
pub(super) struct ContactLists<'a> {
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
    pub(super) fn make(self) {
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
pub(super) fn static_center(bodies: &Bodies, slot: u32, c: &Constraint) -> Vec3 {
    match (slot != NONE).then(|| bodies.place_of_slot(slot)).flatten() {
        Some((set, row)) => bodies.set(set).position[row],
        None => c.points[0].point,
    }
}

/// Gravity, forces and damping into the solver's velocities of the awake rows `rows`
/// (dynamic bodies; `states` holds those rows' states), which saturate at
/// [`MAX_LINEAR_SPEED`] and [`MAX_ROTATION`] per substep.
pub(super) fn integrate_velocities(
    bodies: &Bodies,
    rows: Range<usize>,
    states: &mut [BodyState],
    gravity: Vec3,
    h: f32,
) {
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

/// Velocities into the solver's delta positions and rotations.
pub(super) fn integrate_positions(states: &mut [BodyState], h: f32) {
    for st in states {
        st.dp += st.v * h;
        let spin = st.w * (0.5 * h);
        let dq = Quat::from_xyzw(spin.x, spin.y, spin.z, 0.0) * st.dq;
        st.dq = (st.dq + dq).normalize();
    }
}

/// What the broadphase stage found of an awake shape: where it placed it, its
/// record for the narrowphase's first test (its tight box among it), its motion this
/// step and whether its box left the proxy's fat box (a finite box only).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Placed {
    xf: Isometry,
    near: NearRecord,
    motion: Vec3,
    escaped: bool,
}

/// A body shape's placement in the world for the body at `body`.
fn shape_placement(body: Isometry, s: &BodyShape) -> Isometry {
    // (Most shapes sit at their body's origin: no product then.)
    if s.def.pose == Isometry::IDENTITY {
        body
    } else {
        body.mul(&s.def.pose)
    }
}

impl World {
    /// The awake shapes for the broadphase (`Scratch::moving`), listed again only
    /// where bodies changed sets, rows or shapes since the last list: reading each
    /// body's proxies took a quarter of a millisecond a list for 10,000 bodies,
    /// twice a step (the narrowphase checks the list again).
    fn list_moving(&mut self) {
        let layout = self.bodies.layout();
        if self.moving_layout != Some(layout) {
            list_awake_proxies(&self.bodies, &self.proxies, &mut self.scratch.moving);
            self.moving_layout = Some(layout);
        }
    }
}

/// Every awake body's proxies as `(awake row, proxy, shape index)`, in row order.
fn list_awake_proxies(bodies: &Bodies, proxies: &[Vec<ProxyId>], out: &mut Vec<(u32, ProxyId, u32)>) {
    let awake = &bodies.awake;
    let mut n = 0;
    for row in 0..awake.len() {
        let slot = awake.id[row].index;
        for (k, &proxy) in proxies[slot as usize].iter().enumerate() {
            // The list is read on every worker, and is mostly the last step's.
            put_changed(out, n, (row as u32, proxy, k as u32));
            n += 1;
        }
    }
    out.truncate(n);
}

/// Sets `list[n]` to `value` (pushes it where `n` is the length), writing only where
/// it differs: a serial pass rewriting a list that every worker read in the last
/// step would first take each line back from their caches (see docs/physics.md,
/// "Serial passes write only what changed").
pub(super) fn put_changed<T: PartialEq>(list: &mut Vec<T>, n: usize, value: T) {
    match list.get_mut(n) {
        Some(old) if *old == value => {}
        Some(old) => *old = value,
        None => list.push(value),
    }
}
