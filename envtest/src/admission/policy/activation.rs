//! The CEL variables a policy's expressions see, as kube's admission CEL activation gives
//! them: `object`, `oldObject`, `request`, `params`, `namespaceObject`, and `variables`,
//! each variable evaluated at most once and only when an expression reads it.
//!
//! Objects are plain JSON maps, as kube-apiserver hands them to CEL (no schema typing:
//! timestamps are strings). Each expression and variable is first tried by
//! [`json_eval`], which reads the documents in place; what it leaves (see there) is cel's.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use ::cel::common::traits::Indexer;
use ::cel::common::types::{CelString, MAP_TYPE, Type};
use ::cel::common::value::{CowVal, Val};
use ::cel::{ExecutionError, Value as CelValue};
use serde_json::Value;

use super::compiled::{Expression, Policy};
use super::{Attributes, Operation, UserInfo};
use crate::resources::ResourceInfo;
use crate::schema::cel;
use crate::schema::json_eval::{self, Bindings, Fast};
use crate::schema::json_val::json_val;
use crate::storage::store::State;

/// A CEL value built once and lent to every evaluation: the write's documents are
/// [`json_val`] views, read where they lie rather than copied into CEL's maps.
pub type Shared = Arc<dyn Val>;

/// A JSON document as a [`Shared`] CEL value.
pub fn share_json(document: Arc<Value>) -> Shared {
    Arc::from(json_val(document))
}

/// A policy's param: the document (`None`: no param, `params` is null) and its view.
#[derive(Clone)]
pub struct Param {
    document: Option<Arc<Value>>,
    view: Shared,
}

impl Param {
    /// `params` is `document`.
    pub fn new(document: Arc<Value>) -> Self {
        Self {
            view: share_json(document.clone()),
            document: Some(document),
        }
    }

    /// `params` is null (no `paramKind`, or only the conditions that do not read it).
    pub fn none() -> Self {
        Self {
            document: None,
            view: null(),
        }
    }
}

/// The [`Inputs`] of one write, built when a policy first needs them for a version.
pub struct InputCache<'a> {
    state: &'a State,
    attrs: &'a Attributes<'a>,
    user: &'a UserInfo,
    /// The written resource as the registry serves it ([`super::matching::written`]).
    written: super::matching::Written,
    built: Vec<(String, Rc<Inputs<'a>>)>,
}

impl<'a> InputCache<'a> {
    /// Nothing built yet.
    pub fn new(state: &'a State, attrs: &'a Attributes<'a>, user: &'a UserInfo) -> Self {
        Self {
            state,
            attrs,
            user,
            written: super::matching::written(state, attrs),
            built: Vec::new(),
        }
    }

    /// The written resource as the registry serves it, where every match starts.
    pub fn written(&self) -> &super::matching::Written {
        &self.written
    }

    /// The inputs of the write seen as `matched`.
    pub fn get(&mut self, matched: &Arc<ResourceInfo>) -> Rc<Inputs<'a>> {
        let version = matched.api_version();
        if let Some((_, inputs)) = self.built.iter().find(|(v, _)| *v == version) {
            return inputs.clone();
        }
        let inputs = Rc::new(Inputs {
            state: self.state,
            attrs: self.attrs,
            user: self.user,
            matched: matched.clone(),
            documents: Default::default(),
            views: Default::default(),
            request_fields: RefCell::default(),
            results: RefCell::default(),
        });
        self.built.push((version, inputs.clone()));
        inputs
    }
}

/// The variables shared by every policy evaluated for one write, each built when an
/// expression first reads it.
pub struct Inputs<'a> {
    state: &'a State,
    attrs: &'a Attributes<'a>,
    user: &'a UserInfo,
    matched: Arc<ResourceInfo>,
    /// `object`, `oldObject`, `request`, `namespaceObject` (`None`: null).
    documents: [OnceLock<Option<Arc<Value>>>; 4],
    /// The same as cel values, built only for cel.
    views: [OnceLock<Shared>; 4],
    /// Fields of `request` built on their own, for [`json_eval`]'s `request.<field>`
    /// (the exempt-users condition reads only `userInfo`).
    request_fields: RefCell<Vec<(&'static str, Arc<Value>)>>,
    /// The results of the expressions that read only these values, by source.
    results: RefCell<Vec<(String, Result<CelValue, String>)>>,
}

