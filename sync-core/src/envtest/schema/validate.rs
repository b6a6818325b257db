//! Validation of an object against a compiled [`Schema`], worded as kube-apiserver words it
//! (kube-openapi's messages turned into field errors by apiextensions-apiserver), with the
//! list-type checks of `x-kubernetes-list-type`, then the CEL rules ([`super::super::cel`]),
//! and the ratcheting of unchanged values on update (`CRDValidationRatcheting`, on by
//! default since Kubernetes 1.30).

use std::collections::HashSet;

use serde_json::Value;

use super::{Bound, ListType, Schema, Type};
use crate::envtest::errors::Cause;

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
pub struct Path(pub Vec<Seg>);

impl Path {
    /// As apimachinery's `field.Path.String()` (`spec.items[0].labels[a]`); `<nil>` at the root.
    pub fn field(&self) -> String {
        if self.0.is_empty() {
            return "<nil>".into();
        }
        self.render(true)
    }

    /// As kube-openapi names a value (`spec.items[0].labels.a`).
    pub fn name(&self) -> String {
        self.render(false)
    }

    fn render(&self, keys_bracketed: bool) -> String {
        let mut out = String::new();
        for seg in &self.0 {
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

    fn push(&mut self, seg: Seg) {
        self.0.push(seg);
    }

    fn pop(&mut self) {
        self.0.pop();
    }
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

/// How apimachinery's `ErrorBody` shows a bad value: strings quoted, numbers and booleans
/// as they are, anything else as JSON.
pub fn bad_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n),
        Value::Bool(b) => b.to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
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

impl Path {
    /// The `field` of a kube-openapi error: its name (the root is `""`... shown as `<nil>`).
    fn field_or_name(&self) -> String {
        if self.0.is_empty() {
            "<nil>".into()
        } else {
            self.name()
        }
    }
}

/// Validates `value` (a whole object when `path` is empty) against `schema`; `old` is the
/// correlated previous value on update. Schema keywords and list types only; CEL rules are
/// the second pass ([`crate::envtest::cel::validate`]).
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
    composition(s, value, path, out);
    if let Value::String(text) = value {
        check_string(s, text, path, out);
        check_format(s, text, path, out);
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
    match value {
        Value::Array(items) => check_array(s, items, old, path, out),
        Value::Number(n) => check_number(s, n, value, path, out),
        Value::Object(map) => check_object(s, map, old, path, out),
        _ => {}
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

fn composition(s: &Schema, value: &Value, path: &mut Path, out: &mut Findings) {
    for branch in &s.all_of {
        check(branch, value, None, path, out);
    }
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
                break;
            }
            if best.as_ref().is_none_or(|b| found.issues.len() < b.issues.len()) {
                best = Some(found);
            }
        }
        if !matched {
            out.push(
                "<nil>".into(),
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"\": {} must validate at least one schema (anyOf)",
                    go_quote(&path.name())
                ),
                Ratchet::Drop,
            );
            if let Some(best) = best {
                out.issues.extend(best.issues);
            }
        }
    }
    if !s.one_of.is_empty() {
        let mut valid = 0;
        let mut best: Option<Findings> = None;
        for branch in &s.one_of {
            let found = quiet(branch, path);
            if found.issues.is_empty() {
                valid += 1;
            } else if best.as_ref().is_none_or(|b| found.issues.len() < b.issues.len()) {
                best = Some(found);
            }
        }
        if valid != 1 {
            let extra = if valid > 1 {
                format!("Found {valid} valid alternatives")
            } else {
                "Found none valid".to_string()
            };
            out.push(
                "<nil>".into(),
                "FieldValueInvalid",
                format!(
                    "Invalid value: \"\": {} must validate one and only one schema (oneOf). {extra}",
                    go_quote(&path.name())
                ),
                Ratchet::Drop,
            );
            if valid == 0
                && let Some(best) = best
            {
                out.issues.extend(best.issues);
            }
        }
    }
    if let Some(not) = &s.not
        && quiet(not, path).issues.is_empty()
    {
        out.push(
            "<nil>".into(),
            "FieldValueInvalid",
            format!(
                "Invalid value: \"\": {} must not validate the schema (not)",
                go_quote(&path.name())
            ),
            Ratchet::Drop,
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

fn check_number(s: &Schema, n: &serde_json::Number, value: &Value, path: &Path, out: &mut Findings) {
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
    let _ = value;
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
    match &s.list_type {
        ListType::Atomic => {}
        ListType::Set => {
            let mut seen: Vec<&Value> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if seen.iter().any(|v| json_equal(v, item)) {
                    path.push(Seg::Index(i));
                    out.push(
                        path.field(),
                        "FieldValueDuplicate",
                        format!("Duplicate value: {}", bad_value(item)),
                        Ratchet::Drop,
                    );
                    path.pop();
                } else {
                    seen.push(item);
                }
            }
        }
        ListType::Map(keys) => {
            let mut seen: HashSet<String> = HashSet::new();
            let item_schema = s.items.as_deref();
            for (i, item) in items.iter().enumerate() {
                let Value::Object(map) = item else {
                    path.push(Seg::Index(i));
                    out.push(
                        path.field(),
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: {}: must be an object for an array of list-type map",
                            bad_value(item)
                        ),
                        Ratchet::Drop,
                    );
                    path.pop();
                    continue;
                };
                let key = map_key(keys, map, item_schema);
                let rendered = serde_json::to_string(&Value::Object(key.clone())).unwrap_or_default();
                if !seen.insert(rendered.clone()) {
                    path.push(Seg::Index(i));
                    out.push(
                        path.field(),
                        "FieldValueDuplicate",
                        format!("Duplicate value: {rendered}"),
                        Ratchet::Drop,
                    );
                    path.pop();
                }
            }
        }
    }
}

/// The key of a list-type map item (missing keys take their schema default).
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

fn check_object(
    s: &Schema,
    map: &serde_json::Map<String, Value>,
    old: Option<&Value>,
    path: &mut Path,
    out: &mut Findings,
) {
    let name = path.name();
    let count = map.len() as u64;
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
    }
    if let Some(min) = s.min_properties
        && count < min
    {
        out.invalid(
            path,
            &count.to_string(),
            &format!("{name} in body should have at least {min} properties"),
        );
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
    if s.embedded {
        for key in ["apiVersion", "kind"] {
            match map.get(key) {
                None => {
                    path.push(Seg::Prop(key.into()));
                    out.push(
                        path.field(),
                        "FieldValueRequired",
                        "Required value: must not be empty".into(),
                        Ratchet::Drop,
                    );
                    path.pop();
                }
                Some(Value::String(v)) if v.is_empty() => {
                    path.push(Seg::Prop(key.into()));
                    out.push(
                        path.field(),
                        "FieldValueInvalid",
                        "Invalid value: \"\": must not be empty".into(),
                        Ratchet::Drop,
                    );
                    path.pop();
                }
                Some(Value::String(_)) => {}
                Some(other) => {
                    path.push(Seg::Prop(key.into()));
                    out.push(
                        path.field(),
                        "FieldValueInvalid",
                        format!("Invalid value: {}: must be a string", bad_value(other)),
                        Ratchet::Drop,
                    );
                    path.pop();
                }
            }
        }
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
}
