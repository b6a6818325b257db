//! The machinery under every controller, knowing pairs but not hooks: the watches
//! ([`reflect`]) that fill the caches ([`store`]) from objects read leniently
//! ([`lenient`]), the work queue ([`queue`]), the infrastructure watches ([`infra`]) and
//! the Events recorder ([`events`]).
pub mod events;
pub(crate) mod field_sets;
pub mod infra;
pub(crate) mod lenient;
pub(crate) mod queue;
pub(crate) mod reflect;
pub mod store;
