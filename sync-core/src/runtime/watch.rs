//! The watch behind a cache: kube-runtime's watcher, reading objects in one pass while
//! they all fit their type, and each on its own once one does not.
//!
//! [`Lenient`] captures each object's text before decoding it, so that one object that
//! does not fit its Rust type is reported and skipped; that capture is a second pass over
//! every list and event, about a tenth of a restart's CPU. Objects that do not fit are
//! rare (a CRD skewed from the types), so the watch decodes [`OnePass`] first. The first
//! list page or event that does not decode ends that: the watch starts over with
//! [`Lenient`] from a fresh list, which reports the object that does not fit (the failed
//! page or event is gone, and the relist is what a dropped watch costs). It stays lenient
//! for the rest of its life: an object that did not fit once usually stays.

use std::fmt::Debug;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use crate::runtime::lenient::{Lenient, OnePass};
use crate::runtime::reflect::map_event;

type Events<K> = BoxStream<'static, watcher::Result<watcher::Event<K>>>;

/// How the watch reads objects now; reading in one pass, also what it needs to start over
/// (boxed: moved along with every event).
enum Reading<K: 'static> {
    OnePass(Events<OnePass<K>>, Box<(Api<Lenient<K>>, watcher::Config)>),
    Lenient(Events<Lenient<K>>),
}

/// The watch of `K` in `namespace` with `config`, its objects read as [`Lenient`] (see
/// the module's documentation); wrap it in a backoff as any watcher.
pub fn lenient_watcher<K>(
    client: Client,
    namespace: &str,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<watcher::Event<Lenient<K>>>> + Send + 'static
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default,
{
    let one_pass = watcher(
        Api::<OnePass<K>>::namespaced(client.clone(), namespace),
        config.clone(),
    );
    let lenient = Api::<Lenient<K>>::namespaced(client, namespace);
    let reading = Reading::OnePass(one_pass.boxed(), Box::new((lenient, config)));
    futures::stream::unfold(reading, |reading| async move {
        match reading {
            Reading::OnePass(mut events, start_over) => match events.next().await? {
                Err(error) if does_not_decode(&error) => {
                    tracing::warn!(
                        kind = %K::kind(&K::DynamicType::default()), %error,
                        "an object does not decode as its type: listing again, each object decoded on its own from now on"
                    );
                    let (lenient, config) = *start_over;
                    next_lenient(watcher(lenient, config).boxed()).await
                }
                event => {
                    let event = event.map(|event| map_event(event, |object| Lenient::Valid(object.0)));
                    Some((event, Reading::OnePass(events, start_over)))
                }
            },
            Reading::Lenient(events) => next_lenient(events).await,
        }
    })
}

async fn next_lenient<K: 'static>(
    mut events: Events<Lenient<K>>,
) -> Option<(watcher::Result<watcher::Event<Lenient<K>>>, Reading<K>)> {
    let event = events.next().await?;
    Some((event, Reading::Lenient(events)))
}

