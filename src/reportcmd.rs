//! `pqbench report DIR --tables latex|md`: the study's tables regenerated from a results
//! directory's `report.json` (study section IV-A: "the paper's tables as generated
//! files"), in the paper's layout ([`report::tables`]).

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use clap::{Args, ValueEnum};
use report::tables::{TableFormat, file_name, tables};

/// The format of the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// LaTeX, one `table` float per file (needs `\usepackage{booktabs}`).
    Latex,
    /// Markdown, one pipe table per file under its caption.
    Md,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// A results directory holding `report.json` (`pqbench run` and `pqbench analyze`
    /// write it).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Write the study's Tables VII, VIII, XII, XIII, XV and XXI in this format, one file
    /// per table (`table-VII.tex`, …); a table the report has no data for is skipped with
    /// the reason.
    #[arg(long, value_enum)]
    tables: Format,
    /// Where to write them (default DIR/tables).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn report_cmd(a: &ReportArgs) -> Result<()> {
    let path = a.dir.join("report.json");
    let text = std::fs::read(&path).with_context(|| {
        format!(
            "cannot read {}: give a results directory holding report.json (pqbench analyze {} writes it)",
            path.display(),
            a.dir.display()
        )
    })?;
    let r: analysis::Report = serde_json::from_slice(&text).with_context(|| {
        format!(
            "{} is not a pqbench report (written by another version?); run pqbench analyze {} again",
            path.display(),
            a.dir.display()
        )
    })?;
    let format = match a.tables {
        Format::Latex => TableFormat::Latex,
        Format::Md => TableFormat::Markdown,
    };
    let (made, skipped) = tables(&r);
    if made.is_empty() {
        bail!(
            "{} holds data for none of the study's tables: {}",
            path.display(),
            skipped
                .iter()
                .map(|s| format!("Table {}: {}", s.number, s.reason))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let out = a.out.clone().unwrap_or_else(|| a.dir.join("tables"));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    for t in &made {
        let file = out.join(file_name(t, format));
        std::fs::write(&file, t.render(format))
            .with_context(|| format!("cannot write {}", file.display()))?;
        println!("Table {:<5} {}", t.number, file.display());
    }
    for s in &skipped {
        println!("Table {:<5} skipped: {}", s.number, s.reason);
    }
    Ok(())
}
