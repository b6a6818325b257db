//! CEL validation rules (`x-kubernetes-validations`) evaluated with the [`cel`] crate
//! (cel-rust).
//!
//! Each rule is compiled once, when its CRD version's schema is compiled, and evaluated on
//! every write at every node of the object its schema sits on, as kube-apiserver does:
//! `self` is the node's value (typed by the schema: `date-time` strings are timestamps,
//! `duration` strings durations, `byte` strings bytes, property names escaped as
//! `__dash__`, `__dot__`, ...), `oldSelf` the correlated previous value on update
//! (transition rules are skipped on create and where there is no previous value, unless
//! `optionalOldSelf`, where `oldSelf` is an optional). A failure is a cause with the rule's
//! `message` (or `messageExpression`, or `failed rule: <rule>`), at `fieldPath` when set, with
//! the rule's `reason`.
//!
//! A rule this engine cannot compile, or cannot evaluate (a function cel-rust or this module
//! does not provide), is never a silent pass: it is logged once and recorded, and
//! [`crate::TestEnv::skipped_cel_rules`] lists it so suites can assert there is none.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock};

use base64::Engine;
use cel::objects::{Key, Map as CelMap, OptionalValue};
use cel::{Context, Env, ExecutionError, Program, Value as CelValue};
use serde_json::Value;

use crate::schema::validate::{Findings, Path, Ratchet, Seg, correlate_list};
use crate::schema::{ListType, Origin, Schema, Type};

/// A rule that is not evaluated, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRule {
    /// The CRD (`machines.cluster.x-k8s.io`).
    pub crd: String,
    /// The version (`v1beta2`).
    pub version: String,
    /// Where the rule sits in the schema (`openAPIV3Schema.properties[status]...`).
    pub location: String,
    /// The rule's source.
    pub rule: String,
    /// Why it is skipped.
    pub reason: String,
}

impl std::fmt::Display for SkippedRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} {}: rule {:?}: {}",
            self.crd, self.version, self.location, self.rule, self.reason
        )
    }
}

/// One compiled `x-kubernetes-validations` entry.
pub struct Rule {
    /// `rule`.
    pub source: String,
    /// `message`.
    pub message: String,
    /// `messageExpression` source.
    pub message_expression: String,
    /// `fieldPath`, normalized (no leading dot).
    pub field_path: String,
    /// `reason`.
    pub reason: String,
    /// `optionalOldSelf`.
    pub optional_old_self: bool,
    /// The rule references `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    program: Option<Program>,
    message_program: Option<Program>,
    origin: Origin,
    location: String,
    skipped: OnceLock<SkippedRule>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("rule", &self.source)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// The CEL environment shared by every rule: the standard library, the strings, lists and
/// math extensions, and the Kubernetes list functions.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    for (name, result) in [
        ("strings", env.add_extension(cel::extensions::strings)),
        ("lists", env.add_extension(cel::extensions::lists)),
        ("math", env.add_extension(cel::extensions::math)),
        ("kubernetes", kubernetes_library(&mut env)),
    ] {
        if let Err(e) = result {
            tracing::warn!("envtest: CEL {name} library not available: {e}");
        }
    }
    env.set_error_on_duplicate_map_keys(false);
    Arc::new(env)
});

/// Compiles an expression in the environment CRD rules have (admission policies use it
/// too); the error is the parser's.
pub fn compile(source: &str) -> Result<Program, String> {
    ENV.compile(source).map_err(|e| e.to_string())
}

/// An empty evaluation context of that environment.
pub fn context<'v>() -> Context<'v, 'v> {
    Context::with_env(ENV.clone())
}

/// An evaluation error in cel-go's words where kube-apiserver reports them, else this
/// engine's own.
pub fn error_message(error: &ExecutionError) -> String {
    runtime_error(error).unwrap_or_else(|| error.to_string())
}

/// The functions of the Kubernetes CEL library that cel-rust lacks and rules use.
fn kubernetes_library(env: &mut Env) -> Result<(), cel::DeclarationError> {
    use cel::common::types::{LIST_TYPE, STRING_TYPE};
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], k8s::is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], k8s::sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], k8s::min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], k8s::max)?;
    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], k8s::find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        k8s::find_all,
    )?;
    Ok(())
}

