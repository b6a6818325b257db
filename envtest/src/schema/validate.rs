//! Validation of an object against a compiled [`Schema`], worded and ordered as
//! kube-apiserver words and orders it. A write is checked in the passes of
//! apiextensions-apiserver's strategy, each one's causes after the previous one's:
//!
//! 1. [`validate`]: the OpenAPI keywords, as kube-openapi's `SchemaValidator` (per node: type,
//!    `anyOf`/`oneOf`/`allOf`/`not`, string, format, number, array, `enum`, object; an object's
//!    properties before its `required`), its messages turned into field errors by
//!    apiextensions-apiserver (`kubeOpenAPIResultToFieldErrors`), identical messages reported
//!    once (kube-openapi's `Result.AddErrors`), with the ratcheting of unchanged values on
//!    update (`CRDValidationRatcheting`, on by default since Kubernetes 1.30). A `/status`
//!    write validates `status` only, against the status schema as a root of its own
//!    ([`Path::within`]): names in messages are relative to `status`.
//! 2. [`embedded`]: `apiVersion` and `kind` of `x-kubernetes-embedded-resource` objects
//!    (`schemaobjectmeta.Validate`; not on `/status` writes).
//! 3. [`list_types`]: the uniqueness of `x-kubernetes-list-type` `set` and `map` lists
//!    (`structurallisttype.ValidateListSetsAndMaps`; skipped on update when the old object
//!    already broke it).
//! 4. The CEL rules ([`crate::schema::cel`]), or the "not checked" cause when passes 1–3
//!    found a blocking error.
//!
//! What still differs from kube-apiserver here:
//!
//! * kube-openapi walks an object's properties in Go map order, which is random, so the
//!   order of the causes of sibling fields varies from one request to the next there; here
//!   it is alphabetical (one of those orders); apart from that and the points below, the
//!   order is kube-apiserver's.
//! * When no `anyOf`/`oneOf` branch validates, kube-openapi keeps the errors of the branch
//!   with the most checks that passed (`MatchCount`); here, of the branch with the fewest
//!   errors (the first on a tie, as there).
//! * After a type error at a node, kube-openapi still runs that node's `enum` and
//!   `allOf`/`anyOf`/`oneOf`/`not`; here the node's other checks are skipped.
//! * The `metadata` of an embedded resource is not validated (kube-apiserver runs
//!   `ValidateObjectMeta` on it: name, labels, annotations, ...).

use std::collections::HashMap;

use serde_json::Value;

use super::{Bound, ListType, Schema, Type};
use crate::meta::errors::Cause;

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A declared property (`.name`).
    Prop(String),
    /// An array index (`[3]`).
    Index(usize),
    /// A key of a map (`additionalProperties`): `[key]` in field paths, `.key` in
    /// kube-openapi's names.
    Key(String),
}

/// A field path being walked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path {
    /// The steps from the object's root.
    pub segs: Vec<Seg>,
    /// How many leading steps kube-openapi's names leave out: 0 when the whole object is
    /// validated, 1 for the `status` of a `/status` write (validated against the status
    /// schema as its own root, so `status.selector` is named `selector` in messages).
    pub base: usize,
}

impl Path {
    /// A path at `segs`, whose subtree is validated with its own schema as the root.
    pub fn within(segs: Vec<Seg>) -> Self {
        let base = segs.len();
        Self { segs, base }
    }

    /// As apimachinery's `field.Path.String()` (`spec.items[0].labels[a]`); `<nil>` at the root.
    pub fn field(&self) -> String {
        if self.segs.is_empty() {
            return "<nil>".into();
        }
        render(&self.segs, true)
    }

    /// As kube-openapi names a value (`spec.items[0].labels.a`), relative to the root of the
    /// schema being validated.
    pub fn name(&self) -> String {
        render(self.segs.get(self.base..).unwrap_or_default(), false)
    }

    /// The `fldPath` kube-openapi's errors are placed under: `<nil>` for the whole object,
    /// `status` on a `/status` write. Composite errors (`allOf`, ...) are reported there.
    pub fn root_field(&self) -> String {
        let root = self.segs.get(..self.base).unwrap_or_default();
        if root.is_empty() {
            "<nil>".into()
        } else {
            render(root, true)
        }
    }

