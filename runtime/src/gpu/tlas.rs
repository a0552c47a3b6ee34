//! Top-level acceleration structure, rebuilt every frame on the GPU as a linear BVH
//! (Karras 2012, "Maximizing parallelism in the construction of BVHs"):
//!
//! ```text
//!  tlas_boxes      one invocation per instance: world box of its BLAS root box under
//!                  the instance transform -> leaf slot; centroid -> scene bounds
//!                  (atomicMin on order-preserving uint encodings)
//!  tlas_morton     30-bit Morton code of each centroid in the scene bounds; key =
//!                  (code, instance index), padded to a power of two with (~0, ~0)
//!  tlas_sort       bitonic sort of the keys, one dispatch per merge step; the keys
//!                  are unique, so the order is the same on every device
//!  tlas_hierarchy  one invocation per internal node: its key range and split by
//!                  binary search on common prefixes -> children and parent links
//!  tlas_refit      one invocation per leaf: copy the instance box, then climb with
//!                  per-node atomic counters (as blas_refit does)
//! ```
//!
//! Nodes: `n - 1` internal nodes first (the root is node 0), then `n` leaves; leaf
//! `n - 1 + i` holds the instance at sorted position `i`. With one instance the
//! root is that leaf. Duplicate Morton codes are split by instance index (the
//! key's second half), so the depth stays bounded by 30 + 32 levels and traversal
//! stacks of [`TLAS_STACK`] entries suffice.
//!
//! Every kernel here has a CPU twin in `raytrace::tlas`, the reference of the tests:
//! the same integer logic (bit-exact), the same float operations (within a few ulps,
//! as GLSL does not promise correctly rounded division).

use super::buffer::GpuBuffer;
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::{TlasBoxesPush, TlasBuildPush, TlasMortonPush, TlasSortPush};
use super::queue::Gpu;
use super::recorder::{Recorder, Use};
use super::scene::GpuScene;
use super::shaders;

/// The TLAS build kernels, recorded as one pass.
pub struct TlasBuilder {
    boxes: Kernel,
    morton: Kernel,
    sort: Kernel,
    sort_local: Kernel,
    hierarchy: Kernel,
    refit: Kernel,
}

impl TlasBuilder {
    pub fn new(gpu: &Gpu) -> Result<TlasBuilder, GpuError> {
        Ok(TlasBuilder {
            boxes: gpu.kernel(&shaders::TLAS_BOXES)?,
            morton: gpu.kernel(&shaders::TLAS_MORTON)?,
            sort: gpu.kernel(&shaders::TLAS_SORT)?,
            sort_local: gpu.kernel(&shaders::TLAS_SORT_LOCAL)?,
            hierarchy: gpu.kernel(&shaders::TLAS_HIERARCHY)?,
            refit: gpu.kernel(&shaders::TLAS_REFIT)?,
        })
    }

    /// Records the bitonic sort of `padded` (a power of two) keys at `keys`. Steps
    /// inside a block of `B = 2 x 256` keys run in shared memory (`tlas_sort_local`):
    /// one dispatch sorts every block, then each stage `k > B` takes one global
    /// dispatch per step `j >= B` and one local dispatch for the steps below. The
    /// steps are those of the plain network, so the result is the same; for 2^17 keys
    /// that is 45 dispatches instead of 153.
    pub fn record_sort(&self, rec: &mut Recorder<'_>, keys: &GpuBuffer, padded: u32) -> Result<(), GpuError> {
        keys.check_range("sort keys", 0, 8 * u64::from(padded))?;
        let block = 2 * self.sort_local.local_size;
        let push = |j, k| TlasSortPush { keys: keys.address(), j, k, padded, _pad: 0 };
        let uses = [Use::write(keys)];
        rec.dispatch(&self.sort_local, &push(0, 0), [padded.div_ceil(block), 1, 1], &uses)?;
        let mut k = 2 * block;
        while k <= padded {
            let mut j = k / 2;
            while j >= block {
                rec.dispatch_threads(&self.sort, &push(j, k), padded, &uses)?;
                j /= 2;
            }
            rec.dispatch(&self.sort_local, &push(j, k), [padded / block, 1, 1], &uses)?;
            k *= 2;
        }
        Ok(())
    }

    /// Records the full rebuild over the instances already uploaded to `scene`.
    pub fn record(&self, rec: &mut Recorder<'_>, scene: &GpuScene) -> Result<(), GpuError> {
        let n = scene.instance_count;
        if n == 0 {
            return Ok(());
        }
        rec.fill(&scene.bounds, u32::MAX);
        rec.fill(&scene.counters, 0);
        let boxes = TlasBoxesPush {
            instances: scene.instances.address(),
            blas_refs: scene.blas_refs.address(),
            blas_nodes: scene.blas_nodes.address(),
            boxes: scene.leaf_boxes.address(),
            scene: scene.bounds.address(),
            count: n,
            _pad: 0,
        };
        let uses = [
            Use::read(&scene.instances),
            Use::read(&scene.blas_refs),
            Use::read(&scene.blas_nodes),
            Use::write(&scene.leaf_boxes),
            Use::write(&scene.bounds),
        ];
        rec.dispatch_threads(&self.boxes, &boxes, n, &uses)?;
        let morton = TlasMortonPush {
            boxes: scene.leaf_boxes.address(),
            scene: scene.bounds.address(),
            keys: scene.keys.address(),
            count: n,
            padded: scene.padded,
        };
        let uses = [Use::read(&scene.leaf_boxes), Use::read(&scene.bounds), Use::write(&scene.keys)];
        rec.dispatch_threads(&self.morton, &morton, scene.padded, &uses)?;
        self.record_sort(rec, &scene.keys, scene.padded)?;
        let build = TlasBuildPush {
            keys: scene.keys.address(),
            nodes: scene.tlas_nodes.address(),
            parents: scene.parents.address(),
            boxes: scene.leaf_boxes.address(),
            counters: scene.counters.address(),
            count: n,
            _pad: 0,
        };
        // Hierarchy and refit share one push block; the hierarchy is handed the
        // boxes and counters without touching them, so it declares them as reads.
        let uses = [
            Use::read(&scene.keys),
            Use::read(&scene.leaf_boxes),
            Use::read(&scene.counters),
            Use::write(&scene.tlas_nodes),
            Use::write(&scene.parents),
        ];
        rec.dispatch_threads(&self.hierarchy, &build, n.max(2) - 1, &uses)?;
        let uses = [
            Use::read(&scene.keys),
            Use::read(&scene.leaf_boxes),
            Use::read(&scene.parents),
            Use::write(&scene.tlas_nodes),
            Use::write(&scene.counters),
        ];
        rec.dispatch_threads(&self.refit, &build, n, &uses)
    }
}
