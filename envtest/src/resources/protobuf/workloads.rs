//! The JSON form of `apps/v1` Deployments and the pod template they carry, field by field
//! from the Go types' `json` and `protobuf` tags (k8s.io/api; matched by field number, so
//! no field of the messages is left out), with kube's `omitempty` and pointer shapes (see
//! [`mod@super::json`]). `kubectl create deployment` sends its Deployment as protobuf.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource;
use k8s_pb::apimachinery::pkg::util::intstr;
use serde_json::Value;

use super::json::{Json, Repeated};
use crate::message;

/// `resource.Quantity`: its canonical string.
impl Json for resource::Quantity {
    fn to_json(&self) -> Value {
        match &self.string {
            Some(text) => Value::String(text.clone()),
            None => Value::Null,
        }
    }
    fn is_empty(&self) -> bool {
        self.string.as_deref().is_none_or(str::is_empty)
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        let string = match value {
            Value::String(text) => text.clone(),
            Value::Number(number) => number.to_string(),
            _ => return Err("expected a quantity (string or number)".to_owned()),
        };
        Ok(Self { string: Some(string) })
    }
}

impl Repeated for resource::Quantity {}

/// `intstr.IntOrString`: a JSON number (`type` 0) or string (`type` 1).
impl Json for intstr::IntOrString {
    fn to_json(&self) -> Value {
        match self.r#type {
            Some(1) => Value::String(self.str_val.clone().unwrap_or_default()),
            _ => Value::from(self.int_val.unwrap_or_default()),
        }
    }
    fn is_empty(&self) -> bool {
        false
    }
    fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(text) => Ok(Self {
                r#type: Some(1),
                int_val: Some(0),
                str_val: Some(text.clone()),
            }),
            Value::Number(number) => {
                let int = number
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| "expected a 32-bit integer or a string".to_owned())?;
                Ok(Self {
                    r#type: Some(0),
                    int_val: Some(int),
                    str_val: Some(String::new()),
                })
            }
            _ => Err("expected an integer or a string".to_owned()),
        }
    }
}

message!(core::HostPathVolumeSource {
    path: Never => "path",
    r#type: Unset => "type",
});

message!(core::EmptyDirVolumeSource {
    medium => "medium",
    size_limit: Unset => "sizeLimit",
});

message!(core::GcePersistentDiskVolumeSource {
    pd_name: Never => "pdName",
    fs_type => "fsType",
    partition => "partition",
    read_only => "readOnly",
});

message!(core::AwsElasticBlockStoreVolumeSource {
    volume_id: Never => "volumeID",
    fs_type => "fsType",
    partition => "partition",
    read_only => "readOnly",
});

message!(core::GitRepoVolumeSource {
    repository: Never => "repository",
    revision => "revision",
    directory => "directory",
});

message!(core::KeyToPath {
    key: Never => "key",
    path: Never => "path",
    mode: Unset => "mode",
});

message!(core::SecretVolumeSource {
    secret_name => "secretName",
    items => "items",
    default_mode: Unset => "defaultMode",
    optional: Unset => "optional",
});

message!(core::NfsVolumeSource {
    server: Never => "server",
    path: Never => "path",
    read_only => "readOnly",
});

message!(core::IscsiVolumeSource {
    target_portal: Never => "targetPortal",
    iqn: Never => "iqn",
    lun: Never => "lun",
    iscsi_interface => "iscsiInterface",
    fs_type => "fsType",
    read_only => "readOnly",
    portals => "portals",
    chap_auth_discovery => "chapAuthDiscovery",
    chap_auth_session => "chapAuthSession",
    secret_ref: Unset => "secretRef",
    initiator_name: Unset => "initiatorName",
});

message!(core::GlusterfsVolumeSource {
    endpoints: Never => "endpoints",
    path: Never => "path",
    read_only => "readOnly",
});

message!(core::PersistentVolumeClaimVolumeSource {
    claim_name: Never => "claimName",
    read_only => "readOnly",
});

