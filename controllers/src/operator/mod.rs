//! The operator around the controllers: command line, logging, leader election, metrics,
//! probes, the embedded development server, and the run loop that ties them together.
//!
//! `main.rs` only parses the command line, sets up logging and calls [`run::run`].

pub mod cli;
#[cfg(feature = "embedded")]
pub mod embedded;
pub mod health;
pub mod http;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod pairs;
pub mod policies;
pub mod requests;
pub mod run;
pub mod samples;
pub mod shutdown;
pub mod upstream;

pub use cli::Cli;
pub use run::{Exit, Operator, OperatorError, Settings};
