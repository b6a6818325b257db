//! The migration protocol, generic over the kind: observe, plan, take one step.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as V1Condition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use serde_json::json;
use sync_core::api::AuthoritativeApi;
use sync_core::hooks::{Action, HookResult, SyncObjects};
use sync_core::migration::{self, Annotated, MigrationHooks, Observed, Side, SideState, Step};
use sync_core::toolkit::authority;
use sync_core::toolkit::condition::{self, Report};
use sync_core::toolkit::pause::{self, PAUSED_ANNOTATION};
use sync_core::toolkit::status::{self, Status};
use sync_core::{HookError, MapiObject, SyncContext, SyncPair};

/// The MAPI condition that shows a migration: `Unknown` in flight (the reason is the
/// step), `False` stalled, `True` finished (`Migrated`, `RolledBack`).
pub const MIGRATION_CONDITION: &str = "Migration";
/// The Machine API controllers' condition while they honour a pause.
const PAUSED: &str = "Paused";
/// Reasons of a stalled migration.
const PAUSE_TIMED_OUT: &str = "PauseTimedOut";
const SYNC_TIMED_OUT: &str = "SynchronizationTimedOut";
/// How often a stalled migration is looked at again even without a change.
const STALLED_RECHECK: Duration = Duration::from_secs(30);

/// How the migration controllers run.
#[derive(Clone, Debug)]
pub struct MigrationConfig {
    /// How long a migration may wait on another controller (the sync, a pause) before it
    /// is reported stalled (`Migration=False`, a Warning Event). It keeps waiting.
    pub stall_timeout: Duration,
}

impl Default for MigrationConfig {
    fn default() -> Self {
        Self {
            stall_timeout: Duration::from_secs(600),
        }
    }
}

/// How a migration ended, for metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationResult {
    /// The requested API is authoritative.
    Completed,
    /// The request was changed back; the previous API is authoritative again.
    RolledBack,
    /// It waited longer than the stall timeout (it goes on waiting).
    Stalled,
}

impl MigrationResult {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::RolledBack => "rolled_back",
            Self::Stalled => "stalled",
        }
    }
}

/// Receives migration results (the operator's metrics).
pub trait MigrationMetrics: Send + Sync + 'static {
    /// A migration of `controller` ended (or stalled) after `duration` (`None`: unknown).
    fn migration(&self, controller: &'static str, result: MigrationResult, duration: Option<Duration>);
}

/// The field manager of the `Migration` condition of `controller`.
pub fn condition_field_manager(controller: &str) -> String {
    format!("{controller}-MigrationCondition")
}

/// What differs between the kinds a migration controller hands over. The migration
/// controller is a follower of the pair's sync controller, on its caches.
pub trait MigratingPair: SyncPair {
    /// The migration controller's name: its logs, Events and reconcile metrics
    /// (`machine-migration`).
    const MIGRATION: &'static str;
    /// The controller's name in field managers and migration metrics
    /// (`MachineMigrationController`).
    const CONTROLLER: &'static str;
    /// `spec.authoritativeAPI` of the MAPI object.
    fn requested(mapi: &Self::Mapi) -> Option<&AuthoritativeApi>;
    /// The v1beta2 conditions of the CAPI object.
    fn capi_conditions(capi: &Self::Capi) -> &[V1Condition];
    /// Whether the infrastructure object has a controller of its own that reports
    /// `Paused` (an InfraMachine: its provider), so that pausing the Cluster API side
    /// waits for it too, as upstream does; a template has none.
    const INFRA_REPORTS_PAUSED: bool;
}

/// A migration controller's hooks for pair `K`.
pub struct Migrator<K> {
    config: MigrationConfig,
    metrics: Option<Arc<dyn MigrationMetrics>>,
    pair: PhantomData<fn() -> K>,
}

impl<K> Clone for Migrator<K> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            metrics: self.metrics.clone(),
            pair: PhantomData,
        }
    }
}

