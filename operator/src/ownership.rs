//! Whose object is at a child's name (issue 36): the operator creates, reads as its own,
//! or deletes an object only when its controller owner reference is the campaign's UID.
//!
//! A campaign's children have predictable names (`<campaign>-keys`, `<campaign>-minio`, its
//! Jobs). On a shared cluster an object of that name may already exist, made by someone
//! else: a campaign named `jwt` must not reuse, overwrite or, on cleanup, delete a Secret
//! `jwt-keys` it did not create. So every child is created with a plain create (never an
//! apply that would merge into an existing object), an existing object is taken as the
//! campaign's only when [`holder`] says so, and a delete carries the UID of the object
//! found to be the campaign's as its precondition. A foreign object at a child's name fails
//! the campaign with a condition naming it (Kubernetes' own rule for controllers: an object
//! whose controller reference is another's is not adopted,
//! <https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/>).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Whose an existing object is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// Its controller owner reference is the campaign's UID.
    Ours,
    /// Anything else; says whose it is (for the condition).
    Foreign(String),
}

/// Whose the object with `meta` is, for the campaign with UID `uid`.
pub fn holder(meta: &ObjectMeta, uid: &str) -> Holder {
    let refs = meta.owner_references.as_deref().unwrap_or_default();
    if refs
        .iter()
        .any(|r| r.uid == uid && r.controller == Some(true))
    {
        return Holder::Ours;
    }
    let by = refs
        .iter()
        .find(|r| r.controller == Some(true))
        .or_else(|| refs.first());
    Holder::Foreign(match by {
        Some(r) if r.kind == "BenchmarkCampaign" => {
            format!("owned by another BenchmarkCampaign {}", r.name)
        }
        Some(r) => format!("owned by {} {}", r.kind, r.name),
        None => "not owned by this campaign".to_owned(),
    })
}

/// The condition's text for a foreign object at a child's name: what it is and what to do.
pub fn collision(kind: &str, name: &str, whose: &str) -> String {
    format!("{kind} {name} exists and is {whose}")
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn meta(refs: &[(&str, &str, &str, bool)]) -> ObjectMeta {
        ObjectMeta {
            owner_references: Some(
                refs.iter()
                    .map(|(kind, name, uid, controller)| OwnerReference {
                        api_version: "v1".into(),
                        kind: (*kind).into(),
                        name: (*name).into(),
                        uid: (*uid).into(),
                        controller: Some(*controller),
                        ..OwnerReference::default()
                    })
                    .collect(),
            ),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn only_the_campaigns_controller_reference_makes_a_child_ours() {
        assert_eq!(
            holder(&meta(&[("BenchmarkCampaign", "jwt", "u1", true)]), "u1"),
            Holder::Ours
        );
        // No owner: somebody's own object.
        assert_eq!(
            holder(&ObjectMeta::default(), "u1"),
            Holder::Foreign("not owned by this campaign".into())
        );
        // The same name, another campaign (deleted and re-created: another UID).
        assert_eq!(
            holder(&meta(&[("BenchmarkCampaign", "jwt", "u0", true)]), "u1"),
            Holder::Foreign("owned by another BenchmarkCampaign jwt".into())
        );
        // Our UID, but not as the controller: not ours to change.
        assert_eq!(
            holder(
                &meta(&[
                    ("BenchmarkCampaign", "jwt", "u1", false),
                    ("Deployment", "auth", "u9", true)
                ]),
                "u1"
            ),
            Holder::Foreign("owned by Deployment auth".into())
        );
    }

    #[test]
    fn the_collision_names_the_object() {
        assert_eq!(
            collision("Secret", "jwt-keys", "not owned by this campaign"),
            "Secret jwt-keys exists and is not owned by this campaign"
        );
    }
}
