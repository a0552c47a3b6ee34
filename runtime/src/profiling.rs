//! Optional Tracy instrumentation (cargo feature `tracy`; for the C library,
//! `cargo build --release -p kiln-ffi --features tracy`).
//!
//! With the feature, Kiln starts the Tracy client on first use and emits:
//! * a zone per frame-graph pass, named after the pass (`physics.solve`, `gpu.wait`,
//!   or the name a C pass was given), on the worker that ran it;
//! * a zone `jobs` per batch of jobs a worker runs inside a pass (`parallel_for`,
//!   `map_chunks`, `for_each_mut`), so work stealing shows as zones on every worker;
//! * a frame mark at the end of every executed frame graph;
//! * plots `kiln gpu ms` and `kiln gpu blocked ms` per integrated frame: the GPU's time
//!   and how long the CPU waited for it.
//!
//! Connect the Tracy profiler (0.11, the protocol of `tracy-client` 0.17) while the
//! program runs. Zones named at run time allocate their source location, so the
//! zero-allocation guarantee of steady-state frames holds only without the feature;
//! without it every function here is empty and compiles away.

/// An open zone; it closes when dropped, on the thread that opened it.
pub(crate) struct Zone {
    #[cfg(feature = "tracy")]
    _span: tracy_client::Span,
}

/// A zone named after a frame-graph pass.
#[inline]
pub(crate) fn pass_zone(name: &str) -> Zone {
    #[cfg(feature = "tracy")]
    {
        let client = tracy_client::Client::start();
        Zone { _span: client.span_alloc(Some(name), "frame graph pass", file!(), line!(), 0) }
    }
    #[cfg(not(feature = "tracy"))]
    {
        let _ = name;
        Zone {}
    }
}

/// A zone around one batch of jobs on a worker.
#[inline]
pub(crate) fn job_zone() -> Zone {
    #[cfg(feature = "tracy")]
    {
        let client = tracy_client::Client::start();
        Zone { _span: client.span(tracy_client::span_location!("jobs"), 0) }
    }
    #[cfg(not(feature = "tracy"))]
    Zone {}
}

/// The end of a frame.
#[inline]
pub(crate) fn frame_mark() {
    #[cfg(feature = "tracy")]
    tracy_client::Client::start().frame_mark();
}

/// The GPU's milliseconds for a frame and how long the CPU blocked on them.
#[inline]
pub(crate) fn plot_gpu(gpu_ms: f64, blocked_ms: f64) {
    #[cfg(feature = "tracy")]
    {
        let client = tracy_client::Client::start();
        client.plot(tracy_client::plot_name!("kiln gpu ms"), gpu_ms);
        client.plot(tracy_client::plot_name!("kiln gpu blocked ms"), blocked_ms);
    }
    #[cfg(not(feature = "tracy"))]
    let _ = (gpu_ms, blocked_ms);
}