impl<K> Migrator<K> {
    /// Hooks with `config`.
    pub fn new(config: MigrationConfig) -> Self {
        Self {
            config,
            metrics: None,
            pair: PhantomData,
        }
    }

    /// Reports results to `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<dyn MigrationMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

type Ctx<K> = SyncContext<K>;

impl<K> MigrationHooks<K> for Migrator<K>
where
    K: MigratingPair,
    K::Mapi: Resource<DynamicType = ()>,
{
    /// `spec.authoritativeAPI` and `status.authoritativeAPI`, where both MAPI kinds keep
    /// the request ([`MigratingPair::requested`]) and the authority.
    type Glance = migration::Authorities;

    /// Settled under the Machine API (or neither requested nor initialized): the MAPI
    /// controllers pause themselves, so no annotation on the other side needs lifting.
    fn settled(&self, glance: &migration::Authorities) -> bool {
        glance.settled()
    }

    async fn reconcile_migration(&self, objects: &SyncObjects<K>, ctx: &Ctx<K>) -> HookResult {
        let Some(mapi) = objects.mapi.as_deref() else {
            return Ok(Action::await_change());
        };
        let infra = infra_pause::<K>(ctx, objects).await?;
        let observed = observe::<K>(mapi, objects, infra);
        let step = migration::plan(&observed);
        tracing::debug!(?step, ?observed, "migration step");
        let api = Api::<K::Mapi>::namespaced(ctx.client.clone(), &ctx.namespaces.mapi);
        let on = mapi.object_ref(&());
        let report = Reporter {
            api: &api,
            mapi,
            ctx,
            on: &on,
        };
        self.take(&step, &report, objects).await
    }
}

impl<K: MigratingPair> Migrator<K>
where
    K::Mapi: Resource<DynamicType = ()>,
{
    /// Takes `step`: at most one write, then its report (the `Migration` condition, an
    /// Event).
    async fn take(&self, step: &Step, report: &Reporter<'_, K>, objects: &SyncObjects<K>) -> HookResult {
        match step {
            Step::Idle => Ok(Action::await_change()),
            Step::Initialize(to) => self.initialize(report, to).await,
            Step::Unsupported(value) => self.refuse_unsupported(report, step, value).await,
            Step::WaitForSync { to } => {
                let message = format!(
                    "{to} requested; waiting for Synchronized=True at the authoritative object's current generation"
                );
                self.wait(report, step, SYNC_TIMED_OUT, message, "MigrationRequested")
                    .await
            }
            Step::Begin { from, to } => self.begin(report, step, *from, *to).await,
            Step::Pause(side) => self.pause(report, step, objects, *side).await,
            Step::WaitForPaused(side) => {
                let message = waiting_for_paused::<K>(*side);
                self.wait(report, step, PAUSE_TIMED_OUT, message, "WaitingForPaused")
                    .await
            }
            Step::Unpause(side) => self.unpause(report, step, objects, *side).await,
            Step::Complete { to, rolled_back } => self.complete(report, *to, *rolled_back).await,
        }
    }

    /// `status.authoritativeAPI` is unset: the request becomes the authority at once, as
    /// nothing ran yet to hand over from.
    async fn initialize(&self, report: &Reporter<'_, K>, to: &AuthoritativeApi) -> HookResult {
        authority::set(report.api, K::CONTROLLER, report.mapi, to).await?;
        report
            .inform(
                "AuthoritativeAPIInitialized",
                format!("status.authoritativeAPI set to the requested {to}"),
            )
            .await;
        Ok(Action::await_change())
    }

    /// A request this build does not know: reported (once), not acted on.
    async fn refuse_unsupported(&self, report: &Reporter<'_, K>, step: &Step, value: &str) -> HookResult {
        let message =
            format!("spec.authoritativeAPI {value:?} is not MachineAPI or ClusterAPI; not migrating");
        if report.condition(Status::False, step.reason(), &message).await? {
            report.warn("UnsupportedAuthoritativeAPI", message).await;
        }
        Ok(Action::await_change())
    }

    /// `status.authoritativeAPI: Migrating`: from here neither side drives until the
    /// migration completes.
    async fn begin(&self, report: &Reporter<'_, K>, step: &Step, from: Side, to: Side) -> HookResult {
        authority::set(
            report.api,
            K::CONTROLLER,
            report.mapi,
            &AuthoritativeApi::Migrating,
        )
        .await?;
        let message = format!("migrating from {from} to {to}");
        report.condition(Status::Unknown, step.reason(), &message).await?;
        report.inform("MigrationStarted", message).await;
        Ok(Action::await_change())
    }

    /// Asks `side` to pause, so that the side handing over stops writing.
    async fn pause(
        &self,
        report: &Reporter<'_, K>,
        step: &Step,
        objects: &SyncObjects<K>,
        side: Side,
    ) -> HookResult {
        set_paused::<K>(report.ctx, objects, side, true).await?;
        let message = format!("pausing {side}");
        report.condition(Status::Unknown, step.reason(), &message).await?;
        report.inform("Pausing", message).await;
        Ok(Action::await_change())
    }

    /// Lifts `side`'s pause, so that it runs again; the condition tells of it only while
    /// a migration is in flight.
    async fn unpause(
        &self,
        report: &Reporter<'_, K>,
        step: &Step,
        objects: &SyncObjects<K>,
        side: Side,
    ) -> HookResult {
        set_paused::<K>(report.ctx, objects, side, false).await?;
        let message = format!("unpausing {side}");
        if report.mapi.authoritative_api() == Some(&AuthoritativeApi::Migrating) {
            report.condition(Status::Unknown, step.reason(), &message).await?;
        }
        report.inform("Unpausing", message).await;
        Ok(Action::await_change())
    }

    /// The final write: `to` is authoritative (again, for a rollback); the result and the
    /// migration's duration go to the metrics.
    async fn complete(&self, report: &Reporter<'_, K>, to: Side, rolled_back: bool) -> HookResult {
        let (result, reason, event, message) = if rolled_back {
            (
                MigrationResult::RolledBack,
                "RolledBack",
                "MigrationRolledBack",
                format!("request changed back: {to} is authoritative again"),
            )
        } else {
            (
                MigrationResult::Completed,
                "Migrated",
                "MigrationCompleted",
                format!("{to} is authoritative"),
            )
        };
        let started = in_flight_since(report.mapi);
        // The report first: written after the final write, a stale cache could
        // take the finished pair for one whose report was lost.
        report.condition(Status::True, reason, &message).await?;
        // Last: only once the new side runs, so that a failed unpause is retried
        // (upstream #309) and never two sides drive at once.
        authority::complete(report.api, K::CONTROLLER, report.mapi, &to.api()).await?;
        let duration = started.and_then(|s| Timestamp::now().duration_since(s).try_into().ok());
        if let Some(metrics) = &self.metrics {
            metrics.migration(K::CONTROLLER, result, duration);
        }
        report.inform(event, message).await;
        Ok(Action::await_change())
    }

    /// A step that waits on another controller: in progress until the stall timeout,
    /// then stalled (reported once), rechecked on every change and now and then.
    async fn wait(
        &self,
        report: &Reporter<'_, K>,
        step: &Step,
        stall_reason: &str,
        message: String,
        event: &str,
    ) -> HookResult {
        let live = condition::find(report.mapi, MIGRATION_CONDITION);
        let already_stalled =
            live.is_some_and(|c| c.status == "False" && c.reason.as_deref() == Some(stall_reason));
        let since = in_flight_since(report.mapi);
        let deadline = if already_stalled {
            Err(Duration::ZERO)
        } else {
            migration::deadline(since, Timestamp::now(), self.config.stall_timeout)
        };
        match deadline {
            Ok(remaining) => {
                if report.condition(Status::Unknown, step.reason(), &message).await? {
                    report.inform(event, message).await;
                }
                Ok(Action::requeue(remaining))
            }
            Err(_) => {
                let message = format!(
                    "{message}: no progress within {}s (--migration-stall-timeout); change spec.authoritativeAPI back to cancel",
                    self.config.stall_timeout.as_secs()
                );
                if report.condition(Status::False, stall_reason, &message).await? {
                    // The Event's reason is the stall's: two stalls of one migration (the sync, then
                    // the pause) are two Events, not a series keeping the first note.
                    report.warn(stall_reason, message).await;
                    if let Some(metrics) = &self.metrics {
                        let waited = since.and_then(|s| Timestamp::now().duration_since(s).try_into().ok());
                        metrics.migration(K::CONTROLLER, MigrationResult::Stalled, waited);
                    }
                }
                Ok(Action::requeue(STALLED_RECHECK))
            }
        }
    }
}

/// What a wait for `side`'s pause says: on the Cluster API side the infrastructure
/// object's controller must report it too, when it has one.
fn waiting_for_paused<K: MigratingPair>(side: Side) -> String {
    match side {
        Side::Capi if K::INFRA_REPORTS_PAUSED => {
            format!("waiting for {side} to report Paused=True, on its object and its infrastructure object")
        }
        _ => format!("waiting for {side} to report Paused=True"),
    }
}

/// Where a step reports: the MAPI object and its Events.
struct Reporter<'a, K: SyncPair> {
    api: &'a Api<K::Mapi>,
    mapi: &'a K::Mapi,
    ctx: &'a Ctx<K>,
    on: &'a ObjectReference,
}