message!(core::RbdVolumeSource {
    monitors: Never => "monitors",
    image: Never => "image",
    fs_type => "fsType",
    pool => "pool",
    user => "user",
    keyring => "keyring",
    secret_ref: Unset => "secretRef",
    read_only => "readOnly",
});

message!(core::FlexVolumeSource {
    driver: Never => "driver",
    fs_type => "fsType",
    secret_ref: Unset => "secretRef",
    read_only => "readOnly",
    options => "options",
});

message!(core::CinderVolumeSource {
    volume_id: Never => "volumeID",
    fs_type => "fsType",
    read_only => "readOnly",
    secret_ref: Unset => "secretRef",
});

message!(core::CephFsVolumeSource {
    monitors: Never => "monitors",
    path => "path",
    user => "user",
    secret_file => "secretFile",
    secret_ref: Unset => "secretRef",
    read_only => "readOnly",
});

message!(core::FlockerVolumeSource {
    dataset_name => "datasetName",
    dataset_uuid => "datasetUUID",
});

message!(core::ObjectFieldSelector {
    api_version => "apiVersion",
    field_path: Never => "fieldPath",
});

message!(core::ResourceFieldSelector {
    container_name => "containerName",
    resource: Never => "resource",
    divisor: Never => "divisor",
});

message!(core::DownwardAPIVolumeFile {
    path: Never => "path",
    field_ref: Unset => "fieldRef",
    resource_field_ref: Unset => "resourceFieldRef",
    mode: Unset => "mode",
});

message!(core::DownwardAPIVolumeSource {
    items => "items",
    default_mode: Unset => "defaultMode",
});

message!(core::FcVolumeSource {
    target_ww_ns => "targetWWNs",
    lun: Unset => "lun",
    fs_type => "fsType",
    read_only => "readOnly",
    wwids => "wwids",
});

message!(core::AzureFileVolumeSource {
    secret_name: Never => "secretName",
    share_name: Never => "shareName",
    read_only => "readOnly",
});

message!(core::ConfigMapVolumeSource {
    items => "items",
    default_mode: Unset => "defaultMode",
    optional: Unset => "optional",
}; inline: [local_object_reference]);

message!(core::VsphereVirtualDiskVolumeSource {
    volume_path: Never => "volumePath",
    fs_type => "fsType",
    storage_policy_name => "storagePolicyName",
    storage_policy_id => "storagePolicyID",
});

message!(core::QuobyteVolumeSource {
    registry: Never => "registry",
    volume: Never => "volume",
    read_only => "readOnly",
    user => "user",
    group => "group",
    tenant => "tenant",
});

message!(core::AzureDiskVolumeSource {
    disk_name: Never => "diskName",
    disk_uri: Never => "diskURI",
    caching_mode: Unset => "cachingMode",
    fs_type: Unset => "fsType",
    read_only: Unset => "readOnly",
    kind: Unset => "kind",
});

message!(core::PhotonPersistentDiskVolumeSource {
    pd_id: Never => "pdID",
    fs_type => "fsType",
});

message!(core::SecretProjection {
    items => "items",
    optional: Unset => "optional",
}; inline: [local_object_reference]);

message!(core::DownwardAPIProjection {
    items => "items",
});

message!(core::ConfigMapProjection {
    items => "items",
    optional: Unset => "optional",
}; inline: [local_object_reference]);

message!(core::ServiceAccountTokenProjection {
    audience => "audience",
    expiration_seconds: Unset => "expirationSeconds",
    path: Never => "path",
});

message!(core::ClusterTrustBundleProjection {
    name: Unset => "name",
    signer_name: Unset => "signerName",
    label_selector: Unset => "labelSelector",
    optional: Unset => "optional",
    path: Never => "path",
});

