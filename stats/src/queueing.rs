//! The knee an M/M/c queue predicts: a reference for the open-loop knee of the study
//! "Benchmarking Post-Quantum Key Encapsulation in S3-Compatible Object Storage under
//! Client Concurrency" (section V-B and the supplementary material: mean response time
//! doubles at 0.68–0.81 of the closed-loop peak; section IV-C lists the knee's definition
//! among the exploratory choices).
//!
//! The model, stated plainly: the store is a pool of `c` identical servers, each taking
//! the light-load service time `S` per request; requests arrive as a Poisson stream of
//! rate λ; service times are exponential with mean `S`; requests wait in one queue served
//! first come, first served; nothing is lost or retried. With offered load `a = λ·S`
//! (below `c`):
//!
//! - Erlang C, the probability that a request waits, from the stable Erlang B recursion
//!   `B(0) = 1`, `B(k) = a·B(k−1) / (k + a·B(k−1))`, `C = c·B(c) / (c − a·(1 − B(c)))`
//!   ([`erlang_c`]);
//! - the mean response time (wait + service) `R(λ) = S + C(c, a)·S / (c − a)`
//!   ([`mmc_response`]);
//! - the pool is sized from the closed-loop peak throughput `X` by Little's law: a
//!   saturated pool keeps `X·S` requests in service, so `c = max(1, round(X·S))` (rounded
//!   half away from zero), and its capacity is `c / S`;
//! - the predicted knee is the rate λ where `R(λ) = 2·S`, twice its light-load value (the
//!   open-loop definition of [`crate::regime::knee`]), found by bisection on `(0, c/S)` to
//!   1e-12 relative (`R` rises monotonically from `S` to infinity) ([`predict_knee`]).
//!
//! For one server the knee is half the capacity (`C = a`, `R = S/(1 − a)`); with more
//! servers it moves towards the capacity. A real store departs from every assumption
//! (service times are not exponential, a closed-loop client is not a Poisson source,
//! servers share disks and network), so the prediction is a yardstick, not a fit.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Relative width of the bisection bracket at which [`predict_knee`] stops.
const KNEE_REL_TOLERANCE: f64 = 1e-12;

fn positive(what: &'static str, v: f64) -> Result<f64> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(Error::Domain {
            what,
            allowed: "positive and finite",
            value: v,
        })
    }
}

fn at_least_one_server(servers: u32) -> Result<f64> {
    if servers == 0 {
        return Err(Error::Domain {
            what: "the number of servers",
            allowed: "at least 1",
            value: 0.0,
        });
    }
    Ok(f64::from(servers))
}

/// Erlang C: the probability that an arriving request waits in an M/M/c queue with
/// `servers` servers and offered load `a = λ·S` (in [0, c)), by the Erlang B recursion
/// (module docs). Errors: no servers, or a load negative, non-finite or at least `c`.
pub fn erlang_c(servers: u32, offered_load: f64) -> Result<f64> {
    let c = at_least_one_server(servers)?;
    let a = offered_load;
    if !(a.is_finite() && a >= 0.0 && a < c) {
        return Err(Error::Domain {
            what: "the offered load λ·S",
            allowed: "finite, non-negative and below the number of servers",
            value: a,
        });
    }
    let mut b = 1.0_f64;
    for k in 1..=servers {
        b = a * b / (f64::from(k) + a * b);
    }
    Ok(c * b / (c - a * (1.0 - b)))
}

/// Mean response time (queue wait + service) of an M/M/c queue: `S + C(c, λS)·S/(c − λS)`,
/// for a service time `S` > 0 and a rate `λ` ≥ 0 below the capacity `c/S` (a domain error
/// at or above it, where the queue grows without bound).
pub fn mmc_response(service_time: f64, servers: u32, rate: f64) -> Result<f64> {
    let s = positive("the service time", service_time)?;
    let c = at_least_one_server(servers)?;
    if !(rate.is_finite() && rate >= 0.0 && rate * s < c) {
        return Err(Error::Domain {
            what: "the arrival rate",
            allowed: "finite, non-negative and below the capacity servers / service time",
            value: rate,
        });
    }
    let a = rate * s;
    Ok(s + erlang_c(servers, a)? * s / (c - a))
}

