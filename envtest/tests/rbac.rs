//! RBAC enforcement of the envtest server, through the kube client as ordinary users and
//! ServiceAccounts: what kube-apiserver's RBAC authorizer allows and forbids.

use envtest::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::{Client, Error};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn rule(verbs: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![String::new()]),
        resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
        resource_names: (!names.is_empty()).then(|| names.iter().map(|n| (*n).to_owned()).collect()),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        non_resource_urls: None,
    }
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

fn subject(kind: &str, name: &str, namespace: Option<&str>) -> Subject {
    Subject {
        kind: kind.into(),
        name: name.into(),
        namespace: namespace.map(str::to_owned),
        api_group: (kind != "ServiceAccount").then(|| "rbac.authorization.k8s.io".to_owned()),
    }
}

async fn grant(
    admin: &Client,
    namespace: &str,
    name: &str,
    rules: Vec<PolicyRule>,
    subjects: Vec<Subject>,
) -> TestResult {
    let pp = PostParams::default();
    let role = Role {
        metadata: meta(name, Some(namespace)),
        rules: Some(rules),
    };
    Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&pp, &role)
        .await?;
    let binding = RoleBinding {
        metadata: meta(name, Some(namespace)),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: name.into(),
        },
        subjects: Some(subjects),
    };
    Api::<RoleBinding>::namespaced(admin.clone(), namespace)
        .create(&pp, &binding)
        .await?;
    Ok(())
}