message!(core::PodCertificateProjection {
    signer_name => "signerName",
    key_type => "keyType",
    max_expiration_seconds: Unset => "maxExpirationSeconds",
    credential_bundle_path => "credentialBundlePath",
    key_path => "keyPath",
    certificate_chain_path => "certificateChainPath",
    user_annotations => "userAnnotations",
});

message!(core::VolumeProjection {
    secret: Unset => "secret",
    downward_api: Unset => "downwardAPI",
    config_map: Unset => "configMap",
    service_account_token: Unset => "serviceAccountToken",
    cluster_trust_bundle: Unset => "clusterTrustBundle",
    pod_certificate: Unset => "podCertificate",
});

message!(core::ProjectedVolumeSource {
    sources: Never => "sources",
    default_mode: Unset => "defaultMode",
});

message!(core::PortworxVolumeSource {
    volume_id: Never => "volumeID",
    fs_type => "fsType",
    read_only => "readOnly",
});

message!(core::ScaleIoVolumeSource {
    gateway: Never => "gateway",
    system: Never => "system",
    secret_ref: Unset => "secretRef",
    ssl_enabled => "sslEnabled",
    protection_domain => "protectionDomain",
    storage_pool => "storagePool",
    storage_mode => "storageMode",
    volume_name => "volumeName",
    fs_type => "fsType",
    read_only => "readOnly",
});

message!(core::StorageOsVolumeSource {
    volume_name => "volumeName",
    volume_namespace => "volumeNamespace",
    fs_type => "fsType",
    read_only => "readOnly",
    secret_ref: Unset => "secretRef",
});

message!(core::CSIVolumeSource {
    driver: Never => "driver",
    read_only: Unset => "readOnly",
    fs_type: Unset => "fsType",
    volume_attributes => "volumeAttributes",
    node_publish_secret_ref: Unset => "nodePublishSecretRef",
});

message!(core::VolumeResourceRequirements {
    limits => "limits",
    requests => "requests",
});

message!(core::TypedLocalObjectReference {
    api_group: Unset => "apiGroup",
    kind: Never => "kind",
    name: Never => "name",
});

message!(core::TypedObjectReference {
    api_group: Unset => "apiGroup",
    kind: Never => "kind",
    name: Never => "name",
    namespace: Unset => "namespace",
});

message!(core::PersistentVolumeClaimSpec {
    access_modes => "accessModes",
    selector: Unset => "selector",
    resources: Never => "resources",
    volume_name => "volumeName",
    storage_class_name: Unset => "storageClassName",
    volume_mode: Unset => "volumeMode",
    data_source: Unset => "dataSource",
    data_source_ref: Unset => "dataSourceRef",
    volume_attributes_class_name: Unset => "volumeAttributesClassName",
});

message!(core::PersistentVolumeClaimTemplate {
    metadata: Never => "metadata",
    spec: Never => "spec",
});

message!(core::EphemeralVolumeSource {
    volume_claim_template: Unset => "volumeClaimTemplate",
});

message!(core::ImageVolumeSource {
    reference => "reference",
    pull_policy => "pullPolicy",
});

message!(core::VolumeSource {
    host_path: Unset => "hostPath",
    empty_dir: Unset => "emptyDir",
    gce_persistent_disk: Unset => "gcePersistentDisk",
    aws_elastic_block_store: Unset => "awsElasticBlockStore",
    git_repo: Unset => "gitRepo",
    secret: Unset => "secret",
    nfs: Unset => "nfs",
    iscsi: Unset => "iscsi",
    glusterfs: Unset => "glusterfs",
    persistent_volume_claim: Unset => "persistentVolumeClaim",
    rbd: Unset => "rbd",
    flex_volume: Unset => "flexVolume",
    cinder: Unset => "cinder",
    cephfs: Unset => "cephfs",
    flocker: Unset => "flocker",
    downward_api: Unset => "downwardAPI",
    fc: Unset => "fc",
    azure_file: Unset => "azureFile",
    config_map: Unset => "configMap",
    vsphere_volume: Unset => "vsphereVolume",
    quobyte: Unset => "quobyte",
    azure_disk: Unset => "azureDisk",
    photon_persistent_disk: Unset => "photonPersistentDisk",
    projected: Unset => "projected",
    portworx_volume: Unset => "portworxVolume",
    scale_io: Unset => "scaleIO",
    storageos: Unset => "storageos",
    csi: Unset => "csi",
    ephemeral: Unset => "ephemeral",
    image: Unset => "image",
});

