//! `controllers convert`: for people planning a migration. Reads Machine API Machines and
//! MachineSets (files, stdin, or `--from-cluster`) and prints the Cluster API objects the
//! sync would create, as YAML; `--reverse` the other way; `--check` prints a readiness
//! report instead and fails when something cannot migrate. The conversion is the
//! operator's own (`conversion` crate), so what it says is what the sync will do.
//!
//! Exit codes: 0 everything converts; 1 some object cannot be converted; 2 bad input (not
//! YAML, a wrong kind, no usable Infrastructure, a cluster that cannot be read).

pub mod cluster;
pub mod input;
pub mod plan;

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::Args;
use sync_core::api::Infrastructure;

use self::input::{Direction, Inputs, Origin};
use crate::client::{Connection, client_from};

/// `controllers convert [FILE]...`
#[derive(Debug, Clone, Args)]
#[command(
    about = "Print the Cluster API objects (or, with --reverse, the Machine API objects) the sync would create",
    long_about = "Reads Machine API Machines and MachineSets as YAML — from the FILEs (several documents \
each, `kind: List` too), from stdin when there are none or FILE is `-`, or with --from-cluster from \
the cluster — and prints the Cluster API Machines, MachineSets, AWSMachines and AWSMachineTemplates \
the sync would create. With --reverse it reads Cluster API Machines and MachineSets with their \
AWSMachines and AWSMachineTemplates and prints Machine API objects.\n\n\
The cluster's Infrastructure (infrastructures.config.openshift.io/cluster: infrastructure name, \
region) comes from --infrastructure FILE, else from an Infrastructure document in the input, else \
from the cluster with --from-cluster.\n\n\
With --check it prints, per object, `convertible` or every field that blocks the migration \
with its path, and the warnings; it exits 1 when something cannot migrate.",
    after_help = "Examples:\n  oc get machinesets,machines -n openshift-machine-api -o yaml | controllers convert --check --infrastructure infra.yaml\n  controllers convert --from-cluster --kubeconfig ~/.kube/config > capi.yaml"
)]
pub struct ConvertArgs {
    /// YAML files to read (`-` is stdin) [default: stdin, unless --from-cluster].
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Convert Cluster API objects to the Machine API instead.
    #[arg(long)]
    pub reverse: bool,
    /// Print a readiness report instead of the objects; exit 1 if anything cannot migrate.
    #[arg(long)]
    pub check: bool,
    /// The cluster's Infrastructure object, as YAML.
    #[arg(long, value_name = "FILE")]
    pub infrastructure: Option<PathBuf>,
    /// Read the objects (and the Infrastructure, unless given) from the cluster.
    #[arg(long)]
    pub from_cluster: bool,
    /// Kubeconfig for --from-cluster [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context for --from-cluster.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Namespace to read with --from-cluster [default: openshift-machine-api, or
    /// openshift-cluster-api with --reverse].
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every object converts.
    Converted = 0,
    /// Some object cannot be converted.
    NotConvertible = 1,
    /// The input could not be used.
    BadInput = 2,
}

