//! Whether a write is in a policy's `matchConstraints` or a binding's `matchResources`, as
//! kube's `policy/matching` decides: namespace selector, object selector, excluded rules,
//! then resource rules (by `resourceNames` too), exactly or through an equivalent version
//! of the resource (`matchPolicy: Equivalent`, the default).

use std::sync::Arc;

use serde_json::Value;

use super::Attributes;
use crate::meta::selectors::LabelSelector;
use crate::resources::ResourceInfo;
use crate::storage::store::State;

/// The resource a write matched as: the request's own, or an equivalent version of it
/// (the object is then converted to that version before evaluation).
pub type Matched = Arc<ResourceInfo>;

/// Matches `criteria` (`matchConstraints` or `matchResources`; `null` matches every
/// write). `Err` is a configuration error (a malformed selector, a missing namespace).
pub fn matches(state: &State, attrs: &Attributes<'_>, criteria: &Value) -> Result<Option<Matched>, String> {
    let request_resource = || {
        state
            .registry
            .get(&attrs.info.group, &attrs.info.version, &attrs.info.plural)
    };
    if criteria.is_null() {
        return Ok(request_resource());
    }
    // The rules first: most policies are for other resources, and a write outside the
    // rules is not matched whatever the selectors say (or fail to say).
    let exact = criteria["matchPolicy"].as_str() == Some("Exact");
    let rules = &criteria["resourceRules"];
    let matched = if rules.as_array().is_none_or(Vec::is_empty) {
        request_resource()
    } else {
        rules_match(state, attrs, rules, exact)
    };
    let Some(matched) = matched else {
        return Ok(None);
    };
    if rules_match(state, attrs, &criteria["excludeResourceRules"], exact).is_some() {
        return Ok(None);
    }
    let namespace = namespace_matches(state, attrs, &criteria["namespaceSelector"]);
    if namespace == Ok(false) {
        return Ok(None);
    }
    let object = object_matches(attrs, &criteria["objectSelector"]);
    if object == Ok(false) {
        return Ok(None);
    }
    namespace?;
    object?;
    Ok(Some(matched))
}

/// The first rule of `rules` the write matches, with the resource it matched as.
fn rules_match(state: &State, attrs: &Attributes<'_>, rules: &Value, exact: bool) -> Option<Matched> {
    let rules = rules.as_array()?;
    let own = state
        .registry
        .get(&attrs.info.group, &attrs.info.version, &attrs.info.plural)?;
    if rules.iter().any(|rule| rule_matches(rule, attrs, &own)) {
        return Some(own);
    }
    if exact {
        return None;
    }
    let equivalents = state.registry.all().filter(|other| {
        other.group == own.group && other.plural == own.plural && other.version != own.version
    });
    for equivalent in equivalents {
        if rules.iter().any(|rule| rule_matches(rule, attrs, equivalent)) {
            return Some(equivalent.clone());
        }
    }
    None
}

/// One `NamedRuleWithOperations` against the write seen as `resource`.
fn rule_matches(rule: &Value, attrs: &Attributes<'_>, resource: &ResourceInfo) -> bool {
    let listed = |field: &str, value: &str| {
        rule[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|item| item == "*" || item == value)
    };
    listed("operations", attrs.operation.as_str())
        && listed("apiGroups", &resource.group)
        && listed("apiVersions", &resource.version)
        && resource_listed(rule, &resource.plural, attrs.subresource)
        && scope_matches(rule["scope"].as_str(), attrs)
        && names_match(rule, attrs.name)
}

/// `resources`: `pods` (the resource only), `pods/status`, `pods/*` (the resource and
/// every subresource), `*` (every resource), `*/*` (everything), `*/status`.
fn resource_listed(rule: &Value, plural: &str, subresource: &str) -> bool {
    rule["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|entry| {
            let (resource, sub) = entry.split_once('/').unwrap_or((entry, ""));
            (resource == "*" || resource == plural) && (sub == "*" || sub == subresource)
        })
}

/// `scope`: `*` (default), `Cluster` (cluster-scoped resources and namespaces), `Namespaced`.
fn scope_matches(scope: Option<&str>, attrs: &Attributes<'_>) -> bool {
    let is_namespace = attrs.info.group.is_empty() && attrs.info.plural == "namespaces";
    let namespaced = !attrs.namespace.is_empty() && !is_namespace;
    match scope {
        Some("Namespaced") => namespaced,
        Some("Cluster") => !namespaced,
        _ => true,
    }
}

fn names_match(rule: &Value, name: &str) -> bool {
    match rule["resourceNames"].as_array() {
        Some(names) if !names.is_empty() => names.iter().any(|n| n.as_str() == Some(name)),
        _ => true,
    }
}

/// `namespaceSelector`: the labels of the request's namespace; of the object itself for
/// a Namespace; every other cluster-scoped write matches.
fn namespace_matches(state: &State, attrs: &Attributes<'_>, selector: &Value) -> Result<bool, String> {
    let selector = parse(selector, "namespaceSelector")?;
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
    match state.get("namespaces", "", attrs.namespace) {
        Some(namespace) => Ok(selector.matches(namespace)),
        None => Err(format!("namespaces \"{}\" not found", attrs.namespace)),
    }
}

/// `objectSelector`: the labels of the new object or of the old one.
fn object_matches(attrs: &Attributes<'_>, selector: &Value) -> Result<bool, String> {
    let selector = parse(selector, "objectSelector")?;
    if selector.is_empty() {
        return Ok(true);
    }
    Ok([attrs.object, attrs.old]
        .into_iter()
        .flatten()
        .any(|o| selector.matches(o)))
}

fn parse(selector: &Value, field: &str) -> Result<LabelSelector, String> {
    if selector.is_null() {
        return Ok(LabelSelector::default());
    }
    LabelSelector::from_object(selector).map_err(|e| format!("invalid {field}: {e}"))
}
