//! Whether a write is in a policy's `matchConstraints` or a binding's `matchResources`, as
//! kube's `policy/matching` decides: namespace selector, object selector, excluded rules,
//! then resource rules (by `resourceNames` too), exactly or through an equivalent version
//! of the resource (`matchPolicy: Equivalent`, the default).
//!
//! The criteria are parsed once, when their policy or binding is compiled
//! ([`Criteria::parse`]): a write compares strings and labels, nothing is read from JSON.

use std::cell::OnceCell;
use std::sync::Arc;

use serde_json::Value;

use super::Attributes;
use crate::meta::json::string_list;
use crate::meta::selectors::LabelSelector;
use crate::resources::ResourceInfo;
use crate::storage::store::State;

/// The resource a write matched as: the request's own, or an equivalent version of it
/// (the object is then converted to that version before evaluation).
pub type Matched = Arc<ResourceInfo>;

/// `matchConstraints` or `matchResources`, parsed. A malformed selector is kept as its
/// error, reported (a configuration error) only for a write the rules match.
#[derive(Debug)]
pub struct Criteria {
    /// The field is absent or null: every write matches.
    everything: bool,
    /// `matchPolicy: Exact`.
    exact: bool,
    /// `resourceRules` (empty: every resource).
    rules: Vec<Rule>,
    /// `excludeResourceRules`.
    excluded: Vec<Rule>,
    namespace_selector: Result<LabelSelector, String>,
    object_selector: Result<LabelSelector, String>,
}

/// One `NamedRuleWithOperations`.
#[derive(Debug)]
struct Rule {
    operations: Vec<String>,
    api_groups: Vec<String>,
    api_versions: Vec<String>,
    /// `resources` as (resource, subresource): `pods` → (`pods`, ``), `pods/*`, `*/*`.
    resources: Vec<(String, String)>,
    /// `scope` (`*` when absent).
    scope: String,
    resource_names: Vec<String>,
}

impl Criteria {
    /// Parses `criteria` (`null` matches every write).
    pub fn parse(criteria: &Value) -> Self {
        let rules = |field: &str| {
            criteria[field]
                .as_array()
                .into_iter()
                .flatten()
                .map(Rule::parse)
                .collect()
        };
        Self {
            everything: criteria.is_null(),
            exact: criteria["matchPolicy"].as_str() == Some("Exact"),
            rules: rules("resourceRules"),
            excluded: rules("excludeResourceRules"),
            namespace_selector: selector(&criteria["namespaceSelector"], "namespaceSelector"),
            object_selector: selector(&criteria["objectSelector"], "objectSelector"),
        }
    }
}

impl Rule {
    fn parse(rule: &Value) -> Self {
        let list = |field: &str| string_list(&rule[field]);
        let resources = list("resources")
            .into_iter()
            .map(|entry| match entry.split_once('/') {
                Some((resource, sub)) => (resource.to_string(), sub.to_string()),
                None => (entry, String::new()),
            })
            .collect();
        Self {
            operations: list("operations"),
            api_groups: list("apiGroups"),
            api_versions: list("apiVersions"),
            resources,
            scope: rule["scope"].as_str().unwrap_or("*").to_string(),
            resource_names: list("resourceNames"),
        }
    }
}

fn selector(selector: &Value, field: &str) -> Result<LabelSelector, String> {
    if selector.is_null() {
        return Ok(LabelSelector::default());
    }
    LabelSelector::from_object(selector).map_err(|e| format!("invalid {field}: {e}"))
}

/// What every policy's and binding's criteria start from, looked up once per write.
pub struct Written {
    /// The resource written, as the registry serves it.
    resource: Option<Matched>,
    /// The request's namespace, once a selector asked for it.
    namespace: OnceCell<Option<Arc<Value>>>,
}

/// The [`Written`] of a write.
pub fn written(state: &State, attrs: &Attributes<'_>) -> Written {
    Written {
        resource: state
            .registry
            .get(&attrs.info.group, &attrs.info.version, &attrs.info.plural),
        namespace: OnceCell::new(),
    }
}

/// Matches `criteria`; `own`: [`written`]. `Err` is a configuration error (a malformed
/// selector, a missing namespace).
pub fn matches(
    state: &State,
    attrs: &Attributes<'_>,
    written: &Written,
    criteria: &Criteria,
) -> Result<Option<Matched>, String> {
    let own = written.resource.as_ref();
    if criteria.everything {
        return Ok(own.cloned());
    }
    // The rules first: most policies are for other resources, and a write outside the
    // rules is not matched whatever the selectors say (or fail to say).
    let matched = if criteria.rules.is_empty() {
        own.cloned()
    } else {
        rules_match(state, attrs, own, &criteria.rules, criteria.exact)
    };
    let Some(matched) = matched else {
        return Ok(None);
    };
    if rules_match(state, attrs, own, &criteria.excluded, criteria.exact).is_some() {
        return Ok(None);
    }
    let namespace = namespace_matches(state, attrs, written, &criteria.namespace_selector);
    if namespace == Ok(false) {
        return Ok(None);
    }
    let object = object_matches(attrs, &criteria.object_selector);
    if object == Ok(false) {
        return Ok(None);
    }
    namespace?;
    object?;
    Ok(Some(matched))
}

