//! CPU placement: which CPUs the S3 server and the client processes of a run may use
//! (study section IV-A: the server and the clients on separate machines, so that neither's
//! CPU is the other's noise; on one machine, disjoint CPU sets stand in for that).
//!
//! `server.cpus` and `clients.cpus` take a [`Cpus`]: a count (`cpus: 1`), an explicit CPU
//! list in the Linux list format of `taskset -c` and Kubernetes' cpusets (`cpus: "1"`,
//! `cpus: "0-3,8"`; quoted, since an unquoted number is a count), or `none`.
//!
//! On one machine ([`place`]): by default, when the embedded server runs and the machine
//! allows this process two or more CPUs, the server gets the upper half of them and the
//! clients the rest (on 2 CPUs: server on CPU 1, clients on CPU 0). A count takes that many
//! CPUs from the top of the allowed set for the server and from the bottom for the clients.
//! The two sets never overlap. A cell's `clientCores: [k]` confines the run's worker
//! processes to the first `k` CPUs of the clients' set ([`confine`]).
//!
//! On Kubernetes, a count becomes whole-CPU requests = limits on the pod (Guaranteed QoS,
//! which the kubelet's static CPU manager pins to exclusive cores); the pods' CPUs cannot
//! be named, so an explicit list stands for its length there.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The CPUs given to the server or to the clients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cpus {
    /// This many CPUs (at least 1).
    Count(u32),
    /// These CPUs (sorted, distinct, not empty).
    List(Vec<u32>),
    /// No placement: the processes run wherever the scheduler puts them.
    None,
}

impl Cpus {
    /// How many CPUs this asks for (`None` for no placement).
    pub fn count(&self) -> Option<u32> {
        match self {
            Self::Count(n) => Some(*n),
            Self::List(v) => Some(u32::try_from(v.len()).unwrap_or(u32::MAX)),
            Self::None => None,
        }
    }
}

/// Parses a CPU list in the Linux list format (`0-3,8,10-11`): sorted, distinct.
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, String> {
    let bad = |why: String| {
        format!(
            "{s:?} is not a CPU list ({why}); write CPUs as in `taskset -c`, e.g. \"1\" or \"0-3,8\""
        )
    };
    let mut set = BTreeSet::new();
    for part in s.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(bad("an empty entry".into()));
        }
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| bad(format!("{x:?} is not a CPU number")))
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(part)?;
                (n, n)
            }
        };
        if a > b {
            return Err(bad(format!("the range {a}-{b} runs backwards")));
        }
        if b - a > 4096 {
            return Err(bad(format!("the range {a}-{b} is too long")));
        }
        set.extend(a..=b);
    }
    Ok(set.into_iter().collect())
}

/// Formats CPUs in the Linux list format (`[0, 1, 2, 5]` → `0-2,5`).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

impl fmt::Display for Cpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Count(n) => write!(f, "{n}"),
            Self::List(v) => write!(f, "\"{}\"", format_cpu_list(v)),
            Self::None => f.write_str("none"),
        }
    }
}

impl Serialize for Cpus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Count(n) => s.serialize_u32(*n),
            Self::List(v) => s.serialize_str(&format_cpu_list(v)),
            Self::None => s.serialize_str("none"),
        }
    }
}

