//! Small schema helpers for the generated CRDs, where schemars' defaults differ from what
//! the real CRDs say.

use schemars::{Schema, SchemaGenerator, json_schema};

/// An object whose unknown fields the API server keeps (`providerSpec.value`, …).
pub(crate) fn preserve_unknown_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}

/// An `int64` integer.
pub(crate) fn int64(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "format": "int64" })
}

/// A string restricted to `values` (a structural-schema friendly enum).
pub(crate) fn string_enum(_: &mut SchemaGenerator, values: &[&str]) -> Schema {
    json_schema!({ "type": "string", "enum": values })
}
