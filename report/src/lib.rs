//! # report: the report model rendered for people
//!
//! A pure crate (no I/O) that renders an [`analysis::Report`]: the terminal table and
//! `report.md` ([`mod@markdown`]), the SVG plots ([`plots`]), the files of a report directory
//! ([`mod@files`]), and the study's tables as LaTeX or Markdown ([`tables`]). Both executors
//! write a campaign's report through [`files()`], so it is the same wherever the campaign
//! ran. It depends on the analysis and never the other way round.

mod figures;
pub mod files;
pub mod markdown;
pub mod plots;
pub mod tables;

pub use files::files;
pub use markdown::{Header, markdown, terminal};
