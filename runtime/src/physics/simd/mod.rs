//! The contact solver in SIMD lanes: [`lanes`] holds the lane types (four lanes on
//! SSE2, eight on AVX, sixteen on AVX-512F, behind one `Lanes` trait) and [`wide`] the
//! bundles of 4, 8 or 16 constraints with their prepare, warm start, solve, relax and
//! restitution, one generic body for every width. Every lane does the IEEE operations
//! of the scalar path (`contact_solver.rs`) in its order, with no fused multiply-add,
//! so every width gives the scalar solver's bits (tests compare them). [`ball`] does the
//! same for the ball-and-socket joints' point parts.

pub(crate) mod ball;
pub(crate) mod lanes;
pub(crate) mod wide;
