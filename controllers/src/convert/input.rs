//! Reading the objects to convert: YAML documents from files or stdin (several per
//! source, `kind: List` expanded), each sorted by kind, each bad one an error naming it.

use std::fmt;

use kube::api::DynamicObject;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sync_core::api::{Infrastructure, capi, infrastructure, mapi};

/// Where an object came from: `machines.yaml document 3 (Machine openshift-machine-api/w-1)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file name, `<stdin>` or `cluster`.
    pub source: String,
    /// 1-based document number in the source (items of a List count as documents).
    pub document: usize,
    /// `Kind namespace/name`, when the document had them.
    pub object: String,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} document {}", self.source, self.document)?;
        if !self.object.is_empty() {
            write!(f, " ({})", self.object)?;
        }
        Ok(())
    }
}

/// A document that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {problem}")]
pub struct InputError {
    /// Which document (or source, for a parse error: document 0).
    pub origin: Origin,
    /// What is wrong.
    #[source]
    pub problem: DocumentError,
}

/// What is wrong with a document of the input, in words that say what was expected.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The source does not parse (its documents are not told apart).
    #[error("not YAML: {0}")]
    NotYaml(#[source] serde_saphyr::Error),
    /// A scalar or a sequence.
    #[error("not an object")]
    NotAnObject,
    /// A map without `apiVersion` or `kind`.
    #[error("not a Kubernetes object: apiVersion and kind are required")]
    NotAKubernetesObject,
    /// A kind the Machine API to Cluster API direction does not read.
    #[error(
        "{api_version} {kind} cannot be converted to Cluster API: expected {mapi} Machine or \
         MachineSet (or {infra} Infrastructure); use --reverse for Cluster API objects",
        mapi = mapi_api_version(),
        infra = infrastructure_api_version()
    )]
    NotMachineApi {
        /// The document's `apiVersion`.
        api_version: String,
        /// The document's `kind`.
        kind: String,
    },
    /// A kind the Cluster API to Machine API direction (`--reverse`) does not read.
    #[error(
        "{api_version} {kind} cannot be converted to the Machine API: expected {capi} Machine or \
         MachineSet, an infrastructure machine or template ({infra_kinds}) (or {infra} Infrastructure)",
        capi = capi_api_version(),
        infra_kinds = infra_kinds(),
        infra = infrastructure_api_version()
    )]
    NotClusterApi {
        /// The document's `apiVersion`.
        api_version: String,
        /// The document's `kind`.
        kind: String,
    },
    /// The object does not decode as its kind.
    #[error("invalid: {0}")]
    Invalid(#[source] serde_json::Error),
    /// A field of the object does not decode.
    #[error("invalid at {path}: {source}")]
    InvalidAt {
        /// The field's path (`spec.providerID`).
        path: String,
        /// Why it does not decode.
        source: serde_json::Error,
    },
}

/// The objects found in the input, by kind, each with where it came from.
#[derive(Debug, Default)]
pub struct Inputs {
    /// Machine API Machines.
    pub mapi_machines: Vec<(Origin, mapi::Machine)>,
    /// Machine API MachineSets.
    pub mapi_machine_sets: Vec<(Origin, mapi::MachineSet)>,
    /// Cluster API Machines.
    pub capi_machines: Vec<(Origin, capi::Machine)>,
    /// Cluster API MachineSets.
    pub capi_machine_sets: Vec<(Origin, capi::MachineSet)>,
    /// Infrastructure machines of any converted platform (e.g. AWSMachines, the
    /// infrastructure of CAPI Machines).
    pub infra_machines: Vec<(Origin, DynamicObject)>,
    /// Infrastructure machine templates (e.g. AWSMachineTemplates, of CAPI MachineSets).
    pub infra_templates: Vec<(Origin, DynamicObject)>,
    /// Infrastructure objects.
    pub infrastructures: Vec<(Origin, Infrastructure)>,
}

/// Which kinds a run accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Machine API objects in, Cluster API objects out.
    MapiToCapi,
    /// Cluster API objects (with their AWS infrastructure) in, Machine API objects out.
    CapiToMapi,
}

