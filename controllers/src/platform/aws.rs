//! AWS: MAPI `AWSMachineProviderConfig` ⇄ CAPA `AWSMachine` / `AWSMachineTemplate`, and
//! the Machine and MachineSet around them.
//!
//! Every field either maps or is an error with its path: nothing is dropped silently.
//! Status converts with the objects; the hooks decide when it is written.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Map, Value, json};
use sync_core::api::{AuthoritativeApi, ContractVersionedObjectReference, RawObject, capi, mapi};

use crate::sync::{
    CAPI_MACHINE_FINALIZER, CapiMachine, CapiMachineSet, Cluster, ConversionError, Converted, Platform,
};

/// The credentials Secret the MAPI AWS actuator uses by default; CAPA has no equivalent.
const DEFAULT_CREDENTIALS: &str = "aws-cloud-credentials";
const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";
const INFRA_VERSION: &str = "v1beta2";
const ROLE_LABEL: &str = "machine.openshift.io/cluster-api-machine-role";
const TYPE_LABEL: &str = "machine.openshift.io/cluster-api-machine-type";
const INSTANCE_TYPE_LABEL: &str = "machine.openshift.io/instance-type";
const REGION_LABEL: &str = "machine.openshift.io/region";
const ZONE_LABEL: &str = "machine.openshift.io/zone";
const INSTANCE_STATE_ANNOTATION: &str = "machine.openshift.io/instance-state";
const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
const SET_NAME_LABEL: &str = "cluster.x-k8s.io/set-name";
const PRE_DRAIN: &str = "pre-drain.delete.hook.machine.cluster.x-k8s.io/";
const PRE_TERMINATE: &str = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/";
const DELETE_ANNOTATIONS: [(&str, &str); 1] = [(
    "machine.openshift.io/delete-machine",
    "cluster.x-k8s.io/delete-machine",
)];
/// CAPI's node deletion timeout the MAPI side implies.
const NODE_DELETION_TIMEOUT: i32 = 10;

/// The AWS conversion for one cluster.
#[derive(Clone, Debug)]
pub struct Aws {
    cluster: Cluster,
}

impl Aws {
    /// The conversion for `cluster` (its infrastructure name and region).
    pub fn new(cluster: Cluster) -> Self {
        Self { cluster }
    }
}

/// Collects field errors, so that one conversion reports all of them.
#[derive(Default)]
struct Errors(Vec<String>);

impl Errors {
    fn add(&mut self, path: &str, message: impl std::fmt::Display) {
        self.0.push(format!("{path}: {message}"));
    }
    fn finish<T>(self, value: T) -> Result<T, ConversionError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ConversionError(self.0))
        }
    }
}

fn resource(kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(INFRA_GROUP, INFRA_VERSION, kind))
}

fn infra_object(kind: &str, name: &str, data: Value) -> DynamicObject {
    let mut object = DynamicObject::new(name, &resource(kind));
    object.data = data;
    object
}

fn is_set(value: &Value) -> bool {
    !matches!(value, Value::Null) && value != &json!({}) && value != &json!([]) && value != &json!("")
}

