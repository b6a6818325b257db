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

/// A binding's `paramRef`, parsed when the binding is compiled.
#[derive(Debug)]
pub struct ParamRef {
    namespace: String,
    /// By name or by selector, or why neither (a configuration error).
    source: Result<Source, String>,
    /// `parameterNotFoundAction: Deny`.
    deny_when_missing: bool,
}

#[derive(Debug)]
enum Source {
    Name(String),
    Selector(LabelSelector),
}

impl ParamRef {
    /// Parses `paramRef` (`None` when absent: the policy runs without params).
    pub fn parse(param_ref: &Value) -> Option<Self> {
        if !param_ref.is_object() {
            return None;
        }
        let text = |k: &str| param_ref[k].as_str().unwrap_or_default().to_string();
        let name = text("name");
        let source = match (
            name.is_empty(),
            param_ref.get("selector").filter(|s| !s.is_null()),
        ) {
            (true, None) => Err("one of name or selector must be provided".to_string()),
            (false, Some(_)) => Err("paramRef.name and paramRef.selector are mutually exclusive".to_string()),
            (true, Some(selector)) => LabelSelector::from_object(selector).map(Source::Selector),
            (false, None) => Ok(Source::Name(name)),
        };
        Some(Self {
            namespace: text("namespace"),
            source,
            deny_when_missing: text("parameterNotFoundAction") == "Deny",
        })
    }
}

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
    param_ref: Option<&ParamRef>,
    request_namespace: &str,
    only_named: Option<&str>,
) -> Result<Params, String> {
    let (Some(kind), Some(param_ref)) = (param_kind, param_ref) else {
        return Ok(vec![None]);
    };
    let namespace = if !kind.namespaced {
        if !param_ref.namespace.is_empty() {
            return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into());
        }
        ""
    } else if !param_ref.namespace.is_empty() {
        &param_ref.namespace
    } else if request_namespace.is_empty() {
        return Err(
            "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into(),
        );
    } else {
        request_namespace
    };
    let found = Found {
        objects: state.collections.get(&kind.storage_key()),
        namespace,
        source: param_ref.source.as_ref().map_err(Clone::clone)?,
    };
    let kept = found.kept(only_named);
    if kept.is_empty() && param_ref.deny_when_missing && !found.any() {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(kept.into_iter().map(Some).collect())
}

/// The params a `paramRef` selects in a namespace, read from the store without copying.
struct Found<'s> {
    objects: Option<&'s Collection>,
    namespace: &'s str,
    source: &'s Source,
}

impl<'s> Found<'s> {
    fn get(&self, name: &str) -> Option<&'s Arc<Value>> {
        let object = self.objects?.get(&(self.namespace.to_owned(), name.to_owned()))?;
        match self.source {
            Source::Selector(selector) => selector.matches(object).then_some(object),
            Source::Name(_) => Some(object),
        }
    }

    /// Every selected param of the namespace, in name order.
    fn all(&self) -> impl Iterator<Item = &'s Arc<Value>> + '_ {
        let start = (self.namespace.to_owned(), String::new());
        let selector = match self.source {
            Source::Selector(selector) => Some(selector),
            Source::Name(_) => None,
        };
        self.objects
            .into_iter()
            .flat_map(move |c| c.range(start.clone()..))
            .take_while(|((ns, _), _)| ns == self.namespace)
            .map(|(_, o)| o)
            .filter(move |o| selector.is_some_and(|s| s.matches(o)))
    }

    fn kept(&self, only_named: Option<&str>) -> Vec<Arc<Value>> {
        match (self.source, only_named) {
            (Source::Name(name), Some(wanted)) if wanted != name => Vec::new(),
            (Source::Name(name), _) => self.get(name).cloned().into_iter().collect(),
            (Source::Selector(_), Some(wanted)) => self.get(wanted).cloned().into_iter().collect(),
            (Source::Selector(_), None) => self.all().cloned().collect(),
        }
    }

    fn any(&self) -> bool {
        match self.source {
            Source::Name(name) => self.get(name).is_some(),
            Source::Selector(_) => self.all().next().is_some(),
        }
    }
}
