//! Memory of the integrated frame over many frames: live Rust heap bytes (counted
//! by this program's allocator) and the resident set, every N frames. Separates
//! Kiln's own allocations from the Vulkan driver's and the validation layer's.
//!
//!   cargo run --release -p kiln --features demo --example frame_memory -- [FRAMES] [validation 0|1]

#[path = "common/live_heap.rs"]
mod live_heap;

use kiln::gpu::{GpuConfig, RayTracer};
use kiln::integrated::{demo_frame, DemoGi};
use kiln::jobs::ThreadPool;
use kiln::physics::scenes;
use live_heap::{live, resident_kib, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let mut args = std::env::args().skip(1);
    let frames: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3000);
    let validation = args.next().is_none_or(|a| a == "1");
    let scene = scenes::rain_over("demo", 48, 36);
    let config = GpuConfig { validation, ..GpuConfig::default() };
    let tracer = RayTracer::new(&config).expect("a Vulkan device");
    let gi = DemoGi { spacing: 8.0, layers: 2, probes_per_frame: 40, rays_per_probe: 32 };
    let gi = (std::env::var("NO_GI").is_err()).then_some(gi);
    let mut frame = demo_frame(&scene, Some(tracer), gi).expect("the demo frame");
    let pool = ThreadPool::new(1);
    println!("{:>7} {:>14} {:>12}", "frame", "live heap B", "RSS KiB");
    for i in 1..=frames {
        frame.run(&pool, 1.0 / 60.0).expect("a frame");
        if i % (frames / 10).max(1) == 0 || i == 100 {
            println!("{i:>7} {:>14} {:>12}", live(), resident_kib());
        }
    }
}
