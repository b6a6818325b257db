//! The runtime under `#[sync_controller]`.
pub mod api;