    /// The `field` of a kube-openapi error: `fldPath.Child(name)`.
    fn field_or_name(&self) -> String {
        let name = self.name();
        if name.is_empty() {
            self.root_field()
        } else if self.base == 0 {
            name
        } else {
            format!("{}.{name}", self.root_field())
        }
    }

    /// Steps into `seg`.
    pub fn push(&mut self, seg: Seg) {
        self.segs.push(seg);
    }

    /// Steps back out.
    pub fn pop(&mut self) {
        self.segs.pop();
    }
}

fn render(segs: &[Seg], keys_bracketed: bool) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Prop(p) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(p);
            }
            Seg::Key(k) if keys_bracketed => {
                out.push('[');
                out.push_str(k);
                out.push(']');
            }
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%v` of a float64.
pub fn go_float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
        return format!("{}", f as i128);
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e21).contains(&abs) {
        let e = format!("{f:e}");
        if let Some((mantissa, exp)) = e.split_once('e') {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            let digits = if digits.len() < 2 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            return format!("{mantissa}e{sign}{digits}");
        }
    }
    format!("{f}")
}

/// Go's `%v` of a JSON number.
pub fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else {
        go_float(n.as_f64().unwrap_or_default())
    }
}

/// How apimachinery's `ErrorBody` shows a bad value: `null` as the string `"null"`,
/// strings quoted, numbers and booleans as they are, maps and lists as Go's `%#v` of the
/// decoded value (`map[string]interface {}{"type":"Ready"}`).
pub fn bad_value(value: &Value) -> String {
    match value {
        Value::Null => go_quote("null"),
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n),
        Value::Bool(b) => b.to_string(),
        other => go_sharp_v(other),
    }
}

/// Go's `%#v` of a decoded JSON value (maps with sorted keys, as `fmt` prints them).
pub fn go_sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".into(),
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", go_quote(k), go_sharp_v(&map[k])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// The JSON type name kube-openapi infers for a value.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// How an error may be ratcheted when its value did not change on update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ratchet {
    /// A schema keyword: dropped.
    Drop,
    /// A CEL rule without `oldSelf`: turned into a warning.
    Warn,
    /// A transition rule: always reported.
    Never,
}

/// One error found by a walk.
#[derive(Debug, Clone)]
pub struct Issue {
    /// The `details.causes[]` entry.
    pub cause: Cause,
    /// Ratcheting behaviour.
    pub ratchet: Ratchet,
}

/// Errors and warnings of a validation.
#[derive(Debug, Default)]
pub struct Findings {
    /// Errors so far.
    pub issues: Vec<Issue>,
    /// Warnings (ratcheted CEL failures).
    pub warnings: Vec<String>,
}

impl Findings {
    /// Adds a cause.
    pub fn push(&mut self, field: String, reason: &str, message: String, ratchet: Ratchet) {
        self.issues.push(Issue {
            cause: Cause {
                reason: reason.into(),
                message,
                field,
            },
            ratchet,
        });
    }

    /// Ratchets the issues found since `start` (the value at their node is unchanged).
    pub fn ratchet(&mut self, start: usize) {
        let tail: Vec<Issue> = self.issues.drain(start..).collect();
        for issue in tail {
            match issue.ratchet {
                Ratchet::Drop => {}
                Ratchet::Warn => self
                    .warnings
                    .push(format!("{}: {}", issue.cause.field, issue.cause.message)),
                Ratchet::Never => self.issues.push(issue),
            }
        }
    }

    fn invalid(&mut self, path: &Path, value: &str, detail: &str) {
        self.push(
            path.field_or_name(),
            "FieldValueInvalid",
            format!("Invalid value: {value}: {detail}"),
            Ratchet::Drop,
        );
    }

    fn type_invalid(&mut self, path: &Path, actual: &str, expected: &str) {
        let name = path.name();
        self.push(
            path.field_or_name(),
            "FieldValueTypeInvalid",
            format!(
                "Invalid value: {}: {name} in body must be of type {expected}: {}",
                go_quote(actual),
                go_quote(actual)
            ),
            Ratchet::Drop,
        );
    }

