//! `controllers status`: what an administrator checks before and during a migration: whether
//! the `MachineAPIMigration` feature gate lets the controllers run (and why), then one line
//! per Machine and MachineSet pair, read through a kubeconfig.

use std::collections::BTreeMap;
use std::io::Write;

use kube::api::{Api, ListParams};
use kube::{Client, Resource, ResourceExt};
use sync_core::api::{capi, mapi};
use sync_core::toolkit::condition;
use sync_core::toolkit::status as sync_status;
use sync_core::{MapiObject, Namespaces};

use crate::args::{KubeconfigArgs, NamespaceArgs};
use crate::feature_gate;
use crate::migration::MIGRATION_CONDITION;

/// `controllers status` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The cluster to read.
    #[command(flatten)]
    pub cluster: KubeconfigArgs,
    /// The namespaces to read: the operator's flags, environment variables and defaults.
    #[command(flatten)]
    pub namespaces: NamespaceArgs,
    /// The release version whose feature gates count, as the operator's flag [default:
    /// the cluster's].
    #[arg(long, env = "RELEASE_VERSION", value_name = "VERSION")]
    pub release_version: Option<String>,
}

/// One pair as `controllers status` prints it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    /// `Machine` or `MachineSet`.
    pub kind: &'static str,
    /// The pair's name.
    pub name: String,
    /// `spec.authoritativeAPI` (the request).
    pub requested: String,
    /// `status.authoritativeAPI`.
    pub current: String,
    /// The `Synchronized` condition's status (and reason when not True).
    pub synchronized: String,
    /// MAPI generation, CAPI generation, `status.synchronizedGeneration`.
    pub generations: (Option<i64>, Option<i64>, Option<i64>),
    /// The migration's step (the `Migration` condition's reason), `Stalled:` prefixed.
    pub migration: String,
    /// The last error: a `False` condition's message.
    pub last_error: String,
}

impl Row {
    /// The row of a pair; `mapi: None` for a CAPI-only object.
    pub fn of<M: MapiObject>(
        kind: &'static str,
        name: &str,
        requested: Option<String>,
        mapi: Option<&M>,
        capi_generation: Option<i64>,
    ) -> Self {
        let dash = || "-".to_owned();
        let synced = mapi.and_then(|m| sync_status::synchronized(m));
        let migration = mapi.and_then(|m| condition::find(m, MIGRATION_CONDITION));
        let last_error = [synced, migration]
            .into_iter()
            .flatten()
            .find(|c| c.status == "False")
            .and_then(|c| c.message.clone())
            .unwrap_or_else(dash);
        Self {
            kind,
            name: name.to_owned(),
            requested: requested.unwrap_or_else(dash),
            current: mapi
                .and_then(MapiObject::authoritative_api)
                .map_or_else(dash, ToString::to_string),
            synchronized: synced.map_or_else(dash, |c| match c.status.as_str() {
                "True" => "True".to_owned(),
                other => format!("{other}({})", c.reason.as_deref().unwrap_or_default()),
            }),
            generations: (
                mapi.and_then(|m| m.meta().generation),
                capi_generation,
                mapi.and_then(sync_status::synchronized_generation),
            ),
            migration: migration.map_or_else(dash, |c| {
                let reason = c.reason.clone().unwrap_or_default();
                match c.status.as_str() {
                    "False" => format!("Stalled:{reason}"),
                    "True" => format!("Done:{reason}"),
                    _ => reason,
                }
            }),
            last_error,
        }
    }
}

