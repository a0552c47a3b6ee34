//! Executing a compiled graph: one `for_each` per level, per-pass timing, failure
//! handling, arena reset.
//!
//! A pass that returns an error or panics does not stop the passes of its own level
//! (they may be running already); the frame stops after that level, arenas are reset,
//! and `execute` reports the failure of the first failing pass in declaration order
//! (so the report does not depend on timing). A panic is re-raised on the caller.
//! The next frame starts clean.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::Instant;

use super::compile::{CompiledGraph, SyncEdge};
use super::{Access, GraphError, Mode, PassDecl, PassFn, PassId, Queue, Res, ResMut, ResRef};
use crate::jobs::{Arenas, Executor, Jobs, Worker};

/// Frame number and time step, as seen by passes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameInfo {
    /// 0 for the first executed frame.
    pub index: u64,
    /// Seconds, as passed to `execute`.
    pub delta_time: f32,
}

/// Wall-clock timing of one pass in one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassTiming {
    pub pass: PassId,
    /// Level the pass ran in (passes of one level may overlap).
    pub level: u32,
    /// Start, in nanoseconds since the frame started.
    pub start_ns: u64,
    /// Duration of the pass body in nanoseconds (including its nested jobs).
    pub duration_ns: u64,
    /// Worker that ran the body; `u32::MAX` if the pass did not run this frame.
    pub worker: u32,
}

impl PassTiming {
    pub const NOT_RUN: u32 = u32::MAX;
}

/// The last frame's timings (like Box2D's `b2Profile`): one entry per pass in
/// declaration order plus the frame total.
#[derive(Clone, Debug)]
pub struct Profile {
    pub frame_index: u64,
    /// Wall time of the whole `execute` call, in nanoseconds.
    pub total_ns: u64,
    pub passes: Vec<PassTiming>,
}

impl Profile {
    pub(crate) fn new(passes: &[PassDecl]) -> Profile {
        let passes = (0..passes.len())
            .map(|i| PassTiming {
                pass: PassId(i as u32),
                level: 0,
                start_ns: 0,
                duration_ns: 0,
                worker: PassTiming::NOT_RUN,
            })
            .collect();
        Profile { frame_index: 0, total_ns: 0, passes }
    }
}

enum Outcome {
    Ok,
    Error(GraphError),
    Panic(Box<dyn Any + Send>),
}

struct PassState {
    body: PassFn,
    timing: PassTiming,
    outcome: Outcome,
}

/// A compiled pass: its declaration plus mutable state behind an uncontended lock
/// (exactly one job runs a pass per frame).
pub(crate) struct PassSlot {
    pub(crate) name: String,
    pub(crate) queue: Queue,
    pub(crate) accesses: Vec<Access>,
    after: Vec<String>,
    state: Mutex<PassState>,
}

impl PassSlot {
    pub(crate) fn new(decl: PassDecl) -> PassSlot {
        let PassDecl { name, queue, accesses, after, body } = decl;
        let timing = PassTiming { pass: PassId(0), level: 0, start_ns: 0, duration_ns: 0, worker: PassTiming::NOT_RUN };
        PassSlot { name, queue, accesses, after, state: Mutex::new(PassState { body, timing, outcome: Outcome::Ok }) }
    }

    pub(crate) fn into_decl(self) -> PassDecl {
        let state = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        PassDecl { name: self.name, queue: self.queue, accesses: self.accesses, after: self.after, body: state.body }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PassState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What a pass body sees: jobs, scratch memory, its resources, the frame.
pub struct PassContext<'a> {
    graph: &'a CompiledGraph,
    pass: PassId,
    jobs: Jobs<'a>,
    arenas: &'a Arenas,
    worker: &'a Worker,
    frame: FrameInfo,
}

impl<'a> PassContext<'a> {
    /// The executor, for `parallel_for` and friends inside the pass.
    pub fn jobs(&self) -> Jobs<'a> {
        self.jobs
    }

    /// Per-worker and frame arenas, reset when the frame ends.
    pub fn arenas(&self) -> &'a Arenas {
        self.arenas
    }

    /// The worker running the pass body itself.
    pub fn worker(&self) -> &Worker {
        self.worker
    }

    pub fn frame(&self) -> FrameInfo {
        self.frame
    }

    pub fn pass(&self) -> PassId {
        self.pass
    }

    pub fn name(&self) -> &'a str {
        &self.graph.passes[self.pass.index()].name
    }

    /// The hazards this pass must wait on (for GPU passes: its barriers).
    pub fn sync_before(&self) -> &'a [SyncEdge] {
        self.graph.sync_before(self.pass)
    }

    /// Borrows a resource the pass declared (read or write) for reading.
    pub fn read<T: 'static>(&self, res: &Res<T>) -> Result<ResRef<'a, T>, GraphError> {
        let cell = self.checked(res, Mode::Read)?;
        cell.try_read().ok_or_else(|| self.conflict(res))
    }

    /// Borrows a resource the pass declared for writing.
    pub fn write<T: 'static>(&self, res: &Res<T>) -> Result<ResMut<'a, T>, GraphError> {
        let cell = self.checked(res, Mode::Write)?;
        cell.try_write().ok_or_else(|| self.conflict(res))
    }

    fn checked<T>(&self, res: &Res<T>, wanted: Mode) -> Result<&'a super::resource::ResourceCell, GraphError> {
        let graph = self.graph;
        if res.id.graph != graph.graph_id || res.id.index() >= graph.resources.len() {
            return Err(GraphError::UnknownResource { pass: self.name().to_owned(), resource: res.id.index() });
        }
        let declared = graph.passes[self.pass.index()]
            .accesses
            .iter()
            .any(|a| a.resource == res.id && (wanted == Mode::Read || a.mode == Mode::Write));
        if !declared {
            let resource = graph.resources[res.id.index()].name.clone();
            return Err(GraphError::Undeclared { pass: self.name().to_owned(), resource, wanted });
        }
        Ok(&graph.resources[res.id.index()].cell)
    }

    fn conflict<T>(&self, res: &Res<T>) -> GraphError {
        let resource = self.graph.resources[res.id.index()].name.clone();
        GraphError::BorrowConflict { pass: self.name().to_owned(), resource }
    }
}

