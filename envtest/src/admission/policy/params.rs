//! The params a binding gives its policy (`paramKind` + `paramRef`), as kube's
//! `CollectParams`: none asked → one evaluation without params; by name or by selector, in
//! `paramRef.namespace` or the request's; nothing found → no evaluation, or a denial with
//! `parameterNotFoundAction: Deny`.

use std::sync::Arc;

use serde_json::Value;

use crate::meta::selectors::LabelSelector;
use crate::resources::ResourceInfo;
use crate::storage::store::{Collection, State};

/// What to evaluate the policy with: once per param (`None`: without params).
pub type Params = Vec<Option<Arc<Value>>>;

/// The served resource of a policy's `paramKind`, or kube's configuration error.
pub fn resource(state: &State, api_version: &str, kind: &str) -> Result<Arc<ResourceInfo>, String> {
    state.registry.by_kind(api_version, kind).ok_or_else(|| {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        format!("failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'")
    })
}

/// The params of one binding (`param_kind`: the policy's, resolved). `only_named`: keep
/// only the param of that name (see [`super::compiled::Policy::params_by_name`]); whether
/// any param was found, for `parameterNotFoundAction: Deny`, still counts them all.
pub fn collect(
    state: &State,
    param_kind: Option<&ResourceInfo>,
    param_ref: &Value,
    request_namespace: &str,
    only_named: Option<&str>,
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
    let found = Found::new(state, kind, namespace, param_ref)?;
    let kept = found.kept(only_named);
    if kept.is_empty() && text("parameterNotFoundAction") == "Deny" && !found.any() {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(kept.into_iter().map(Some).collect())
}

/// The params a `paramRef` selects in a namespace, read from the store without copying.
struct Found<'s> {
    objects: Option<&'s Collection>,
    namespace: &'s str,
    name: &'s str,
    selector: Option<LabelSelector>,
}

impl<'s> Found<'s> {
    fn new(
        state: &'s State,
        kind: &ResourceInfo,
        namespace: &'s str,
        param_ref: &'s Value,
    ) -> Result<Self, String> {
        let name = param_ref["name"].as_str().unwrap_or_default();
        let selector = match (name, param_ref.get("selector").filter(|s| !s.is_null())) {
            ("", None) => return Err("one of name or selector must be provided".into()),
            (_, Some(_)) if !name.is_empty() => {
                return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
            }
            (_, Some(selector)) => Some(LabelSelector::from_object(selector)?),
            (_, None) => None,
        };
        let objects = state.collections.get(&kind.storage_key());
        Ok(Self {
            objects,
            namespace,
            name,
            selector,
        })
    }

    fn get(&self, name: &str) -> Option<&'s Arc<Value>> {
        let object = self.objects?.get(&(self.namespace.to_owned(), name.to_owned()))?;
        self.selector
            .as_ref()
            .is_none_or(|s| s.matches(object))
            .then_some(object)
    }

    /// Every selected param of the namespace, in name order.
    fn all(&self) -> impl Iterator<Item = &'s Arc<Value>> + '_ {
        let start = (self.namespace.to_owned(), String::new());
        self.objects
            .into_iter()
            .flat_map(move |c| c.range(start.clone()..))
            .take_while(|((ns, _), _)| ns == self.namespace)
            .map(|(_, o)| o)
            .filter(|o| self.selector.as_ref().is_some_and(|s| s.matches(o)))
    }

    fn kept(&self, only_named: Option<&str>) -> Vec<Arc<Value>> {
        match (self.selector.is_some(), only_named) {
            (false, Some(wanted)) if wanted != self.name => Vec::new(),
            (false, _) => self.get(self.name).cloned().into_iter().collect(),
            (true, Some(wanted)) => self.get(wanted).cloned().into_iter().collect(),
            (true, None) => self.all().cloned().collect(),
        }
    }

    fn any(&self) -> bool {
        match self.selector {
            None => self.get(self.name).is_some(),
            Some(_) => self.all().next().is_some(),
        }
    }
}
