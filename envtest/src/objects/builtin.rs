//! What kube-apiserver's registry does to built-in kinds on every write before anything
//! else sees them: decoding into the Go type (unknown fields dropped, or refused with
//! `fieldValidation=Strict`; empty `omitempty` fields left out; `[]byte` fields must be
//! base64; wrongly typed fields are 400), with the JSON forms of [`crate::resources::protobuf`], and
//! defaulting (`Secret.type` is `Opaque`; `Secret.stringData` is write-only, merged into
//! `data`; Deployments as [`super::deployments`] says).

use base64::Engine;
use serde_json::{Value, json};

use crate::admission;
use crate::meta::errors::{ApiError, ApiResult};
use crate::resources::ResourceInfo;
use crate::resources::protobuf;

fn base64_error(kind: &str, error: base64::DecodeError) -> ApiError {
    let detail = match error {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            format!("illegal base64 data at input byte {at}")
        }
        other => format!("illegal base64 data: {other}"),
    };
    ApiError::bad_request(format!(
        "{kind} in version \"v1\" cannot be handled as a {kind}: {detail}"
    ))
}

fn check_base64(kind: &str, map: Option<&Value>) -> ApiResult<()> {
    for value in map
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.values())
    {
        let text = value.as_str().ok_or_else(|| {
            ApiError::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: expected a base64 string"
            ))
        })?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| base64_error(kind, e))?;
    }
    Ok(())
}

/// Decodes and defaults a built-in object about to be created or updated.
pub fn prepare(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    if info.custom {
        return Ok(());
    }
    defaults(info, object)?;
    decode(info, object)?;
    if info.group == admission::policy::GROUP {
        admission::policy::definition::prepare(&info.kind, object)?;
    }
    if (info.group.as_str(), info.kind.as_str()) == ("apps", "Deployment") {
        super::deployments::default_deployment(object);
    }
    Ok(())
}

/// Decodes the object into its Go type and back, as kube-apiserver does: unknown fields
/// fail the request (`fieldValidation=Strict`), warn (`Warn`, the default) or are dropped
/// (`Ignore`); empty `omitempty` fields are left out; a wrongly typed field is 400.
fn decode(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    let api_version = info.api_version();
    let Some(codec) = protobuf::codec_for(&api_version, &info.kind) else {
        return admission::report_strict(info, &[]);
    };
    let kind = &info.kind;
    admission::report_strict(info, &(codec.unknown)(object))?;
    let mut decoded = (codec.normalize)(object).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: {e}",
            info.version
        ))
    })?;
    if let Some(map) = decoded.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    *object = decoded;
    Ok(())
}

fn defaults(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    if !info.group.is_empty() {
        return Ok(());
    }
    match info.kind.as_str() {
        "ConfigMap" => check_base64("ConfigMap", object.get("binaryData")),
        "Secret" => {
            check_base64("Secret", object.get("data"))?;
            let Some(map) = object.as_object_mut() else {
                return Ok(());
            };
            if let Some(string_data) = map.remove("stringData")
                && let Some(entries) = string_data.as_object()
                && !entries.is_empty()
            {
                let data = map.entry("data").or_insert_with(|| json!({}));
                if data.is_null() {
                    *data = json!({});
                }
                if let Some(data) = data.as_object_mut() {
                    for (key, value) in entries {
                        let text = value.as_str().unwrap_or_default();
                        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                        data.insert(key.clone(), json!(encoded));
                    }
                }
            }
            if map.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
                map.insert("type".into(), json!("Opaque"));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::FieldValidation;
    use crate::resources::builtins;

    fn info(kind: &str) -> ResourceInfo {
        builtins()
            .into_iter()
            .find(|i| i.kind == kind && i.group.is_empty())
            .unwrap_or_else(|| panic!("no {kind}"))
    }

    #[test]
    fn secrets_are_defaulted_and_string_data_merged() {
        let mut secret = json!({"data": {"a": "YQ=="}, "stringData": {"b": "hunter2", "a": "x"}});
        prepare(&info("Secret"), &mut secret).ok();
        assert_eq!(
            secret,
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"a": "eA==", "b": "aHVudGVyMg=="}})
        );
        let mut typed = json!({"type": "kubernetes.io/tls"});
        prepare(&info("Secret"), &mut typed).ok();
        assert_eq!(typed["type"], "kubernetes.io/tls");
    }

    #[test]
    fn objects_are_decoded_as_their_go_type() {
        let mut cm = json!({
            "metadata": {"name": "a", "labels": {}, "generation": 0, "bogus": 1},
            "data": {"k": "v"},
            "binaryData": {},
            "extra": {"x": 1},
        });
        let (result, warnings) =
            crate::admission::scoped(FieldValidation::Warn, || prepare(&info("ConfigMap"), &mut cm));
        assert!(result.is_ok());
        // Unknown fields dropped with a warning each; empty omitempty fields left out.
        assert_eq!(
            cm,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
        );
        assert_eq!(
            warnings,
            ["unknown field \"extra\"", "unknown field \"metadata.bogus\""]
        );

        let mut strict = json!({"metadata": {"name": "a"}, "extra": 1});
        let (result, _) = crate::admission::scoped(FieldValidation::Strict, || {
            crate::admission::whole_object_body(Vec::new());
            prepare(&info("ConfigMap"), &mut strict)
        });
        assert_eq!(
            result.err().map(|e| (e.code, e.message)),
            Some((
                400,
                "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"extra\""
                    .to_owned()
            ))
        );

        let mut wrong = json!({"metadata": {"name": "a"}, "data": {"k": 1}});
        let error = prepare(&info("ConfigMap"), &mut wrong).err();
        assert_eq!(
            error.map(|e| (e.code, e.message)),
            Some((
                400,
                "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: data: k: expected a string"
                    .to_owned()
            ))
        );
    }

    #[test]
    fn bytes_must_be_base64() {
        let error = prepare(&info("Secret"), &mut json!({"data": {"a": "not base64!"}})).err();
        assert_eq!(
            error.map(|e| (e.code, e.message)),
            Some((
                400,
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3"
                    .to_owned()
            ))
        );
        let error = prepare(&info("ConfigMap"), &mut json!({"binaryData": {"a": "%%%%"}})).err();
        assert_eq!(error.map(|e| e.code), Some(400));
        assert!(prepare(&info("ConfigMap"), &mut json!({"data": {"a": "%%%%"}})).is_ok());
    }
}
