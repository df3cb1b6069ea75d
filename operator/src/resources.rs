//! Pure builders of a campaign's child objects: the S3 credentials Secret, and MinIO as a
//! one-replica StatefulSet behind a headless Service on the server node group (DESIGN.md
//! "Operator"). No I/O: the reconciler applies what these return with server-side apply,
//! and generates the credentials (randomness stays at the edge).
//!
//! Every child carries the campaign's controller owner reference (garbage collection on
//! deletion) and the labels [`labels`] gives, so the operator can list what it owns.

use std::collections::BTreeMap;

use campaign::cluster::{self, MinioServer, Quantity};
use envelope::KeyType;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, HTTPGetAction, KeyToPath,
    LocalObjectReference, PersistentVolumeClaim, PersistentVolumeClaimSpec, PodAffinityTerm,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, SeccompProfile,
    Secret, SecretVolumeSource, SecurityContext, Service, ServicePort, ServiceSpec, Toleration,
    Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KQuantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use zeroize::Zeroizing;

use crate::api::BenchmarkCampaign;
use crate::{Error, Result};

/// Label naming the campaign a child belongs to.
pub const CAMPAIGN_LABEL: &str = "pqbench.io/campaign";
/// The S3 port MinIO listens on.
pub const S3_PORT: i32 = 9000;
/// The port of the node-exporter sidecar beside MinIO.
pub const NODE_EXPORTER_PORT: i32 = 9100;
/// The node-exporter image when the operator is given none.
pub const DEFAULT_NODE_EXPORTER_IMAGE: &str = "quay.io/prometheus/node-exporter:v1.9.1";
/// The port of the iperf3 sidecar beside MinIO (the pre-flight probe's network target).
pub const IPERF3_PORT: i32 = run::preflight::IPERF3_PORT as i32;

/// The testbed probes beside MinIO (`testbed.baselines`): a `disk-probe` init container
/// (fio on MinIO's data volume, before MinIO starts; its result the container's
/// termination message) and an `iperf3` sidecar the pre-flight probe Job measures the
/// network against. Both run the probe image (`pqbench-probe`: Debian with iperf3, fio,
/// ping and `pqbench-worker`).
#[derive(Clone, Copy, Debug)]
pub struct ServerProbe<'a> {
    /// The probe image.
    pub image: &'a str,
    /// Seconds fio writes for.
    pub seconds: u32,
}
/// Keys of the credentials Secret (the AWS SDK's environment names).
pub const ACCESS_KEY: &str = "AWS_ACCESS_KEY_ID";
/// See [`ACCESS_KEY`].
pub const SECRET_KEY: &str = "AWS_SECRET_ACCESS_KEY";

/// What every child needs from its campaign: names and the owner reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Owner {
    /// Campaign name.
    pub name: String,
    /// Campaign namespace.
    pub namespace: String,
    /// The controller owner reference pointing at the campaign.
    pub reference: OwnerReference,
}

impl Owner {
    /// From a campaign read from the API server (it has a namespace and a uid).
    pub fn of(c: &BenchmarkCampaign) -> Result<Self> {
        use kube::Resource as _;
        let reference = c.controller_owner_ref(&()).ok_or(Error::Invalid {
            what: "campaign without a name or uid",
        })?;
        let namespace = c.meta().namespace.clone().ok_or(Error::Invalid {
            what: "campaign without a namespace",
        })?;
        Ok(Self {
            name: reference.name.clone(),
            namespace,
            reference,
        })
    }

    pub(crate) fn meta(&self, name: String, component: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: Some(self.namespace.clone()),
            labels: Some(labels(&self.name, component)),
            owner_references: Some(vec![self.reference.clone()]),
            ..ObjectMeta::default()
        }
    }

    /// Name of the credentials Secret.
    pub fn credentials_secret(&self) -> String {
        format!("{}-s3-credentials", self.name)
    }

    /// Name of the recipient keys Secret.
    pub fn keys_secret(&self) -> String {
        format!("{}-keys", self.name)
    }

    /// Name of the NetworkPolicy of the worker and analysis pods.
    pub fn workers_fence(&self) -> String {
        format!("{}-workers", self.name)
    }

    /// Name of MinIO's StatefulSet and Service (also its DNS name in the namespace).
    pub fn minio(&self) -> String {
        format!("{}-minio", self.name)
    }

    /// Name of the key service's Deployment, Service and NetworkPolicy (remote arms).
    pub fn kms(&self) -> String {
        format!("{}-kms", self.name)
    }

    /// Name of the key service's credentials Secret.
    pub fn kms_credentials_secret(&self) -> String {
        format!("{}-kms-credentials", self.name)
    }

    /// The endpoint of the key service's `port` inside the cluster.
    pub fn kms_endpoint(&self, port: u16) -> String {
        format!("http://{}.{}.svc:{port}", self.kms(), self.namespace)
    }

    /// The endpoint of the campaign's MinIO inside the cluster.
    pub fn minio_endpoint(&self) -> String {
        format!("http://{}.{}.svc:{S3_PORT}", self.minio(), self.namespace)
    }
}

/// Port of a worker pod's `/metrics` (the OpenTelemetry Prometheus exporter's convention).
pub const WORKER_METRICS_PORT: i32 = 9464;
const WORKER_METRICS_ADDR: &str = "0.0.0.0:9464";

/// Labels of a child: the recommended `app.kubernetes.io` set plus [`CAMPAIGN_LABEL`].
pub fn labels(campaign: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "pqbench".to_owned()),
        ("app.kubernetes.io/part-of".to_owned(), "pqbench".to_owned()),
        (
            "app.kubernetes.io/component".to_owned(),
            component.to_owned(),
        ),
        ("app.kubernetes.io/instance".to_owned(), campaign.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "pqbench-operator".to_owned(),
        ),
        (CAMPAIGN_LABEL.to_owned(), campaign.to_owned()),
    ])
}

/// The S3 credentials Secret (MinIO's root user, the workers' and the operator's keys).
/// `access_key` and `secret_key` are generated by the caller.
pub fn credentials_secret(owner: &Owner, access_key: &str, secret_key: &str) -> Secret {
    access_keys_secret(
        owner,
        owner.credentials_secret(),
        "credentials",
        access_key,
        secret_key,
    )
}

/// A Secret `name` of an access key and a secret key under [`ACCESS_KEY`] and
/// [`SECRET_KEY`], immutable.
pub(crate) fn access_keys_secret(
    owner: &Owner,
    name: String,
    component: &str,
    access_key: &str,
    secret_key: &str,
) -> Secret {
    let data = BTreeMap::from([
        (
            ACCESS_KEY.to_owned(),
            ByteString(access_key.as_bytes().to_vec()),
        ),
        (
            SECRET_KEY.to_owned(),
            ByteString(secret_key.as_bytes().to_vec()),
        ),
    ]);
    Secret {
        metadata: owner.meta(name, component),
        data: Some(data),
        type_: Some("Opaque".to_owned()),
        immutable: Some(true),
        ..Secret::default()
    }
}

/// The labels of the operator's own pods (the chart's selector labels), for the
/// NetworkPolicy that lets it reach a campaign's MinIO.
pub const OPERATOR_POD_LABEL: (&str, &str) = ("app.kubernetes.io/name", "pqbench-operator");

/// MinIO's fence (issue 36): ingress to its pod only from the campaign's own pods (its
/// workers, analysis and probe Jobs, by the campaign label, in its namespace) and from the
/// operator's pods (in `operator_namespace`; any namespace when unknown), and only to the
/// S3, node-exporter and iperf3 ports. Enforced by a CNI that enforces NetworkPolicy.
pub fn minio_network_policy(
    owner: &Owner,
    operator_namespace: Option<&str>,
) -> k8s_openapi::api::networking::v1::NetworkPolicy {
    use k8s_openapi::api::networking::v1::{
        NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
        NetworkPolicySpec,
    };
    let ports = || {
        Some(
            [S3_PORT, NODE_EXPORTER_PORT, IPERF3_PORT]
                .into_iter()
                .map(|p| NetworkPolicyPort {
                    port: Some(IntOrString::Int(p)),
                    protocol: Some("TCP".into()),
                    ..NetworkPolicyPort::default()
                })
                .collect(),
        )
    };
    let select = |m: BTreeMap<String, String>| LabelSelector {
        match_labels: Some(m),
        ..LabelSelector::default()
    };
    let campaign_pods = NetworkPolicyPeer {
        pod_selector: Some(select(BTreeMap::from([(
            CAMPAIGN_LABEL.to_owned(),
            owner.name.clone(),
        )]))),
        ..NetworkPolicyPeer::default()
    };
    let operator = NetworkPolicyPeer {
        namespace_selector: Some(
            operator_namespace.map_or_else(LabelSelector::default, |ns| {
                select(BTreeMap::from([(
                    "kubernetes.io/metadata.name".to_owned(),
                    ns.to_owned(),
                )]))
            }),
        ),
        pod_selector: Some(select(BTreeMap::from([(
            OPERATOR_POD_LABEL.0.to_owned(),
            OPERATOR_POD_LABEL.1.to_owned(),
        )]))),
        ..NetworkPolicyPeer::default()
    };
    NetworkPolicy {
        metadata: owner.meta(owner.minio(), "server"),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(select(labels(&owner.name, "server"))),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: Some(vec![
                NetworkPolicyIngressRule {
                    from: Some(vec![campaign_pods]),
                    ports: ports(),
                },
                NetworkPolicyIngressRule {
                    from: Some(vec![operator]),
                    ports: ports(),
                },
            ]),
            ..NetworkPolicySpec::default()
        }),
    }
}

/// The instance metadata addresses (AWS's IPv4 and IPv6), cut out of any whole-internet
/// egress a campaign's pods get unless the operator is told otherwise.
pub const METADATA_ADDRESSES: [&str; 2] = ["169.254.169.254/32", "fd00:ec2::254/128"];