mod k8s {
    use cel::common::value::CowVal;
    use cel::{ExecutionError, Value};

    fn value(arg: &CowVal<'_, '_>) -> Result<Value, ExecutionError> {
        Value::try_from(arg.as_ref())
    }

    fn out<'b, 'v>(v: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let boxed: Box<dyn cel::common::value::Val> = v.try_into()?;
        Ok(CowVal::from(boxed))
    }

    fn list(args: &[CowVal<'_, '_>], function: &str) -> Result<Vec<Value>, ExecutionError> {
        match args.first().map(value).transpose()? {
            Some(Value::List(items)) => Ok(items.as_ref().clone()),
            _ => Err(ExecutionError::function_error(function, "receiver is not a list")),
        }
    }

    fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) => x.partial_cmp(y),
            (Value::UInt(x), Value::UInt(y)) => x.partial_cmp(y),
            (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
            (Value::String(x), Value::String(y)) => x.partial_cmp(y),
            (Value::Bool(x), Value::Bool(y)) => x.partial_cmp(y),
            (Value::Duration(x), Value::Duration(y)) => x.partial_cmp(y),
            (Value::Timestamp(x), Value::Timestamp(y)) => x.partial_cmp(y),
            _ => None,
        }
    }

    pub fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let items = list(&args, "isSorted")?;
        let sorted = items
            .windows(2)
            .all(|w| compare(&w[0], &w[1]).is_some_and(|o| o != std::cmp::Ordering::Greater));
        out(Value::Bool(sorted))
    }

    pub fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let items = list(&args, "sum")?;
        let mut total = Value::Int(0);
        for item in items {
            total = match (total, item) {
                (Value::Int(a), Value::Int(b)) => Value::Int(
                    a.checked_add(b)
                        .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
                ),
                (Value::Int(0), Value::Float(b)) => Value::Float(b),
                (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
                (Value::Int(0), Value::UInt(b)) => Value::UInt(b),
                (Value::UInt(a), Value::UInt(b)) => Value::UInt(a.saturating_add(b)),
                (Value::Int(0), Value::Duration(b)) => Value::Duration(b),
                (Value::Duration(a), Value::Duration(b)) => Value::Duration(a + b),
                _ => return Err(ExecutionError::function_error("sum", "mixed element types")),
            };
        }
        out(total)
    }

    fn extreme<'b, 'v>(
        args: Vec<CowVal<'b, 'v>>,
        function: &str,
        keep: std::cmp::Ordering,
    ) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let items = list(&args, function)?;
        let mut best: Option<Value> = None;
        for item in items {
            best = match best {
                None => Some(item),
                Some(b) => match compare(&item, &b) {
                    Some(o) if o == keep => Some(item),
                    Some(_) => Some(b),
                    None => return Err(ExecutionError::function_error(function, "mixed element types")),
                },
            };
        }
        match best {
            Some(v) => out(v),
            None => Err(ExecutionError::function_error(
                function,
                format!("{function} called on empty list"),
            )),
        }
    }

    pub fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        extreme(args, "min", std::cmp::Ordering::Less)
    }

    pub fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        extreme(args, "max", std::cmp::Ordering::Greater)
    }

    fn string_and_regex(
        args: &[CowVal<'_, '_>],
        function: &str,
    ) -> Result<(String, regex::Regex), ExecutionError> {
        let (Some(Value::String(s)), Some(Value::String(p))) = (
            args.first().map(value).transpose()?,
            args.get(1).map(value).transpose()?,
        ) else {
            return Err(ExecutionError::function_error(
                function,
                "expects a string and a pattern",
            ));
        };
        let re = regex::Regex::new(&p).map_err(|e| ExecutionError::function_error(function, e))?;
        Ok((s.as_ref().clone(), re))
    }

    pub fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (s, re) = string_and_regex(&args, "find")?;
        let found = re.find(&s).map(|m| m.as_str().to_string()).unwrap_or_default();
        out(Value::String(found.into()))
    }

    pub fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
        let (s, re) = string_and_regex(&args, "findAll")?;
        let all: Vec<Value> = re
            .find_iter(&s)
            .map(|m| Value::String(m.as_str().to_string().into()))
            .collect();
        out(Value::List(all.into()))
    }
}

