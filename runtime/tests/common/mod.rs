#![allow(dead_code)]
//! A small particle "physics" frame used by the integration tests: integrate,
//! collide with a floor, reduce energy. Arithmetic in f32 so ordering matters.

use kiln::frame::{CompiledGraph, FrameGraph, Res};

pub struct Scene {
    pub graph: CompiledGraph,
    pub positions: Res<Vec<[f32; 3]>>,
    pub energy: Res<f32>,
}

pub fn particle_scene(count: usize) -> Scene {
    let mut g = FrameGraph::new();
    let positions =
        g.resource("positions", (0..count).map(|i| [i as f32 * 0.01, 10.0 + (i % 7) as f32, 0.0]).collect::<Vec<_>>());
    let velocities =
        g.resource("velocities", (0..count).map(|i| [((i * 31) % 17) as f32 * 0.1, 0.0, 0.5]).collect::<Vec<_>>());
    let energy = g.resource("energy", 0.0f32);

    g.pass("integrate").writes(positions).writes(velocities).run(move |ctx| {
        let dt = ctx.frame().delta_time;
        let mut p = ctx.write(&positions)?;
        let mut v = ctx.write(&velocities)?;
        let (p, v) = (SyncSlice::new(&mut p), SyncSlice::new(&mut v));
        ctx.jobs().parallel_for(0..p.len, 256, |chunk, _| {
            for i in chunk {
                // SAFETY: chunks are disjoint.
                let (pi, vi) = unsafe { (p.get(i), v.get(i)) };
                vi[1] -= 9.81 * dt;
                for k in 0..3 {
                    pi[k] += vi[k] * dt;
                }
                if pi[1] < 0.0 {
                    pi[1] = -pi[1] * 0.5;
                    vi[1] = -vi[1] * 0.7;
                }
            }
        });
        Ok(())
    });
    g.pass("energy").reads(positions).writes(energy).run(move |ctx| {
        let p = ctx.read(&positions)?;
        let scratch = ctx.arenas().worker(ctx.worker());
        let e = ctx.jobs().reduce(
            0..p.len(),
            100,
            scratch,
            |c, _| p[c].iter().map(|q| q[1] * 9.81 + q[0] * 1e-3).sum::<f32>(),
            |a, b| a + b,
        );
        *ctx.write(&energy)? = e.unwrap_or(0.0);
        Ok(())
    });
    Scene { graph: g.compile().expect("scene compiles"), positions, energy }
}

/// A slice that parallel jobs index disjointly.
pub struct SyncSlice<T> {
    ptr: *mut T,
    pub len: usize,
}

// SAFETY: users index disjoint elements only.
unsafe impl<T: Send> Sync for SyncSlice<T> {}

impl<T> SyncSlice<T> {
    pub fn new(slice: &mut [T]) -> Self {
        SyncSlice { ptr: slice.as_mut_ptr(), len: slice.len() }
    }

    /// # Safety
    /// `i < len` and no other thread uses element `i` meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self, i: usize) -> &mut T {
        assert!(i < self.len);
        // SAFETY: forwarded from the caller.
        unsafe { &mut *self.ptr.add(i) }
    }
}
