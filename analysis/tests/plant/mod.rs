//! Synthetic run rows shared by the analysis's tests and the report's rendering tests
//! (`report/tests/rendered.rs` includes this module by path), so that a section is
//! rendered from the same planted campaign the analysis is checked on.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "shared test support: each test crate uses a part of it"
)]

pub mod order;
pub mod rows;
pub mod testbed;
