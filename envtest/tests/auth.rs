//! Impersonation and the review resources through the real `kubectl`: `--as`/`--as-group`
//! authorized on the `impersonate` verb (403 worded as kube-apiserver), `kubectl auth
//! can-i` (SelfSubjectAccessReview), `kubectl auth whoami` (SelfSubjectReview), and
//! SubjectAccessReview through the kube client.

use std::path::PathBuf;
use std::time::Duration;

use envtest::TestEnv;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn kubectl_installed() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join("kubectl").is_file()))
}

/// What a finished kubectl printed.
struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

struct Kubectl {
    dir: PathBuf,
}

impl Kubectl {
    fn new(env: &TestEnv, users: &[&str]) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let dir = std::env::temp_dir().join(format!(
            "envtest-auth-{}-{}",
            std::process::id(),
            env.addr().port()
        ));
        std::fs::create_dir_all(&dir)?;
        for user in users {
            let config = env.kubeconfig_for(user).ok_or("no such user")?;
            std::fs::write(dir.join(format!("{user}.kubeconfig")), config)?;
        }
        Ok(Self { dir })
    }

    async fn run(&self, user: &str, args: &[&str]) -> Result<Run, Box<dyn std::error::Error + Send + Sync>> {
        let mut command = tokio::process::Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(self.dir.join(format!("{user}.kubeconfig")))
            .arg("--cache-dir")
            .arg(self.dir.join(format!("cache-{user}")))
            .args(args)
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(60), command.output())
            .await
            .map_err(|_| format!("kubectl {args:?} did not finish"))??;
        Ok(Run {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn rbac() -> Vec<Value> {
    vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "cm-reader", "namespace": "test"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "bob-reads", "namespace": "test"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
               "subjects": [{"kind": "User", "name": "bob"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "impersonate-bob"},
               "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "imp-impersonates-bob"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-bob"},
               "subjects": [{"kind": "User", "name": "imp"}]}),
    ]
}

async fn env() -> Result<TestEnv, Box<dyn std::error::Error + Send + Sync>> {
    let mut builder = TestEnv::builder()
        .namespace("test")
        .user("alice", &[])
        .user("imp", &[]);
    for object in rbac() {
        builder = builder.object(object);
    }
    Ok(builder.start().await?)
}

