//! Migration: handing authority over a pair from one API to the other, as a pure step
//! machine (`docs/design.md` §9), and the hooks a migration controller implements.
//!
//! A migration controller runs on the same engine as the sync ([`crate::SyncController::run_migration`])
//! but is not routed by the decision table: its one hook sees every name whose MAPI
//! object exists, `Migrating` included. It observes the pair, asks [`plan`] for the next
//! step, performs it, and returns; the watch event of its write (or of the other
//! controllers' reaction) brings the next step. Nothing is kept in memory between steps:
//! a restarted operator resumes from what the objects say.
//!
//! | the pair says | [`Step`] |
//! |---|---|
//! | no request (`spec.authoritativeAPI` unset), or request = `status.authoritativeAPI`, authoritative side running | [`Step::Idle`] |
//! | request = status, but the authoritative CAPI side still carries the pause annotation | [`Step::Unpause`] (repair: never no authority) |
//! | `status.authoritativeAPI` unset | [`Step::Initialize`]: copy the request |
//! | a request, the mirror not yet `Synchronized=True` at the source's generation | [`Step::WaitForSync`] (checked **before** `Migrating`, or the sync would stop and never catch up) |
//! | a request, in sync | [`Step::Begin`]: `status.authoritativeAPI: Migrating` |
//! | `Migrating`, the side that is not the target not asked to pause | [`Step::Pause`] |
//! | … asked, its `Paused` condition not `True` | [`Step::WaitForPaused`] |
//! | … paused, the target side still asked to pause | [`Step::Unpause`] |
//! | … the target running | [`Step::Complete`]: the final status write, last |
//!
//! The target of a `Migrating` pair is always the **current** request, so changing
//! `spec.authoritativeAPI` back during a migration rolls it back through the same steps:
//! whatever side was unpaused is paused again and confirmed paused before the previous
//! authority resumes. `status.synchronizedAPI` (written by the sync with every
//! `Synchronized=True`) records the side the mirror was last in sync with: a migration
//! whose target is that side is a rollback ([`Step::Complete::rolled_back`]). With no
//! request at all while `Migrating`, the pair returns to that side.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::jiff;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::api::AuthoritativeApi;
use crate::hooks::context::SyncContext;
use crate::hooks::{HookResult, SyncObjects};
use crate::pair::SyncPair;

/// One side of a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The Machine API object.
    Mapi,
    /// The Cluster API object (and its infrastructure object).
    Capi,
}

impl Side {
    /// The side an authority value names (`None` for `Migrating` or unknown values).
    pub fn of(api: &AuthoritativeApi) -> Option<Self> {
        match api {
            AuthoritativeApi::MachineApi => Some(Self::Mapi),
            AuthoritativeApi::ClusterApi => Some(Self::Capi),
            _ => None,
        }
    }

    /// The authority value of this side.
    pub fn api(self) -> AuthoritativeApi {
        match self {
            Self::Mapi => AuthoritativeApi::MachineApi,
            Self::Capi => AuthoritativeApi::ClusterApi,
        }
    }

    /// The other side.
    pub fn other(self) -> Self {
        match self {
            Self::Mapi => Self::Capi,
            Self::Capi => Self::Mapi,
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.api().as_str())
    }
}

/// How one side's controllers are paused, as observed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SideState {
    /// `Some` when the side is paused by an annotation (Cluster API's
    /// `cluster.x-k8s.io/paused`, on the object and its infrastructure object) that the
    /// migration sets and removes; `None` when the side pauses itself from
    /// `status.authoritativeAPI` (the Machine API controllers).
    pub pause_annotation: Option<Annotated>,
    /// The side's controller reports `Paused=True`.
    pub paused: bool,
}

/// Which of a side's objects carry its pause annotation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotated {
    /// Every one of them.
    pub all: bool,
    /// At least one.
    pub any: bool,
}

impl Annotated {
    /// All or none.
    pub const fn uniform(annotated: bool) -> Self {
        Self {
            all: annotated,
            any: annotated,
        }
    }
}

/// What a migration controller observed of one pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// `spec.authoritativeAPI` of the MAPI object: the request.
    pub requested: Option<AuthoritativeApi>,
    /// `status.authoritativeAPI`.
    pub current: Option<AuthoritativeApi>,
    /// `status.synchronizedAPI`: the side the mirror was last in sync with.
    pub synchronized_api: Option<AuthoritativeApi>,
    /// The mirror exists and is `Synchronized=True` at the authoritative object's
    /// current generation (and from it, when `synchronizedAPI` is recorded).
    pub in_sync: bool,
    /// The MAPI side.
    pub mapi: SideState,
    /// The CAPI side (`None`: there is no CAPI object).
    pub capi: Option<SideState>,
}

