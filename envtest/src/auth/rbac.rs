//! The RBAC authorizer, as kube-apiserver's: a request is allowed when a rule of a Role or
//! ClusterRole bound to the user (by name, group or ServiceAccount) allows it. Members of
//! `system:masters` are allowed everything (the real server's superuser group).
//!
//! Aggregated ClusterRoles (`aggregationRule`) are not expanded.

use serde_json::{Value, json};

use crate::auth::{Attributes, User};
use crate::meta::errors::{ApiError, ApiResult};
use crate::storage::store::State;

const RBAC: &str = "rbac.authorization.k8s.io";

/// One request the authorizer refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// Who asked.
    pub user: String,
    /// The Forbidden message, naming the verb, resource and namespace.
    pub message: String,
}

/// Every refused request, so a suite can fail on any Forbidden its controllers met.
#[derive(Debug, Default)]
pub struct Denials(std::sync::Mutex<Vec<Denial>>);

impl Denials {
    /// Records a refusal.
    pub fn record(&self, user: &User, error: &ApiError) {
        let denial = Denial {
            user: user.name.clone(),
            message: error.message.clone(),
        };
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(denial);
    }

    /// All refusals so far.
    pub fn all(&self) -> Vec<Denial> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// The group whose members bypass authorization.
pub const SUPERUSER_GROUP: &str = "system:masters";

/// Decides a resource request.
pub fn authorize(state: &State, attributes: &Attributes<'_>) -> ApiResult<()> {
    let user = attributes.user;
    if is_superuser(user) || rules_for(state, user, attributes.namespace).any(|rule| allows(rule, attributes))
    {
        return Ok(());
    }
    Err(resource_forbidden(attributes))
}

/// Decides a non-resource request (discovery, `/version`, `/openapi/...`).
pub fn authorize_path(state: &State, user: &User, verb: &str, path: &str) -> ApiResult<()> {
    if is_superuser(user) || rules_for(state, user, "").any(|rule| allows_path(rule, verb, path)) {
        return Ok(());
    }
    Err(ApiError::forbidden(
        "",
        "",
        "",
        format!("forbidden: User \"{}\" cannot {verb} path \"{path}\"", user.name),
    ))
}

/// The default ClusterRoles and ClusterRoleBindings every kube-apiserver bootstraps that
/// matter to an ordinary client: discovery and health/version for authenticated users.
pub fn bootstrap_policy() -> Vec<Value> {
    let discovery_urls = [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ];
    let public_urls = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    let role = |name: &str, urls: &[&str]| {
        json!({
            "apiVersion": format!("{RBAC}/v1"),
            "kind": "ClusterRole",
            "metadata": {
                "name": name,
                "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" },
                "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" }
            },
            "rules": [{ "nonResourceURLs": urls, "verbs": ["get"] }]
        })
    };
    let binding = |name: &str, groups: &[&str]| {
        json!({
            "apiVersion": format!("{RBAC}/v1"),
            "kind": "ClusterRoleBinding",
            "metadata": {
                "name": name,
                "labels": { "kubernetes.io/bootstrapping": "rbac-defaults" },
                "annotations": { "rbac.authorization.kubernetes.io/autoupdate": "true" }
            },
            "roleRef": { "apiGroup": RBAC, "kind": "ClusterRole", "name": name },
            "subjects": groups.iter().map(|g| json!({ "apiGroup": RBAC, "kind": "Group", "name": g })).collect::<Vec<_>>()
        })
    };
    vec![
        role("system:discovery", &discovery_urls),
        binding("system:discovery", &["system:authenticated"]),
        role("system:public-info-viewer", &public_urls),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ]
}

fn is_superuser(user: &User) -> bool {
    user.groups.iter().any(|g| g == SUPERUSER_GROUP)
}

/// The rules of every role bound to `user` cluster-wide, and in `namespace` if given.
fn rules_for<'s>(
    state: &'s State,
    user: &'s User,
    namespace: &'s str,
) -> impl Iterator<Item = &'s Value> + 's {
    let cluster_bindings = collection(state, "clusterrolebindings")
        .filter(move |binding| binds(binding, user, ""))
        .filter_map(move |binding| role_of(state, binding, ""));
    let namespace_bindings = collection(state, "rolebindings")
        .filter(move |binding| !namespace.is_empty() && binding["metadata"]["namespace"] == namespace)
        .filter(move |binding| binds(binding, user, namespace))
        .filter_map(move |binding| role_of(state, binding, namespace));
    cluster_bindings
        .chain(namespace_bindings)
        .flat_map(|role| role["rules"].as_array().into_iter().flatten())
}

fn collection<'s>(state: &'s State, plural: &str) -> impl Iterator<Item = &'s Value> + 's {
    state
        .collections
        .get(&format!("{plural}.{RBAC}"))
        .into_iter()
        .flat_map(|c| c.values())
        .map(|v| v.as_ref())
}

fn role_of<'s>(state: &'s State, binding: &Value, namespace: &str) -> Option<&'s Value> {
    let role_ref = &binding["roleRef"];
    let name = role_ref["name"].as_str()?;
    match role_ref["kind"].as_str()? {
        "ClusterRole" => state
            .get(&format!("clusterroles.{RBAC}"), "", name)
            .map(|v| v.as_ref()),
        "Role" if !namespace.is_empty() => state
            .get(&format!("roles.{RBAC}"), namespace, name)
            .map(|v| v.as_ref()),
        _ => None,
    }
}

