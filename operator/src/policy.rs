//! The tenant-input policy (issue 36): what a campaign may name on a shared cluster, checked
//! before the operator creates or reads anything for it.
//!
//! Creating a `BenchmarkCampaign` makes the operator create pods and hand them Secrets in
//! the campaign's namespace. Every field that chooses what runs or what is read is tenant
//! input, so each is held to the policy the platform team sets in the chart (`policy.*`):
//!
//! - **images** (`clients.image`, `server.minio.image`): the operator's own images (its
//!   worker and node-exporter images, MinIO's default) or an entry of `allowedImages`,
//!   either a whole reference (`repo@sha256:…`, `repo:tag`) or a prefix ending in `/`
//!   (`registry.example.com/pqbench/`);
//! - **Secrets a campaign names** (`server.external.credentialsSecret`,
//!   `results.credentialsSecret`, `arms[].kms.credentialsSecret`,
//!   `clients.imagePullSecrets[]`): only those the namespace's
//!   owner labelled [`CREDENTIALS_LABEL`]` = "true"`. The operator reads a Secret's
//!   metadata to see the label, and its data only once the label is there;
//! - **the workers' ServiceAccount** (`clients.serviceAccountName`, whose cloud role the
//!   pods then hold): only one labelled [`SERVICE_ACCOUNT_LABEL`]` = "true"`;
//! - **endpoints the operator's own identity signs for** (`results.endpoint` without a
//!   credentials Secret): only an entry of `allowedEndpoints` (`https://host[:port]`).
//!
//! A refusal names the field and what to do; the campaign fails with it before anything
//! is created.

use std::collections::BTreeMap;

use campaign::CampaignSpec;

/// The label a namespace's owner puts on a Secret a campaign may name.
pub const CREDENTIALS_LABEL: &str = "pqbench.io/credentials";
/// The label a namespace's owner puts on a ServiceAccount campaigns may give their pods.
pub const SERVICE_ACCOUNT_LABEL: &str = "pqbench.io/service-account";

/// The platform team's policy (the chart's `policy.*`, the operator's flags).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Images a campaign may name besides the operator's own: whole references or
    /// prefixes ending in `/`.
    pub allowed_images: Vec<String>,
    /// Endpoints (`scheme://host[:port]`) the operator may sign for with its own identity.
    pub allowed_endpoints: Vec<String>,
}

/// One refused field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The field path (`spec.clients.image`).
    pub field: String,
    /// Why, and what to do.
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.why)
    }
}

/// A Secret or ServiceAccount a campaign names, for the label check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    /// The field path.
    pub field: String,
    /// The object's name.
    pub name: String,
}

/// The Secrets a campaign names (each looked at by its metadata before use).
pub fn secrets(spec: &CampaignSpec) -> Vec<Named> {
    let mut out = Vec::new();
    if let Some(name) = spec
        .server
        .external
        .as_ref()
        .and_then(|e| e.credentials_secret.clone())
    {
        out.push(Named {
            field: "spec.server.external.credentialsSecret".into(),
            name,
        });
    }
    if let Some(name) = spec
        .results
        .as_ref()
        .and_then(|r| r.credentials_secret.clone())
    {
        out.push(Named {
            field: "spec.results.credentialsSecret".into(),
            name,
        });
    }
    for (i, k) in crate::deploy::external_kms(spec) {
        if let Some(name) = &k.credentials_secret {
            out.push(Named {
                field: format!("spec.arms[{i}].kms.credentialsSecret"),
                name: name.clone(),
            });
        }
    }
    for (i, s) in spec.clients.image_pull_secrets.iter().enumerate() {
        out.push(Named {
            field: format!("spec.clients.imagePullSecrets[{i}]"),
            name: s.name.clone(),
        });
    }
    out
}

/// The workers' ServiceAccount, if the campaign names one.
pub fn service_account(spec: &CampaignSpec) -> Option<Named> {
    spec.clients.service_account_name.clone().map(|name| Named {
        field: "spec.clients.serviceAccountName".into(),
        name,
    })
}