/// The fence of a campaign's worker, analysis and probe pods (issue 36). Egress only to DNS
/// (port 53, UDP and TCP) and to `egress`: the campaign's MinIO pods on the S3,
/// node-exporter and iperf3 ports (ping's ICMP is not a NetworkPolicy port: a CNI that
/// enforces policies may drop it, and the round trip is then "not measured"), each other
/// host on its TCP port, as itself when an IP literal, else at any address but `except` (a NetworkPolicy cannot name a host by DNS; the instance metadata
/// addresses by default) or any pod of the cluster (a name may be a Service). Ingress only
/// to the metrics port (the chart's PodMonitor).
/// Enforced by a CNI that enforces NetworkPolicy.
pub fn workers_network_policy(
    owner: &Owner,
    egress: &[crate::deploy::Egress],
    except: &[String],
) -> k8s_openapi::api::networking::v1::NetworkPolicy {
    use crate::deploy::Egress;
    use k8s_openapi::api::networking::v1::{
        IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule,
        NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let port = |p: i32, protocol: &str| NetworkPolicyPort {
        port: Some(IntOrString::Int(p)),
        protocol: Some(protocol.into()),
        ..NetworkPolicyPort::default()
    };
    let block = |cidr: String, except: Vec<String>| NetworkPolicyPeer {
        ip_block: Some(IPBlock {
            cidr,
            except: (!except.is_empty()).then_some(except),
        }),
        ..NetworkPolicyPeer::default()
    };
    let (v6, v4): (Vec<String>, Vec<String>) =
        except.iter().cloned().partition(|c| c.contains(':'));
    let mut rules = vec![NetworkPolicyEgressRule {
        to: None,
        ports: Some(vec![port(53, "UDP"), port(53, "TCP")]),
    }];
    for e in egress {
        let rule = match e {
            Egress::Minio => NetworkPolicyEgressRule {
                to: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector {
                        match_labels: Some(labels(&owner.name, "server")),
                        ..LabelSelector::default()
                    }),
                    ..NetworkPolicyPeer::default()
                }]),
                ports: Some(vec![
                    port(S3_PORT, "TCP"),
                    port(NODE_EXPORTER_PORT, "TCP"),
                    port(IPERF3_PORT, "TCP"),
                ]),
            },
            Egress::KeyService => NetworkPolicyEgressRule {
                to: Some(vec![NetworkPolicyPeer {
                    pod_selector: Some(LabelSelector {
                        match_labels: Some(labels(&owner.name, crate::keyservice::COMPONENT)),
                        ..LabelSelector::default()
                    }),
                    ..NetworkPolicyPeer::default()
                }]),
                ports: Some(vec![crate::keyservice::port_range()]),
            },
            Egress::Host { ip, port: p, .. } => NetworkPolicyEgressRule {
                to: Some(match ip {
                    Some(std::net::IpAddr::V4(a)) => vec![block(format!("{a}/32"), Vec::new())],
                    Some(std::net::IpAddr::V6(a)) => vec![block(format!("{a}/128"), Vec::new())],
                    // A name may be outside the cluster (the address blocks) or a
                    // Service inside it, whose pods some CNIs (Cilium) never match by
                    // address: any pod, on that port only.
                    None => vec![
                        block("0.0.0.0/0".into(), v4.clone()),
                        block("::/0".into(), v6.clone()),
                        NetworkPolicyPeer {
                            namespace_selector: Some(LabelSelector::default()),
                            ..NetworkPolicyPeer::default()
                        },
                    ],
                }),
                ports: Some(vec![port(i32::from(*p), "TCP")]),
            },
        };
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    let pods = LabelSelector {
        match_labels: Some(BTreeMap::from([(
            CAMPAIGN_LABEL.to_owned(),
            owner.name.clone(),
        )])),
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "app.kubernetes.io/component".into(),
            operator: "In".into(),
            values: Some(vec!["worker".into(), "analysis".into(), "probe".into()]),
        }]),
    };
    NetworkPolicy {
        metadata: owner.meta(owner.workers_fence(), "worker"),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(pods),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: None,
                ports: Some(vec![port(WORKER_METRICS_PORT, "TCP")]),
            }]),
            egress: Some(rules),
        }),
    }
}

/// The objects the operator makes for campaign `c` that carry no secret (every child but
/// its Secrets), as it makes them: MinIO's Service, StatefulSet and fence (unless the
/// server is external), the workers' fence, the worker Job of the first run's first
/// attempt, the analysis Job and, with `testbed.baselines`, the pre-flight probe Job. What
/// `crdgen --children` writes for `make chart-check`'s scan, and what the test that every
/// pod is fenced reads.
pub fn children(
    c: &BenchmarkCampaign,
    worker_image: &str,
    node_exporter_image: &str,
    probe_image: &str,
    operator_namespace: Option<&str>,
    egress_except: &[String],
) -> Result<Vec<serde_json::Value>> {
    use crate::deploy;
    let o = Owner::of(c)?;
    let m = deploy::manifest(c);
    let plan = campaign::design::plan(&m);
    let kts = deploy::key_types(&plan);
    let deadline = std::time::Duration::from_secs(3600);
    let (pods, clients) = deploy::worker_pods(worker_image, c, &o, &kts, deadline)?;
    let spec = deploy::run_spec(&m, &plan, 0, &o)?;
    let name = crate::step::job_name(&o.name, 0, 1);
    let worker = worker_job(&o, &name, &spec, 1, 0, &pods, clients.clone())?;
    let name = crate::step::analysis_job_name(&o.name);
    let analysis = analysis_job(&o, &name, &deploy::analysis_spec(&m, &o), &pods, clients)?;
    let fence = workers_network_policy(&o, &deploy::egress(&m.spec)?, egress_except);
    let value = |what: &'static str, v: serde_json::Result<serde_json::Value>| {
        v.map_err(|source| Error::Field {
            field: what,
            source,
        })
    };
    let mut out = vec![
        value("the workers' NetworkPolicy", serde_json::to_value(fence))?,
        value("the worker Job", serde_json::to_value(worker))?,
        value("the analysis Job", serde_json::to_value(analysis))?,
    ];
    if m.spec.testbed.baselines {
        let name = crate::step::probe_job_name(&o.name);
        let (pods, clients) = deploy::probe_pods(probe_image, c, &o, deadline)?;
        let disk = run::preflight::Probe::NotMeasured("not taken yet".into());
        let spec = deploy::probe_spec(c, &m, &plan, &o, disk);
        let probe = probe_job(&o, &name, &spec, &pods, clients)?;
        out.push(value("the probe Job", serde_json::to_value(probe))?);
    }
    if let Some((minio, placement)) = deploy::server_pods(c)? {
        let set = minio_statefulset(
            &o,
            &minio,
            placement,
            node_exporter_image,
            deploy::server_probe(&m, &plan, probe_image),
        );
        out.push(value(
            "MinIO's Service",
            serde_json::to_value(minio_service(&o)),
        )?);
        out.push(value("MinIO's StatefulSet", serde_json::to_value(set))?);
        let np = minio_network_policy(&o, operator_namespace);
        out.push(value("MinIO's NetworkPolicy", serde_json::to_value(np))?);
    }
    if let Some(ks) = deploy::key_service(&plan)? {
        use crate::keyservice;
        let kts = deploy::key_service_key_types(&plan);
        let placement = deploy::server_placement(c)?;
        let d = keyservice::deployment(&o, &pods, &ks, &kts, placement)?;
        out.push(value(
            "the key service's Deployment",
            serde_json::to_value(d),
        )?);
        let svc = keyservice::service(&o, &ks);
        out.push(value(
            "the key service's Service",
            serde_json::to_value(svc),
        )?);
        let np = keyservice::network_policy(&o);
        out.push(value(
            "the key service's NetworkPolicy",
            serde_json::to_value(np),
        )?);
    }
    Ok(out)
}

/// MinIO's headless Service (stable DNS for the one pod).
pub fn minio_service(owner: &Owner) -> Service {
    Service {
        metadata: owner.meta(owner.minio(), "server"),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_owned()),
            selector: Some(labels(&owner.name, "server")),
            ports: Some(vec![
                ServicePort {
                    name: Some("s3".to_owned()),
                    port: S3_PORT,
                    target_port: Some(IntOrString::Int(S3_PORT)),
                    ..ServicePort::default()
                },
                ServicePort {
                    name: Some("node-metrics".to_owned()),
                    port: NODE_EXPORTER_PORT,
                    target_port: Some(IntOrString::Int(NODE_EXPORTER_PORT)),
                    ..ServicePort::default()
                },
            ]),
            publish_not_ready_addresses: Some(false),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// Where a pod may run: the node selector (explicit, or the node-group label), the
/// tolerations and the affinity of the spec, converted to the API types.
#[derive(Clone, Debug)]
pub struct Placement {
    /// Node selector.
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations.
    pub tolerations: Vec<Toleration>,
    /// Affinity.
    pub affinity: Option<Affinity>,
    /// The lead Job of an interleaved attempt whose pods these share nodes with
    /// ([`Placement::beside`]).
    pub turns_with: Option<String>,
}

/// The label of an interleaved attempt's pods: the name of its lead Job.
pub const TURNS_LABEL: &str = "pqbench.io/turns-with";
/// The label the Job controller puts on an Indexed Job's pods.
pub const COMPLETION_INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

impl Placement {
    /// Converts the campaign's plain-data placement; `field` names it in errors.
    pub fn new(
        node_group: &str,
        node_selector: Option<&BTreeMap<String, String>>,
        tolerations: &[cluster::Toleration],
        affinity: Option<&serde_json::Value>,
        field: &'static str,
    ) -> Result<Self> {
        let tolerations = tolerations
            .iter()
            .map(|t| Toleration {
                key: t.key.clone(),
                operator: t.operator.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
                toleration_seconds: t.toleration_seconds,
            })
            .collect();
        let affinity = affinity
            .map(|a| serde_json::from_value::<Affinity>(a.clone()))
            .transpose()
            .map_err(|source| Error::Field { field, source })?;
        Ok(Self {
            node_selector: cluster::node_selector(node_selector, node_group),
            tolerations,
            affinity,
            turns_with: None,
        })
    }

    /// The placement of an interleaved attempt's pods (`lead`: its lead Job's name): on top
    /// of the campaign's, process `i` of every run in the attempt goes to the node of
    /// process `i` of the others (a required pod affinity on [`TURNS_LABEL`] with
    /// `matchLabelKeys` on the completion index, by hostname), so the arms of a block take
    /// their turns on the same machine and against the same server. The first pod of a
    /// group may go anywhere the campaign allows (the self-affinity rule); the rest follow
    /// it. Under the static CPU manager each pod still gets whole CPUs of its own: the arms
    /// share the node, its memory and its network, not a core.
    pub fn beside(mut self, lead: Option<&str>) -> Self {
        let Some(lead) = lead else {
            return self;
        };
        let term = PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(TURNS_LABEL.to_owned(), lead.to_owned())])),
                ..LabelSelector::default()
            }),
            match_label_keys: Some(vec![COMPLETION_INDEX_LABEL.to_owned()]),
            topology_key: "kubernetes.io/hostname".to_owned(),
            ..PodAffinityTerm::default()
        };
        let mut affinity = self.affinity.take().unwrap_or_default();
        let mut pod = affinity.pod_affinity.take().unwrap_or_default();
        pod.required_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .push(term);
        affinity.pod_affinity = Some(pod);
        self.affinity = Some(affinity);
        self.turns_with = Some(lead.to_owned());
        self
    }
}

