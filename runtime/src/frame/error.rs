//! Frame-graph errors: every message names the passes and resources involved.

use std::fmt;

use super::Mode;

/// What went wrong while building, compiling or executing a frame graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphError {
    /// The dependencies form a cycle; the passes along it, first repeated at the end.
    Cycle(Vec<String>),
    /// A pass declared access to a resource handle this graph does not own.
    UnknownResource { pass: String, resource: usize },
    /// A pass asked to run after a pass name the graph does not have.
    UnknownPass { pass: String, after: String },
    /// Two passes have the same name.
    DuplicatePass(String),
    /// Two resources have the same name.
    DuplicateResource(String),
    /// A pass touched a resource it did not declare (or only declared for reading).
    Undeclared { pass: String, resource: String, wanted: Mode },
    /// A pass borrowed a resource in a way that conflicts with its own other borrow.
    BorrowConflict { pass: String, resource: String },
    /// A pass body reported failure.
    PassFailed { pass: String, message: String },
    /// An argument was out of range or not finite.
    InvalidArgument(String),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::Cycle(passes) => write!(f, "frame graph has a cycle: {}", passes.join(" -> ")),
            GraphError::UnknownResource { pass, resource } => {
                write!(
                    f,
                    "pass '{pass}' declares resource #{resource}, which belongs to another graph or does not exist"
                )
            }
            GraphError::UnknownPass { pass, after } => {
                write!(f, "pass '{pass}' is declared to run after '{after}', but no pass has that name")
            }
            GraphError::DuplicatePass(name) => write!(f, "two passes are named '{name}'"),
            GraphError::DuplicateResource(name) => write!(f, "two resources are named '{name}'"),
            GraphError::Undeclared { pass, resource, wanted } => {
                let verb = match wanted {
                    Mode::Read => "read",
                    Mode::Write => "wrote",
                };
                write!(f, "pass '{pass}' {verb} resource '{resource}' without declaring that access")
            }
            GraphError::BorrowConflict { pass, resource } => {
                write!(
                    f,
                    "pass '{pass}' borrowed resource '{resource}' while already holding a conflicting borrow of it"
                )
            }
            GraphError::PassFailed { pass, message } => write!(f, "pass '{pass}' failed: {message}"),
            GraphError::InvalidArgument(message) => write!(f, "invalid argument: {message}"),
        }
    }
}

impl std::error::Error for GraphError {}
