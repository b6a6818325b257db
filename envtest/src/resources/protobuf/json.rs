//! Conversion between the generated protobuf messages of [`k8s_pb`] and their JSON form,
//! following the Go types' JSON tags.
//!
//! `k8s-pb` has no serde support, so every message the server accepts is described once in
//! [`super::types`] with the [`message!`](crate::message) macro: the Rust field, its JSON
//! name and how an empty value is written. Scalars, repeated fields, maps, bytes (base64),
//! `Time`/`MicroTime` and raw JSON are handled by the [`Json`] implementations here.
//!
//! Go's protobuf encoding writes every non-pointer field, even when empty, so a decoded
//! message has `Some("")` where the JSON form omits the field. The [`Omit`] rule of each
//! field says which of Go's three shapes it has: `omitempty` on a value (the default: an
//! empty value is left out), a pointer (`*T`: written whenever set) or no `omitempty`
//! (always written).

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Map, Value};

/// When a field is left out of the JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Omit {
    /// `json:",omitempty"` on a value: left out when empty (`""`, `0`, `false`, `[]`, `{}`).
    Empty,
    /// A pointer (`*T`): left out only when unset.
    Unset,
    /// No `omitempty`: always written (the zero value when unset).
    Never,
}

/// A value with a JSON form.
pub trait Json: Sized {
    /// The JSON form (`Value::Null` for nothing).
    fn to_json(&self) -> Value;
    /// Whether the value is empty in Go's `omitempty` sense.
    fn is_empty(&self) -> bool;
    /// Whether the value is unset (only `Option::None` is).
    fn is_unset(&self) -> bool {
        false
    }
    /// Parses the JSON form; the error names what was expected.
    fn from_json(value: &Value) -> Result<Self, String>;
    /// Adds the paths of the fields of `value` this type does not have (under `path`).
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        let _ = (value, path, out);
    }
}

/// `path.key` (or `key` at the top).
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The unknown fields of `value` for the type of `_field` (type inference helper).
pub fn unknown_in<T: Json>(_field: &T, value: &Value, path: &str, out: &mut Vec<String>) {
    T::unknown_fields(value, path, out);
}

/// Writes `value` under `key` following `omit`; `Null` is never written.
pub fn put<T: Json>(map: &mut Map<String, Value>, key: &str, value: &T, omit: Omit) {
    let skip = match omit {
        Omit::Empty => value.is_empty(),
        Omit::Unset => value.is_unset(),
        Omit::Never => false,
    };
    if skip {
        return;
    }
    let json = value.to_json();
    if !json.is_null() {
        map.insert(key.to_owned(), json);
    }
}

/// Reads `key` of `map` into `slot` when present and not null.
pub fn take<T: Json>(map: &Map<String, Value>, key: &str, slot: &mut T) -> Result<(), String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(value) => {
            *slot = T::from_json(value).map_err(|e| format!("{key}: {e}"))?;
            Ok(())
        }
    }
}

/// The object of a JSON value.
pub fn object(value: &Value) -> Result<&Map<String, Value>, String> {
    value.as_object().ok_or_else(|| "expected an object".to_owned())
}

/// Declares the JSON form of a protobuf message: `message!(Type { field => "json", … })`,
/// with an optional rule per field (`field: Unset => "json"`, default [`Omit::Empty`]),
/// and after `; inline: [field, …]` the Go structs embedded with `json:",inline"`, whose
/// fields are written and read at this message's level.
#[macro_export]
#[doc(hidden)]
macro_rules! message {
    ($ty:ty { $($field:ident $(: $omit:ident)? => $json:literal),* $(,)? }) => {
        $crate::message!($ty { $($field $(: $omit)? => $json),* }; inline: []);
    };
    ($ty:ty { $($field:ident $(: $omit:ident)? => $json:literal),* $(,)? }; inline: [$($inline:ident),* $(,)?]) => {
        impl $crate::resources::protobuf::json::Repeated for $ty {}
        impl $crate::resources::protobuf::json::Json for $ty {
            fn to_json(&self) -> ::serde_json::Value {
                #[allow(unused_mut)]
                let mut map = ::serde_json::Map::new();
                $(
                    if let ::serde_json::Value::Object(fields) =
                        $crate::resources::protobuf::json::Json::to_json(&self.$inline)
                    {
                        map.extend(fields);
                    }
                )*
                $(
                    $crate::resources::protobuf::json::put(
                        &mut map,
                        $json,
                        &self.$field,
                        $crate::message!(@omit $($omit)?),
                    );
                )*
                ::serde_json::Value::Object(map)
            }
            fn is_empty(&self) -> bool {
                false
            }
            fn from_json(value: &::serde_json::Value) -> Result<Self, String> {
                #[allow(unused_variables)]
                let map = $crate::resources::protobuf::json::object(value)?;
                #[allow(unused_mut)]
                let mut out = Self::default();
                $( out.$inline = $crate::resources::protobuf::json::Json::from_json(value)?; )*
                $( $crate::resources::protobuf::json::take(map, $json, &mut out.$field)?; )*
                Ok(out)
            }
            fn unknown_fields(value: &::serde_json::Value, path: &str, out: &mut Vec<String>) {
                let Some(map) = value.as_object() else { return };
                #[allow(unused_variables)]
                let shape = Self::default();
                for (key, field) in map {
                    let at = $crate::resources::protobuf::json::join(path, key);
                    let _ = &field;
                    match key.as_str() {
                        $( $json => $crate::resources::protobuf::json::unknown_in(&shape.$field, field, &at, out), )*
                        _ => {
                            // A key of an inlined struct is known when that struct has it.
                            #[allow(unused_mut)]
                            let mut known = false;
                            $(
                                if !known {
                                    let mut single = ::serde_json::Map::new();
                                    single.insert(key.clone(), field.clone());
                                    let mut inner = Vec::new();
                                    $crate::resources::protobuf::json::unknown_in(
                                        &shape.$inline,
                                        &::serde_json::Value::Object(single),
                                        path,
                                        &mut inner,
                                    );
                                    if !inner.contains(&at) {
                                        out.extend(inner);
                                        known = true;
                                    }
                                }
                            )*
                            if !known {
                                out.push(at);
                            }
                        }
                    }
                }
            }
        }
    };
    (@omit) => { $crate::resources::protobuf::json::Omit::Empty };
    (@omit $omit:ident) => { $crate::resources::protobuf::json::Omit::$omit };
}

