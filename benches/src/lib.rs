//! Scene builders shared by the benches.
