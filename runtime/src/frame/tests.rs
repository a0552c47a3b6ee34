use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::jobs::ThreadPool;

fn names(graph: &CompiledGraph, level: &[u32]) -> Vec<String> {
    level.iter().map(|&p| graph.pass_name(PassId(p)).to_owned()).collect()
}

#[test]
fn declared_access_orders_passes_into_levels() {
    let mut g = FrameGraph::new();
    let a = g.resource("a", 0u32);
    let b = g.resource("b", 0u32);
    let c = g.resource("c", 0u32);
    g.pass("write_a").writes(a).run(|ctx| Ok(ctx.frame().index as u32).map(|_| ()));
    g.pass("write_b").writes(b).run(|_| Ok(()));
    g.pass("read_a_write_c").reads(a).writes(c).run(|_| Ok(()));
    g.pass("read_b").reads(b).run(|_| Ok(()));
    g.pass("write_a_again").writes(a).run(|_| Ok(()));
    let g = g.compile().unwrap();
    let levels: Vec<Vec<String>> = g.levels().map(|l| names(&g, l)).collect();
    assert_eq!(
        levels,
        vec![
            vec!["write_a".to_owned(), "write_b".to_owned()],
            vec!["read_a_write_c".to_owned(), "read_b".to_owned()],
            vec!["write_a_again".to_owned()],
        ]
    );
    let preds: Vec<PassId> = g.predecessors(g.find_pass("write_a_again").unwrap()).collect();
    assert_eq!(preds, vec![PassId(0), PassId(2)], "WAW on the writer and WAR on the reader");
}

#[test]
fn independent_passes_of_a_level_run_concurrently() {
    let mut g = FrameGraph::new();
    let arrived = Arc::new(AtomicUsize::new(0));
    let met = Arc::new(AtomicUsize::new(0));
    for name in ["left", "right"] {
        let (arrived, met) = (Arc::clone(&arrived), Arc::clone(&met));
        g.pass(name).run(move |_| {
            arrived.fetch_add(1, Ordering::SeqCst);
            let deadline = Instant::now() + Duration::from_secs(5);
            while arrived.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                std::hint::spin_loop();
            }
            if arrived.load(Ordering::SeqCst) >= 2 {
                met.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        });
    }
    let mut g = g.compile().unwrap();
    let pool = ThreadPool::new(1);
    g.execute(&pool, 0.016).unwrap();
    assert_eq!(met.load(Ordering::SeqCst), 2, "both passes were running at the same time");
    let p = g.profile();
    assert_ne!(p.passes[0].worker, p.passes[1].worker);
}

#[test]
fn cycles_are_reported_with_pass_names() {
    let mut g = FrameGraph::new();
    let x = g.resource("x", ());
    g.pass("simulate").writes(x).after("present").run(|_| Ok(()));
    g.pass("present").reads(x).run(|_| Ok(()));
    let error = g.compile().err().expect("cycle");
    assert_eq!(error, GraphError::Cycle(vec!["simulate".into(), "present".into(), "simulate".into()]));
    assert_eq!(error.to_string(), "frame graph has a cycle: simulate -> present -> simulate");

    let mut g = FrameGraph::new();
    g.pass("selfish").after("selfish").run(|_| Ok(()));
    assert!(matches!(g.compile(), Err(GraphError::Cycle(p)) if p == ["selfish", "selfish"]));

    let mut g = FrameGraph::new();
    g.pass("a").after("b").run(|_| Ok(()));
    g.pass("b").after("c").run(|_| Ok(()));
    g.pass("c").after("a").run(|_| Ok(()));
    let Err(GraphError::Cycle(cycle)) = g.compile() else { panic!("expected a cycle") };
    assert_eq!(cycle.len(), 4);
    assert_eq!(cycle.first(), cycle.last());
}

#[test]
fn bad_declarations_are_rejected_at_compile() {
    let mut other = FrameGraph::new();
    let foreign = other.resource("foreign", 1u8);
    let mut g = FrameGraph::new();
    g.pass("thief").reads(foreign).run(|_| Ok(()));
    assert_eq!(g.compile().err(), Some(GraphError::UnknownResource { pass: "thief".into(), resource: 0 }));

    let mut g = FrameGraph::new();
    g.pass("lonely").after("nobody").run(|_| Ok(()));
    let error = g.compile().err().unwrap();
    assert_eq!(error.to_string(), "pass 'lonely' is declared to run after 'nobody', but no pass has that name");

    let mut g = FrameGraph::new();
    g.pass("twin").run(|_| Ok(()));
    g.pass("twin").run(|_| Ok(()));
    assert_eq!(g.compile().err(), Some(GraphError::DuplicatePass("twin".into())));

    let mut g = FrameGraph::new();
    g.resource("bodies", ());
    g.resource("bodies", 1u8);
    assert_eq!(g.check().err().map(|e| e.to_string()), Some("two resources are named 'bodies'".to_owned()));
}

