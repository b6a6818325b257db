//! What a conversion reports: field errors (the object cannot be represented on the other
//! side) and warnings (it can, with a documented loss), each with the path of the field in
//! the source object.
//!
//! A conversion never stops at the first problem: every error and warning of an object is
//! collected ([`Report`]) and returned together ([`ConversionErrors`]), the way
//! kube-apiserver reports every invalid field of a request (`field.ErrorList`).

use std::fmt;

use serde::Serialize;

/// The path of a field in an object, in kube-apiserver's notation:
/// `spec.providerSpec.value.blockDevices[0].ebs`, `metadata.labels[app]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path from dot-separated segments: `FieldPath::new("spec.providerSpec")`.
    pub fn new(path: impl Into<String>) -> Self {
        Self(path.into())
    }

    /// The path of a field of this one.
    #[must_use]
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Self(name.to_owned())
        } else {
            self.joined(&[".", name])
        }
    }

    /// The path of a list item of this field.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        self.joined(&["[", &index.to_string(), "]"])
    }

    /// The path of a map entry of this field.
    #[must_use]
    pub fn key(&self, key: &str) -> Self {
        self.joined(&["[", key, "]"])
    }

    /// This path followed by `parts`, in one allocation: conversions build a path for
    /// every field they look at, so this is on the hot path (`format!` costs several
    /// times more).
    fn joined(&self, parts: &[&str]) -> Self {
        let mut path = String::with_capacity(self.0.len() + parts.iter().map(|p| p.len()).sum::<usize>());
        path.push_str(&self.0);
        parts.iter().for_each(|part| path.push_str(part));
        Self(path)
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for FieldPath {
    fn from(path: &str) -> Self {
        Self::new(path)
    }
}

/// Why a field cannot be converted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The field is set, and the other API has no way to say the same thing.
    Unsupported,
    /// The field's value is not one the conversion understands.
    Invalid,
    /// A value the conversion needs is missing.
    Required,
    /// The field must not be set here (whatever its value).
    Forbidden,
}

impl ErrorKind {
    /// The kind as kube-apiserver's `field.ErrorType` words it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unsupported => "Unsupported value",
            Self::Invalid => "Invalid value",
            Self::Required => "Required value",
            Self::Forbidden => "Forbidden",
        }
    }
}

/// One field that blocks the conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Where, in the source object (or `infrastructure.…` for the Infrastructure input).
    pub path: FieldPath,
    /// What is wrong.
    pub kind: ErrorKind,
    /// The offending value as a user wrote it (compact JSON: `1`, `"gp3"`, `["a"]`), when
    /// there is one.
    pub value: Option<String>,
    /// A sentence for a person planning a migration.
    pub message: String,
}

impl FieldError {
    /// A set field the other API cannot represent; `value` is shown as the object's YAML
    /// or JSON would show it (an `Option` as its content, a string in quotes).
    pub fn unsupported(path: FieldPath, value: impl Serialize, message: impl Into<String>) -> Self {
        Self::with_value(path, ErrorKind::Unsupported, value, message)
    }

    /// A value the conversion does not understand; `value` is shown as in
    /// [`FieldError::unsupported`].
    pub fn invalid(path: FieldPath, value: impl Serialize, message: impl Into<String>) -> Self {
        Self::with_value(path, ErrorKind::Invalid, value, message)
    }

    /// A field that must not be set here, whatever its value (kube-apiserver's
    /// `field.Forbidden`): for fields whose value says nothing more (a whole struct, an
    /// unknown field).
    pub fn forbidden(path: FieldPath, message: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Forbidden,
            value: None,
            message: message.into(),
        }
    }

    /// A value the conversion needs and did not get.
    pub fn required(path: FieldPath, message: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Required,
            value: None,
            message: message.into(),
        }
    }

    fn with_value(
        path: FieldPath,
        kind: ErrorKind,
        value: impl Serialize,
        message: impl Into<String>,
    ) -> Self {
        Self {
            path,
            kind,
            value: Some(shown(&value)),
            message: message.into(),
        }
    }
}

