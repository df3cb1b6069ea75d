//! YAML (or JSON) text as the JSON values pqbench's types are read from: every campaign file
//! and RunSpec a user writes goes through here ([`crate::from_yaml`],
//! [`CampaignFile::parse`](crate::CampaignFile::parse)).
//!
//! The text goes to `serde_yaml_ng` as its own `Value` (which refuses a key given twice),
//! then becomes a JSON value here, so that what JSON cannot hold is refused with its field
//! path instead of being changed on the way. The hostile-input table (`tests/hostile.rs`)
//! shows each refusal through the CLI:
//!
//! | input | refused with |
//! |---|---|
//! | more than [`MAX_BYTES`] of text | its size and the limit |
//! | `[`/`{` nested deeper than [`MAX_FLOW_DEPTH`] | the depth and the limit, *before* the YAML parser: libyaml's flow parsing takes time quadratic in the depth (100 000 `[` took 35 s) |
//! | aliases (`*a`) that expand beyond the parser's repetition limit (a "billion laughs") | what happened and what to write instead |
//! | a key given twice | the key and its line (`serde_yaml_ng` alone, into a JSON value, kept the last one) |
//! | `.nan`, `.inf` | the field path (into a JSON value they became `null`, so an optional field silently took its default) |
//! | a YAML tag (`!file /path`) | the field path and the map form to write |
//! | a key that is a list, a map or null | the field path |

use serde::Deserialize as _;
use serde_json::Value as Json;
use serde_yaml_ng::Value as Yaml;

/// The largest text read, in bytes (1 MiB). A campaign file or RunSpec is a few KiB; the
/// limit keeps a wrong file (a log, a dump) from being parsed at all.
pub const MAX_BYTES: usize = 1 << 20;

/// The deepest nesting of flow collections (`[`, `{`) let through to the YAML parser; the
/// parser itself refuses nesting deeper than 128 in any style.
pub const MAX_FLOW_DEPTH: usize = 128;

/// Parses one YAML (or JSON) document into a JSON value.
///
/// # Errors
///
/// What is wrong, with the field path or the line where known (see the module's table).
pub fn document(text: &str) -> Result<Json, String> {
    let v = match precheck(text)? {
        Input::Json(t) => json_value(t)?,
        Input::Yaml(t) => serde_yaml_ng::from_str(t).map_err(parse_error)?,
    };
    to_json(v, &mut Path::default())
}

/// Parses every document of a YAML stream (`---` separated) into JSON values; empty
/// documents are `null`.
///
/// # Errors
///
/// As [`document`].
pub fn documents(text: &str) -> Result<Vec<Json>, String> {
    match precheck(text)? {
        Input::Json(t) => Ok(vec![to_json(json_value(t)?, &mut Path::default())?]),
        Input::Yaml(t) => serde_yaml_ng::Deserializer::from_str(t)
            .map(|doc| {
                let v = Yaml::deserialize(doc).map_err(parse_error)?;
                to_json(v, &mut Path::default())
            })
            .collect(),
    }
}

/// Reads a text file of at most [`MAX_BYTES`] without reading more than that of it.
///
/// # Errors
///
/// The I/O error, a file over the limit, or text that is not UTF-8.
pub fn read_text(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > MAX_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            too_big(),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text ({e})"),
        )
    })
}

fn too_big() -> String {
    format!(
        "more than {} KiB: a campaign file or RunSpec is a few KiB; is this the right file?",
        MAX_BYTES / 1024
    )
}

/// Text and the parser to read it with.
enum Input<'a> {
    /// What `serde_json` accepts: read as JSON, not as YAML. YAML 1.1 reads JSON
    /// otherwise: it folds U+0085, U+2028 and U+2029 inside strings into spaces, refuses
    /// DEL and the C1 controls, and takes no key longer than 1024 characters; all of these
    /// `serde_json` writes, so pqbench's own `spec.json` and the specs it hands its workers
    /// changed or failed on the way back (found by the `runspec` and `campaign` fuzz
    /// targets).
    Json(&'a str),
    /// Anything else.
    Yaml(&'a str),
}

/// Refuses text no parser should be given: too long, or (YAML) flow collections nested
/// deeper than [`MAX_FLOW_DEPTH`]. The depth counts every `[`/`{` against every `]`/`}`,
/// quoted or not: an over-count only ever refuses a file with more than 128 unclosed
/// brackets inside its strings, and an exact count would need the YAML parser this guards.
/// JSON needs no scan: `serde_json` stops at 128 levels itself, in linear time.
fn precheck(text: &str) -> Result<Input<'_>, String> {
    if text.len() > MAX_BYTES {
        return Err(too_big());
    }
    // Skipping a value does not recurse: any depth is safe here.
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
        return Ok(Input::Json(text));
    }
    flow_depth(text)?;
    Ok(Input::Yaml(text))
}