message!(core::Volume {
    name: Never => "name",
}; inline: [volume_source]);

message!(core::ContainerPort {
    name => "name",
    host_port => "hostPort",
    container_port: Never => "containerPort",
    protocol => "protocol",
    host_ip => "hostIP",
});

message!(core::ConfigMapEnvSource {
    optional: Unset => "optional",
}; inline: [local_object_reference]);

message!(core::SecretEnvSource {
    optional: Unset => "optional",
}; inline: [local_object_reference]);

message!(core::EnvFromSource {
    prefix => "prefix",
    config_map_ref: Unset => "configMapRef",
    secret_ref: Unset => "secretRef",
});

message!(core::ConfigMapKeySelector {
    key: Never => "key",
    optional: Unset => "optional",
}; inline: [local_object_reference]);

message!(core::SecretKeySelector {
    key: Never => "key",
    optional: Unset => "optional",
}; inline: [local_object_reference]);

message!(core::FileKeySelector {
    volume_name: Never => "volumeName",
    path: Never => "path",
    key: Never => "key",
    optional: Unset => "optional",
});

message!(core::EnvVarSource {
    field_ref: Unset => "fieldRef",
    resource_field_ref: Unset => "resourceFieldRef",
    config_map_key_ref: Unset => "configMapKeyRef",
    secret_key_ref: Unset => "secretKeyRef",
    file_key_ref: Unset => "fileKeyRef",
});

message!(core::EnvVar {
    name: Never => "name",
    value => "value",
    value_from: Unset => "valueFrom",
});

message!(core::ResourceClaim {
    name: Never => "name",
    request => "request",
});

message!(core::ResourceRequirements {
    limits => "limits",
    requests => "requests",
    claims => "claims",
});

message!(core::ContainerResizePolicy {
    resource_name: Never => "resourceName",
    restart_policy: Never => "restartPolicy",
});

message!(core::ContainerRestartRuleOnExitCodes {
    operator => "operator",
    values => "values",
});

message!(core::ContainerRestartRule {
    action => "action",
    exit_codes: Unset => "exitCodes",
});

message!(core::VolumeMount {
    name: Never => "name",
    read_only => "readOnly",
    recursive_read_only: Unset => "recursiveReadOnly",
    mount_path: Never => "mountPath",
    sub_path => "subPath",
    mount_propagation: Unset => "mountPropagation",
    sub_path_expr => "subPathExpr",
});

message!(core::VolumeDevice {
    name: Never => "name",
    device_path: Never => "devicePath",
});

message!(core::ExecAction {
    command => "command",
});

message!(core::HttpHeader {
    name: Never => "name",
    value: Never => "value",
});

message!(core::HttpGetAction {
    path => "path",
    port: Never => "port",
    host => "host",
    scheme => "scheme",
    http_headers => "httpHeaders",
});

message!(core::TcpSocketAction {
    port: Never => "port",
    host => "host",
});

message!(core::GrpcAction {
    port: Never => "port",
    service: Unset => "service",
});

message!(core::ProbeHandler {
    exec: Unset => "exec",
    http_get: Unset => "httpGet",
    tcp_socket: Unset => "tcpSocket",
    grpc: Unset => "grpc",
});

message!(core::Probe {
    initial_delay_seconds => "initialDelaySeconds",
    timeout_seconds => "timeoutSeconds",
    period_seconds => "periodSeconds",
    success_threshold => "successThreshold",
    failure_threshold => "failureThreshold",
    termination_grace_period_seconds: Unset => "terminationGracePeriodSeconds",
}; inline: [handler]);