impl<K: MigratingPair> Reporter<'_, K>
where
    K::Mapi: Resource<DynamicType = ()>,
{
    /// Sets the `Migration` condition; `Ok(true)` when it changed.
    async fn condition(&self, status: Status, reason: &str, message: &str) -> Result<bool, kube::Error> {
        let report = Report {
            type_: MIGRATION_CONDITION,
            status,
            reason,
            message,
        };
        condition::apply(
            self.api,
            &condition_field_manager(K::CONTROLLER),
            self.mapi,
            &report,
        )
        .await
    }

    /// A Normal Event about the MAPI object.
    async fn inform(&self, reason: &str, note: String) {
        self.event(EventType::Normal, reason, note).await;
    }

    /// A Warning Event about the MAPI object.
    async fn warn(&self, reason: &str, note: String) {
        self.event(EventType::Warning, reason, note).await;
    }

    /// Every migration Event's action names the requested API (`MigrateToClusterAPI`),
    /// and its series is the generation that requested it: each migration, there or back,
    /// is told in Events of its own.
    async fn event(&self, type_: EventType, reason: &str, note: String) {
        let action =
            K::requested(self.mapi).map_or_else(|| "Migrate".to_owned(), |to| format!("MigrateTo{to}"));
        let series = self.mapi.meta().generation.unwrap_or_default().to_string();
        self.ctx
            .record_in_series(self.on, type_, reason, &action, note, &series)
            .await;
    }
}