const RESERVED: [&str; 18] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
];

/// Escapes a property name into a CEL identifier, as Kubernetes does (`x-y` is `x__dash__y`).
pub fn escape(name: &str) -> String {
    if RESERVED.contains(&name) {
        return format!("__{name}__");
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
    }
    out
}

/// Parses a Go duration (`1h30m`, `-1.5s`, `300ms`).
fn go_duration(text: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    let mut nanos: f64 = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += number * scale;
    }
    let d = chrono::Duration::nanoseconds(nanos as i64);
    Some(if negative { -d } else { d })
}

/// Converts a JSON value to a CEL value typed by its schema.
pub fn to_cel(value: &Value, schema: Option<&Schema>) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            let float = schema.is_some_and(|s| s.kind == Some(Type::Number));
            match (n.as_i64(), n.as_u64()) {
                (Some(i), _) if !float => CelValue::Int(i),
                (None, Some(u)) if !float => CelValue::UInt(u),
                _ => CelValue::Float(n.as_f64().unwrap_or_default()),
            }
        }
        Value::String(s) => {
            let typed = schema.filter(|s| s.kind == Some(Type::String) && !s.int_or_string);
            match typed.map(|s| s.format.as_str()) {
                Some("date-time") => match chrono::DateTime::parse_from_rfc3339(s) {
                    Ok(t) => CelValue::Timestamp(t),
                    Err(_) => CelValue::String(Arc::new(s.clone())),
                },
                Some("duration") => match go_duration(s) {
                    Some(d) => CelValue::Duration(d),
                    None => CelValue::String(Arc::new(s.clone())),
                },
                Some("byte") => match base64::engine::general_purpose::STANDARD.decode(s) {
                    Ok(b) => CelValue::Bytes(Arc::new(b)),
                    Err(_) => CelValue::String(Arc::new(s.clone())),
                },
                _ => CelValue::String(Arc::new(s.clone())),
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            CelValue::List(Arc::new(items.iter().map(|i| to_cel(i, item_schema)).collect()))
        }
        Value::Object(map) => {
            let mut out = HashMap::with_capacity(map.len());
            for (k, v) in map {
                let (key, child) = match schema {
                    Some(s) => match s.properties.get(k) {
                        Some(p) => (escape(k), Some(p)),
                        None => (k.clone(), s.additional.as_deref()),
                    },
                    None => (k.clone(), None),
                };
                out.insert(Key::String(Arc::new(key)), to_cel(v, child));
            }
            CelValue::Map(CelMap { map: Arc::new(out) })
        }
    }
}

/// `self` at the root of a resource: the schema's fields plus `apiVersion`, `kind` and
/// `metadata.name`/`metadata.generateName` only.
fn root_self(value: &Value, schema: &Schema) -> CelValue {
    let mut copy = value.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| k == "name" || k == "generateName");
    }
    to_cel(&copy, Some(schema))
}

/// Evaluation errors kube-apiserver reports as such (`no such key: x evaluating rule: ...`);
/// anything else is a limitation of this engine and skips the rule.
fn runtime_error(error: &ExecutionError) -> Option<String> {
    match error {
        ExecutionError::NoSuchKey(key) => Some(format!("no such key: {key}")),
        ExecutionError::IndexOutOfBounds(index) => Some(format!("index out of bounds: {}", show(index))),
        ExecutionError::DivisionByZero(_) => Some("division by zero".into()),
        ExecutionError::RemainderByZero(_) => Some("modulus by zero".into()),
        ExecutionError::Overflow(..) => Some("integer overflow".into()),
        ExecutionError::FunctionError { function, message } => {
            Some(format!("function {function} failed: {message}"))
        }
        _ => None,
    }
}

