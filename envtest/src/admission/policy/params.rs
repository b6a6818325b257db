//! The params a binding gives its policy (`paramKind` + `paramRef`), as kube's
//! `CollectParams`: none asked → one evaluation without params; by name or by selector, in
//! `paramRef.namespace` or the request's; nothing found → no evaluation, or a denial with
//! `parameterNotFoundAction: Deny`.

use std::sync::Arc;

use serde_json::Value;

use crate::meta::selectors::LabelSelector;
use crate::resources::ResourceInfo;
use crate::storage::store::State;

/// What to evaluate the policy with: once per param (`None`: without params).
pub type Params = Vec<Option<Arc<Value>>>;

/// The served resource of a policy's `paramKind`, or kube's configuration error.
pub fn resource(state: &State, api_version: &str, kind: &str) -> Result<Arc<ResourceInfo>, String> {
    state.registry.by_kind(api_version, kind).ok_or_else(|| {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        format!("failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'")
    })
}

/// The params of one binding (`param_kind`: the policy's, resolved).
pub fn collect(
    state: &State,
    param_kind: Option<&ResourceInfo>,
    param_ref: &Value,
    request_namespace: &str,
) -> Result<Params, String> {
    let (Some(kind), true) = (param_kind, param_ref.is_object()) else {
        return Ok(vec![None]);
    };
    let text = |k: &str| param_ref[k].as_str().unwrap_or_default();
    let namespace = if !kind.namespaced {
        if !text("namespace").is_empty() {
            return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into());
        }
        ""
    } else if !text("namespace").is_empty() {
        text("namespace")
    } else if request_namespace.is_empty() {
        return Err(
            "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into(),
        );
    } else {
        request_namespace
    };
    let found = find(state, kind, namespace, param_ref)?;
    if found.is_empty() && text("parameterNotFoundAction") == "Deny" {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(found.into_iter().map(Some).collect())
}

fn find(
    state: &State,
    kind: &ResourceInfo,
    namespace: &str,
    param_ref: &Value,
) -> Result<Vec<Arc<Value>>, String> {
    let key = kind.storage_key();
    let name = param_ref["name"].as_str().unwrap_or_default();
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    match (name, selector) {
        ("", None) => Err("one of name or selector must be provided".into()),
        (_, Some(_)) if !name.is_empty() => {
            Err("paramRef.name and paramRef.selector are mutually exclusive".into())
        }
        (name, None) => Ok(state.get(&key, namespace, name).cloned().into_iter().collect()),
        (_, Some(selector)) => {
            let selector = LabelSelector::from_object(selector)?;
            Ok(state
                .collections
                .get(&key)
                .into_iter()
                .flat_map(|c| c.iter())
                .filter(|((ns, _), o)| ns == namespace && selector.matches(o))
                .map(|(_, o)| o.clone())
                .collect())
        }
    }
}