    /// Drops the issues found since `start` whose cause repeats an earlier one since `start`
    /// (kube-openapi's `Result` keeps each message once).
    pub fn dedup_from(&mut self, start: usize) {
        let mut index = start;
        while index < self.issues.len() {
            let repeated = self.issues[start..index]
                .iter()
                .any(|i| i.cause == self.issues[index].cause);
            if repeated {
                self.issues.remove(index);
            } else {
                index += 1;
            }
        }
    }

    /// Whether CEL rules may run: kube-apiserver skips them when the object has type,
    /// enum, required, too-long or too-many errors.
    pub fn blocking(&self) -> bool {
        self.issues.iter().any(|i| {
            matches!(
                i.cause.reason.as_str(),
                "FieldValueNotSupported"
                    | "FieldValueRequired"
                    | "FieldValueTooLong"
                    | "FieldValueTooMany"
                    | "FieldValueTypeInvalid"
            )
        })
    }
}

/// Validates `value` (a whole object when `path` is at the root of the object) against
/// `schema`'s OpenAPI keywords (pass 1 of the module doc); `old` is the correlated previous
/// value on update. The caller de-duplicates ([`Findings::dedup_from`]).
pub fn validate(schema: &Schema, value: &Value, old: Option<&Value>, path: &mut Path, out: &mut Findings) {
    let start = out.issues.len();
    check(schema, value, old, path, out);
    if out.issues.len() > start && old.is_some_and(|o| o == value) {
        out.ratchet(start);
    }
}

fn check(s: &Schema, value: &Value, old: Option<&Value>, path: &mut Path, out: &mut Findings) {
    if value.is_null() {
        if !s.nullable && (s.int_or_string || matches!(s.kind, Some(k) if k != Type::Any)) {
            let expected = if s.int_or_string {
                "integer,string"
            } else {
                s.kind.map(Type::name).unwrap_or_default()
            };
            out.type_invalid(path, "null", expected);
        }
        return;
    }
    let actual = json_type(value);
    if s.int_or_string {
        if !matches!(actual, "integer" | "string") && !is_integral(value) {
            out.type_invalid(path, actual, "integer,string");
            return;
        }
    } else if let Some(kind) = s.kind
        && kind != Type::Any
    {
        let ok = match kind {
            Type::Integer => actual == "integer" || is_integral(value),
            Type::Number => matches!(actual, "integer" | "number"),
            other => other.name() == actual,
        };
        if !ok {
            out.type_invalid(path, actual, kind.name());
            return;
        }
    }
    // kube-openapi's validators of a node, in their order: type (above), schema props
    // (anyOf, oneOf, allOf, not), string, format, number, slice, common (enum), object.
    composition(s, value, path, out);
    match value {
        Value::String(text) => {
            check_string(s, text, path, out);
            check_format(s, text, path, out);
        }
        Value::Number(n) => check_number(s, n, path, out),
        Value::Array(items) => check_array(s, items, old, path, out),
        _ => {}
    }
    if let Some(values) = &s.enumeration
        && !values.iter().any(|v| json_equal(v, value))
    {
        let supported: Vec<String> = values
            .iter()
            .map(|v| match v {
                Value::String(s) => go_quote(s),
                other => go_quote(&serde_json::to_string(other).unwrap_or_default()),
            })
            .collect();
        let message = if supported.is_empty() {
            format!("Unsupported value: {}", bad_value(value))
        } else {
            format!(
                "Unsupported value: {}: supported values: {}",
                bad_value(value),
                supported.join(", ")
            )
        };
        out.push(
            path.field_or_name(),
            "FieldValueNotSupported",
            message,
            Ratchet::Drop,
        );
    }
    if let Value::Object(map) = value {
        check_object(s, map, old, path, out);
    }
}