/// A policy list as a refusal quotes it.
fn listed(entries: &[String]) -> String {
    if entries.is_empty() {
        "none set".to_owned()
    } else {
        entries.join(", ")
    }
}

fn labelled(labels: &BTreeMap<String, String>, key: &str) -> bool {
    labels.get(key).is_some_and(|v| v == "true")
}

/// The label check of a named Secret (`labels`: its labels; `None` when it does not
/// exist, which is not the policy's to refuse: the campaign says so where it uses it).
pub fn check_secret(n: &Named, labels: Option<&BTreeMap<String, String>>) -> Option<Refusal> {
    let labels = labels?;
    (!labelled(labels, CREDENTIALS_LABEL)).then(|| Refusal {
        field: n.field.clone(),
        why: format!(
            "Secret {} is not labelled {CREDENTIALS_LABEL}: \"true\"; the operator uses only the Secrets the namespace's owner labelled for campaigns (kubectl label secret {} {CREDENTIALS_LABEL}=true)",
            n.name, n.name
        ),
    })
}

/// The label check of the workers' ServiceAccount (`None` labels: it does not exist).
pub fn check_service_account(
    n: &Named,
    labels: Option<&BTreeMap<String, String>>,
) -> Option<Refusal> {
    let why = match labels {
        None => format!("ServiceAccount {} does not exist", n.name),
        Some(l) if labelled(l, SERVICE_ACCOUNT_LABEL) => return None,
        Some(_) => format!(
            "ServiceAccount {} is not labelled {SERVICE_ACCOUNT_LABEL}: \"true\"; its pods would hold its cloud role, so the namespace's owner must label it for campaigns (kubectl label serviceaccount {} {SERVICE_ACCOUNT_LABEL}=true)",
            n.name, n.name
        ),
    };
    Some(Refusal {
        field: n.field.clone(),
        why,
    })
}

impl Policy {
    /// Whether `image` is allowed, with `own` the operator's own images.
    pub fn allows_image(&self, image: &str, own: &[&str]) -> bool {
        own.contains(&image)
            || self
                .allowed_images
                .iter()
                .any(|a| a == image || (a.ends_with('/') && image.starts_with(a.as_str())))
    }

