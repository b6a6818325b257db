//! Impersonation (`kubectl --as`, `--as-group`, `--as-uid`), as kube-apiserver's
//! impersonation filter: the authenticated user must be allowed the `impersonate` verb on
//! `users`, `groups`, `serviceaccounts` (for `system:serviceaccount:<ns>:<name>`) and
//! `uids.authentication.k8s.io` for each value asked for; a refusal is 403 naming the first
//! one refused. The request then runs as the impersonated user, who is `system:authenticated`
//! (and, for a service account, in `system:serviceaccounts` and
//! `system:serviceaccounts:<ns>`).
//!
//! Not implemented: `Impersonate-Extra-*` headers are refused with 400 rather than
//! authorized on `userextras`, as no client of this project sends them.

use http::HeaderMap;

use crate::auth::rbac;
use crate::auth::{Attributes, User};
use crate::meta::errors::{ApiError, ApiResult};
use crate::storage::store::State;

/// `Impersonate-User`.
pub const USER: &str = "impersonate-user";
/// `Impersonate-Group` (repeated).
pub const GROUP: &str = "impersonate-group";
/// `Impersonate-Uid`.
pub const UID: &str = "impersonate-uid";

fn values<'h>(headers: &'h HeaderMap, name: &str) -> Vec<&'h str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// The user a request runs as: `user` itself without impersonation headers, else the
/// impersonated user once `user` is allowed to impersonate every part of it.
pub fn effective_user(state: &State, user: User, headers: &HeaderMap) -> ApiResult<User> {
    let name = values(headers, USER).first().map(|s| s.to_string());
    let groups: Vec<String> = values(headers, GROUP).into_iter().map(String::from).collect();
    let uid = values(headers, UID).first().map(|s| s.to_string());
    if headers
        .keys()
        .any(|k| k.as_str().starts_with("impersonate-extra-"))
    {
        return Err(ApiError::bad_request(
            "impersonating user extras (Impersonate-Extra-*) is not supported by this server",
        ));
    }
    let Some(name) = name else {
        if groups.is_empty() && uid.is_none() {
            return Ok(user);
        }
        return Err(ApiError::internal(format!(
            "requested {} without impersonating a user",
            describe(&groups, uid.as_deref())
        )));
    };
    let check = |resource: &str, group: &str, namespace: &str, object: &str| {
        rbac::authorize(
            state,
            &Attributes {
                user: &user,
                verb: "impersonate",
                group,
                resource,
                subresource: "",
                namespace,
                name: object,
            },
        )
    };
    let mut impersonated_groups = groups.clone();
    if let Some(rest) = name.strip_prefix("system:serviceaccount:")
        && let Some((namespace, account)) = rest.split_once(':')
    {
        check("serviceaccounts", "", namespace, account)?;
        if groups.is_empty() {
            impersonated_groups = vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
            ];
        }
    } else {
        check("users", "", "", &name)?;
    }
    for group in &groups {
        check("groups", "", "", group)?;
    }
    if let Some(uid) = &uid {
        check("uids", "authentication.k8s.io", "", uid)?;
    }
    if name != "system:anonymous" && !impersonated_groups.iter().any(|g| g == "system:authenticated") {
        impersonated_groups.push("system:authenticated".into());
    }
    Ok(User {
        name,
        groups: impersonated_groups,
        token: String::new(),
    })
}

fn describe(groups: &[String], uid: Option<&str>) -> String {
    let mut parts: Vec<String> = groups.iter().map(|g| format!("group {g:?}")).collect();
    if let Some(uid) = uid {
        parts.push(format!("uid {uid:?}"));
    }
    parts.join(", ")
}
