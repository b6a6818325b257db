//! Label and field selectors, parsed as kube-apiserver parses them.

use serde_json::Value;

use crate::meta::errors::{ApiError, ApiResult};

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value`, `key==value`, `key in (a,b)`.
    In(String, Vec<String>),
    /// `key!=value`, `key notin (a,b)`.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A parsed label selector (all requirements must hold).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (f,g),h,!i`.
    pub fn parse(input: &str) -> ApiResult<Self> {
        let mut requirements = Vec::new();
        for part in split_top(input) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(Self(requirements))
    }

    /// True when there is no requirement.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when the object's labels satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = object.pointer("/metadata/labels");
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.0.iter().all(|requirement| match requirement {
            Requirement::In(key, values) => get(key).is_some_and(|v| values.iter().any(|x| x == v)),
            Requirement::NotIn(key, values) => get(key).is_none_or(|v| !values.iter().any(|x| x == v)),
            Requirement::Exists(key) => get(key).is_some(),
            Requirement::DoesNotExist(key) => get(key).is_none(),
        })
    }
}

fn bad(input: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {why}: {input}"))
}

/// Splits on commas that are not inside parentheses.
fn split_top(input: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&input[start..]);
    parts
}

fn valid_key(key: &str) -> bool {
    if key.is_empty() || key.len() > 317 {
        return false;
    }
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && (prefix.is_empty() || !crate::meta::validation::is_dns1123_subdomain(prefix))
    {
        return false;
    }
    valid_value(name) && !name.is_empty()
}

fn valid_value(value: &str) -> bool {
    if value.is_empty() {
        return true;
    }
    let bytes = value.as_bytes();
    value.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn parse_set(key: &str, rest: &str, input: &str) -> ApiResult<Vec<String>> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad(input, "found '', expected: '('"))?;
    let values: Vec<String> = inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(bad(
            input,
            "for 'in', 'notin' operators, values set can't be empty",
        ));
    }
    for value in &values {
        if !valid_value(value) {
            return Err(invalid_label_value(key, value));
        }
    }
    Ok(values)
}

fn invalid_label_value(key: &str, value: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to parse requirement: values[0][{key}]: Invalid value: \"{value}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    ))
}

fn check_key(key: &str) -> ApiResult<()> {
    if valid_key(key) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "unable to parse requirement: key: Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )))
    }
}

fn parse_requirement(part: &str) -> ApiResult<Requirement> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(key)?;
        return Ok(Requirement::DoesNotExist(key.to_string()));
    }
    for (op, negate) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = part.split_once(op) {
            let key = key.trim();
            let value = value.trim();
            check_key(key)?;
            if !valid_value(value) {
                return Err(invalid_label_value(key, value));
            }
            let values = vec![value.to_string()];
            return Ok(if negate {
                Requirement::NotIn(key.to_string(), values)
            } else {
                Requirement::In(key.to_string(), values)
            });
        }
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default().trim();
    let rest = words.next().unwrap_or_default().trim();
    if rest.is_empty() {
        check_key(key)?;
        return Ok(Requirement::Exists(key.to_string()));
    }
    check_key(key)?;
    if let Some(set) = rest.strip_prefix("notin") {
        return Ok(Requirement::NotIn(key.to_string(), parse_set(key, set, part)?));
    }
    if let Some(set) = rest.strip_prefix("in") {
        return Ok(Requirement::In(key.to_string(), parse_set(key, set, part)?));
    }
    Err(bad(
        part,
        "found unexpected operator, expected one of: in, notin, =, ==, !=, gt, lt",
    ))
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field path (`metadata.name`).
    pub field: String,
    /// The value compared against.
    pub value: String,
    /// True for `!=`.
    pub negate: bool,
}

/// A parsed field selector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldTerm>);

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y`; `extra` lists the
    /// resource-specific fields supported besides `metadata.name` and `metadata.namespace`.
    pub fn parse(input: &str, extra: &[&str]) -> ApiResult<Self> {
        let mut terms = Vec::new();
        for part in input.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, value, negate) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" && !extra.contains(&field) {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push(FieldTerm {
                field: field.to_string(),
                value: value.trim().to_string(),
                negate,
            });
        }
        Ok(Self(terms))
    }

    /// True when there is no term.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when the object satisfies every term.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|term| {
            let mut current = object;
            for segment in term.field.split('.') {
                match current.get(segment) {
                    Some(next) => current = next,
                    None => {
                        current = &Value::Null;
                        break;
                    }
                }
            }
            let actual = match current {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (actual == term.value) != term.negate
        })
    }

    /// The value of an `=` term on `field`, if any (used to narrow scans).
    pub fn equals(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|t| t.field == field && !t.negate)
            .map(|t| t.value.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() -> Result<(), ApiError> {
        let object = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (selector, expected) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web,db)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("missing!=x", true),
            ("app=web,tier in (back)", false),
        ] {
            assert_eq!(
                LabelSelector::parse(selector)?.matches(&object),
                expected,
                "{selector}"
            );
        }
        assert!(LabelSelector::parse("app in web").is_err());
        assert!(LabelSelector::parse("a b c").is_err());
        assert!(LabelSelector::parse("-bad-=x").is_err());
        Ok(())
    }

    #[test]
    fn field_selectors() -> Result<(), ApiError> {
        let object = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(FieldSelector::parse("metadata.name=a", &[])?.matches(&object));
        assert!(!FieldSelector::parse("metadata.namespace!=ns", &[])?.matches(&object));
        assert!(FieldSelector::parse("spec.foo=a", &[]).is_err());
        Ok(())
    }
}