fn show(value: &CelValue) -> String {
    match value {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        CelValue::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

enum Outcome {
    Pass,
    Fail,
    Error(String),
    Unsupported(String),
}

impl Rule {
    /// Compiles one `x-kubernetes-validations` entry.
    pub fn compile(raw: &Value, origin: &Origin, location: &str) -> Self {
        let text = |k: &str| raw.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let source = text("rule");
        let mut rule = Rule {
            message: text("message"),
            message_expression: text("messageExpression"),
            field_path: text("fieldPath").trim_start_matches('.').to_string(),
            reason: text("reason"),
            optional_old_self: raw.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
            uses_old_self: false,
            program: None,
            message_program: None,
            origin: origin.clone(),
            location: location.to_string(),
            skipped: OnceLock::new(),
            source,
        };
        match ENV.compile(&rule.source) {
            Ok(program) => {
                rule.uses_old_self = program.references().has_variable("oldSelf");
                rule.program = Some(program);
            }
            Err(e) => rule.skip(format!("does not compile: {e}")),
        }
        if !rule.message_expression.is_empty() {
            match ENV.compile(&rule.message_expression) {
                Ok(program) => rule.message_program = Some(program),
                Err(e) => rule.skip(format!("messageExpression does not compile: {e}")),
            }
        }
        rule
    }

    /// Why the rule is skipped, if it is.
    pub fn skipped(&self) -> Option<&SkippedRule> {
        self.skipped.get()
    }

    fn skip(&self, reason: String) {
        let skipped = SkippedRule {
            crd: self.origin.crd.clone(),
            version: self.origin.version.clone(),
            location: self.location.clone(),
            rule: self.source.clone(),
            reason,
        };
        if self.skipped.set(skipped.clone()).is_ok() {
            tracing::warn!("envtest: CEL rule skipped: {skipped}");
        }
    }

    fn context(
        &self,
        this: &CelValue,
        old: Option<&CelValue>,
    ) -> Result<Context<'static, 'static>, ExecutionError> {
        let mut ctx = Context::with_env(ENV.clone());
        ctx.add_variable_as_val("self", this.clone().try_into()?);
        if self.optional_old_self {
            let optional = match old {
                Some(v) => OptionalValue::of(v.clone()),
                None => OptionalValue::none(),
            };
            ctx.add_variable_as_val("oldSelf", CelValue::Opaque(Arc::new(optional)).try_into()?);
        } else if let Some(old) = old {
            ctx.add_variable_as_val("oldSelf", old.clone().try_into()?);
        }
        Ok(ctx)
    }

    fn evaluate(&self, this: &CelValue, old: Option<&CelValue>) -> (Outcome, Option<String>) {
        let Some(program) = &self.program else {
            return (Outcome::Unsupported(String::new()), None);
        };
        let ctx = match self.context(this, old) {
            Ok(ctx) => ctx,
            Err(e) => return (Outcome::Unsupported(format!("cannot bind self: {e}")), None),
        };
        let outcome = match program.execute(&ctx) {
            Ok(CelValue::Bool(true)) => Outcome::Pass,
            Ok(CelValue::Bool(false)) => Outcome::Fail,
            Ok(other) => Outcome::Unsupported(format!("evaluates to {other:?}, not a bool")),
            Err(e) => match runtime_error(&e) {
                Some(message) => Outcome::Error(message),
                None => Outcome::Unsupported(format!("cannot be evaluated: {e}")),
            },
        };
        let mut message = None;
        if matches!(outcome, Outcome::Fail)
            && let Some(program) = &self.message_program
        {
            match program.execute(&ctx) {
                Ok(CelValue::String(s)) => {
                    let trimmed = s.trim();
                    if !trimmed.is_empty() && !trimmed.contains('\n') {
                        message = Some(trimmed.to_string());
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    if runtime_error(&e).is_none() {
                        self.skip(format!("messageExpression cannot be evaluated: {e}"));
                    }
                }
            }
        }
        (outcome, message)
    }

    fn error_string(&self) -> String {
        if self.message.trim().is_empty() {
            self.source.trim().to_string()
        } else {
            self.message.trim().to_string()
        }
    }
}

/// Runs the CEL rules of `schema` and everything below it over `value` (`old`: the
/// correlated previous value, on update). `root`: `value` is a whole resource.
pub fn validate(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    root: bool,
    path: &mut Path,
    out: &mut Findings,
) {
    if !schema.has_rules || value.is_null() {
        return;
    }
    let start = out.issues.len();
    run_rules(schema, value, old, root, path, out);
    for branch in &schema.all_of {
        run_rules(branch, value, old, false, path, out);
    }
    match value {
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref().filter(|s| s.has_rules) {
                let old_items = if matches!(schema.list_type, ListType::Map(_)) {
                    correlate_list(schema, old)
                } else {
                    None
                };
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    let old_item = old_items.as_ref().and_then(|o| o.find(schema, item));
                    validate(item_schema, item, old_item, false, path, out);
                    path.pop();
                }
            }
        }
        Value::Object(map) => {
            let old_map = old.and_then(Value::as_object);
            for (key, child) in map {
                let (seg, child_schema) = match schema.properties.get(key) {
                    Some(p) => (Seg::Prop(key.clone()), Some(p)),
                    None => (Seg::Key(key.clone()), schema.additional.as_deref()),
                };
                let Some(child_schema) = child_schema.filter(|s| s.has_rules) else {
                    continue;
                };
                path.push(seg);
                validate(
                    child_schema,
                    child,
                    old_map.and_then(|m| m.get(key)),
                    false,
                    path,
                    out,
                );
                path.pop();
            }
        }
        _ => {}
    }
    if out.issues.len() > start && old.is_some_and(|o| o == value) {
        out.ratchet(start);
    }
}

fn run_rules(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    root: bool,
    path: &Path,
    out: &mut Findings,
) {
    if schema.rules.is_empty() {
        return;
    }
    let convert = |v: &Value| {
        if root {
            root_self(v, schema)
        } else {
            to_cel(v, Some(schema))
        }
    };
    let this = convert(value);
    let old_cel = old.filter(|o| !o.is_null()).map(convert);
    let type_name = schema.kind.map(Type::name).unwrap_or_default();
    for rule in &schema.rules {
        if rule.program.is_none() {
            continue;
        }
        if rule.uses_old_self && old_cel.is_none() && !rule.optional_old_self {
            continue;
        }
        let (outcome, message) = rule.evaluate(&this, old_cel.as_ref());
        let ratchet = if rule.uses_old_self {
            Ratchet::Never
        } else {
            Ratchet::Warn
        };
        match outcome {
            Outcome::Pass => {}
            Outcome::Unsupported(reason) => {
                if !reason.is_empty() {
                    rule.skip(reason);
                }
            }
            Outcome::Error(error) => out.push(
                path.field(),
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"{type_name}\": {error} evaluating rule: {}",
                    rule.error_string()
                ),
                ratchet,
            ),
            Outcome::Fail => {
                let detail = message.unwrap_or_else(|| {
                    if rule.message.trim().is_empty() {
                        format!("failed rule: {}", rule.error_string())
                    } else {
                        rule.message.trim().to_string()
                    }
                });
                let mut at = path.clone();
                if !rule.field_path.is_empty() {
                    at.push(Seg::Prop(rule.field_path.clone()));
                }
                // kube's fieldErrorForReason: the bad value is the schema's type name
                // (`spec: Invalid value: "object": …`), whatever the value.
                let (reason, text) = match rule.reason.as_str() {
                    "FieldValueForbidden" => ("FieldValueForbidden", format!("Forbidden: {detail}")),
                    "FieldValueRequired" => ("FieldValueRequired", format!("Required value: {detail}")),
                    "FieldValueDuplicate" => {
                        ("FieldValueDuplicate", format!("Duplicate value: \"{type_name}\""))
                    }
                    _ => (
                        "FieldValueInvalid",
                        format!("Invalid value: \"{type_name}\": {detail}"),
                    ),
                };
                out.push(at.field(), reason, text, ratchet);
            }
        }
    }
}

