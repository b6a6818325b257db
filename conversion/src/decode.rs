//! Typed decoding of an opaque JSON payload (a providerSpec) in one pass, with every field
//! the type does not know.
//!
//! A conversion must report the fields it would lose, so it needs the typed value *and*
//! the input's unknown fields. Collecting them by comparing the input tree with the
//! typed value written back costs two extra trees per object; `serde_ignored` reports
//! them while the typed decode runs, straight from the text. Only an object that has
//! unknown fields or does not decode pays for a second look (to tell empty unknown
//! fields from set ones, or to find where the decode failed).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::errors::FieldPath;

/// A payload decoded into `T`, with the fields `T` does not know.
#[derive(Debug)]
pub(crate) struct Decoded<T> {
    /// The typed value.
    pub(crate) value: T,
    /// Every set field of the input that `T` has no place for, under the path given to
    /// [`decode`], in the input's order. Nulls, empty strings, and objects or lists
    /// holding nothing but those carry nothing (Go's zero values) and are not listed.
    pub(crate) unknown: Vec<FieldPath>,
}

/// Why a payload does not decode into its type.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DecodeError {
    /// The field that does not fit (the path given to [`decode`] for the object itself).
    pub(crate) path: FieldPath,
    /// serde's message, without a position in the compact text (the path says where).
    pub(crate) message: String,
}

/// Decodes the JSON object `text` (found at `path` in its object) into `T`.
pub(crate) fn decode<T: DeserializeOwned>(text: &str, path: &FieldPath) -> Result<Decoded<T>, DecodeError> {
    let mut ignored: Vec<Vec<Segment>> = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let decoded = serde_ignored::deserialize(&mut deserializer, |at| ignored.push(segments(&at)))
        .and_then(|value| deserializer.end().map(|()| value));
    let value: T = match decoded {
        Ok(value) => value,
        Err(_) => return Err(locate_error::<T>(text, path)),
    };
    let unknown = if ignored.is_empty() {
        Vec::new()
    } else {
        // Only an object with unknown fields gets here: look at their values.
        let tree: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        ignored
            .iter()
            .filter(|at| !lookup(&tree, at).is_none_or(carries_nothing))
            .map(|at| field_path(path, at))
            .collect()
    };
    Ok(Decoded { value, unknown })
}

/// The second, slower pass for a payload that failed to decode: where, and why.
fn locate_error<T: DeserializeOwned>(text: &str, path: &FieldPath) -> DecodeError {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let error = match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        Err(error) => error,
        // The same decoder on the same text: only trailing text can be left to blame.
        Ok(_) => {
            return DecodeError {
                path: path.clone(),
                message: deserializer
                    .end()
                    .err()
                    .map_or_else(|| "does not decode".to_owned(), |error| without_position(&error)),
            };
        }
    };
    let inner = error.path().to_string();
    DecodeError {
        path: if inner == "." {
            path.clone()
        } else {
            path.child(&inner)
        },
        message: without_position(error.inner()),
    }
}

/// serde_json's message without ` at line L column C`: the position is in the compact
/// text, which nobody sees.
fn without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    if error.line() == 0 {
        return message;
    }
    let position = format!(" at line {} column {}", error.line(), error.column());
    message
        .strip_suffix(&position)
        .map_or_else(|| message.clone(), str::to_owned)
}

/// One step of a path into a JSON document.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// `serde_ignored`'s path (innermost step first, through its parents) as steps from the
/// root. `Some` and newtype steps have no JSON of their own.
fn segments(path: &serde_ignored::Path<'_>) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut at = path;
    loop {
        at = match at {
            serde_ignored::Path::Root => break,
            serde_ignored::Path::Seq { parent, index } => {
                out.push(Segment::Index(*index));
                parent
            }
            serde_ignored::Path::Map { parent, key } => {
                out.push(Segment::Key(key.clone()));
                parent
            }
            serde_ignored::Path::Some { parent }
            | serde_ignored::Path::NewtypeStruct { parent }
            | serde_ignored::Path::NewtypeVariant { parent } => parent,
        };
    }
    out.reverse();
    out
}

fn lookup<'a>(tree: &'a Value, at: &[Segment]) -> Option<&'a Value> {
    at.iter().try_fold(tree, |value, segment| match segment {
        Segment::Key(key) => value.get(key),
        Segment::Index(index) => value.get(index),
    })
}

fn field_path(base: &FieldPath, at: &[Segment]) -> FieldPath {
    at.iter().fold(base.clone(), |path, segment| match segment {
        Segment::Key(key) => path.child(key),
        Segment::Index(index) => path.index(*index),
    })
}

/// Null, the empty string, or objects with nothing but such values inside, or an empty
/// list (Go's zero values, which a typed value leaves out).
fn carries_nothing(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Object(map) => map.values().all(carries_nothing),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, Debug, Default, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Volume {
        #[serde(default)]
        size: Option<i64>,
    }

    #[derive(Deserialize, Debug, Default, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        #[serde(default)]
        instance_type: String,
        #[serde(default)]
        volumes: Option<Vec<Volume>>,
        #[serde(default)]
        options: Option<Volume>,
        #[serde(default)]
        free_form: Option<Value>,
    }

    fn unknown(text: &str) -> Vec<String> {
        decode::<Spec>(text, &FieldPath::new("spec.value"))
            .map(|d| d.unknown.iter().map(ToString::to_string).collect())
            .unwrap_or_else(|e| panic!("{e:?}"))
    }

    #[test]
    fn unknown_fields_are_found_with_their_paths_in_input_order() {
        let found = unknown(
            r#"{"instanceType":"m6i.xlarge","future":{"x":1},"volumes":[{"size":1},{"size":2,"newKnob":true}],
                "options":{"later":0},"freeForm":{"anything":[1]}}"#,
        );
        assert_eq!(
            found,
            [
                "spec.value.future",
                "spec.value.volumes[1].newKnob",
                "spec.value.options.later"
            ]
        );
    }

    #[test]
    fn unknown_fields_that_carry_nothing_are_not_reported() {
        let found =
            unknown(r#"{"a":null,"b":"","c":{},"d":{"e":null,"f":""},"g":[],"h":0,"i":false,"j":[0]}"#);
        assert_eq!(found, ["spec.value.h", "spec.value.i", "spec.value.j"]);
    }

    #[test]
    fn the_typed_value_is_the_plain_decode() {
        let text = r#"{"instanceType":"m6i.xlarge","volumes":[{"size":120}],"freeForm":{"k":"v"}}"#;
        let decoded = decode::<Spec>(text, &FieldPath::default()).ok().map(|d| d.value);
        assert_eq!(decoded, serde_json::from_str::<Spec>(text).ok());
    }

    #[test]
    fn a_field_that_does_not_fit_is_named_without_a_text_position() {
        let error = decode::<Spec>(
            r#"{"instanceType":"m","volumes":[{"size":1},{"size":"big"}]}"#,
            &FieldPath::new("spec.value"),
        )
        .err();
        assert_eq!(
            error,
            Some(DecodeError {
                path: FieldPath::new("spec.value.volumes[1].size"),
                message: r#"invalid type: string "big", expected i64"#.to_owned(),
            })
        );
        let error = decode::<Spec>("true", &FieldPath::new("spec.value")).err();
        assert_eq!(error.map(|e| e.path.to_string()), Some("spec.value".to_owned()));
    }
}
