//! One policy against one write: its bindings, their params, and the decisions, worded as
//! kube-apiserver's validating dispatcher and validator word them.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use cel::Value as CelValue;
use serde_json::Value;

use super::activation::{Activation, InputCache, Inputs, Param};
use super::compiled::{Binding, Policy};
use super::{Attributes, Denial, matching, params};
use crate::resources::ResourceInfo;
use crate::storage::store::State;

/// What the policies decided about one write.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Denials, in policy then binding order; the first is the request's error.
    pub denied: Vec<Denial>,
    /// `Warning` headers of the `Warn` bindings.
    pub warnings: Vec<String>,
    /// Failures recorded by `Audit` bindings (`policy/binding: message`).
    pub audited: Vec<String>,
}

/// One validation's result.
enum Decision {
    Admit,
    Deny {
        message: String,
        reason: String,
    },
    /// An audit annotation that failed: denied whatever the binding's actions.
    Reject {
        message: String,
    },
}

/// Evaluates `policy` with each of its `bindings` against the write (`inputs`: the CEL
/// variables of the write, built once per matched version).
pub fn policy(
    state: &State,
    attrs: &Attributes<'_>,
    inputs: &mut InputCache<'_>,
    policy: &Policy,
    bindings: &[Binding],
    out: &mut Outcome,
) {
    let matched = match matching::matches(state, attrs, inputs.written(), &policy.match_constraints) {
        Err(e) => return configuration_error(policy, None, &e, out),
        Ok(None) => return,
        Ok(Some(matched)) => matched,
    };
    let param_kind = match &policy.param_kind {
        None => None,
        Some((api_version, kind)) => match params::resource(state, api_version, kind) {
            Ok(info) => Some(info),
            Err(e) => return configuration_error(policy, None, &e, out),
        },
    };
    for binding in bindings {
        let name = binding.name.as_str();
        match matching::matches(state, attrs, inputs.written(), &binding.match_resources) {
            Err(e) => configuration_error(policy, Some(name), &e, out),
            Ok(None) => {}
            Ok(Some(_)) => {
                let only = same_name(policy, attrs);
                match params::collect(
                    state,
                    param_kind.as_deref(),
                    binding.param_ref.as_ref(),
                    attrs.namespace,
                    only,
                ) {
                    Err(e) => configuration_error(policy, Some(name), &e, out),
                    Ok(found) if found.is_empty() => {}
                    Ok(found) => {
                        let inputs = inputs.get(&matched);
                        for decisions in evaluate_all(policy, &inputs, param_kind.as_deref(), found) {
                            record(policy, binding, decisions, out);
                        }
                    }
                }
            }
        }
    }
}

/// The decisions of each param's evaluation. The match conditions that do not read
/// `params` are evaluated once: if one is false, no param is evaluated.
fn evaluate_all(
    policy: &Policy,
    inputs: &Inputs<'_>,
    kind: Option<&ResourceInfo>,
    found: params::Params,
) -> Vec<Vec<Decision>> {
    let shared = conditions(policy, &inputs.with_params(policy, Param::none()), false);
    if shared.false_one {
        return Vec::new();
    }
    found
        .into_iter()
        .map(|param| {
            decide(
                policy,
                &inputs.with_params(policy, param_value(kind, param)),
                &shared,
            )
        })
        .collect()
}

/// The param name to keep: with a match condition comparing the object's name with the
/// param's ([`Policy::params_by_name`]), a param of another name would only make it false.
/// Without an object or a name (a DELETE, a generated name) that condition errors rather
/// than being false, so every param is kept.
fn same_name<'a>(policy: &Policy, attrs: &Attributes<'a>) -> Option<&'a str> {
    let name = attrs
        .object
        .and_then(|o| o["metadata"]["name"].as_str())
        .filter(|n| !n.is_empty());
    name.filter(|_| policy.params_by_name)
}