message!(core::SleepAction {
    seconds: Never => "seconds",
});

message!(core::LifecycleHandler {
    exec: Unset => "exec",
    http_get: Unset => "httpGet",
    tcp_socket: Unset => "tcpSocket",
    sleep: Unset => "sleep",
});

message!(core::Lifecycle {
    post_start: Unset => "postStart",
    pre_stop: Unset => "preStop",
    stop_signal: Unset => "stopSignal",
});

message!(core::Capabilities {
    add => "add",
    drop => "drop",
});

message!(core::SeLinuxOptions {
    user => "user",
    role => "role",
    r#type => "type",
    level => "level",
});

message!(core::WindowsSecurityContextOptions {
    gmsa_credential_spec_name: Unset => "gmsaCredentialSpecName",
    gmsa_credential_spec: Unset => "gmsaCredentialSpec",
    run_as_user_name: Unset => "runAsUserName",
    host_process: Unset => "hostProcess",
});

message!(core::SeccompProfile {
    r#type: Never => "type",
    localhost_profile: Unset => "localhostProfile",
});

message!(core::AppArmorProfile {
    r#type: Never => "type",
    localhost_profile: Unset => "localhostProfile",
});

message!(core::SecurityContext {
    capabilities: Unset => "capabilities",
    privileged: Unset => "privileged",
    se_linux_options: Unset => "seLinuxOptions",
    windows_options: Unset => "windowsOptions",
    run_as_user: Unset => "runAsUser",
    run_as_group: Unset => "runAsGroup",
    run_as_non_root: Unset => "runAsNonRoot",
    read_only_root_filesystem: Unset => "readOnlyRootFilesystem",
    allow_privilege_escalation: Unset => "allowPrivilegeEscalation",
    proc_mount: Unset => "procMount",
    seccomp_profile: Unset => "seccompProfile",
    app_armor_profile: Unset => "appArmorProfile",
});

message!(core::Container {
    name: Never => "name",
    image => "image",
    command => "command",
    args => "args",
    working_dir => "workingDir",
    ports => "ports",
    env_from => "envFrom",
    env => "env",
    resources: Never => "resources",
    resize_policy => "resizePolicy",
    restart_policy: Unset => "restartPolicy",
    restart_policy_rules => "restartPolicyRules",
    volume_mounts => "volumeMounts",
    volume_devices => "volumeDevices",
    liveness_probe: Unset => "livenessProbe",
    readiness_probe: Unset => "readinessProbe",
    startup_probe: Unset => "startupProbe",
    lifecycle: Unset => "lifecycle",
    termination_message_path => "terminationMessagePath",
    termination_message_policy => "terminationMessagePolicy",
    image_pull_policy => "imagePullPolicy",
    security_context: Unset => "securityContext",
    stdin => "stdin",
    stdin_once => "stdinOnce",
    tty => "tty",
});

message!(core::EphemeralContainerCommon {
    name: Never => "name",
    image => "image",
    command => "command",
    args => "args",
    working_dir => "workingDir",
    ports => "ports",
    env_from => "envFrom",
    env => "env",
    resources: Never => "resources",
    resize_policy => "resizePolicy",
    restart_policy: Unset => "restartPolicy",
    restart_policy_rules => "restartPolicyRules",
    volume_mounts => "volumeMounts",
    volume_devices => "volumeDevices",
    liveness_probe: Unset => "livenessProbe",
    readiness_probe: Unset => "readinessProbe",
    startup_probe: Unset => "startupProbe",
    lifecycle: Unset => "lifecycle",
    termination_message_path => "terminationMessagePath",
    termination_message_policy => "terminationMessagePolicy",
    image_pull_policy => "imagePullPolicy",
    security_context: Unset => "securityContext",
    stdin => "stdin",
    stdin_once => "stdinOnce",
    tty => "tty",
});

message!(core::EphemeralContainer {
    target_container_name => "targetContainerName",
}; inline: [ephemeral_container_common]);

