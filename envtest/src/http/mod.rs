//! The HTTP layer: the TLS listener, request routing, and the handler that authenticates,
//! authorizes and dispatches every request to the layers below.

pub mod handler;
pub mod request;
pub mod server;
pub mod tls;
