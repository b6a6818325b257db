//! CRD versions: every served version has its own compiled schema; objects are stored in
//! the storage version and read through any served version.
//!
//! Conversion is kube-apiserver's `None` strategy (`nopConverter`): only `apiVersion` is
//! rewritten, and the converted object is then pruned against the structural schema of the
//! version it was converted to, as apiextensions-apiserver's `schemaCoercingConverter` does
//! after every conversion ([`convert`]). So a field only the request version knows is kept
//! in the response of a write only if the storage version knows it too, and a field only
//! the storage version knows is not shown through a version that does not
//! (`x-kubernetes-preserve-unknown-fields` keeps whatever it covers):
//!
//! * on a write, the object (pruned, defaulted and validated in the request version) is
//!   converted to the storage version and pruned against its schema before it is stored
//!   ([`crate::admission::to_storage`]); the response is the stored object read back;
//! * on a read, the stored object takes the defaults of the version it was stored in, and
//!   through another version is converted to it and pruned against its schema
//!   ([`crate::admission::on_read`]).
//!
//! A CRD whose conversion strategy is `Webhook` is served all the same, **without calling
//! the webhook**: its objects are not converted (fields keep the shape of the version they
//! were written in; only `apiVersion` changes, and nothing is pruned on conversion, since
//! the webhook's field mapping is unknown), so suites that rely on a conversion webhook's
//! field mapping see the unconverted object.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::schema::{VersionSchema, prune};

/// What a served CRD version needs at admission: its schema, the storage version's schema,
/// every version's schema (defaults on read, in the version an object was stored in), and
/// the CRD generation it was compiled from.
#[derive(Debug)]
pub struct CrdVersion {
    /// The schema of this served version.
    pub schema: Arc<VersionSchema>,
    /// `group/thisVersion`.
    pub api_version: String,
    /// `group/storageVersion`.
    pub storage_api_version: String,
    /// The schema of the storage version.
    pub storage: Arc<VersionSchema>,
    /// The schema of every version of the CRD, by `group/version`.
    pub all: Arc<HashMap<String, Arc<VersionSchema>>>,
    /// `spec.conversion.strategy: Webhook` (served without conversion, see the module doc).
    pub webhook: bool,
    /// `metadata.uid` and `metadata.generation` of the CRD compiled from.
    pub compiled_from: (String, i64),
}

impl PartialEq for CrdVersion {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.schema, &other.schema) && self.storage_api_version == other.storage_api_version
    }
}

impl Eq for CrdVersion {}

/// Compiles every version of a CRD, reusing `previous` (the last compilation of the same
/// version) when the CRD's uid and generation did not change: schemas are compiled once per
/// CRD change, not per registry rebuild or request.
pub fn compile(
    crd: &Value,
    previous: impl Fn(&str) -> Option<Arc<CrdVersion>>,
) -> HashMap<String, Arc<CrdVersion>> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let key = (
        crd["metadata"]["uid"].as_str().unwrap_or_default().to_string(),
        crd["metadata"]["generation"].as_i64().unwrap_or_default(),
    );
    let versions: Vec<&Value> = spec["versions"].as_array().into_iter().flatten().collect();
    let mut out = HashMap::new();
    let reusable: Vec<(String, Arc<CrdVersion>)> = versions
        .iter()
        .filter_map(|v| v["name"].as_str())
        .filter_map(|name| previous(name).map(|p| (name.to_string(), p)))
        .filter(|(_, p)| p.compiled_from == key && !key.0.is_empty())
        .collect();
    if !reusable.is_empty() && reusable.len() == versions.len() {
        out.extend(reusable);
        return out;
    }
    let schemas: HashMap<String, Arc<VersionSchema>> = versions
        .iter()
        .filter_map(|v| {
            v["name"]
                .as_str()
                .map(|n| (n.to_string(), VersionSchema::compile(crd, v)))
        })
        .collect();
    let storage_name = versions
        .iter()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default()
        .to_string();
    let webhook = spec["conversion"]["strategy"].as_str() == Some("Webhook");
    let all: Arc<HashMap<String, Arc<VersionSchema>>> = Arc::new(
        schemas
            .iter()
            .map(|(name, schema)| (format!("{group}/{name}"), schema.clone()))
            .collect(),
    );
    for (name, schema) in &schemas {
        let storage = schemas
            .get(&storage_name)
            .cloned()
            .unwrap_or_else(|| schema.clone());
        out.insert(
            name.clone(),
            Arc::new(CrdVersion {
                schema: schema.clone(),
                api_version: format!("{group}/{name}"),
                storage_api_version: format!("{group}/{storage_name}"),
                storage,
                all: all.clone(),
                webhook,
                compiled_from: key.clone(),
            }),
        );
    }
    out
}

impl CrdVersion {
    /// The schema of the version an object is in (by its `apiVersion`); the storage
    /// version's for a version the CRD no longer has.
    pub fn schema_of(&self, api_version: &str) -> &Arc<VersionSchema> {
        self.all.get(api_version).unwrap_or(&self.storage)
    }
}

/// Converts `object` to `target` (`group/version`, whose schema is `schema`): `apiVersion`
/// rewritten and, unless the CRD's conversion is a webhook (not called here), the object
/// pruned against the target version's structural schema, nulls of non-nullable fields
/// without a default dropped (`schemaCoercingConverter`). Nothing happens when `object` is
/// in `target` already.
pub fn convert(object: &mut Value, version: &CrdVersion, target: &str, schema: &VersionSchema) {
    let Some(map) = object.as_object_mut() else {
        return;
    };
    if map.get("apiVersion").and_then(Value::as_str) == Some(target) {
        return;
    }
    map.insert("apiVersion".into(), json!(target));
    if !version.webhook
        && let Some(root) = &schema.root
    {
        prune::prune(object, root);
    }
}
