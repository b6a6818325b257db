//! A CRD's schemas checked as kube's CRD validation checks them before the CRD is stored:
//! every `x-kubernetes-validations` rule (and `messageExpression`) must compile, else the
//! create or update is refused with 422 on the rule's field path, instead of the rule
//! being skipped while objects are served.

use serde_json::Value;

use crate::meta::errors::Cause;
use crate::schema::cel;
use crate::schema::validate::go_quote;

/// The causes of every rule of the CRD `spec` that does not compile. As kube's conversion
/// to the internal type, versions whose schemas are all identical are checked once at
/// `spec.validation.openAPIV3Schema`, others at `spec.versions[i].schema.openAPIV3Schema`.
pub fn rule_causes(spec: &Value) -> Vec<Cause> {
    let versions = spec["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
    let schemas: Vec<&Value> = versions.iter().map(|v| &v["schema"]["openAPIV3Schema"]).collect();
    let mut out = Vec::new();
    match schemas.first() {
        Some(first) if schemas.iter().all(|s| s == first) => {
            walk(first, "spec.validation.openAPIV3Schema", &mut out);
        }
        _ => {
            for (i, schema) in schemas.iter().enumerate() {
                walk(
                    schema,
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    &mut out,
                );
            }
        }
    }
    out
}

fn walk(schema: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(node) = schema.as_object() else {
        return;
    };
    let rules = node.get("x-kubernetes-validations").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let source = rule["rule"].as_str().unwrap_or_default();
        if source.trim().is_empty() {
            out.push(Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: rule is not specified".into(),
                field: format!("{at}.rule"),
            });
        } else if let Some(detail) = cel::compile_error(source) {
            out.push(invalid(format!("{at}.rule"), rule, &detail));
        }
        let message_expression = rule["messageExpression"].as_str().unwrap_or_default();
        if !message_expression.trim().is_empty()
            && let Some(detail) = cel::compile_error(message_expression)
        {
            out.push(invalid(format!("{at}.messageExpression"), rule, &detail));
        }
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort();
        for name in names {
            walk(&properties[name], &format!("{path}.properties[{name}]"), out);
        }
    }
    walk(&schema["items"], &format!("{path}.items"), out);
    walk(
        &schema["additionalProperties"],
        &format!("{path}.additionalProperties"),
        out,
    );
}

fn invalid(field: String, rule: &Value, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {}: {detail}", validation_rule(rule)),
        field,
    }
}

/// Go's `%#v` of the internal `apiextensions.ValidationRule` kube reports as the bad value
/// (a set pointer field prints as an address; a fixed one here).
fn validation_rule(rule: &Value) -> String {
    let text = |k: &str| go_quote(rule[k].as_str().unwrap_or_default());
    let pointer = |k: &str, ty: &str| match rule.get(k) {
        Some(v) if !v.is_null() => format!("({ty})(0xc000000000)"),
        _ => format!("({ty})(nil)"),
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        text("rule"),
        text("message"),
        text("messageExpression"),
        pointer("reason", "*apiextensions.FieldValueErrorReason"),
        text("fieldPath"),
        pointer("optionalOldSelf", "*bool"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rules_that_do_not_parse_are_reported_where_kube_reports_them() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.a > 0"}, {"rule": "self.a > ", "reason": "FieldValueForbidden"}, {"rule": " "}],
            "properties": {"tags": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self != ''", "messageExpression": "'bad: ' +"}]}}}}}});
        let one = json!({"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]});
        let causes = rule_causes(&one);
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule",
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].rule",
                "spec.validation.openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-validations[0].messageExpression",
            ]
        );
        assert_eq!(
            causes[0].message,
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.a > \", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(0xc000000000), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.a > \n | .........^"
        );
        assert_eq!(causes[1].message, "Required value: rule is not specified");
        // Different schemas per version: each is checked at its own path.
        let two = json!({"versions": [
            {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v2", "schema": {"openAPIV3Schema": schema}},
        ]});
        assert!(
            rule_causes(&two)[0]
                .field
                .starts_with("spec.versions[1].schema.openAPIV3Schema.properties[spec]")
        );
        // Syntax the parser here lacks is left to evaluation (skipped), not refused.
        let escaped = json!({"versions": [{"name": "v1", "schema": {"openAPIV3Schema":
            {"type": "object", "x-kubernetes-validations": [{"rule": "self.`a-b` == 1"}]}}}]});
        assert!(rule_causes(&escaped).is_empty());
    }
}