/// The next step of a pair's migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do.
    Idle,
    /// `status.authoritativeAPI` is unset: copy the request into it.
    Initialize(AuthoritativeApi),
    /// The request is not a value this build knows (it is reported, not acted on).
    Unsupported(String),
    /// Requested, but the mirror is not in sync with the authoritative side yet.
    WaitForSync {
        /// The requested side.
        to: Side,
    },
    /// Write `status.authoritativeAPI: Migrating`.
    Begin {
        /// The side in authority now.
        from: Side,
        /// The requested side.
        to: Side,
    },
    /// Ask this side to pause (set its pause annotation).
    Pause(Side),
    /// Wait for this side's `Paused=True`.
    WaitForPaused(Side),
    /// Lift this side's pause annotation.
    Unpause(Side),
    /// The final write: `status.authoritativeAPI` = the target, sync state reset.
    Complete {
        /// The new authority.
        to: Side,
        /// The target is the side the mirror was last in sync with
        /// (`status.synchronizedAPI`): the migration was cancelled and rolled back.
        rolled_back: bool,
    },
}

impl Step {
    /// A short machine-readable name of the step (condition reasons, `controllers status`).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Idle => "Idle",
            Self::Initialize(_) => "Initializing",
            Self::Unsupported(_) => "UnsupportedAuthoritativeAPI",
            Self::WaitForSync { .. } => "WaitingForSynchronization",
            Self::Begin { .. } => "Migrating",
            Self::Pause(_) => "Pausing",
            Self::WaitForPaused(_) => "WaitingForPaused",
            Self::Unpause(_) => "Unpausing",
            Self::Complete { .. } => "Completing",
        }
    }

    /// Whether the step waits on another controller (and so can time out).
    pub fn is_wait(&self) -> bool {
        matches!(self, Self::WaitForSync { .. } | Self::WaitForPaused(_))
    }
}

/// The next step for what was observed.
pub fn plan(observed: &Observed) -> Step {
    let requested = observed.requested.as_ref();
    let requested_side = requested.and_then(Side::of);
    if let Some(AuthoritativeApi::Unknown(value)) = requested
        && !value.is_empty()
    {
        return Step::Unsupported(value.clone());
    }
    match observed.current.as_ref() {
        None => match requested_side {
            Some(side) => Step::Initialize(side.api()),
            None => Step::Idle,
        },
        Some(AuthoritativeApi::Migrating) => {
            let last = observed.synchronized_api.as_ref().and_then(Side::of);
            // No usable request while Migrating: go back to where the mirror was in sync.
            let Some(to) = requested_side.or(last) else {
                return Step::Idle;
            };
            let from = to.other();
            if let Some(step) = pause_then_unpause(observed, from, to) {
                return step;
            }
            Step::Complete {
                to,
                rolled_back: last == Some(to),
            }
        }
        Some(current) => {
            let Some(from) = Side::of(current) else {
                // An unknown status value: the sync reports it; a request replaces it only
                // through Migrating, which the CRD forbids from here.
                return Step::Idle;
            };
            match requested_side {
                Some(to) if to != from => {
                    if observed.in_sync {
                        Step::Begin { from, to }
                    } else {
                        Step::WaitForSync { to }
                    }
                }
                // Settled: the authoritative side must not stay paused by an annotation.
                _ if side(observed, from)
                    .and_then(|s| s.pause_annotation)
                    .is_some_and(|a| a.any) =>
                {
                    Step::Unpause(from)
                }
                _ => Step::Idle,
            }
        }
    }
}

/// Pause `from` and see it paused, then unpause `to`; `None` once both are done.
fn pause_then_unpause(observed: &Observed, from: Side, to: Side) -> Option<Step> {
    if let Some(state) = side(observed, from) {
        if state.pause_annotation.is_some_and(|a| !a.all) {
            return Some(Step::Pause(from));
        }
        if !state.paused {
            return Some(Step::WaitForPaused(from));
        }
    }
    // A side that does not exist has nothing to pause (a CAPI object not created yet).
    if side(observed, to)
        .and_then(|s| s.pause_annotation)
        .is_some_and(|a| a.any)
    {
        return Some(Step::Unpause(to));
    }
    None
}

