//! The create-only review resources clients ask the authorizer and the authenticator
//! through (`kubectl auth can-i`, `kubectl auth whoami`, webhook-style checks):
//! `authorization.k8s.io/v1` SelfSubjectAccessReview, SubjectAccessReview and
//! LocalSubjectAccessReview, and `authentication.k8s.io/v1` SelfSubjectReview. Nothing is
//! stored: the answer is the request with its `status` filled in (201), as kube-apiserver's
//! registries for them do.
//!
//! Differences: an allowed review carries no `reason` (kube's RBAC names the binding that
//! allowed it); `extra` and `uid` of a SubjectAccessReview play no part in RBAC, as in kube.

use serde_json::{Value, json};

use crate::auth::rbac;
use crate::auth::{Attributes, User};
use crate::meta::errors::{ApiError, ApiResult, invalid_value, required};
use crate::resources::ResourceInfo;
use crate::storage::store::State;

/// API group of the access reviews.
pub const AUTHORIZATION: &str = "authorization.k8s.io";
/// API group of SelfSubjectReview.
pub const AUTHENTICATION: &str = "authentication.k8s.io";

/// Whether `info` is one of the review resources.
pub fn is_review(info: &ResourceInfo) -> bool {
    matches!(
        (info.group.as_str(), info.plural.as_str()),
        (
            AUTHORIZATION,
            "selfsubjectaccessreviews" | "subjectaccessreviews" | "localsubjectaccessreviews"
        ) | (AUTHENTICATION, "selfsubjectreviews")
    )
}

/// Answers a create of a review resource by `user` (in `namespace` for the local review).
pub fn create(
    state: &State,
    info: &ResourceInfo,
    user: &User,
    namespace: &str,
    body: &Value,
) -> ApiResult<Value> {
    let mut review = json!({
        "kind": info.kind,
        "apiVersion": info.api_version(),
        "metadata": body.get("metadata").cloned().unwrap_or_else(|| json!({})),
    });
    if let Some(meta) = review["metadata"].as_object_mut() {
        meta.insert("creationTimestamp".into(), Value::Null);
    }
    if info.plural == "selfsubjectreviews" {
        review["status"] = json!({"userInfo": user_info(user)});
        return Ok(review);
    }
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let subject = match info.plural.as_str() {
        "selfsubjectaccessreviews" => user.clone(),
        _ => subject_of(info, &spec)?,
    };
    if info.plural == "localsubjectaccessreviews" {
        let asked = spec["resourceAttributes"]["namespace"]
            .as_str()
            .unwrap_or_default();
        if asked != namespace {
            return Err(ApiError::invalid(
                &info.group,
                &info.kind,
                "",
                vec![invalid_value(
                    "spec.resourceAttributes.namespace",
                    asked,
                    "must match metadata.namespace",
                )],
            ));
        }
    }
    let allowed = decide(state, info, &subject, &spec)?;
    let mut with_spec = spec.clone();
    if info.plural == "selfsubjectaccessreviews"
        && let Some(map) = with_spec.as_object_mut()
    {
        // The user a self review is about is not echoed back.
        map.retain(|k, _| k == "resourceAttributes" || k == "nonResourceAttributes");
    }
    review["spec"] = with_spec;
    review["status"] = json!({"allowed": allowed});
    Ok(review)
}

fn user_info(user: &User) -> Value {
    let mut info = json!({"username": user.name, "groups": user.groups});
    if user.groups.is_empty()
        && let Some(map) = info.as_object_mut()
    {
        map.remove("groups");
    }
    info
}

/// The user a SubjectAccessReview asks about (`spec.user` or `spec.groups`).
fn subject_of(info: &ResourceInfo, spec: &Value) -> ApiResult<User> {
    let name = spec["user"].as_str().unwrap_or_default().to_string();
    let groups: Vec<String> = spec["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g.as_str().map(String::from))
        .collect();
    if name.is_empty() && groups.is_empty() {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            "",
            vec![invalid_value(
                "spec.user",
                "",
                "at least one of user or group must be specified",
            )],
        ));
    }
    Ok(User {
        name,
        groups,
        token: String::new(),
    })
}

/// The authorizer's decision on the attributes of `spec` for `subject`.
fn decide(state: &State, info: &ResourceInfo, subject: &User, spec: &Value) -> ApiResult<bool> {
    let resource = spec.get("resourceAttributes").filter(|v| v.is_object());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    let field = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    match (resource, non_resource) {
        (Some(_), Some(_)) => Err(ApiError::invalid(
            &info.group,
            &info.kind,
            "",
            vec![invalid_value(
                "spec.nonResourceAttributes",
                "",
                "cannot be specified in combination with resourceAttributes",
            )],
        )),
        (None, None) => Err(ApiError::invalid(
            &info.group,
            &info.kind,
            "",
            vec![required(
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )],
        )),
        (Some(r), None) => {
            let (verb, group, plural) = (field(r, "verb"), field(r, "group"), field(r, "resource"));
            let (subresource, namespace, name) =
                (field(r, "subresource"), field(r, "namespace"), field(r, "name"));
            Ok(rbac::authorize(
                state,
                &Attributes {
                    user: subject,
                    verb: &verb,
                    group: &group,
                    resource: &plural,
                    subresource: &subresource,
                    namespace: &namespace,
                    name: &name,
                },
            )
            .is_ok())
        }
        (None, Some(n)) => {
            Ok(rbac::authorize_path(state, subject, &field(n, "verb"), &field(n, "path")).is_ok())
        }
    }
}
