//! A stored policy with its CEL expressions compiled, once per stored version.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use ::cel::Program;
use serde_json::Value;

use super::matching::Criteria;
use super::params::ParamRef;
use crate::meta::json::string_list;
use crate::schema::cel;
use crate::storage::store::Collection;

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
    /// It compiles and reads nothing but the write's variables (no `params`, no
    /// `variables`): its value is the same in every policy that matches the write in the
    /// same version, so it is evaluated once per write (policies repeat such conditions,
    /// e.g. the exempt users).
    pub reads_only_the_write: bool,
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
        let reads_only_the_write = !uses_params
            && program
                .as_ref()
                .is_ok_and(|p| !p.references().has_variable("variables"));
        Self {
            source: source.to_string(),
            program,
            reads,
            uses_params,
            inputs,
            reads_only_the_write,
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
    pub match_constraints: Criteria,
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

/// A stored binding, parsed.
pub struct Binding {
    /// `metadata.name`.
    pub name: String,
    /// `matchResources`.
    pub match_resources: Criteria,
    /// `paramRef`.
    pub param_ref: Option<ParamRef>,
    /// `validationActions`.
    pub actions: Vec<String>,
}

impl Binding {
    fn parse(binding: &Value) -> Self {
        let spec = &binding["spec"];
        Self {
            name: binding["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            match_resources: Criteria::parse(&spec["matchResources"]),
            param_ref: ParamRef::parse(&spec["paramRef"]),
            actions: string_list(&spec["validationActions"]),
        }
    }
}

/// The stored policies that have bindings, each with its bindings, in the policies' name
/// order: what every write is checked against, built once per change of either kind.
pub struct PolicySet {
    /// The stored policies and bindings it was built from, held so that their addresses,
    /// the key of [`SETS`], cannot be reused while it is cached.
    _sources: Vec<Arc<Value>>,
    /// Each bound policy with its bindings.
    pub bound: Vec<(Arc<Policy>, Vec<Binding>)>,
}

/// Policy sets by the addresses of the stored objects they were built from (one per
/// envtest in the process, and one per change of its policies or bindings).
static SETS: LazyLock<Mutex<HashMap<Vec<usize>, Arc<PolicySet>>>> = LazyLock::new(Mutex::default);

/// The policy set of the stored `policies` and `bindings`.
pub fn policy_set(policies: &Collection, bindings: Option<&Collection>) -> Arc<PolicySet> {
    let sources = || {
        policies
            .values()
            .chain(bindings.into_iter().flat_map(|b| b.values()))
    };
    let key: Vec<usize> = sources().map(|o| Arc::as_ptr(o) as usize).collect();
    let mut sets = SETS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(set) = sets.get(&key) {
        return set.clone();
    }
    if sets.len() >= CACHE_LIMIT {
        sets.clear();
    }
    let mut bound: Vec<(Arc<Policy>, Vec<Binding>)> = Vec::new();
    for policy in policies.values() {
        let name = policy["metadata"]["name"].as_str().unwrap_or_default();
        let bindings: Vec<Binding> = bindings
            .into_iter()
            .flat_map(|b| b.values())
            .filter(|b| b["spec"]["policyName"].as_str() == Some(name))
            .map(|b| Binding::parse(b))
            .collect();
        if !bindings.is_empty() {
            bound.push((compile(policy), bindings));
        }
    }
    let set = Arc::new(PolicySet {
        _sources: sources().cloned().collect(),
        bound,
    });
    sets.insert(key, set.clone());
    set
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
        match_constraints: Criteria::parse(&spec["matchConstraints"]),
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
    fn only_expressions_of_the_write_alone_are_shared_between_policies() {
        let names = ["a".to_string(), "p".to_string()];
        let a = Expression::compile("object.x", &names[..0], &[]);
        let p = Expression::compile("params.x", &names[..1], &[]);
        let variables = [(Arc::from("a"), a), (Arc::from("p"), p)];
        let shared = |source: &str| Expression::compile(source, &names, &variables).reads_only_the_write;
        assert!(shared(
            "request.userInfo.username != 'admin' && object.x == oldObject.x"
        ));
        assert!(shared("namespaceObject.metadata.name == 'kube-system'"));
        assert!(!shared("params.x == 1"), "a param differs between evaluations");
        assert!(!shared("variables.a == 1"), "a variable is the policy's own");
        assert!(!shared("variables['a'] == 1"));
        assert!(!shared("variables.p == 1"));
        assert!(!shared("object.x ==="), "no program");
    }

    fn stored(name: &str, value: Value) -> ((String, String), Arc<Value>) {
        ((String::new(), name.to_string()), Arc::new(value))
    }

    fn policy(name: &str) -> ((String, String), Arc<Value>) {
        stored(name, serde_json::json!({"metadata": {"name": name}, "spec": {}}))
    }

    fn binding(name: &str, policy: &str, actions: &[&str]) -> ((String, String), Arc<Value>) {
        let spec = serde_json::json!({"policyName": policy, "validationActions": actions});
        stored(
            name,
            serde_json::json!({"metadata": {"name": name}, "spec": spec}),
        )
    }

    #[test]
    fn a_policy_set_pairs_policies_with_their_bindings_and_is_rebuilt_on_change() {
        let policies: Collection = [policy("a"), policy("b"), policy("unbound")].into();
        let mut bindings: Collection = [
            binding("a-1", "a", &["Deny"]),
            binding("a-2", "a", &["Warn", "Audit"]),
            binding("b-1", "b", &["Deny"]),
            binding("orphan", "missing", &["Deny"]),
        ]
        .into();
        let set = policy_set(&policies, Some(&bindings));
        type Summary = Vec<(String, Vec<(String, Vec<String>)>)>;
        let summary = |set: &PolicySet| -> Summary {
            set.bound
                .iter()
                .map(|(p, bs)| {
                    let bs = bs.iter().map(|b| (b.name.clone(), b.actions.clone())).collect();
                    (p.name.clone(), bs)
                })
                .collect()
        };
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            summary(&set),
            vec![
                (
                    "a".to_string(),
                    vec![
                        ("a-1".to_string(), owned(&["Deny"])),
                        ("a-2".to_string(), owned(&["Warn", "Audit"]))
                    ]
                ),
                ("b".to_string(), vec![("b-1".to_string(), owned(&["Deny"]))]),
            ]
        );
        assert!(Arc::ptr_eq(&set, &policy_set(&policies, Some(&bindings))));

        let (key, value) = binding("a-2", "a", &["Deny"]);
        bindings.insert(key, value);
        let changed = policy_set(&policies, Some(&bindings));
        assert_eq!(summary(&changed)[0].1[1], ("a-2".to_string(), owned(&["Deny"])));
        assert!(policy_set(&policies, None).bound.is_empty());
    }

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
