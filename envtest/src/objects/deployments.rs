//! kube's defaults for `apps/v1` Deployments, as its scheme applies them on every write:
//! `SetDefaults_Deployment` (k8s.io/kubernetes `pkg/apis/apps/v1/defaults.go`) and, for the
//! pod template, core/v1's `SetDefaults_PodSpec`, `_Container`, `_ContainerPort`,
//! `_Probe`, `_HTTPGetAction`, `_ObjectFieldSelector` and the volume sources'.

use serde_json::{Map, Value, json};

/// The `defaultMode` of secret, config map, downward API and projected volumes (0644).
const DEFAULT_MODE: i64 = 0o644;

/// Fills in what kube fills in on a Deployment.
pub fn default_deployment(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    set(spec, "replicas", json!(1));
    let strategy = entry(spec, "strategy");
    set(strategy, "type", json!("RollingUpdate"));
    if strategy["type"] == "RollingUpdate" {
        let rolling = entry(strategy, "rollingUpdate");
        set(rolling, "maxUnavailable", json!("25%"));
        set(rolling, "maxSurge", json!("25%"));
    }
    set(spec, "revisionHistoryLimit", json!(10));
    set(spec, "progressDeadlineSeconds", json!(600));
    let template = entry(spec, "template");
    default_pod_spec(entry(template, "spec"));
}

/// `SetDefaults_PodSpec` and what it reaches.
pub fn default_pod_spec(spec: &mut Map<String, Value>) {
    set(spec, "dnsPolicy", json!("ClusterFirst"));
    set(spec, "restartPolicy", json!("Always"));
    if !spec.contains_key("securityContext") {
        spec.insert("securityContext".into(), json!({}));
    }
    set(spec, "terminationGracePeriodSeconds", json!(30));
    set(spec, "schedulerName", json!("default-scheduler"));
    let host_network = spec.get("hostNetwork") == Some(&json!(true));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for container in items(spec, list) {
            default_container(container, host_network);
        }
    }
    for volume in items(spec, "volumes") {
        default_volume(volume);
    }
}

fn default_container(container: &mut Map<String, Value>, host_network: bool) {
    set(container, "terminationMessagePath", json!("/dev/termination-log"));
    set(container, "terminationMessagePolicy", json!("File"));
    let image = container.get("image").and_then(Value::as_str).unwrap_or_default();
    set(container, "imagePullPolicy", json!(pull_policy(image)));
    for port in items(container, "ports") {
        set(port, "protocol", json!("TCP"));
        if host_network && !port.contains_key("hostPort") {
            let container_port = port.get("containerPort").cloned().unwrap_or(json!(0));
            port.insert("hostPort".into(), container_port);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(probe).and_then(Value::as_object_mut) {
            set(probe, "timeoutSeconds", json!(1));
            set(probe, "periodSeconds", json!(10));
            set(probe, "successThreshold", json!(1));
            set(probe, "failureThreshold", json!(3));
            if let Some(http) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
                set(http, "path", json!("/"));
                set(http, "scheme", json!("HTTP"));
            }
        }
    }
    for env in items(container, "env") {
        if let Some(field_ref) = env
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .and_then(Value::as_object_mut)
        {
            set(field_ref, "apiVersion", json!("v1"));
        }
    }
}

/// `SetDefaults_Container`: `Always` for an image without a tag or tagged `latest`.
fn pull_policy(image: &str) -> &'static str {
    let name = image.split('@').next().unwrap_or_default();
    let last = name.rsplit('/').next().unwrap_or_default();
    let tag = last.split_once(':').map(|(_, tag)| tag);
    if image.contains('@') {
        return "IfNotPresent";
    }
    match tag {
        None | Some("latest") => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn default_volume(volume: &mut Map<String, Value>) {
    const SOURCES: [&str; 29] = [
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
    ];
    if !SOURCES.iter().any(|s| volume.contains_key(*s)) && !volume.contains_key("image") {
        volume.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = volume.get_mut(source).and_then(Value::as_object_mut) {
            set(source, "defaultMode", json!(DEFAULT_MODE));
        }
    }
    if let Some(host_path) = volume.get_mut("hostPath").and_then(Value::as_object_mut) {
        set(host_path, "type", json!(""));
    }
    if let Some(disk) = volume.get_mut("azureDisk").and_then(Value::as_object_mut) {
        set(disk, "cachingMode", json!("ReadWrite"));
        set(disk, "fsType", json!("ext4"));
        set(disk, "readOnly", json!(false));
        set(disk, "kind", json!("Shared"));
    }
    if let Some(image) = volume.get_mut("image").and_then(Value::as_object_mut) {
        let reference = image.get("reference").and_then(Value::as_str).unwrap_or_default();
        set(image, "pullPolicy", json!(pull_policy(reference)));
    }
}

/// Sets `key` when it is missing, null or empty (Go's zero value of the field).
fn set(map: &mut Map<String, Value>, key: &str, value: Value) {
    let missing = match map.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty() && !value.as_str().is_some_and(str::is_empty),
        Some(_) => false,
    };
    if missing {
        map.insert(key.into(), value);
    }
}

/// The object under `key`, created when missing.
fn entry<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    match slot {
        Value::Object(inner) => inner,
        _ => unreachable!("just made an object"),
    }
}

/// The objects of the list under `key`.
fn items<'a>(map: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_deployment_gets_kubes_defaults() {
        let mut deployment = json!({"spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "resources": {}},
                               {"name": "side", "image": "busybox", "readinessProbe": {"httpGet": {"port": 8080}}}],
                "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}},
            "strategy": {}}});
        default_deployment(&mut deployment);
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert_eq!(pod["securityContext"], json!({}));
        let nginx = &pod["containers"][0];
        assert_eq!(nginx["imagePullPolicy"], "IfNotPresent");
        assert_eq!(nginx["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(nginx["terminationMessagePolicy"], "File");
        assert_eq!(nginx["ports"][0]["protocol"], "TCP");
        let side = &pod["containers"][1];
        assert_eq!(side["imagePullPolicy"], "Always");
        assert_eq!(
            side["readinessProbe"],
            json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(pod["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(pod["volumes"][1]["secret"]["defaultMode"], 420);
        // Set values are kept; a Recreate strategy gets no rollingUpdate.
        let mut recreate =
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "template": {"spec": {}}}});
        default_deployment(&mut recreate);
        assert_eq!(recreate["spec"]["replicas"], 0);
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(pull_policy("registry:5000/app@sha256:abc"), "IfNotPresent");
        assert_eq!(pull_policy("registry:5000/app"), "Always");
    }
}