/// Whether a binding's subjects include the user. A ServiceAccount subject without a
/// namespace takes the binding's (as RoleBindings allow).
fn binds(binding: &Value, user: &User, binding_namespace: &str) -> bool {
    binding["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|subject| {
            let name = subject["name"].as_str().unwrap_or_default();
            match subject["kind"].as_str() {
                Some("User") => user.name == name,
                Some("Group") => user.groups.iter().any(|g| g == name),
                Some("ServiceAccount") => {
                    let namespace = subject["namespace"]
                        .as_str()
                        .filter(|n| !n.is_empty())
                        .unwrap_or(binding_namespace);
                    user.name == format!("system:serviceaccount:{namespace}:{name}")
                }
                _ => false,
            }
        })
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value.as_array().into_iter().flatten().filter_map(Value::as_str)
}

fn allows(rule: &Value, attributes: &Attributes<'_>) -> bool {
    let verb_ok = strings(&rule["verbs"]).any(|v| v == "*" || v == attributes.verb);
    let group_ok = strings(&rule["apiGroups"]).any(|g| g == "*" || g == attributes.group);
    let combined = if attributes.subresource.is_empty() {
        attributes.resource.to_owned()
    } else {
        format!("{}/{}", attributes.resource, attributes.subresource)
    };
    let resource_ok = strings(&rule["resources"]).any(|r| {
        r == "*"
            || r == combined
            || (!attributes.subresource.is_empty() && r.strip_prefix("*/") == Some(attributes.subresource))
    });
    let mut names = strings(&rule["resourceNames"]).peekable();
    let name_ok =
        names.peek().is_none() || (!attributes.name.is_empty() && names.any(|n| n == attributes.name));
    verb_ok && group_ok && resource_ok && name_ok
}

fn allows_path(rule: &Value, verb: &str, path: &str) -> bool {
    let verb_ok = strings(&rule["verbs"]).any(|v| v == "*" || v == verb);
    let path_ok = strings(&rule["nonResourceURLs"]).any(|url| {
        url == "*"
            || url == path
            || url
                .strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    });
    verb_ok && path_ok
}

/// kube-apiserver's wording: `configmaps "x" is forbidden: User "u" cannot get resource
/// "configmaps" in API group "" in the namespace "ns"`.
fn resource_forbidden(a: &Attributes<'_>) -> ApiError {
    let combined = if a.subresource.is_empty() {
        a.resource.to_owned()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let qualified = if a.group.is_empty() {
        a.resource.to_owned()
    } else {
        format!("{}.{}", a.resource, a.group)
    };
    let subject = if a.name.is_empty() {
        qualified
    } else {
        format!("{qualified} \"{}\"", a.name)
    };
    let scope = if a.namespace.is_empty() {
        "at the cluster scope".to_owned()
    } else {
        format!("in the namespace \"{}\"", a.namespace)
    };
    let message = format!(
        "{subject} is forbidden: User \"{}\" cannot {} resource \"{combined}\" in API group \"{}\" {scope}",
        a.user.name, a.verb, a.group
    );
    ApiError::forbidden(a.group, a.resource, a.name, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> User {
        User::new(name, groups)
    }

    fn attributes<'a>(
        user: &'a User,
        verb: &'a str,
        resource: &'a str,
        subresource: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            verb,
            group: "",
            resource,
            subresource,
            namespace: "ns",
            name,
        }
    }

    #[test]
    fn rule_matching_follows_kube_rbac() {
        let bob = user("bob", &[]);
        let rule =
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps", "pods/status"]});
        assert!(allows(&rule, &attributes(&bob, "get", "configmaps", "", "a")));
        assert!(!allows(&rule, &attributes(&bob, "delete", "configmaps", "", "a")));
        assert!(
            !allows(&rule, &attributes(&bob, "get", "pods", "", "a")),
            "pods/status does not grant pods"
        );
        assert!(allows(&rule, &attributes(&bob, "get", "pods", "status", "a")));
        let wildcard = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/scale"]});
        assert!(allows(
            &wildcard,
            &attributes(&bob, "patch", "machinesets", "scale", "a")
        ));
        assert!(!allows(
            &wildcard,
            &attributes(&bob, "patch", "machinesets", "", "a")
        ));
        let named = json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s1"]});
        assert!(allows(&named, &attributes(&bob, "get", "secrets", "", "s1")));
        assert!(!allows(&named, &attributes(&bob, "get", "secrets", "", "s2")));
        assert!(
            !allows(&named, &attributes(&bob, "list", "secrets", "", "")),
            "resourceNames never allow a list"
        );
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star() {
        let rule = json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/version"]});
        assert!(allows_path(&rule, "get", "/apis/apps/v1"));
        assert!(allows_path(&rule, "get", "/version"));
        assert!(!allows_path(&rule, "get", "/api"));
        assert!(!allows_path(&rule, "post", "/version"));
    }

    #[test]
    fn service_account_subjects_take_the_binding_namespace() {
        let sa = user("system:serviceaccount:ns:operator", &["system:serviceaccounts"]);
        let binding = json!({"subjects": [{"kind": "ServiceAccount", "name": "operator"}]});
        assert!(binds(&binding, &sa, "ns"));
        assert!(!binds(&binding, &sa, "other"));
        let group = json!({"subjects": [{"kind": "Group", "name": "system:serviceaccounts"}]});
        assert!(binds(&group, &sa, ""));
    }

    #[test]
    fn forbidden_messages_are_worded_as_kube_apiserver() {
        let bob = user("bob", &[]);
        let error = resource_forbidden(&attributes(&bob, "list", "configmaps", "", ""));
        assert_eq!(
            error.message,
            "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"ns\""
        );
        let mut a = attributes(&bob, "get", "machines", "status", "m1");
        a.group = "machine.openshift.io";
        a.namespace = "";
        assert_eq!(
            resource_forbidden(&a).message,
            "machines.machine.openshift.io \"m1\" is forbidden: User \"bob\" cannot get resource \"machines/status\" in API group \"machine.openshift.io\" at the cluster scope"
        );
    }
}
