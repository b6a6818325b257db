//! ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`), enforced on every write
//! of a request as kube-apiserver's `ValidatingAdmissionPolicy` plugin does
//! (`k8s.io/apiserver/pkg/admission/plugin/policy/validating`).
//!
//! For each stored policy that has at least one binding, in name order:
//! 1. [`matching`]: the policy's `matchConstraints` (an error is a configuration error);
//! 2. a `paramKind` that is not served is a configuration error;
//! 3. for each binding naming the policy: its `matchResources`, then [`params`] (each
//!    param evaluated on its own, `parameterNotFoundAction`);
//! 4. [`evaluate`]: `matchConditions`, then every validation and audit annotation, with
//!    `object`, `oldObject`, `request`, `params`, `namespaceObject` and lazy `variables`;
//! 5. a failed validation goes where the binding's `validationActions` say: Deny (the
//!    first one is the request's error), Warn (a `Warning` header), Audit (recorded only:
//!    there is no audit log).
//!
//! Configuration and evaluation errors follow `failurePolicy` (Fail denies, Ignore admits).
//! Policies are compiled once per stored version ([`compiled`]), so they take effect as
//! soon as they are stored and stop when they are deleted. The two kinds themselves are
//! never subject to policies, as in kube-apiserver. Writes outside a request (the harness
//! seeding objects, the garbage collector) are not checked: they have no user.
//!
//! Left out: the `authorizer` variable and kube's `quantity`, `url`, `ip`, `cidr`,
//! `format` and `semver` libraries (an expression using them fails to compile or evaluate,
//! which `failurePolicy` then decides), type checking and cost budgets.

pub mod activation;
pub mod compiled;
pub mod definition;
pub mod evaluate;
pub mod matching;
pub mod params;

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value;

use crate::meta::errors::{ApiError, ApiResult, Cause};
use crate::resources::ResourceInfo;
use crate::storage::store::State;

/// The API group of the policy kinds, never itself subject to policies.
pub const GROUP: &str = "admissionregistration.k8s.io";
/// Storage key of the policies.
pub const POLICIES: &str = "validatingadmissionpolicies.admissionregistration.k8s.io";
/// Storage key of the bindings.
pub const BINDINGS: &str = "validatingadmissionpolicybindings.admissionregistration.k8s.io";

/// The user a request is made as (`request.userInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// `username`.
    pub username: String,
    /// `uid`.
    pub uid: String,
    /// `groups`.
    pub groups: Vec<String>,
}

thread_local! {
    static USER: RefCell<Option<UserInfo>> = const { RefCell::new(None) };
}

/// Runs `f` (a request's store writes) as `user`: its writes are checked by the policies.
pub fn as_user<T>(user: UserInfo, f: impl FnOnce() -> T) -> T {
    let previous = USER.with(|u| u.borrow_mut().replace(user));
    let out = f();
    USER.with(|u| *u.borrow_mut() = previous);
    out
}

fn current_user() -> Option<UserInfo> {
    USER.with(|u| u.borrow().clone())
}

/// The admission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
}

impl Operation {
    /// The name rules and `request.operation` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
        }
    }
}

/// What a policy sees of one write (kube's `admission.Attributes`).
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    /// The operation.
    pub operation: Operation,
    /// The resource written, in the request's version.
    pub info: &'a ResourceInfo,
    /// `""`, `status` or `scale`.
    pub subresource: &'a str,
    /// The request's namespace (`""` for cluster-scoped resources).
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The new object (`None` on DELETE); shared, as the policies read it in place.
    pub object: Option<&'a Arc<Value>>,
    /// The stored object (`None` on CREATE).
    pub old: Option<&'a Arc<Value>>,
    /// A dry run.
    pub dry_run: bool,
}

/// Checks a write against every policy; the first denial is the request's error, and the
/// `Warn` bindings' failures are added as `Warning` headers.
pub fn check(state: &State, attrs: &Attributes<'_>) -> ApiResult<()> {
    if attrs.info.group == GROUP {
        return Ok(());
    }
    let Some(user) = current_user() else {
        return Ok(());
    };
    let Some(policies) = state.collections.get(POLICIES).filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let set = compiled::policy_set(policies, state.collections.get(BINDINGS));
    let mut outcome = evaluate::Outcome::default();
    let mut inputs = activation::InputCache::new(state, attrs, &user);
    for (policy, bindings) in &set.bound {
        evaluate::policy(state, attrs, &mut inputs, policy, bindings, &mut outcome);
    }
    crate::admission::warn(outcome.warnings);
    match outcome.denied.into_iter().next() {
        Some(denial) => Err(denial.into_error(attrs)),
        None => Ok(()),
    }
}

/// One denial: the policy, the binding (none for a policy's configuration error), the
/// message and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The policy's name.
    pub policy: String,
    /// The binding's name.
    pub binding: Option<String>,
    /// What was denied and why.
    pub message: String,
    /// The `reason` (empty: Invalid).
    pub reason: String,
}

impl Denial {
    /// The request's error, as kube-apiserver's dispatcher builds it: a Forbidden for the
    /// resource and name, with the reason (default Invalid) and its code, and the message
    /// repeated as a cause.
    fn into_error(self, attrs: &Attributes<'_>) -> ApiError {
        let message = match &self.binding {
            Some(binding) => format!(
                "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
                self.policy, self.message
            ),
            None => format!(
                "ValidatingAdmissionPolicy '{}' denied request: {}",
                self.policy, self.message
            ),
        };
        let name = request_name(attrs);
        let mut error = ApiError::forbidden(&attrs.info.group, &attrs.info.plural, &name, message.clone());
        error.message = format!(
            "{} \"{name}\" is forbidden: {message}",
            crate::meta::errors::qualified(&attrs.info.group, &attrs.info.plural)
        );
        let reason = if self.reason.is_empty() {
            "Invalid".to_string()
        } else {
            self.reason
        };
        error.code = reason_code(&reason);
        error.reason = reason;
        error.details.causes.push(Cause {
            reason: String::new(),
            message,
            field: String::new(),
        });
        error
    }
}

/// The name the error names: the request's, else the object's name or generateName, else
/// `Unknown` (admission's `extractResourceName`).
fn request_name(attrs: &Attributes<'_>) -> String {
    if !attrs.name.is_empty() {
        return attrs.name.to_string();
    }
    let meta = attrs.object.map(|o| &o["metadata"]);
    meta.and_then(|m| m["name"].as_str().filter(|n| !n.is_empty()))
        .or_else(|| meta.and_then(|m| m["generateName"].as_str().filter(|n| !n.is_empty())))
        .unwrap_or("Unknown")
        .to_string()
}

/// The HTTP code of a validation's `reason`, as the dispatcher maps them.
fn reason_code(reason: &str) -> u16 {
    match reason {
        "Unauthorized" => 401,
        "Forbidden" => 403,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}
