//! The frame graph: passes with declared resource access, compiled once into a DAG
//! and executed every frame on an [`Executor`](crate::jobs::Executor).
//!
//! ```text
//!  FrameGraph (build)            compile()                 CompiledGraph (run)
//!  resources: Res<T> + data  ->  edges from declared   ->  execute(executor, dt):
//!  passes: name, queue,          access, `after` edges      level 0: [a]        (one job)
//!          reads/writes,         levels (Kahn), cycle       level 1: [b, c, d]  (concurrent)
//!          after, body           check, GPU sync list       level 2: [e]        ...
//!                                                           profile: per-pass wall time
//! ```
//!
//! * **Order comes from declaration order.** For each resource, a read depends on the
//!   last earlier write; a write depends on the last earlier write and every read
//!   since. Explicit `after("name")` edges add ordering without data and may point at
//!   passes declared later; that is how a cycle can arise, and compile reports it with
//!   the names of the passes along it. GPU passes are also chained in declaration
//!   order, because they record into one command buffer.
//! * **Levels.** A pass's level is one more than its deepest predecessor. Each level
//!   runs as one `for_each` over its passes, so independent passes run concurrently
//!   and the same code drives Kiln's pool or a host job system. The cost: a pass
//!   waits for its whole previous level, not only its own predecessors.
//! * **Resources** are owned by the graph and borrowed through the pass context; a
//!   borrow a pass did not declare is an error naming the pass and the resource.
//! * **GPU synchronisation as data.** For every access of a GPU pass (and every access
//!   that follows or precedes one) the compiled graph lists the hazard — resource,
//!   previous access, next access, RAW/WAR/WAW, and whether the previous access was in
//!   the previous frame — so the Vulkan layer turns it into barriers without knowing
//!   the graph. No pass inserts its own barriers.
//! * **No allocation per frame.** Compilation allocates; execution reuses the profile,
//!   per-pass slots and arenas, which are reset at frame end.

mod compile;
mod error;
mod execute;
mod resource;

use std::sync::atomic::{AtomicU32, Ordering};

pub use compile::{AccessPoint, CompiledGraph, Hazard, SyncEdge};
pub use error::GraphError;
pub use execute::{FrameInfo, PassContext, PassTiming, Profile};
pub use resource::{Res, ResMut, ResRef, ResourceId};

use resource::ResourceCell;

/// Which queue a pass runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Queue {
    /// A CPU pass: its body runs as a job; it may call `parallel_for`.
    Cpu,
    /// A GPU pass: its body records commands; the graph computes its barriers.
    Gpu,
}

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Read,
    Write,
}

/// How a pass uses a resource; GPU passes use it to choose pipeline stages and access
/// masks. CPU passes always use [`Usage::Host`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Usage {
    /// Read or written by the CPU.
    Host,
    /// A storage buffer or image in a compute shader.
    Storage,
    /// A uniform buffer.
    Uniform,
    /// Indirect dispatch arguments.
    Indirect,
    /// Source or destination of a copy.
    Transfer,
}

/// One declared access of a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub resource: ResourceId,
    pub mode: Mode,
    pub usage: Usage,
}

/// A pass body: runs once per frame with the pass's context.
pub type PassFn = Box<dyn FnMut(&PassContext<'_>) -> Result<(), GraphError> + Send>;

pub(crate) struct PassDecl {
    pub(crate) name: String,
    pub(crate) queue: Queue,
    pub(crate) accesses: Vec<Access>,
    pub(crate) after: Vec<String>,
    pub(crate) body: PassFn,
}

pub(crate) struct ResourceDecl {
    pub(crate) name: String,
    pub(crate) cell: ResourceCell,
}

/// Identifies a pass in its graph (declaration order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PassId(pub(crate) u32);

impl PassId {
    pub fn index(&self) -> usize {
        self.0 as usize
    }
}

/// A frame graph under construction.
pub struct FrameGraph {
    pub(crate) id: u32,
    pub(crate) resources: Vec<ResourceDecl>,
    pub(crate) passes: Vec<PassDecl>,
}

static NEXT_GRAPH_ID: AtomicU32 = AtomicU32::new(1);

impl Default for FrameGraph {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameGraph {
    pub fn new() -> FrameGraph {
        FrameGraph { id: NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed), resources: Vec::new(), passes: Vec::new() }
    }

    /// Adds a resource holding `value`; it lives as long as the graph and keeps its
    /// value from frame to frame.
    pub fn resource<T: Send + Sync + 'static>(&mut self, name: &str, value: T) -> Res<T> {
        let id = ResourceId { graph: self.id, index: self.resources.len() as u32 };
        self.resources.push(ResourceDecl { name: name.to_owned(), cell: ResourceCell::new(Box::new(value)) });
        Res::new(id)
    }

    /// Starts declaring a pass; finish with [`PassBuilder::run`].
    pub fn pass(&mut self, name: &str) -> PassBuilder<'_> {
        PassBuilder {
            graph: self,
            decl: Some(PassDecl {
                name: name.to_owned(),
                queue: Queue::Cpu,
                accesses: Vec::new(),
                after: Vec::new(),
                body: Box::new(|_| Ok(())),
            }),
        }
    }

    pub fn pass_count(&self) -> usize {
        self.passes.len()
    }

    pub fn resource_count(&self) -> usize {
        self.resources.len()
    }

    pub(crate) fn id(&self) -> u32 {
        self.id
    }
}

/// Declares one pass: queue, accesses, ordering, body.
pub struct PassBuilder<'g> {
    graph: &'g mut FrameGraph,
    decl: Option<PassDecl>,
}

impl PassBuilder<'_> {
    fn decl(&mut self) -> &mut PassDecl {
        self.decl.as_mut().expect("pass builder used after run()")
    }

    /// Runs on `queue` (default: CPU).
    pub fn queue(mut self, queue: Queue) -> Self {
        self.decl().queue = queue;
        self
    }

    /// Declares a read (storage usage on the GPU).
    pub fn reads(self, resource: impl Into<ResourceId>) -> Self {
        self.access(resource, Mode::Read, Usage::Storage)
    }

    /// Declares a write (storage usage on the GPU). A write also permits reading.
    pub fn writes(self, resource: impl Into<ResourceId>) -> Self {
        self.access(resource, Mode::Write, Usage::Storage)
    }

    /// Declares an access with an explicit GPU usage.
    pub fn access(mut self, resource: impl Into<ResourceId>, mode: Mode, usage: Usage) -> Self {
        let resource = resource.into();
        let decl = self.decl();
        match decl.accesses.iter_mut().find(|a| a.resource == resource) {
            Some(existing) if mode == Mode::Write => *existing = Access { resource, mode, usage },
            Some(_) => {}
            None => decl.accesses.push(Access { resource, mode, usage }),
        }
        self
    }

    /// Runs after the pass named `pass`, even without a shared resource.
    pub fn after(mut self, pass: &str) -> Self {
        self.decl().after.push(pass.to_owned());
        self
    }

    /// Sets the body and adds the pass to the graph.
    pub fn run(mut self, body: impl FnMut(&PassContext<'_>) -> Result<(), GraphError> + Send + 'static) -> PassId {
        let mut decl = self.decl.take().expect("pass builder used after run()");
        if decl.queue == Queue::Cpu {
            for access in &mut decl.accesses {
                access.usage = Usage::Host;
            }
        }
        decl.body = Box::new(body);
        let id = PassId(self.graph.passes.len() as u32);
        self.graph.passes.push(decl);
        id
    }
}

#[cfg(test)]
mod tests;
