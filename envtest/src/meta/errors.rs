//! `metav1.Status` errors with the reasons and codes kube-apiserver uses. An Invalid error
//! keeps every cause in `details.causes` and words its message as apimachinery's
//! `NewInvalid` does, through `ErrorList.ToAggregate()` ([`aggregate`]).

use serde_json::{Value, json};

/// One `details.causes[]` entry of an Invalid status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, ...
    pub reason: String,
    /// Human readable message of the cause.
    pub message: String,
    /// The JSON path of the offending field (`metadata.name`).
    pub field: String,
}

/// An API error, rendered as a `metav1.Status` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `metav1.StatusReason` (`NotFound`, `Conflict`, ...).
    pub reason: String,
    /// Human readable message.
    pub message: String,
    /// `details` (boxed to keep `Result<_, ApiError>` small).
    pub details: Box<Details>,
}

/// `metav1.StatusDetails`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (the resource for most errors, the kind for Invalid).
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`.
    pub retry_after: Option<u64>,
    /// `metadata.continue` of the Status (an expired list's token to go on with).
    pub list_continue: Option<String>,
}

/// Result alias used inside the server.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// A bare error with code, reason and message.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: Box::default(),
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details.group = Some(group.to_string());
        self.details.kind = Some(kind.to_string());
        self.details.name = Some(name.to_string());
        self
    }

    /// 404 `<resource>[.<group>] "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 `... already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict with the apiserver's "Operation cannot be fulfilled" wording.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict on a stale resourceVersion.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid with causes, worded as apimachinery's `NewInvalid`: the causes are kept as
    /// they are, the message is `ErrorList.ToAggregate()` of them (identical `field: message`
    /// lines listed once, a single line bare, several in `[a, b]`, none: just `is invalid`).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let lines = causes.iter().map(|c| format!("{}: {}", c.field, c.message));
        let message = match aggregate(lines) {
            Some(list) => format!("{kind}{} \"{name}\" is invalid: {list}", dot_group(group)),
            None => format!("{kind}{} \"{name}\" is invalid", dot_group(group)),
        };
        let mut error = Self::new(422, "Invalid", message).with_details(group, kind, name);
        error.details.causes = causes;
        error
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden.
    pub fn forbidden(group: &str, resource: &str, name: &str, message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message).with_details(group, resource, name)
    }

    /// 404 for an unknown path or resource.
    pub fn no_resource() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(accepted: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {accepted}"
            ),
        )
    }

    /// 410 Expired (too old resource version).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// The `metav1.Status` JSON body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(token) = &self.details.list_continue {
            status["metadata"] = json!({"continue": token});
        }
        let mut details = serde_json::Map::new();
        if let Some(name) = &self.details.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = &self.details.group
            && !group.is_empty()
        {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &self.details.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !self.details.causes.is_empty() {
            let causes: Vec<Value> = self
                .details
                .causes
                .iter()
                .map(|c| {
                    // Each of the three is `omitempty` in metav1.StatusCause.
                    let mut cause = serde_json::Map::new();
                    for (key, value) in [
                        ("reason", &c.reason),
                        ("message", &c.message),
                        ("field", &c.field),
                    ] {
                        if !value.is_empty() {
                            cause.insert(key.into(), json!(value));
                        }
                    }
                    Value::Object(cause)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(retry) = self.details.retry_after {
            details.insert("retryAfterSeconds".into(), json!(retry));
        }
        if !details.is_empty()
            && let Some(map) = status.as_object_mut()
        {
            map.insert("details".into(), Value::Object(details));
        }
        status
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// apimachinery's `ErrorList.ToAggregate().Error()`: each distinct message once, in order of
/// first appearance; one message as it is, several as `[a, b]`; `None` when there are none.
pub fn aggregate(messages: impl IntoIterator<Item = String>) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for message in messages {
        if !seen.contains(&message) {
            seen.push(message);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

/// `configmaps` or `widgets.example.com`.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn dot_group(group: &str) -> String {
    if group.is_empty() {
        String::new()
    } else {
        format!(".{group}")
    }
}

/// A cause with reason `FieldValueInvalid`.
pub fn invalid_value(field: &str, value: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: \"{value}\": {detail}"),
        field: field.into(),
    }
}

/// A cause with reason `FieldValueRequired` (`Required value`, then `: <detail>` when
/// there is one, as apimachinery's `field.Error` words it).
pub fn required(field: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    Cause {
        reason: "FieldValueRequired".into(),
        message,
        field: field.into(),
    }
}

/// A cause with reason `FieldValueForbidden`.
pub fn forbidden_field(field: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {detail}"),
        field: field.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(field: &str, message: &str) -> Cause {
        Cause {
            reason: "FieldValueInvalid".into(),
            message: message.into(),
            field: field.into(),
        }
    }

    #[test]
    fn invalid_messages_are_error_list_to_aggregate() {
        let none = ApiError::invalid("x.io", "Foo", "a", vec![]);
        assert_eq!(none.message, "Foo.x.io \"a\" is invalid");
        let one = ApiError::invalid("", "Foo", "a", vec![cause("spec", "m")]);
        assert_eq!(one.message, "Foo \"a\" is invalid: spec: m");
        // The same line twice is one line (no brackets); the causes keep both.
        let same = ApiError::invalid("", "Foo", "a", vec![cause("spec", "m"), cause("spec", "m")]);
        assert_eq!(same.message, "Foo \"a\" is invalid: spec: m");
        assert_eq!(same.details.causes.len(), 2);
        let several = ApiError::invalid(
            "",
            "Foo",
            "a",
            vec![cause("spec", "m"), cause("b", "n"), cause("spec", "m")],
        );
        assert_eq!(several.message, "Foo \"a\" is invalid: [spec: m, b: n]");
        assert_eq!(several.details.causes.len(), 3);
    }
}