fn quantities(m: &BTreeMap<String, Quantity>) -> Option<BTreeMap<String, KQuantity>> {
    (!m.is_empty()).then(|| {
        m.iter()
            .map(|(k, v)| (k.clone(), KQuantity(v.0.clone())))
            .collect()
    })
}

/// Whole-CPU requests = limits over `r` (Guaranteed QoS, which the kubelet's static CPU
/// manager pins to exclusive cores): cpu = `cpus`; memory requests = limits = the memory
/// limit given, else the request, else [`GUARANTEED_MEMORY`]. Other entries are kept.
pub fn guaranteed(r: Option<&cluster::Resources>, cpus: u32) -> cluster::Resources {
    let mut out = r.cloned().unwrap_or_default();
    let cpu = cluster::Quantity(cpus.to_string());
    let memory = out
        .limits
        .get("memory")
        .or_else(|| out.requests.get("memory"))
        .cloned()
        .unwrap_or_else(|| cluster::Quantity(GUARANTEED_MEMORY.to_owned()));
    for m in [&mut out.requests, &mut out.limits] {
        m.insert("cpu".to_owned(), cpu.clone());
        m.insert("memory".to_owned(), memory.clone());
    }
    out
}

/// Memory of a Guaranteed pod whose campaign gives none.
pub const GUARANTEED_MEMORY: &str = "2Gi";

/// The whole CPUs of one worker pod of `spec`'s run: the cell's `clientCores` over the
/// pods (rounded up), else `clients.cpus`; `None`: no CPU placement.
pub fn worker_cpus(spec: &run::runspec::RunSpec, pods: &WorkerPods<'_>) -> Option<u32> {
    spec.client_cores
        .map(|k| k.div_ceil(pods.processes.max(1)).max(1))
        .or(pods.cpus)
}

/// Container resources from the campaign's plain-data form.
pub fn resources(r: Option<&cluster::Resources>) -> Option<ResourceRequirements> {
    r.map(|r| ResourceRequirements {
        requests: quantities(&r.requests),
        limits: quantities(&r.limits),
        ..ResourceRequirements::default()
    })
}

/// MinIO as a one-replica StatefulSet: non-root, read-only root filesystem, seccomp
/// RuntimeDefault, data on an emptyDir or a claim of `storage.size`, ready when
/// `/minio/health/ready` answers.
pub fn minio_statefulset(
    owner: &Owner,
    minio: &MinioServer,
    placement: Placement,
    node_exporter_image: &str,
    probe: Option<ServerProbe<'_>>,
) -> StatefulSet {
    let selector = labels(&owner.name, "server");
    let secret = owner.credentials_secret();
    let claim = minio
        .storage
        .size
        .as_ref()
        .map(|size| PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("data".to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                storage_class_name: minio.storage.storage_class_name.clone(),
                resources: Some(VolumeResourceRequirements {
                    requests: Some(BTreeMap::from([(
                        "storage".to_owned(),
                        KQuantity(size.0.clone()),
                    )])),
                    ..VolumeResourceRequirements::default()
                }),
                ..PersistentVolumeClaimSpec::default()
            }),
            ..PersistentVolumeClaim::default()
        });
    let mut volumes = vec![Volume {
        // MinIO writes its own config under $HOME; the root filesystem is read-only.
        name: "home".to_owned(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }];
    if claim.is_none() {
        volumes.push(Volume {
            name: "data".to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
    }
    let (credentials_volume, credentials_mount) = secret_volume(
        "credentials",
        &secret,
        MINIO_CREDENTIALS_DIR,
        vec![
            (ACCESS_KEY.to_owned(), MINIO_ROOT_USER_FILE.to_owned()),
            (SECRET_KEY.to_owned(), MINIO_ROOT_PASSWORD_FILE.to_owned()),
        ],
    );
    volumes.push(credentials_volume);
    if probe.is_some() {
        // iperf3 keeps each stream's buffer in a file under $TMPDIR (/tmp): the root is
        // read-only.
        volumes.push(Volume {
            name: PROBE_TMP.to_owned(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
    }
    let container = Container {
        name: "minio".to_owned(),
        image: Some(minio.image.clone()),
        args: Some(
            ["server", "/data", "--address", ":9000"]
                .map(str::to_owned)
                .to_vec(),
        ),
        env: Some(vec![
            // MinIO reads its root user from files (`MINIO_ROOT_USER_FILE`, an absolute
            // path), here the credentials Secret mounted read-only: no Secret in its env.
            env_value(
                "MINIO_ROOT_USER_FILE",
                &format!("{MINIO_CREDENTIALS_DIR}/{MINIO_ROOT_USER_FILE}"),
            ),
            env_value(
                "MINIO_ROOT_PASSWORD_FILE",
                &format!("{MINIO_CREDENTIALS_DIR}/{MINIO_ROOT_PASSWORD_FILE}"),
            ),
            EnvVar {
                name: "HOME".to_owned(),
                value: Some("/home/minio".to_owned()),
                ..EnvVar::default()
            },
            // The workers sample /minio/v2/metrics/node (CPU and memory of the server).
            EnvVar {
                name: "MINIO_PROMETHEUS_AUTH_TYPE".to_owned(),
                value: Some("public".to_owned()),
                ..EnvVar::default()
            },
        ]),
        ports: Some(vec![ContainerPort {
            name: Some("s3".to_owned()),
            container_port: S3_PORT,
            ..ContainerPort::default()
        }]),
        readiness_probe: Some(Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/minio/health/ready".to_owned()),
                port: IntOrString::Int(S3_PORT),
                ..HTTPGetAction::default()
            }),
            period_seconds: Some(2),
            ..Probe::default()
        }),
        resources: resources(minio.resources.as_ref()),
        security_context: Some(restricted()),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "data".to_owned(),
                mount_path: "/data".to_owned(),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "home".to_owned(),
                mount_path: "/home/minio".to_owned(),
                ..VolumeMount::default()
            },
            credentials_mount,
        ]),
        ..Container::default()
    };
    StatefulSet {
        metadata: owner.meta(owner.minio(), "server"),
        spec: Some(StatefulSetSpec {
            replicas: Some(1),
            service_name: Some(owner.minio()),
            selector: LabelSelector {
                match_labels: Some(selector.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    init_containers: probe.map(|p| vec![disk_probe(p)]),
                    containers: [container, node_exporter(node_exporter_image)]
                        .into_iter()
                        .chain(probe.map(iperf3_server))
                        .collect(),
                    node_selector: Some(placement.node_selector),
                    tolerations: (!placement.tolerations.is_empty())
                        .then_some(placement.tolerations),
                    affinity: placement.affinity,
                    automount_service_account_token: Some(false),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(1000),
                        run_as_group: Some(1000),
                        fs_group: Some(1000),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".to_owned(),
                            ..SeccompProfile::default()
                        }),
                        ..PodSecurityContext::default()
                    }),
                    volumes: Some(volumes),
                    ..PodSpec::default()
                }),
            },
            volume_claim_templates: claim.map(|c| vec![c]),
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    }
}

/// The recipient keys Secret: one entry per key type (`x25519`, `ml-kem-768`, …) holding
/// the key file's JSON. Created once by the reconciler with keys it generates, immutable,
/// and never logged.
pub fn keys_secret(owner: &Owner, keys: &[(KeyType, Zeroizing<String>)]) -> Secret {
    Secret {
        metadata: owner.meta(owner.keys_secret(), "keys"),
        data: Some(
            keys.iter()
                .map(|(kt, json)| (kt.name().to_owned(), ByteString(json.as_bytes().to_vec())))
                .collect(),
        ),
        type_: Some("Opaque".to_owned()),
        immutable: Some(true),
        ..Secret::default()
    }
}