/// A configuration error: denied under `failurePolicy: Fail`, ignored under `Ignore`.
fn configuration_error(policy: &Policy, binding: Option<&str>, error: &str, out: &mut Outcome) {
    if policy.ignore_failures {
        return;
    }
    let what = if binding.is_some() { "binding" } else { "policy" };
    out.denied.push(Denial {
        policy: policy.name.clone(),
        binding: binding.map(String::from),
        message: format!("failed to configure {what}: {error}"),
        reason: String::new(),
    });
}

/// A param as the policy sees it: in the `paramKind`'s version, a view of the stored
/// object (of a converted copy when its version differs). Prepared once per
/// (uid, version) and resourceVersion: a policy with a `selector: {}` param sees every
/// object of the kind on every write it matches, and checking for defaults and the
/// version walks the object. A newer resourceVersion replaces the entry, so the cache
/// holds one copy per object, not one per revision.
fn param_value(kind: Option<&ResourceInfo>, param: Option<Arc<Value>>) -> Param {
    /// By uid: (version, resourceVersion, value) of each version the object was seen in.
    type Seen = Vec<(String, String, Param)>;
    static CACHE: LazyLock<Mutex<HashMap<String, Seen>>> = LazyLock::new(Mutex::default);
    // Entries of deleted objects are only dropped by this bound.
    const LIMIT: usize = 200_000;
    let (Some(kind), Some(param)) = (kind, param) else {
        return Param::none();
    };
    let meta = &param["metadata"];
    let uid = meta["uid"].as_str().unwrap_or_default();
    let revision = meta["resourceVersion"].as_str().unwrap_or_default();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let seen = cache
        .get(uid)
        .and_then(|seen| seen.iter().find(|(v, _, _)| is_api_version(kind, v)));
    if let Some((_, _, value)) = seen.filter(|(_, at, _)| at == revision) {
        return value.clone();
    }
    let value = Param::new(crate::admission::on_read(kind, &param).map_or_else(|| param.clone(), Arc::new));
    if cache.len() >= LIMIT {
        cache.clear();
    }
    let seen = cache.entry(uid.to_string()).or_default();
    seen.retain(|(v, _, _)| !is_api_version(kind, v));
    seen.push((kind.api_version(), revision.to_string(), value.clone()));
    value
}

/// `api_version` is `kind`'s (`group/version`, or `version` for the core group), told
/// without formatting `kind`'s: this runs for every param of every write.
fn is_api_version(kind: &ResourceInfo, api_version: &str) -> bool {
    match api_version.split_once('/') {
        Some((group, version)) => group == kind.group && version == kind.version,
        None => kind.group.is_empty() && api_version == kind.version,
    }
}

/// Sends each failed validation where the binding's `validationActions` say.
fn record(policy: &Policy, binding: &Binding, decisions: Vec<Decision>, out: &mut Outcome) {
    let name = binding.name.as_str();
    for decision in decisions {
        let (message, reason) = match decision {
            Decision::Admit => continue,
            Decision::Deny { message, reason } => (message, reason),
            Decision::Reject { message } => {
                out.denied.push(Denial {
                    policy: policy.name.clone(),
                    binding: Some(name.to_string()),
                    message,
                    reason: String::new(),
                });
                continue;
            }
        };
        for action in &binding.actions {
            match action.as_str() {
                "Deny" => out.denied.push(Denial {
                    policy: policy.name.clone(),
                    binding: Some(name.to_string()),
                    message: message.clone(),
                    reason: reason.clone(),
                }),
                "Warn" => out.warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{name}': {message}",
                    policy.name
                )),
                "Audit" => out.audited.push(format!("{}/{name}: {message}", policy.name)),
                _ => {}
            }
        }
    }
}

/// The decisions of one evaluation: none when a match condition is false, else one per
/// validation, then a denial per audit annotation that fails. `shared`: the results of
/// the conditions that do not read `params`.
fn decide(policy: &Policy, activation: &Activation<'_, '_>, shared: &Conditions) -> Vec<Decision> {
    match conditions(policy, activation, true).with(shared, policy) {
        Ok(false) => return Vec::new(),
        Ok(true) => {}
        Err(message) => return failure(policy, message).into_iter().collect(),
    }
    let mut decisions: Vec<Decision> = policy
        .validations
        .iter()
        .filter_map(|validation| validate(policy, validation, activation))
        .collect();
    decisions.extend(audit_annotations(policy, activation));
    decisions
}