message!(core::Sysctl {
    name: Never => "name",
    value: Never => "value",
});

message!(core::PodSecurityContext {
    se_linux_options: Unset => "seLinuxOptions",
    windows_options: Unset => "windowsOptions",
    run_as_user: Unset => "runAsUser",
    run_as_group: Unset => "runAsGroup",
    run_as_non_root: Unset => "runAsNonRoot",
    supplemental_groups => "supplementalGroups",
    supplemental_groups_policy: Unset => "supplementalGroupsPolicy",
    fs_group: Unset => "fsGroup",
    sysctls => "sysctls",
    fs_group_change_policy: Unset => "fsGroupChangePolicy",
    seccomp_profile: Unset => "seccompProfile",
    app_armor_profile: Unset => "appArmorProfile",
    se_linux_change_policy: Unset => "seLinuxChangePolicy",
});

message!(core::NodeSelectorRequirement {
    key: Never => "key",
    operator: Never => "operator",
    values => "values",
});

message!(core::NodeSelectorTerm {
    match_expressions => "matchExpressions",
    match_fields => "matchFields",
});

message!(core::NodeSelector {
    node_selector_terms: Never => "nodeSelectorTerms",
});

message!(core::PreferredSchedulingTerm {
    weight: Never => "weight",
    preference: Never => "preference",
});

message!(core::NodeAffinity {
    required_during_scheduling_ignored_during_execution: Unset => "requiredDuringSchedulingIgnoredDuringExecution",
    preferred_during_scheduling_ignored_during_execution => "preferredDuringSchedulingIgnoredDuringExecution",
});

message!(core::PodAffinityTerm {
    label_selector: Unset => "labelSelector",
    namespaces => "namespaces",
    topology_key: Never => "topologyKey",
    namespace_selector: Unset => "namespaceSelector",
    match_label_keys => "matchLabelKeys",
    mismatch_label_keys => "mismatchLabelKeys",
});

message!(core::WeightedPodAffinityTerm {
    weight: Never => "weight",
    pod_affinity_term: Never => "podAffinityTerm",
});

message!(core::PodAffinity {
    required_during_scheduling_ignored_during_execution => "requiredDuringSchedulingIgnoredDuringExecution",
    preferred_during_scheduling_ignored_during_execution => "preferredDuringSchedulingIgnoredDuringExecution",
});

message!(core::PodAntiAffinity {
    required_during_scheduling_ignored_during_execution => "requiredDuringSchedulingIgnoredDuringExecution",
    preferred_during_scheduling_ignored_during_execution => "preferredDuringSchedulingIgnoredDuringExecution",
});

message!(core::Affinity {
    node_affinity: Unset => "nodeAffinity",
    pod_affinity: Unset => "podAffinity",
    pod_anti_affinity: Unset => "podAntiAffinity",
});

message!(core::Toleration {
    key => "key",
    operator => "operator",
    value => "value",
    effect => "effect",
    toleration_seconds: Unset => "tolerationSeconds",
});

message!(core::HostAlias {
    ip: Never => "ip",
    hostnames => "hostnames",
});

message!(core::PodDnsConfigOption {
    name => "name",
    value: Unset => "value",
});

message!(core::PodDnsConfig {
    nameservers => "nameservers",
    searches => "searches",
    options => "options",
});

message!(core::PodReadinessGate {
    condition_type: Never => "conditionType",
});

message!(core::TopologySpreadConstraint {
    max_skew: Never => "maxSkew",
    topology_key: Never => "topologyKey",
    when_unsatisfiable: Never => "whenUnsatisfiable",
    label_selector: Unset => "labelSelector",
    min_domains: Unset => "minDomains",
    node_affinity_policy: Unset => "nodeAffinityPolicy",
    node_taints_policy: Unset => "nodeTaintsPolicy",
    match_label_keys => "matchLabelKeys",
});

message!(core::PodOs {
    name: Never => "name",
});