/// Why an expression does not compile, worded as kube's CEL compiler (`compilation failed:`
/// and cel-go's error listing, ` | ` before the source line and the caret). `None` when it
/// parses, or when the parser here lacks a syntax cel-go has (then the rule is skipped at
/// evaluation instead). Only syntax is checked: there is no type checker here.
pub fn compile_error(source: &str) -> Option<String> {
    let errors = ENV.compile(source).err()?;
    let text = errors.to_string();
    if text.contains("unsupported syntax") {
        return None;
    }
    Some(format!("compilation failed: {}", text.replace("\n| ", "\n | ")))
}

/// Every skipped rule of a schema tree.
pub fn skipped(schema: &Schema) -> Vec<SkippedRule> {
    schema
        .rules()
        .into_iter()
        .filter_map(|r| r.skipped().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(rule: &str, this: Value, old: Option<Value>) -> String {
        let origin = Origin {
            crd: "t".into(),
            version: "v1".into(),
        };
        let r = Rule::compile(&json!({"rule": rule}), &origin, "x");
        let this = to_cel(&this, None);
        let old = old.map(|o| to_cel(&o, None));
        match r.evaluate(&this, old.as_ref()).0 {
            Outcome::Pass => "pass".into(),
            Outcome::Fail => "fail".into(),
            Outcome::Error(e) => format!("error: {e}"),
            Outcome::Unsupported(e) => format!("unsupported: {e} {:?}", r.skipped()),
        }
    }

    #[test]
    fn constructs() {
        let obj = json!({"a": 1, "b": "xyz", "l": ["ab", "ac"], "m": {"k": "v"}});
        assert_eq!(eval("has(self.a) && !has(self.z)", obj.clone(), None), "pass");
        assert_eq!(eval("self.a == 1 || self.z == 2", obj.clone(), None), "pass");
        assert_eq!(eval("self.z == 2 || self.a == 1", obj.clone(), None), "pass");
        assert_eq!(eval("self.z == 2", obj.clone(), None), "error: no such key: z");
        assert_eq!(
            eval("self.l.all(x, x.startsWith('a'))", obj.clone(), None),
            "pass"
        );
        assert_eq!(
            eval("self.l.exists_one(x, x.endsWith('c'))", obj.clone(), None),
            "pass"
        );
        assert_eq!(
            eval(
                "self.l.map(x, x + '!').filter(x, x.contains('b')).size() == 1",
                obj.clone(),
                None
            ),
            "pass"
        );
        assert_eq!(eval("'k' in self.m && 'ab' in self.l", obj.clone(), None), "pass");
        assert_eq!(
            eval("size(self.b) == 3 && self.b.matches('^x')", obj.clone(), None),
            "pass"
        );
        assert_eq!(
            eval("self.l.isSorted() && [1,2,3].sum() == 6", obj.clone(), None),
            "pass"
        );
        assert_eq!(
            eval(
                "self.b.lowerAscii() == 'xyz' && self.b.split('y').size() == 2",
                obj.clone(),
                None
            ),
            "pass"
        );
        assert_eq!(eval("self == oldSelf", json!("a"), Some(json!("b"))), "fail");
        assert_eq!(eval("self.b.find('[yz]+') == 'yz'", obj.clone(), None), "pass");
    }

    #[test]
    fn optional_old_self() {
        let origin = Origin {
            crd: "t".into(),
            version: "v1".into(),
        };
        let r = Rule::compile(
            &json!({"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true}),
            &origin,
            "x",
        );
        let (o, _) = r.evaluate(&CelValue::Int(1), None);
        assert!(matches!(o, Outcome::Pass), "{:?}", r.skipped());
        let (o, _) = r.evaluate(&CelValue::Int(1), Some(&CelValue::Int(2)));
        assert!(matches!(o, Outcome::Fail), "{:?}", r.skipped());
        let r = Rule::compile(
            &json!({"rule": "self.?x.orValue(5) == 5", "optionalOldSelf": true}),
            &origin,
            "x",
        );
        let (o, _) = r.evaluate(&to_cel(&json!({}), None), None);
        assert!(matches!(o, Outcome::Pass), "{:?}", r.skipped());
    }

    #[test]
    fn escaping() {
        assert_eq!(escape("x-y.z/w"), "x__dash__y__dot__z__slash__w");
        assert_eq!(escape("namespace"), "__namespace__");
        assert_eq!(escape("a__b"), "a__underscores__b");
    }
}
