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
use std::sync::Arc;

use clap::Args;
use sync_core::api::Infrastructure;

use self::input::{Direction, InputError, Inputs, Origin};
use crate::client::{ClientError, Connection, client_from};
use crate::sync::Platform;

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

/// Why `convert` converted nothing (exit code 2), in the words printed after
/// `controllers convert: `: each names the file, object or flag and what to do.
#[derive(Debug, thiserror::Error)]
enum ConvertError {
    /// A file (or stdin) could not be read.
    #[error("{name}: {error}")]
    Read {
        /// The file's name, or `<stdin>`.
        name: String,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// `--from-cluster`: no client for the cluster.
    #[error("connecting to the cluster: {0}")]
    Connect(#[source] ClientError),
    /// `--from-cluster`: reading failed; what was read and what the failure means
    /// ([`cluster::ClusterError::explain`]).
    #[error("{0}")]
    Cluster(String),
    /// Some documents cannot be used (each was printed as an `error:` line).
    #[error("{count} document(s) cannot be used; nothing converted")]
    UnusableDocuments {
        /// How many.
        count: usize,
    },
    /// The `--infrastructure` file has a document that cannot be used.
    #[error(transparent)]
    InfrastructureFile(Box<InputError>),
    /// The `--infrastructure` file has no Infrastructure.
    #[error("{file}: no Infrastructure object in it")]
    NoInfrastructureIn {
        /// The file.
        file: String,
    },
    /// The `--infrastructure` file has several.
    #[error("{file}: more than one Infrastructure object")]
    SeveralInfrastructuresIn {
        /// The file.
        file: String,
    },
    /// The input has several.
    #[error("more than one Infrastructure object in the input")]
    SeveralInfrastructures,
    /// Neither `--infrastructure`, the input nor `--from-cluster` gives one.
    #[error(
        "no Infrastructure: give --infrastructure FILE, put the Infrastructure object in the input, \
         or use --from-cluster"
    )]
    NoInfrastructure,
    /// The Infrastructure names no platform the conversion serves.
    #[error("{origin}: not an Infrastructure the conversion can use: {reason}")]
    UnusableInfrastructure {
        /// Where it came from.
        origin: String,
        /// Why not.
        reason: String,
    },
    /// Nothing to convert.
    #[error("no Machine or MachineSet in the input")]
    NothingToConvert,
    /// The converted objects could not be written as YAML.
    #[error("writing YAML: {0}")]
    Yaml(#[source] serde_saphyr::ser::Error),
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

/// [`run`] up to the exit code; an error is printed after `controllers convert: `.
async fn run_inner(
    args: &ConvertArgs,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Status, ConvertError> {
    let direction = direction(args);
    let mut inputs = Inputs::default();
    let mut errors = read_files_and_stdin(args, stdin, direction, &mut inputs)?;
    let connection = if args.from_cluster {
        let (connection, unusable) = read_cluster(args, direction, &mut inputs).await?;
        errors.extend(unusable);
        Some(connection)
    } else {
        None
    };
    refuse_unusable_documents(&errors, stderr)?;
    let platform = platform(args, &inputs, connection.as_ref()).await?;
    let outcome = match direction {
        Direction::MapiToCapi => plan::to_capi(&inputs, platform.as_ref()),
        Direction::CapiToMapi => plan::to_mapi(&inputs, platform.as_ref()),
    };
    if outcome.results.is_empty() {
        return Err(ConvertError::NothingToConvert);
    }
    write_outcome(args.check, &outcome, stdout, stderr)?;
    Ok(if outcome.all_convertible() {
        Status::Converted
    } else {
        Status::NotConvertible
    })
}

/// Which kinds are read: Machine API ones, or with `--reverse` Cluster API ones.
fn direction(args: &ConvertArgs) -> Direction {
    if args.reverse {
        Direction::CapiToMapi
    } else {
        Direction::MapiToCapi
    }
}

/// Adds the objects of the FILEs, and of stdin when a FILE is `-` or none is given without
/// `--from-cluster`; returns the errors of the documents that cannot be used (a file that
/// cannot be read at all stops the run).
fn read_files_and_stdin(
    args: &ConvertArgs,
    stdin: &mut dyn Read,
    direction: Direction,
    inputs: &mut Inputs,
) -> Result<Vec<String>, ConvertError> {
    let mut errors = Vec::new();
    let read_stdin =
        args.files.iter().any(|f| f.as_os_str() == "-") || (args.files.is_empty() && !args.from_cluster);
    for file in args.files.iter().filter(|f| f.as_os_str() != "-") {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|error| ConvertError::Read {
            name: name.clone(),
            error,
        })?;
        errors.extend(
            inputs
                .add_source(&name, &text, direction)
                .iter()
                .map(ToString::to_string),
        );
    }
    if read_stdin {
        let mut text = String::new();
        stdin
            .read_to_string(&mut text)
            .map_err(|error| ConvertError::Read {
                name: "<stdin>".to_owned(),
                error,
            })?;
        errors.extend(
            inputs
                .add_source("<stdin>", &text, direction)
                .iter()
                .map(ToString::to_string),
        );
    }
    Ok(errors)
}

/// `--from-cluster`: adds the direction's objects of `--namespace` (by default the side's
/// own); returns the connection, through which the Infrastructure and the infrastructure
/// cluster object are read too, and the errors of the objects that cannot be used.
async fn read_cluster(
    args: &ConvertArgs,
    direction: Direction,
    inputs: &mut Inputs,
) -> Result<(Connection, Vec<String>), ConvertError> {
    let connection = client_from(args.kubeconfig.as_deref(), args.context.as_deref())
        .await
        .map_err(ConvertError::Connect)?;
    let namespace = args.namespace.clone().unwrap_or_else(|| {
        match direction {
            Direction::MapiToCapi => conversion::names::MAPI_NAMESPACE,
            Direction::CapiToMapi => conversion::names::CAPI_NAMESPACE,
        }
        .to_owned()
    });
    let errors = cluster::read_objects(&connection.client, &namespace, direction, inputs)
        .await
        .map_err(|e| ConvertError::Cluster(e.explain(&connection)))?;
    Ok((connection, errors))
}

/// Prints each document that cannot be used as an `error:` line; any of them stops the run,
/// so that nothing is converted from part of the input.
fn refuse_unusable_documents(errors: &[String], stderr: &mut dyn Write) -> Result<(), ConvertError> {
    if errors.is_empty() {
        return Ok(());
    }
    for error in errors {
        let _ = writeln!(stderr, "error: {error}");
    }
    Err(ConvertError::UnusableDocuments { count: errors.len() })
}

/// The conversion for the Infrastructure's platform: from a cluster, with its
/// infrastructure cluster object; offline, the installer's is assumed.
async fn platform(
    args: &ConvertArgs,
    inputs: &Inputs,
    connection: Option<&Connection>,
) -> Result<Arc<dyn Platform>, ConvertError> {
    let (origin, infrastructure) = infrastructure(args, inputs, connection).await?;
    let mut facts = crate::sync::Cluster::from_infrastructure(infrastructure);
    if let Some(connection) = connection {
        facts
            .read_infra_cluster(&connection.client, conversion::names::CAPI_NAMESPACE)
            .await;
    }
    crate::platform::for_cluster(&facts).map_err(|errors| ConvertError::UnusableInfrastructure {
        origin,
        reason: errors.to_string(),
    })
}

/// `--check`: the readiness report; otherwise the objects as YAML, and the diagnostics on
/// stderr.
fn write_outcome(
    check: bool,
    outcome: &plan::Outcome,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), ConvertError> {
    if check {
        let _ = stdout.write_all(outcome.report().as_bytes());
    } else {
        let yaml = outcome.yaml().map_err(ConvertError::Yaml)?;
        let _ = stdout.write_all(yaml.as_bytes());
        let _ = stderr.write_all(outcome.diagnostics().as_bytes());
    }
    Ok(())
}

/// The Infrastructure to use: `--infrastructure`, else the one in the input, else the
/// cluster's.
async fn infrastructure(
    args: &ConvertArgs,
    inputs: &Inputs,
    client: Option<&Connection>,
) -> Result<(String, Infrastructure), ConvertError> {
    if let Some(path) = &args.infrastructure {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| ConvertError::Read {
            name: source.clone(),
            error,
        })?;
        let mut found = Inputs::default();
        let errors = found.add_source(&source, &text, Direction::MapiToCapi);
        if let Some(error) = errors.into_iter().next() {
            return Err(ConvertError::InfrastructureFile(Box::new(error)));
        }
        return match found.infrastructures.as_slice() {
            [(origin, infra)] => Ok((origin.to_string(), infra.clone())),
            [] => Err(ConvertError::NoInfrastructureIn { file: source }),
            _ => Err(ConvertError::SeveralInfrastructuresIn { file: source }),
        };
    }
    match inputs.infrastructures.as_slice() {
        [(origin, infra)] => return Ok((origin.to_string(), infra.clone())),
        [_, ..] => return Err(ConvertError::SeveralInfrastructures),
        [] => {}
    }
    match client {
        Some(client) => {
            let infra = cluster::read_infrastructure(&client.client)
                .await
                .map_err(|e| ConvertError::Cluster(e.explain(client)))?;
            let origin = Origin {
                source: "cluster".to_owned(),
                document: 1,
                object: "Infrastructure cluster".to_owned(),
            };
            Ok((origin.to_string(), infra))
        }
        None => Err(ConvertError::NoInfrastructure),
    }
}
