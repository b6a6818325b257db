//! Authentication (bearer tokens) and the authorization step of the request path
//! ([`rbac`]: kube-apiserver's RBAC authorizer).

pub mod rbac;

use std::collections::HashMap;

use crate::meta::errors::ApiResult;
use crate::storage::store::State;

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// User name (`admin`).
    pub name: String,
    /// Groups (`system:masters`, `system:authenticated` is added automatically).
    pub groups: Vec<String>,
    /// The bearer token identifying the user.
    pub token: String,
}

impl User {
    /// A user with a random token.
    pub fn new(name: impl Into<String>, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            token: random_token(),
        }
    }
}

/// A random 32-character token.
pub fn random_token() -> String {
    let mut bytes = [0u8; 24];
    let _ = getrandom::fill(&mut bytes);
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Bearer-token authenticator.
#[derive(Debug, Clone, Default)]
pub struct Authenticator {
    by_token: HashMap<String, User>,
}

impl Authenticator {
    /// From a list of users.
    pub fn new(users: &[User]) -> Self {
        Self {
            by_token: users.iter().map(|u| (u.token.clone(), u.clone())).collect(),
        }
    }

    /// The user behind an `Authorization` header value.
    pub fn authenticate(&self, header: Option<&str>) -> Option<&User> {
        let token = header?.strip_prefix("Bearer ")?.trim();
        self.by_token.get(token)
    }
}

/// The attributes an authorizer decides on.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    /// The user.
    pub user: &'a User,
    /// The verb (`get`, `list`, `watch`, `create`, ...).
    pub verb: &'a str,
    /// API group.
    pub group: &'a str,
    /// Resource (plural).
    pub resource: &'a str,
    /// Subresource (`status`, `scale`) or empty.
    pub subresource: &'a str,
    /// Namespace or empty.
    pub namespace: &'a str,
    /// Object name or empty.
    pub name: &'a str,
}

/// The authorization step: kube-apiserver's RBAC authorizer over the stored Roles,
/// ClusterRoles and bindings (see [`crate::auth::rbac`]). A denial is 403 Forbidden.
pub fn authorize(state: &State, attributes: &Attributes<'_>) -> ApiResult<()> {
    crate::auth::rbac::authorize(state, attributes)
}
