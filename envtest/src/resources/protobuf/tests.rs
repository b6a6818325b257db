use serde_json::json;

use super::*;

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .filter_map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

fn decoded(hex_body: &str, expected: (&str, &str)) -> Value {
    match decode_object(&hex(hex_body), expected) {
        Ok(value) => value,
        Err(error) => panic!("decode failed: {}", error.message),
    }
}

// Bodies captured from kubectl v1.32 (`kubectl create configmap|secret|namespace|…`).

#[test]
fn kubectl_configmap() {
    let body = "6b3873000a0f0a0276311209436f6e6669674d617012250a130a03636d3112001a0022002a0032003800420012060a016112016212060a01631201641a002200";
    assert_eq!(
        decoded(body, ("v1", "ConfigMap")),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm1"},
            "data": {"a": "b", "c": "d"},
        })
    );
}

#[test]
fn kubectl_secret_data_is_base64() {
    let body = "6b3873000a0c0a027631120653656372657412250a120a02733112001a0022002a00320038004200120d0a027077120768756e746572321a001a002200";
    assert_eq!(
        decoded(body, ("v1", "Secret")),
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s1"},
            "data": {"pw": "aHVudGVyMg=="},
        })
    );
}

#[test]
fn kubectl_namespace_and_service_account() {
    let ns = "6b3873000a0f0a02763112094e616d657370616365121b0a130a036e733112001a0022002a0032003800420012001a020a001a002200";
    assert_eq!(
        decoded(ns, ("v1", "Namespace")),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}, "spec": {}, "status": {}})
    );
    let sa = "6b3873000a140a027631120e536572766963654163636f756e7412150a130a0373613112001a0022002a003200380042001a002200";
    assert_eq!(
        decoded(sa, ("v1", "ServiceAccount")),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa1"}})
    );
}

#[test]
fn kubectl_role_bindings() {
    let rb = "6b3873000a2b0a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f7631120b526f6c6542696e64696e67128a010a130a0372623112001a0022002a00320038004200122a0a04557365721219726261632e617574686f72697a6174696f6e2e6b38732e696f1a05616c696365220012200a0e536572766963654163636f756e7412001a03736131220764656661756c741a250a19726261632e617574686f72697a6174696f6e2e6b38732e696f1204526f6c651a0272311a002200";
    assert_eq!(
        decoded(rb, ("rbac.authorization.k8s.io/v1", "RoleBinding")),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "rb1"},
            "subjects": [
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                {"kind": "ServiceAccount", "name": "sa1", "namespace": "default"},
            ],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r1"},
        })
    );
    let crb = "6b3873000a320a1c726261632e617574686f72697a6174696f6e2e6b38732e696f2f76311212436c7573746572526f6c6542696e64696e6712710a140a046372623112001a0022002a00320038004200122a0a0547726f75701219726261632e617574686f72697a6174696f6e2e6b38732e696f1a046465767322001a2d0a19726261632e617574686f72697a6174696f6e2e6b38732e696f120b436c7573746572526f6c651a036372311a002200";
    let value = decoded(crb, ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"));
    assert_eq!(
        value["subjects"],
        json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}])
    );
    assert_eq!(value["roleRef"]["kind"], "ClusterRole");
}

/// The first path where two values differ.
fn first_diff(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.keys().chain(y.keys()).find_map(|k| {
            first_diff(
                &x.get(k).cloned().unwrap_or(Value::Null),
                &y.get(k).cloned().unwrap_or(Value::Null),
                &format!("{path}.{k}"),
            )
        }),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (x, y))| first_diff(x, y, &format!("{path}[{i}]"))),
        _ if a == b => None,
        // Go prints integral floats as integers (`0.0` becomes `0`).
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        _ => Some(format!("{path}: {a} != {b}")),
    }
}

fn assert_round_trips(value: &Value) {
    let back = round_trip(value);
    if let Some(diff) = first_diff(&back, value, "") {
        panic!("{} does not round-trip: {diff}", value["kind"]);
    }
}

fn round_trip(value: &Value) -> Value {
    let body = match encode_object(value) {
        Ok(body) => body,
        Err(error) => panic!("encode failed: {error}"),
    };
    assert!(body.starts_with(&MAGIC));
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    let kind = value["kind"].as_str().unwrap_or_default();
    decoded_bytes(&body, (api_version, kind))
}