impl Inputs {
    /// Parses `text` (the content of `source`), adding every object; returns the errors of
    /// the documents that could not be used.
    pub fn add_source(&mut self, source: &str, text: &str, direction: Direction) -> Vec<InputError> {
        let documents: Vec<Value> = match serde_saphyr::from_multiple(text) {
            Ok(documents) => documents,
            Err(error) => {
                return vec![InputError {
                    origin: Origin {
                        source: source.to_owned(),
                        document: 0,
                        object: String::new(),
                    },
                    problem: DocumentError::NotYaml(error),
                }];
            }
        };
        let mut errors = Vec::new();
        let mut number = 0;
        for document in documents {
            let items = match list_items(&document) {
                Some(items) => items,
                None => vec![document],
            };
            for item in items {
                number += 1;
                let origin = Origin {
                    source: source.to_owned(),
                    document: number,
                    object: describe(&item),
                };
                if let Err(problem) = self.add(origin.clone(), item, direction) {
                    errors.push(InputError { origin, problem });
                }
            }
        }
        errors
    }

    /// Adds one object (e.g. from a cluster list).
    pub fn add(&mut self, origin: Origin, value: Value, direction: Direction) -> Result<(), DocumentError> {
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !value.is_object() {
            return Err(DocumentError::NotAnObject);
        }
        if api_version.is_empty() || kind.is_empty() {
            return Err(DocumentError::NotAKubernetesObject);
        }
        let mapi_version = mapi_api_version();
        let capi_version = capi_api_version();
        let infra_machine = |v: &str, k: &str| {
            conversion::platform::ALL
                .iter()
                .any(|p| p.api_version() == v && p.machine == k)
        };
        let infra_template = |v: &str, k: &str| {
            conversion::platform::ALL
                .iter()
                .any(|p| p.api_version() == v && p.template == k)
        };
        let infra_version = infrastructure_api_version();
        match (direction, api_version.as_str(), kind.as_str()) {
            (_, v, "Infrastructure") if v == infra_version => push(&mut self.infrastructures, origin, value),
            (Direction::MapiToCapi, v, "Machine") if v == mapi_version => {
                push(&mut self.mapi_machines, origin, value)
            }
            (Direction::MapiToCapi, v, "MachineSet") if v == mapi_version => {
                push(&mut self.mapi_machine_sets, origin, value)
            }
            (Direction::CapiToMapi, v, "Machine") if v == capi_version => {
                push(&mut self.capi_machines, origin, value)
            }
            (Direction::CapiToMapi, v, "MachineSet") if v == capi_version => {
                push(&mut self.capi_machine_sets, origin, value)
            }
            (Direction::CapiToMapi, v, k) if infra_machine(v, k) => {
                push(&mut self.infra_machines, origin, value)
            }
            (Direction::CapiToMapi, v, k) if infra_template(v, k) => {
                push(&mut self.infra_templates, origin, value)
            }
            (Direction::MapiToCapi, ..) => Err(DocumentError::NotMachineApi { api_version, kind }),
            (Direction::CapiToMapi, ..) => Err(DocumentError::NotClusterApi { api_version, kind }),
        }
    }
}

/// `machine.openshift.io/v1beta1`: the Machine API kinds' `apiVersion`.
fn mapi_api_version() -> String {
    format!("{}/{}", mapi::GROUP, mapi::VERSION)
}

/// `cluster.x-k8s.io/v1beta2`: the Cluster API kinds' `apiVersion`.
fn capi_api_version() -> String {
    format!("{}/{}", capi::GROUP, capi::VERSION)
}

/// `config.openshift.io/v1`: the `Infrastructure` kind's `apiVersion`.
fn infrastructure_api_version() -> String {
    format!("{}/{}", infrastructure::GROUP, infrastructure::VERSION)
}

