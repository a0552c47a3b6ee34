//! The runtime object: an executor (Kiln's pool or the host's job system) plus the
//! frame graph it runs. This is what the C ABI's `KilnRuntimeId` wraps.
//!
//! The graph can be edited between frames. Every edit is checked at once and rolled
//! back if it makes the graph invalid (duplicate name, unknown handle or pass, cycle),
//! so a bad edit returns an error and leaves the runtime exactly as it was. The graph
//! is compiled lazily by the next `run_frame`.

use crate::frame::{CompiledGraph, FrameGraph, GraphError, Profile};
use crate::jobs::{Executor, ThreadPool};

/// What runs the runtime's parallel work.
pub enum Workers {
    /// Kiln's own pool with this many background threads (0: all inline).
    Threads(usize),
    /// Kiln's pool sized to the machine.
    Default,
    /// The host engine's job system (see [`crate::jobs::HostExecutor`]).
    Host(Box<dyn Executor + Send + Sync>),
}

enum Graph {
    Building(FrameGraph),
    Compiled(CompiledGraph),
}

/// An executor plus a frame graph.
pub struct Runtime {
    executor: Box<dyn Executor + Send + Sync>,
    graph: Option<Graph>,
}

impl Runtime {
    pub fn new(workers: Workers) -> Runtime {
        let executor: Box<dyn Executor + Send + Sync> = match workers {
            Workers::Threads(n) => Box::new(ThreadPool::new(n)),
            Workers::Default => Box::new(ThreadPool::with_default_threads()),
            Workers::Host(host) => host,
        };
        Runtime { executor, graph: Some(Graph::Building(FrameGraph::new())) }
    }

    pub fn executor(&self) -> &dyn Executor {
        &*self.executor
    }

    pub fn worker_count(&self) -> usize {
        self.executor.worker_count()
    }

    fn builder(&mut self) -> &mut FrameGraph {
        let graph = match self.graph.take().expect("graph present between calls") {
            Graph::Compiled(compiled) => compiled.into_builder(),
            Graph::Building(builder) => builder,
        };
        match self.graph.insert(Graph::Building(graph)) {
            Graph::Building(builder) => builder,
            Graph::Compiled(_) => unreachable!(),
        }
    }

    /// Applies `edit` to the graph, then checks it; on error the graph is restored
    /// (added passes and resources removed) and the error returned.
    pub fn edit<R>(&mut self, edit: impl FnOnce(&mut FrameGraph) -> R) -> Result<R, GraphError> {
        let graph = self.builder();
        let (passes, resources) = (graph.passes.len(), graph.resources.len());
        let result = edit(graph);
        if let Err(error) = graph.check() {
            graph.passes.truncate(passes);
            graph.resources.truncate(resources);
            return Err(error);
        }
        Ok(result)
    }

    /// Compiles the graph if it changed, then executes one frame.
    pub fn run_frame(&mut self, delta_time: f32) -> Result<(), GraphError> {
        self.compiled()?;
        let Some(Graph::Compiled(compiled)) = self.graph.as_mut() else { unreachable!("compiled above") };
        compiled.execute(&*self.executor, delta_time)
    }

    /// The compiled graph (compiling it if it changed).
    pub fn compiled(&mut self) -> Result<&mut CompiledGraph, GraphError> {
        if let Some(Graph::Building(builder)) = &self.graph {
            builder.check()?;
            let Some(Graph::Building(builder)) = self.graph.take() else { unreachable!() };
            self.graph = Some(Graph::Compiled(builder.compile().expect("checked above")));
        }
        match self.graph.as_mut() {
            Some(Graph::Compiled(compiled)) => Ok(compiled),
            _ => unreachable!("compiled above"),
        }
    }

    /// The last frame's profile, if the graph has not changed since.
    pub fn profile(&self) -> Option<&Profile> {
        match &self.graph {
            Some(Graph::Compiled(compiled)) => Some(compiled.profile()),
            _ => None,
        }
    }

    /// Number of passes in the graph.
    pub fn pass_count(&self) -> usize {
        match self.graph.as_ref().expect("graph present between calls") {
            Graph::Building(builder) => builder.pass_count(),
            Graph::Compiled(compiled) => compiled.pass_count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Queue;

    #[test]
    fn bad_edits_roll_back_and_good_ones_recompile() {
        let mut rt = Runtime::new(Workers::Threads(1));
        let r = rt.edit(|g| g.resource("r", 0u32)).unwrap();
        rt.edit(|g| g.pass("a").writes(r).run(|_| Ok(()))).unwrap();
        rt.run_frame(0.01).unwrap();
        assert_eq!(rt.profile().unwrap().passes.len(), 1);

        let error = rt.edit(|g| g.pass("a").reads(r).run(|_| Ok(()))).unwrap_err();
        assert_eq!(error, GraphError::DuplicatePass("a".into()));
        let error = rt.edit(|g| g.pass("b").after("missing").run(|_| Ok(()))).unwrap_err();
        assert!(matches!(error, GraphError::UnknownPass { .. }));
        assert_eq!(rt.pass_count(), 1, "failed edits left nothing behind");

        rt.edit(|g| g.pass("b").queue(Queue::Gpu).reads(r).run(|_| Ok(()))).unwrap();
        rt.run_frame(0.01).unwrap();
        assert_eq!(rt.profile().unwrap().passes.len(), 2);
        let compiled = rt.compiled().unwrap();
        assert_eq!(*compiled.resource(&r).unwrap(), 0, "resource values survive recompiles");
        assert_eq!(compiled.frame_count(), 1, "frame counter restarts with the new plan");
    }
}