fn is_integral(value: &Value) -> bool {
    value.as_f64().is_some_and(|f| f.fract() == 0.0) && value.is_number()
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A composite error of kube-openapi (`errors.New(CompositeErrorCode, ...)`, not a
/// `*Validation`): apiextensions-apiserver reports it as `field.Invalid(fldPath, "", msg)`,
/// at the root of the validation, naming the value in the message.
fn composite(path: &Path, out: &mut Findings, message: String) {
    out.push(
        path.root_field(),
        "FieldValueInvalid",
        format!("Invalid value: \"\": {message}"),
        Ratchet::Drop,
    );
}

/// `anyOf`, `oneOf`, `allOf` and `not`, as kube-openapi's `schemaPropsValidator`.
fn composition(s: &Schema, value: &Value, path: &mut Path, out: &mut Findings) {
    let quiet = |branch: &Schema, path: &mut Path| {
        let mut scratch = Findings::default();
        check(branch, value, None, path, &mut scratch);
        scratch
    };
    if !s.any_of.is_empty() {
        let mut best: Option<Findings> = None;
        let mut matched = false;
        for branch in &s.any_of {
            let found = quiet(branch, path);
            if found.issues.is_empty() {
                matched = true;
                best = None;
                break;
            }
            if best.as_ref().is_none_or(|b| found.issues.len() < b.issues.len()) {
                best = Some(found);
            }
        }
        if !matched {
            composite(
                path,
                out,
                format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(&path.name())
                ),
            );
        }
        if let Some(best) = best {
            out.issues.extend(best.issues);
        }
    }
    if !s.one_of.is_empty() {
        let mut valid = 0;
        let mut best: Option<Findings> = None;
        for branch in &s.one_of {
            let found = quiet(branch, path);
            if found.issues.is_empty() {
                valid += 1;
                best = None;
            } else if valid == 0 && best.as_ref().is_none_or(|b| found.issues.len() < b.issues.len()) {
                best = Some(found);
            }
        }
        if valid != 1 {
            let extra = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            composite(
                path,
                out,
                format!(
                    "{} must validate one and only one schema (oneOf). {extra}",
                    go_quote(&path.name())
                ),
            );
            if let Some(best) = best {
                out.issues.extend(best.issues);
            }
        }
    }
    if !s.all_of.is_empty() {
        let mut valid = 0;
        for branch in &s.all_of {
            let found = quiet(branch, path);
            if found.issues.is_empty() {
                valid += 1;
            }
            out.issues.extend(found.issues);
        }
        if valid != s.all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            composite(
                path,
                out,
                format!(
                    "{} must validate all the schemas (allOf){none}",
                    go_quote(&path.name())
                ),
            );
        }
    }
    if let Some(not) = &s.not
        && quiet(not, path).issues.is_empty()
    {
        composite(
            path,
            out,
            format!("{} must not validate the schema (not)", go_quote(&path.name())),
        );
    }
}

fn check_string(s: &Schema, text: &str, path: &Path, out: &mut Findings) {
    let name = path.name();
    let quoted = go_quote(text);
    if let Some(max) = s.max_length
        && text.chars().count() as u64 > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        out.push(
            path.field_or_name(),
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} {unit}"),
            Ratchet::Drop,
        );
        return;
    }
    if let Some(min) = s.min_length
        && (text.chars().count() as u64) < min
    {
        out.invalid(
            path,
            &quoted,
            &format!("{name} in body should be at least {min} chars long"),
        );
        return;
    }
    if let Some((pattern, re)) = &s.pattern
        && !re.is_match(text)
    {
        out.invalid(path, &quoted, &format!("{name} in body should match '{pattern}'"));
    }
}

fn check_format(s: &Schema, text: &str, path: &Path, out: &mut Findings) {
    if s.format.is_empty() || !matches!(s.kind, Some(Type::String)) {
        return;
    }
    let Some(valid) = super::formats::check(&s.format, text) else {
        return;
    };
    if !valid {
        let name = path.name();
        let quoted = go_quote(text);
        out.push(
            path.field_or_name(),
            "FieldValueTypeInvalid",
            format!(
                "Invalid value: {quoted}: {name} in body must be of type {}: {quoted}",
                s.format
            ),
            Ratchet::Drop,
        );
    }
}

