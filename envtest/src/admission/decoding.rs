//! What kube-apiserver's JSON decoder says about a create or update body before any
//! registry sees the object: a custom resource without `kind` is refused (the unstructured
//! decoder cannot tell what it is), duplicate keys are strict-decoding errors (JSON keeps
//! the last value, as Go's decoder does), and every decoding error is prefixed with
//! `<Kind> in version "<v>" cannot be handled as a <Kind>:`, as the create and update
//! handlers' `transformDecodeError` words it.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::meta::errors::ApiError;
use crate::resources::ResourceInfo;

/// A decoding error of a body meant as `info`'s kind (400), worded as kube-apiserver.
pub fn cannot_handle(info: &ResourceInfo, detail: &str) -> ApiError {
    let kind = &info.kind;
    ApiError::bad_request(format!(
        "{kind} in version \"{}\" cannot be handled as a {kind}: {detail}",
        info.version
    ))
}

/// Refuses a custom resource body without `kind`: kube-apiserver's unstructured decoder
/// answers `Object 'Kind' is missing in '<body>'`, and the handler names the kind it wanted
/// and the body's first 30 bytes. Built-in kinds take the kind from the URL.
pub fn require_kind(info: &ResourceInfo, body: &[u8], object: &Value) -> Result<(), ApiError> {
    if !info.custom
        || object
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| !k.is_empty())
    {
        return Ok(());
    }
    let data = String::from_utf8_lossy(body);
    Err(ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{data}' ({})",
        info.kind,
        summarize(body)
    )))
}

/// The body as kube-apiserver summarizes it in decoding errors: up to 30 bytes, as text
/// for a JSON object, else in hex.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (head, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// The paths of every key repeated within one JSON object of `body`, in document order,
/// in the strict decoder's form (`metadata.name`, `spec.ports[0].port`). A body that is not
/// JSON has none (its parse error is reported elsewhere).
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let scan = Scan {
        path: String::new(),
        found: &mut found,
    };
    if scan.deserialize(&mut deserializer).is_err() {
        return Vec::new();
    }
    found
}

/// Walks one JSON value at `path`, recording repeated keys.
struct Scan<'a> {
    path: String,
    found: &'a mut Vec<String>,
}

impl Scan<'_> {
    fn child(&mut self, segment: impl fmt::Display, key: bool) -> Scan<'_> {
        let path = match (key, self.path.is_empty()) {
            (true, true) => segment.to_string(),
            (true, false) => format!("{}.{segment}", self.path),
            (false, _) => format!("{}[{segment}]", self.path),
        };
        Scan {
            path,
            found: self.found,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        while seq.next_element_seed(self.child(index, false))?.is_some() {
            index += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let child = self.child(&key, true);
            if !seen.insert(key) {
                child.found.push(child.path.clone());
            }
            map.next_value_seed(child)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found_at_every_depth_in_document_order() {
        let body = br#"{"metadata":{"name":"a","name":"b"},"spec":{"ports":[{"port":1,"port":2}],"x":{}},"spec2":1,"spec2":2}"#;
        assert_eq!(
            duplicate_fields(body),
            vec!["metadata.name", "spec.ports[0].port", "spec2"]
        );
        assert!(duplicate_fields(br#"{"a":{"b":1},"c":{"b":1}}"#).is_empty());
        assert!(duplicate_fields(b"not json").is_empty());
    }

    #[test]
    fn summaries_are_kube_apiservers() {
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(br#"{"a":1}"#), r#"{"a":1}"#);
        assert_eq!(
            summarize(br#"{"apiVersion":"example.com/v1","metadata":{}}"#),
            r#"{"apiVersion":"example.com/v1" ..."#
        );
        assert_eq!(summarize(b"\x01\x02"), "0102");
    }
}