/// Whether [`plan`] is [`Step::Idle`] whatever the rest of the pair says, told from the
/// MAPI object's request (`requested`) and authority (`current`) alone, for a pair whose
/// Machine API side pauses itself (its [`SideState`] carries no pause annotation): settled
/// under the Machine API, neither requested nor initialized, or under an authority this
/// build does not know. A pair settled under the Cluster API is not: its side may still
/// carry a pause annotation to lift.
pub fn settled(requested: Option<&AuthoritativeApi>, current: Option<&AuthoritativeApi>) -> bool {
    if let Some(AuthoritativeApi::Unknown(value)) = requested
        && !value.is_empty()
    {
        return false;
    }
    let requested_side = requested.and_then(Side::of);
    match current {
        None => requested_side.is_none(),
        Some(AuthoritativeApi::Migrating) => false,
        Some(current) => match Side::of(current) {
            None => true,
            Some(Side::Mapi) => requested_side != Some(Side::Capi),
            Some(Side::Capi) => false,
        },
    }
}

fn side(observed: &Observed, side: Side) -> Option<&SideState> {
    match side {
        Side::Mapi => Some(&observed.mapi),
        Side::Capi => observed.capi.as_ref(),
    }
}

/// A MAPI object's request and authority (`spec.authoritativeAPI`,
/// `status.authoritativeAPI`), all that [`settled`] reads, decoded alone: the
/// [`MigrationHooks::Glance`] of a migration controller that asks [`settled`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Authorities {
    #[serde(default)]
    spec: Option<Authority>,
    #[serde(default)]
    status: Option<Authority>,
}

/// The `authoritativeAPI` field of a MAPI Machine's or MachineSet's `spec` or `status`,
/// alone (in [`Authorities`], and as the projected `spec` of a [`crate::api::Partial`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Authority {
    /// `authoritativeAPI`.
    #[serde(default, rename = "authoritativeAPI")]
    pub authoritative_api: Option<AuthoritativeApi>,
}

impl Authorities {
    /// `spec.authoritativeAPI`: the API the user asks for.
    pub fn requested(&self) -> Option<&AuthoritativeApi> {
        self.spec.as_ref()?.authoritative_api.as_ref()
    }

    /// `status.authoritativeAPI`: the API in charge.
    pub fn current(&self) -> Option<&AuthoritativeApi> {
        self.status.as_ref()?.authoritative_api.as_ref()
    }

    /// Whether the pair is [`settled`].
    pub fn settled(&self) -> bool {
        settled(self.requested(), self.current())
    }
}

/// How long a waiting step may last before the migration is reported stalled.
///
/// `since` is when the wait began (persisted in the object, so that a restart does not
/// reset the clock). `Ok(remaining)`: still in time, check again after `remaining`;
/// `Err(waited)`: stalled.
pub fn deadline(
    since: Option<jiff::Timestamp>,
    now: jiff::Timestamp,
    timeout: Duration,
) -> Result<Duration, Duration> {
    let Some(since) = since else {
        return Ok(timeout);
    };
    let waited = now.duration_since(since).try_into().unwrap_or(Duration::ZERO);
    match timeout.checked_sub(waited) {
        Some(remaining) if !remaining.is_zero() => Ok(remaining),
        _ => Err(waited),
    }
}