/// The table, with a header.
pub fn render(rows: &[Row]) -> String {
    let generation = |g: Option<i64>| g.map_or_else(|| "-".to_owned(), |g| g.to_string());
    let mut table = vec![[
        "KIND".to_owned(),
        "NAME".to_owned(),
        "SPEC".to_owned(),
        "STATUS".to_owned(),
        "SYNCHRONIZED".to_owned(),
        "GEN(MAPI/CAPI/SYNCED)".to_owned(),
        "MIGRATION".to_owned(),
        "LAST ERROR".to_owned(),
    ]];
    for row in rows {
        table.push([
            row.kind.to_owned(),
            row.name.clone(),
            row.requested.clone(),
            row.current.clone(),
            row.synchronized.clone(),
            format!(
                "{}/{}/{}",
                generation(row.generations.0),
                generation(row.generations.1),
                generation(row.generations.2)
            ),
            row.migration.clone(),
            row.last_error.clone(),
        ]);
    }
    let mut widths = [0usize; 8];
    for line in &table {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in &table {
        let cells: Vec<String> = line
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, width))| {
                if i == 7 {
                    cell.clone()
                } else {
                    format!("{cell:width$}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Reads every pair of `namespaces`.
pub async fn rows(client: &Client, namespaces: &Namespaces) -> Result<Vec<Row>, kube::Error> {
    let list = ListParams::default();
    let mapi_machines = Api::<mapi::Machine>::namespaced(client.clone(), &namespaces.mapi)
        .list(&list)
        .await?;
    let capi_machines = Api::<capi::Machine>::namespaced(client.clone(), &namespaces.capi)
        .list(&list)
        .await?;
    let mapi_sets = Api::<mapi::MachineSet>::namespaced(client.clone(), &namespaces.mapi)
        .list(&list)
        .await?;
    let capi_sets = Api::<capi::MachineSet>::namespaced(client.clone(), &namespaces.capi)
        .list(&list)
        .await?;
    let mut rows = pairs("MachineSet", mapi_sets.items, capi_sets.items, |m| {
        m.spec.authoritative_api.as_ref().map(ToString::to_string)
    });
    rows.extend(pairs("Machine", mapi_machines.items, capi_machines.items, |m| {
        m.spec.authoritative_api.as_ref().map(ToString::to_string)
    }));
    Ok(rows)
}

fn pairs<M: MapiObject, C: Resource>(
    kind: &'static str,
    mapi: Vec<M>,
    capi: Vec<C>,
    requested: impl Fn(&M) -> Option<String>,
) -> Vec<Row> {
    let mut by_name: BTreeMap<String, (Option<M>, Option<i64>)> = BTreeMap::new();
    for object in mapi {
        let name = object.name_any();
        by_name.entry(name).or_default().0 = Some(object);
    }
    for object in capi {
        by_name.entry(object.name_any()).or_default().1 = Some(object.meta().generation.unwrap_or_default());
    }
    by_name
        .into_iter()
        .map(|(name, (mapi, capi))| {
            Row::of(
                kind,
                &name,
                mapi.as_ref().and_then(&requested),
                mapi.as_ref(),
                capi,
            )
        })
        .collect()
}

/// Runs `controllers status`: 0 when printed, 2 when the cluster cannot be read (the
/// message names the API server and what to do).
pub async fn run(args: &StatusArgs, out: &mut impl Write, err: &mut impl Write) -> u8 {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(error) => {
            let _ = writeln!(err, "controllers status: {error}");
            return 2;
        }
    };
    let gate = feature_gate::read_once(&connection.client, args.release_version.as_deref()).await;
    match rows(&connection.client, &args.namespaces.namespaces()).await {
        Ok(rows) => {
            let verdict = if gate.enabled { "enabled" } else { "disabled" };
            let _ = writeln!(
                out,
                "{} feature gate: {verdict}: {}",
                feature_gate::GATE,
                gate.reason
            );
            let _ = out.write_all(render(&rows).as_bytes());
            0
        }
        Err(error) => {
            let _ = writeln!(err, "controllers status: {}", connection.explain(&error));
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use sync_core::api::mapi::Condition;
    use sync_core::api::{AuthoritativeApi, SyncStatus};

    use super::*;
    use sync_core::toolkit::status::SYNCHRONIZED;

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            ..Condition::default()
        }
    }

    #[test]
    fn a_row_shows_authority_sync_generations_step_and_error() {
        let mut machine = mapi::Machine::default();
        machine.metadata.generation = Some(3);
        machine.status = Some(mapi::MachineStatus {
            sync: SyncStatus {
                authoritative_api: Some(AuthoritativeApi::Migrating),
                synchronized_generation: Some(3),
                conditions: Some(vec![
                    condition(SYNCHRONIZED, "True", "ResourceSynchronized", ""),
                    condition(
                        MIGRATION_CONDITION,
                        "False",
                        "PauseTimedOut",
                        "MachineAPI never paused",
                    ),
                ]),
                ..SyncStatus::default()
            },
            ..Default::default()
        });
        let row = Row::of(
            "Machine",
            "w-1",
            Some("ClusterAPI".into()),
            Some(&machine),
            Some(2),
        );
        let table = render(&[row]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2);
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cells[..7],
            [
                "Machine",
                "w-1",
                "ClusterAPI",
                "Migrating",
                "True",
                "3/2/3",
                "Stalled:PauseTimedOut"
            ]
        );
        assert!(lines[1].ends_with("MachineAPI never paused"), "{table}");
        assert!(lines[0].starts_with("KIND"));
    }

    #[test]
    fn a_capi_only_pair_has_dashes() {
        let row = Row::of::<mapi::Machine>("Machine", "c-1", None, None, Some(1));
        assert_eq!(row.current, "-");
        assert_eq!(row.synchronized, "-");
        assert_eq!(row.generations, (None, Some(1), None));
        assert_eq!(row.migration, "-");
    }
}
