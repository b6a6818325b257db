//! The CEL variables a policy's expressions see, as kube's admission CEL activation gives
//! them: `object`, `oldObject`, `request`, `params`, `namespaceObject`, and `variables`,
//! each variable evaluated at most once and only when an expression reads it.
//!
//! Objects are plain JSON maps, as kube-apiserver hands them to CEL (no schema typing:
//! timestamps are strings).

use std::cell::RefCell;

use ::cel::{ExecutionError, Value as CelValue};
use serde_json::{Value, json};

use super::compiled::{Expression, Policy};
use super::{Attributes, Operation, UserInfo};
use crate::resources::ResourceInfo;
use crate::schema::cel::{self, to_cel};
use crate::storage::store::State;

/// The variables shared by every policy evaluated for one write.
pub struct Inputs {
    base: Vec<(&'static str, CelValue)>,
}

impl Inputs {
    /// The write seen as `matched` (its object converted to that version).
    pub fn new(state: &State, attrs: &Attributes<'_>, user: &UserInfo, matched: &ResourceInfo) -> Self {
        let object = |o: Option<&Value>| o.map_or(CelValue::Null, |o| to_cel(&as_version(o, matched), None));
        let base = vec![
            ("object", object(attrs.object)),
            ("oldObject", object(attrs.old)),
            ("request", to_cel(&request(attrs, user, matched), None)),
            ("namespaceObject", namespace_object(state, attrs)),
        ];
        Self { base }
    }

    /// An activation with `params` for `policy`'s expressions.
    pub fn with_params<'a>(&'a self, policy: &'a Policy, params: CelValue) -> Activation<'a> {
        Activation {
            inputs: self,
            params,
            policy,
            variables: RefCell::new(vec![None; policy.variables.len()]),
        }
    }
}

/// One evaluation of a policy (one binding, one param).
pub struct Activation<'a> {
    inputs: &'a Inputs,
    params: CelValue,
    policy: &'a Policy,
    /// Each variable's value or error, once evaluated.
    variables: RefCell<Vec<Option<Result<CelValue, String>>>>,
}

impl Activation<'_> {
    /// Runs `expression`; an error is worded as kube's
    /// (`expression '<source>' resulted in error: <why>`).
    pub fn run(&self, expression: &Expression) -> Result<CelValue, String> {
        self.execute(expression)
            .map_err(|why| format!("expression '{}' resulted in error: {why}", expression.source))
    }

    /// [`Self::run`] for an expression that must be a bool.
    pub fn run_bool(&self, expression: &Expression) -> Result<bool, String> {
        match self.run(expression)? {
            CelValue::Bool(b) => Ok(b),
            other => Err(format!(
                "expression '{}' resulted in error: must evaluate to bool but got {}",
                expression.source,
                type_name(&other)
            )),
        }
    }

    fn execute(&self, expression: &Expression) -> Result<CelValue, String> {
        let program = expression
            .program
            .as_ref()
            .map_err(|e| format!("compilation error: {e}"))?;
        for &index in &expression.reads {
            self.variable(index);
        }
        let mut ctx = cel::context();
        let bind = |e: ExecutionError| e.to_string();
        for (name, value) in &self.inputs.base {
            ctx.add_variable_as_val(*name, value.clone().try_into().map_err(bind)?);
        }
        ctx.add_variable_as_val("params", self.params.clone().try_into().map_err(bind)?);
        ctx.add_variable_as_val("variables", self.evaluated().try_into().map_err(bind)?);
        program.execute(&ctx).map_err(|e| self.explain(&e))
    }

    /// Evaluates variable `index` once (a variable reading itself is an error).
    fn variable(&self, index: usize) {
        if self.variables.borrow()[index].is_some() {
            return;
        }
        let (name, expression) = &self.policy.variables[index];
        self.variables.borrow_mut()[index] =
            Some(Err(format!("composited variable {name:?} refers to itself")));
        let value = match &expression.program {
            Err(e) => Err(format!("composited variable {name:?} fails to compile: {e}")),
            Ok(_) => self
                .execute(expression)
                .map_err(|why| format!("composited variable {name:?} fails to evaluate: {why}")),
        };
        self.variables.borrow_mut()[index] = Some(value);
    }

    /// The `variables` map: every variable evaluated so far without error.
    fn evaluated(&self) -> CelValue {
        let values = self.variables.borrow();
        let entries: std::collections::HashMap<::cel::objects::Key, CelValue> = self
            .policy
            .variables
            .iter()
            .zip(values.iter())
            .filter_map(|((name, _), value)| match value {
                Some(Ok(v)) => Some((::cel::objects::Key::String(name.clone().into()), v.clone())),
                _ => None,
            })
            .collect();
        CelValue::Map(::cel::objects::Map { map: entries.into() })
    }

    /// An evaluation error; a missing key that is a failed variable is that variable's error.
    fn explain(&self, error: &ExecutionError) -> String {
        if let ExecutionError::NoSuchKey(key) = error {
            let values = self.variables.borrow();
            let failed = self
                .policy
                .variables
                .iter()
                .zip(values.iter())
                .find_map(|((name, _), value)| match value {
                    Some(Err(why)) if name == key.as_str() => Some(why.clone()),
                    _ => None,
                });
            if let Some(why) = failed {
                return why;
            }
        }
        cel::error_message(error)
    }
}

/// The name cel-go gives a value's type.
pub fn type_name(value: &CelValue) -> &'static str {
    match value {
        CelValue::Bool(_) => "bool",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        CelValue::Null => "null_type",
        CelValue::Duration(_) => "google.protobuf.Duration",
        CelValue::Timestamp(_) => "google.protobuf.Timestamp",
        _ => "dyn",
    }
}

/// `object` as the matched resource's version has it.
fn as_version(object: &Value, matched: &ResourceInfo) -> Value {
    let mut copy = object.clone();
    if let Some(version) = &matched.schema
        && object["apiVersion"].as_str() != Some(version.api_version.as_str())
    {
        crate::resources::versions::convert(&mut copy, version, &version.api_version, &version.schema);
    }
    copy
}

/// `request`: kube's `AdmissionRequest` without the objects.
fn request(attrs: &Attributes<'_>, user: &UserInfo, matched: &ResourceInfo) -> Value {
    let kind = |i: &ResourceInfo| json!({"group": i.group, "version": i.version, "kind": i.kind});
    let resource = |i: &ResourceInfo| json!({"group": i.group, "version": i.version, "resource": i.plural});
    let options = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    json!({
        "kind": kind(matched),
        "resource": resource(matched),
        "subResource": attrs.subresource,
        "requestKind": kind(attrs.info),
        "requestResource": resource(attrs.info),
        "requestSubResource": attrs.subresource,
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation.as_str(),
        "userInfo": {"username": user.username, "uid": user.uid, "groups": user.groups},
        "dryRun": attrs.dry_run,
        "options": {"kind": options, "apiVersion": "meta.k8s.io/v1"},
    })
}

/// `namespaceObject`: the request's namespace (null for cluster-scoped writes and
/// namespaces themselves), without its managed fields.
fn namespace_object(state: &State, attrs: &Attributes<'_>) -> CelValue {
    let is_namespace = attrs.info.group.is_empty() && attrs.info.plural == "namespaces";
    if attrs.namespace.is_empty() || is_namespace {
        return CelValue::Null;
    }
    match state.get("namespaces", "", attrs.namespace) {
        Some(namespace) => {
            let mut copy = namespace.as_ref().clone();
            if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            to_cel(&copy, None)
        }
        None => CelValue::Null,
    }
}
