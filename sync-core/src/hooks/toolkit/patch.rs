//! The toolkit's patches, with the API server's answer decoded as the caches decode
//! objects, or not at all.
//!
//! kube's `Api::patch` decodes the answer plainly: each `managedFields` entry's set
//! becomes a tree of small maps, built and then dropped again (over a real sync's converge,
//! decoding the answers to its writes was ~9 % of the controllers' CPU). The sync reads
//! an answer's sets only through `toolkit::owned`, which takes them as text too, so here
//! they are kept as text ([`crate::runtime::field_sets`]); a caller that needs only the
//! outcome has nothing decoded. The request is kube's own (`kube::core::Request`), and
//! so are the errors: an API error status, or the answer that does not decode.

use std::fmt::Debug;

use kube::api::{Patch, PatchParams};
use kube::core::Request;
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::runtime::field_sets;

/// The part of an object a write changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Metadata (labels, annotations, owner references, finalizers) and spec: the object.
    Object,
    /// `status`, through the status subresource.
    Status,
}

/// Patches `part` of the object `name` and decodes the object the API server answers
/// with, its field sets as text.
pub(crate) async fn patch<K, P>(
    api: &Api<K>,
    part: Part,
    name: &str,
    params: &PatchParams,
    patch: &Patch<P>,
) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned,
    P: Serialize + Debug,
{
    let answer = send(api, part, name, params, patch).await?;
    field_sets::object(&answer).map_err(|error| {
        tracing::warn!(
            object = name, url = api.resource_url(), %error,
            "the API server's answer to a patch does not decode"
        );
        kube::Error::SerdeError(error)
    })
}

/// Patches `part` of the object `name`; the answer is only checked to be a success.
pub(crate) async fn patch_unread<K, P>(
    api: &Api<K>,
    part: Part,
    name: &str,
    params: &PatchParams,
    patch: &Patch<P>,
) -> kube::Result<()>
where
    K: Resource + Clone,
    P: Serialize + Debug,
{
    send(api, part, name, params, patch).await.map(drop)
}

/// The request `Api::patch` (or `Api::patch_status`) would send; the answer's text.
async fn send<K, P>(
    api: &Api<K>,
    part: Part,
    name: &str,
    params: &PatchParams,
    patch: &Patch<P>,
) -> kube::Result<String>
where
    K: Resource + Clone,
    P: Serialize + Debug,
{
    let request = Request::new(api.resource_url());
    let (built, verb) = match part {
        Part::Object => (request.patch(name, params, patch), "patch"),
        Part::Status => (
            request.patch_subresource("status", name, params, patch),
            "patch_status",
        ),
    };
    let mut request = built.map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert(verb);
    api.clone().into_client().request_text(request).await
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use http::{Request as HttpRequest, Response};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Client;
    use kube::client::Body;
    use serde_json::{Value, json};

    use super::*;

    /// A client that answers every request with `status` and `answer`, and the
    /// "METHOD path?query" of each request it was sent.
    fn answering(status: u16, answer: Value) -> (Client, Arc<Mutex<Vec<String>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let seen = sent.clone();
        let service = tower::service_fn(move |request: HttpRequest<Body>| {
            let (seen, answer) = (seen.clone(), answer.clone());
            async move {
                if let Ok(mut seen) = seen.lock() {
                    seen.push(format!("{} {}", request.method(), request.uri()));
                }
                let body = serde_json::to_vec(&answer).unwrap_or_default();
                Response::builder().status(status).body(Body::from(body))
            }
        });
        (Client::new(service, "default"), sent)
    }

    fn configmap() -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7",
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:k": {}}}}]},
            "data": {"k": "v"}
        })
    }

    /// The requests are the ones kube's `Api::patch` and `Api::patch_status` send; the
    /// answer decodes with its field sets as text.
    #[tokio::test]
    async fn a_patch_is_kubes_request_and_its_answer_keeps_sets_as_text() -> Result<(), kube::Error> {
        let (client, sent) = answering(200, configmap());
        let api = Api::<ConfigMap>::namespaced(client, "ns");
        let params = PatchParams::apply("me").force();
        let body = json!({"data": {"k": "v"}});
        let written = patch(&api, Part::Object, "a", &params, &Patch::Apply(&body)).await?;
        assert_eq!(written.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(
            written.data.and_then(|d| d.get("k").cloned()).as_deref(),
            Some("v")
        );
        let sets: Vec<_> = written
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|entry| entry.fields_v1.as_ref())
            .map(|set| set.0.clone())
            .collect();
        assert_eq!(sets, [Value::String(r#"{"f:data":{"f:k":{}}}"#.into())]);
        patch(&api, Part::Status, "a", &params, &Patch::Apply(&body)).await?;
        patch_unread(
            &api,
            Part::Object,
            "a",
            &PatchParams::default(),
            &Patch::Merge(&body),
        )
        .await?;

        let (plain, plain_sent) = answering(200, configmap());
        let plain = Api::<ConfigMap>::namespaced(plain, "ns");
        plain.patch("a", &params, &Patch::Apply(&body)).await?;
        plain.patch_status("a", &params, &Patch::Apply(&body)).await?;
        plain
            .patch("a", &PatchParams::default(), &Patch::Merge(&body))
            .await?;
        let lines = |sent: &Arc<Mutex<Vec<String>>>| sent.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(lines(&sent), lines(&plain_sent));
        assert_eq!(
            lines(&sent)[1],
            "PATCH /api/v1/namespaces/ns/configmaps/a/status?&force=true&fieldManager=me"
        );
        Ok(())
    }

    /// An error status is kube's API error; an answer that is not the object is a decoding
    /// error, whether or not the caller reads it.
    #[tokio::test]
    async fn errors_are_kubes() {
        let conflict = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "the object has been modified", "reason": "Conflict", "code": 409});
        let (client, _) = answering(409, conflict);
        let api = Api::<ConfigMap>::namespaced(client, "ns");
        let body = json!({"data": {}});
        let params = PatchParams::default();
        let failed = patch(&api, Part::Object, "a", &params, &Patch::Merge(&body)).await;
        assert!(matches!(failed, Err(kube::Error::Api(status)) if status.code == 409));
        let failed = patch_unread(&api, Part::Status, "a", &params, &Patch::Merge(&body)).await;
        assert!(matches!(failed, Err(kube::Error::Api(status)) if status.code == 409));

        let (client, _) = answering(200, json!({"metadata": {"name": 5}}));
        let api = Api::<ConfigMap>::namespaced(client, "ns");
        let failed = patch(&api, Part::Object, "a", &params, &Patch::Merge(&body)).await;
        assert!(matches!(failed, Err(kube::Error::SerdeError(_))), "{failed:?}");
        let unread = patch_unread(&api, Part::Object, "a", &params, &Patch::Merge(&body)).await;
        assert!(unread.is_ok(), "an answer nobody reads is not decoded");
    }
}