/// Whether the watcher failed because a list page or an event did not decode (rather
/// than the API server or the connection). kube-client reads an event line that does not
/// decode as a `Status` if it can, and any JSON object is one: an error "from the API
/// server" with no code at all is such a line (the server's own errors come as `ERROR`
/// events, and carry a code).
fn does_not_decode(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::SerdeError(_))
        | watcher::Error::WatchFailed(kube::Error::SerdeError(_)) => true,
        watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use envtest::TestEnv;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceDefinition, CustomResourceValidation, JSONSchemaProps,
    };
    use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
    use kube::{CustomResource, CustomResourceExt};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};
    use tokio::sync::mpsc;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    const WAIT: Duration = Duration::from_secs(20);

    /// A kind whose `size` is a number in Rust, served by a CRD that accepts anything (a
    /// CRD skewed from the types).
    #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    #[kube(group = "watch.sync-core.test", version = "v1", kind = "Gadget", namespaced)]
    struct GadgetSpec {
        size: u32,
    }

    fn skewed_crd() -> CustomResourceDefinition {
        let mut crd = Gadget::crd();
        for version in &mut crd.spec.versions {
            version.schema = Some(CustomResourceValidation {
                open_api_v3_schema: Some(JSONSchemaProps {
                    type_: Some("object".into()),
                    x_kubernetes_preserve_unknown_fields: Some(true),
                    ..JSONSchemaProps::default()
                }),
            });
        }
        crd
    }

    async fn start() -> Result<(TestEnv, Api<DynamicObject>), Box<dyn std::error::Error>> {
        let env = TestEnv::builder()
            .crd_object(skewed_crd())
            .namespace("ns")
            .start()
            .await?;
        let resource = ApiResource::erase::<Gadget>(&());
        let api = Api::namespaced_with(env.client(), "ns", &resource);
        Ok((env, api))
    }

    async fn create(api: &Api<DynamicObject>, name: &str, size: Value) -> TestResult {
        let resource = ApiResource::erase::<Gadget>(&());
        let object = DynamicObject::new(name, &resource).data(json!({ "spec": { "size": size } }));
        api.create(&PostParams::default(), &object).await?;
        Ok(())
    }

    /// The watch's events as lines: `init`, `done`, `listed <name> <size>`, `applied
    /// <name> <size>`, with `malformed` for the size of an object that does not fit.
    fn watch(env: &TestEnv) -> mpsc::UnboundedReceiver<String> {
        let (lines, received) = mpsc::unbounded_channel();
        let events = lenient_watcher::<Gadget>(env.client(), "ns", watcher::Config::default());
        tokio::spawn(async move {
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                let line = match event {
                    Ok(watcher::Event::Init) => "init".to_owned(),
                    Ok(watcher::Event::InitDone) => "done".to_owned(),
                    Ok(watcher::Event::InitApply(object)) => format!("listed {}", describe(&object)),
                    Ok(watcher::Event::Apply(object)) => format!("applied {}", describe(&object)),
                    Ok(watcher::Event::Delete(object)) => format!("deleted {}", describe(&object)),
                    Err(error) => format!("error {error}"),
                };
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        received
    }

    fn describe(object: &Lenient<Gadget>) -> String {
        let name = object.meta().name.clone().unwrap_or_default();
        match object {
            Lenient::Valid(gadget) => format!("{name} {}", gadget.spec.size),
            Lenient::Malformed(malformed) => format!("{name} malformed at {}", malformed.error),
        }
    }

    /// The next `count` lines, in order.
    async fn next_lines(
        lines: &mut mpsc::UnboundedReceiver<String>,
        count: usize,
    ) -> Result<Vec<String>, String> {
        let mut received = Vec::new();
        while received.len() < count {
            match tokio::time::timeout(WAIT, lines.recv()).await {
                Ok(Some(line)) => received.push(line),
                _ => return Err(format!("waited for {count} lines, got {received:?}")),
            }
        }
        Ok(received)
    }

    /// Lines of a list, its objects sorted (a list's order is the server's).
    fn sorted_list(mut lines: Vec<String>) -> Vec<String> {
        if let [_, middle @ .., _] = lines.as_mut_slice() {
            middle.sort();
        }
        lines
    }

    /// Objects that fit are read in one pass; the first event that does not decode makes
    /// the watch list again, leniently: the object is reported with the field at fault,
    /// and every later change, fitting or not, still arrives.
    #[tokio::test]
    async fn an_event_that_does_not_decode_relists_leniently_and_the_watch_goes_on() -> TestResult {
        let (env, api) = start().await?;
        create(&api, "a", json!(1)).await?;
        let mut lines = watch(&env);
        assert_eq!(next_lines(&mut lines, 3).await?, ["init", "listed a 1", "done"]);
        create(&api, "b", json!(2)).await?;
        assert_eq!(next_lines(&mut lines, 1).await?, ["applied b 2"]);

        create(&api, "bad", json!("big")).await?;
        let relisted = sorted_list(next_lines(&mut lines, 5).await?);
        let [init, a, b, bad, done] = relisted.as_slice() else {
            return Err(format!("{relisted:?}").into());
        };
        assert_eq!([init, a, b, done], ["init", "listed a 1", "listed b 2", "done"]);
        assert!(
            bad.starts_with("listed bad malformed at spec.size: invalid type: string"),
            "{bad}"
        );

        create(&api, "c", json!(3)).await?;
        assert_eq!(next_lines(&mut lines, 1).await?, ["applied c 3"]);
        let patch = json!({ "spec": { "size": "bigger" } });
        api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let [changed] = next_lines(&mut lines, 1)
            .await?
            .try_into()
            .map_err(|l| format!("{l:?}"))?;
        assert!(
            changed.starts_with("applied a malformed at spec.size"),
            "{changed}"
        );
        env.stop().await;
        Ok(())
    }

    /// A first list with an object that does not fit fails in one pass; listed again, it
    /// reports that object and every other.
    #[tokio::test]
    async fn a_list_that_does_not_decode_is_listed_again_leniently() -> TestResult {
        let (env, api) = start().await?;
        create(&api, "a", json!(1)).await?;
        create(&api, "bad", json!(-1)).await?;
        let mut lines = watch(&env);
        // The failed list began with its own `init`; nothing of it was reported.
        assert_eq!(next_lines(&mut lines, 1).await?, ["init"]);
        let listed = sorted_list(next_lines(&mut lines, 4).await?);
        let [init, a, bad, done] = listed.as_slice() else {
            return Err(format!("{listed:?}").into());
        };
        assert_eq!([init, a, done], ["init", "listed a 1", "done"]);
        assert!(
            bad.starts_with("listed bad malformed at spec.size: invalid value: integer `-1`"),
            "{bad}"
        );
        env.stop().await;
        Ok(())
    }
}
