//! Reading the plain JSON shapes API objects are made of.

use serde_json::Value;

/// The strings of a JSON array, in order; an absent or non-array value gives none and
/// items that are not strings are skipped (lenient, as reading an already validated
/// object should be).
pub fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_list_keeps_the_strings_of_an_array() {
        assert_eq!(string_list(&json!(["a", 1, "b", null])), vec!["a", "b"]);
        assert!(string_list(&Value::Null).is_empty());
        assert!(string_list(&json!("a")).is_empty());
    }
}