/// Everything a worker Job needs beyond the run spec.
#[derive(Clone, Debug)]
pub struct WorkerPods<'a> {
    /// The worker image.
    pub image: &'a str,
    /// Pods per run.
    pub processes: u32,
    /// Container resources.
    pub resources: Option<&'a cluster::Resources>,
    /// Secrets for pulling the image.
    pub image_pull_secrets: &'a [cluster::SecretName],
    /// The Secret with the keys of the store under test (`None`: the pods' identity).
    pub server_credentials: Option<String>,
    /// ServiceAccount of the pods (their identity, for IRSA).
    pub service_account_name: Option<String>,
    /// The Secret with the results store's own keys, if it has its own.
    pub results_credentials: Option<String>,
    /// The key types the campaign's arms use (entries of the keys Secret).
    pub key_types: &'a [KeyType],
    /// The key service's credentials Secret, when the campaign has remote arms.
    pub kms_credentials: Option<String>,
    /// The credentials Secrets of the key services remote arms name by endpoint, each
    /// mounted at [`crate::deploy::KMS_EXTERNAL_DIR`]`/<name>`.
    pub kms_external: Vec<String>,
    /// Seconds the Job may run before Kubernetes stops it.
    pub active_deadline_seconds: i64,
    /// Whole CPUs per pod from `clients.cpus` (requests = limits), if placed.
    pub cpus: Option<u32>,
}

/// Label holding a worker Job's plan index.
pub const RUN_INDEX_LABEL: &str = "pqbench.io/run-index";
/// Label holding a worker Job's attempt.
pub const ATTEMPT_LABEL: &str = "pqbench.io/attempt";
/// Annotation holding a worker Job's run id (run ids may exceed a label's 63 characters).
pub const RUN_ID_ANNOTATION: &str = "pqbench.io/run-id";

pub(crate) fn env_value(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        ..EnvVar::default()
    }
}

/// Where MinIO's container mounts the credentials Secret (its root user's files).
pub const MINIO_CREDENTIALS_DIR: &str = "/var/run/pqbench/minio";
const MINIO_ROOT_USER_FILE: &str = "root-user";
const MINIO_ROOT_PASSWORD_FILE: &str = "root-password";

/// The group a worker pod runs as, and the `fsGroup` its Secret volumes' files belong to.
const WORKER_GROUP: i64 = 65532;

/// A Secret mounted read-only at `dir`, its `items` (Secret key → file name) only; the
/// files are 0440 and belong to the pod's `fsGroup` (a non-root pod can read them, the
/// worker refuses anything wider).
fn secret_volume(name: &str, secret: &str, dir: &str, items: Vec<(String, String)>) -> Mount {
    let volume = Volume {
        name: name.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            default_mode: Some(0o440),
            items: Some(
                items
                    .into_iter()
                    .map(|(key, path)| KeyToPath {
                        key,
                        path,
                        mode: None,
                    })
                    .collect(),
            ),
            optional: Some(false),
        }),
        ..Volume::default()
    };
    let mount = VolumeMount {
        name: name.to_owned(),
        mount_path: dir.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    };
    (volume, mount)
}

/// A pod's volume and its container's mount of it.
pub(crate) type Mount = (Volume, VolumeMount);

/// The Secrets a worker pod mounts (never environment variables): the store under test's
/// credentials, the results store's own, and with `keys` the recipient keys of the
/// campaign's key types. Where the run spec finds them: [`crate::deploy::environment`].
fn secret_mounts(owner: &Owner, pods: &WorkerPods<'_>, keys: bool) -> Vec<Mount> {
    use crate::deploy::{RESULTS_CREDENTIALS_DIR, S3_CREDENTIALS_DIR};
    let credentials = || {
        [ACCESS_KEY, SECRET_KEY]
            .map(|k| (k.to_owned(), k.to_owned()))
            .to_vec()
    };
    let mut out = Vec::new();
    if let Some(secret) = &pods.server_credentials {
        out.push(secret_volume(
            "s3-credentials",
            secret,
            S3_CREDENTIALS_DIR,
            credentials(),
        ));
    }
    if let Some(secret) = &pods.results_credentials {
        out.push(secret_volume(
            "results-credentials",
            secret,
            RESULTS_CREDENTIALS_DIR,
            credentials(),
        ));
    }
    if keys {
        out.extend(keys_mount(owner, pods));
    }
    if let Some(secret) = &pods.kms_credentials {
        out.push(kms_credentials_mount(secret));
    }
    for (i, secret) in pods.kms_external.iter().enumerate() {
        out.push(secret_volume(
            &format!("kms-external-{i}"),
            secret,
            &format!("{}/{secret}", crate::deploy::KMS_EXTERNAL_DIR),
            credentials(),
        ));
    }
    out
}

/// The recipient keys Secret's entries of `pods.key_types` at [`crate::deploy::KEYS_DIR`].
fn keys_mount(owner: &Owner, pods: &WorkerPods<'_>) -> Option<Mount> {
    if pods.key_types.is_empty() {
        return None;
    }
    let items = pods
        .key_types
        .iter()
        .map(|kt| {
            let file = run::runspec::key_file_name(std::path::Path::new(""), *kt);
            (kt.name().to_owned(), file.display().to_string())
        })
        .collect();
    Some(secret_volume(
        "keys",
        &owner.keys_secret(),
        crate::deploy::KEYS_DIR,
        items,
    ))
}

fn kms_credentials_mount(secret: &str) -> Mount {
    let items = [ACCESS_KEY, SECRET_KEY]
        .map(|k| (k.to_owned(), k.to_owned()))
        .to_vec();
    secret_volume(
        "kms-credentials",
        secret,
        crate::deploy::KMS_CREDENTIALS_DIR,
        items,
    )
}

/// What the key service's pod mounts: the recipient keys of its arms and its credentials.
pub(crate) fn key_service_mounts(owner: &Owner, pods: &WorkerPods<'_>) -> Vec<Mount> {
    keys_mount(owner, pods)
        .into_iter()
        .chain(Some(kms_credentials_mount(&owner.kms_credentials_secret())))
        .collect()
}

/// The pod of a worker Job: `pqbench-worker ARGS` with `env` on the client node group,
/// non-root on a read-only root with `/tmp` an emptyDir.
pub(crate) fn worker_pod(
    pods: &WorkerPods<'_>,
    labels: BTreeMap<String, String>,
    args: &[&str],
    env: Vec<EnvVar>,
    secrets: Vec<Mount>,
    placement: Placement,
) -> PodTemplateSpec {
    let (secret_volumes, secret_mounts): (Vec<Volume>, Vec<VolumeMount>) =
        secrets.into_iter().unzip();
    let mut volume_mounts = vec![VolumeMount {
        name: "tmp".to_owned(),
        mount_path: "/tmp".to_owned(),
        ..VolumeMount::default()
    }];
    volume_mounts.extend(secret_mounts);
    let mut volumes = vec![Volume {
        name: "tmp".to_owned(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }];
    volumes.extend(secret_volumes);
    let container = Container {
        name: "worker".to_owned(),
        image: Some(pods.image.to_owned()),
        args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
        // The chart's PodMonitor scrapes this port by name.
        ports: Some(vec![ContainerPort {
            name: Some("metrics".to_owned()),
            container_port: WORKER_METRICS_PORT,
            ..ContainerPort::default()
        }]),
        env: Some(env),
        resources: resources(pods.resources),
        security_context: Some(restricted()),
        volume_mounts: Some(volume_mounts),
        ..Container::default()
    };
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            restart_policy: Some("Never".to_owned()),
            node_selector: Some(placement.node_selector),
            tolerations: (!placement.tolerations.is_empty()).then_some(placement.tolerations),
            affinity: placement.affinity,
            image_pull_secrets: (!pods.image_pull_secrets.is_empty()).then(|| {
                pods.image_pull_secrets
                    .iter()
                    .map(|s| LocalObjectReference {
                        name: s.name.clone(),
                    })
                    .collect()
            }),
            // IRSA's token is a projected volume of its own; the API token is not needed.
            service_account_name: pods.service_account_name.clone(),
            automount_service_account_token: Some(false),
            enable_service_links: Some(false),
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(WORKER_GROUP),
                run_as_group: Some(WORKER_GROUP),
                fs_group: Some(WORKER_GROUP),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".to_owned(),
                    ..SeccompProfile::default()
                }),
                ..PodSecurityContext::default()
            }),
            volumes: Some(volumes),
            ..PodSpec::default()
        }),
    }
}

/// The worker Job of one attempt of one run: an Indexed Job with one pod per client
/// process, each running `pqbench-worker --spec-env PQBENCH_RUN_SPEC --index-env
/// JOB_COMPLETION_INDEX` on the client node group. A pod that fails is not retried
/// (`backoffLimitPerIndex: 0`; the operator retries the whole run) and does not stop the
/// others. The spec carries no secret: keys and credentials come from Secrets mounted
/// read-only as files ([`crate::deploy::KEYS_DIR`] and beside it), never the environment.
pub fn worker_job(
    owner: &Owner,
    name: &str,
    spec: &run::runspec::RunSpec,
    attempt: u32,
    index: u32,
    pods: &WorkerPods<'_>,
    placement: Placement,
) -> Result<Job> {
    let spec_json = serde_json::to_string(spec).map_err(|source| Error::Field {
        field: "run spec",
        source,
    })?;
    let pinned = worker_cpus(spec, pods).map(|n| guaranteed(pods.resources, n));
    let pods = &WorkerPods {
        resources: pinned.as_ref().or(pods.resources),
        ..pods.clone()
    };
    let mut labels_ = labels(&owner.name, "worker");
    labels_.insert(RUN_INDEX_LABEL.to_owned(), index.to_string());
    labels_.insert(ATTEMPT_LABEL.to_owned(), attempt.to_string());
    let mut meta = owner.meta(name.to_owned(), "worker");
    meta.labels = Some(labels_.clone());
    if let Some(lead) = &placement.turns_with {
        labels_.insert(TURNS_LABEL.to_owned(), lead.clone());
    }
    meta.annotations = Some(BTreeMap::from([(
        RUN_ID_ANNOTATION.to_owned(),
        spec.run_id.clone(),
    )]));
    let env = vec![
        env_value("PQBENCH_RUN_SPEC", &spec_json),
        env_value("TMPDIR", "/tmp"),
    ];
    let args = [
        "--quiet",
        "--spec-env",
        "PQBENCH_RUN_SPEC",
        "--index-env",
        "JOB_COMPLETION_INDEX",
        "--metrics-addr",
        WORKER_METRICS_ADDR,
    ];
    let n = i32::try_from(pods.processes).unwrap_or(i32::MAX);
    Ok(Job {
        metadata: meta,
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".to_owned()),
            completions: Some(n),
            parallelism: Some(n),
            backoff_limit_per_index: Some(0),
            active_deadline_seconds: Some(pods.active_deadline_seconds),
            template: worker_pod(
                pods,
                labels_,
                &args,
                env,
                secret_mounts(owner, pods, true),
                placement,
            ),
            ..JobSpec::default()
        }),
        ..Job::default()
    })
}