/// A JSON document as the YAML parser's value (whose maps refuse a key given twice).
fn json_value(text: &str) -> Result<Yaml, String> {
    serde_json::from_str(text).map_err(|e| {
        if e.to_string().contains("recursion limit exceeded") {
            // As the YAML path says it.
            format!(
                "line {}: `[`/`{{` nested more than {MAX_FLOW_DEPTH} deep; pqbench's files \
                 nest a few levels",
                e.line()
            )
        } else {
            e.to_string()
        }
    })
}

/// Refuses flow collections nested deeper than [`MAX_FLOW_DEPTH`] (a linear scan).
fn flow_depth(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    let mut line = 1usize;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' => line += 1,
            _ => {}
        }
        if depth > MAX_FLOW_DEPTH {
            return Err(format!(
                "line {line}: `[`/`{{` nested more than {MAX_FLOW_DEPTH} deep; pqbench's files \
                 nest a few levels"
            ));
        }
    }
    Ok(())
}

/// The parser's error, with what to do for the ones a hostile or mistaken file meets.
fn parse_error(e: serde_yaml_ng::Error) -> String {
    let msg = e.to_string();
    if msg.contains("repetition limit exceeded") {
        format!(
            "{msg}: its aliases (`*name`) expand to far more values than the file holds \
             (a \"billion laughs\"?); write the values out"
        )
    } else if msg.contains("recursion limit exceeded") {
        format!("{msg}: the document nests more than 128 levels deep")
    } else if msg.contains(" as u128, expected") {
        format!("{msg}: the integer is larger than any field takes (at most 2^64 - 1)")
    } else if msg.contains("duplicate entry") {
        format!("{msg}: a key may be given once in each map")
    } else {
        msg
    }
}

/// A field path as `serde_path_to_error` writes it (`spec.arms[0].mode`), for errors.
#[derive(Default)]
struct Path(String);

impl Path {
    fn at(&self) -> &str {
        if self.0.is_empty() { "." } else { &self.0 }
    }
}

fn to_json(v: Yaml, path: &mut Path) -> Result<Json, String> {
    Ok(match v {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(b),
        Yaml::Number(n) => number(&n, path)?,
        Yaml::String(s) => Json::String(s),
        Yaml::Sequence(items) => Json::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| {
                    let len = path.0.len();
                    path.0.push_str(&format!("[{i}]"));
                    let v = to_json(item, path);
                    path.0.truncate(len);
                    v
                })
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Mapping(map) => {
            let mut out = serde_json::Map::new();
            for (k, item) in map {
                let key = key(k, path)?;
                let len = path.0.len();
                if !path.0.is_empty() {
                    path.0.push('.');
                }
                path.0.push_str(&key);
                let v = to_json(item, path)?;
                path.0.truncate(len);
                out.insert(key, v);
            }
            Json::Object(out)
        }
        Yaml::Tagged(t) => {
            return Err(format!(
                "{}: YAML tags (`{} value`) are not read; write the choice as a map, `name: value`",
                path.at(),
                t.tag
            ));
        }
    })
}

fn number(n: &serde_yaml_ng::Number, path: &Path) -> Result<Json, String> {
    if let Some(i) = n.as_u64() {
        return Ok(Json::from(i));
    }
    if let Some(i) = n.as_i64() {
        return Ok(Json::from(i));
    }
    n.as_f64()
        .and_then(serde_json::Number::from_f64)
        .map(Json::Number)
        .ok_or_else(|| {
            format!(
                "{}: {n} is not a number pqbench reads (NaN and infinities are refused); \
                 write a finite number",
                path.at()
            )
        })
}

/// A map key as JSON holds it: strings as they are, numbers and booleans as their text
/// (`1: x` is the key "1", as the JSON value reader made it before).
fn key(k: Yaml, path: &Path) -> Result<String, String> {
    match k {
        Yaml::String(s) => Ok(s),
        Yaml::Number(n) => Ok(n.to_string()),
        Yaml::Bool(b) => Ok(b.to_string()),
        Yaml::Null | Yaml::Sequence(_) | Yaml::Mapping(_) | Yaml::Tagged(_) => Err(format!(
            "{}: a map key must be a word, not {}",
            path.at(),
            match k {
                Yaml::Null => "null (`~` or an empty key)",
                Yaml::Sequence(_) => "a list",
                Yaml::Mapping(_) => "a map",
                _ => "a tagged value",
            }
        )),
    }
}

