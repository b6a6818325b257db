//! The hash maps the caches, indexes and queues look names up in on every event.
//!
//! Their keys are object names the API server validated, read by a controller that sees
//! only its own cluster's objects, so they are hashed with foldhash (the hasher
//! `hashbrown` defaults to, seeded per map) rather than std's SipHash: a few nanoseconds a
//! lookup instead of tens, which a restart's 30 000 listed objects pay several times each.

/// A `HashMap` hashed with foldhash; make one with `Map::default()`.
pub(crate) type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` hashed with foldhash; make one with `Set::default()`.
pub(crate) type Set<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