/// The analysis Job: one `pqbench-worker --analysis-env PQBENCH_ANALYSIS_SPEC` pod on the
/// client node group (the worker image, its credentials from the same Secrets mounted as
/// files; no recipient key). It downloads the run files into `/tmp`, analyses them,
/// uploads the report and last the outcome the operator reads. A failed pod is tried once
/// more by the Job; the operator deletes a Job that failed and makes it again until the
/// analysis deadline (`activeDeadlineSeconds`).
pub fn analysis_job(
    owner: &Owner,
    name: &str,
    spec: &run::verdicts::AnalysisSpec,
    pods: &WorkerPods<'_>,
    placement: Placement,
) -> Result<Job> {
    let spec_json = serde_json::to_string(spec).map_err(|source| Error::Field {
        field: "analysis spec",
        source,
    })?;
    let (flag, var) = ("--analysis-env", "PQBENCH_ANALYSIS_SPEC");
    let call = OnePod {
        component: "analysis",
        args: [flag, var],
        spec: (var, &spec_json),
    };
    Ok(one_pod_job(owner, name, &call, pods, placement))
}

/// A Job of one `pqbench-worker` pod (the analysis, the probe) and what it runs.
struct OnePod<'a> {
    /// Its `app.kubernetes.io/component`.
    component: &'static str,
    /// `pqbench-worker`'s arguments: the flag and the variable it names.
    args: [&'a str; 2],
    /// The variable and the spec's JSON.
    spec: (&'a str, &'a str),
}

/// One pod on the client node group, tried once more by the Job if it fails, stopped at
/// the pods' deadline; its spec in the environment, its credentials as mounted files.
fn one_pod_job(
    owner: &Owner,
    name: &str,
    call: &OnePod<'_>,
    pods: &WorkerPods<'_>,
    placement: Placement,
) -> Job {
    let labels_ = labels(&owner.name, call.component);
    let mut meta = owner.meta(name.to_owned(), call.component);
    meta.labels = Some(labels_.clone());
    let env = vec![
        env_value(call.spec.0, call.spec.1),
        env_value("TMPDIR", "/tmp"),
    ];
    Job {
        metadata: meta,
        spec: Some(JobSpec {
            completions: Some(1),
            parallelism: Some(1),
            backoff_limit: Some(1),
            active_deadline_seconds: Some(pods.active_deadline_seconds),
            template: worker_pod(
                pods,
                labels_,
                &call.args,
                env,
                secret_mounts(owner, pods, false),
                placement,
            ),
            ..JobSpec::default()
        }),
        ..Job::default()
    }
}

/// The sysctl that lets a group open ICMP datagram sockets (ping without `CAP_NET_RAW`).
pub const PING_GROUP_RANGE: &str = "net.ipv4.ping_group_range";

/// The pre-flight probe Job: one pod of the probe image on the clients' node group, placed
/// and fenced as the workers are, running `pqbench-worker --probe-env PQBENCH_PROBE_SPEC`
/// ([`run::preflight`]). `pods.image` is the probe image. Not retried past one failure:
/// the campaign goes on without baselines.
pub fn probe_job(
    owner: &Owner,
    name: &str,
    spec: &run::preflight::ProbeSpec,
    pods: &WorkerPods<'_>,
    placement: Placement,
) -> Result<Job> {
    let spec_json = serde_json::to_string(spec).map_err(|source| Error::Field {
        field: "probe spec",
        source,
    })?;
    let var = run::preflight::PROBE_SPEC_ENV;
    let call = OnePod {
        component: "probe",
        args: ["--probe-env", var],
        spec: (var, &spec_json),
    };
    let mut job = one_pod_job(owner, name, &call, pods, placement);
    // ping without a capability: ICMP datagram sockets for the pod's group, a sysctl of
    // the pod's own network namespace that Kubernetes counts safe (allowed by default and
    // by the restricted Pod Security Standard).
    if let Some(sc) = job
        .spec
        .as_mut()
        .and_then(|j| j.template.spec.as_mut())
        .and_then(|p| p.security_context.as_mut())
    {
        sc.sysctls = Some(vec![k8s_openapi::api::core::v1::Sysctl {
            name: PING_GROUP_RANGE.to_owned(),
            value: format!("{WORKER_GROUP} {WORKER_GROUP}"),
        }]);
    }
    Ok(job)
}

/// The container security context of every pod the operator makes: no privilege
/// escalation, read-only root, non-root, no capabilities.
fn restricted() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        capabilities: Some(k8s_openapi::api::core::v1::Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            ..Default::default()
        }),
        ..SecurityContext::default()
    }
}

/// The name of MinIO's disk-probe init container (whose termination message the operator
/// reads).
pub const DISK_PROBE_CONTAINER: &str = "disk-probe";

/// MinIO's `disk-probe` init container: `pqbench-worker --disk-probe /data` on MinIO's
/// data volume before MinIO starts (the disk to itself), its JSON the container's
/// termination message (`/dev/termination-log`, which the kubelet mounts writable on the
/// read-only root). It exits 0 even when fio cannot run: MinIO starts either way.
fn disk_probe(p: ServerProbe<'_>) -> Container {
    Container {
        name: DISK_PROBE_CONTAINER.to_owned(),
        image: Some(p.image.to_owned()),
        command: Some(vec!["pqbench-worker".to_owned()]),
        args: Some(vec![
            "--disk-probe".to_owned(),
            "/data".to_owned(),
            "--probe-seconds".to_owned(),
            p.seconds.to_string(),
            "--termination-log".to_owned(),
            "/dev/termination-log".to_owned(),
        ]),
        termination_message_path: Some("/dev/termination-log".to_owned()),
        termination_message_policy: Some("File".to_owned()),
        security_context: Some(restricted()),
        volume_mounts: Some(vec![VolumeMount {
            name: "data".to_owned(),
            mount_path: "/data".to_owned(),
            ..VolumeMount::default()
        }]),
        resources: Some(sidecar_resources("100m", "64Mi", "256Mi")),
        ..Container::default()
    }
}

/// The `iperf3 -s` sidecar in MinIO's pod: the pre-flight probe Job measures the network to
/// the server's node against it. Idle after the probe.
fn iperf3_server(p: ServerProbe<'_>) -> Container {
    Container {
        name: "iperf3".to_owned(),
        image: Some(p.image.to_owned()),
        command: Some(vec!["iperf3".to_owned()]),
        args: Some(vec![
            "-s".to_owned(),
            "-p".to_owned(),
            IPERF3_PORT.to_string(),
        ]),
        ports: Some(vec![ContainerPort {
            name: Some("iperf3".to_owned()),
            container_port: IPERF3_PORT,
            ..ContainerPort::default()
        }]),
        resources: Some(sidecar_resources("10m", "16Mi", "64Mi")),
        security_context: Some(restricted()),
        volume_mounts: Some(vec![VolumeMount {
            name: PROBE_TMP.to_owned(),
            mount_path: "/tmp".to_owned(),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    }
}

/// A small container's resources beside MinIO: `cpu` and `memory` requested, memory capped
/// at `limit` (no CPU limit: it is throttled otherwise, and these sleep but for moments).
fn sidecar_resources(cpu: &str, memory: &str, limit: &str) -> ResourceRequirements {
    let q = |v: &str| KQuantity(v.to_owned());
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_owned(), q(cpu)),
            ("memory".to_owned(), q(memory)),
        ])),
        limits: Some(BTreeMap::from([("memory".to_owned(), q(limit))])),
        ..ResourceRequirements::default()
    }
}

/// The iperf3 sidecar's writable `/tmp` (an emptyDir).
const PROBE_TMP: &str = "probe-tmp";

/// The node-exporter sidecar in MinIO's pod: the pause rule and the server-host figures
/// read it. `/proc/meminfo`, `/proc/diskstats` and `/proc/stat` are host-wide inside a
/// container, so it needs no host mount.
fn node_exporter(image: &str) -> Container {
    Container {
        name: "node-exporter".to_owned(),
        image: Some(image.to_owned()),
        args: Some(vec![format!("--web.listen-address=:{NODE_EXPORTER_PORT}")]),
        ports: Some(vec![ContainerPort {
            name: Some("node-metrics".to_owned()),
            container_port: NODE_EXPORTER_PORT,
            ..ContainerPort::default()
        }]),
        resources: Some(sidecar_resources("10m", "32Mi", "64Mi")),
        security_context: Some(restricted()),
        ..Container::default()
    }
}