fn check_number(s: &Schema, n: &serde_json::Number, path: &Path, out: &mut Findings) {
    let name = path.name();
    let shown = go_number(n);
    let f = n.as_f64().unwrap_or_default();
    if let Some(factor) = s.multiple_of
        && factor > 0.0
        && ((f / factor).fract().abs() > 1e-9)
    {
        out.invalid(
            path,
            &shown,
            &format!("{name} in body should be a multiple of {}", go_float(factor)),
        );
    }
    if let Some(Bound {
        value: max,
        exclusive,
    }) = s.maximum
    {
        let bad = if exclusive { f >= max } else { f > max };
        if bad {
            let op = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            out.invalid(
                path,
                &shown,
                &format!("{name} in body should be {op} {}", go_float(max)),
            );
        }
    }
    if let Some(Bound {
        value: min,
        exclusive,
    }) = s.minimum
    {
        let bad = if exclusive { f <= min } else { f < min };
        if bad {
            let op = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.invalid(
                path,
                &shown,
                &format!("{name} in body should be {op} {}", go_float(min)),
            );
        }
    }
}

fn check_array(s: &Schema, items: &[Value], old: Option<&Value>, path: &mut Path, out: &mut Findings) {
    if let Some(item_schema) = &s.items {
        let old_items = correlate_list(s, old);
        for (i, item) in items.iter().enumerate() {
            path.push(Seg::Index(i));
            let old_item = old_items.as_ref().and_then(|o| o.find(s, item));
            validate(item_schema, item, old_item, path, out);
            path.pop();
        }
    }
    let name = path.name();
    let size = items.len() as u64;
    if let Some(min) = s.min_items
        && size < min
    {
        out.invalid(
            path,
            &size.to_string(),
            &format!("{name} in body should have at least {min} items"),
        );
    }
    if let Some(max) = s.max_items
        && size > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        out.push(
            path.field_or_name(),
            "FieldValueTooMany",
            format!("Too many: {size}: must have at most {max} {unit}"),
            Ratchet::Drop,
        );
    }
    if s.unique_items && has_duplicates(items) {
        out.invalid(
            path,
            "\"\"",
            &format!("{name} in body shouldn't contain duplicates"),
        );
    }
}

/// The key of a list-type map item (missing keys take their schema default), used to
/// correlate old items.
pub fn map_key(
    keys: &[String],
    item: &serde_json::Map<String, Value>,
    schema: Option<&Schema>,
) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for k in keys {
        let v = item.get(k).cloned().or_else(|| {
            schema
                .and_then(|s| s.properties.get(k))
                .and_then(|p| p.default.clone())
        });
        if let Some(v) = v {
            out.insert(k.clone(), v);
        }
    }
    out
}

fn has_duplicates(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].iter().any(|b| json_equal(a, b)))
}

/// The previous items of a list, correlatable by map keys (`x-kubernetes-list-type: map`)
/// or by value (`set`); atomic lists do not correlate.
pub struct OldList<'a> {
    items: &'a [Value],
}

impl<'a> OldList<'a> {
    /// The old item matching `item`.
    pub fn find(&self, s: &Schema, item: &Value) -> Option<&'a Value> {
        match &s.list_type {
            ListType::Map(keys) => {
                let key = item.as_object().map(|m| map_key(keys, m, s.items.as_deref()))?;
                self.items.iter().find(|o| {
                    o.as_object()
                        .is_some_and(|m| map_key(keys, m, s.items.as_deref()) == key)
                })
            }
            ListType::Set => self.items.iter().find(|o| json_equal(o, item)),
            ListType::Atomic => None,
        }
    }
}

/// Correlates an old list for ratcheting and transition rules.
pub fn correlate_list<'a>(s: &Schema, old: Option<&'a Value>) -> Option<OldList<'a>> {
    if s.list_type == ListType::Atomic {
        return None;
    }
    old.and_then(Value::as_array).map(|items| OldList { items })
}