/// The knee an M/M/c pool predicts ([`predict_knee`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KneePrediction {
    /// Servers `c = max(1, round(peak · S))`.
    pub servers: u32,
    /// Light-load service time `S` (seconds).
    pub service_time: f64,
    /// Capacity `c / S` (requests per second).
    pub capacity: f64,
    /// The rate at which the mean response time reaches `2·S` (requests per second).
    pub rate: f64,
    /// `rate / capacity`.
    pub fraction_of_capacity: f64,
}

/// Predicts the open-loop knee from the light-load service time `S` (seconds; the
/// light-load mean response time) and the closed-loop peak throughput (requests per
/// second): the pool size by Little's law and the rate where the M/M/c mean response time
/// doubles (module docs). Both must be positive and finite, and `peak · S` must round to a
/// `u32`.
pub fn predict_knee(service_time: f64, peak_throughput: f64) -> Result<KneePrediction> {
    let s = positive("the service time", service_time)?;
    let peak = positive("the peak throughput", peak_throughput)?;
    let in_service = (peak * s).round();
    if in_service > f64::from(u32::MAX) {
        return Err(Error::Domain {
            what: "peak throughput × service time (the servers)",
            allowed: "at most 2^32 − 1",
            value: peak * s,
        });
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "range checked above; positive"
    )]
    let servers = (in_service as u32).max(1);
    let capacity = f64::from(servers) / s;
    // R(0) = S < 2S and R → ∞ at the capacity: bisect R(λ) − 2S on (0, capacity).
    let (mut lo, mut hi) = (0.0_f64, capacity);
    while hi - lo > KNEE_REL_TOLERANCE * hi {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if mmc_response(s, servers, mid)? < 2.0 * s {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let rate = 0.5 * (lo + hi);
    Ok(KneePrediction {
        servers,
        service_time: s,
        capacity,
        rate,
        fraction_of_capacity: rate / capacity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_is_mm1() {
        // M/M/1: C = ρ, R = S/(1 − ρ), R = 2S at ρ = 1/2.
        for rho in [0.0, 0.1, 0.5, 0.9] {
            assert!((erlang_c(1, rho).expect("C") - rho).abs() < 1e-15);
            let r = mmc_response(0.002, 1, rho / 0.002).expect("R");
            assert!((r - 0.002 / (1.0 - rho)).abs() < 1e-15);
        }
        let k = predict_knee(0.002, 400.0).expect("knee");
        assert_eq!(k.servers, 1);
        assert!((k.capacity - 500.0).abs() < 1e-12);
        assert!((k.rate - 250.0).abs() < 1e-9 && (k.fraction_of_capacity - 0.5).abs() < 1e-12);
    }

    #[test]
    fn two_servers_closed_form() {
        // M/M/2: C = a²/(2 + a); W_q = S at C = 2 − a, i.e. a² = (2 − a)(2 + a): a = √2.
        let a = 1.2;
        assert!((erlang_c(2, a).expect("C") - a * a / (2.0 + a)).abs() < 1e-15);
        let k = predict_knee(0.01, 200.0).expect("knee");
        assert_eq!(k.servers, 2);
        assert!(
            (k.rate * 0.01 / 2.0_f64.sqrt() - 1.0).abs() < 1e-12,
            "{k:?}"
        );
    }

    #[test]
    fn more_servers_move_the_knee_towards_capacity() {
        let f = |peak| {
            predict_knee(0.002, peak)
                .expect("knee")
                .fraction_of_capacity
        };
        assert!(f(1000.0) < f(5000.0) && f(5000.0) < f(128_000.0) && f(128_000.0) < 1.0);
        // Little's law: 5000/s × 2 ms = 10 requests in service.
        assert_eq!(predict_knee(0.002, 5000.0).expect("knee").servers, 10);
        // A pool of 0.4 requests in service is one server.
        assert_eq!(predict_knee(0.0005, 800.0).expect("knee").servers, 1);
    }

    #[test]
    fn out_of_domain() {
        assert!(erlang_c(0, 0.5).is_err());
        assert!(erlang_c(2, 2.0).is_err());
        assert!(erlang_c(2, -0.1).is_err());
        assert!(mmc_response(0.001, 4, 4000.0).is_err());
        assert!(mmc_response(0.0, 4, 1.0).is_err());
        assert!(predict_knee(-1.0, 10.0).is_err());
        assert!(predict_knee(1.0, f64::INFINITY).is_err());
        assert!(predict_knee(1e6, 1e6).is_err());
        assert_eq!(erlang_c(256, 0.0).expect("idle"), 0.0);
        assert!((erlang_c(256, 255.999).expect("busy") - 1.0).abs() < 1e-3);
    }
}