impl<'de> Deserialize<'de> for Cpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Cpus;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a CPU count (1), a quoted CPU list (\"0-3,8\") or none")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Cpus, E> {
                match u32::try_from(n) {
                    Ok(n) if n >= 1 => Ok(Cpus::Count(n)),
                    _ => Err(E::custom(format!(
                        "{n} CPUs: give at least 1, a quoted CPU list (\"0-3\") or none"
                    ))),
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Cpus, E> {
                u64::try_from(n).map_or_else(
                    |_| Err(E::custom(format!("{n} CPUs: a count is at least 1"))),
                    |n| self.visit_u64(n),
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Cpus, E> {
                if s.trim() == "none" {
                    return Ok(Cpus::None);
                }
                parse_cpu_list(s).map(Cpus::List).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Where one machine's processes go: CPU lists, or `None` for no placement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// The embedded server's CPUs.
    pub server: Option<Vec<u32>>,
    /// The client processes' CPUs.
    pub clients: Option<Vec<u32>>,
}

fn listed(v: &[u32]) -> String {
    format_cpu_list(v)
}

/// Places the server and the clients within `allowed` (the CPUs this process may use),
/// as the module docs say. `embedded` is whether the server is this machine's embedded
/// one (otherwise `server` is not placed); `processes` is the client processes of a run:
/// the default placement needs a client CPU for each (processes sharing a core preempt
/// each other between stage timers, which the unaccounted-time check refuses), and is not
/// made otherwise. Errors name the field.
pub fn place(
    allowed: &[u32],
    server: Option<&Cpus>,
    clients: Option<&Cpus>,
    embedded: bool,
    processes: u32,
) -> Result<Placement, String> {
    let p = place_sets(allowed, server, clients, embedded)?;
    let defaulted = server.is_none() && clients.is_none();
    let crowded = p
        .clients
        .as_ref()
        .is_some_and(|c| c.len() < processes as usize);
    Ok(if defaulted && crowded {
        Placement::default()
    } else {
        p
    })
}

/// [`place`] without the processes rule.
fn place_sets(
    allowed: &[u32],
    server: Option<&Cpus>,
    clients: Option<&Cpus>,
    embedded: bool,
) -> Result<Placement, String> {
    let mut allowed = allowed.to_vec();
    allowed.sort_unstable();
    allowed.dedup();
    let n = allowed.len();
    let check_list = |field: &str, v: &[u32]| -> Result<Vec<u32>, String> {
        match v.iter().find(|c| !allowed.contains(c)) {
            Some(c) => Err(format!(
                "{field}: CPU {c} is not one this process may use ({})",
                listed(&allowed)
            )),
            None => Ok(v.to_vec()),
        }
    };
    let too_many = |field: &str, k: u32, left: usize| {
        format!(
            "{field}: {k} CPUs asked, {left} available (this process may use {}: {n})",
            listed(&allowed)
        )
    };
    let server_set = match (embedded, server) {
        (false, _) | (true, Some(Cpus::None)) => None,
        (true, Some(Cpus::List(v))) => Some(check_list("server.cpus", v)?),
        (true, Some(Cpus::Count(k))) => {
            let want = *k as usize;
            if want >= n {
                return Err(too_many("server.cpus", *k, n.saturating_sub(1))
                    + "; the clients need at least one");
            }
            Some(allowed[n - want..].to_vec())
        }
        (true, None) if n >= 2 => Some(allowed[n - n / 2..].to_vec()),
        (true, None) => None,
    };
    let free: Vec<u32> = allowed
        .iter()
        .copied()
        .filter(|c| !server_set.as_ref().is_some_and(|s| s.contains(c)))
        .collect();
    let client_set = match clients {
        Some(Cpus::None) => None,
        Some(Cpus::List(v)) => Some(check_list("clients.cpus", v)?),
        Some(Cpus::Count(k)) => {
            let want = *k as usize;
            if want > free.len() {
                return Err(too_many("clients.cpus", *k, free.len()));
            }
            Some(free[..want].to_vec())
        }
        None => server_set.is_some().then_some(free),
    };
    if let (Some(s), Some(c)) = (&server_set, &client_set)
        && let Some(x) = s.iter().find(|x| c.contains(x))
    {
        return Err(format!(
            "server.cpus ({}) and clients.cpus ({}) share CPU {x}; placement keeps them apart \
             (set one of them to none to share the CPUs)",
            listed(s),
            listed(c)
        ));
    }
    Ok(Placement {
        server: server_set,
        clients: client_set,
    })
}

/// The CPUs a run's worker processes get: the first `client_cores` of the clients' set (of
/// `allowed` when the clients are not placed), or the clients' set when the cell does not
/// confine them.
pub fn confine(
    placement: &Placement,
    allowed: &[u32],
    client_cores: Option<u32>,
) -> Result<Option<Vec<u32>>, String> {
    let Some(k) = client_cores else {
        return Ok(placement.clients.clone());
    };
    let from = placement.clients.clone().unwrap_or_else(|| {
        let mut a = allowed.to_vec();
        a.sort_unstable();
        a
    });
    let k = k as usize;
    if k > from.len() {
        return Err(format!(
            "clientCores: {k} cores asked, but the clients have {} ({})",
            from.len(),
            listed(&from)
        ));
    }
    Ok(Some(from[..k].to_vec()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn cpus(yaml: &str) -> Result<Cpus, String> {
        serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn cpus_parse_as_count_list_or_none() {
        assert_eq!(cpus("2").unwrap(), Cpus::Count(2));
        assert_eq!(cpus("\"1\"").unwrap(), Cpus::List(vec![1]));
        assert_eq!(cpus("\"0-2,5\"").unwrap(), Cpus::List(vec![0, 1, 2, 5]));
        assert_eq!(cpus("none").unwrap(), Cpus::None);
        assert!(cpus("0").unwrap_err().contains("at least 1"));
        assert!(cpus("\"3-1\"").unwrap_err().contains("backwards"));
        assert!(cpus("\"a\"").unwrap_err().contains("taskset -c"));
        assert_eq!(
            serde_json::to_string(&Cpus::List(vec![0, 1, 2, 5])).unwrap(),
            "\"0-2,5\""
        );
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(format_cpu_list(&[7]), "7");
    }

    #[test]
    fn two_cpus_put_the_server_on_1_and_the_clients_on_0() {
        let p = place(&[0, 1], None, None, true, 1).unwrap();
        assert_eq!(p.server, Some(vec![1]));
        assert_eq!(p.clients, Some(vec![0]));
        // One CPU, or an external server: no default placement.
        assert_eq!(
            place(&[0], None, None, true, 1).unwrap(),
            Placement::default()
        );
        assert_eq!(
            place(&[0, 1], None, None, false, 1).unwrap(),
            Placement::default()
        );
        // Two client processes on one client CPU would preempt each other: no default
        // placement then; an explicit one is honoured.
        assert_eq!(
            place(&[0, 1], None, None, true, 2).unwrap(),
            Placement::default()
        );
        let p = place(&[0, 1], Some(&Cpus::Count(1)), None, true, 2).unwrap();
        assert_eq!(p.clients, Some(vec![0]));
        assert_eq!(
            place(&[0, 1, 2, 3], None, None, true, 2).unwrap().clients,
            Some(vec![0, 1])
        );
        // Eight: the upper half for the server.
        let p = place(&(0..8).collect::<Vec<_>>(), None, None, true, 1).unwrap();
        assert_eq!(p.server, Some(vec![4, 5, 6, 7]));
        assert_eq!(p.clients, Some(vec![0, 1, 2, 3]));
    }

    #[test]
    fn counts_lists_and_none_are_honoured_and_checked() {
        let all: Vec<u32> = (0..4).collect();
        let p = place(&all, Some(&Cpus::Count(1)), Some(&Cpus::Count(2)), true, 1).unwrap();
        assert_eq!((p.server, p.clients), (Some(vec![3]), Some(vec![0, 1])));
        let p = place(&all, Some(&Cpus::None), None, true, 1).unwrap();
        assert_eq!(p, Placement::default());
        let p = place(&all, Some(&Cpus::List(vec![0])), None, true, 1).unwrap();
        assert_eq!(p.clients, Some(vec![1, 2, 3]));
        let e = place(&all, Some(&Cpus::List(vec![9])), None, true, 1).unwrap_err();
        assert!(e.starts_with("server.cpus: CPU 9"), "{e}");
        let e = place(&all, Some(&Cpus::Count(4)), None, true, 1).unwrap_err();
        assert!(e.contains("the clients need at least one"), "{e}");
        let e = place(
            &all,
            Some(&Cpus::List(vec![1, 2])),
            Some(&Cpus::List(vec![2, 3])),
            true,
            1,
        )
        .unwrap_err();
        assert!(e.contains("share CPU 2"), "{e}");
        let e = place(&all, None, Some(&Cpus::Count(3)), true, 1).unwrap_err();
        assert!(
            e.starts_with("clients.cpus: 3 CPUs asked, 2 available"),
            "{e}"
        );
    }

    #[test]
    fn client_cores_take_the_first_of_the_clients_set() {
        let p = place(&(0..4).collect::<Vec<_>>(), None, None, true, 1).unwrap();
        assert_eq!(confine(&p, &[], Some(1)).unwrap(), Some(vec![0]));
        assert_eq!(confine(&p, &[], None).unwrap(), Some(vec![0, 1]));
        assert!(confine(&p, &[], Some(3)).unwrap_err().contains("have 2"));
        // Unplaced clients are confined within what the process may use.
        let none = Placement::default();
        assert_eq!(
            confine(&none, &[2, 0, 1], Some(2)).unwrap(),
            Some(vec![0, 1])
        );
        assert_eq!(confine(&none, &[0, 1], None).unwrap(), None);
    }
}
