//! Versions of a CRD marked `deprecated: true`: every request through them answers a
//! `Warning` worded as apiextensions-apiserver (or the CRD's `deprecationWarning`); the
//! other versions answer none.

mod common;

use common::{TestResult, create, expect, get};
use envtest::TestEnv;
use serde_json::json;

fn crd() -> serde_json::Value {
    let version = |name: &str, storage: bool, extra: serde_json::Value| {
        let mut v = json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        });
        if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
            v.extend(extra.clone());
        }
        v
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.old.example.com"},
        "spec": {
            "group": "old.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                version("v1alpha1", false, json!({"deprecated": true})),
                version("v1beta1", false, json!({"deprecated": true, "deprecationWarning": "v1beta1 widgets go away in 2027"})),
                version("v1beta2", false, json!({"deprecated": true})),
                version("v1", true, json!({})),
                version("v2alpha1", false, json!({})),
            ],
        },
    })
}

#[tokio::test]
async fn deprecated_versions_answer_a_warning_on_every_request() -> TestResult {
    let env = TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(crd())?)
        .start()
        .await?;
    let path = |v: &str| format!("/apis/old.example.com/{v}/namespaces/test/widgets");
    let widget = |v: &str, name: &str| json!({"apiVersion": format!("old.example.com/{v}"), "kind": "Widget", "metadata": {"name": name}});

    let created = create(&env, &path("v1beta2"), &widget("v1beta2", "a")).await?;
    expect(&created, 201)?;
    let expected = r#"299 - "old.example.com/v1beta2 Widget is deprecated; use old.example.com/v1 Widget""#;
    assert_eq!(created.warnings, vec![expected]);
    let list = get(&env, &path("v1beta2")).await?;
    expect(&list, 200)?;
    assert_eq!(list.warnings, vec![expected]);
    let one = get(&env, &format!("{}/a", path("v1beta2"))).await?;
    assert_eq!(one.warnings, vec![expected]);

    let alpha = get(&env, &path("v1alpha1")).await?;
    assert_eq!(
        alpha.warnings,
        vec![r#"299 - "old.example.com/v1alpha1 Widget is deprecated; use old.example.com/v1 Widget""#],
        "the newest served version that is not deprecated"
    );
    let custom = get(&env, &path("v1beta1")).await?;
    assert_eq!(
        custom.warnings,
        vec![r#"299 - "v1beta1 widgets go away in 2027""#]
    );

    for version in ["v1", "v2alpha1"] {
        let reply = get(&env, &format!("{}/a", path(version))).await?;
        expect(&reply, 200)?;
        assert!(reply.warnings.is_empty(), "{version}: {:?}", reply.warnings);
    }
    Ok(())
}
