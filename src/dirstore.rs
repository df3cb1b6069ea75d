//! The S3 object layout written to a local directory: `<key>.pqcs/<version>/data.enc` and
//! `<key>.pqcs/<version>/manifest.json` (DESIGN.md "Envelope format v1").
//!
//! Writes go to a temporary file in the target directory and are renamed into place, data
//! first and the manifest last: the manifest is the commit record, so an interrupted seal
//! never leaves a visible version.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

/// File name of the ciphertext stream.
pub(crate) const DATA: &str = envelope::layout::DATA_NAME;
/// File name of the manifest.
pub(crate) const MANIFEST: &str = envelope::layout::MANIFEST_NAME;
/// File name of a format-v2 version (placement prefix: header, then chunks).
pub(crate) const OBJECT_V2: &str = envelope::layout::OBJECT_V2_NAME;

/// `root/<key>.pqcs/<version>`, refusing keys that would escape `root`.
pub(crate) fn version_dir(root: &Path, key: &str, version: &str) -> Result<PathBuf> {
    // Split by hand: `Path::components` silently drops `.` and empty segments.
    if key
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        bail!(
            "--key {key:?} has a '.', '..' or empty path segment (or a leading or trailing '/'), \
             which a local directory cannot hold safely"
        );
    }
    Ok(root
        .join(format!("{key}{}", envelope::layout::VERSIONS_SUFFIX))
        .join(version))
}

/// A file being written under a temporary name; renamed into place by [`Staged::commit`],
/// removed if dropped uncommitted.
pub(crate) struct Staged {
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<fs::File>,
}

impl Staged {
    /// Creates `dest`'s temporary sibling (`.<name>.tmp-<pid>`), creating parent directories.
    pub(crate) fn create(dest: &Path) -> Result<Self> {
        let dir = dest
            .parent()
            .context("output path has no parent directory")?;
        fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {}", dir.display()))?;
        let name = dest
            .file_name()
            .context("output path has no file name")?
            .to_string_lossy();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        Ok(Self {
            tmp,
            dest: dest.to_path_buf(),
            file: Some(file),
        })
    }

    /// The open file.
    pub(crate) fn file(&mut self) -> &mut fs::File {
        self.file.as_mut().expect("file is open until commit")
    }

    /// Flushes, syncs and renames into place.
    pub(crate) fn commit(mut self) -> Result<()> {
        let mut f = self.file.take().expect("file is open until commit");
        f.flush()
            .and_then(|()| f.sync_all())
            .with_context(|| format!("cannot write {}", self.tmp.display()))?;
        drop(f);
        fs::rename(&self.tmp, &self.dest).with_context(|| {
            format!(
                "cannot rename {} to {}",
                self.tmp.display(),
                self.dest.display()
            )
        })
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_escape_the_output_directory() {
        let root = Path::new("/out");
        assert!(version_dir(root, "a/b.txt", "v").is_ok());
        for bad in ["../x", "a/../../x", "/abs", "a//b", "a/./b", "dir/"] {
            assert!(version_dir(root, bad, "v").is_err(), "{bad}");
        }
    }
}
