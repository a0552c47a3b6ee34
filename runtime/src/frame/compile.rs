//! Compiling a frame graph: dependency edges, cycle check, levels, GPU sync list.

use super::execute::{PassSlot, Profile};
use super::{Access, FrameGraph, GraphError, Mode, PassDecl, PassId, Queue, ResourceDecl, ResourceId, Usage};
use crate::jobs::Arenas;

/// One side of a hazard: which pass accessed the resource, how, on which queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessPoint {
    pub pass: PassId,
    pub queue: Queue,
    pub mode: Mode,
    pub usage: Usage,
}

/// Read-after-write, write-after-read or write-after-write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hazard {
    ReadAfterWrite,
    WriteAfterRead,
    WriteAfterWrite,
}

/// The synchronisation one access needs: what must complete (`before`) and be
/// visible before `after` may run. Emitted when either side is a GPU pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncEdge {
    pub resource: ResourceId,
    pub before: AccessPoint,
    pub after: AccessPoint,
    pub hazard: Hazard,
    /// `before` happened in the previous frame (the resource persists across frames).
    pub across_frames: bool,
}

/// A graph ready to execute every frame. See the module docs.
pub struct CompiledGraph {
    pub(crate) graph_id: u32,
    pub(crate) resources: Vec<ResourceDecl>,
    pub(crate) passes: Vec<PassSlot>,
    /// Pass indices grouped by level, each level in declaration order.
    pub(crate) levels: Vec<Vec<u32>>,
    /// Direct predecessors of each pass (deduplicated, sorted).
    pub(crate) predecessors: Vec<Vec<u32>>,
    pub(crate) sync: Vec<SyncEdge>,
    /// For each pass, the range of `sync` whose `after` is that pass.
    pub(crate) sync_ranges: Vec<std::ops::Range<usize>>,
    pub(crate) arenas: Option<Arenas>,
    pub(crate) profile: Profile,
    pub(crate) frame_index: u64,
}

impl FrameGraph {
    /// Checks the graph without changing it: names, handles, cycles.
    pub fn check(&self) -> Result<(), GraphError> {
        validate(self.id(), &self.resources, &self.passes)?;
        let predecessors = edges(&self.resources, &self.passes)?;
        levels(&self.passes, &predecessors).map(|_| ())
    }

    /// Checks the graph and builds its execution plan.
    pub fn compile(self) -> Result<CompiledGraph, GraphError> {
        let graph_id = self.id();
        let FrameGraph { resources, passes, .. } = self;
        validate(graph_id, &resources, &passes)?;
        let predecessors = edges(&resources, &passes)?;
        let levels = levels(&passes, &predecessors)?;
        let order: Vec<u32> = levels.iter().flatten().copied().collect();
        let (sync, sync_ranges) = sync_edges(graph_id, &resources, &passes, &order);
        let profile = Profile::new(&passes);
        let passes = passes.into_iter().map(PassSlot::new).collect();
        Ok(CompiledGraph {
            graph_id,
            resources,
            passes,
            levels,
            predecessors,
            sync,
            sync_ranges,
            arenas: None,
            profile,
            frame_index: 0,
        })
    }
}

impl CompiledGraph {
    /// Turns the graph back into a builder (same handles, same resource values) so
    /// passes and resources can be added; compile it again afterwards.
    pub fn into_builder(self) -> FrameGraph {
        FrameGraph {
            id: self.graph_id,
            resources: self.resources,
            passes: self.passes.into_iter().map(PassSlot::into_decl).collect(),
        }
    }
}

fn validate(graph_id: u32, resources: &[ResourceDecl], passes: &[PassDecl]) -> Result<(), GraphError> {
    for (i, resource) in resources.iter().enumerate() {
        if resources[..i].iter().any(|r| r.name == resource.name) {
            return Err(GraphError::DuplicateResource(resource.name.clone()));
        }
    }
    for (i, pass) in passes.iter().enumerate() {
        if passes[..i].iter().any(|p| p.name == pass.name) {
            return Err(GraphError::DuplicatePass(pass.name.clone()));
        }
        for access in &pass.accesses {
            if access.resource.graph != graph_id || access.resource.index() >= resources.len() {
                return Err(GraphError::UnknownResource { pass: pass.name.clone(), resource: access.resource.index() });
            }
        }
        for after in &pass.after {
            if !passes.iter().any(|p| &p.name == after) {
                return Err(GraphError::UnknownPass { pass: pass.name.clone(), after: after.clone() });
            }
        }
    }
    Ok(())
}

