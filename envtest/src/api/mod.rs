//! What the API serves besides stored objects: watch streams, OpenAPI documents, Tables
//! and metadata-only views; the responses the handler and watches send; fault injection;
//! and the server state ([`Shared`]) they all read.

pub mod faults;
pub mod openapi;
pub mod response;
pub mod shared;
pub mod table;
pub mod view;
pub mod watch;

pub use shared::Shared;
