//! Advance predictions scored (study section IV-C: "The identity becomes a prediction only
//! when applied to data it was not computed from. We did that once, with a ratio fixed
//! before two follow-up experiments; it missed"). A campaign declares the throughput ratio
//! it expects for a comparison in a cell (`analysis.predictions`, typically an earlier
//! campaign's CPU-implied ratio); the report puts it beside the measured ratio and its
//! intervals and says whether it held: the prediction lies inside the measured 95 %
//! interval.

use serde::{Deserialize, Serialize};

use campaign::spec::PredictionSpec;

use crate::entry::Entry;

/// One prediction against the measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PredictionScore {
    /// Cell id.
    pub cell: String,
    /// The arm measured.
    pub arm: String,
    /// The arm it is measured against.
    pub against: String,
    /// The predicted ratio.
    pub predicted: f64,
    /// Where the prediction came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The measured paired ratio, when the comparison was made.
    pub observed: Option<f64>,
    /// Its 95 % interval.
    pub ci95: Option<[f64; 2]>,
    /// `observed ÷ predicted − 1`.
    pub error: Option<f64>,
    /// The prediction lies inside the 95 % interval.
    pub held: Option<bool>,
    /// Why there is no measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Every declared prediction, scored against the comparison it names.
pub fn score(predictions: &[PredictionSpec], entries: &[Entry]) -> Vec<PredictionScore> {
    predictions
        .iter()
        .map(|p| {
            let e = entries
                .iter()
                .find(|e| e.cell == p.cell && e.mode == p.arm && e.baseline == p.against);
            PredictionScore {
                cell: p.cell.clone(),
                arm: p.arm.clone(),
                against: p.against.clone(),
                predicted: p.ratio,
                source: p.source.clone(),
                observed: e.map(|e| e.ratio),
                ci95: e.map(|e| e.ci95),
                error: e.map(|e| e.ratio / p.ratio - 1.0),
                held: e.map(|e| e.ci95[0] <= p.ratio && p.ratio <= e.ci95[1]),
                note: e.is_none().then(|| {
                    "not measured: the comparison has fewer than two complete blocks in this cell"
                        .to_owned()
                }),
            }
        })
        .collect()
}