/// An object, as kube-openapi's `objectValidator`: too few or too many properties is the
/// only error of the object; then its properties, then `required`.
fn check_object(
    s: &Schema,
    map: &serde_json::Map<String, Value>,
    old: Option<&Value>,
    path: &mut Path,
    out: &mut Findings,
) {
    let name = path.name();
    let count = map.len() as u64;
    if let Some(min) = s.min_properties
        && count < min
    {
        out.invalid(
            path,
            &count.to_string(),
            &format!("{name} in body should have at least {min} properties"),
        );
        return;
    }
    if let Some(max) = s.max_properties
        && count > max
    {
        let unit = if max == 1 { "item" } else { "items" };
        out.push(
            path.field_or_name(),
            "FieldValueTooMany",
            format!("Too many: {count}: must have at most {max} {unit}"),
            Ratchet::Drop,
        );
        return;
    }
    let old_map = old.and_then(Value::as_object);
    for (key, child) in map {
        let old_child = old_map.and_then(|m| m.get(key));
        if let Some(prop) = s.properties.get(key) {
            path.push(Seg::Prop(key.clone()));
            validate(prop, child, old_child, path, out);
            path.pop();
        } else if let Some(additional) = &s.additional {
            path.push(Seg::Key(key.clone()));
            validate(additional, child, old_child, path, out);
            path.pop();
        } else if s.additional_forbidden && !s.preserve_unknown {
            out.push(
                path.field_or_name(),
                "FieldValueForbidden",
                format!("Forbidden: {name}.{key} in body is a forbidden property"),
                Ratchet::Drop,
            );
        }
    }
    for required in &s.required {
        if !map.contains_key(required) {
            path.push(Seg::Prop(required.clone()));
            out.push(
                path.field_or_name(),
                "FieldValueRequired",
                "Required value".into(),
                Ratchet::Drop,
            );
            path.pop();
        }
    }
}