impl CompiledGraph {
    /// Runs one frame: every level in order, the passes of a level concurrently.
    /// `delta_time` must be finite and not negative.
    pub fn execute(&mut self, executor: &dyn Executor, delta_time: f32) -> Result<(), GraphError> {
        if !delta_time.is_finite() || delta_time < 0.0 {
            return Err(GraphError::InvalidArgument(format!("delta_time must be finite and >= 0, got {delta_time}")));
        }
        let workers = executor.worker_count();
        if self.arenas.as_ref().is_none_or(|a| a.worker_count() != workers) {
            self.arenas = Some(Arenas::new(workers));
        }
        let frame = FrameInfo { index: self.frame_index, delta_time };
        let frame_start = Instant::now();
        for slot in &self.passes {
            let mut state = slot.state();
            state.timing.worker = PassTiming::NOT_RUN;
            state.timing.duration_ns = 0;
            state.timing.start_ns = 0;
            state.outcome = Outcome::Ok;
        }

        let this = &*self;
        let arenas = this.arenas.as_ref().expect("created above");
        let jobs = Jobs::new(executor);
        for (level_index, level) in this.levels.iter().enumerate() {
            executor.for_each(level.len(), &|range, worker| {
                for &pass in &level[range] {
                    this.run_pass(PassId(pass), level_index as u32, worker, jobs, arenas, frame, frame_start);
                }
            });
            let failed = level.iter().any(|&p| !matches!(this.passes[p as usize].state().outcome, Outcome::Ok));
            if failed {
                break;
            }
        }
        let total_ns = frame_start.elapsed().as_nanos() as u64;
        crate::profiling::frame_mark();

        self.arenas.as_mut().expect("created above").reset();
        self.frame_index += 1;
        self.profile.frame_index = frame.index;
        self.profile.total_ns = total_ns;
        let mut failure = None;
        for (slot, timing) in self.passes.iter().zip(self.profile.passes.iter_mut()) {
            let mut state = slot.state();
            *timing = state.timing;
            if failure.is_none() {
                match std::mem::replace(&mut state.outcome, Outcome::Ok) {
                    Outcome::Ok => {}
                    outcome => failure = Some(outcome),
                }
            }
        }
        match failure {
            None => Ok(()),
            Some(Outcome::Error(error)) => Err(error),
            Some(Outcome::Panic(payload)) => panic::resume_unwind(payload),
            Some(Outcome::Ok) => unreachable!(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run_pass(
        &self,
        pass: PassId,
        level: u32,
        worker: &Worker,
        jobs: Jobs<'_>,
        arenas: &Arenas,
        frame: FrameInfo,
        frame_start: Instant,
    ) {
        let slot = &self.passes[pass.index()];
        let mut state = slot.state();
        let ctx = PassContext { graph: self, pass, jobs, arenas, worker, frame };
        let (start, result, end) = {
            let _zone = crate::profiling::pass_zone(self.pass_name(pass));
            let start = Instant::now();
            let result = panic::catch_unwind(AssertUnwindSafe(|| (state.body)(&ctx)));
            (start, result, Instant::now())
        };
        state.timing = PassTiming {
            pass,
            level,
            start_ns: (start - frame_start).as_nanos() as u64,
            duration_ns: (end - start).as_nanos() as u64,
            worker: worker.index() as u32,
        };
        state.outcome = match result {
            Ok(Ok(())) => Outcome::Ok,
            Ok(Err(error)) => Outcome::Error(error),
            Err(payload) => Outcome::Panic(payload),
        };
    }

    /// Timings of the last executed frame.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Number of frames executed so far.
    pub fn frame_count(&self) -> u64 {
        self.frame_index
    }

    /// A resource's value between frames.
    pub fn resource<T: 'static>(&self, res: &Res<T>) -> Option<&T> {
        if res.id.graph != self.graph_id {
            return None;
        }
        let cell = &self.resources.get(res.id.index())?.cell;
        // Between frames nobody holds a borrow: `execute` needs `&mut self`.
        let guard = cell.try_read::<T>()?;
        let value: *const T = &*guard;
        drop(guard);
        // SAFETY: with `&self` borrowed, `execute` (which needs `&mut self`) cannot
        // run, so no pass can take a mutable borrow while this reference lives.
        Some(unsafe { &*value })
    }

    /// Mutable access to a resource's value between frames.
    pub fn resource_mut<T: 'static>(&mut self, res: &Res<T>) -> Option<&mut T> {
        if res.id.graph != self.graph_id {
            return None;
        }
        Some(self.resources.get_mut(res.id.index())?.cell.get_mut())
    }
}
