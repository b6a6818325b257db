//! Which user-data Secret each MAPI Machine and MachineSet names, as the sync controllers'
//! MAPI watches see them: the copier taps those watches ([`Tap`]) instead of listing and
//! watching every Machine a second time (its own list and watch were 9.7 % of the
//! operator's instructions at a restart over 10 000 pairs, and one more watch of every
//! Machine for the API server).

use futures::channel::mpsc;
use kube::ResourceExt;
use sync_core::api::mapi;
use sync_core::{SyncController, SyncPair, Touched, WatchTap};

/// One MAPI object's reference, keyed by kind and name (`None`: it names none, or is gone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reference {
    pub key: String,
    pub secret: Option<String>,
}

/// The copier's end: every reference the tapped watches saw, in order.
pub struct References(pub(super) mpsc::UnboundedReceiver<Reference>);

/// The watches' end: installed on each sync controller whose MAPI objects name Secrets.
#[derive(Clone)]
pub struct Tap(mpsc::UnboundedSender<Reference>);

impl Tap {
    /// A tap and the references it feeds: install the tap on the sync controllers, hand
    /// the references to [`super::UserDataSync::run`].
    pub fn channel() -> (Tap, References) {
        let (sender, receiver) = mpsc::unbounded();
        (Tap(sender), References(receiver))
    }

    /// `controller`, its MAPI watch tapped. Once the copier is gone (or never ran) the tap
    /// reads nothing.
    pub fn install<P>(&self, controller: SyncController<P>) -> SyncController<P>
    where
        P: SyncPair<Mapi: Referrer>,
    {
        let sender = self.0.clone();
        let tap: WatchTap<P::Mapi> = std::sync::Arc::new(move |touched: &Touched<'_, P::Mapi>| {
            if sender.is_closed() {
                return;
            }
            if let Some(reference) = reference(touched) {
                // Closed meanwhile: nothing reads references any more.
                let _ = sender.unbounded_send(reference);
            }
        });
        controller.with_mapi_tap(tap)
    }
}

/// What a change of one MAPI object says about its reference. A malformed version says
/// nothing (the last valid one's reference stands: Machines may still boot from it).
fn reference<K: Referrer>(touched: &Touched<'_, K>) -> Option<Reference> {
    let secret = match touched {
        Touched::Present(object) => referenced(object.provider_spec()),
        Touched::Gone(_) | Touched::MalformedGone(_) => None,
        Touched::Malformed(_) => return None,
    };
    Some(Reference {
        key: format!("{}/{}", K::KIND, touched.name()),
        secret,
    })
}

/// The one field of a providerSpec the copier reads.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UserDataReference {
    user_data_secret: Option<SecretName>,
}

#[derive(serde::Deserialize)]
struct SecretName {
    name: String,
}

/// The user-data Secret a MAPI providerSpec names (`userDataSecret.name`), decoded from
/// the raw text without building the whole providerSpec.
fn referenced(provider_spec: Option<&mapi::ProviderSpec>) -> Option<String> {
    let value = provider_spec?.value.as_ref()?;
    let reference: UserDataReference = value.parse().ok()?;
    reference.user_data_secret.map(|secret| secret.name)
}

/// A MAPI kind whose objects name a user-data Secret in their providerSpec.
pub trait Referrer: ResourceExt {
    /// The kind's name, which keys its references.
    const KIND: &'static str;
    /// The providerSpec the object holds.
    fn provider_spec(&self) -> Option<&mapi::ProviderSpec>;
}

impl Referrer for mapi::Machine {
    const KIND: &'static str = "Machine";

    fn provider_spec(&self) -> Option<&mapi::ProviderSpec> {
        self.spec.provider_spec.as_ref()
    }
}

impl Referrer for mapi::MachineSet {
    const KIND: &'static str = "MachineSet";

    /// Its template's: the Machines it makes boot from it.
    fn provider_spec(&self) -> Option<&mapi::ProviderSpec> {
        self.spec.template.as_ref()?.spec.as_ref()?.provider_spec.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sync_core::lenient::Malformed;

    use super::*;

    fn decode<K: serde::de::DeserializeOwned>(object: serde_json::Value) -> K {
        match serde_json::from_value(object) {
            Ok(decoded) => decoded,
            Err(error) => panic!("{error}"),
        }
    }

    fn provider_spec(user_data_secret: serde_json::Value) -> serde_json::Value {
        json!({"value": {"apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
            "instanceType": "m6i.xlarge", "userDataSecret": user_data_secret}})
    }

    fn machine(user_data_secret: serde_json::Value) -> mapi::Machine {
        decode(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "worker-a-x1", "namespace": "openshift-machine-api"},
            "spec": {"providerSpec": provider_spec(user_data_secret)}
        }))
    }

    fn keyed(key: &str, secret: Option<&str>) -> Option<Reference> {
        Some(Reference {
            key: key.into(),
            secret: secret.map(Into::into),
        })
    }

    #[test]
    fn a_machine_names_the_secret_of_its_provider_spec_until_it_is_gone() {
        let named = machine(json!({"name": "infra-user-data"}));
        assert_eq!(
            reference(&Touched::Present(&named)),
            keyed("Machine/worker-a-x1", Some("infra-user-data"))
        );
        assert_eq!(
            reference(&Touched::Gone(&named)),
            keyed("Machine/worker-a-x1", None)
        );
    }

    #[test]
    fn a_machine_set_names_the_secret_of_its_template() {
        let set: mapi::MachineSet = decode(json!({
            "metadata": {"name": "worker-a", "resourceVersion": "7"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"providerSpec": provider_spec(json!({"name": "worker-user-data"}))}}}
        }));
        assert_eq!(
            reference(&Touched::Present(&set)),
            keyed("MachineSet/worker-a", Some("worker-user-data"))
        );
    }

    #[test]
    fn an_object_without_a_reference_or_with_a_malformed_one_names_none() {
        let malformed_reference = machine(json!("x"));
        assert_eq!(
            reference(&Touched::Present(&malformed_reference)),
            keyed("Machine/worker-a-x1", None)
        );
        let bare: mapi::Machine = decode(json!({"metadata": {"name": "m"}, "spec": {}}));
        assert_eq!(reference(&Touched::Present(&bare)), keyed("Machine/m", None));
        let no_template: mapi::MachineSet = decode(json!({"metadata": {"name": "s"}, "spec": {}}));
        assert_eq!(
            reference(&Touched::Present(&no_template)),
            keyed("MachineSet/s", None)
        );
    }

    #[test]
    fn a_malformed_version_keeps_the_last_reference_and_its_deletion_drops_it() {
        let malformed = Malformed {
            metadata: kube::api::ObjectMeta {
                name: Some("m".into()),
                ..Default::default()
            },
            error: "spec: invalid type".into(),
        };
        assert_eq!(reference::<mapi::Machine>(&Touched::Malformed(&malformed)), None);
        assert_eq!(
            reference::<mapi::Machine>(&Touched::MalformedGone(&malformed)),
            keyed("Machine/m", None)
        );
    }
}