/// Parses YAML (or JSON) into `T`, naming the field path on error (`spec.cells[0].loop:
/// …`). The text goes through a JSON value so that enums are written as maps (`{file:
/// path}`) in YAML as in JSON.
pub fn from_yaml<T: serde::de::DeserializeOwned>(text: &str) -> std::result::Result<T, String> {
    from_value(document(text)?)
}

/// [`from_yaml`] of a document already parsed into a JSON value.
pub fn from_value<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
) -> std::result::Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_read_as_json() {
        let long_key = "k".repeat(2000);
        let v = serde_json::json!({
            "spec": {"name": "{".repeat(200), "requests": {long_key: "1"}},
            "path": "/tmp/a\u{7f}\u{80}\u{85}\u{9f}\u{2028}\u{2029}\u{feff}\u{fffe}\u{ffff}b",
        });
        let text = serde_json::to_string(&v).expect("json");
        assert!(
            text.contains('\u{85}') && text.contains('\u{7f}'),
            "serde_json writes them raw"
        );
        assert_eq!(document(&text).expect("parses"), v);
        assert_eq!(documents(&text).expect("parses"), [v]);
        // What YAML refuses, JSON text is refused for too.
        assert!(
            err("{\"a\": 1, \"a\": 2}").contains("duplicate"),
            "{}",
            err("{\"a\": 1, \"a\": 2}")
        );
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(
            err(&deep).contains("nested more than 128 deep"),
            "{}",
            err(&deep)
        );
        // YAML keeps its own meaning: an escape in a double-quoted scalar.
        assert_eq!(
            document("path: \"/tmp/a\\Nb\"").expect("parses"),
            serde_json::json!({"path": "/tmp/a\u{85}b"})
        );
    }

    fn err(text: &str) -> String {
        document(text).expect_err("refused")
    }

    #[test]
    fn ordinary_documents_become_the_json_they_say() {
        let v = document("a: [1, -2, 2.5, x, true, ~]\nb: {c: 'd'}\n3: e\n").expect("parses");
        assert_eq!(
            v,
            serde_json::json!({"a": [1, -2, 2.5, "x", true, null], "b": {"c": "d"}, "3": "e"})
        );
        assert_eq!(
            documents("a: 1\n---\n---\nb: 2\n").expect("parses"),
            vec![
                serde_json::json!({"a": 1}),
                Json::Null,
                serde_json::json!({"b": 2})
            ]
        );
    }

    #[test]
    fn nan_and_infinity_are_refused_with_their_path() {
        assert_eq!(
            err("spec:\n  analysis: {margin: .nan}\n"),
            "spec.analysis.margin: .nan is not a number pqbench reads (NaN and infinities are \
             refused); write a finite number"
        );
        assert!(err("spec: {arms: [1, -.inf]}").starts_with("spec.arms[1]: -.inf is not"));
    }

    #[test]
    fn a_key_given_twice_is_refused_with_its_line() {
        let e = err("spec:\n  repetitions: 10\n  repetitions: 12\n");
        assert!(
            e.contains("duplicate entry with key \"repetitions\" at line 2")
                && e.ends_with("a key may be given once in each map"),
            "{e}"
        );
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_the_parser() {
        let deep = format!("a: {}{}", "[".repeat(200_000), "]".repeat(200_000));
        let started = std::time::Instant::now();
        let e = err(&deep);
        assert!(e.contains("nested more than 128 deep"), "{e}");
        // The refusal is a linear scan: a 400 KB document is refused at once, where the
        // parser alone took minutes (a limit far above the scan's time on any machine).
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // Nesting of 128 is the parser's to judge (it refuses 128 itself, with the line).
        let e = err(&format!("a: {}{}", "[".repeat(128), "]".repeat(128)));
        assert!(e.starts_with("recursion limit exceeded"), "{e}");
    }

    #[test]
    fn tags_and_odd_keys_name_their_path() {
        assert_eq!(
            err("spec:\n  credentials: !file /k\n"),
            "spec.credentials: YAML tags (`!file value`) are not read; write the choice as a \
             map, `name: value`"
        );
        assert_eq!(
            err("spec:\n  ? [a]\n  : 1\n"),
            "spec: a map key must be a word, not a list"
        );
    }

    #[test]
    fn text_over_the_limit_is_refused_unparsed() {
        let big = format!("name: {}\n", "x".repeat(MAX_BYTES));
        assert!(err(&big).starts_with("more than 1024 KiB"));
    }
}