/// Predecessor lists from data hazards (declaration order), GPU order and `after`.
fn edges(resources: &[ResourceDecl], passes: &[PassDecl]) -> Result<Vec<Vec<u32>>, GraphError> {
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); passes.len()];
    // Per resource: the last writer and the readers since it.
    let mut last_write: Vec<Option<u32>> = vec![None; resources.len()];
    let mut reads_since: Vec<Vec<u32>> = vec![Vec::new(); resources.len()];
    let mut last_gpu: Option<u32> = None;
    for (index, pass) in passes.iter().enumerate() {
        let index = index as u32;
        for access in &pass.accesses {
            let r = access.resource.index();
            match access.mode {
                Mode::Read => {
                    preds[index as usize].extend(last_write[r]);
                    reads_since[r].push(index);
                }
                Mode::Write => {
                    preds[index as usize].extend(last_write[r]);
                    preds[index as usize].extend(reads_since[r].drain(..).filter(|&p| p != index));
                    last_write[r] = Some(index);
                }
            }
        }
        if pass.queue == Queue::Gpu {
            preds[index as usize].extend(last_gpu);
            last_gpu = Some(index);
        }
        for after in &pass.after {
            let target = passes.iter().position(|p| &p.name == after).expect("validated") as u32;
            if target == index {
                return Err(GraphError::Cycle(vec![pass.name.clone(), pass.name.clone()]));
            }
            preds[index as usize].push(target);
        }
    }
    for list in &mut preds {
        list.sort_unstable();
        list.dedup();
    }
    Ok(preds)
}

/// Kahn's algorithm; on failure, finds one cycle among the leftover passes.
fn levels(passes: &[PassDecl], preds: &[Vec<u32>]) -> Result<Vec<Vec<u32>>, GraphError> {
    let n = passes.len();
    let mut level: Vec<Option<usize>> = vec![None; n];
    let mut placed = 0;
    loop {
        let mut progress = false;
        for p in 0..n {
            if level[p].is_some() {
                continue;
            }
            let deepest = preds[p].iter().map(|&q| level[q as usize]).try_fold(0usize, |acc, l| Some(acc.max(l? + 1)));
            if let Some(l) = deepest {
                level[p] = Some(l);
                placed += 1;
                progress = true;
            }
        }
        if placed == n {
            break;
        }
        if !progress {
            return Err(GraphError::Cycle(find_cycle(passes, preds, &level)));
        }
    }
    let depth = level.iter().map(|l| l.expect("all placed") + 1).max().unwrap_or(0);
    let mut levels = vec![Vec::new(); depth];
    for (p, l) in level.iter().enumerate() {
        levels[l.expect("all placed")].push(p as u32);
    }
    Ok(levels)
}

/// Walks predecessor links among unplaced passes until one repeats.
fn find_cycle(passes: &[PassDecl], preds: &[Vec<u32>], level: &[Option<usize>]) -> Vec<String> {
    let start = level.iter().position(|l| l.is_none()).expect("a pass is unplaced");
    let mut path = vec![start];
    loop {
        let current = *path.last().expect("non-empty");
        let next = preds[current]
            .iter()
            .map(|&q| q as usize)
            .find(|&q| level[q].is_none())
            .expect("an unplaced pass has an unplaced predecessor");
        if let Some(pos) = path.iter().position(|&p| p == next) {
            // `path` follows "depends on" links; print in execution order a -> b.
            let mut cycle: Vec<String> = path[pos..].iter().rev().map(|&p| passes[p].name.clone()).collect();
            cycle.insert(0, passes[next].name.clone());
            cycle.dedup();
            let first = cycle[0].clone();
            if cycle.last() != Some(&first) {
                cycle.push(first);
            }
            return cycle;
        }
        path.push(next);
    }
}