/// An evaluation error: a denial under `failurePolicy: Fail`, nothing under `Ignore`.
fn failure(policy: &Policy, message: String) -> Option<Decision> {
    (!policy.ignore_failures).then(|| Decision::Deny {
        message,
        reason: String::new(),
    })
}

/// Results of some of a policy's match conditions: whether one was false, and the errors
/// by the condition's position.
struct Conditions {
    false_one: bool,
    errors: Vec<(usize, String)>,
}

/// Runs the match conditions that read `params` (`with_params`) or the others, up to the
/// first false one.
fn conditions(policy: &Policy, activation: &Activation<'_, '_>, with_params: bool) -> Conditions {
    let mut out = Conditions {
        false_one: false,
        errors: Vec::new(),
    };
    let selected = policy
        .match_conditions
        .iter()
        .enumerate()
        .filter(|(_, (_, c))| c.uses_params == with_params);
    for (i, (_, condition)) in selected {
        match activation.run_bool(condition) {
            Ok(false) => {
                out.false_one = true;
                return out;
            }
            Ok(true) => {}
            Err(e) => out.errors.push((i, e)),
        }
    }
    out
}

impl Conditions {
    /// All conditions together: a false one skips the policy whatever the errors; else
    /// the errors, in the conditions' order, aggregated (`[a, b]` when several).
    fn with(mut self, shared: &Conditions, policy: &Policy) -> Result<bool, String> {
        if self.false_one || shared.false_one {
            return Ok(false);
        }
        self.errors.extend(shared.errors.iter().cloned());
        self.errors.sort_by_key(|(i, _)| *i);
        match crate::meta::errors::aggregate(self.errors.into_iter().map(|(_, e)| e)) {
            Some(message) if policy.ignore_failures => {
                tracing::debug!(
                    "envtest: policy {}: match condition error ignored: {message}",
                    policy.name
                );
                Ok(false)
            }
            Some(message) => Err(message),
            None => Ok(true),
        }
    }
}

fn validate(
    policy: &Policy,
    validation: &super::compiled::Validation,
    activation: &Activation<'_, '_>,
) -> Option<Decision> {
    match activation.run_bool(&validation.expression) {
        Err(e) => failure(policy, e),
        Ok(true) => Some(Decision::Admit),
        Ok(false) => Some(Decision::Deny {
            message: denial_message(validation, activation),
            reason: if validation.reason.is_empty() {
                "Invalid".into()
            } else {
                validation.reason.clone()
            },
        }),
    }
}

/// `messageExpression` (one line, at most 5 KiB), else `message`, else
/// `failed expression: <expression>`, each trimmed.
fn denial_message(validation: &super::compiled::Validation, activation: &Activation<'_, '_>) -> String {
    const MAX: usize = 5 * 1024;
    let evaluated = validation
        .message_expression
        .as_ref()
        .and_then(|e| match activation.run(e) {
            Ok(CelValue::String(s)) => Some(s.trim().to_string()),
            _ => None,
        });
    if let Some(message) = evaluated.filter(|m| !m.is_empty() && m.len() <= MAX && !m.contains('\n')) {
        return message;
    }
    if !validation.message.trim().is_empty() {
        return validation.message.trim().to_string();
    }
    format!("failed expression: {}", validation.expression.source.trim())
}

/// `auditAnnotations`: a string (published: there is no audit log here) or null; another
/// type denies, an error denies under `failurePolicy: Fail`.
fn audit_annotations<'a>(
    policy: &'a Policy,
    activation: &'a Activation<'a, 'a>,
) -> impl Iterator<Item = Decision> + 'a {
    policy.audit_annotations.iter().filter_map(|(_, expression)| {
        match activation.run(expression) {
            Ok(CelValue::String(_) | CelValue::Null) => None,
            Ok(other) => Some(Decision::Reject {
                message: format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    expression.source,
                    super::activation::type_name(&other)
                ),
            }),
            Err(message) => (!policy.ignore_failures).then_some(Decision::Reject { message }),
        }
    })
}
