//! What the API serves besides stored objects: watch streams, OpenAPI documents, Tables
//! and metadata-only views, and fault injection.

pub mod faults;
pub mod openapi;
pub mod table;
pub mod view;
pub mod watch;
