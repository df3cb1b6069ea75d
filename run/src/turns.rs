//! Interleaved arms: the runs of a block at the same time, taking turns.
//!
//! On a shared or virtual machine the speed of a core drifts by tens of per cent within
//! seconds (other tenants, the hypervisor's scheduling). Runs carried out one after another
//! see different machines, and the paired ratio of two arms inherits the drift: on a 2-core
//! VM the paired sd of the log throughput ratio of consecutive 4 s runs was 0.10, with
//! ±15 % between successive quarter seconds of one run. Taking turns in slices shorter than
//! the drift pairs the arms within a fraction of a second instead of within seconds.
//!
//! A block of `of` runs starts at one instant (the start gate); time from there is cut into
//! slices of `slice`, and the run with turn `t` starts requests only in slices `k` with
//! `k mod of = t` (its own slices). Requests in flight at the end of an own slice finish in
//! the next one; they count for the run that started them, as do their stage times. The run's
//! measured time is the length of its own slices within the measured window
//! ([`Turns::own_time`]), so throughput is requests per second of its own time and is
//! comparable with a run that had the window to itself.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::Dur;

/// This run's turn in an interleaved block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Turns {
    /// Length of one slice.
    pub slice: Dur,
    /// Runs taking turns (the block's arms).
    pub of: u32,
    /// This run's turn, from 0: its slices are those whose number modulo `of` is `turn`.
    pub turn: u32,
}

impl Turns {
    /// Why these turns cannot be taken, if they cannot.
    pub fn problem(&self) -> Option<String> {
        if self.slice.0 < campaign::spec::Interleave::MIN_SLICE {
            return Some(format!(
                "turns.slice {} is shorter than 10ms: timers and requests in flight would decide the shares",
                self.slice
            ));
        }
        if self.of == 0 || self.turn >= self.of {
            return Some(format!(
                "turns.turn {} is not one of 0..{} (turns.of)",
                self.turn, self.of
            ));
        }
        None
    }

    fn cycle(&self) -> Duration {
        self.slice.0 * self.of
    }

    /// Where this run's own slice starts within a cycle.
    fn own_start(&self) -> Duration {
        self.slice.0 * self.turn
    }

    /// At `at` (time since the block's start): `None` if it is within an own slice, else
    /// the time since the start at which the next own slice begins.
    pub fn next_own(&self, at: Duration) -> Option<Duration> {
        let cycle = self.cycle().as_nanos();
        if cycle == 0 {
            return None;
        }
        let t = at.as_nanos();
        let base = t - t % cycle;
        let own = base + self.own_start().as_nanos();
        let own_end = own + self.slice.0.as_nanos();
        if (own..own_end).contains(&t) {
            return None;
        }
        let next = if t < own { own } else { own + cycle };
        Some(nanos(next))
    }

    /// The length of this run's own slices within `[from, to)` (times since the block's
    /// start).
    pub fn own_time(&self, from: Duration, to: Duration) -> Duration {
        let up_to = |t: Duration| -> u128 {
            // Own time within [0, t): whole cycles, then the part of the last one.
            let cycle = self.cycle().as_nanos();
            if cycle == 0 {
                return 0;
            }
            let t = t.as_nanos();
            let whole = t / cycle * self.slice.0.as_nanos();
            let rest = t % cycle;
            let own = self.own_start().as_nanos();
            whole + rest.saturating_sub(own).min(self.slice.0.as_nanos())
        };
        if to <= from {
            return Duration::ZERO;
        }
        nanos(up_to(to) - up_to(from))
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn turns(slice_ms: u64, of: u32, turn: u32) -> Turns {
        Turns {
            slice: Dur(ms(slice_ms)),
            of,
            turn,
        }
    }

    #[test]
    fn each_instant_belongs_to_exactly_one_turn() {
        for at in (0..1_000).step_by(7) {
            let own: Vec<u32> = (0..3)
                .filter(|&t| turns(100, 3, t).next_own(ms(at)).is_none())
                .collect();
            assert_eq!(own.len(), 1, "at {at} ms: {own:?}");
            assert_eq!(
                own[0],
                u32::try_from(at / 100 % 3).expect("small"),
                "at {at} ms"
            );
        }
    }

    #[test]
    fn waiting_ends_at_the_start_of_the_next_own_slice() {
        let t = turns(100, 3, 1);
        assert_eq!(t.next_own(ms(0)), Some(ms(100)));
        assert_eq!(t.next_own(ms(99)), Some(ms(100)));
        assert_eq!(t.next_own(ms(100)), None);
        assert_eq!(t.next_own(ms(199)), None);
        assert_eq!(t.next_own(ms(200)), Some(ms(400)));
        assert_eq!(t.next_own(ms(350)), Some(ms(400)));
        let last = turns(100, 3, 2);
        assert_eq!(last.next_own(ms(300)), Some(ms(500)));
    }

    #[test]
    fn own_time_is_a_third_of_whole_cycles_and_exact_at_the_edges() {
        let t = turns(100, 3, 1);
        assert_eq!(t.own_time(ms(0), ms(3_000)), ms(1_000));
        assert_eq!(t.own_time(ms(150), ms(160)), ms(10));
        assert_eq!(t.own_time(ms(150), ms(420)), ms(50 + 20));
        assert_eq!(t.own_time(ms(200), ms(400)), Duration::ZERO);
        assert_eq!(t.own_time(ms(500), ms(100)), Duration::ZERO);
        // Every turn together covers the interval once.
        let all: Duration = (0..3)
            .map(|k| turns(100, 3, k).own_time(ms(1_234), ms(5_678)))
            .sum();
        assert_eq!(all, ms(5_678 - 1_234));
        // One turn: the whole interval.
        assert_eq!(turns(100, 1, 0).own_time(ms(3), ms(77)), ms(74));
    }

    #[test]
    fn impossible_turns_are_refused_with_the_field() {
        assert!(
            turns(5, 3, 0)
                .problem()
                .is_some_and(|p| p.contains("turns.slice"))
        );
        assert!(
            turns(100, 3, 3)
                .problem()
                .is_some_and(|p| p.contains("turns.turn 3"))
        );
        assert!(turns(100, 3, 2).problem().is_none());
    }
}