#[tokio::test]
async fn impersonation_is_authorized_on_the_impersonate_verb() -> TestResult {
    if !kubectl_installed() {
        eprintln!("kubectl is not installed: skipping (CI requires it)");
        return Ok(());
    }
    let env = env().await?;
    let kubectl = Kubectl::new(&env, &["imp", "alice", envtest::ADMIN])?;
    let allowed = kubectl
        .run("imp", &["get", "cm", "-n", "test", "--as", "bob"])
        .await?;
    assert!(allowed.success, "{}", allowed.stderr);

    let refused = kubectl
        .run("imp", &["get", "cm", "-n", "test", "--as", "carol"])
        .await?;
    assert!(!refused.success);
    assert!(
        refused.stderr.contains(r#"Error from server (Forbidden): users "carol" is forbidden: User "imp" cannot impersonate resource "users" in API group "" at the cluster scope"#),
        "{}",
        refused.stderr
    );
    let refused = kubectl
        .run(
            "imp",
            &["get", "cm", "-n", "test", "--as", "bob", "--as-group", "admins"],
        )
        .await?;
    assert!(
        refused.stderr.contains(r#"groups "admins" is forbidden: User "imp" cannot impersonate resource "groups" in API group "" at the cluster scope"#),
        "{}",
        refused.stderr
    );
    // Impersonated, the request has bob's rights, not the impersonator's.
    let as_bob = kubectl
        .run(
            envtest::ADMIN,
            &["delete", "cm", "x", "-n", "test", "--as", "bob"],
        )
        .await?;
    assert!(
        as_bob.stderr.contains(r#"configmaps "x" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "test""#),
        "{}",
        as_bob.stderr
    );
    let denials = env.denials();
    assert!(
        denials
            .iter()
            .any(|d| d.user == "imp" && d.message.contains("carol")),
        "{denials:?}"
    );
    Ok(())
}

#[tokio::test]
async fn auth_can_i_and_whoami() -> TestResult {
    if !kubectl_installed() {
        eprintln!("kubectl is not installed: skipping (CI requires it)");
        return Ok(());
    }
    let env = env().await?;
    let kubectl = Kubectl::new(&env, &["alice", envtest::ADMIN])?;
    let can = |user: &'static str, args: &'static [&'static str]| {
        let kubectl = &kubectl;
        async move {
            let mut all = vec!["auth", "can-i"];
            all.extend_from_slice(args);
            kubectl.run(user, &all).await
        }
    };
    let yes = can(envtest::ADMIN, &["delete", "configmaps", "-n", "test"]).await?;
    assert!(yes.success, "{} {}", yes.stdout, yes.stderr);
    assert_eq!(yes.stdout.trim(), "yes");
    let no = can("alice", &["list", "configmaps", "-n", "test"]).await?;
    assert!(!no.success, "can-i exits 1 on no");
    assert_eq!(no.stdout.trim(), "no");
    let bob = can(
        envtest::ADMIN,
        &["list", "configmaps", "-n", "test", "--as", "bob"],
    )
    .await?;
    assert_eq!(bob.stdout.trim(), "yes");
    let bob = can(
        envtest::ADMIN,
        &["list", "configmaps", "-n", "other", "--as", "bob"],
    )
    .await?;
    assert_eq!(bob.stdout.trim(), "no");
    let bob = can(
        envtest::ADMIN,
        &["get", "configmaps/anything", "-n", "test", "--as", "bob"],
    )
    .await?;
    assert_eq!(bob.stdout.trim(), "yes");
    let path = can("alice", &["get", "/version"]).await?;
    assert_eq!(
        path.stdout.trim(),
        "yes",
        "non-resource URLs: the public-info-viewer role"
    );

    let whoami = kubectl
        .run(envtest::ADMIN, &["auth", "whoami", "-o", "json"])
        .await?;
    assert!(whoami.success, "{}", whoami.stderr);
    let review: Value = serde_json::from_str(&whoami.stdout)?;
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(review["status"]["userInfo"]["username"], envtest::ADMIN);
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    let whoami = kubectl
        .run(
            envtest::ADMIN,
            &["auth", "whoami", "--as", "bob", "--as-group", "devs"],
        )
        .await?;
    assert!(whoami.success, "{}", whoami.stderr);
    let lines: Vec<Vec<&str>> = whoami
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], vec!["ATTRIBUTE", "VALUE"]);
    assert_eq!(lines[1], vec!["Username", "bob"]);
    assert_eq!(lines[2], vec!["Groups", "[devs", "system:authenticated]"]);
    Ok(())
}

#[tokio::test]
async fn subject_access_reviews_need_the_right_to_create_them() -> TestResult {
    let env = env().await?;
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "bob", "resourceAttributes": {"namespace": "test", "verb": "list", "resource": "configmaps"}},
    });
    let post = |client: kube::Client, body: Value| async move {
        let request = http::Request::post("/apis/authorization.k8s.io/v1/subjectaccessreviews")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body)?)?;
        let response = client.send(request.map(kube::client::Body::from)).await?;
        let code = response.status().as_u16();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await?
            .to_bytes();
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((code, serde_json::from_slice::<Value>(&bytes)?))
    };
    let (code, answer) = post(env.client(), review.clone()).await?;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["status"], json!({"allowed": true}));
    assert_eq!(answer["spec"]["user"], "bob");
    let mut denied = review.clone();
    denied["spec"]["resourceAttributes"]["verb"] = json!("delete");
    let (_, answer) = post(env.client(), denied).await?;
    assert_eq!(answer["status"], json!({"allowed": false}));

    let (code, answer) = post(env.client_as("alice").await?, review).await?;
    assert_eq!(code, 403, "{answer}");
    assert_eq!(
        answer["message"],
        r#"subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope"#
    );
    let (code, answer) = post(env.client(), json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "bob"}})).await?;
    assert_eq!(code, 422, "{answer}");
    Ok(())
}
