//! Name validation (DNS-1123) as kube-apiserver's apimachinery validation.

use crate::meta::errors::{Cause, invalid_value};

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.first().is_some_and(|c| *c != b'-')
        && b.last().is_some_and(|c| *c != b'-')
}

/// True for a DNS-1123 subdomain (at most 253 characters).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// How a resource's names are validated, per kube-apiserver's validator for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (most resources, custom resources).
    Subdomain,
    /// DNS-1123 label (namespaces).
    Label,
    /// A path segment: anything but `.`, `..` and names containing `/` or `%` (RBAC's
    /// `ValidateRBACName`, so `system:discovery` is valid).
    PathSegment,
}

impl NameRule {
    /// The rule for a resource.
    pub fn of(group: &str, plural: &str) -> Self {
        match (group, plural) {
            ("", "namespaces") => Self::Label,
            ("rbac.authorization.k8s.io", _) => Self::PathSegment,
            _ => Self::Subdomain,
        }
    }
}

/// Validates an object name under `rule`.
pub fn validate_name_with(field: &str, name: &str, rule: NameRule) -> Vec<Cause> {
    match rule {
        NameRule::Subdomain => validate_name(field, name, false),
        NameRule::Label => validate_name(field, name, true),
        NameRule::PathSegment => {
            let problem = match name {
                "." => Some("may not be '.'"),
                ".." => Some("may not be '..'"),
                _ if name.contains('/') => Some("may not contain '/'"),
                _ if name.contains('%') => Some("may not contain '%'"),
                _ => None,
            };
            problem
                .map(|p| invalid_value(field, name, p))
                .into_iter()
                .collect()
        }
    }
}

/// Validates an object name as a DNS-1123 subdomain; `label` asks for a DNS-1123 label
/// (namespaces).
pub fn validate_name(field: &str, name: &str, label: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    if label {
        if name.len() > 63 {
            causes.push(invalid_value(field, name, "must be no more than 63 characters"));
        }
        if !is_label(name) && name.len() <= 63 {
            causes.push(invalid_value(field, name, LABEL_MSG));
        }
    } else {
        if name.len() > 253 {
            causes.push(invalid_value(field, name, "must be no more than 253 characters"));
        }
        if !is_dns1123_subdomain(name) && name.len() <= 253 {
            causes.push(invalid_value(field, name, SUBDOMAIN_MSG));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_dns1123_subdomain("a.b-c.d1"));
        assert!(!is_dns1123_subdomain("A"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain("-a"));
        assert!(validate_name("metadata.name", "a.b", true).len() == 1);
    }

    #[test]
    fn rbac_names_are_path_segments() {
        let rule = NameRule::of("rbac.authorization.k8s.io", "clusterroles");
        assert!(validate_name_with("metadata.name", "system:discovery", rule).is_empty());
        assert_eq!(validate_name_with("metadata.name", "a/b", rule).len(), 1);
        assert_eq!(validate_name_with("metadata.name", "..", rule).len(), 1);
        assert_eq!(
            validate_name_with("metadata.name", "Cap", NameRule::of("", "configmaps")).len(),
            1
        );
    }
}
