//! Converting what was read, and saying how it went: the objects a migration would create
//! (YAML), or a readiness report (`--check`).

use std::fmt::Write as _;

use conversion::platform::Platform;
use conversion::{ConversionErrors, ConversionResult};
use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::Value;

use super::input::{Inputs, Origin};

/// The result of one run.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The converted objects, in input order.
    pub objects: Vec<Value>,
    /// Per converted object: where it came from, its warnings, its errors.
    pub results: Vec<ObjectResult>,
    /// Input objects that were not converted on their own (e.g. an AWSMachine no Machine
    /// refers to).
    pub notes: Vec<String>,
}

/// How one input object fared.
#[derive(Debug)]
pub struct ObjectResult {
    /// The object.
    pub origin: Origin,
    /// Warning lines (`path: message`).
    pub warnings: Vec<String>,
    /// Error lines; empty when the object converts.
    pub errors: Vec<String>,
}

impl Outcome {
    /// Whether every object converts.
    pub fn all_convertible(&self) -> bool {
        self.results.iter().all(|r| r.errors.is_empty())
    }

    /// The converted objects as one multi-document YAML stream.
    pub fn yaml(&self) -> Result<String, serde_saphyr::ser::Error> {
        let mut out = String::new();
        for object in &self.objects {
            out.push_str("---\n");
            out.push_str(&serde_saphyr::to_string(object)?);
        }
        Ok(out)
    }

    /// The readiness report of `--check`.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for result in &self.results {
            let verdict = if result.errors.is_empty() {
                "convertible"
            } else {
                "NOT convertible"
            };
            let _ = writeln!(out, "{}: {verdict}", result.origin);
            for error in &result.errors {
                let _ = writeln!(out, "  error: {error}");
            }
            for warning in &result.warnings {
                let _ = writeln!(out, "  warning: {warning}");
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        let ready = self.results.iter().filter(|r| r.errors.is_empty()).count();
        let _ = writeln!(out, "{ready} of {} objects can migrate", self.results.len());
        out
    }

    /// Warnings and errors for stderr, each line naming its object.
    pub fn diagnostics(&self) -> String {
        let mut out = String::new();
        for result in &self.results {
            for error in &result.errors {
                let _ = writeln!(out, "error: {}: {error}", result.origin);
            }
            for warning in &result.warnings {
                let _ = writeln!(out, "warning: {}: {warning}", result.origin);
            }
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out
    }

    fn record<T>(
        &mut self,
        origin: &Origin,
        result: ConversionResult<T>,
        outputs: impl FnOnce(T) -> Vec<Value>,
    ) {
        match result {
            Ok(converted) => {
                self.objects.extend(outputs(converted.value));
                self.results.push(ObjectResult {
                    origin: origin.clone(),
                    warnings: converted.warnings.iter().map(ToString::to_string).collect(),
                    errors: Vec::new(),
                });
            }
            Err(ConversionErrors { errors, warnings }) => self.results.push(ObjectResult {
                origin: origin.clone(),
                warnings: warnings.iter().map(ToString::to_string).collect(),
                errors: errors.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    fn fail(&mut self, origin: &Origin, error: String) {
        self.results.push(ObjectResult {
            origin: origin.clone(),
            warnings: Vec::new(),
            errors: vec![error],
        });
    }
}

/// An object as the migration would create it: without status (its controller writes it).
fn to_value<T: Serialize>(value: &T) -> Value {
    let mut value = serde_json::to_value(value).unwrap_or(Value::Null);
    if let Some(fields) = value.as_object_mut() {
        fields.remove("status");
    }
    value
}

/// The input object `reference` names, beside `namespace`; marks it used.
fn find<'a>(
    objects: &'a [(Origin, DynamicObject)],
    used: &mut [bool],
    reference: &sync_core::api::ContractVersionedObjectReference,
    namespace: Option<&String>,
) -> Option<&'a DynamicObject> {
    let index = objects.iter().position(|(_, o)| {
        o.metadata.name.as_ref() == Some(&reference.name)
            && o.metadata.namespace.as_ref() == namespace
            && o.types.as_ref().is_some_and(|t| t.kind == reference.kind)
    })?;
    used[index] = true;
    Some(&objects[index].1)
}

/// Machine API → Cluster API: a CAPI Machine and its infrastructure machine per Machine,
/// a CAPI MachineSet and its infrastructure template per MachineSet.
pub fn to_capi(inputs: &Inputs, platform: &dyn Platform) -> Outcome {
    let mut outcome = Outcome::default();
    for (origin, set) in &inputs.mapi_machine_sets {
        outcome.record(origin, platform.machine_set_to_capi(set), |c| {
            vec![to_value(&c.set), to_value(&c.template)]
        });
    }
    for (origin, machine) in &inputs.mapi_machines {
        outcome.record(origin, platform.machine_to_capi(machine), |c| {
            vec![to_value(&c.machine), to_value(&c.infra)]
        });
    }
    outcome
}

/// Cluster API → Machine API: each CAPI Machine with the infrastructure machine it
/// references, each CAPI MachineSet with its infrastructure template.
pub fn to_mapi(inputs: &Inputs, platform: &dyn Platform) -> Outcome {
    let mut outcome = Outcome::default();
    let mut used_templates = vec![false; inputs.infra_templates.len()];
    for (origin, set) in &inputs.capi_machine_sets {
        let reference = &set.spec.template.spec.infrastructure_ref;
        match find(
            &inputs.infra_templates,
            &mut used_templates,
            reference,
            set.metadata.namespace.as_ref(),
        ) {
            Some(template) => outcome.record(origin, platform.machine_set_to_mapi(set, template), |s| {
                vec![to_value(&s)]
            }),
            None => outcome.fail(
                origin,
                format!(
                    "spec.template.spec.infrastructureRef: its {} {:?} is not in the input",
                    reference.kind, reference.name
                ),
            ),
        }
    }
    let mut used_machines = vec![false; inputs.infra_machines.len()];
    for (origin, machine) in &inputs.capi_machines {
        let reference = &machine.spec.infrastructure_ref;
        match find(
            &inputs.infra_machines,
            &mut used_machines,
            reference,
            machine.metadata.namespace.as_ref(),
        ) {
            Some(infra) => outcome.record(origin, platform.machine_to_mapi(machine, infra), |m| {
                vec![to_value(&m)]
            }),
            None => outcome.fail(
                origin,
                format!(
                    "spec.infrastructureRef: its {} {:?} is not in the input",
                    reference.kind, reference.name
                ),
            ),
        }
    }
    for ((origin, _), used) in inputs.infra_machines.iter().zip(used_machines) {
        if !used {
            outcome.notes.push(format!(
                "{origin}: no Machine in the input refers to it; not converted"
            ));
        }
    }
    for ((origin, _), used) in inputs.infra_templates.iter().zip(used_templates) {
        if !used {
            outcome.notes.push(format!(
                "{origin}: no MachineSet in the input refers to it; not converted"
            ));
        }
    }
    outcome
}