/// Runs `convert`: reads `stdin` when no file is given, writes YAML or the report to
/// `stdout` and diagnostics to `stderr`.
pub async fn run(
    args: &ConvertArgs,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Status {
    match run_inner(args, stdin, stdout, stderr).await {
        Ok(status) => status,
        Err(message) => {
            let _ = writeln!(stderr, "controllers convert: {message}");
            Status::BadInput
        }
    }
}

async fn run_inner(
    args: &ConvertArgs,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Status, String> {
    let direction = if args.reverse {
        Direction::CapiToMapi
    } else {
        Direction::MapiToCapi
    };
    let mut inputs = Inputs::default();
    let mut errors: Vec<String> = Vec::new();

    let read_stdin =
        args.files.iter().any(|f| f.as_os_str() == "-") || (args.files.is_empty() && !args.from_cluster);
    for file in args.files.iter().filter(|f| f.as_os_str() != "-") {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        errors.extend(
            inputs
                .add_source(&file.display().to_string(), &text, direction)
                .iter()
                .map(ToString::to_string),
        );
    }
    if read_stdin {
        let mut text = String::new();
        stdin
            .read_to_string(&mut text)
            .map_err(|e| format!("<stdin>: {e}"))?;
        errors.extend(
            inputs
                .add_source("<stdin>", &text, direction)
                .iter()
                .map(ToString::to_string),
        );
    }

    let client = if args.from_cluster {
        let connection = client_from(args.kubeconfig.as_deref(), args.context.as_deref())
            .await
            .map_err(|e| format!("connecting to the cluster: {e}"))?;
        let namespace = args.namespace.clone().unwrap_or_else(|| {
            match direction {
                Direction::MapiToCapi => conversion::names::MAPI_NAMESPACE,
                Direction::CapiToMapi => conversion::names::CAPI_NAMESPACE,
            }
            .to_owned()
        });
        errors.extend(
            cluster::read_objects(&connection.client, &namespace, direction, &mut inputs)
                .await
                .map_err(|e| e.explain(&connection))?,
        );
        Some(connection)
    } else {
        None
    };

    if !errors.is_empty() {
        for error in &errors {
            let _ = writeln!(stderr, "error: {error}");
        }
        return Err(format!(
            "{} document(s) cannot be used; nothing converted",
            errors.len()
        ));
    }

    let (origin, infrastructure) = infrastructure(args, &inputs, client.as_ref()).await?;
    // From a cluster, its infrastructure cluster object; offline, the installer's is assumed.
    let mut facts = crate::sync::Cluster::from_infrastructure(infrastructure);
    if let Some(connection) = &client {
        facts
            .read_infra_cluster(&connection.client, conversion::names::CAPI_NAMESPACE)
            .await;
    }
    let platform = crate::platform::for_cluster(&facts)
        .map_err(|e| format!("{origin}: not an Infrastructure the conversion can use: {e}"))?;

    let outcome = match direction {
        Direction::MapiToCapi => plan::to_capi(&inputs, platform.as_ref()),
        Direction::CapiToMapi => plan::to_mapi(&inputs, platform.as_ref()),
    };
    if outcome.results.is_empty() {
        return Err("no Machine or MachineSet in the input".to_owned());
    }
    if args.check {
        let _ = stdout.write_all(outcome.report().as_bytes());
    } else {
        let yaml = outcome.yaml().map_err(|e| format!("writing YAML: {e}"))?;
        let _ = stdout.write_all(yaml.as_bytes());
        let _ = stderr.write_all(outcome.diagnostics().as_bytes());
    }
    Ok(if outcome.all_convertible() {
        Status::Converted
    } else {
        Status::NotConvertible
    })
}

/// The Infrastructure to use: `--infrastructure`, else the one in the input, else the
/// cluster's.
async fn infrastructure(
    args: &ConvertArgs,
    inputs: &Inputs,
    client: Option<&Connection>,
) -> Result<(String, Infrastructure), String> {
    if let Some(path) = &args.infrastructure {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{source}: {e}"))?;
        let mut found = Inputs::default();
        let errors = found.add_source(&source, &text, Direction::MapiToCapi);
        if let Some(error) = errors.first() {
            return Err(error.to_string());
        }
        return match found.infrastructures.as_slice() {
            [(origin, infra)] => Ok((origin.to_string(), infra.clone())),
            [] => Err(format!("{source}: no Infrastructure object in it")),
            _ => Err(format!("{source}: more than one Infrastructure object")),
        };
    }
    match inputs.infrastructures.as_slice() {
        [(origin, infra)] => return Ok((origin.to_string(), infra.clone())),
        [_, ..] => return Err("more than one Infrastructure object in the input".to_owned()),
        [] => {}
    }
    match client {
        Some(client) => {
            let infra = cluster::read_infrastructure(&client.client)
                .await
                .map_err(|e| e.explain(client))?;
            let origin = Origin {
                source: "cluster".to_owned(),
                document: 1,
                object: "Infrastructure cluster".to_owned(),
            };
            Ok((origin.to_string(), infra))
        }
        None => Err(
            "no Infrastructure: give --infrastructure FILE, put the Infrastructure object in the input, \
             or use --from-cluster"
                .to_owned(),
        ),
    }
}