#[cfg(test)]
pub(crate) mod network_policy_tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn minio_is_reachable_from_the_campaigns_pods_and_the_operator_only() {
        let c: BenchmarkCampaign = serde_json::from_value(serde_json::json!({
            "apiVersion": "pqbench.io/v1alpha1", "kind": "BenchmarkCampaign",
            "metadata": {"name": "q", "namespace": "team-a", "uid": "u1"},
            "spec": {"modes": ["x25519", "ml-kem-768"], "baseline": "x25519",
                     "cells": [{"operation": ["get"], "objectSize": ["1KiB"], "concurrency": [1]}],
                     "repetitions": 2, "seed": 1}
        }))
        .unwrap();
        let owner = Owner::of(&c).unwrap();
        let np =
            serde_json::to_value(minio_network_policy(&owner, Some("pqbench-system"))).unwrap();
        assert_eq!(np["metadata"]["name"], "q-minio");
        assert_eq!(np["metadata"]["ownerReferences"][0]["uid"], "u1");
        let spec = &np["spec"];
        assert_eq!(
            spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"],
            "server"
        );
        assert_eq!(spec["policyTypes"], serde_json::json!(["Ingress"]));
        let rules = spec["ingress"].as_array().unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0]["from"][0]["podSelector"]["matchLabels"]["pqbench.io/campaign"],
            "q"
        );
        assert!(
            rules[0]["from"][0].get("namespaceSelector").is_none(),
            "the campaign's own namespace"
        );
        assert_eq!(
            rules[1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "pqbench-system"
        );
        for r in rules {
            let ports: Vec<i64> = r["ports"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["port"].as_i64().unwrap())
                .collect();
            // S3, node-exporter, and the iperf3 sidecar the pre-flight probe measures.
            assert_eq!(ports, [9000, 9100, 5201]);
        }
    }

    pub(crate) fn campaign(spec: serde_json::Value) -> BenchmarkCampaign {
        let mut c = serde_json::json!({
            "apiVersion": "pqbench.io/v1alpha1", "kind": "BenchmarkCampaign",
            "metadata": {"name": "q", "namespace": "team-a", "uid": "u1"},
            "spec": {"modes": ["x25519", "ml-kem-768"], "baseline": "x25519",
                     "cells": [{"operation": ["get"], "objectSize": ["1KiB"], "concurrency": [1]}],
                     "repetitions": 2, "seed": 1}
        });
        for (k, v) in spec.as_object().unwrap() {
            c["spec"][k] = v.clone();
        }
        serde_json::from_value(c).unwrap()
    }

    fn fence(c: &BenchmarkCampaign) -> serde_json::Value {
        let owner = Owner::of(c).unwrap();
        let egress = crate::deploy::egress(&c.spec.campaign).unwrap();
        let except = METADATA_ADDRESSES.map(String::from);
        serde_json::to_value(workers_network_policy(&owner, &egress, &except)).unwrap()
    }

    #[test]
    fn workers_reach_dns_their_minio_and_the_hosts_their_campaign_names_only() {
        let np = fence(&campaign(serde_json::json!({})));
        assert_eq!(np["metadata"]["name"], "q-workers");
        assert_eq!(np["metadata"]["ownerReferences"][0]["uid"], "u1");
        let spec = &np["spec"];
        assert_eq!(
            spec["podSelector"]["matchLabels"]["pqbench.io/campaign"],
            "q"
        );
        assert_eq!(
            spec["podSelector"]["matchExpressions"][0]["values"],
            serde_json::json!(["worker", "analysis", "probe"])
        );
        assert_eq!(
            spec["policyTypes"],
            serde_json::json!(["Ingress", "Egress"])
        );
        assert_eq!(
            spec["ingress"],
            serde_json::json!([{"ports": [{"port": 9464, "protocol": "TCP"}]}])
        );
        assert_eq!(
            spec["egress"],
            serde_json::json!([
                {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]},
                {"to": [{"podSelector": {"matchLabels": labels("q", "server")}}],
                 "ports": [{"port": 9000, "protocol": "TCP"}, {"port": 9100, "protocol": "TCP"},
                           {"port": 5201, "protocol": "TCP"}]},
            ])
        );

        // An external server by name, a results store by address, a collector, and the
        // pods' identity (STS): each on its own port; a name at any address but the
        // metadata service's.
        let c = campaign(serde_json::json!({
            "server": {"external": {"endpoint": "https://s3.eu-west-1.amazonaws.com",
                                    "region": "eu-west-1", "bucket": "b"}},
            "results": {"endpoint": "http://10.0.0.5:3900", "credentialsSecret": "r"},
            "telemetry": {"otlpEndpoint": "http://otel.observability:4317"},
            "clients": {"serviceAccountName": "irsa"}
        }));
        let egress = &fence(&c)["spec"]["egress"];
        let anywhere = |port: u16| {
            serde_json::json!({"to": [
                {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}},
                {"ipBlock": {"cidr": "::/0", "except": ["fd00:ec2::254/128"]}},
                {"namespaceSelector": {}}],
             "ports": [{"port": port, "protocol": "TCP"}]})
        };
        assert_eq!(egress.as_array().unwrap().len(), 4, "{egress:#}");
        assert_eq!(egress[1], anywhere(443), "the server and STS: one rule");
        assert_eq!(
            egress[2],
            serde_json::json!({"to": [{"ipBlock": {"cidr": "10.0.0.5/32"}}],
                               "ports": [{"port": 3900, "protocol": "TCP"}]})
        );
        assert_eq!(egress[3], anywhere(4317));
    }

    #[test]
    fn an_endpoint_that_is_not_a_url_names_its_field() {
        let c = campaign(serde_json::json!({
            "telemetry": {"otlpEndpoint": "otel.observability"}
        }));
        let err = crate::deploy::unsupported(&c.spec.campaign).unwrap();
        assert!(
            err.starts_with("spec.telemetry.otlpEndpoint: \"otel.observability\""),
            "{err}"
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    pub(crate) fn owner() -> Owner {
        Owner {
            name: "quick".into(),
            namespace: "bench".into(),
            reference: OwnerReference {
                api_version: "pqbench.io/v1alpha1".into(),
                kind: "BenchmarkCampaign".into(),
                name: "quick".into(),
                uid: "0000-1111".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
        }
    }

    fn placement(selector: Option<&BTreeMap<String, String>>) -> Placement {
        Placement::new(
            "server",
            selector,
            &[cluster::Toleration {
                key: Some("dedicated".into()),
                operator: Some("Equal".into()),
                value: Some("server".into()),
                effect: Some("NoSchedule".into()),
                toleration_seconds: None,
            }],
            None,
            "spec.server.affinity",
        )
        .unwrap()
    }

    /// Whether a NetworkPolicy's pod selector selects pods labelled `labels` (matchLabels
    /// and `In` expressions, the only forms the operator writes).
    pub(crate) fn selects(
        np: &k8s_openapi::api::networking::v1::NetworkPolicy,
        labels: &BTreeMap<String, String>,
    ) -> bool {
        let sel = np.spec.as_ref().unwrap().pod_selector.as_ref().unwrap();
        let by_label = sel
            .match_labels
            .iter()
            .flatten()
            .all(|(k, v)| labels.get(k) == Some(v));
        let by_expr = sel.match_expressions.iter().flatten().all(|e| {
            assert_eq!(e.operator, "In");
            labels
                .get(&e.key)
                .is_some_and(|v| e.values.iter().flatten().any(|x| x == v))
        });
        by_label && by_expr
    }

    /// Every pod a campaign's children make (worker Jobs, the analysis Job, MinIO) is
    /// selected by exactly one of the campaign's NetworkPolicies: the example applied as its
    /// text.
    #[test]
    fn every_campaign_pod_is_fenced_by_a_network_policy() {
        let mut c: BenchmarkCampaign =
            serde_yaml_ng::from_str(include_str!("../../examples/cluster-minio.yaml")).unwrap();
        c.metadata.namespace = Some("team-a".into());
        c.metadata.uid = Some("u1".into());
        let children = children(
            &c,
            "worker:1",
            DEFAULT_NODE_EXPORTER_IMAGE,
            "probe:1",
            None,
            &[],
        )
        .unwrap();
        let kind = |k: &'static str| children.iter().filter(move |v| v["kind"] == k);
        let fences: Vec<k8s_openapi::api::networking::v1::NetworkPolicy> = kind("NetworkPolicy")
            .map(|v| serde_json::from_value(v.clone()).unwrap())
            .collect();
        assert_eq!(fences.len(), 2);
        let templates: Vec<(String, BTreeMap<String, String>)> = kind("Job")
            .chain(kind("StatefulSet"))
            .map(|v| {
                let labels = &v["spec"]["template"]["metadata"]["labels"];
                (
                    v["metadata"]["name"].to_string(),
                    serde_json::from_value(labels.clone()).unwrap(),
                )
            })
            .collect();
        assert_eq!(templates.len(), 4, "worker, analysis, probe, MinIO");
        for (what, labels) in templates {
            let by: Vec<_> = fences.iter().filter(|np| selects(np, &labels)).collect();
            assert_eq!(by.len(), 1, "{what}'s pods: {labels:?}");
        }
    }

    /// The testbed probes where their hardware is (the example applied as its text): fio on
    /// MinIO's data volume before MinIO starts, iperf3's server beside it, the Job on the
    /// clients' node group aiming at MinIO's pod; none with `testbed.baselines: false`.
    #[test]
    fn the_testbed_probes_sit_beside_minio_and_on_the_clients_node_group() {
        let text = include_str!("../../examples/cluster-minio.yaml");
        let mut c: BenchmarkCampaign = serde_yaml_ng::from_str(text).unwrap();
        c.metadata.namespace = Some("team-a".into());
        c.metadata.uid = Some("u1".into());
        let kids = children(
            &c,
            "worker:1",
            DEFAULT_NODE_EXPORTER_IMAGE,
            "probe:1",
            None,
            &[],
        )
        .unwrap();
        let of = |kind: &str, component: &str| {
            kids.iter()
                .find(|v| {
                    v["kind"] == kind
                        && v["metadata"]["labels"]["app.kubernetes.io/component"] == component
                })
                .cloned()
        };
        let set = of("StatefulSet", "server").unwrap();
        let pod = &set["spec"]["template"]["spec"];
        let init = &pod["initContainers"][0];
        assert_eq!(init["name"], DISK_PROBE_CONTAINER);
        assert_eq!(init["image"], "probe:1");
        assert_eq!(
            init["args"],
            serde_json::json!([
                "--disk-probe",
                "/data",
                "--probe-seconds",
                "2",
                "--termination-log",
                "/dev/termination-log"
            ]),
            "a tenth of the 20 s window"
        );
        assert_eq!(init["volumeMounts"][0]["name"], "data");
        assert_eq!(init["volumeMounts"][0]["mountPath"], "/data");
        assert_eq!(init["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(pod["containers"][2]["name"], "iperf3");
        assert_eq!(
            pod["containers"][2]["args"],
            serde_json::json!(["-s", "-p", "5201"])
        );
        // iperf3 keeps its streams' buffers in files under /tmp, the root being read-only.
        assert_eq!(pod["containers"][2]["volumeMounts"][0]["mountPath"], "/tmp");
        assert!(
            pod["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["name"] == "probe-tmp" && v["emptyDir"].is_object())
        );
        assert_eq!(
            pod["containers"][2]["securityContext"]["capabilities"]["drop"],
            serde_json::json!(["ALL"])
        );

        let job = of("Job", "probe").unwrap();
        let worker = of("Job", "worker").unwrap();
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(job["metadata"]["name"], "cluster-minio-probe");
        assert_eq!(
            job["spec"]["template"]["spec"]["securityContext"]["sysctls"],
            serde_json::json!([{"name": "net.ipv4.ping_group_range", "value": "65532 65532"}]),
            "ping without a capability"
        );
        assert_eq!(
            pod["nodeSelector"],
            worker["spec"]["template"]["spec"]["nodeSelector"]
        );
        assert_eq!(pod["containers"][0]["image"], "probe:1");
        assert_eq!(
            pod["containers"][0]["args"],
            serde_json::json!(["--probe-env", "PQBENCH_PROBE_SPEC"])
        );
        let env = pod["containers"][0]["env"].as_array().unwrap();
        assert!(
            env.iter().all(|e| e.get("valueFrom").is_none()),
            "no Secret in the environment"
        );
        let spec: run::preflight::ProbeSpec =
            serde_json::from_str(env[0]["value"].as_str().unwrap()).unwrap();
        assert_eq!(spec.site, "node group clients");
        assert_eq!(
            spec.s3.endpoint,
            "http://cluster-minio-minio.team-a.svc:9000"
        );
        assert_eq!(spec.iperf3, Ok(run::preflight::IPERF3_PORT));
        assert_eq!(
            spec.settings,
            run::preflight::ProbeSettings {
                seconds: 2,
                streams: 8
            }
        );
        assert_eq!(
            spec.server_cores, None,
            "requests only: MinIO is not confined"
        );
        let run::runspec::Output::S3 { prefix, .. } = &spec.results else {
            unreachable!("S3 output")
        };
        assert_eq!(prefix, "team-a/cluster-minio/u1/");

        // Off: nothing of the probes is made.
        let off = text.replace(
            "  seed: 20261201\n",
            "  seed: 20261201\n  testbed: {baselines: false}\n",
        );
        assert_ne!(off, text);
        let mut c: BenchmarkCampaign = serde_yaml_ng::from_str(&off).unwrap();
        c.metadata.namespace = Some("team-a".into());
        c.metadata.uid = Some("u1".into());
        let kids = children(
            &c,
            "worker:1",
            DEFAULT_NODE_EXPORTER_IMAGE,
            "probe:1",
            None,
            &[],
        )
        .unwrap();
        assert!(
            !kids
                .iter()
                .any(|v| v["metadata"]["labels"]["app.kubernetes.io/component"] == "probe")
        );
        let set = kids.iter().find(|v| v["kind"] == "StatefulSet").unwrap();
        let pod = &set["spec"]["template"]["spec"];
        assert!(pod.get("initContainers").is_none());
        assert_eq!(pod["containers"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn an_external_servers_probe_is_ping_alone_and_minios_cores_are_its_cpu_limit() {
        let c = crate::resources::network_policy_tests::campaign(serde_json::json!({
            "server": {"external": {"endpoint": "https://s3.eu-west-1.amazonaws.com:8443",
                                    "region": "eu-west-1", "bucket": "b"}}
        }));
        let o = Owner::of(&c).unwrap();
        let m = crate::deploy::manifest(&c);
        let plan = campaign::design::plan(&m);
        let disk = run::preflight::Probe::Measured(run::preflight::Disk {
            write_bytes_per_s: 1e9,
            write_latency_ms: 1.0,
            block_bytes: 1 << 20,
            direct: true,
            tool: "fio".into(),
        });
        let spec = crate::deploy::probe_spec(&c, &m, &plan, &o, disk.clone());
        assert_eq!(spec.s3.endpoint, "https://s3.eu-west-1.amazonaws.com:8443");
        assert!(spec.iperf3.unwrap_err().contains("external"));
        assert!(
            matches!(spec.disk, run::preflight::Probe::NotMeasured(ref w) if w.contains("external"))
        );
        assert!(crate::deploy::server_probe(&m, &plan, "probe:1").is_none());

        let c = crate::resources::network_policy_tests::campaign(serde_json::json!({
            "server": {"cpus": "0-3"}
        }));
        let m = crate::deploy::manifest(&c);
        let spec = crate::deploy::probe_spec(&c, &m, &plan, &o, disk.clone());
        assert_eq!(spec.server_cores, Some(4.0));
        assert_eq!(spec.disk, disk);
        for (q, n) in [
            ("8", Some(8.0)),
            ("2.5", Some(2.5)),
            ("500m", Some(0.5)),
            ("0", None),
            ("x", None),
        ] {
            assert_eq!(crate::deploy::cpu_cores(q), n, "{q}");
        }
    }

    #[test]
    fn every_child_is_owned_and_labelled() {
        let o = owner();
        let metas = [
            credentials_secret(&o, "a", "b").metadata,
            minio_service(&o).metadata,
            minio_statefulset(
                &o,
                &MinioServer::default(),
                placement(None),
                DEFAULT_NODE_EXPORTER_IMAGE,
                None,
            )
            .metadata,
        ];
        for m in metas {
            assert_eq!(m.namespace.as_deref(), Some("bench"));
            let refs = m.owner_references.unwrap();
            assert_eq!(refs.len(), 1);
            assert_eq!(refs[0].controller, Some(true));
            assert_eq!(refs[0].uid, "0000-1111");
            assert_eq!(m.labels.unwrap()[CAMPAIGN_LABEL], "quick");
        }
    }

    #[test]
    fn minio_is_pinned_to_the_server_node_group_unless_a_selector_is_given() {
        let o = owner();
        let pod = |p| {
            minio_statefulset(
                &o,
                &MinioServer::default(),
                p,
                DEFAULT_NODE_EXPORTER_IMAGE,
                None,
            )
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
        };
        let s = pod(placement(None));
        assert_eq!(
            s.node_selector.unwrap(),
            BTreeMap::from([(cluster::NODE_GROUP_LABEL.to_owned(), "server".to_owned())])
        );
        assert_eq!(s.tolerations.unwrap()[0].key.as_deref(), Some("dedicated"));
        let explicit = BTreeMap::from([("pool".to_owned(), "s3".to_owned())]);
        assert_eq!(
            pod(placement(Some(&explicit))).node_selector.unwrap(),
            explicit
        );
    }

    #[test]
    fn minio_storage_is_an_empty_dir_or_a_claim() {
        let o = owner();
        let empty = minio_statefulset(
            &o,
            &MinioServer::default(),
            placement(None),
            DEFAULT_NODE_EXPORTER_IMAGE,
            None,
        );
        let spec = empty.spec.unwrap();
        assert!(spec.volume_claim_templates.is_none());
        let vols = spec.template.spec.unwrap().volumes.unwrap();
        assert!(
            vols.iter()
                .any(|v| v.name == "data" && v.empty_dir.is_some())
        );

        let mut m = MinioServer::default();
        m.storage.size = Some(Quantity("100Gi".into()));
        m.storage.storage_class_name = Some("gp3".into());
        let spec = minio_statefulset(&o, &m, placement(None), DEFAULT_NODE_EXPORTER_IMAGE, None)
            .spec
            .unwrap();
        let claim = &spec.volume_claim_templates.unwrap()[0];
        let cs = claim.spec.as_ref().unwrap();
        assert_eq!(cs.storage_class_name.as_deref(), Some("gp3"));
        assert_eq!(
            cs.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"],
            KQuantity("100Gi".into())
        );
        let vols = spec.template.spec.unwrap().volumes.unwrap();
        assert!(!vols.iter().any(|v| v.name == "data"));
    }

    #[test]
    fn minio_runs_hardened_and_reads_its_credentials_from_the_secret() {
        let o = owner();
        let pod = minio_statefulset(
            &o,
            &MinioServer::default(),
            placement(None),
            DEFAULT_NODE_EXPORTER_IMAGE,
            None,
        )
        .spec
        .unwrap()
        .template
        .spec
        .unwrap();
        let c = &pod.containers[0];
        let sc = c.security_context.as_ref().unwrap();
        assert_eq!(sc.read_only_root_filesystem, Some(true));
        assert_eq!(sc.allow_privilege_escalation, Some(false));
        assert_eq!(
            pod.security_context.unwrap().seccomp_profile.unwrap().type_,
            "RuntimeDefault"
        );
        // The root user from files of the credentials Secret, mounted read-only; no
        // Secret in the environment.
        let env = c.env.as_ref().unwrap();
        assert!(env.iter().all(|e| e.value_from.is_none()));
        let file = |name: &str| {
            env.iter()
                .find(|e| e.name == name)
                .and_then(|e| e.value.clone())
                .unwrap()
        };
        assert_eq!(
            file("MINIO_ROOT_USER_FILE"),
            "/var/run/pqbench/minio/root-user"
        );
        assert_eq!(
            file("MINIO_ROOT_PASSWORD_FILE"),
            "/var/run/pqbench/minio/root-password"
        );
        let mount = c
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.mount_path == MINIO_CREDENTIALS_DIR)
            .unwrap();
        assert_eq!(mount.read_only, Some(true));
        let v = pod.volumes.iter().flatten().find(|v| v.name == mount.name);
        let sv = v.and_then(|v| v.secret.as_ref()).unwrap();
        assert_eq!(sv.secret_name.as_deref(), Some("quick-s3-credentials"));
        assert_eq!(sv.default_mode, Some(0o440));
        let items: Vec<(&str, &str)> = sv
            .items
            .iter()
            .flatten()
            .map(|i| (i.key.as_str(), i.path.as_str()))
            .collect();
        assert_eq!(
            items,
            [(ACCESS_KEY, "root-user"), (SECRET_KEY, "root-password")]
        );
    }

    fn quick_spec() -> run::runspec::RunSpec {
        let m = crate::fixtures::quick();
        let plan = campaign::design::plan(&m);
        crate::deploy::run_spec(&m, &plan, 0, &owner()).unwrap()
    }

    /// Issue 18: CPU placement on Kubernetes is whole-CPU requests = limits (Guaranteed
    /// QoS): the cell's clientCores over the pods, else clients.cpus; memory too.
    #[test]
    fn placed_cpus_are_guaranteed_whole_cpus() {
        let mut spec = quick_spec();
        let kts = [KeyType::X25519];
        let given = cluster::Resources {
            requests: BTreeMap::from([("memory".into(), cluster::Quantity("512Mi".into()))]),
            limits: BTreeMap::new(),
        };
        let pods = WorkerPods {
            image: "worker:1",
            processes: 2,
            resources: Some(&given),
            image_pull_secrets: &[],
            server_credentials: None,
            results_credentials: None,
            service_account_name: None,
            key_types: &kts,
            kms_credentials: None,
            kms_external: Vec::new(),
            active_deadline_seconds: 600,
            cpus: Some(4),
        };
        let res = |spec: &run::runspec::RunSpec| {
            let clients = Placement::new("clients", None, &[], None, "x").unwrap();
            let job = worker_job(&owner(), "j", spec, 1, 0, &pods, clients).unwrap();
            let c = job
                .spec
                .unwrap()
                .template
                .spec
                .unwrap()
                .containers
                .remove(0);
            let r = c.resources.unwrap();
            let q = |m: &Option<BTreeMap<String, KQuantity>>, k: &str| {
                m.as_ref().and_then(|m| m.get(k)).map(|q| q.0.clone())
            };
            [
                q(&r.requests, "cpu"),
                q(&r.limits, "cpu"),
                q(&r.requests, "memory"),
                q(&r.limits, "memory"),
            ]
        };
        let some = |v: &str| Some(v.to_owned());
        // The main job's cell confines its clients to 1 core: 1 CPU per pod (rounded up).
        assert_eq!(spec.client_cores, Some(1));
        assert_eq!(
            res(&spec),
            [some("1"), some("1"), some("512Mi"), some("512Mi")]
        );
        spec.client_cores = Some(6);
        assert_eq!(res(&spec)[..2], [some("3"), some("3")]);
        // Without clientCores, clients.cpus.
        spec.client_cores = None;
        assert_eq!(res(&spec)[..2], [some("4"), some("4")]);
        // No memory given: the default.
        let g = guaranteed(None, 2);
        assert_eq!(g.limits["memory"].0, GUARANTEED_MEMORY);
        assert_eq!(g.requests["cpu"].0, "2");
    }

    #[test]
    fn an_interleaved_attempt_s_pods_share_a_node_per_process_index() {
        let spec = quick_spec();
        let pods = WorkerPods {
            image: "worker:1",
            processes: 2,
            resources: None,
            image_pull_secrets: &[],
            server_credentials: None,
            results_credentials: None,
            service_account_name: None,
            key_types: &[],
            kms_credentials: None,
            kms_external: Vec::new(),
            active_deadline_seconds: 600,
            cpus: None,
        };
        // The campaign's own affinity is kept beside the block's.
        let user = serde_json::json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
        let clients = Placement::new("clients", None, &[], Some(&user), "spec.clients.affinity")
            .unwrap()
            .beside(Some("quick-r0000-a1"));
        let job = worker_job(&owner(), "quick-r0001-w0000a1", &spec, 0, 1, &pods, clients).unwrap();
        let t = job.spec.unwrap().template;
        assert_eq!(
            t.metadata.unwrap().labels.unwrap().get(TURNS_LABEL),
            Some(&"quick-r0000-a1".to_owned())
        );
        let aff = t.spec.unwrap().affinity.unwrap();
        assert!(aff.node_affinity.is_some());
        let terms = aff
            .pod_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap();
        assert_eq!(terms.len(), 1);
        assert_eq!(terms[0].topology_key, "kubernetes.io/hostname");
        assert_eq!(
            terms[0].match_label_keys.as_deref(),
            Some(&[COMPLETION_INDEX_LABEL.to_owned()][..])
        );
        assert_eq!(
            terms[0]
                .label_selector
                .as_ref()
                .and_then(|l| l.match_labels.as_ref())
                .and_then(|l| l.get(TURNS_LABEL)),
            Some(&"quick-r0000-a1".to_owned())
        );
        // A run alone: no block placement.
        let alone = Placement::new("clients", None, &[], None, "spec.clients.affinity")
            .unwrap()
            .beside(None);
        assert!(alone.affinity.is_none() && alone.turns_with.is_none());
    }

    #[test]
    fn worker_jobs_are_indexed_pinned_and_take_secrets_by_reference() {
        let spec = quick_spec();
        let kts = [KeyType::X25519];
        let mut pods = WorkerPods {
            image: "worker:1",
            processes: 2,
            resources: None,
            image_pull_secrets: &[cluster::SecretName {
                name: "regcred".into(),
            }],
            server_credentials: Some("quick-s3-credentials".into()),
            results_credentials: None,
            service_account_name: None,
            key_types: &kts,
            kms_credentials: None,
            kms_external: Vec::new(),
            active_deadline_seconds: 600,
            cpus: None,
        };
        let clients = Placement::new("clients", None, &[], None, "spec.clients.affinity").unwrap();
        let job = worker_job(&owner(), "quick-r0000-a1", &spec, 1, 0, &pods, clients).unwrap();
        assert_eq!(
            job.metadata.owner_references.as_ref().unwrap()[0].uid,
            "0000-1111"
        );
        let js = job.spec.unwrap();
        assert_eq!(js.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((js.completions, js.parallelism), (Some(2), Some(2)));
        assert_eq!(js.backoff_limit_per_index, Some(0));
        let pod = js.template.spec.unwrap();
        assert_eq!(
            pod.node_selector.unwrap().get(cluster::NODE_GROUP_LABEL),
            Some(&"clients".to_owned())
        );
        assert_eq!(pod.image_pull_secrets.unwrap()[0].name, "regcred");
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        let env = pod.containers[0].env.clone().unwrap();
        assert!(
            env.iter().all(|e| e.value_from.is_none()),
            "no Secret reaches the environment"
        );
        assert_eq!(pod.security_context.as_ref().unwrap().fs_group, Some(65532));
        // Credentials and keys: Secret volumes, read-only, 0440, only the keys they need.
        // (mount path, Secret, its items as key → file)
        type Mounted = (String, String, Vec<(String, String)>);
        let mounted: Vec<Mounted> = pod.containers[0]
            .volume_mounts
            .iter()
            .flatten()
            .filter_map(|m| {
                let v = pod.volumes.iter().flatten().find(|v| v.name == m.name)?;
                let sv = v.secret.as_ref()?;
                assert_eq!(m.read_only, Some(true), "{}", m.name);
                assert_eq!(sv.default_mode, Some(0o440));
                let items = sv.items.iter().flatten();
                Some((
                    m.mount_path.clone(),
                    sv.secret_name.clone().unwrap(),
                    items.map(|i| (i.key.clone(), i.path.clone())).collect(),
                ))
            })
            .collect();
        let pair = |k: &str| (k.to_owned(), k.to_owned());
        assert_eq!(
            mounted,
            [
                (
                    crate::deploy::S3_CREDENTIALS_DIR.to_owned(),
                    "quick-s3-credentials".to_owned(),
                    vec![pair(ACCESS_KEY), pair(SECRET_KEY)]
                ),
                (
                    crate::deploy::KEYS_DIR.to_owned(),
                    "quick-keys".to_owned(),
                    vec![("x25519".to_owned(), "x25519.key".to_owned())]
                ),
            ]
        );
        let spec_env = env.iter().find(|e| e.name == "PQBENCH_RUN_SPEC").unwrap();
        let back: run::runspec::RunSpec =
            serde_json::from_str(spec_env.value.as_deref().unwrap()).unwrap();
        assert_eq!(back, spec);

        // With the pods' identity: no keys in the environment, the ServiceAccount set.
        pods.server_credentials = None;
        pods.service_account_name = Some("pqbench-irsa".into());
        let clients = Placement::new("clients", None, &[], None, "spec.clients.affinity").unwrap();
        let pod = worker_job(&owner(), "quick-r0000-a1", &spec, 1, 0, &pods, clients)
            .unwrap()
            .spec
            .unwrap()
            .template
            .spec
            .unwrap();
        assert_eq!(pod.service_account_name.as_deref(), Some("pqbench-irsa"));
        let secrets: Vec<_> = pod
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| v.secret.as_ref()?.secret_name.clone())
            .collect();
        assert_eq!(secrets, ["quick-keys"], "no credentials Secret");
    }

    #[test]
    fn a_bad_affinity_names_its_field() {
        let err = Placement::new(
            "clients",
            None,
            &[],
            Some(&serde_json::json!({"nodeAffinity": 3})),
            "spec.clients.affinity",
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().starts_with("spec.clients.affinity: "),
            "{err}"
        );
    }
}