/// `apiVersion` and `kind` of every `x-kubernetes-embedded-resource` object below `value`
/// (pass 2 of the module doc), as apiextensions-apiserver's `schemaobjectmeta.Validate`:
/// both required, strings, `apiVersion` a group/version, `kind` a DNS-1035 label in any
/// case. Not ratcheted. Walks only the parts of the schema that have such objects.
pub fn embedded(s: &Schema, value: &Value, path: &mut Path, out: &mut Findings) {
    if !s.has_embedded {
        return;
    }
    match value {
        Value::Object(map) => {
            if s.embedded {
                embedded_resource(map, path, out);
            }
            for (key, child) in map {
                if let Some(prop) = s.properties.get(key) {
                    path.push(Seg::Prop(key.clone()));
                    embedded(prop, child, path, out);
                    path.pop();
                } else if let Some(additional) = &s.additional {
                    path.push(Seg::Key(key.clone()));
                    embedded(additional, child, path, out);
                    path.pop();
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &s.items {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    embedded(item_schema, item, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn embedded_resource(map: &serde_json::Map<String, Value>, path: &mut Path, out: &mut Findings) {
    for key in ["apiVersion", "kind"] {
        if !map.contains_key(key) {
            path.push(Seg::Prop(key.into()));
            out.push(
                path.field(),
                "FieldValueRequired",
                "Required value".into(),
                Ratchet::Never,
            );
            path.pop();
        }
    }
    for (key, value) in map {
        if !matches!(key.as_str(), "apiVersion" | "kind") {
            continue;
        }
        path.push(Seg::Prop(key.clone()));
        match value {
            Value::String(text) if text.is_empty() => {
                out.push(
                    path.field(),
                    "FieldValueRequired",
                    "Required value".into(),
                    Ratchet::Never,
                );
            }
            Value::String(text) if key == "apiVersion" => {
                if text != "/" && text.matches('/').count() > 1 {
                    out.push(
                        path.field(),
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: {}: unexpected GroupVersion string: {text}",
                            go_quote(text)
                        ),
                        Ratchet::Never,
                    );
                }
            }
            Value::String(text) => {
                let problems = dns1035_label(&text.to_lowercase());
                if !problems.is_empty() {
                    out.push(
                        path.field(),
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: {}: may have mixed case, but should otherwise match: {}",
                            go_quote(text),
                            problems.join(",")
                        ),
                        Ratchet::Never,
                    );
                }
            }
            other => out.push(
                path.field(),
                "FieldValueInvalid",
                format!("Invalid value: {}: must be a string", bad_value(other)),
                Ratchet::Never,
            ),
        }
        path.pop();
    }
}

/// apimachinery's `IsDNS1035Label`.
fn dns1035_label(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    let bytes = value.as_bytes();
    let valid = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if !valid {
        problems.push(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    problems
}

/// The uniqueness of `x-kubernetes-list-type` `set` and `map` lists below `value` (pass 3
/// of the module doc), as apiextensions-apiserver's `ValidateListSetsAndMaps`: a repeated
/// item (set) or key (map) is reported once, at its second appearance; a map list with an
/// item that is neither an object nor `null` is reported at that item only. Walks only the
/// parts of the schema that have such lists.
pub fn list_types(s: &Schema, value: &Value, path: &mut Path, out: &mut Findings) {
    if !s.has_list_types {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if let Some(additional) = &s.additional {
                    path.push(Seg::Key(key.clone()));
                    list_types(additional, child, path, out);
                    path.pop();
                } else if let Some(prop) = s.properties.get(key) {
                    path.push(Seg::Prop(key.clone()));
                    list_types(prop, child, path, out);
                    path.pop();
                }
            }
        }
        Value::Array(items) => {
            match &s.list_type {
                ListType::Atomic => {}
                ListType::Set => {
                    for i in repeated(items.iter()) {
                        path.push(Seg::Index(i));
                        out.push(
                            path.field(),
                            "FieldValueDuplicate",
                            format!("Duplicate value: {}", bad_value(&items[i])),
                            Ratchet::Never,
                        );
                        path.pop();
                    }
                }
                ListType::Map(keys) => list_map(keys, items, path, out),
            }
            if let Some(item_schema) = &s.items {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    list_types(item_schema, item, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

fn list_map(keys: &[String], items: &[Value], path: &mut Path, out: &mut Findings) {
    if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
        path.push(Seg::Index(i));
        out.push(
            path.field(),
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: must be an object for an array of list-type map",
                bad_value(&items[i])
            ),
            Ratchet::Never,
        );
        path.pop();
        return;
    }
    // A key is the item's map-key fields that are present (an unspecified key is `{}`).
    let key_of = |item: &Value| -> Value {
        let mut key = serde_json::Map::new();
        if let Some(map) = item.as_object() {
            for k in keys {
                if let Some(v) = map.get(k) {
                    key.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(key)
    };
    let item_keys: Vec<Value> = items.iter().map(key_of).collect();
    for i in repeated(item_keys.iter()) {
        path.push(Seg::Index(i));
        out.push(
            path.field(),
            "FieldValueDuplicate",
            format!("Duplicate value: {}", bad_value(&item_keys[i])),
            Ratchet::Never,
        );
        path.pop();
    }
}

/// The index of the second appearance of every value that appears more than once (Go's
/// `validateListSet`: values are equal when they are the same JSON, `1` is not `1.0`).
fn repeated<'a>(values: impl ExactSizeIterator<Item = &'a Value>) -> Vec<usize> {
    let mut out = Vec::new();
    if values.len() <= 1 {
        return out;
    }
    if values.len() <= 16 {
        let mut seen: Vec<(&Value, u32)> = Vec::with_capacity(values.len());
        for (i, value) in values.enumerate() {
            match seen.iter_mut().find(|(v, _)| *v == value) {
                Some((_, times)) => {
                    if *times == 1 {
                        out.push(i);
                    }
                    *times += 1;
                }
                None => seen.push((value, 1)),
            }
        }
    } else {
        let mut seen: HashMap<String, u32> = HashMap::with_capacity(values.len());
        for (i, value) in values.enumerate() {
            let times = seen
                .entry(serde_json::to_string(value).unwrap_or_default())
                .or_insert(0);
            if *times == 1 {
                out.push(i);
            }
            *times += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bad_values_print_as_apimachinery_error_body() {
        assert_eq!(bad_value(&Value::Null), "\"null\"");
        assert_eq!(bad_value(&json!("a\"b")), "\"a\\\"b\"");
        assert_eq!(bad_value(&json!(80)), "80");
        assert_eq!(bad_value(&json!(1.5)), "1.5");
        assert_eq!(
            bad_value(&json!({"type": "Ready"})),
            "map[string]interface {}{\"type\":\"Ready\"}"
        );
        assert_eq!(
            bad_value(&json!({"protocol": "TCP", "name": "a", "port": 80})),
            "map[string]interface {}{\"name\":\"a\", \"port\":80, \"protocol\":\"TCP\"}"
        );
        assert_eq!(
            bad_value(&json!(["a", null, {"b": true}, []])),
            "[]interface {}{\"a\", interface {}(nil), map[string]interface {}{\"b\":true}, []interface {}{}}"
        );
    }
}
