//! The two policy kinds as objects: kube's defaults (`failurePolicy: Fail`,
//! `matchPolicy: Equivalent`, empty selectors, rule `scope: "*"`) and the validation
//! kube-apiserver runs before storing them (a 422 with a cause per field).

use serde_json::{Value, json};

use crate::meta::errors::{ApiError, ApiResult, Cause, invalid_value, required};
use crate::schema::cel;

/// Defaults and validates a policy or binding about to be stored (`kind`: its kind).
pub fn prepare(kind: &str, object: &mut Value) -> ApiResult<()> {
    let spec = object.get_mut("spec").filter(|s| s.is_object());
    let causes = match (kind, spec) {
        ("ValidatingAdmissionPolicy", Some(spec)) => {
            default_policy(spec);
            validate_policy(spec)
        }
        ("ValidatingAdmissionPolicyBinding", Some(spec)) => {
            if let Some(resources) = spec.get_mut("matchResources").filter(|m| m.is_object()) {
                default_match_resources(resources);
            }
            validate_binding(spec)
        }
        ("ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding", None) => {
            vec![required("spec", "")]
        }
        _ => Vec::new(),
    };
    if causes.is_empty() {
        return Ok(());
    }
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Err(ApiError::invalid(super::GROUP, kind, &name, causes))
}

fn default_policy(spec: &mut Value) {
    if spec.get("failurePolicy").is_none_or(Value::is_null) {
        spec["failurePolicy"] = json!("Fail");
    }
    if let Some(constraints) = spec.get_mut("matchConstraints").filter(|m| m.is_object()) {
        default_match_resources(constraints);
    }
}

fn default_match_resources(resources: &mut Value) {
    for (field, default) in [
        ("matchPolicy", json!("Equivalent")),
        ("namespaceSelector", json!({})),
        ("objectSelector", json!({})),
    ] {
        if resources.get(field).is_none_or(Value::is_null) {
            resources[field] = default;
        }
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for rule in resources[list].as_array_mut().into_iter().flatten() {
            if rule.get("scope").is_none_or(Value::is_null) {
                rule["scope"] = json!("*");
            }
        }
    }
}

