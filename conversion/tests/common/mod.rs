//! Shared helpers of the conversion tests: fixtures, the infrastructure value, JSON
//! comparison.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use conversion::{AwsInfrastructure, ConversionErrors, IpFamily};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Reads a YAML fixture into `T`, failing the test with the file's name.
pub fn fixture<T: DeserializeOwned>(name: &str) -> T {
    let path = fixture_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The cluster of the fixtures: `demo-x7k2p` in `us-east-2`.
pub fn infra() -> AwsInfrastructure {
    AwsInfrastructure {
        infrastructure_name: "demo-x7k2p".into(),
        region: "us-east-2".into(),
        ip_family: IpFamily::IPv4,
        aws_cluster: Some(conversion::aws::cluster::AwsCluster::installer_default(
            "openshift-cluster-api",
            "demo-x7k2p",
        )),
    }
}

pub fn json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// RFC 7386 merge patch: `patch` applied to `target` (null deletes).
pub fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(key);
                } else {
                    merge(target.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// The paths of every error, in order.
pub fn error_paths(errors: &ConversionErrors) -> Vec<String> {
    errors.errors.iter().map(|e| e.path.to_string()).collect()
}

/// Asserts two JSON values are equal, printing both pretty on failure.
#[track_caller]
pub fn assert_json_eq(actual: &Value, expected: &Value) {
    assert!(
        actual == expected,
        "actual:\n{}\nexpected:\n{}",
        serde_json::to_string_pretty(actual).unwrap_or_default(),
        serde_json::to_string_pretty(expected).unwrap_or_default()
    );
}
