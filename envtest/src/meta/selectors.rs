//! Label and field selectors, parsed as kube-apiserver parses them.

use serde_json::Value;

use crate::meta::errors::{ApiError, ApiResult};

pub use super::labels::{Operator, Requirement};

/// A parsed label selector (all requirements must hold), see [`super::labels`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<Requirement>);

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (f,g),h,!i,j>1`; a malformed selector is a 400 with
    /// kube-apiserver's message.
    pub fn parse(input: &str) -> ApiResult<Self> {
        super::labels::parse_selector(input)
            .map(Self)
            .map_err(ApiError::bad_request)
    }

    /// True when there is no requirement.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`), as
    /// `LabelSelectorAsSelector` reads it: `{}` selects everything. A malformed one is an
    /// error in apimachinery's words.
    pub fn from_object(selector: &Value) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
            let value = value.as_str().unwrap_or_default().to_string();
            requirements.push(Requirement {
                key: key.clone(),
                operator: Operator::In,
                values: vec![value],
            });
        }
        for expression in selector["matchExpressions"].as_array().into_iter().flatten() {
            requirements.push(expression_requirement(expression)?);
        }
        Ok(Self(requirements))
    }

    /// True when the object's labels satisfy every requirement. (Two lookups, not
    /// `Value::pointer`, which allocates per path segment: a filtered list calls this
    /// once per object of the collection.)
    pub fn matches(&self, object: &Value) -> bool {
        self.is_empty() || self.matches_labels(object.get("metadata").and_then(|m| m.get("labels")))
    }

    /// True when `labels` (a label map, `None`: no labels) satisfy every requirement.
    pub fn matches_labels(&self, labels: Option<&Value>) -> bool {
        self.0.iter().all(|requirement| {
            requirement.matches(
                labels
                    .and_then(|l| l.get(&requirement.key))
                    .and_then(Value::as_str),
            )
        })
    }
}

/// One `matchExpressions` entry as a requirement.
fn expression_requirement(expression: &Value) -> Result<Requirement, String> {
    let key = expression["key"].as_str().unwrap_or_default().to_string();
    let mut values: Vec<String> = expression["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    values.sort();
    values.dedup();
    let operator = match expression["operator"].as_str().unwrap_or_default() {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => return Err(format!("{other:?} is not a valid label selector operator")),
    };
    let needs_values = matches!(operator, Operator::In | Operator::NotIn);
    if needs_values == values.is_empty() {
        let detail = if needs_values {
            "for 'in', 'notin' operators, values set can't be empty"
        } else {
            "values set must be empty for exists and does not exist"
        };
        return Err(detail.to_string());
    }
    Ok(Requirement {
        key,
        operator,
        values,
    })
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