fn decoded_bytes(body: &[u8], expected: (&str, &str)) -> Value {
    match decode_object(body, expected) {
        Ok(value) => value,
        Err(error) => panic!("decode failed: {}", error.message),
    }
}

#[test]
fn every_builtin_kind_round_trips() {
    let meta = json!({
        "name": "x", "namespace": "ns", "uid": "6f1c1a52-6b1e-4d2c-9a55-0c6ad2d3c0f1",
        "resourceVersion": "42", "generation": 3,
        "creationTimestamp": "2025-01-02T03:04:05Z",
        "deletionTimestamp": "2025-01-02T03:04:06Z",
        "deletionGracePeriodSeconds": 0,
        "labels": {"a": "b"}, "annotations": {"c": "d"},
        "finalizers": ["f/g"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u", "controller": true, "blockOwnerDeletion": false}],
        "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1", "time": "2025-01-02T03:04:05Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}}}}],
    });
    let objects = [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "immutable": false, "data": {"k": "v"}, "binaryData": {"b": "AAEC"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque", "data": {"k": "dg=="}, "immutable": true}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating", "conditions": [{"type": "NamespaceDeletionContentFailure", "status": "False", "lastTransitionTime": "2025-01-02T03:04:05Z", "reason": "R", "message": "M"}]}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta, "secrets": [{"name": "s", "namespace": "ns"}], "imagePullSecrets": [{"name": "p"}], "automountServiceAccountToken": false}),
        json!({"apiVersion": "v1", "kind": "Event", "metadata": meta,
            "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u", "apiVersion": "v1", "resourceVersion": "1", "fieldPath": "spec"},
            "reason": "Started", "message": "m", "source": {"component": "kubelet", "host": "h"},
            "firstTimestamp": "2025-01-02T03:04:05Z", "lastTimestamp": "2025-01-02T03:04:06Z", "count": 2, "type": "Normal",
            "eventTime": "2025-01-02T03:04:05.123456Z", "series": {"count": 2, "lastObservedTime": "2025-01-02T03:04:05.000001Z"},
            "action": "a", "related": {"kind": "Node", "name": "n"}, "reportingComponent": "rc", "reportingInstance": "ri"}),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta,
            "eventTime": "2025-01-02T03:04:05.123456Z", "series": {"count": 1, "lastObservedTime": "2025-01-02T03:04:05.000000Z"},
            "reportingController": "c", "reportingInstance": "i", "action": "a", "reason": "r",
            "regarding": {"kind": "Pod", "name": "p"}, "note": "n", "type": "Warning",
            "deprecatedSource": {"component": "x"}, "deprecatedFirstTimestamp": "2025-01-02T03:04:05Z", "deprecatedCount": 4}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "acquireTime": "2025-01-02T03:04:05.000000Z", "renewTime": "2025-01-02T03:04:05.500000Z", "leaseTransitions": 0}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta,
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta,
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "u"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta,
            "subjects": [{"kind": "ServiceAccount", "name": "s", "namespace": "ns"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"}}),
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": meta, "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "a=b"}}),
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "propagationPolicy": "Foreground",
            "preconditions": {"uid": "u", "resourceVersion": "7"}, "dryRun": ["All"], "orphanDependents": false}),
    ];
    for object in objects {
        assert_round_trips(&object);
    }
}

#[test]
fn project_crds_round_trip() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let docs =
            serde_saphyr::from_multiple::<Value>(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        crds.extend(docs);
    }
    assert!(!crds.is_empty());
    for crd in crds {
        assert_round_trips(&crd);
    }
    let schema = widget_schema();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"], "categories": ["all"]},
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"caBundle": "AAEC", "service": {"namespace": "n", "name": "s", "path": "/c", "port": 443}}}},
            "versions": [{
                "name": "v1", "served": true, "storage": true, "deprecated": true, "deprecationWarning": "old",
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "priority": 1}],
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "schema": {"openAPIV3Schema": schema},
            }],
        },
        "status": {
            "conditions": [{"type": "Established", "status": "True", "lastTransitionTime": "2025-01-02T03:04:05Z", "reason": "InitialNamesAccepted", "message": "ok"}],
            "acceptedNames": {"plural": "widgets", "kind": "Widget"},
            "storedVersions": ["v1"],
        },
    });
    assert_round_trips(&crd);
}