/// The business logic of a migration controller for pair `P`.
///
/// Run with [`crate::SyncController::run_migration`]: the hook is called for every name
/// whose MAPI object exists, whatever its `status.authoritativeAPI`, on changes to either
/// side or the referenced infrastructure object.
pub trait MigrationHooks<P: SyncPair>: Send + Sync + 'static {
    /// The fields of the MAPI object that [`Self::settled`] reads, decoded from the cache
    /// without the rest ([`crate::Store::glance`]; [`Authorities`] for [`settled`]):
    /// decoding every whole MAPI object to ask took a twentieth of the shipped
    /// operator's restart. A hook that keeps the default `settled` names
    /// [`serde::de::IgnoredAny`].
    type Glance: DeserializeOwned + Send;

    /// Whether the MAPI object alone shows that the pair takes no step (most names, most
    /// of the time; see [`settled`]). The engine then reads nothing else of the pair and
    /// calls no hook ([`SkipReason::Settled`](crate::SkipReason::Settled)): decoding the
    /// mirror and the infrastructure object of every settled name took an eighth of the
    /// shipped operator's CPU at a restart, and is paid again at every change. `false`
    /// (the default) hands every name to [`Self::reconcile_migration`] with the whole pair.
    fn settled(&self, _glance: &Self::Glance) -> bool {
        false
    }

    /// Observe the pair, take its next step.
    fn reconcile_migration(
        &self,
        objects: &SyncObjects<P>,
        ctx: &SyncContext<P>,
    ) -> impl Future<Output = HookResult> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;
    use AuthoritativeApi::{ClusterApi, MachineApi, Migrating};

    /// A Machine-like pair: MAPI pauses itself, CAPI by annotation.
    fn pair(requested: Option<AuthoritativeApi>, current: Option<AuthoritativeApi>) -> Observed {
        Observed {
            requested,
            current,
            synchronized_api: None,
            in_sync: true,
            mapi: SideState {
                pause_annotation: None,
                paused: false,
            },
            capi: Some(SideState {
                pause_annotation: Some(Annotated::uniform(true)),
                paused: true,
            }),
        }
    }

    fn capi(observed: &mut Observed, annotated: bool, paused: bool) {
        observed.capi = Some(SideState {
            pause_annotation: Some(Annotated::uniform(annotated)),
            paused,
        });
    }

    #[test]
    fn no_request_or_the_same_is_idle() {
        assert_eq!(plan(&pair(None, Some(MachineApi))), Step::Idle);
        assert_eq!(plan(&pair(Some(MachineApi), Some(MachineApi))), Step::Idle);
        assert_eq!(plan(&pair(None, None)), Step::Idle);
    }

    /// Every CAPI side a pair can show, and every other fact the MAPI status holds.
    fn every_rest(requested: &Option<AuthoritativeApi>, current: &Option<AuthoritativeApi>) -> Vec<Observed> {
        let annotations = [
            None,
            Some(Annotated::uniform(false)),
            Some(Annotated::uniform(true)),
            Some(Annotated {
                all: false,
                any: true,
            }),
        ];
        let mut capi_sides = vec![None];
        for pause_annotation in annotations {
            for paused in [false, true] {
                capi_sides.push(Some(SideState {
                    pause_annotation,
                    paused,
                }));
            }
        }
        let mut every = Vec::new();
        for capi in capi_sides {
            for synchronized_api in [None, Some(MachineApi), Some(ClusterApi)] {
                for (in_sync, mapi_paused) in [(false, false), (false, true), (true, false), (true, true)] {
                    every.push(Observed {
                        requested: requested.clone(),
                        current: current.clone(),
                        synchronized_api: synchronized_api.clone(),
                        in_sync,
                        mapi: SideState {
                            pause_annotation: None,
                            paused: mapi_paused,
                        },
                        capi,
                    });
                }
            }
        }
        every
    }

    /// `settled` holds exactly where the plan is Idle for every CAPI side and status fact.
    #[test]
    fn settled_is_idle_whatever_the_rest_of_the_pair_says() {
        let values = || {
            [
                None,
                Some(MachineApi),
                Some(ClusterApi),
                Some(Migrating),
                Some(AuthoritativeApi::Unknown(String::new())),
                Some(AuthoritativeApi::Unknown("Other".into())),
            ]
        };
        let mut settled_pairs = Vec::new();
        for requested in values() {
            for current in values() {
                let always_idle = every_rest(&requested, &current)
                    .iter()
                    .all(|observed| plan(observed) == Step::Idle);
                let claimed = settled(requested.as_ref(), current.as_ref());
                assert_eq!(
                    claimed, always_idle,
                    "requested {requested:?}, current {current:?}"
                );
                if claimed {
                    settled_pairs.push((requested.clone(), current.clone()));
                }
            }
        }
        assert!(settled_pairs.contains(&(None, Some(MachineApi))));
        assert!(settled_pairs.contains(&(Some(MachineApi), Some(MachineApi))));
        assert!(!settled_pairs.contains(&(Some(ClusterApi), Some(ClusterApi))));
    }

    #[test]
    fn unset_status_copies_the_request() {
        assert_eq!(plan(&pair(Some(ClusterApi), None)), Step::Initialize(ClusterApi));
    }

    #[test]
    fn an_unknown_request_is_unsupported() {
        let observed = pair(Some(AuthoritativeApi::Unknown("Other".into())), Some(MachineApi));
        assert_eq!(plan(&observed), Step::Unsupported("Other".into()));
    }

    #[test]
    fn a_request_waits_for_the_sync_before_migrating() {
        let mut observed = pair(Some(ClusterApi), Some(MachineApi));
        observed.in_sync = false;
        assert_eq!(plan(&observed), Step::WaitForSync { to: Side::Capi });
        observed.in_sync = true;
        assert_eq!(
            plan(&observed),
            Step::Begin {
                from: Side::Mapi,
                to: Side::Capi
            }
        );
    }

    #[test]
    fn to_cluster_api_waits_for_the_machine_api_to_pause_then_unpauses_capi() {
        let mut observed = pair(Some(ClusterApi), Some(Migrating));
        observed.synchronized_api = Some(MachineApi);
        assert_eq!(plan(&observed), Step::WaitForPaused(Side::Mapi));
        observed.mapi.paused = true;
        assert_eq!(plan(&observed), Step::Unpause(Side::Capi));
        capi(&mut observed, false, false);
        assert_eq!(
            plan(&observed),
            Step::Complete {
                to: Side::Capi,
                rolled_back: false
            }
        );
    }

    #[test]
    fn to_machine_api_pauses_capi_and_waits_for_it() {
        let mut observed = pair(Some(MachineApi), Some(Migrating));
        observed.synchronized_api = Some(ClusterApi);
        observed.mapi.paused = true;
        capi(&mut observed, false, false);
        assert_eq!(plan(&observed), Step::Pause(Side::Capi));
        capi(&mut observed, true, false);
        assert_eq!(plan(&observed), Step::WaitForPaused(Side::Capi));
        capi(&mut observed, true, true);
        // The Machine API side resumes with the final write itself.
        assert_eq!(
            plan(&observed),
            Step::Complete {
                to: Side::Mapi,
                rolled_back: false
            }
        );
    }

    #[test]
    fn changing_the_request_back_rolls_back_through_the_same_steps() {
        // Was going MachineAPI → ClusterAPI and had already unpaused CAPI.
        let mut observed = pair(Some(MachineApi), Some(Migrating));
        observed.synchronized_api = Some(MachineApi);
        observed.mapi.paused = true;
        capi(&mut observed, false, false);
        assert_eq!(plan(&observed), Step::Pause(Side::Capi));
        capi(&mut observed, true, false);
        assert_eq!(plan(&observed), Step::WaitForPaused(Side::Capi));
        capi(&mut observed, true, true);
        assert_eq!(
            plan(&observed),
            Step::Complete {
                to: Side::Mapi,
                rolled_back: true
            }
        );
    }

    #[test]
    fn a_half_paused_side_is_paused_fully_and_a_half_unpaused_one_fully_unpaused() {
        let half = Annotated {
            all: false,
            any: true,
        };
        let mut observed = pair(Some(MachineApi), Some(Migrating));
        observed.mapi.paused = true;
        observed.capi = Some(SideState {
            pause_annotation: Some(half),
            paused: false,
        });
        assert_eq!(plan(&observed), Step::Pause(Side::Capi));
        let mut observed = pair(Some(ClusterApi), Some(Migrating));
        observed.mapi.paused = true;
        observed.capi = Some(SideState {
            pause_annotation: Some(half),
            paused: true,
        });
        assert_eq!(plan(&observed), Step::Unpause(Side::Capi));
    }

    #[test]
    fn no_request_while_migrating_returns_to_the_synchronized_api() {
        let mut observed = pair(None, Some(Migrating));
        observed.synchronized_api = Some(MachineApi);
        observed.mapi.paused = true;
        assert_eq!(
            plan(&observed),
            Step::Complete {
                to: Side::Mapi,
                rolled_back: true
            }
        );
        observed.synchronized_api = None;
        assert_eq!(plan(&observed), Step::Idle);
    }

    #[test]
    fn a_missing_capi_side_has_nothing_to_pause() {
        let mut observed = pair(Some(MachineApi), Some(Migrating));
        observed.capi = None;
        observed.mapi.paused = true;
        assert_eq!(
            plan(&observed),
            Step::Complete {
                to: Side::Mapi,
                rolled_back: false
            }
        );
    }

    #[test]
    fn a_settled_cluster_api_pair_never_stays_paused() {
        let observed = pair(Some(ClusterApi), Some(ClusterApi));
        assert_eq!(plan(&observed), Step::Unpause(Side::Capi));
        // A Machine API pair's CAPI mirror is paused on purpose.
        assert_eq!(plan(&pair(Some(MachineApi), Some(MachineApi))), Step::Idle);
    }

    #[test]
    fn waits_time_out_from_when_they_began() {
        let timeout = Duration::from_secs(60);
        let start = jiff::Timestamp::UNIX_EPOCH;
        let later = |s| start + jiff::SignedDuration::from_secs(s);
        assert_eq!(deadline(None, later(1000), timeout), Ok(timeout));
        assert_eq!(
            deadline(Some(start), later(20), timeout),
            Ok(Duration::from_secs(40))
        );
        assert_eq!(
            deadline(Some(start), later(60), timeout),
            Err(Duration::from_secs(60))
        );
        assert_eq!(
            deadline(Some(start), later(90), timeout),
            Err(Duration::from_secs(90))
        );
        // A clock behind the start: still in time.
        assert_eq!(deadline(Some(later(10)), start, timeout), Ok(timeout));
    }
}
