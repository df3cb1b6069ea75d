//! Leader election on a `coordination.k8s.io/v1` Lease, so that one replica reconciles at
//! a time: the holder renews `renewTime` every [`RENEW`]; another replica takes the Lease
//! over once it has gone unrenewed for its duration. Writes carry the Lease's
//! `resourceVersion`, so two replicas racing for it cannot both win. A leader that fails
//! to renew stops (the process exits and restarts as a follower).

use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::Result;

/// How long a Lease holds without renewal.
pub const DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews.
pub const RENEW: Duration = Duration::from_secs(5);

/// What to do with the Lease as it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// No Lease: create it, holding it.
    Create,
    /// Ours: renew it.
    Renew,
    /// Someone else's and expired: take it over.
    TakeOver,
    /// Someone else's and live: wait.
    Wait,
}

fn micro(t: SystemTime) -> MicroTime {
    MicroTime(jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

/// The decision for a Lease (pure).
pub fn step(lease: Option<&LeaseSpec>, identity: &str, now: SystemTime) -> Step {
    let Some(l) = lease else {
        return Step::Create;
    };
    if l.holder_identity.as_deref() == Some(identity) {
        return Step::Renew;
    }
    let duration = l
        .lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map_or(DURATION, Duration::from_secs);
    let renewed = l.renew_time.as_ref().map(|t| SystemTime::from(t.0));
    match renewed {
        Some(t) if t + duration > now => Step::Wait,
        _ => Step::TakeOver,
    }
}

/// One attempt to hold the Lease; `Ok(true)` while this replica leads.
pub async fn try_hold(api: &Api<Lease>, name: &str, identity: &str) -> Result<bool> {
    let now = SystemTime::now();
    let current = api.get_opt(name).await?;
    let s = step(
        current.as_ref().and_then(|l| l.spec.as_ref()),
        identity,
        now,
    );
    let seconds = i32::try_from(DURATION.as_secs()).unwrap_or(15);
    let outcome = match (s, current) {
        (Step::Wait, _) => return Ok(false),
        (Step::Create, _) | (_, None) => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(identity.to_owned()),
                    lease_duration_seconds: Some(seconds),
                    acquire_time: Some(micro(now)),
                    renew_time: Some(micro(now)),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            api.create(&PostParams::default(), &lease).await.map(|_| ())
        }
        (step, Some(mut lease)) => {
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if step == Step::TakeOver {
                spec.holder_identity = Some(identity.to_owned());
                spec.acquire_time = Some(micro(now));
                spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
            spec.lease_duration_seconds = Some(seconds);
            spec.renew_time = Some(micro(now));
            // The resourceVersion in `lease` makes this a compare-and-swap.
            api.replace(name, &PostParams::default(), &lease)
                .await
                .map(|_| ())
        }
    };
    match outcome {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed: SystemTime) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(micro(renewed)),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn steps() {
        let now = SystemTime::now();
        assert_eq!(step(None, "a", now), Step::Create);
        assert_eq!(step(Some(&lease("a", now)), "a", now), Step::Renew);
        assert_eq!(step(Some(&lease("b", now)), "a", now), Step::Wait);
        let old = now - Duration::from_secs(16);
        assert_eq!(step(Some(&lease("b", old)), "a", now), Step::TakeOver);
        assert_eq!(
            step(Some(&LeaseSpec::default()), "a", now),
            Step::TakeOver,
            "a Lease never renewed is free"
        );
    }
}