fn validate_policy(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    one_of(
        &mut causes,
        "spec.failurePolicy",
        &spec["failurePolicy"],
        &["Fail", "Ignore"],
    );
    if spec["paramKind"].is_object() {
        for field in ["apiVersion", "kind"] {
            if spec["paramKind"][field].as_str().is_none_or(str::is_empty) {
                causes.push(required(&format!("spec.paramKind.{field}"), ""));
            }
        }
    }
    match_resources(
        &mut causes,
        "spec.matchConstraints",
        &spec["matchConstraints"],
        true,
    );
    let validations = spec["validations"].as_array().map_or(0, Vec::len);
    let annotations = spec["auditAnnotations"].as_array().map_or(0, Vec::len);
    if validations + annotations == 0 {
        causes.push(required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    for (i, validation) in entries(spec, "validations") {
        let path = format!("spec.validations[{i}]");
        expression(
            &mut causes,
            &format!("{path}.expression"),
            &validation["expression"],
        );
        if let Some(message) = validation["messageExpression"].as_str() {
            compiles(&mut causes, &format!("{path}.messageExpression"), message);
        }
        let reasons = ["Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"];
        one_of(
            &mut causes,
            &format!("{path}.reason"),
            &validation["reason"],
            &reasons,
        );
    }
    named_expressions(&mut causes, spec, "matchConditions", "expression");
    named_expressions(&mut causes, spec, "variables", "expression");
    for (i, annotation) in entries(spec, "auditAnnotations") {
        let path = format!("spec.auditAnnotations[{i}]");
        expression(
            &mut causes,
            &format!("{path}.valueExpression"),
            &annotation["valueExpression"],
        );
    }
    causes
}

fn validate_binding(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if spec["policyName"].as_str().is_none_or(str::is_empty) {
        causes.push(required("spec.policyName", ""));
    }
    let actions: Vec<&Value> = spec["validationActions"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    if actions.is_empty() {
        causes.push(required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    for (i, action) in actions.iter().enumerate() {
        let path = format!("spec.validationActions[{i}]");
        one_of(&mut causes, &path, action, &["Deny", "Warn", "Audit"]);
        if actions[..i].contains(action) {
            causes.push(cause(
                "FieldValueDuplicate",
                &path,
                format!("Duplicate value: {action}"),
            ));
        }
    }
    if action_pair(&actions) {
        let listed: Vec<String> = actions.iter().map(|a| a.to_string()).collect();
        causes.push(cause(
            "FieldValueInvalid",
            "spec.validationActions",
            format!(
                "Invalid value: []admissionregistration.ValidationAction{{{}}}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
                listed.join(", ")
            ),
        ));
    }
    param_ref(&mut causes, &spec["paramRef"]);
    if spec["matchResources"].is_object() {
        match_resources(&mut causes, "spec.matchResources", &spec["matchResources"], false);
    }
    causes
}

fn action_pair(actions: &[&Value]) -> bool {
    let has = |a: &str| actions.iter().any(|v| v.as_str() == Some(a));
    has("Deny") && has("Warn")
}

fn param_ref(causes: &mut Vec<Cause>, reference: &Value) {
    if !reference.is_object() {
        return;
    }
    let has_name = reference["name"].as_str().is_some_and(|n| !n.is_empty());
    if has_name && reference["selector"].is_object() {
        causes.push(cause(
            "FieldValueForbidden",
            "spec.paramRef.name",
            "Forbidden: name and selector are mutually exclusive".into(),
        ));
    }
    let action = &reference["parameterNotFoundAction"];
    if action.is_null() {
        causes.push(required("spec.paramRef.parameterNotFoundAction", ""));
    } else {
        one_of(
            causes,
            "spec.paramRef.parameterNotFoundAction",
            action,
            &["Deny", "Allow"],
        );
    }
}

fn match_resources(causes: &mut Vec<Cause>, path: &str, resources: &Value, rules_required: bool) {
    if !resources.is_object() {
        if rules_required {
            causes.push(required(path, ""));
        }
        return;
    }
    one_of(
        causes,
        &format!("{path}.matchPolicy"),
        &resources["matchPolicy"],
        &["Exact", "Equivalent"],
    );
    let rules = resources["resourceRules"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if rules_required && rules.is_empty() {
        causes.push(required(&format!("{path}.resourceRules"), ""));
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in resources[list].as_array().into_iter().flatten().enumerate() {
            for field in ["operations", "apiGroups", "apiVersions", "resources"] {
                if rule[field].as_array().is_none_or(Vec::is_empty) {
                    causes.push(required(&format!("{path}.{list}[{i}].{field}"), ""));
                }
            }
        }
    }
}

/// `matchConditions` / `variables`: each named (unique) with an expression that compiles.
fn named_expressions(causes: &mut Vec<Cause>, spec: &Value, list: &str, field: &str) {
    let mut seen = Vec::new();
    for (i, entry) in entries(spec, list) {
        let path = format!("spec.{list}[{i}]");
        let name = entry["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            causes.push(required(&format!("{path}.name"), ""));
        } else if seen.contains(&name) {
            causes.push(cause(
                "FieldValueDuplicate",
                &format!("{path}.name"),
                format!("Duplicate value: {name:?}"),
            ));
        }
        seen.push(name);
        expression(causes, &format!("{path}.{field}"), &entry[field]);
    }
}

fn expression(causes: &mut Vec<Cause>, path: &str, source: &Value) {
    match source.as_str().filter(|s| !s.trim().is_empty()) {
        Some(source) => compiles(causes, path, source),
        None => causes.push(required(path, "")),
    }
}

fn compiles(causes: &mut Vec<Cause>, path: &str, source: &str) {
    if let Err(e) = cel::compile(source) {
        causes.push(invalid_value(path, source, &format!("compilation failed: {e}")));
    }
}

fn one_of(causes: &mut Vec<Cause>, path: &str, value: &Value, supported: &[&str]) {
    let Some(text) = value.as_str() else {
        return;
    };
    if !supported.contains(&text) {
        let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        causes.push(cause(
            "FieldValueNotSupported",
            path,
            format!(
                "Unsupported value: {text:?}: supported values: {}",
                list.join(", ")
            ),
        ));
    }
}

fn entries<'a>(spec: &'a Value, list: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    spec[list].as_array().into_iter().flatten().enumerate()
}

fn cause(reason: &str, field: &str, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        message,
        field: field.into(),
    }
}
