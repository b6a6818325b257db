//! The conversion a platform provides between the two APIs' objects: the `conversion`
//! crate's seam, re-exported for the hooks.
//!
//! The hooks are platform-neutral: they ask a [`Platform`] for the mirror of an object and
//! write it. A platform without one (see [`super::Cluster::platform`]) is not synced.

pub use conversion::Warning;
pub use conversion::platform::Platform;
