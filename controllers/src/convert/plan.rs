//! Converting what was read, and saying how it went: the objects a migration would create
//! (YAML), or a readiness report (`--check`).

use std::fmt::Write as _;

use conversion::{AwsInfrastructure, ConversionErrors, ConversionResult};
use conversion::aws::{to_capi, to_mapi};
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

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// Machine API → Cluster API: a CAPI Machine and AWSMachine per Machine, a CAPI MachineSet
/// and AWSMachineTemplate per MachineSet.
pub fn to_capi(inputs: &Inputs, infra: &AwsInfrastructure) -> Outcome {
    let mut outcome = Outcome::default();
    for (origin, set) in &inputs.mapi_machine_sets {
        outcome.record(origin, to_capi::convert_machine_set(set, infra), |c| {
            vec![to_value(&c.machine_set), to_value(&c.template)]
        });
    }
    for (origin, machine) in &inputs.mapi_machines {
        outcome.record(origin, to_capi::convert_machine(machine, infra), |c| {
            vec![to_value(&c.machine), to_value(&c.aws_machine)]
        });
    }
    outcome
}

/// Cluster API → Machine API: each CAPI Machine with the AWSMachine it references, each
/// CAPI MachineSet with its AWSMachineTemplate.
pub fn to_mapi(inputs: &Inputs, infra: &AwsInfrastructure) -> Outcome {
    let mut outcome = Outcome::default();
    let mut used_templates = vec![false; inputs.aws_machine_templates.len()];
    for (origin, set) in &inputs.capi_machine_sets {
        let wanted = &set.spec.template.spec.infrastructure_ref.name;
        let found = inputs.aws_machine_templates.iter().position(|(_, t)| {
            t.metadata.name.as_ref() == Some(wanted) && t.metadata.namespace == set.metadata.namespace
        });
        match found {
            Some(index) => {
                used_templates[index] = true;
                let template = &inputs.aws_machine_templates[index].1;
                outcome.record(origin, to_mapi::convert_machine_set(set, template, infra), |s| {
                    vec![to_value(&s)]
                });
            }
            None => outcome.fail(
                origin,
                format!("spec.template.spec.infrastructureRef: its AWSMachineTemplate {wanted:?} is not in the input"),
            ),
        }
    }
    let mut used_machines = vec![false; inputs.aws_machines.len()];
    for (origin, machine) in &inputs.capi_machines {
        let wanted = &machine.spec.infrastructure_ref.name;
        let found = inputs.aws_machines.iter().position(|(_, m)| {
            m.metadata.name.as_ref() == Some(wanted) && m.metadata.namespace == machine.metadata.namespace
        });
        match found {
            Some(index) => {
                used_machines[index] = true;
                let aws = &inputs.aws_machines[index].1;
                outcome.record(origin, to_mapi::convert_machine(machine, aws, infra), |m| {
                    vec![to_value(&m)]
                });
            }
            None => outcome.fail(
                origin,
                format!("spec.infrastructureRef: its AWSMachine {wanted:?} is not in the input"),
            ),
        }
    }
    for ((origin, _), used) in inputs.aws_machines.iter().zip(used_machines) {
        if !used {
            outcome.notes.push(format!(
                "{origin}: no Machine in the input refers to it; not converted"
            ));
        }
    }
    for ((origin, _), used) in inputs.aws_machine_templates.iter().zip(used_templates) {
        if !used {
            outcome.notes.push(format!(
                "{origin}: no MachineSet in the input refers to it; not converted"
            ));
        }
    }
    outcome
}
