//! Reading a campaign file: one or more YAML (or JSON) documents as `kubectl apply -f` takes
//! them, exactly one of them the `BenchmarkCampaign`, parsed and validated.

use crate::spec::{KIND, Manifest};
use crate::{Error, Result};

/// A campaign file as `kubectl apply -f` takes it: one or more YAML documents, exactly one
/// of them the `BenchmarkCampaign`; the others (a credentials Secret, say) are Kubernetes
/// objects the cluster needs and a local run does not.
#[derive(Clone, Debug, PartialEq)]
pub struct CampaignFile {
    /// The campaign, parsed and validated.
    pub manifest: Manifest,
    /// The other objects, as `Kind name` (`Secret unreachable-s3`), in file order.
    pub others: Vec<String>,
    /// The campaign's own document as YAML, when the file holds other objects too (so a
    /// local copy of the campaign never carries those, which may be Secrets); `None` when
    /// the campaign is the whole file.
    pub campaign_only: Option<String>,
}

impl CampaignFile {
    /// Parses every document of `text` (YAML or JSON). `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let fail = |e: String| Error::Spec(format!("{origin}: {e}"));
        // An empty document (`---` at the end) is nothing.
        let mut docs: Vec<_> = crate::yaml::documents(text)
            .map_err(fail)?
            .into_iter()
            .filter(|v| !v.is_null())
            .collect();
        if let [v] = &docs[..]
            && !v.is_object()
        {
            return Err(fail(format!(
                "the document is {}; a campaign is a map with apiVersion, kind, metadata and spec",
                match v {
                    serde_json::Value::Array(_) => "a list",
                    serde_json::Value::String(_) => "a string",
                    serde_json::Value::Number(_) => "a number",
                    _ => "a boolean",
                }
            )));
        }
        let (v, others) = if docs.len() == 1 {
            // One document is the campaign, whatever it says: the parser names what is wrong.
            (docs.remove(0), Vec::new())
        } else {
            split_documents(docs).map_err(fail)?
        };
        let campaign_only = if others.is_empty() {
            None
        } else {
            Some(serde_yaml_ng::to_string(&v).map_err(|e| fail(e.to_string()))?)
        };
        let manifest: Manifest = crate::yaml::from_value(v).map_err(fail)?;
        manifest.validate().map_err(fail)?;
        Ok(Self {
            manifest,
            others,
            campaign_only,
        })
    }

    /// Reads and parses a campaign file.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = crate::yaml::read_text(path).map_err(|e| {
            Error::Spec(format!("cannot read campaign file {}: {e}", path.display()))
        })?;
        Self::parse(&text, &path.display().to_string())
    }
}

/// Of several documents, the one `BenchmarkCampaign` and the others (`Kind name`).
fn split_documents(
    docs: Vec<serde_json::Value>,
) -> std::result::Result<(serde_json::Value, Vec<String>), String> {
    let mut campaigns = Vec::new();
    let mut others = Vec::new();
    for (i, v) in docs.into_iter().enumerate() {
        let field = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        match (field("apiVersion"), field("kind")) {
            (_, Some(kind)) if kind == KIND => campaigns.push(v),
            (Some(_), Some(kind)) => {
                let name = v
                    .pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("(unnamed)");
                others.push(format!("{kind} {name}"));
            }
            _ => {
                return Err(format!(
                    "document {} is not a Kubernetes object (it needs apiVersion and kind)",
                    i + 1
                ));
            }
        }
    }
    match campaigns.len() {
        1 => Ok((campaigns.remove(0), others)),
        0 if others.is_empty() => Err("the file holds no YAML document".into()),
        0 => Err(format!(
            "no {KIND} document among the file's {} ({})",
            others.len(),
            others.join(", ")
        )),
        n => Err(format!(
            "{n} {KIND} documents; a campaign file holds one (put each in its own file)"
        )),
    }
}

impl Manifest {
    /// Parses and validates a campaign file (YAML or JSON; several documents as
    /// [`CampaignFile::parse`] takes them). `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        CampaignFile::parse(text, origin).map(|f| f.manifest)
    }

    /// Reads and parses a campaign file.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        CampaignFile::read(path).map(|f| f.manifest)
    }
}
