//! The RunSpec parser (`run::runspec`, what a worker reads from its ConfigMap or `--spec`)
//! on arbitrary text. Properties: never a panic; an accepted spec re-serialises, as YAML and
//! as JSON, to text that parses to an equal spec.

#![no_main]

use libfuzzer_sys::fuzz_target;
use run::runspec::RunSpec;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = RunSpec::parse(text, "fuzz") else {
        return;
    };
    // YAML as pqbench writes it: through a JSON value, so that enums are maps
    // (`credentials: {file: …}`), the form the parser reads (`campaign::from_yaml`).
    let value = serde_json::to_value(&spec).expect("an accepted spec serialises");
    let yaml = serde_yaml_ng::to_string(&value).expect("as YAML");
    let again = RunSpec::parse(&yaml, "re-serialised").expect("its YAML parses");
    assert_eq!(again, spec, "YAML round trip changed the spec");
    let json = serde_json::to_string(&spec).expect("an accepted spec serialises as JSON");
    let again = RunSpec::parse(&json, "re-serialised").expect("its JSON parses");
    assert_eq!(again, spec, "JSON round trip changed the spec");
});