#[test]
fn undeclared_access_fails_the_frame_with_names() {
    let mut g = FrameGraph::new();
    let velocities = g.resource("velocities", vec![0.0f32; 4]);
    let positions = g.resource("positions", vec![0.0f32; 4]);
    g.pass("integrate").reads(velocities).run(move |ctx| {
        let _v = ctx.read(&velocities)?;
        let _p = ctx.write(&positions)?;
        Ok(())
    });
    let mut g = g.compile().unwrap();
    let pool = ThreadPool::new(1);
    let error = g.execute(&pool, 0.016).unwrap_err();
    assert_eq!(
        error,
        GraphError::Undeclared { pass: "integrate".into(), resource: "positions".into(), wanted: Mode::Write }
    );
    assert_eq!(error.to_string(), "pass 'integrate' wrote resource 'positions' without declaring that access");

    let mut g = FrameGraph::new();
    let state = g.resource("state", 0u64);
    g.pass("greedy").writes(state).run(move |ctx| {
        let _first = ctx.write(&state)?;
        let _second = ctx.read(&state)?;
        Ok(())
    });
    let mut g = g.compile().unwrap();
    let error = g.execute(&pool, 0.016).unwrap_err();
    assert_eq!(error, GraphError::BorrowConflict { pass: "greedy".into(), resource: "state".into() });
}

#[test]
fn resources_carry_data_between_passes_and_frames() {
    let mut g = FrameGraph::new();
    let values = g.resource("values", vec![1.0f32; 10_000]);
    let sum = g.resource("sum", 0.0f64);
    g.pass("scale").writes(values).run(move |ctx| {
        let mut v = ctx.write(&values)?;
        let grain = 1000;
        let ptr = crate::frame::tests::SendPtr(v.as_mut_ptr());
        ctx.jobs().parallel_for(0..v.len(), grain, |chunk, _| {
            for i in chunk {
                // SAFETY: chunks are disjoint and `v` outlives the parallel_for.
                unsafe { *ptr.get().add(i) *= 2.0 };
            }
        });
        Ok(())
    });
    g.pass("sum").reads(values).writes(sum).run(move |ctx| {
        let v = ctx.read(&values)?;
        let scratch = ctx.arenas().worker(ctx.worker());
        let total =
            ctx.jobs().reduce(0..v.len(), 512, scratch, |c, _| v[c].iter().map(|&x| x as f64).sum(), |a, b| a + b);
        *ctx.write(&sum)? = total.unwrap_or(0.0);
        Ok(())
    });
    let mut g = g.compile().unwrap();
    let pool = ThreadPool::new(2);
    g.execute(&pool, 0.016).unwrap();
    g.execute(&pool, 0.016).unwrap();
    assert_eq!(*g.resource(&sum).unwrap(), 40_000.0);
    g.resource_mut(&values).unwrap().fill(0.5);
    g.execute(&pool, 0.016).unwrap();
    assert_eq!(*g.resource(&sum).unwrap(), 10_000.0);
    assert_eq!(g.frame_count(), 3);
}

pub(crate) struct SendPtr<T>(pub *mut T);
// SAFETY: used only for disjoint writes in tests.
unsafe impl<T> Sync for SendPtr<T> {}
impl<T> SendPtr<T> {
    pub fn get(&self) -> *mut T {
        self.0
    }
}

#[test]
fn gpu_sync_edges_are_computed_per_hazard() {
    let mut g = FrameGraph::new();
    let instances = g.resource("instances", ());
    let tlas = g.resource("tlas", ());
    let hits = g.resource("hits", ());
    let upload = g.pass("upload_instances").writes(instances).run(|_| Ok(()));
    let build = g.pass("tlas_build").queue(Queue::Gpu).reads(instances).writes(tlas).run(|_| Ok(()));
    let trace = g
        .pass("trace")
        .queue(Queue::Gpu)
        .access(tlas, Mode::Read, Usage::Storage)
        .access(hits, Mode::Write, Usage::Storage)
        .run(|_| Ok(()));
    let readback = g.pass("read_hits").reads(hits).run(|_| Ok(()));
    let g = g.compile().unwrap();

    let point = |pass, queue, mode, usage| AccessPoint { pass, queue, mode, usage };
    let up_w = point(upload, Queue::Cpu, Mode::Write, Usage::Host);
    let build_r = point(build, Queue::Gpu, Mode::Read, Usage::Storage);
    let build_w = point(build, Queue::Gpu, Mode::Write, Usage::Storage);
    let trace_r = point(trace, Queue::Gpu, Mode::Read, Usage::Storage);
    let trace_w = point(trace, Queue::Gpu, Mode::Write, Usage::Storage);
    let read_r = point(readback, Queue::Cpu, Mode::Read, Usage::Host);
    let edge = |resource: Res<()>, before, after, hazard, across_frames| SyncEdge {
        resource: resource.id(),
        before,
        after,
        hazard,
        across_frames,
    };

    // The upload overwrites what last frame's TLAS build read: write-after-read.
    assert_eq!(g.sync_before(upload), [edge(instances, build_r, up_w, Hazard::WriteAfterRead, true)]);
    assert_eq!(
        g.sync_before(build),
        [
            edge(instances, up_w, build_r, Hazard::ReadAfterWrite, false),
            edge(tlas, trace_r, build_w, Hazard::WriteAfterRead, true),
        ]
    );
    assert_eq!(
        g.sync_before(trace),
        [
            edge(tlas, build_w, trace_r, Hazard::ReadAfterWrite, false),
            edge(hits, read_r, trace_w, Hazard::WriteAfterRead, true),
        ]
    );
    assert_eq!(g.sync_before(readback), [edge(hits, trace_w, read_r, Hazard::ReadAfterWrite, false)]);
    assert_eq!(g.sync_edges().len(), 6);
}