message!(core::PodSchedulingGate {
    name: Never => "name",
});

message!(core::PodResourceClaim {
    name: Never => "name",
    resource_claim_name: Unset => "resourceClaimName",
    resource_claim_template_name: Unset => "resourceClaimTemplateName",
});

message!(core::WorkloadReference {
    name: Unset => "name",
    pod_group: Unset => "podGroup",
    pod_group_replica_key: Unset => "podGroupReplicaKey",
});

message!(core::PodSpec {
    volumes => "volumes",
    init_containers => "initContainers",
    containers: Never => "containers",
    ephemeral_containers => "ephemeralContainers",
    restart_policy => "restartPolicy",
    termination_grace_period_seconds: Unset => "terminationGracePeriodSeconds",
    active_deadline_seconds: Unset => "activeDeadlineSeconds",
    dns_policy => "dnsPolicy",
    node_selector => "nodeSelector",
    service_account_name => "serviceAccountName",
    service_account => "serviceAccount",
    automount_service_account_token: Unset => "automountServiceAccountToken",
    node_name => "nodeName",
    host_network => "hostNetwork",
    host_pid => "hostPID",
    host_ipc => "hostIPC",
    share_process_namespace: Unset => "shareProcessNamespace",
    security_context: Unset => "securityContext",
    image_pull_secrets => "imagePullSecrets",
    hostname => "hostname",
    subdomain => "subdomain",
    affinity: Unset => "affinity",
    scheduler_name => "schedulerName",
    tolerations => "tolerations",
    host_aliases => "hostAliases",
    priority_class_name => "priorityClassName",
    priority: Unset => "priority",
    dns_config: Unset => "dnsConfig",
    readiness_gates => "readinessGates",
    runtime_class_name: Unset => "runtimeClassName",
    enable_service_links: Unset => "enableServiceLinks",
    preemption_policy: Unset => "preemptionPolicy",
    overhead => "overhead",
    topology_spread_constraints => "topologySpreadConstraints",
    set_hostname_as_fqdn: Unset => "setHostnameAsFQDN",
    os: Unset => "os",
    host_users: Unset => "hostUsers",
    scheduling_gates => "schedulingGates",
    resource_claims => "resourceClaims",
    resources: Unset => "resources",
    hostname_override: Unset => "hostnameOverride",
    workload_ref: Unset => "workloadRef",
});

message!(core::PodTemplateSpec {
    metadata: Never => "metadata",
    spec: Never => "spec",
});

message!(apps::RollingUpdateDeployment {
    max_unavailable: Unset => "maxUnavailable",
    max_surge: Unset => "maxSurge",
});

message!(apps::DeploymentStrategy {
    r#type => "type",
    rolling_update: Unset => "rollingUpdate",
});

message!(apps::DeploymentSpec {
    replicas: Unset => "replicas",
    selector: Unset => "selector",
    template: Never => "template",
    strategy: Never => "strategy",
    min_ready_seconds => "minReadySeconds",
    revision_history_limit: Unset => "revisionHistoryLimit",
    paused => "paused",
    progress_deadline_seconds: Unset => "progressDeadlineSeconds",
});

message!(apps::DeploymentCondition {
    r#type: Never => "type",
    status: Never => "status",
    last_update_time: Never => "lastUpdateTime",
    last_transition_time: Never => "lastTransitionTime",
    reason => "reason",
    message => "message",
});

message!(apps::DeploymentStatus {
    observed_generation => "observedGeneration",
    replicas => "replicas",
    updated_replicas => "updatedReplicas",
    ready_replicas => "readyReplicas",
    available_replicas => "availableReplicas",
    unavailable_replicas => "unavailableReplicas",
    terminating_replicas: Unset => "terminatingReplicas",
    conditions => "conditions",
    collision_count: Unset => "collisionCount",
});

message!(apps::Deployment {
    metadata: Never => "metadata",
    spec: Never => "spec",
    status: Never => "status",
});