/// When the migration in flight began: the `Migration` condition's transition to
/// `Unknown` (kept in the object, so a restart does not reset the clock).
fn in_flight_since<M: MapiObject>(mapi: &M) -> Option<Timestamp> {
    condition::find(mapi, MIGRATION_CONDITION)
        .filter(|c| c.status == "Unknown")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// What the migration sees of the infrastructure object's pause (`None`: no reference,
/// or no such object).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InfraPause {
    /// It carries the pause annotation.
    annotated: bool,
    /// Its controller reports `Paused=True` (always true for a kind without one,
    /// [`MigratingPair::INFRA_REPORTS_PAUSED`]).
    reported: bool,
}

/// The infrastructure object's pause. From the cache, else — its watch may not have listed
/// yet, after a restart — from the API server: a missing entry is not a missing object.
/// The `Paused` condition needs the whole object; the annotation only its metadata.
async fn infra_pause<K: MigratingPair>(
    ctx: &Ctx<K>,
    objects: &SyncObjects<K>,
) -> Result<Option<InfraPause>, HookError> {
    if objects.infra_ref().is_none() {
        return Ok(None);
    }
    if !K::INFRA_REPORTS_PAUSED
        && let Some(meta) = objects.infra.as_deref()
    {
        let annotated = has_pause_annotation(meta.metadata.annotations.as_ref());
        return Ok(Some(InfraPause {
            annotated,
            reported: true,
        }));
    }
    Ok(ctx.infra_object(objects).await?.map(|infra| InfraPause {
        annotated: has_pause_annotation(infra.metadata.annotations.as_ref()),
        reported: !K::INFRA_REPORTS_PAUSED || reports_paused(&infra.data["status"]),
    }))
}

