//! What a hook gets besides the objects: a client, the namespaces, an event recorder and
//! the controller's caches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::api::DynamicObject;
use kube::runtime::events::{Event, EventType};
use serde::de::DeserializeOwned;

use crate::runtime::events::Recorder;

use crate::hooks::SyncObjects;
use crate::pair::SyncPair;
use crate::runtime::infra::{ControllerHandle, InfraTracker, ResolveError};
use crate::runtime::lenient::Malformed;
use crate::runtime::store::Store;

/// The two namespaces a pair lives in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespaces {
    /// Where the Machine API objects are (`openshift-machine-api`).
    pub mapi: String,
    /// Where the Cluster API objects are (`openshift-cluster-api`).
    pub capi: String,
}

impl Default for Namespaces {
    fn default() -> Self {
        Self {
            mapi: "openshift-machine-api".into(),
            capi: "openshift-cluster-api".into(),
        }
    }
}

/// The objects of each side that do not decode as their Rust type, by name.
#[derive(Clone, Debug, Default)]
pub struct MalformedObjects {
    /// MAPI objects.
    pub mapi: Arc<Mutex<HashMap<String, Malformed>>>,
    /// CAPI objects.
    pub capi: Arc<Mutex<HashMap<String, Malformed>>>,
}

impl MalformedObjects {
    /// Records (`Some`) or clears (`None`) the malformed state of a name on one side.
    pub(crate) fn set(side: &Mutex<HashMap<String, Malformed>>, name: &str, malformed: Option<&Malformed>) {
        let mut side = side.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match malformed {
            Some(malformed) => {
                side.insert(name.to_owned(), malformed.clone());
            }
            None => {
                side.remove(name);
            }
        }
    }

    /// The malformed object of a name on one side, if it is malformed.
    pub fn get(side: &Mutex<HashMap<String, Malformed>>, name: &str) -> Option<Malformed> {
        side.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
    }
}

/// Read access to a controller's reflector caches.
pub struct Caches<P: SyncPair> {
    /// MAPI objects in the MAPI namespace.
    pub mapi: Store<P::Mapi>,
    /// CAPI objects in the CAPI namespace.
    pub capi: Store<P::Capi>,
    /// MAPI owner mirrors (`P::OwnerMirror`) in the MAPI namespace, when the pair's
    /// CAPI-only policy needs them.
    pub owner_mirrors: Option<Store<P::OwnerMirror>>,
    /// Objects that exist but do not decode (kept out of the stores).
    pub malformed: MalformedObjects,
}

impl<P: SyncPair> Clone for Caches<P> {
    fn clone(&self) -> Self {
        Self {
            mapi: self.mapi.clone(),
            capi: self.capi.clone(),
            owner_mirrors: self.owner_mirrors.clone(),
            malformed: self.malformed.clone(),
        }
    }
}

impl<P: SyncPair> Caches<P> {
    /// The cached MAPI object `name`, in the MAPI namespace.
    pub fn mapi(&self, namespaces: &Namespaces, name: &str) -> Option<Arc<P::Mapi>> {
        self.mapi.get_named(Some(&namespaces.mapi), name)
    }

    /// The fields `V` declares of the cached MAPI object `name` ([`Store::glance`]).
    pub fn mapi_glance<V: DeserializeOwned>(&self, namespaces: &Namespaces, name: &str) -> Option<V> {
        self.mapi.glance(Some(&namespaces.mapi), name)
    }

    /// The cached CAPI object `name`, in the CAPI namespace.
    pub fn capi(&self, namespaces: &Namespaces, name: &str) -> Option<Arc<P::Capi>> {
        self.capi.get_named(Some(&namespaces.capi), name)
    }

    /// Whether the MAPI owner mirror `name` exists in the MAPI namespace (looked up, not
    /// decoded: only its presence matters).
    pub fn owner_mirrored(&self, namespaces: &Namespaces, name: &str) -> bool {
        self.owner_mirrors
            .as_ref()
            .is_some_and(|store| store.contains(Some(&namespaces.mapi), name))
    }
}

/// Everything a hook may use besides the objects themselves.
pub struct SyncContext<P: SyncPair> {
    /// The controller's name: its pair's, or a follower's own
    /// ([`crate::SyncController::follower`]).
    pub controller: &'static str,
    /// A client with the controller's identity.
    pub client: Client,
    /// The two namespaces.
    pub namespaces: Namespaces,
    /// Publishes Kubernetes Events as this controller.
    pub recorder: Recorder,
    /// The controller's caches.
    pub caches: Caches<P>,
    /// The shared infrastructure watches, when the controller uses them.
    pub infra: Option<InfraTracker>,
    /// This controller's registration with them: each CAPI object's reference, known
    /// without decoding the object.
    pub infra_refs: Option<ControllerHandle>,
}

impl<P: SyncPair> SyncContext<P> {
    /// The whole infrastructure object the pair references: from the cache when it can
    /// tell (the one fetched with the pair, else a fresh look), from the API server when
    /// it cannot (kind not listed yet, metadata-only cache). `Ok(None)`: no reference, or
    /// no such object.
    pub async fn infra_object(
        &self,
        objects: &SyncObjects<P>,
    ) -> Result<Option<Arc<DynamicObject>>, ResolveError> {
        let (Some(tracker), Some(reference)) = (&self.infra, objects.infra_ref()) else {
            return Ok(None);
        };
        if let Some(object) = objects.infra.as_ref().filter(|o| o.is_whole()) {
            return Ok(Some(Arc::new(object.to_dynamic())));
        }
        tracker.get(reference).await
    }

    /// Publishes a Warning Event about `object`; a failure to publish is logged, not
    /// returned (an Event is best effort and must never fail a reconcile).
    pub async fn warn(&self, object: &ObjectReference, reason: &str, note: String) {
        self.publish(object, EventType::Warning, reason, note).await;
    }

    /// Publishes a Normal Event about `object`, best effort like [`Self::warn`].
    pub async fn inform(&self, object: &ObjectReference, reason: &str, note: String) {
        self.publish(object, EventType::Normal, reason, note).await;
    }

    async fn publish(&self, object: &ObjectReference, type_: EventType, reason: &str, note: String) {
        self.record(object, type_, reason, "Reconcile", note).await;
    }

    /// Publishes an Event with its own `action`, best effort like [`Self::warn`]. Events
    /// of one object with the same type, reason, action and note form a series (a count
    /// and a last timestamp, as client-go's recorder keeps them).
    pub async fn record(
        &self,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        self.record_in_series(object, type_, reason, action, note, "")
            .await;
    }

    /// [`Self::record`] in a named `series`: the same text in another series is an Event
    /// of its own (each migration of an object tells its own story).
    pub async fn record_in_series(
        &self,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
        series: &str,
    ) {
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(note),
            action: action.to_owned(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish_in_series(&event, object, series).await {
            tracing::warn!(controller = self.controller, %error, reason, "failed to publish event");
        }
    }
}