const INPUT_NAMES: [&str; 4] = ["object", "oldObject", "request", "namespaceObject"];

impl<'a> Inputs<'a> {
    /// An activation with `params` for `policy`'s expressions.
    pub fn with_params<'p>(&'p self, policy: &'p Policy, params: Param) -> Activation<'p, 'a> {
        Activation {
            inputs: self,
            params,
            policy,
            variables: RefCell::new(vec![None; policy.variables.len()]),
        }
    }

    fn document(&self, index: usize) -> &Option<Arc<Value>> {
        self.documents[index].get_or_init(|| {
            let attrs = self.attrs;
            match index {
                0 => attrs.object.map(|o| as_version(o, &self.matched)),
                1 => attrs.old.map(|o| as_version(o, &self.matched)),
                2 => Some(Arc::new(request(attrs, self.user, &self.matched))),
                _ => namespace_object(self.state, attrs).map(Arc::new),
            }
        })
    }

    /// `request.<field>`, from the whole `request` if it is built, else on its own.
    fn request_field(&self, field: &str) -> Option<Fast> {
        if let Some(Some(request)) = self.documents[2].get() {
            return Fast::document(request.clone()).field(field);
        }
        let known = self
            .request_fields
            .borrow()
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v.clone());
        let value = match known {
            Some(value) => value,
            None => {
                let (name, value) = request_field(self.attrs, self.user, &self.matched, field)?;
                let value = Arc::new(value);
                self.request_fields.borrow_mut().push((name, value.clone()));
                value
            }
        };
        Some(Fast::document(value))
    }

    fn value(&self, index: usize) -> &Shared {
        self.views[index].get_or_init(|| self.document(index).clone().map_or_else(null, share_json))
    }
}

/// CEL's `null`.
pub fn null() -> Shared {
    Arc::new(::cel::common::types::CelNull)
}

/// One evaluation of a policy (one binding, one param).
pub struct Activation<'p, 'a> {
    inputs: &'p Inputs<'a>,
    params: Param,
    policy: &'p Policy,
    /// Each variable's value or error, once evaluated.
    variables: RefCell<Vec<Option<Result<Variable, String>>>>,
}

/// A variable's value: [`json_eval`]'s when it evaluated it, else cel's.
#[derive(Clone)]
struct Variable {
    fast: Option<Fast>,
    view: OnceCell<Shared>,
}

impl Variable {
    fn view(&self) -> Option<Shared> {
        if let Some(view) = self.view.get() {
            return Some(view.clone());
        }
        let view: Shared = Arc::from(self.fast.as_ref()?.to_val()?);
        Some(self.view.get_or_init(|| view).clone())
    }
}

impl Activation<'_, '_> {
    /// Runs `expression`; an error is worded as kube's
    /// (`expression '<source>' resulted in error: <why>`). One that reads only the write
    /// runs once per write, whichever policy asks.
    pub fn run(&self, expression: &Expression) -> Result<CelValue, String> {
        if !expression.reads_only_the_write {
            return self.evaluate(expression);
        }
        let results = &self.inputs.results;
        let known = results
            .borrow()
            .iter()
            .find(|(source, _)| *source == expression.source)
            .map(|(_, r)| r.clone());
        known.unwrap_or_else(|| {
            let result = self.evaluate(expression);
            results
                .borrow_mut()
                .push((expression.source.clone(), result.clone()));
            result
        })
    }