/// MAPI providerSpec → CAPA AWSMachine spec (`path`: where the providerSpec is).
fn provider_spec_to_aws(spec: &Value, region: Option<&str>, path: &str, errors: &mut Errors) -> Value {
    let at = |field: &str| format!("{path}.{field}");
    let mut out = Map::new();
    match spec["instanceType"].as_str() {
        Some(t) if !t.is_empty() => {
            out.insert("instanceType".into(), t.into());
        }
        _ => errors.add(&at("instanceType"), "required"),
    }
    let ami = &spec["ami"];
    if let Some(id) = ami["id"].as_str() {
        out.insert("ami".into(), json!({ "id": id }));
    }
    if is_set(&ami["arn"]) {
        errors.add(&at("ami.arn"), "unsupported: AMI by ARN");
    }
    if is_set(&ami["filters"]) {
        errors.add(&at("ami.filters"), "unsupported: AMI by filters");
    }
    if let Some(name) = spec["credentialsSecret"]["name"].as_str()
        && name != DEFAULT_CREDENTIALS
    {
        errors.add(
            &at("credentialsSecret"),
            format!("unsupported: {name:?} (only {DEFAULT_CREDENTIALS:?})"),
        );
    }
    if let (Some(want), Some(got)) = (region, spec["placement"]["region"].as_str())
        && want != got
    {
        errors.add(
            &at("placement.region"),
            format!("{got:?} is not the cluster's region {want:?}"),
        );
    }
    if let Some(tenancy) = spec["placement"]["tenancy"].as_str() {
        out.insert("tenancy".into(), tenancy.into());
    }
    if spec["deviceIndex"].as_i64().is_some_and(|i| i != 0) {
        errors.add(&at("deviceIndex"), "unsupported: must be 0");
    }
    if is_set(&spec["loadBalancers"]) {
        errors.add(&at("loadBalancers"), "unsupported on worker machines");
    }
    if is_set(&spec["metadata"]) {
        errors.add(&at("metadata"), "unsupported");
    }
    match spec["networkInterfaceType"].as_str() {
        None | Some("") => {}
        Some("ENA") => {
            out.insert("networkInterfaceType".into(), "interface".into());
        }
        Some("EFA") => {
            out.insert("networkInterfaceType".into(), "efa".into());
        }
        Some(other) => errors.add(&at("networkInterfaceType"), format!("unsupported: {other:?}")),
    }
    if let Some(profile) = spec["iamInstanceProfile"]["id"].as_str() {
        out.insert("iamInstanceProfile".into(), profile.into());
    }
    if let Some(key) = spec["keyName"].as_str() {
        out.insert("sshKeyName".into(), key.into());
    }
    if let Some(public) = spec["publicIp"].as_bool() {
        out.insert("publicIP".into(), public.into());
    }
    if is_set(&spec["subnet"]) {
        out.insert("subnet".into(), resource_reference(&spec["subnet"]));
    }
    if let Some(groups) = spec["securityGroups"].as_array().filter(|g| !g.is_empty()) {
        out.insert(
            "additionalSecurityGroups".into(),
            groups.iter().map(resource_reference).collect(),
        );
    }
    if let Some(tags) = spec["tags"].as_array().filter(|t| !t.is_empty()) {
        let tags: Map<String, Value> = tags
            .iter()
            .filter_map(|t| Some((t["name"].as_str()?.to_owned(), t["value"].clone())))
            .collect();
        out.insert("additionalTags".into(), Value::Object(tags));
    }
    if is_set(&spec["spotMarketOptions"]) {
        let mut spot = Map::new();
        if let Some(price) = spec["spotMarketOptions"]["maxPrice"].as_str() {
            spot.insert("maxPrice".into(), price.into());
        }
        out.insert("spotMarketOptions".into(), Value::Object(spot));
    }
    let mut non_root = Vec::new();
    for (i, device) in spec["blockDevices"].as_array().into_iter().flatten().enumerate() {
        let path = at(&format!("blockDevices[{i}]"));
        if is_set(&device["noDevice"]) || is_set(&device["virtualName"]) {
            errors.add(&path, "unsupported: noDevice/virtualName");
        }
        let ebs = &device["ebs"];
        let mut volume = Map::new();
        if let Some(size) = ebs["volumeSize"].as_i64() {
            volume.insert("size".into(), size.into());
        }
        for (from, to) in [
            ("volumeType", "type"),
            ("iops", "iops"),
            ("encrypted", "encrypted"),
        ] {
            if is_set(&ebs[from]) {
                volume.insert(to.into(), ebs[from].clone());
            }
        }
        if let Some(key) = ebs["kmsKey"]["arn"].as_str() {
            volume.insert("encryptionKey".into(), key.into());
        }
        match device["deviceName"].as_str() {
            None | Some("") => {
                out.insert("rootVolume".into(), Value::Object(volume));
            }
            Some(name) => {
                if ebs["deleteOnTermination"].as_bool() == Some(false) {
                    errors.add(
                        &format!("{path}.ebs.deleteOnTermination"),
                        "unsupported: false on a non-root volume",
                    );
                }
                volume.insert("deviceName".into(), name.into());
                non_root.push(Value::Object(volume));
            }
        }
    }
    if !non_root.is_empty() {
        out.insert("nonRootVolumes".into(), non_root.into());
    }
    Value::Object(out)
}

fn resource_reference(reference: &Value) -> Value {
    let mut out = Map::new();
    if let Some(id) = reference["id"].as_str() {
        out.insert("id".into(), id.into());
    }
    if let Some(filters) = reference["filters"].as_array().filter(|f| !f.is_empty()) {
        out.insert("filters".into(), filters.clone().into());
    }
    Value::Object(out)
}