#[test]
fn gpu_passes_keep_declaration_order_and_write_after_write_is_tracked() {
    let mut g = FrameGraph::new();
    let a = g.resource("a", ());
    let b = g.resource("b", ());
    let first = g.pass("clear").queue(Queue::Gpu).writes(a).run(|_| Ok(()));
    let second = g.pass("other").queue(Queue::Gpu).writes(b).run(|_| Ok(()));
    let third = g.pass("fill").queue(Queue::Gpu).writes(a).run(|_| Ok(()));
    let g = g.compile().unwrap();
    assert_eq!(g.levels().count(), 3, "GPU passes record in declaration order");
    let waw: Vec<_> = g.sync_before(third).iter().map(|e| (e.before.pass, e.hazard, e.across_frames)).collect();
    assert_eq!(waw, vec![(first, Hazard::WriteAfterWrite, false)]);
    let wrap: Vec<_> = g.sync_before(first).iter().map(|e| (e.before.pass, e.hazard, e.across_frames)).collect();
    assert_eq!(wrap, vec![(third, Hazard::WriteAfterWrite, true)]);
    let alone: Vec<_> = g.sync_before(second).iter().map(|e| (e.before.pass, e.across_frames)).collect();
    assert_eq!(alone, vec![(second, true)], "a lone writer waits on itself from the previous frame");
}

#[test]
fn failing_and_panicking_passes_stop_the_frame_and_the_next_frame_works() {
    let fail_on = Arc::new(AtomicUsize::new(usize::MAX));
    let later_runs = Arc::new(AtomicUsize::new(0));
    let mut g = FrameGraph::new();
    let x = g.resource("x", 0u32);
    let f = Arc::clone(&fail_on);
    g.pass("step").writes(x).run(move |ctx| match f.load(Ordering::SeqCst) {
        0 => Err(GraphError::PassFailed { pass: ctx.name().into(), message: "solver diverged".into() }),
        1 => panic!("step exploded"),
        _ => Ok(()),
    });
    let runs = Arc::clone(&later_runs);
    g.pass("after_step").reads(x).run(move |_| {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let mut g = g.compile().unwrap();
    let pool = ThreadPool::new(2);

    fail_on.store(0, Ordering::SeqCst);
    let error = g.execute(&pool, 0.01).unwrap_err();
    assert_eq!(error.to_string(), "pass 'step' failed: solver diverged");
    assert_eq!(later_runs.load(Ordering::SeqCst), 0);
    assert_eq!(g.profile().passes[1].worker, PassTiming::NOT_RUN);

    fail_on.store(1, Ordering::SeqCst);
    let payload = panic::catch_unwind(AssertUnwindSafe(|| g.execute(&pool, 0.01))).unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"step exploded"));

    fail_on.store(usize::MAX, Ordering::SeqCst);
    g.execute(&pool, 0.01).unwrap();
    assert_eq!(later_runs.load(Ordering::SeqCst), 1);
}

#[test]
fn bad_delta_time_is_rejected_and_nothing_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut g = FrameGraph::new();
    let r = Arc::clone(&runs);
    g.pass("p").run(move |_| {
        r.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let mut g = g.compile().unwrap();
    let pool = ThreadPool::new(0);
    for dt in [f32::NAN, f32::INFINITY, -1.0] {
        assert!(matches!(g.execute(&pool, dt), Err(GraphError::InvalidArgument(_))), "{dt}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(g.frame_count(), 0);
    g.execute(&pool, 0.0).unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn profile_records_every_pass_inside_the_frame_total() {
    let mut g = FrameGraph::new();
    let r = g.resource("r", ());
    for i in 0..6 {
        let b = if i % 2 == 0 { g.pass(&format!("w{i}")).writes(r) } else { g.pass(&format!("r{i}")).reads(r) };
        b.run(|_| {
            std::thread::sleep(Duration::from_millis(1));
            Ok(())
        });
    }
    let mut g = g.compile().unwrap();
    let pool = ThreadPool::new(2);
    g.execute(&pool, 0.016).unwrap();
    let profile = g.profile();
    assert_eq!(profile.passes.len(), 6);
    for t in &profile.passes {
        assert!(t.worker < 3, "{t:?}");
        assert!(t.duration_ns >= 1_000_000, "{t:?}");
        assert!(t.start_ns + t.duration_ns <= profile.total_ns, "{t:?} inside {}", profile.total_ns);
    }
    // Passes of later levels start after earlier levels end.
    for pair in profile.passes.windows(2) {
        if pair[1].level > pair[0].level {
            assert!(pair[1].start_ns >= pair[0].start_ns + pair[0].duration_ns);
        }
    }
}
