//! The campaign file parser and `pqbench plan`'s validation on arbitrary text (YAML or
//! JSON, one or several documents). Properties: never a panic; an accepted campaign plans
//! deterministically (the same file gives the same plan, estimate and power table twice);
//! it re-serialises, as YAML and as JSON, to a file that parses to an equal campaign.

#![no_main]

use std::collections::BTreeMap;

use campaign::design::{self, Assumptions};
use campaign::CampaignFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = CampaignFile::parse(text, "fuzz") else {
        return;
    };
    let m = &file.manifest;
    let plan = design::plan(m);
    assert_eq!(design::plan(m), plan, "plan is not deterministic");
    let est = design::estimate(&plan, &m.spec, &Assumptions::default());
    assert_eq!(
        design::estimate(&plan, &m.spec, &Assumptions::default()),
        est
    );
    let power = design::power(&plan, &m.spec, &BTreeMap::new());
    assert_eq!(design::power(&plan, &m.spec, &BTreeMap::new()), power);

    // YAML as pqbench writes it: through a JSON value, so that enums are maps, the form the
    // parser reads (`campaign::from_yaml`).
    let value = serde_json::to_value(m).expect("an accepted campaign serialises");
    let yaml = serde_yaml_ng::to_string(&value).expect("as YAML");
    let again = CampaignFile::parse(&yaml, "re-serialised").expect("its YAML parses");
    assert_eq!(&again.manifest, m, "YAML round trip changed the campaign");
    let json = serde_json::to_string(m).expect("an accepted campaign serialises as JSON");
    let again = CampaignFile::parse(&json, "re-serialised").expect("its JSON parses");
    assert_eq!(&again.manifest, m, "JSON round trip changed the campaign");
});