/// CAPA AWSMachine spec → MAPI providerSpec value.
fn aws_to_provider_spec(
    spec: &Value,
    user_data: Option<&str>,
    zone: Option<&str>,
    region: Option<&str>,
    path: &str,
    errors: &mut Errors,
) -> Value {
    let at = |field: &str| format!("{path}.{field}");
    for field in [
        "imageLookupFormat",
        "imageLookupOrg",
        "imageLookupBaseOS",
        "securityGroupOverrides",
        "networkInterfaces",
        "uncompressedUserData",
    ] {
        if is_set(&spec[field]) {
            errors.add(&at(field), "unsupported");
        }
    }
    if is_set(&spec["cloudInit"]) && spec["cloudInit"] != json!({"insecureSkipSecretsManager": false}) {
        errors.add(&at("cloudInit"), "unsupported");
    }
    if is_set(&spec["ignition"]["proxy"]) || is_set(&spec["ignition"]["tls"]) {
        errors.add(&at("ignition"), "unsupported: proxy/tls");
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), "machine.openshift.io/v1beta1".into());
    out.insert("kind".into(), "AWSMachineProviderConfig".into());
    out.insert("instanceType".into(), spec["instanceType"].clone());
    if let Some(id) = spec["ami"]["id"].as_str() {
        out.insert("ami".into(), json!({ "id": id }));
    }
    out.insert("credentialsSecret".into(), json!({ "name": DEFAULT_CREDENTIALS }));
    if let Some(name) = user_data {
        out.insert("userDataSecret".into(), json!({ "name": name }));
    }
    let mut placement = Map::new();
    if let Some(region) = region {
        placement.insert("region".into(), region.into());
    }
    if let Some(zone) = zone {
        placement.insert("availabilityZone".into(), zone.into());
    }
    if let Some(tenancy) = spec["tenancy"].as_str() {
        placement.insert("tenancy".into(), tenancy.into());
    }
    out.insert("placement".into(), Value::Object(placement));
    if let Some(profile) = spec["iamInstanceProfile"].as_str() {
        out.insert("iamInstanceProfile".into(), json!({ "id": profile }));
    }
    if let Some(key) = spec["sshKeyName"].as_str() {
        out.insert("keyName".into(), key.into());
    }
    if let Some(public) = spec["publicIP"].as_bool() {
        out.insert("publicIp".into(), public.into());
    }
    match spec["networkInterfaceType"].as_str() {
        Some("interface") => {
            out.insert("networkInterfaceType".into(), "ENA".into());
        }
        Some("efa") => {
            out.insert("networkInterfaceType".into(), "EFA".into());
        }
        _ => {}
    }
    if is_set(&spec["subnet"]) {
        out.insert("subnet".into(), resource_reference(&spec["subnet"]));
    }
    if let Some(groups) = spec["additionalSecurityGroups"]
        .as_array()
        .filter(|g| !g.is_empty())
    {
        out.insert(
            "securityGroups".into(),
            groups.iter().map(resource_reference).collect(),
        );
    }
    if let Some(tags) = spec["additionalTags"].as_object().filter(|t| !t.is_empty()) {
        let tags: Vec<Value> = tags
            .iter()
            .map(|(k, v)| json!({ "name": k, "value": v }))
            .collect();
        out.insert("tags".into(), tags.into());
    }
    if let Some(spot) = spec["spotMarketOptions"].as_object() {
        out.insert("spotMarketOptions".into(), Value::Object(spot.clone()));
    }
    let volume = |v: &Value, device: Option<&str>| {
        let mut ebs = Map::new();
        for (from, to) in [
            ("size", "volumeSize"),
            ("type", "volumeType"),
            ("iops", "iops"),
            ("encrypted", "encrypted"),
        ] {
            if is_set(&v[from]) {
                ebs.insert(to.into(), v[from].clone());
            }
        }
        if let Some(key) = v["encryptionKey"].as_str() {
            ebs.insert("kmsKey".into(), json!({ "arn": key }));
        }
        let mut device_json = json!({ "ebs": ebs });
        if let Some(name) = device {
            device_json["deviceName"] = name.into();
        }
        device_json
    };
    let mut devices = Vec::new();
    if is_set(&spec["rootVolume"]) {
        devices.push(volume(&spec["rootVolume"], None));
    }
    for v in spec["nonRootVolumes"].as_array().into_iter().flatten() {
        devices.push(volume(v, v["deviceName"].as_str()));
    }
    if !devices.is_empty() {
        out.insert("blockDevices".into(), devices.into());
    }
    Value::Object(out)
}