impl<T: Json + Default> Json for Option<T> {
    fn to_json(&self) -> Value {
        match self {
            Some(value) => value.to_json(),
            None => T::default().to_json(),
        }
    }
    fn is_empty(&self) -> bool {
        self.as_ref().is_none_or(Json::is_empty)
    }
    fn is_unset(&self) -> bool {
        self.is_none()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::Null => Ok(None),
            value => T::from_json(value).map(Some),
        }
    }
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        T::unknown_fields(value, path, out);
    }
}

impl<T: Json> Json for Box<T> {
    fn to_json(&self) -> Value {
        self.as_ref().to_json()
    }
    fn is_empty(&self) -> bool {
        self.as_ref().is_empty()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        T::from_json(value).map(Box::new)
    }
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        T::unknown_fields(value, path, out);
    }
}

impl Json for String {
    fn to_json(&self) -> Value {
        Value::String(self.clone())
    }
    fn is_empty(&self) -> bool {
        self.is_empty()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_str()
            .map(String::from)
            .ok_or_else(|| "expected a string".to_owned())
    }
}

impl Json for bool {
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
    fn is_empty(&self) -> bool {
        !*self
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        value.as_bool().ok_or_else(|| "expected a boolean".to_owned())
    }
}

impl Json for i64 {
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
    fn is_empty(&self) -> bool {
        *self == 0
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        value.as_i64().ok_or_else(|| "expected an integer".to_owned())
    }
}

impl Json for i32 {
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
    fn is_empty(&self) -> bool {
        *self == 0
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| "expected a 32-bit integer".to_owned())
    }
}

impl Json for f64 {
    fn to_json(&self) -> Value {
        // Go prints integral floats without a fraction (`10`, not `10.0`).
        if self.fract() == 0.0 && self.abs() < 9.0e15 {
            Value::from(*self as i64)
        } else {
            serde_json::Number::from_f64(*self).map_or(Value::Null, Value::Number)
        }
    }
    fn is_empty(&self) -> bool {
        *self == 0.0
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        value.as_f64().ok_or_else(|| "expected a number".to_owned())
    }
}

/// `[]byte`: base64 in JSON.
impl Json for Vec<u8> {
    fn to_json(&self) -> Value {
        Value::String(base64::engine::general_purpose::STANDARD.encode(self))
    }
    fn is_empty(&self) -> bool {
        self.is_empty()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        let text = value.as_str().ok_or("expected a base64 string")?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("illegal base64 data: {e}"))
    }
}

/// Repeated fields (messages, strings and integers; `bytes` is `Vec<u8>`, not repeated).
pub trait Repeated: Json {}
impl Repeated for String {}
impl Repeated for i32 {}
impl Repeated for i64 {}

impl<T: Repeated> Json for Vec<T> {
    fn to_json(&self) -> Value {
        Value::Array(self.iter().map(Json::to_json).collect())
    }
    fn is_empty(&self) -> bool {
        self.is_empty()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        let items = value.as_array().ok_or("expected an array")?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| T::from_json(item).map_err(|e| format!("[{i}]: {e}")))
            .collect()
    }
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        for (i, item) in value.as_array().into_iter().flatten().enumerate() {
            T::unknown_fields(item, &format!("{path}[{i}]"), out);
        }
    }
}

impl<T: Json> Json for BTreeMap<String, T> {
    fn to_json(&self) -> Value {
        Value::Object(self.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
    }
    fn is_empty(&self) -> bool {
        self.is_empty()
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        object(value)?
            .iter()
            .map(|(k, v)| Ok((k.clone(), T::from_json(v).map_err(|e| format!("{k}: {e}"))?)))
            .collect()
    }
    fn unknown_fields(value: &Value, path: &str, out: &mut Vec<String>) {
        for (key, item) in value.as_object().into_iter().flatten() {
            T::unknown_fields(item, &join(path, key), out);
        }
    }
}

/// Formats seconds + nanos since the epoch as RFC 3339 (`micros`: `MicroTime`'s six digits).
pub fn format_time(seconds: i64, nanos: i32, micros: bool) -> Value {
    let Ok(time) = jiff::Timestamp::new(seconds, if micros { nanos } else { 0 }) else {
        return Value::Null;
    };
    let format = if micros {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Value::String(time.strftime(format).to_string())
}

/// Parses an RFC 3339 timestamp into seconds + nanos since the epoch.
pub fn parse_time(value: &Value) -> Result<(i64, i32), String> {
    let text = value.as_str().ok_or("expected an RFC 3339 time string")?;
    let time: jiff::Timestamp = text.parse().map_err(|e| format!("invalid time {text:?}: {e}"))?;
    Ok((time.as_second(), time.subsec_nanosecond()))
}
