//! RBAC escalation prevention, as kube-apiserver's `rbac` registry does on every write of
//! an RBAC object (the authorizer alone would let a user who may create Roles and
//! RoleBindings grant itself anything):
//!
//! * a Role or ClusterRole may be created or updated only by a user who already holds
//!   every permission it grants (in the Role's namespace, or cluster-wide), or who may
//!   `escalate` roles/clusterroles;
//! * a RoleBinding or ClusterRoleBinding may be written only by a user who holds every
//!   permission of the role it references, or who may `bind` that role.
//!
//! Members of `system:masters` are not checked; the request path installs [`check`] for
//! each request's writes (see [`crate::admission::checked`]), so writes made outside a
//! request (the harness seeding its objects) are not either. The refusal is
//! kube-apiserver's 403, listing the permissions that are missing.

use std::collections::BTreeMap;

use serde_json::Value;

use super::rbac;
use super::{Attributes, User};
use crate::meta::errors::{ApiError, ApiResult};
use crate::meta::json::string_list;
use crate::resources::ResourceInfo;
use crate::storage::store::State;

const RBAC: &str = "rbac.authorization.k8s.io";

/// Checks a Role, ClusterRole, RoleBinding or ClusterRoleBinding `object` about to be
/// written in `namespace` by `user`; other kinds pass.
pub fn check(
    state: &State,
    user: &User,
    info: &ResourceInfo,
    namespace: &str,
    object: &Value,
) -> ApiResult<()> {
    if info.group != RBAC || rbac::is_superuser(user) {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let granted: Vec<Value> = match info.plural.as_str() {
        "roles" | "clusterroles" => {
            if may(state, user, "escalate", &info.plural, namespace, name) {
                return Ok(());
            }
            object["rules"].as_array().cloned().unwrap_or_default()
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_ref = &object["roleRef"];
            let role_name = role_ref["name"].as_str().unwrap_or_default();
            let (resource, role_namespace) = match role_ref["kind"].as_str() {
                Some("Role") => ("roles", namespace),
                _ => ("clusterroles", ""),
            };
            if may(state, user, "bind", resource, namespace, role_name) {
                return Ok(());
            }
            let role = state.get(&format!("{resource}.{RBAC}"), role_namespace, role_name);
            let Some(role) = role else {
                let kind = role_ref["kind"].as_str().unwrap_or("ClusterRole");
                return Err(forbidden(
                    info,
                    name,
                    format!("{} \"{role_name}\" not found", kind.to_ascii_lowercase()),
                ));
            };
            role["rules"].as_array().cloned().unwrap_or_default()
        }
        _ => return Ok(()),
    };
    let held: Vec<&Value> = rbac::rules_for(state, user, namespace).collect();
    let missing: Vec<Atom> = granted
        .iter()
        .flat_map(atoms)
        .filter(|atom| !held.iter().any(|rule| covers(rule, atom)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    Err(forbidden(
        info,
        name,
        format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            user.name,
            groups.join(" "),
            describe(&missing)
        ),
    ))
}

/// Whether the authorizer allows `user` the special verb on an RBAC resource.
fn may(state: &State, user: &User, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
    let attributes = Attributes {
        user,
        verb,
        group: RBAC,
        resource,
        subresource: "",
        namespace,
        name,
    };
    rbac::authorize(state, &attributes).is_ok()
}

fn forbidden(info: &ResourceInfo, name: &str, reason: String) -> ApiError {
    let message = format!("{}.{RBAC} {name:?} is forbidden: {reason}", info.plural);
    ApiError::forbidden(RBAC, &info.plural, name, message)
}

/// One permission: a verb on one resource (of one group, maybe one name), or on one
/// non-resource URL (kube's `BreakdownRule`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Resource {
        group: String,
        resource: String,
        name: Option<String>,
        verb: String,
    },
    Url {
        url: String,
        verb: String,
    },
}

fn atoms(rule: &Value) -> Vec<Atom> {
    let verbs = string_list(&rule["verbs"]);
    let names = string_list(&rule["resourceNames"]);
    let names: Vec<Option<String>> = if names.is_empty() {
        vec![None]
    } else {
        names.into_iter().map(Some).collect()
    };
    let mut out = Vec::new();
    for group in string_list(&rule["apiGroups"]) {
        for resource in string_list(&rule["resources"]) {
            for verb in &verbs {
                for name in &names {
                    out.push(Atom::Resource {
                        group: group.clone(),
                        resource: resource.clone(),
                        name: name.clone(),
                        verb: verb.clone(),
                    });
                }
            }
        }
    }
    for url in string_list(&rule["nonResourceURLs"]) {
        for verb in &verbs {
            out.push(Atom::Url {
                url: url.clone(),
                verb: verb.clone(),
            });
        }
    }
    out
}

