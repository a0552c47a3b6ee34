//! Steady-state frames make zero global heap allocations.
//!
//! A counting global allocator wraps the system one. After warm-up frames (which size
//! the arenas, deques and profile), many more frames run on a multi-threaded pool and
//! the allocation counter must not move — on any thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;

use kiln::jobs::ThreadPool;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to System unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steady_state_frames_allocate_nothing() {
    for threads in [0, 1, 3] {
        let pool = ThreadPool::new(threads);
        let mut scene = common::particle_scene(10_000);
        for _ in 0..20 {
            scene.graph.execute(&pool, 1.0 / 60.0).unwrap();
        }
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        for _ in 0..500 {
            scene.graph.execute(&pool, 1.0 / 60.0).unwrap();
        }
        let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
        assert_eq!(allocations, 0, "{allocations} heap allocations in 500 steady-state frames with {threads} threads");
        // Sanity: the counter works.
        let probe = ALLOCATIONS.load(Ordering::SeqCst);
        drop(std::hint::black_box(vec![1u8; 64]));
        assert!(ALLOCATIONS.load(Ordering::SeqCst) > probe);
    }
}