/// A value as a user reads it in the object: compact JSON (`1`, not `Some(1)`; `"gp3"`;
/// `null` for an absent one).
fn shown(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| format!("<{error}>"))
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind.as_str())?;
        if let Some(value) = &self.value {
            write!(f, ": {value}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A lossy but acceptable conversion of one field: the result is usable, and this says
/// what it does not carry over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Where, in the source object.
    pub path: FieldPath,
    /// What is lost or changed.
    pub message: String,
}

impl Warning {
    /// A warning about the field at `path`.
    pub fn new(path: FieldPath, message: impl Into<String>) -> Self {
        Self {
            path,
            message: message.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A successful conversion: the converted value and the warnings it came with.
#[derive(Clone, Debug, PartialEq)]
pub struct Converted<T> {
    /// The converted object(s).
    pub value: T,
    /// What was lost on the way (empty for a faithful conversion).
    pub warnings: Vec<Warning>,
}

/// A failed conversion: every field that blocks it, and the warnings found on the way.
#[derive(Clone, Debug, Default, PartialEq, Eq, thiserror::Error)]
pub struct ConversionErrors {
    /// Every blocking field (never empty).
    pub errors: Vec<FieldError>,
    /// Warnings about other fields.
    pub warnings: Vec<Warning>,
}

impl fmt::Display for ConversionErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut errors = self.errors.iter();
        if let Some(first) = errors.next() {
            write!(f, "{first}")?;
        }
        for error in errors {
            write!(f, "; {error}")?;
        }
        Ok(())
    }
}

impl<T> Converted<T> {
    /// The same warnings with another value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Converted<U> {
        Converted {
            value: f(self.value),
            warnings: self.warnings,
        }
    }
}

/// The result of a conversion.
pub type ConversionResult<T> = Result<Converted<T>, ConversionErrors>;

/// Collects the errors and warnings of one object's conversion.
#[derive(Debug, Default)]
pub(crate) struct Report {
    errors: Vec<FieldError>,
    warnings: Vec<Warning>,
}

impl Report {
    pub(crate) fn error(&mut self, error: FieldError) {
        self.errors.push(error);
    }

    pub(crate) fn warn(&mut self, path: FieldPath, message: impl Into<String>) {
        self.warnings.push(Warning::new(path, message));
    }

    /// Takes over another conversion's errors and warnings; its value if it had one.
    pub(crate) fn absorb<T>(&mut self, result: ConversionResult<T>) -> Option<T> {
        match result {
            Ok(converted) => {
                self.warnings.extend(converted.warnings);
                Some(converted.value)
            }
            Err(errors) => {
                self.errors.extend(errors.errors);
                self.warnings.extend(errors.warnings);
                None
            }
        }
    }

    /// A report that starts with an earlier step's warnings.
    pub(crate) fn with_warnings(warnings: Vec<Warning>) -> Self {
        Self {
            errors: Vec::new(),
            warnings,
        }
    }

    /// The value if nothing blocked it, else every error.
    pub(crate) fn finish<T>(self, value: T) -> ConversionResult<T> {
        if self.errors.is_empty() {
            Ok(Converted {
                value,
                warnings: self.warnings,
            })
        } else {
            Err(ConversionErrors {
                errors: self.errors,
                warnings: self.warnings,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_kube_apiserver() {
        let path = FieldPath::new("spec.providerSpec.value")
            .child("blockDevices")
            .index(2)
            .child("ebs");
        assert_eq!(path.to_string(), "spec.providerSpec.value.blockDevices[2].ebs");
        assert_eq!(FieldPath::default().child("spec").to_string(), "spec");
        assert_eq!(
            FieldPath::new("metadata.labels").key("a/b").to_string(),
            "metadata.labels[a/b]"
        );
    }

    #[test]
    fn every_error_is_reported() {
        let mut report = Report::default();
        report.error(FieldError::unsupported("spec.a".into(), 1, "no a"));
        report.warn("spec.w".into(), "lossy");
        report.error(FieldError::required("spec.b".into(), "b is needed"));
        let Err(failed) = report.finish(()) else {
            panic!("a report with errors must fail");
        };
        assert_eq!(failed.errors.len(), 2);
        assert_eq!(failed.warnings.len(), 1);
        assert_eq!(
            failed.to_string(),
            "spec.a: Unsupported value: 1: no a; spec.b: Required value: b is needed"
        );
    }

    #[test]
    fn values_read_as_in_the_object() {
        let shown = |error: FieldError| error.to_string();
        assert_eq!(
            shown(FieldError::unsupported("spec.hop".into(), Some(2), "only 1")),
            "spec.hop: Unsupported value: 2: only 1"
        );
        assert_eq!(
            shown(FieldError::invalid("spec.t".into(), "set", "must be a or b")),
            "spec.t: Invalid value: \"set\": must be a or b"
        );
        assert_eq!(
            shown(FieldError::unsupported("spec.l".into(), ["a", "b"], "no lists")),
            "spec.l: Unsupported value: [\"a\",\"b\"]: no lists"
        );
        assert_eq!(
            shown(FieldError::forbidden(
                "spec.x".into(),
                "not a field; it would be lost"
            )),
            "spec.x: Forbidden: not a field; it would be lost"
        );
    }

    #[test]
    fn warnings_alone_do_not_fail() {
        let mut report = Report::default();
        report.warn("spec.w".into(), "lossy");
        let converted = report.finish(7).ok();
        assert_eq!(converted.map(|c| (c.value, c.warnings.len())), Some((7, 1)));
    }
}