    fn evaluate(&self, expression: &Expression) -> Result<CelValue, String> {
        if let Some(value) = self.fast(expression).and_then(|v| v.to_cel()) {
            return Ok(value);
        }
        self.execute(expression)
            .and_then(|value| CelValue::try_from(value.as_ref()).map_err(|e| cel::error_message(&e)))
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

    /// The value of `expression`, kept as CEL's (a variable's value is lent to the
    /// expressions that read it, not converted).
    fn execute(&self, expression: &Expression) -> Result<Box<dyn Val>, String> {
        let program = expression
            .program
            .as_ref()
            .map_err(|e| format!("compilation error: {e}"))?;
        for &index in &expression.reads {
            self.variable(index);
        }
        let mut ctx = cel::context();
        for (i, name) in INPUT_NAMES.iter().enumerate() {
            if expression.inputs.contains(name) {
                ctx.add_variable_as_val(*name, self.inputs.value(i).clone_as_boxed());
            }
        }
        if expression.uses_params {
            ctx.add_variable_as_val("params", self.params.view.clone_as_boxed());
        }
        ctx.add_variable_as_val("variables", Box::new(self.map(expression)));
        ::cel::Value::resolve_val(program.expression(), &ctx)
            .map(CowVal::into_owned)
            .map_err(|e| self.explain(expression, &e))
    }

    /// `expression` evaluated by [`json_eval`], when it answers.
    fn fast(&self, expression: &Expression) -> Option<Fast> {
        let program = expression.program.as_ref().ok()?;
        json_eval::evaluate(program.expression(), self)
    }

    /// Evaluates variable `index` once (a variable reading itself is an error).
    fn variable(&self, index: usize) {
        if self.variables.borrow()[index].is_some() {
            return;
        }
        let (name, expression) = &self.policy.variables[index];
        self.variables.borrow_mut()[index] =
            Some(Err(format!("composited variable {name:?} refers to itself")));
        let fast = self.fast(expression).filter(Fast::convertible);
        let value = match (&expression.program, fast) {
            (Err(e), _) => Err(format!("composited variable {name:?} fails to compile: {e}")),
            (Ok(_), Some(fast)) => Ok(Variable {
                fast: Some(fast),
                view: OnceCell::new(),
            }),
            (Ok(_), None) => self
                .execute(expression)
                .map(|value| Variable {
                    fast: None,
                    view: OnceCell::from(Shared::from(value)),
                })
                .map_err(|why| format!("composited variable {name:?} fails to evaluate: {why}")),
        };
        self.variables.borrow_mut()[index] = Some(value);
    }

    /// The `variables` map of `expression`: the variables it reads that evaluated
    /// without error (one it reads that failed is missing, see [`Self::explain`]).
    fn map(&self, expression: &Expression) -> VariablesMap {
        let values = self.variables.borrow();
        let entries = expression
            .reads
            .iter()
            .filter_map(|&i| match (self.policy.variables.get(i), values.get(i)) {
                (Some((name, _)), Some(Some(Ok(value)))) => Some((name.clone(), value.view()?)),
                _ => None,
            })
            .collect();
        VariablesMap { entries }
    }

    /// An evaluation error; a missing key that is a failed variable `expression` reads is
    /// that variable's error (any other missing key is the object's, whatever variables
    /// failed before).
    fn explain(&self, expression: &Expression, error: &ExecutionError) -> String {
        if let ExecutionError::NoSuchKey(key) = error {
            let values = self.variables.borrow();
            let failed =
                expression
                    .reads
                    .iter()
                    .find_map(|&i| match (self.policy.variables.get(i), values.get(i)) {
                        (Some((name, _)), Some(Some(Err(why)))) if **name == *key.as_str() => {
                            Some(why.clone())
                        }
                        _ => None,
                    });
            if let Some(why) = failed {
                return why;
            }
        }
        cel::error_message(error)
    }
}

impl Bindings for Activation<'_, '_> {
    fn ident(&self, name: &str) -> Option<Fast> {
        let document = match name {
            "params" => &self.params.document,
            _ => self.inputs.document(INPUT_NAMES.iter().position(|n| *n == name)?),
        };
        Some(document.clone().map_or(Fast::Null, Fast::document))
    }

    fn member(&self, root: &str, field: &str) -> Option<Fast> {
        if root == "request" {
            return self.inputs.request_field(field);
        }
        if root != "variables" {
            return None;
        }
        let index = self
            .policy
            .variables
            .iter()
            .position(|(name, _)| **name == *field)?;
        self.variable(index);
        match &self.variables.borrow()[index] {
            Some(Ok(variable)) => variable.fast.clone(),
            _ => None,
        }
    }
}

/// `variables`: a map of the values already built, lent rather than converted again.
#[derive(Debug, Clone)]
struct VariablesMap {
    entries: Vec<(Arc<str>, Shared)>,
}

/// The type `variables` reports (a map's).
static VARIABLES_TYPE: Type = MAP_TYPE;

impl Val for VariablesMap {
    fn get_type(&self) -> &Type {
        &VARIABLES_TYPE
    }

