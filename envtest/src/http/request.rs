//! Request parsing: the URL path into a route, the query string into parameters.

use std::collections::HashMap;

/// A resource request parsed from the path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group (`""` for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`).
    pub subresource: Option<String>,
}

/// What a path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/readyz`, `/livez`.
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1`, `/apis/{g}/{v}`.
    Resources(String, String),
    /// A resource or object.
    Resource(ResourcePath),
    /// `/openapi/...` (what follows `/openapi/`).
    OpenApi(String),
    /// Anything else.
    Unknown,
}

/// Parses a path.
pub fn route(path: &str) -> Route {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["api", version] => Route::Resources(String::new(), version.to_string()),
        ["api", version, rest @ ..] => resource("", version, rest),
        ["openapi", rest @ ..] => Route::OpenApi(rest.join("/")),
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["apis", group, version] => Route::Resources(group.to_string(), version.to_string()),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::Unknown,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let mut path = ResourcePath {
        group: group.into(),
        version: version.into(),
        ..ResourcePath::default()
    };
    let tail: &[&str] = match rest {
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            path.resource = "namespaces".into();
            path.name = Some(name.to_string());
            path.subresource = Some(sub.to_string());
            return Route::Resource(path);
        }
        ["namespaces", ns, resource, tail @ ..] => {
            path.namespace = Some(ns.to_string());
            path.resource = resource.to_string();
            tail
        }
        [resource, tail @ ..] => {
            path.resource = resource.to_string();
            tail
        }
        [] => return Route::Unknown,
    };
    match tail {
        [] => {}
        [name] => path.name = Some(name.to_string()),
        [name, sub] => {
            path.name = Some(name.to_string());
            path.subresource = Some(sub.to_string());
        }
        _ => return Route::Unknown,
    }
    Route::Resource(path)
}

/// Decodes `%XX` escapes (and `+` as space when `plus` is set).
fn decode(input: &str, plus: bool) -> String {
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_decode(input: &str) -> String {
    decode(input, false)
}

/// Parses a query string into a map (the last value of a repeated key wins).
pub fn query(raw: Option<&str>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for pair in raw.unwrap_or_default().split('&') {
        if pair.is_empty() {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.insert(decode(k, true), decode(v, true));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/api"), Route::CoreVersions);
        assert_eq!(
            route("/api/v1/namespaces/a/configmaps/b"),
            Route::Resource(ResourcePath {
                group: String::new(),
                version: "v1".into(),
                resource: "configmaps".into(),
                namespace: Some("a".into()),
                name: Some("b".into()),
                subresource: None,
            })
        );
        assert!(
            matches!(route("/api/v1/namespaces/a"), Route::Resource(p) if p.name.as_deref() == Some("a"))
        );
        assert!(
            matches!(route("/api/v1/namespaces/a/status"), Route::Resource(p) if p.subresource.as_deref() == Some("status"))
        );
        assert_eq!(route("/x/y"), Route::Unknown);
        let q = query(Some("labelSelector=a%3Db%2Cc+in+(d)&watch=1&x"));
        assert_eq!(q.get("labelSelector").map(String::as_str), Some("a=b,c in (d)"));
        assert_eq!(decode("%", false), "%");
        assert_eq!(decode("%4", false), "%4");
    }
}