/// kube's `ruleCovers` for one atom: wildcards in the held rule cover anything; a
/// wildcard in the granted rule is covered only by a wildcard.
fn covers(held: &Value, atom: &Atom) -> bool {
    let has = |field: &str, wanted: &str| string_list(&held[field]).iter().any(|v| v == "*" || v == wanted);
    match atom {
        Atom::Resource {
            group,
            resource,
            name,
            verb,
        } => {
            let resources = string_list(&held["resources"]);
            let resource_ok = resources.iter().any(|r| r == "*" || r == resource)
                || resource
                    .split_once('/')
                    .is_some_and(|(_, sub)| resources.iter().any(|r| *r == format!("*/{sub}")));
            let held_names = string_list(&held["resourceNames"]);
            let name_ok = held_names.is_empty() || name.as_ref().is_some_and(|n| held_names.contains(n));
            has("verbs", verb) && has("apiGroups", group) && resource_ok && name_ok
        }
        Atom::Url { url, verb } => {
            let url_ok = string_list(&held["nonResourceURLs"]).iter().any(|held_url| {
                held_url == url
                    || held_url
                        .strip_suffix('*')
                        .is_some_and(|prefix| url.starts_with(prefix))
            });
            has("verbs", verb) && url_ok
        }
    }
}

/// The missing atoms, compacted per resource (or URL) as kube's `CompactString`s, one a
/// line, sorted.
fn describe(missing: &[Atom]) -> String {
    let quoted = |items: &[&str]| {
        items
            .iter()
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut by_target: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for atom in missing {
        let (target, verb) = match atom {
            Atom::Resource {
                group,
                resource,
                name,
                verb,
            } => {
                let names = name
                    .as_ref()
                    .map(|n| format!(", ResourceNames:[{:?}]", n))
                    .unwrap_or_default();
                (
                    format!("APIGroups:[{group:?}], Resources:[{resource:?}]{names}"),
                    verb.as_str(),
                )
            }
            Atom::Url { url, verb } => (format!("NonResourceURLs:[{url:?}]"), verb.as_str()),
        };
        let verbs = by_target.entry(target).or_default();
        if !verbs.contains(&verb) {
            verbs.push(verb);
        }
    }
    let mut lines: Vec<String> = by_target
        .into_iter()
        .map(|(target, verbs)| format!("{{{target}, Verbs:[{}]}}", quoted(&verbs)))
        .collect();
    lines.sort();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn atom(group: &str, resource: &str, verb: &str) -> Atom {
        Atom::Resource {
            group: group.into(),
            resource: resource.into(),
            name: None,
            verb: verb.into(),
        }
    }

    #[test]
    fn a_wildcard_is_covered_only_by_a_wildcard() {
        let get_secrets = json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]});
        assert!(covers(&get_secrets, &atom("", "secrets", "get")));
        assert!(!covers(&get_secrets, &atom("", "secrets", "*")));
        assert!(!covers(&get_secrets, &atom("", "configmaps", "get")));
        let all = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        assert!(covers(&all, &atom("", "secrets", "*")));
        let scale = json!({"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]});
        assert!(covers(&scale, &atom("apps", "deployments/scale", "get")));
        assert!(!covers(&scale, &atom("apps", "deployments", "get")));
    }

    #[test]
    fn resource_names_narrow_what_a_rule_covers() {
        let named =
            json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"], "verbs": ["get"]});
        let granted = json!({"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a", "b"], "verbs": ["get"]});
        let uncovered: Vec<Atom> = atoms(&granted)
            .into_iter()
            .filter(|a| !covers(&named, a))
            .collect();
        assert_eq!(uncovered.len(), 1);
        assert!(
            !covers(&named, &atom("", "secrets", "get")),
            "a named rule never covers all names"
        );
    }

    #[test]
    fn urls_match_exactly_or_by_a_trailing_star() {
        let held = json!({"nonResourceURLs": ["/apis/*"], "verbs": ["get"]});
        let granted = json!({"nonResourceURLs": ["/apis/apps", "/healthz"], "verbs": ["get"]});
        let uncovered: Vec<Atom> = atoms(&granted)
            .into_iter()
            .filter(|a| !covers(&held, a))
            .collect();
        assert_eq!(
            uncovered,
            vec![Atom::Url {
                url: "/healthz".into(),
                verb: "get".into()
            }]
        );
    }

    #[test]
    fn missing_permissions_are_listed_compactly() {
        let missing = atoms(&json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}));
        assert_eq!(
            describe(&missing),
            "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
        );
    }
}