    fn cel_type() -> &'static Type {
        &VARIABLES_TYPE
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(self.clone())
    }
}

impl Indexer for VariablesMap {
    fn get<'b, 'v>(&'b self, field: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let name = field
            .downcast_ref::<CelString<'_>>()
            .map(CelString::inner)
            .unwrap_or_default();
        match self.entries.iter().find(|(n, _)| **n == *name) {
            Some((_, value)) => Ok(CowVal::Borrowed(value.as_ref())),
            None => Err(ExecutionError::no_such_key(name)),
        }
    }

    fn steal<'v>(self: Box<Self>, field: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(field).map(CowVal::into_owned)
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

/// `object` as the matched resource's version has it (a converted copy only when the
/// versions differ).
fn as_version(object: &Arc<Value>, matched: &ResourceInfo) -> Arc<Value> {
    match &matched.schema {
        Some(version) if object["apiVersion"].as_str() != Some(version.api_version.as_str()) => {
            let mut copy = object.as_ref().clone();
            crate::resources::versions::convert(&mut copy, version, &version.api_version, &version.schema);
            Arc::new(copy)
        }
        _ => object.clone(),
    }
}

/// The fields of `request`, kube's `AdmissionRequest` without the objects.
const REQUEST_FIELDS: [&str; 12] = [
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "dryRun",
    "options",
];

/// `request`, built field by field: `json!` would serialize each interpolated value, and
/// every policy of a write reads `request`.
fn request(attrs: &Attributes<'_>, user: &UserInfo, matched: &ResourceInfo) -> Value {
    let fields = REQUEST_FIELDS
        .iter()
        .filter_map(|field| request_field(attrs, user, matched, field));
    Value::Object(fields.map(|(k, v)| (k.to_string(), v)).collect())
}

/// One field of `request` (`None`: no such field).
fn request_field(
    attrs: &Attributes<'_>,
    user: &UserInfo,
    matched: &ResourceInfo,
    field: &str,
) -> Option<(&'static str, Value)> {
    let name = *REQUEST_FIELDS.iter().find(|f| **f == field)?;
    let options = match attrs.operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let value = match name {
        "kind" => group_version_kind(matched),
        "resource" => group_version_resource(matched),
        "subResource" | "requestSubResource" => text(attrs.subresource),
        "requestKind" => group_version_kind(attrs.info),
        "requestResource" => group_version_resource(attrs.info),
        "name" => text(attrs.name),
        "namespace" => text(attrs.namespace),
        "operation" => text(attrs.operation.as_str()),
        "userInfo" => object([
            ("username", text(&user.username)),
            ("uid", text(&user.uid)),
            (
                "groups",
                Value::Array(user.groups.iter().map(|g| text(g)).collect()),
            ),
        ]),
        "dryRun" => Value::Bool(attrs.dry_run),
        _ => object([("kind", text(options)), ("apiVersion", text("meta.k8s.io/v1"))]),
    };
    Some((name, value))
}

fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn text(value: &str) -> Value {
    Value::String(value.to_string())
}

fn group_version_kind(info: &ResourceInfo) -> Value {
    object([
        ("group", text(&info.group)),
        ("version", text(&info.version)),
        ("kind", text(&info.kind)),
    ])
}

fn group_version_resource(info: &ResourceInfo) -> Value {
    object([
        ("group", text(&info.group)),
        ("version", text(&info.version)),
        ("resource", text(&info.plural)),
    ])
}

/// `namespaceObject`: the request's namespace (null for cluster-scoped writes and
/// namespaces themselves), without its managed fields.
fn namespace_object(state: &State, attrs: &Attributes<'_>) -> Option<Value> {
    let is_namespace = attrs.info.group.is_empty() && attrs.info.plural == "namespaces";
    if attrs.namespace.is_empty() || is_namespace {
        return None;
    }
    let mut copy = state.get("namespaces", "", attrs.namespace)?.as_ref().clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    Some(copy)
}