/// The sync list: for each access in execution order, its hazards with earlier
/// accesses to the same resource, wrapping into the previous frame.
fn sync_edges(
    graph_id: u32,
    resources: &[ResourceDecl],
    passes: &[PassDecl],
    order: &[u32],
) -> (Vec<SyncEdge>, Vec<std::ops::Range<usize>>) {
    // Accesses per resource in execution order.
    let mut per_resource: Vec<Vec<AccessPoint>> = vec![Vec::new(); resources.len()];
    for &p in order {
        let pass = &passes[p as usize];
        for Access { resource, mode, usage } in &pass.accesses {
            per_resource[resource.index()].push(AccessPoint {
                pass: PassId(p),
                queue: pass.queue,
                mode: *mode,
                usage: *usage,
            });
        }
    }
    let mut by_pass: Vec<Vec<SyncEdge>> = vec![Vec::new(); passes.len()];
    for (r, accesses) in per_resource.iter().enumerate() {
        let resource = ResourceId { graph: graph_id, index: r as u32 };
        let k = accesses.len();
        for i in 0..k {
            let after = accesses[i];
            let mut emit = |j: isize, hazard| {
                let before = accesses[j.rem_euclid(k as isize) as usize];
                if before.queue == Queue::Gpu || after.queue == Queue::Gpu {
                    by_pass[after.pass.index()].push(SyncEdge {
                        resource,
                        before,
                        after,
                        hazard,
                        across_frames: j < 0,
                    });
                }
            };
            // Walk back at most one full frame.
            let mut saw_read = false;
            for j in (i as isize - k as isize..i as isize).rev() {
                let before = accesses[j.rem_euclid(k as isize) as usize];
                match (after.mode, before.mode) {
                    (Mode::Read, Mode::Write) => {
                        emit(j, Hazard::ReadAfterWrite);
                        break;
                    }
                    (Mode::Read, Mode::Read) => {}
                    (Mode::Write, Mode::Read) => {
                        saw_read = true;
                        emit(j, Hazard::WriteAfterRead);
                    }
                    (Mode::Write, Mode::Write) => {
                        if !saw_read {
                            emit(j, Hazard::WriteAfterWrite);
                        }
                        break;
                    }
                }
            }
        }
    }
    let mut sync = Vec::new();
    let mut ranges = Vec::with_capacity(passes.len());
    for edges in by_pass {
        let start = sync.len();
        sync.extend(edges);
        ranges.push(start..sync.len());
    }
    (sync, ranges)
}

impl CompiledGraph {
    /// Passes grouped by level (execution order); each inner slice runs concurrently.
    pub fn levels(&self) -> impl Iterator<Item = &[u32]> {
        self.levels.iter().map(Vec::as_slice)
    }

    /// Direct dependencies of `pass`.
    pub fn predecessors(&self, pass: PassId) -> impl Iterator<Item = PassId> + '_ {
        self.predecessors[pass.index()].iter().map(|&p| PassId(p))
    }

    /// Every hazard involving a GPU pass, grouped by the pass that must wait.
    pub fn sync_edges(&self) -> &[SyncEdge] {
        &self.sync
    }

    /// The hazards `pass` must wait on before it runs.
    pub fn sync_before(&self, pass: PassId) -> &[SyncEdge] {
        &self.sync[self.sync_ranges[pass.index()].clone()]
    }

    pub fn pass_count(&self) -> usize {
        self.passes.len()
    }

    pub fn pass_queue(&self, pass: PassId) -> Queue {
        self.passes[pass.index()].queue
    }

    /// The accesses `pass` declared (one per resource; a write also permits reading).
    pub fn pass_accesses(&self, pass: PassId) -> &[Access] {
        &self.passes[pass.index()].accesses
    }

    pub fn pass_name(&self, pass: PassId) -> &str {
        &self.passes[pass.index()].name
    }

    /// The pass with this name.
    pub fn find_pass(&self, name: &str) -> Option<PassId> {
        self.passes.iter().position(|p| p.name == name).map(|i| PassId(i as u32))
    }

    pub fn resource_name(&self, resource: ResourceId) -> &str {
        &self.resources[resource.index()].name
    }
}