/// Whether an infrastructure object's status says `Paused=True`: in its conditions (CAPA's
/// v1beta1 list, or the contract's v1beta2 ones), `status.v1beta2.conditions` included.
fn reports_paused(status: &serde_json::Value) -> bool {
    [&status["conditions"], &status["v1beta2"]["conditions"]]
        .into_iter()
        .filter_map(serde_json::Value::as_array)
        .flatten()
        .any(|c| c["type"] == PAUSED && c["status"] == "True")
}

fn has_pause_annotation(annotations: Option<&std::collections::BTreeMap<String, String>>) -> bool {
    annotations.is_some_and(|a| a.contains_key(PAUSED_ANNOTATION))
}

/// What the migration sees of a pair.
fn observe<K: MigratingPair>(
    mapi: &K::Mapi,
    objects: &SyncObjects<K>,
    infra: Option<InfraPause>,
) -> Observed {
    let on_infra = infra.map(|i| i.annotated);
    let sync = mapi.sync_status();
    let current = mapi.authoritative_api().cloned();
    let capi = objects.capi.as_deref();
    let source_generation = match current.as_ref().and_then(Side::of) {
        Some(Side::Mapi) => mapi.meta().generation,
        Some(Side::Capi) => capi.and_then(|c| c.meta().generation),
        None => None,
    };
    let synchronized_api = sync.and_then(|s| s.synchronized_api.clone());
    let in_sync = capi.is_some()
        && status::synchronized(mapi).is_some_and(|c| c.status == "True")
        && source_generation.is_some()
        && status::synchronized_generation(mapi) == source_generation
        && synchronized_api
            .as_ref()
            .is_none_or(|api| Some(api) == current.as_ref());
    let mapi_state = SideState {
        pause_annotation: None,
        paused: condition::find(mapi, PAUSED).is_some_and(|c| c.status == "True"),
    };
    let capi_state = capi.map(|capi| {
        let on_capi = pause::is_paused(capi);
        SideState {
            pause_annotation: Some(Annotated {
                all: on_capi && on_infra.unwrap_or(true),
                any: on_capi || on_infra.unwrap_or(false),
            }),
            paused: pause::paused_condition(K::capi_conditions(capi)) == Some(true)
                && infra.is_none_or(|i| i.reported),
        }
    });
    Observed {
        requested: K::requested(mapi).cloned(),
        current,
        synchronized_api,
        in_sync,
        mapi: mapi_state,
        capi: capi_state,
    }
}

