//! A stored policy with its CEL expressions compiled, once per stored version.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use ::cel::Program;
use serde_json::Value;

use crate::schema::cel;

/// One CEL expression: its source, its program (or why it does not compile), and the
/// variables it reads (indices into [`Policy::variables`]).
pub struct Expression {
    /// The source, as written.
    pub source: String,
    /// The program, or the compilation error.
    pub program: Result<Program, String>,
    /// The variables the source names (`variables.x`, `variables["x"]`).
    pub reads: Vec<usize>,
    /// It reads `params`, itself or through a variable: otherwise it evaluates the same
    /// for every param.
    pub uses_params: bool,
    /// The write's variables it reads (`object`, `oldObject`, `request`,
    /// `namespaceObject`): only those are built.
    pub inputs: Vec<&'static str>,
}

impl Expression {
    /// Compiles `source`; `variables`: the policy's variables compiled so far (an
    /// expression reads only earlier ones).
    fn compile(source: &str, variable_names: &[String], variables: &[(Arc<str>, Expression)]) -> Self {
        let program = cel::compile(source);
        let reads = variables_read(source, variable_names);
        let direct = program
            .as_ref()
            .map_or(true, |p| p.references().has_variable("params"));
        let uses_params = direct
            || reads
                .iter()
                .any(|&i| variables.get(i).is_none_or(|(_, v)| v.uses_params));
        let inputs = ["object", "oldObject", "request", "namespaceObject"]
            .into_iter()
            .filter(|name| program.as_ref().is_ok_and(|p| p.references().has_variable(name)))
            .collect();
        Self {
            source: source.to_string(),
            program,
            reads,
            uses_params,
            inputs,
        }
    }
}

/// One `validations[]` entry.
pub struct Validation {
    /// `expression`.
    pub expression: Expression,
    /// `message`.
    pub message: String,
    /// `messageExpression`.
    pub message_expression: Option<Expression>,
    /// `reason` (empty: Invalid).
    pub reason: String,
}

/// A policy ready to evaluate.
pub struct Policy {
    /// `metadata.name`.
    pub name: String,
    /// `failurePolicy` is `Ignore` (default Fail).
    pub ignore_failures: bool,
    /// `paramKind` (`apiVersion`, `kind`).
    pub param_kind: Option<(String, String)>,
    /// `matchConstraints`.
    pub match_constraints: Value,
    /// `matchConditions` (name, expression).
    pub match_conditions: Vec<(String, Expression)>,
    /// `variables` (name, expression), in order; the name is lent to each evaluation's
    /// `variables` map.
    pub variables: Vec<(Arc<str>, Expression)>,
    /// `validations`.
    pub validations: Vec<Validation>,
    /// `auditAnnotations` (key, valueExpression).
    pub audit_annotations: Vec<(String, Expression)>,
    /// A match condition is `object.metadata.name == params.metadata.name` (either way
    /// round): a param of another name makes it false, which skips the policy whatever
    /// the other conditions say, so such params need not be evaluated (see
    /// [`super::evaluate`]).
    pub params_by_name: bool,
}

/// A compiled policy and the stored object it was compiled from.
struct Entry {
    source: Arc<Value>,
    compiled: Arc<Policy>,
}

/// Compiled policies by the address of the stored object: a new version is a new object,
/// and an entry is used only while it holds that very object, so a reused address
/// compiles anew.
static CACHE: LazyLock<Mutex<HashMap<usize, Entry>>> = LazyLock::new(Mutex::default);

/// Bound on [`CACHE`]: past it, the cache starts over (policies are few).
const CACHE_LIMIT: usize = 1024;

/// The compiled form of a stored policy.
pub fn compile(policy: &Arc<Value>) -> Arc<Policy> {
    let key = Arc::as_ptr(policy) as usize;
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(entry) = cache.get(&key).filter(|e| Arc::ptr_eq(&e.source, policy)) {
        return entry.compiled.clone();
    }
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    let compiled = Arc::new(build(policy));
    let entry = Entry {
        source: policy.clone(),
        compiled: compiled.clone(),
    };
    cache.insert(key, entry);
    compiled
}

fn build(policy: &Value) -> Policy {
    let spec = &policy["spec"];
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let names: Vec<String> = entries(spec, "variables").map(|v| text(v, "name")).collect();
    let mut variables: Vec<(Arc<str>, Expression)> = Vec::new();
    for variable in entries(spec, "variables") {
        let compiled = Expression::compile(&text(variable, "expression"), &names, &variables);
        variables.push((text(variable, "name").into(), compiled));
    }
    let compile = |source: &str| Expression::compile(source, &names, &variables);
    let param_kind = spec
        .get("paramKind")
        .filter(|p| p.is_object())
        .map(|p| (text(p, "apiVersion"), text(p, "kind")));
    Policy {
        name: text(&policy["metadata"], "name"),
        ignore_failures: spec["failurePolicy"].as_str() == Some("Ignore"),
        param_kind,
        match_constraints: spec["matchConstraints"].clone(),
        match_conditions: entries(spec, "matchConditions")
            .map(|c| (text(c, "name"), compile(&text(c, "expression"))))
            .collect(),
        validations: entries(spec, "validations")
            .map(|v| Validation {
                expression: compile(&text(v, "expression")),
                message: text(v, "message"),
                message_expression: v["messageExpression"]
                    .as_str()
                    .filter(|m| !m.is_empty())
                    .map(compile),
                reason: text(v, "reason"),
            })
            .collect(),
        audit_annotations: entries(spec, "auditAnnotations")
            .map(|a| (text(a, "key"), compile(&text(a, "valueExpression"))))
            .collect(),
        variables,
        params_by_name: entries(spec, "matchConditions").any(|c| compares_names(&text(c, "expression"))),
    }
}

/// `object.metadata.name == params.metadata.name`, either way round, spaces aside.
fn compares_names(source: &str) -> bool {
    let compact: String = source.chars().filter(|c| !c.is_whitespace()).collect();
    compact == "object.metadata.name==params.metadata.name"
        || compact == "params.metadata.name==object.metadata.name"
}

fn entries<'a>(spec: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    spec[field].as_array().into_iter().flatten()
}

/// The variables `source` names, by index: `variables.<name>` and `variables["<name>"]`.
fn variables_read(source: &str, names: &[String]) -> Vec<usize> {
    names
        .iter()
        .enumerate()
        .filter(|(_, name)| {
            let dotted = format!("variables.{name}");
            let quoted = [format!("variables[\"{name}\"]"), format!("variables['{name}']")];
            mentions(source, &dotted) || quoted.iter().any(|q| source.contains(q.as_str()))
        })
        .map(|(i, _)| i)
        .collect()
}

/// `needle` occurs in `source` not followed by an identifier character (so `variables.a`
/// does not count inside `variables.ab`).
fn mentions(source: &str, needle: &str) -> bool {
    source.match_indices(needle).any(|(at, _)| {
        source[at + needle.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expression_knows_which_variables_it_reads() {
        let names = vec!["a".to_string(), "ab".to_string(), "c".to_string()];
        assert_eq!(
            variables_read("variables.ab && variables['c']", &names),
            vec![1, 2]
        );
        assert_eq!(variables_read("variables.a || true", &names), vec![0]);
        assert!(variables_read("object.variables", &names).is_empty());
    }
}
