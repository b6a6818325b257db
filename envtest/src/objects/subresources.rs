//! What a version's subresources impose, as kube-apiserver's CRD handler and custom
//! resource strategy do: `/status` and `/scale` exist only for the versions that declare
//! them, and the replicas behind a scale subresource are validated on every write.

use serde_json::{Value, json};

use crate::meta::errors::{ApiError, ApiResult, Cause};
use crate::objects::Endpoint;
use crate::resources::{ResourceInfo, ScalePaths};

/// Whether `subresource` is served for this version: a custom resource answers 404
/// NotFound for the object, a built-in kind the generic "could not find the requested
/// resource" (its route does not exist).
pub fn check_served(info: &ResourceInfo, subresource: Option<&str>, name: &str) -> ApiResult<()> {
    let served = match subresource {
        None => true,
        Some("status") => info.status,
        Some("scale") => info.scale.is_some(),
        Some(_) => false,
    };
    if served {
        Ok(())
    } else if info.custom {
        Err(ApiError::not_found(&info.group, &info.plural, name))
    } else {
        Err(ApiError::no_resource())
    }
}

/// The `autoscaling/v1` `Scale` view of an object (what the `scale` subresource serves
/// and what admission sees of a write through it).
pub fn scale_of(paths: &ScalePaths, object: &Value) -> Value {
    let at = |path: &str| {
        path.trim_start_matches('.')
            .split('.')
            .try_fold(object, |v, segment| v.get(segment))
    };
    let replicas = at(&paths.spec_replicas).cloned().unwrap_or(json!(0));
    let mut status = json!({"replicas": at(&paths.status_replicas).cloned().unwrap_or(json!(0))});
    if let Some(selector) = paths.label_selector.as_deref().and_then(at) {
        status["selector"] = selector.clone();
    }
    let meta = &object["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": replicas},
        "status": status,
    })
}

/// The scale subresource's checks of a custom resource about to be written (kube's
/// `ValidateScaleSpec`, on the main resource, and `ValidateScaleStatus`, on both): the
/// replicas must fit a non-negative int32. Field paths are the CRD's JSON paths, as kube
/// reports them (`.spec.replicas`).
pub fn validate_scale(info: &ResourceInfo, object: &Value, endpoint: Endpoint) -> Vec<Cause> {
    let Some(paths) = info.scale.as_ref().filter(|_| info.custom) else {
        return Vec::new();
    };
    let mut causes = Vec::new();
    if endpoint != Endpoint::Status {
        causes.extend(check_replicas(object, &paths.spec_replicas));
    }
    causes.extend(check_replicas(object, &paths.status_replicas));
    causes
}

fn check_replicas(object: &Value, path: &str) -> Option<Cause> {
    let mut value = object;
    for segment in path.trim_start_matches('.').split('.') {
        value = value.get(segment)?;
    }
    let replicas = value.as_i64()?;
    let detail = if replicas < 0 {
        "should be a non-negative integer".to_string()
    } else if replicas > i64::from(i32::MAX) {
        format!("should be less than or equal to {}", i32::MAX)
    } else {
        return None;
    };
    Some(Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {replicas}: {detail}"),
        field: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scaled() -> ResourceInfo {
        let mut info = crate::resources::Registry::build([])
            .get("", "v1", "configmaps")
            .map(|i| i.as_ref().clone())
            .unwrap_or_else(|| unreachable!("configmaps are built in"));
        info.custom = true;
        info.scale = Some(ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        });
        info
    }

    #[test]
    fn negative_or_too_large_replicas_are_invalid() {
        let info = scaled();
        let causes = validate_scale(&info, &json!({"spec": {"replicas": -1}}), Endpoint::Main);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, ".spec.replicas");
        assert_eq!(
            causes[0].message,
            "Invalid value: -1: should be a non-negative integer"
        );
        let causes = validate_scale(
            &info,
            &json!({"spec": {"replicas": 2147483648_i64}}),
            Endpoint::Main,
        );
        assert_eq!(
            causes[0].message,
            "Invalid value: 2147483648: should be less than or equal to 2147483647"
        );
        assert!(validate_scale(&info, &json!({"spec": {"replicas": 3}}), Endpoint::Main).is_empty());
        assert!(validate_scale(&info, &json!({"spec": {}}), Endpoint::Main).is_empty());
    }

    #[test]
    fn the_status_endpoint_checks_only_status_replicas() {
        let info = scaled();
        let object = json!({"spec": {"replicas": -1}, "status": {"replicas": -2}});
        let causes = validate_scale(&info, &object, Endpoint::Status);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, ".status.replicas");
    }

    #[test]
    fn subresources_are_served_only_where_declared() {
        let mut info = scaled();
        info.status = false;
        info.scale = None;
        let error = check_served(&info, Some("status"), "w").err();
        assert_eq!(
            error.map(|e| (e.code, e.message)),
            Some((404, "configmaps \"w\" not found".to_string()))
        );
        assert!(check_served(&info, None, "w").is_ok());
        info.custom = false;
        let error = check_served(&info, Some("scale"), "w").err();
        assert_eq!(
            error.map(|e| e.message),
            Some("the server could not find the requested resource".to_string())
        );
    }
}