/// Sets or lifts `cluster.x-k8s.io/paused` on the CAPI object and its infrastructure
/// object. The Machine API side needs nothing: it follows `status.authoritativeAPI`.
async fn set_paused<K: MigratingPair>(
    ctx: &Ctx<K>,
    objects: &SyncObjects<K>,
    side: Side,
    paused: bool,
) -> Result<(), HookError> {
    if side == Side::Mapi {
        return Ok(());
    }
    let value = if paused {
        json!("")
    } else {
        serde_json::Value::Null
    };
    let patch = Patch::Merge(json!({ "metadata": { "annotations": { PAUSED_ANNOTATION: value } } }));
    let params = PatchParams {
        field_manager: Some(format!("{}-Pause", K::CONTROLLER)),
        ..PatchParams::default()
    };
    if let Some(capi) = objects.capi.as_deref()
        && pause::is_paused(capi) != paused
    {
        let api = Api::<K::Capi>::namespaced(ctx.client.clone(), &ctx.namespaces.capi);
        ignore_not_found(api.patch(&capi.name_any(), &params, &patch).await)?;
    }
    if let (Some(tracker), Some(reference)) = (&ctx.infra, objects.infra_ref())
        && infra_pause::<K>(ctx, objects)
            .await?
            .is_some_and(|infra| infra.annotated != paused)
    {
        let (api, _) = tracker
            .api(&reference.group_kind(), reference.version.as_deref())
            .await?;
        ignore_not_found(api.patch(&reference.name, &params, &patch).await)?;
    }
    Ok(())
}

fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sync_core::store::{Encoding, Writer};

    use super::*;
    use crate::machine::MachineSync;
    use crate::machine_set::MachineSetSync;

    /// The glance the engine asks `settled` of, read from a cache as the engine's are
    /// (MessagePack), against what the whole object says, for every request and authority.
    fn the_glance_reads_what_the_whole_object_says<K: MigratingPair>(object: serde_json::Value)
    where
        K::Mapi: Resource<DynamicType = ()>,
    {
        let apis = [
            None,
            Some("MachineAPI"),
            Some("ClusterAPI"),
            Some("Migrating"),
            Some("Other"),
        ];
        for (requested, current) in apis.iter().flat_map(|r| apis.iter().map(move |c| (r, c))) {
            let mut object = object.clone();
            object["spec"]["authoritativeAPI"] = json!(requested);
            object["status"] = json!({"authoritativeAPI": current});
            let Ok(whole) = serde_json::from_value::<K::Mapi>(object) else {
                panic!("a {} decodes", K::NAME);
            };
            let mut writer = Writer::<K::Mapi>::new(Encoding::MessagePack);
            let store = writer.as_reader();
            writer.apply_decoded(std::sync::Arc::new(whole.clone()));
            let glance = store.glance::<migration::Authorities>(Some("openshift-machine-api"), "m");
            let Some(glance) = glance else {
                panic!("{requested:?}/{current:?}: the glance decodes");
            };
            assert_eq!(glance.requested(), K::requested(&whole), "{requested:?}");
            assert_eq!(glance.current(), whole.authoritative_api(), "{current:?}");
            assert_eq!(
                glance.settled(),
                migration::settled(K::requested(&whole), whole.authoritative_api())
            );
        }
    }

    #[test]
    fn the_settled_glance_reads_the_request_and_authority_of_both_kinds() {
        let meta = json!({"name": "m", "namespace": "openshift-machine-api", "resourceVersion": "1"});
        the_glance_reads_what_the_whole_object_says::<MachineSync>(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": meta, "spec": {"providerID": "aws:///us-east-1a/i-1"},
        }));
        the_glance_reads_what_the_whole_object_says::<MachineSetSync>(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
            "metadata": meta, "spec": {"replicas": 2},
        }));
    }

    #[test]
    fn an_infrastructure_object_reports_paused_in_either_conditions_list() {
        let paused = json!({"type": "Paused", "status": "True"});
        assert!(reports_paused(
            &json!({"conditions": [{"type": "Ready", "status": "True"}, paused]})
        ));
        assert!(reports_paused(&json!({"v1beta2": {"conditions": [paused]}})));
        assert!(!reports_paused(
            &json!({"conditions": [{"type": "Paused", "status": "False"}]})
        ));
        assert!(!reports_paused(&json!({})));
    }
}