fn widget_schema() -> Value {
    let spec = json!({"type": "object", "properties": {
                            "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 10.5, "default": 1},
                            "color": {"type": "string", "enum": ["red", "blue"], "pattern": "^[a-z]+$", "maxLength": 10, "nullable": true},
                            "ports": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set", "maxItems": 4},
                            "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-map-type": "granular"},
                            "open": {"type": "object", "additionalProperties": true},
                            "any": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                            "deps": {"type": "object", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
        },
        "x-kubernetes-validations": [{"rule": "self.replicas < 5", "message": "too many", "reason": "FieldValueInvalid", "fieldPath": ".replicas", "optionalOldSelf": true}]});
    json!({
        "type": "object", "required": ["spec"], "x-kubernetes-preserve-unknown-fields": false,
        "properties": {
            "spec": spec,
            "status": {"type": "object", "example": {"replicas": 1}, "externalDocs": {"url": "https://example.com"}},
        },
    })
}

#[test]
fn bad_bodies_are_bad_requests() {
    let without_magic = decode_object(b"{}", ("v1", "ConfigMap"));
    assert_eq!(without_magic.err().map(|e| e.code), Some(400));
    let truncated = decode_object(&hex("6b3873000a0f0a0276"), ("v1", "ConfigMap"));
    assert_eq!(truncated.err().map(|e| e.code), Some(400));
    let unknown_kind = encode_object(&json!({"apiVersion": "v1", "kind": "Pod"}));
    assert!(unknown_kind.is_err());
    let body = wrap("v1", "Pod", Vec::new());
    let error = decode_object(&body, ("v1", "ConfigMap")).err();
    assert_eq!(error.map(|e| e.code), Some(400));
    // The envelope's type is optional: the URL's kind is assumed.
    let body = wrap("", "", Vec::new());
    assert_eq!(
        decoded_bytes(&body, ("v1", "ConfigMap")),
        json!({"apiVersion": "v1", "kind": "ConfigMap"})
    );
}

#[test]
fn body_types() {
    assert_eq!(BodyType::of(None), BodyType::Json);
    assert_eq!(
        BodyType::of(Some("application/json; charset=utf-8")),
        BodyType::Json
    );
    assert_eq!(
        BodyType::of(Some("application/vnd.kubernetes.protobuf")),
        BodyType::Protobuf
    );
    assert_eq!(BodyType::of(Some("application/yaml")), BodyType::Yaml);
    assert_eq!(BodyType::of(Some("text/plain")), BodyType::Other);
}

#[test]
fn deployments_round_trip_with_inlined_structs_and_unknown_fields() {
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0, "paused": true, "minReadySeconds": 5,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{
                    "name": "nginx", "image": "nginx:1.27", "command": ["nginx"], "args": ["-g", "daemon off;"],
                    "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                    "env": [{"name": "A", "value": "b"}, {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                            {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": false}}}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
                    "readinessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10},
                    "livenessProbe": {"exec": {"command": ["true"]}, "initialDelaySeconds": 3},
                    "securityContext": {"runAsUser": 0, "runAsNonRoot": false, "privileged": false, "capabilities": {"drop": ["ALL"]}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
                }],
                "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}},
                            {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}},
                            {"name": "c", "configMap": {"name": "cm", "items": [{"key": "a", "path": "b"}]}}],
                "terminationGracePeriodSeconds": 0, "hostNetwork": true, "nodeSelector": {"a": "b"},
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}]}}},
            }},
        },
        "status": {"replicas": 2, "readyReplicas": 1, "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2025-01-02T03:04:05Z", "lastTransitionTime": "2025-01-02T03:04:05Z", "reason": "R", "message": "M"}]},
    });
    assert_round_trips(&deployment);
    // Fields of inlined structs (a volume's source, a probe's handler, a key selector's
    // name) are known, others are not.
    let codec = codec_for("apps/v1", "Deployment").unwrap_or_else(|| panic!("no Deployment codec"));
    assert_eq!((codec.unknown)(&deployment), Vec::<String>::new());
    let mut bogus = deployment.clone();
    bogus["spec"]["template"]["spec"]["volumes"][0]["bogus"] = json!(1);
    bogus["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["nope"] = json!(1);
    assert_eq!(
        (codec.unknown)(&bogus),
        [
            "spec.template.spec.containers[0].readinessProbe.httpGet.nope",
            "spec.template.spec.volumes[0].bogus"
        ]
    );
}