/// Labels and annotations MAPI → CAPI, and the CAPI-specific ones.
fn meta_to_capi(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    spec_meta: Option<&mapi::ObjectMeta>,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut out_labels: BTreeMap<String, String> = labels
        .iter()
        .filter(|(k, _)| ![INSTANCE_TYPE_LABEL, REGION_LABEL, ZONE_LABEL].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for key in [ROLE_LABEL, TYPE_LABEL] {
        if let Some(value) = labels.get(key).filter(|v| !v.is_empty()) {
            out_labels.insert(format!("node-role.kubernetes.io/{value}"), String::new());
        }
    }
    let mut out_annotations: BTreeMap<String, String> = annotations
        .iter()
        .filter(|(k, _)| k.as_str() != INSTANCE_STATE_ANNOTATION)
        .map(|(k, v)| {
            (
                DELETE_ANNOTATIONS
                    .iter()
                    .find(|(m, _)| m == k)
                    .map_or(k.clone(), |(_, c)| (*c).to_owned()),
                v.clone(),
            )
        })
        .collect();
    if let Some(meta) = spec_meta {
        out_labels.extend(meta.labels.clone().unwrap_or_default());
        out_annotations.extend(meta.annotations.clone().unwrap_or_default());
    }
    (out_labels, out_annotations)
}

/// Labels and annotations CAPI → MAPI: nothing of `cluster.x-k8s.io/`, the delete mark mapped.
fn meta_to_mapi(
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let keep = |k: &str| !k.contains("cluster.x-k8s.io/") && !k.starts_with("node-role.kubernetes.io/");
    let out_labels = labels
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let out_annotations = annotations
        .iter()
        .filter_map(|(k, v)| match DELETE_ANNOTATIONS.iter().find(|(_, c)| c == k) {
            Some((m, _)) => Some(((*m).to_owned(), v.clone())),
            None => keep(k).then(|| (k.clone(), v.clone())),
        })
        .collect();
    (out_labels, out_annotations)
}

fn provider_spec_value(spec: &mapi::MachineSpec) -> Value {
    spec.provider_spec
        .as_ref()
        .and_then(|p| p.value.as_ref())
        .map(|v| serde_json::to_value(v).unwrap_or_default())
        .unwrap_or_default()
}

/// The MAPI Machine spec parts of a CAPI one (lifecycle hooks, providerID).
fn machine_spec_to_capi(
    name: &str,
    spec: &mapi::MachineSpec,
    provider: &Value,
    cluster: &Cluster,
    infra_kind: &str,
    path: &str,
    errors: &mut Errors,
) -> (capi::MachineSpec, BTreeMap<String, String>) {
    if spec.taints.as_ref().is_some_and(|t| !t.is_empty()) {
        errors.add(&format!("{path}.taints"), "unsupported");
    }
    if let Some(meta) = &spec.metadata
        && (meta.name.is_some() || meta.namespace.is_some() || meta.generate_name.is_some())
    {
        errors.add(
            &format!("{path}.metadata"),
            "unsupported: name, namespace and generateName",
        );
    }
    let mut hooks = BTreeMap::new();
    if let Some(lifecycle) = &spec.lifecycle_hooks {
        for (prefix, list) in [
            (PRE_DRAIN, &lifecycle.pre_drain),
            (PRE_TERMINATE, &lifecycle.pre_terminate),
        ] {
            for hook in list.iter().flatten() {
                hooks.insert(format!("{prefix}{}", hook.name), hook.owner.clone());
            }
        }
    }
    let capi_spec = capi::MachineSpec {
        cluster_name: cluster.infrastructure_name.clone(),
        bootstrap: capi::Bootstrap {
            data_secret_name: provider["userDataSecret"]["name"].as_str().map(str::to_owned),
            ..Default::default()
        },
        infrastructure_ref: ContractVersionedObjectReference {
            api_group: INFRA_GROUP.into(),
            kind: infra_kind.into(),
            name: name.into(),
        },
        provider_id: spec.provider_id.clone(),
        failure_domain: provider["placement"]["availabilityZone"]
            .as_str()
            .map(str::to_owned),
        deletion: Some(capi::MachineDeletionSpec {
            node_deletion_timeout_seconds: Some(NODE_DELETION_TIMEOUT),
            ..Default::default()
        }),
        ..Default::default()
    };
    (capi_spec, hooks)
}

/// The CAPI Machine spec's parts back in MAPI's (errors for what MAPI cannot hold).
fn machine_spec_to_mapi(
    spec: &capi::MachineSpec,
    annotations: &BTreeMap<String, String>,
    provider: Value,
    path: &str,
    errors: &mut Errors,
) -> mapi::MachineSpec {
    if spec.version.is_some() {
        errors.add(&format!("{path}.version"), "unsupported");
    }
    if let Some(deletion) = &spec.deletion {
        if deletion.node_drain_timeout_seconds.is_some() {
            errors.add(&format!("{path}.deletion.nodeDrainTimeoutSeconds"), "unsupported");
        }
        if deletion.node_volume_detach_timeout_seconds.is_some() {
            errors.add(
                &format!("{path}.deletion.nodeVolumeDetachTimeoutSeconds"),
                "unsupported",
            );
        }
        if deletion
            .node_deletion_timeout_seconds
            .is_some_and(|t| t != NODE_DELETION_TIMEOUT)
        {
            errors.add(
                &format!("{path}.deletion.nodeDeletionTimeoutSeconds"),
                format!("unsupported: only {NODE_DELETION_TIMEOUT}"),
            );
        }
    }
    let hooks = |prefix: &str| -> Option<Vec<mapi::LifecycleHook>> {
        let list: Vec<_> = annotations
            .iter()
            .filter_map(|(k, v)| {
                Some(mapi::LifecycleHook {
                    name: k.strip_prefix(prefix)?.to_owned(),
                    owner: v.clone(),
                })
            })
            .collect();
        (!list.is_empty()).then_some(list)
    };
    let (pre_drain, pre_terminate) = (hooks(PRE_DRAIN), hooks(PRE_TERMINATE));
    mapi::MachineSpec {
        lifecycle_hooks: (pre_drain.is_some() || pre_terminate.is_some()).then_some(mapi::LifecycleHooks {
            pre_drain,
            pre_terminate,
        }),
        provider_id: spec.provider_id.clone(),
        provider_spec: Some(mapi::ProviderSpec {
            value: serde_json::from_value::<RawObject>(provider).ok(),
        }),
        ..Default::default()
    }
}

impl Platform for Aws {
    fn name(&self) -> &'static str {
        "AWS"
    }

    fn machine_to_capi(&self, machine: &mapi::Machine) -> Result<Converted<CapiMachine>, ConversionError> {
        let mut errors = Errors::default();
        let name = machine.name_any();
        let provider = provider_spec_value(&machine.spec);
        let mut aws = provider_spec_to_aws(
            &provider,
            self.cluster.region.as_deref(),
            "spec.providerSpec.value",
            &mut errors,
        );
        let (spec, hooks) = machine_spec_to_capi(
            &name,
            &machine.spec,
            &provider,
            &self.cluster,
            "AWSMachine",
            "spec",
            &mut errors,
        );
        if let Some(id) = &machine.spec.provider_id {
            aws["providerID"] = id.clone().into();
            if let Some(instance) = id.rsplit('/').next().filter(|i| !i.is_empty()) {
                aws["instanceID"] = instance.into();
            }
        }
        let (mut labels, mut annotations) = meta_to_capi(
            machine.labels(),
            machine.annotations(),
            machine.spec.metadata.as_ref(),
        );
        labels.insert(
            CLUSTER_NAME_LABEL.into(),
            self.cluster.infrastructure_name.clone(),
        );
        if let Some(owner) = machine.owner_references().iter().find(|o| o.kind == "MachineSet") {
            labels.insert(SET_NAME_LABEL.into(), owner.name.clone());
        }
        annotations.extend(hooks);
        let mut capi_machine = capi::Machine::new(&name, spec);
        capi_machine.metadata.labels = Some(labels.clone());
        capi_machine.metadata.annotations = (!annotations.is_empty()).then_some(annotations.clone());
        capi_machine.metadata.finalizers = Some(vec![CAPI_MACHINE_FINALIZER.into()]);
        capi_machine.status = machine
            .status
            .as_ref()
            .map(|s| machine_status_to_capi(s, machine.metadata.generation));

        let mut infra = infra_object("AWSMachine", &name, json!({ "spec": aws }));
        infra.metadata.labels = Some(labels);
        infra.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
        if let Some(status) = &machine.status {
            let state = status
                .provider_status
                .as_ref()
                .and_then(|p| serde_json::to_value(p).ok())
                .and_then(|p| p["instanceState"].as_str().map(str::to_owned));
            let mut aws_status = json!({ "ready": status.phase.as_deref() == Some("Running") });
            if let Some(state) = state {
                aws_status["instanceState"] = state.into();
            }
            infra.data["status"] = aws_status;
        }
        errors.finish(Converted {
            value: CapiMachine {
                machine: capi_machine,
                infra,
            },
            warnings: Vec::new(),
        })
    }

    fn machine_to_mapi(
        &self,
        machine: &capi::Machine,
        infra: &DynamicObject,
    ) -> Result<Converted<mapi::Machine>, ConversionError> {
        let mut errors = Errors::default();
        let provider = aws_to_provider_spec(
            &infra.data["spec"],
            machine.spec.bootstrap.data_secret_name.as_deref(),
            machine.spec.failure_domain.as_deref(),
            self.cluster.region.as_deref(),
            "AWSMachine.spec",
            &mut errors,
        );
        let spec = machine_spec_to_mapi(
            &machine.spec,
            machine.annotations(),
            provider.clone(),
            "spec",
            &mut errors,
        );
        let (mut labels, annotations) = meta_to_mapi(machine.labels(), machine.annotations());
        if let Some(t) = provider["instanceType"].as_str() {
            labels.insert(INSTANCE_TYPE_LABEL.into(), t.into());
        }
        if let Some(region) = &self.cluster.region {
            labels.insert(REGION_LABEL.into(), region.clone());
        }
        if let Some(zone) = &machine.spec.failure_domain {
            labels.insert(ZONE_LABEL.into(), zone.clone());
        }
        let mut annotations: BTreeMap<String, String> = annotations
            .into_iter()
            .filter(|(k, _)| !k.starts_with(PRE_DRAIN) && !k.starts_with(PRE_TERMINATE))
            .collect();
        let instance_state = infra.data["status"]["instanceState"].as_str().map(str::to_owned);
        if let Some(state) = &instance_state {
            annotations.insert(INSTANCE_STATE_ANNOTATION.into(), state.clone());
        }
        let mut out = mapi::Machine::new(&machine.name_any(), spec);
        out.metadata.labels = Some(labels);
        out.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
        out.status = machine
            .status
            .as_ref()
            .map(|s| machine_status_to_mapi(s, &infra.data, instance_state));
        errors.finish(Converted {
            value: out,
            warnings: Vec::new(),
        })
    }

    fn machine_set_to_capi(
        &self,
        set: &mapi::MachineSet,
    ) -> Result<Converted<CapiMachineSet>, ConversionError> {
        let mut errors = Errors::default();
        let name = set.name_any();
        let template = set.spec.template.clone().unwrap_or_default();
        let machine_spec = template.spec.clone().unwrap_or_default();
        let provider = provider_spec_value(&machine_spec);
        let aws = provider_spec_to_aws(
            &provider,
            self.cluster.region.as_deref(),
            "spec.template.spec.providerSpec.value",
            &mut errors,
        );
        let template_name = format!(
            "{name}-{:08x}",
            fnv32a(&serde_json::to_vec(&aws).unwrap_or_default())
        );
        let (spec, hooks) = machine_spec_to_capi(
            &template_name,
            &machine_spec,
            &provider,
            &self.cluster,
            "AWSMachineTemplate",
            "spec.template.spec",
            &mut errors,
        );
        let template_meta = template.metadata.clone().unwrap_or_default();
        let (mut machine_labels, mut machine_annotations) = meta_to_capi(
            &template_meta.labels.clone().unwrap_or_default(),
            &template_meta.annotations.clone().unwrap_or_default(),
            machine_spec.metadata.as_ref(),
        );
        machine_labels.insert(
            CLUSTER_NAME_LABEL.into(),
            self.cluster.infrastructure_name.clone(),
        );
        machine_annotations.extend(hooks);
        let (mut labels, annotations) = meta_to_capi(set.labels(), set.annotations(), None);
        labels.insert(
            CLUSTER_NAME_LABEL.into(),
            self.cluster.infrastructure_name.clone(),
        );
        let mut selector = set.spec.selector.clone();
        selector.match_labels.get_or_insert_with(BTreeMap::new).insert(
            CLUSTER_NAME_LABEL.into(),
            self.cluster.infrastructure_name.clone(),
        );
        let mut capi_set = capi::MachineSet::new(
            &name,
            capi::MachineSetSpec {
                cluster_name: self.cluster.infrastructure_name.clone(),
                replicas: set.spec.replicas,
                selector,
                deletion: set
                    .spec
                    .delete_policy
                    .clone()
                    .map(|order| capi::MachineSetDeletionSpec { order: Some(order) }),
                template: capi::MachineTemplateSpec {
                    metadata: Some(capi::TemplateMeta {
                        labels: Some(machine_labels),
                        annotations: (!machine_annotations.is_empty()).then_some(machine_annotations),
                    }),
                    spec: capi::MachineSpec {
                        min_ready_seconds: set.spec.min_ready_seconds,
                        ..spec
                    },
                },
                ..Default::default()
            },
        );
        capi_set.metadata.labels = Some(labels);
        capi_set.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
        capi_set.status = set.status.as_ref().map(|s| capi::MachineSetStatus {
            replicas: Some(s.replicas),
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            up_to_date_replicas: Some(0),
            selector: s.label_selector.clone(),
            observed_generation: s.observed_generation,
            conditions: None,
        });
        let template = infra_object(
            "AWSMachineTemplate",
            &template_name,
            json!({ "spec": { "template": { "spec": aws } } }),
        );
        errors.finish(Converted {
            value: CapiMachineSet {
                set: capi_set,
                template,
            },
            warnings: Vec::new(),
        })
    }

    fn machine_set_to_mapi(
        &self,
        set: &capi::MachineSet,
        template: &DynamicObject,
    ) -> Result<Converted<mapi::MachineSet>, ConversionError> {
        let mut errors = Errors::default();
        let machine = &set.spec.template.spec;
        let provider = aws_to_provider_spec(
            &template.data["spec"]["template"]["spec"],
            machine.bootstrap.data_secret_name.as_deref(),
            machine.failure_domain.as_deref(),
            self.cluster.region.as_deref(),
            "AWSMachineTemplate.spec.template.spec",
            &mut errors,
        );
        let meta = set.spec.template.metadata.clone().unwrap_or_default();
        let template_annotations = meta.annotations.clone().unwrap_or_default();
        let machine_spec = machine_spec_to_mapi(
            machine,
            &template_annotations,
            provider,
            "spec.template.spec",
            &mut errors,
        );
        let (template_labels, template_annotations) =
            meta_to_mapi(&meta.labels.unwrap_or_default(), &template_annotations);
        let template_annotations: BTreeMap<String, String> = template_annotations
            .into_iter()
            .filter(|(k, _)| !k.starts_with(PRE_DRAIN) && !k.starts_with(PRE_TERMINATE))
            .collect();
        let (labels, annotations) = meta_to_mapi(set.labels(), set.annotations());
        let mut out = mapi::MachineSet::new(
            &set.name_any(),
            mapi::MachineSetSpec {
                replicas: set.spec.replicas,
                min_ready_seconds: machine.min_ready_seconds,
                delete_policy: set.spec.deletion.as_ref().and_then(|d| d.order.clone()),
                selector: set.spec.selector.clone(),
                template: Some(mapi::MachineTemplateSpec {
                    metadata: Some(mapi::ObjectMeta {
                        labels: Some(template_labels),
                        annotations: (!template_annotations.is_empty()).then_some(template_annotations),
                        ..Default::default()
                    }),
                    spec: Some(mapi::MachineSpec {
                        authoritative_api: Some(AuthoritativeApi::ClusterApi),
                        ..machine_spec
                    }),
                }),
                authoritative_api: None,
            },
        );
        out.metadata.labels = Some(labels);
        out.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
        out.status = set.status.as_ref().map(|s| mapi::MachineSetStatus {
            replicas: s.replicas.unwrap_or_default(),
            fully_labeled_replicas: s.replicas,
            ready_replicas: s.ready_replicas,
            available_replicas: s.available_replicas,
            observed_generation: s.observed_generation,
            label_selector: s.selector.clone(),
            ..Default::default()
        });
        errors.finish(Converted {
            value: out,
            warnings: Vec::new(),
        })
    }
}