    /// The spec's own checks: images and endpoints signed with the operator's identity
    /// (`identity_signs`: the results endpoint is reached that way). `own`: the operator's
    /// images.
    pub fn check_spec(
        &self,
        spec: &CampaignSpec,
        own: &[&str],
        identity_signs: Option<&str>,
    ) -> Vec<Refusal> {
        let mut out = Vec::new();
        let mut image = |field: &str, image: &str| {
            if !self.allows_image(image, own) {
                out.push(Refusal {
                    field: field.to_owned(),
                    why: format!(
                        "image {image} is not allowed here; the operator runs its own images and those of the chart's policy.allowedImages ({})",
                        listed(&self.allowed_images)
                    ),
                });
            }
        };
        if let Some(i) = &spec.clients.image {
            image("spec.clients.image", i);
        }
        if spec.server.external.is_none() {
            let minio = spec.server.minio.clone().unwrap_or_default();
            image("spec.server.minio.image", &minio.image);
        }
        if let Some(endpoint) = identity_signs
            && !self
                .allowed_endpoints
                .iter()
                .any(|a| endpoint.trim_end_matches('/') == a.trim_end_matches('/'))
        {
            out.push(Refusal {
                field: "spec.results.endpoint".into(),
                why: format!(
                    "{endpoint} would be reached with the operator's own cloud identity (no results.credentialsSecret); only the chart's policy.allowedEndpoints are ({}). Name a labelled credentials Secret instead",
                    listed(&self.allowed_endpoints)
                ),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn spec(yaml: &str) -> CampaignSpec {
        campaign::Manifest::parse(yaml, "t.yaml").unwrap().spec
    }

    const BASE: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: t}
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells: [{operation: [get], objectSize: [1KiB], concurrency: [1]}]
  repetitions: 2
  seed: 1
";

    #[test]
    fn images_are_the_operators_own_or_allowed_by_reference_or_prefix() {
        let p = Policy {
            allowed_images: vec![
                "registry.example.com/pqbench/".into(),
                "ghcr.io/x/minio@sha256:aa".into(),
            ],
            ..Policy::default()
        };
        let own = ["ghcr.io/pqbench/pqbench-worker:0.1.0"];
        assert!(p.allows_image("ghcr.io/pqbench/pqbench-worker:0.1.0", &own));
        assert!(p.allows_image("registry.example.com/pqbench/worker:1", &own));
        assert!(p.allows_image("ghcr.io/x/minio@sha256:aa", &own));
        // A prefix without its slash does not stretch to a sibling repository.
        assert!(!p.allows_image("registry.example.com/pqbench-evil/worker:1", &own));
        assert!(!p.allows_image("ghcr.io/x/minio@sha256:ab", &own));
        assert!(!Policy::default().allows_image("docker.io/library/busybox", &own));
    }

    #[test]
    fn a_campaign_image_outside_the_policy_is_refused_by_its_field() {
        let s = spec(&format!(
            "{BASE}  clients: {{image: docker.io/attacker/miner:1}}\n"
        ));
        let r = Policy::default().check_spec(
            &s,
            &[campaign::cluster::DEFAULT_MINIO_IMAGE, "worker:own"],
            None,
        );
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].field, "spec.clients.image");
        assert!(r[0].why.contains("docker.io/attacker/miner:1"), "{}", r[0]);
        // MinIO's default image is the operator's own.
        assert!(
            Policy::default()
                .check_spec(&spec(BASE), &[campaign::cluster::DEFAULT_MINIO_IMAGE], None)
                .is_empty()
        );
    }

    #[test]
    fn the_operators_identity_signs_only_for_allowed_endpoints() {
        let p = Policy {
            allowed_endpoints: vec!["https://s3.ap-southeast-2.amazonaws.com".into()],
            ..Policy::default()
        };
        let own = [campaign::cluster::DEFAULT_MINIO_IMAGE];
        let s = spec(BASE);
        assert!(
            p.check_spec(&s, &own, Some("https://s3.ap-southeast-2.amazonaws.com/"))
                .is_empty()
        );
        let r = p.check_spec(&s, &own, Some("http://169.254.169.254"));
        assert_eq!(r[0].field, "spec.results.endpoint");
    }

    #[test]
    fn named_secrets_and_service_accounts_need_the_owners_label() {
        let s = spec(&format!(
            "{BASE}  clients: {{imagePullSecrets: [{{name: pull}}], serviceAccountName: sa}}
  results: {{endpoint: 'https://s3.example.com', credentialsSecret: keys}}
"
        ));
        let named = secrets(&s);
        assert_eq!(
            named.iter().map(|n| n.field.as_str()).collect::<Vec<_>>(),
            [
                "spec.results.credentialsSecret",
                "spec.clients.imagePullSecrets[0]"
            ]
        );
        let yes = BTreeMap::from([(CREDENTIALS_LABEL.to_owned(), "true".to_owned())]);
        let no = BTreeMap::from([(CREDENTIALS_LABEL.to_owned(), "yes".to_owned())]);
        assert_eq!(check_secret(&named[0], Some(&yes)), None);
        let r = check_secret(&named[0], Some(&no)).unwrap();
        assert!(
            r.to_string()
                .starts_with("spec.results.credentialsSecret: Secret keys is not labelled"),
            "{r}"
        );
        assert_eq!(check_secret(&named[0], None), None);
        let sa = service_account(&s).unwrap();
        let ok = BTreeMap::from([(SERVICE_ACCOUNT_LABEL.to_owned(), "true".to_owned())]);
        assert_eq!(check_service_account(&sa, Some(&ok)), None);
        assert!(check_service_account(&sa, Some(&BTreeMap::new())).is_some());
        assert!(
            check_service_account(&sa, None)
                .unwrap()
                .why
                .contains("does not exist")
        );
    }
}