fn forbidden_message<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Err(Error::Api(status)) if status.code == 403 && status.reason == "Forbidden" => status.message,
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn users_get_exactly_what_their_roles_grant() -> TestResult {
    let env = TestEnv::builder()
        .namespace("a")
        .namespace("b")
        .user("bob", &["team"])
        .start()
        .await?;
    let admin = env.client();
    let bob = env.client_as("bob").await?;
    let cm = ConfigMap {
        metadata: meta("cm", None),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(admin.clone(), "a")
        .create(&PostParams::default(), &cm)
        .await?;
    Api::<ConfigMap>::namespaced(admin.clone(), "b")
        .create(&PostParams::default(), &cm)
        .await?;

    // Nothing granted yet: forbidden, in kube-apiserver's words. Discovery is allowed.
    let message = forbidden_message(
        Api::<ConfigMap>::namespaced(bob.clone(), "a")
            .list(&Default::default())
            .await,
    );
    assert_eq!(
        message,
        "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"a\""
    );
    assert!(bob.list_core_api_versions().await.is_ok());
    assert!(bob.apiserver_version().await.is_ok());

    // A Role in "a" bound to bob's group: allowed there, not in "b", and only those verbs.
    grant(
        &admin,
        "a",
        "read",
        vec![rule(&["get", "list"], &["configmaps"], &[])],
        vec![subject("Group", "team", None)],
    )
    .await?;
    assert_eq!(
        Api::<ConfigMap>::namespaced(bob.clone(), "a")
            .list(&Default::default())
            .await?
            .items
            .len(),
        1
    );
    forbidden_message(
        Api::<ConfigMap>::namespaced(bob.clone(), "b")
            .list(&Default::default())
            .await,
    );
    let message = forbidden_message(
        Api::<ConfigMap>::namespaced(bob.clone(), "a")
            .delete("cm", &Default::default())
            .await,
    );
    assert!(
        message.starts_with("configmaps \"cm\" is forbidden: User \"bob\" cannot delete"),
        "{message}"
    );
    // The server keeps every refusal, for suites that must fail on any Forbidden.
    let denials = env.denials();
    assert!(denials.iter().all(|d| d.user == "bob"), "{denials:?}");
    assert!(denials.iter().any(|d| d.message == message), "{denials:?}");

    // resourceNames restrict get, and never allow a list.
    grant(
        &admin,
        "b",
        "one",
        vec![rule(&["get", "list"], &["configmaps"], &["cm"])],
        vec![subject("User", "bob", None)],
    )
    .await?;
    assert!(
        Api::<ConfigMap>::namespaced(bob.clone(), "b")
            .get("cm")
            .await
            .is_ok()
    );
    forbidden_message(Api::<ConfigMap>::namespaced(bob.clone(), "b").get("other").await);
    forbidden_message(
        Api::<ConfigMap>::namespaced(bob.clone(), "b")
            .list(&Default::default())
            .await,
    );
    // …unless the list names its object with a `metadata.name` field selector, which
    // kube-apiserver authorizes as a request for that name.
    let named = ListParams::default().fields("metadata.name=cm");
    let listed = Api::<ConfigMap>::namespaced(bob.clone(), "b")
        .list(&named)
        .await?;
    assert_eq!(listed.items.len(), 1);
    forbidden_message(
        Api::<ConfigMap>::namespaced(bob.clone(), "b")
            .list(&ListParams::default().fields("metadata.name=other"))
            .await,
    );
    Ok(())
}

#[tokio::test]
async fn cluster_roles_and_service_accounts() -> TestResult {
    let env = TestEnv::builder()
        .namespace("ops")
        .service_account("ops", "operator")
        .start()
        .await?;
    let admin = env.client();
    let operator = env
        .client_as(&envtest::service_account_user("ops", "operator"))
        .await?;
    forbidden_message(
        Api::<ConfigMap>::all(operator.clone())
            .list(&Default::default())
            .await,
    );

    let role = ClusterRole {
        metadata: meta("cm-reader", None),
        rules: Some(vec![rule(&["list", "watch"], &["configmaps"], &[])]),
        aggregation_rule: None,
    };
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await?;
    let binding = ClusterRoleBinding {
        metadata: meta("cm-reader", None),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: "cm-reader".into(),
        },
        subjects: Some(vec![subject("ServiceAccount", "operator", Some("ops"))]),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await?;
    assert!(
        Api::<ConfigMap>::all(operator.clone())
            .list(&Default::default())
            .await
            .is_ok()
    );
    let message = forbidden_message(
        Api::<ConfigMap>::namespaced(operator.clone(), "ops")
            .create(&PostParams::default(), &ConfigMap::default())
            .await,
    );
    assert!(
        message.contains("User \"system:serviceaccount:ops:operator\" cannot create"),
        "{message}"
    );
    Ok(())
}

/// kube-apiserver authorizes before it routes: a kind nobody serves is Forbidden to a user
/// without the right and NotFound to one with it.
#[tokio::test]
async fn an_unserved_resource_is_forbidden_before_it_is_not_found() -> TestResult {
    use kube::api::{ApiResource, DynamicObject};
    use kube::core::GroupVersionKind;
    let env = TestEnv::builder()
        .namespace("a")
        .user("bob", &["team"])
        .start()
        .await?;
    let bob = env.client_as("bob").await?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Cluster"),
        "clusters",
    );
    let clusters = Api::<DynamicObject>::namespaced_with(bob.clone(), "a", &resource);
    assert_eq!(
        forbidden_message(clusters.get("sample").await),
        "clusters.cluster.x-k8s.io \"sample\" is forbidden: User \"bob\" cannot get resource \"clusters\" in API group \"cluster.x-k8s.io\" in the namespace \"a\""
    );
    assert_eq!(env.denials().len(), 1);
    let mut allowed = rule(&["get"], &["clusters"], &[]);
    allowed.api_groups = Some(vec!["cluster.x-k8s.io".into()]);
    grant(
        &env.client(),
        "a",
        "read-clusters",
        vec![allowed],
        vec![subject("User", "bob", None)],
    )
    .await?;
    match clusters.get("sample").await {
        Err(Error::Api(status)) => assert_eq!(status.code, 404, "{status:?}"),
        other => panic!("expected 404, got {other:?}"),
    }
    env.stop().await;
    Ok(())
}
