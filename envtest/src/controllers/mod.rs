//! The controllers that run beside the server, as kube-controller-manager's run beside
//! kube-apiserver: they follow the store's event log and write through the object
//! semantics a request goes through. [`gc`] is the garbage collector, [`event_ttl`] expires
//! Events.

pub mod event_ttl;
pub mod gc;