/// `infrastructure.cluster.x-k8s.io/v1beta2 AWSMachine, …` for every converted platform.
fn infra_kinds() -> String {
    conversion::platform::ALL
        .iter()
        .flat_map(|p| {
            [
                format!("{} {}", p.api_version(), p.machine),
                format!("{} {}", p.api_version(), p.template),
            ]
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Decodes `value` as a `T` and adds it; an error names the field that does not decode.
fn push<T: DeserializeOwned>(
    into: &mut Vec<(Origin, T)>,
    origin: Origin,
    value: Value,
) -> Result<(), DocumentError> {
    let object = serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        if path == "." {
            DocumentError::Invalid(error.into_inner())
        } else {
            DocumentError::InvalidAt {
                path,
                source: error.into_inner(),
            }
        }
    })?;
    into.push((origin, object));
    Ok(())
}

/// The items of a `kind: List` (what `kubectl get -o yaml` prints).
fn list_items(document: &Value) -> Option<Vec<Value>> {
    let kind = document.get("kind").and_then(Value::as_str)?;
    if !kind.ends_with("List") {
        return None;
    }
    document.get("items").and_then(Value::as_array).cloned()
}

/// `Kind namespace/name` of a document, as far as it has them.
fn describe(document: &Value) -> String {
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = document
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = document.pointer("/metadata/namespace").and_then(Value::as_str);
    match (kind, namespace) {
        ("", _) if name.is_empty() => String::new(),
        (_, Some(namespace)) => format!("{kind} {namespace}/{name}").trim().to_owned(),
        _ => format!("{kind} {name}").trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_and_lists_are_numbered_and_named() {
        let text = "apiVersion: machine.openshift.io/v1beta1\nkind: Machine\nmetadata: {name: a, namespace: ns}\nspec: {}\n---\n\
                    apiVersion: v1\nkind: List\nitems:\n- apiVersion: machine.openshift.io/v1beta1\n  kind: MachineSet\n  \
                    metadata: {name: s}\n  spec: {}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n";
        let mut inputs = Inputs::default();
        let errors = inputs.add_source("in.yaml", text, Direction::MapiToCapi);
        assert_eq!(inputs.mapi_machines.len(), 1);
        assert_eq!(inputs.mapi_machine_sets.len(), 1);
        assert_eq!(
            inputs.mapi_machines[0].0.to_string(),
            "in.yaml document 1 (Machine ns/a)"
        );
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0]
                .to_string()
                .starts_with("in.yaml document 3 (ConfigMap c): v1 ConfigMap cannot be converted"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn a_kind_of_the_wrong_direction_is_refused_with_what_was_expected() {
        let config_map = || serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"});
        let origin = || Origin {
            source: "in.yaml".to_owned(),
            document: 1,
            object: String::new(),
        };
        let mut inputs = Inputs::default();
        let to_capi = inputs.add(origin(), config_map(), Direction::MapiToCapi);
        assert_eq!(
            to_capi.err().map(|e| e.to_string()).as_deref(),
            Some(
                "v1 ConfigMap cannot be converted to Cluster API: expected machine.openshift.io/v1beta1 \
                 Machine or MachineSet (or config.openshift.io/v1 Infrastructure); use --reverse for \
                 Cluster API objects"
            )
        );
        let to_mapi = inputs.add(origin(), config_map(), Direction::CapiToMapi);
        assert_eq!(
            to_mapi.err().map(|e| e.to_string()),
            Some(format!(
                "v1 ConfigMap cannot be converted to the Machine API: expected cluster.x-k8s.io/v1beta2 \
                 Machine or MachineSet, an infrastructure machine or template ({}) (or \
                 config.openshift.io/v1 Infrastructure)",
                infra_kinds()
            ))
        );
        let scalar = inputs.add(origin(), serde_json::json!(7), Direction::MapiToCapi);
        assert_eq!(
            scalar.err().map(|e| e.to_string()).as_deref(),
            Some("not an object")
        );
    }

    #[test]
    fn bad_documents_are_errors_that_name_them() {
        let mut inputs = Inputs::default();
        let errors = inputs.add_source("x.yaml", "a: [unclosed", Direction::MapiToCapi);
        assert!(
            errors[0].to_string().starts_with("x.yaml document 0: not YAML"),
            "{}",
            errors[0]
        );
        let errors = inputs.add_source("y.yaml", "just: text\n", Direction::MapiToCapi);
        assert!(
            errors[0].to_string().contains("apiVersion and kind are required"),
            "{}",
            errors[0]
        );
        let errors = inputs.add_source(
            "z.yaml",
            "apiVersion: machine.openshift.io/v1beta1\nkind: Machine\nmetadata: {name: m}\nspec: {providerID: 7}\n",
            Direction::MapiToCapi,
        );
        assert!(
            errors[0].to_string().contains("invalid at spec.providerID"),
            "{}",
            errors[0]
        );
        let errors = inputs.add_source(
            "w.yaml",
            "apiVersion: machine.openshift.io/v1beta1\nkind: Machine\nmetadata: {name: m}\n",
            Direction::CapiToMapi,
        );
        assert!(
            errors[0]
                .to_string()
                .contains("cannot be converted to the Machine API"),
            "{}",
            errors[0]
        );
    }
}