/// The first rule of `rules` the write matches, with the resource it matched as.
fn rules_match(
    state: &State,
    attrs: &Attributes<'_>,
    own: Option<&Matched>,
    rules: &[Rule],
    exact: bool,
) -> Option<Matched> {
    let own = own.filter(|_| !rules.is_empty())?;
    if rules.iter().any(|rule| rule.matches(attrs, own)) {
        return Some(own.clone());
    }
    // Another version can only match a rule that lists everything else of the write.
    if exact || !rules.iter().any(|rule| rule.matches_but_the_version(attrs, own)) {
        return None;
    }
    let equivalents = state.registry.all().filter(|other| {
        other.group == own.group && other.plural == own.plural && other.version != own.version
    });
    for equivalent in equivalents {
        if rules.iter().any(|rule| rule.matches(attrs, equivalent)) {
            return Some(equivalent.clone());
        }
    }
    None
}

impl Rule {
    /// The rule against the write seen as `resource`.
    fn matches(&self, attrs: &Attributes<'_>, resource: &ResourceInfo) -> bool {
        listed(&self.api_versions, &resource.version) && self.matches_but_the_version(attrs, resource)
    }

    /// [`Self::matches`] for any version of `resource`.
    fn matches_but_the_version(&self, attrs: &Attributes<'_>, resource: &ResourceInfo) -> bool {
        listed(&self.operations, attrs.operation.as_str())
            && listed(&self.api_groups, &resource.group)
            && self.resource_listed(&resource.plural, attrs.subresource)
            && self.scope_matches(attrs)
            && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == attrs.name))
    }

    /// `resources`: `pods` (the resource only), `pods/status`, `pods/*` (the resource and
    /// every subresource), `*` (every resource), `*/*` (everything), `*/status`.
    fn resource_listed(&self, plural: &str, subresource: &str) -> bool {
        self.resources.iter().any(|(resource, sub)| {
            (resource == "*" || resource == plural) && (sub == "*" || sub == subresource)
        })
    }

    /// `scope`: `*` (default), `Cluster` (cluster-scoped resources and namespaces),
    /// `Namespaced`.
    fn scope_matches(&self, attrs: &Attributes<'_>) -> bool {
        let is_namespace = attrs.info.group.is_empty() && attrs.info.plural == "namespaces";
        let namespaced = !attrs.namespace.is_empty() && !is_namespace;
        match self.scope.as_str() {
            "Namespaced" => namespaced,
            "Cluster" => !namespaced,
            _ => true,
        }
    }
}

/// `namespaceSelector`: the labels of the request's namespace; of the object itself for
/// a Namespace; every other cluster-scoped write matches.
fn namespace_matches(
    state: &State,
    attrs: &Attributes<'_>,
    written: &Written,
    selector: &Result<LabelSelector, String>,
) -> Result<bool, String> {
    let selector = selector.as_ref().map_err(Clone::clone)?;
    if selector.is_empty() {
        return Ok(true);
    }
    let is_namespace = attrs.info.group.is_empty() && attrs.info.plural == "namespaces";
    if is_namespace {
        let object = attrs.object.or(attrs.old);
        return Ok(object.is_some_and(|o| selector.matches(o)));
    }
    if attrs.namespace.is_empty() {
        return Ok(true);
    }
    let namespace = written
        .namespace
        .get_or_init(|| state.get("namespaces", "", attrs.namespace).cloned());
    match namespace {
        Some(namespace) => Ok(selector.matches(namespace)),
        None => Err(format!("namespaces \"{}\" not found", attrs.namespace)),
    }
}

/// `objectSelector`: the labels of the new object or of the old one.
fn object_matches(attrs: &Attributes<'_>, selector: &Result<LabelSelector, String>) -> Result<bool, String> {
    let selector = selector.as_ref().map_err(Clone::clone)?;
    if selector.is_empty() {
        return Ok(true);
    }
    Ok([attrs.object, attrs.old]
        .into_iter()
        .flatten()
        .any(|o| selector.matches(o)))
}

/// `value` is in `items`, or `items` has `*`.
fn listed(items: &[String], value: &str) -> bool {
    items.iter().any(|item| item == "*" || item == value)
}
