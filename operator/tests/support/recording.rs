//! A kube client that records every request made through it, as the RBAC authorizer sees
//! it (verb, API group, resource with subresource, namespace), so a test can check what the
//! operator really did against the rules the chart grants (`operator::rbac::RULES`). The
//! test API server enforces no RBAC; this is how its tests see the operator's rights.

use std::sync::{Arc, Mutex};

use kube::Client;

/// One request in RBAC's terms.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Call {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// API group (`""` for the core group).
    pub group: String,
    /// Resource, with `/subresource` when there is one.
    pub resource: String,
    /// Namespace (`None`: cluster-scoped or across namespaces).
    pub namespace: Option<String>,
    /// Object name, when the request names one.
    pub name: Option<String>,
    /// A metadata-only read (`Accept: ...;as=PartialObjectMetadata`): the object's data
    /// did not come back.
    pub meta_only: bool,
}

/// The calls recorded so far.
#[derive(Clone, Default)]
pub(crate) struct Recorded(Arc<Mutex<Vec<Call>>>);

impl Recorded {
    /// Every call recorded, in order.
    pub(crate) fn calls(&self) -> Vec<Call> {
        self.0.lock().unwrap().clone()
    }
}

/// A request's path and query in RBAC's terms (the API server's request-info rules:
/// `/api/v1/...` is the core group, `/apis/GROUP/VERSION/...`; `namespaces/NS/RESOURCE/NAME/SUB`;
/// a GET without a name is a list, or a watch with `watch=true`). `None` for discovery and
/// other non-resource paths.
pub(crate) fn call(method: &str, path: &str, query: &str, accept: &str) -> Option<Call> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] => (String::new(), rest),
        ["apis", group, _version, rest @ ..] => ((*group).to_owned(), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
        _ => (None, rest),
    };
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some((*n).to_owned()), None),
        [r, n, s] => (*r, Some((*n).to_owned()), Some(*s)),
        _ => return None,
    };
    let watch = query
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1");
    let verb = match (method, name.is_some()) {
        ("GET", _) if watch => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return None,
    };
    Some(Call {
        verb: verb.to_owned(),
        group,
        resource: sub.map_or_else(|| resource.to_owned(), |s| format!("{resource}/{s}")),
        namespace,
        name,
        meta_only: accept.contains("as=PartialObjectMetadata"),
    })
}

/// A client from the environment's kubeconfig that records every request it sends.
pub(crate) async fn client() -> (Client, Recorded) {
    let config = kube::Config::infer().await.unwrap();
    let recorded = Recorded::default();
    let log = recorded.0.clone();
    let layer = tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
        if let Some(c) = call(
            req.method().as_str(),
            req.uri().path(),
            req.uri().query().unwrap_or_default(),
            req.headers()
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default(),
        ) {
            log.lock().unwrap().push(c);
        }
        req
    });
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&layer)
        .build();
    (client, recorded)
}

/// Fails with every call of `calls` that `operator::rbac::RULES` do not allow, or that
/// left the namespace `ns` (a Role holds in its namespace only).
pub(crate) fn assert_allowed(calls: &[Call], ns: &str) {
    assert!(!calls.is_empty(), "no request of the operator was recorded");
    let denied: Vec<&Call> = calls
        .iter()
        .filter(|c| {
            !operator::rbac::allows(&c.group, &c.resource, &c.verb)
                || c.namespace.as_deref() != Some(ns)
        })
        .collect();
    assert!(
        denied.is_empty(),
        "the operator made calls its Role in {ns} does not grant: {denied:#?}"
    );
}

/// Starts the controller for `namespaces` (each watched on its own, as with the chart's
/// Roles) on a recording client; it stops when the test ends. What it recorded is checked
/// against the operator's RBAC rules ([`assert_allowed`]).
pub(crate) async fn controller(namespaces: &[&str]) -> Recorded {
    let (client, recorded) = client().await;
    let ctx = std::sync::Arc::new(operator::reconcile::Context::new(
        client,
        operator::reconcile::Config {
            worker_image: "ghcr.io/pqbench/pqbench-worker:test".into(),
            node_exporter_image: operator::resources::DEFAULT_NODE_EXPORTER_IMAGE.into(),
            probe_image: "ghcr.io/pqbench/pqbench-probe:test".into(),
            instance: "test".into(),
            policy: operator::policy::Policy::default(),
            operator_namespace: None,
            egress_except: operator::resources::METADATA_ADDRESSES
                .map(String::from)
                .to_vec(),
            secrets_ttl_seconds: 3600,
        },
        std::sync::Arc::new(operator::metrics::Metrics::default()),
    ));
    let watched: Vec<String> = namespaces.iter().map(|n| (*n).to_owned()).collect();
    tokio::spawn(async move { operator::reconcile::run_in(ctx, Some(&watched)).await });
    recorded
}