/// MAPI Machine status → CAPI (v1beta2 conditions from the phase).
fn machine_status_to_capi(status: &mapi::MachineStatus, generation: Option<i64>) -> capi::MachineStatus {
    let phase = status.phase.clone();
    let running = phase.as_deref() == Some("Running");
    let provisioned = matches!(phase.as_deref(), Some("Provisioned" | "Running"));
    let time = status.last_updated.clone().unwrap_or_else(|| {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
    });
    let condition = |type_: &str, ok: bool| k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: if ok {
            type_.to_owned()
        } else {
            format!("Not{type_}")
        },
        message: String::new(),
        last_transition_time: time.clone(),
        observed_generation: generation,
    };
    let deleting = phase.as_deref() == Some("Deleting");
    capi::MachineStatus {
        node_ref: status
            .node_ref
            .as_ref()
            .and_then(|n| n.name.clone())
            .map(|name| capi::MachineNodeReference { name }),
        phase: phase.clone().map(|p| p.to_lowercase()).map(|p| capitalize(&p)),
        conditions: Some(vec![
            condition("Available", running),
            condition("Ready", running),
            condition("BootstrapConfigReady", true),
            condition("InfrastructureReady", provisioned),
            condition("NodeReady", status.node_ref.is_some()),
            condition("Deleting", deleting),
        ]),
        addresses: status.addresses.as_ref().map(|a| {
            a.iter()
                .map(|a| capi::MachineAddress {
                    type_: a.type_.clone(),
                    address: a.address.clone(),
                })
                .collect()
        }),
        observed_generation: generation,
        initialization: Some(capi::MachineInitializationStatus {
            infrastructure_provisioned: Some(provisioned),
            bootstrap_data_secret_created: Some(true),
        }),
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// CAPI Machine status → MAPI (`Pending`/`Unknown` → unset, `Deleted` → `Deleting`).
fn machine_status_to_mapi(
    status: &capi::MachineStatus,
    infra: &Value,
    instance_state: Option<String>,
) -> mapi::MachineStatus {
    let phase = match status.phase.as_deref() {
        None | Some("Pending" | "Unknown") => None,
        Some("Deleted") => Some("Deleting".to_owned()),
        Some(other) => Some(other.to_owned()),
    };
    let mut provider_status =
        json!({ "apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderStatus" });
    if let Some(state) = instance_state {
        provider_status["instanceState"] = state.into();
    }
    if let Some(id) = infra["spec"]["instanceID"].as_str() {
        provider_status["instanceId"] = id.into();
    }
    if infra["status"]["ready"].as_bool() == Some(true) {
        provider_status["conditions"] = json!([{ "type": "MachineCreation", "status": "True", "reason": "MachineCreationSucceeded", "message": "Machine successfully created" }]);
    }
    mapi::MachineStatus {
        node_ref: status
            .node_ref
            .as_ref()
            .map(|n| k8s_openapi::api::core::v1::ObjectReference {
                kind: Some("Node".into()),
                name: Some(n.name.clone()),
                ..Default::default()
            }),
        error_reason: infra["status"]["failureReason"].as_str().map(str::to_owned),
        error_message: infra["status"]["failureMessage"].as_str().map(str::to_owned),
        provider_status: serde_json::from_value(provider_status).ok(),
        addresses: status.addresses.as_ref().map(|a| {
            a.iter()
                .map(|a| k8s_openapi::api::core::v1::NodeAddress {
                    type_: a.type_.clone(),
                    address: a.address.clone(),
                })
                .collect()
        }),
        phase,
        ..Default::default()
    }
}

/// FNV-1a, 32 bits: the template name's spec hash (as upstream names templates).
fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        Cluster {
            infrastructure_name: "demo".into(),
            platform: "AWS".into(),
            region: Some("eu-west-1".into()),
        }
    }

    #[test]
    fn fnv32a_matches_the_reference_vectors() {
        assert_eq!(fnv32a(b""), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c_292c);
        assert_eq!(fnv32a(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn every_unsupported_field_is_an_error_with_its_path() {
        let mut errors = Errors::default();
        let spec = json!({"instanceType": "m6i.large", "ami": {"arn": "arn:x"}, "credentialsSecret": {"name": "mine"},
                          "placement": {"region": "us-east-1"}, "deviceIndex": 1, "loadBalancers": [{"name": "lb"}],
                          "networkInterfaceType": "Weird", "blockDevices": [{"deviceName": "/dev/sdb", "ebs": {"deleteOnTermination": false}}]});
        provider_spec_to_aws(&spec, Some("eu-west-1"), "p", &mut errors);
        let paths: Vec<&str> = errors
            .0
            .iter()
            .map(|e| e.split(':').next().unwrap_or_default())
            .collect();
        assert_eq!(
            paths,
            [
                "p.ami.arn",
                "p.credentialsSecret",
                "p.placement.region",
                "p.deviceIndex",
                "p.loadBalancers",
                "p.networkInterfaceType",
                "p.blockDevices[0].ebs.deleteOnTermination"
            ]
        );
    }

    #[test]
    fn a_machine_round_trips_through_capi() -> Result<(), Box<dyn std::error::Error>> {
        let machine: mapi::Machine = serde_json::from_value(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "w-1", "labels": {ROLE_LABEL: "worker", ZONE_LABEL: "eu-west-1a"},
                         "annotations": {"machine.openshift.io/delete-machine": "yes"}},
            "spec": {"providerID": "aws:///eu-west-1a/i-0abc",
                     "lifecycleHooks": {"preDrain": [{"name": "drain", "owner": "me"}]},
                     "providerSpec": {"value": {"instanceType": "m6i.large", "ami": {"id": "ami-1"},
                                                "userDataSecret": {"name": "worker-user-data"},
                                                "placement": {"region": "eu-west-1", "availabilityZone": "eu-west-1a"},
                                                "blockDevices": [{"ebs": {"volumeSize": 120, "volumeType": "gp3"}}]}}}
        }))?;
        let aws = Aws::new(cluster());
        let capi = aws.machine_to_capi(&machine)?.value;
        assert_eq!(capi.machine.spec.cluster_name, "demo");
        assert_eq!(capi.machine.spec.failure_domain.as_deref(), Some("eu-west-1a"));
        assert_eq!(
            capi.machine.spec.bootstrap.data_secret_name.as_deref(),
            Some("worker-user-data")
        );
        assert_eq!(
            capi.machine
                .labels()
                .get("node-role.kubernetes.io/worker")
                .map(String::as_str),
            Some("")
        );
        assert!(!capi.machine.labels().contains_key(ZONE_LABEL));
        assert_eq!(
            capi.machine
                .annotations()
                .get("cluster.x-k8s.io/delete-machine")
                .map(String::as_str),
            Some("yes")
        );
        assert_eq!(
            capi.machine
                .annotations()
                .get(&format!("{PRE_DRAIN}drain"))
                .map(String::as_str),
            Some("me")
        );
        assert_eq!(capi.infra.data["spec"]["instanceID"], "i-0abc");
        assert_eq!(
            capi.infra.data["spec"]["rootVolume"],
            json!({"size": 120, "type": "gp3"})
        );
        let back = aws.machine_to_mapi(&capi.machine, &capi.infra)?.value;
        let provider = provider_spec_value(&back.spec);
        assert_eq!(provider["instanceType"], "m6i.large");
        assert_eq!(provider["placement"]["availabilityZone"], "eu-west-1a");
        assert_eq!(
            back.annotations()
                .get("machine.openshift.io/delete-machine")
                .map(String::as_str),
            Some("yes")
        );
        assert_eq!(
            back.spec
                .lifecycle_hooks
                .as_ref()
                .and_then(|h| h.pre_drain.as_ref())
                .map(Vec::len),
            Some(1)
        );
        assert!(back.labels().keys().all(|k| !k.contains("cluster.x-k8s.io/")));
        Ok(())
    }
}
