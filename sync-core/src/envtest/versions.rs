//! CRD versions: every served version has its own compiled schema; objects are stored in
//! the storage version and read through any served version.
//!
//! Conversion between versions is kube-apiserver's `None` strategy for every CRD: only
//! `apiVersion` is rewritten. A CRD whose conversion strategy is `Webhook` is served all the
//! same, **without calling the webhook**: its objects are not converted (fields keep the
//! shape of the version they were written in; only `apiVersion` changes), so suites that
//! rely on a conversion webhook's field mapping see the unconverted object.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::schema::VersionSchema;

/// What a served CRD version needs at admission: its schema, the storage version's schema
/// (defaults on read), and the CRD generation it was compiled from.
#[derive(Debug)]
pub struct CrdVersion {
    /// The schema of this served version.
    pub schema: Arc<VersionSchema>,
    /// `group/storageVersion`.
    pub storage_api_version: String,
    /// The schema of the storage version.
    pub storage: Arc<VersionSchema>,
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
    for (name, schema) in &schemas {
        let storage = schemas
            .get(&storage_name)
            .cloned()
            .unwrap_or_else(|| schema.clone());
        out.insert(
            name.clone(),
            Arc::new(CrdVersion {
                schema: schema.clone(),
                storage_api_version: format!("{group}/{storage_name}"),
                storage,
                webhook,
                compiled_from: key.clone(),
            }),
        );
    }
    out
}

/// Rewrites `apiVersion` to the storage version (conversion `None`).
pub fn to_storage(object: &mut Value, version: &CrdVersion) {
    if let Some(map) = object.as_object_mut()
        && map.get("apiVersion").and_then(Value::as_str) != Some(version.storage_api_version.as_str())
    {
        map.insert("apiVersion".into(), json!(version.storage_api_version));
    }
}
