//! The machinery under every controller, knowing pairs but not hooks: the watches
//! ([`watch`], [`reflect`]) that fill the caches ([`store`]) from objects read leniently
//! ([`lenient`]), the work queue ([`queue`]), the infrastructure watches ([`infra`]), the
//! compact name indexes they keep ([`index`]), the Events recorder ([`events`]), the
//! names parked until an object appears ([`wakeups`]) and the client they all talk
//! through ([`client`]).
pub mod client;
pub mod events;
pub(crate) mod field_sets;
pub(crate) mod hash;
pub(crate) mod index;
pub mod infra;
pub mod lenient;
pub(crate) mod queue;
pub(crate) mod reflect;
pub mod store;
pub mod wakeups;
pub(crate) mod watch;
