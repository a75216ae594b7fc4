//! Files the CLI writes, checked before any training starts and written so that nothing is
//! ever lost: through a temporary file of our own, renamed into place. A symbolic link is
//! written through (the file it points to is replaced, the link stays); a directory, a device
//! file or a pipe is refused.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a checkpoint will go, known to be writable when training started.
#[derive(Debug)]
pub struct Destination {
    /// As the user gave it, for messages.
    shown: String,
    /// The file to replace: the path itself, or the file its symbolic link points to.
    target: PathBuf,
}

impl Destination {
    /// Checks `path` as a place to write a file, before anything is trained.
    pub fn check(path: &str) -> Result<Destination, String> {
        let fail = |why: &str| Err(format!("cannot save to {path:?}: {why}"));
        if path.is_empty() {
            return fail("the path is empty");
        }
        let target = match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(path) {
                Ok(t) => t,
                Err(_) => return fail("it is a symbolic link to a file that does not exist"),
            },
            _ => PathBuf::from(path),
        };
        match fs::metadata(&target) {
            Ok(m) if m.is_dir() => return fail("it is a directory"),
            Ok(m) if !m.is_file() => return fail("it is not a regular file (a device or a pipe?)"),
            Ok(m) if m.permissions().readonly() => return fail("the file is read-only"),
            _ => {}
        }
        let d = Destination {
            shown: path.to_string(),
            target,
        };
        let dir = d.directory();
        if !dir.is_dir() {
            return fail(&format!("the folder {} does not exist", dir.display()));
        }
        // Writable: the only way to know is to try, with a file of our own.
        let (probe, _) = d
            .create_temporary()
            .map_err(|e| format!("cannot save to {path:?}: {e}"))?;
        let _ = fs::remove_file(probe);
        Ok(d)
    }

    fn directory(&self) -> PathBuf {
        match self.target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    /// A new file beside the target that no one else has: created exclusively, under a name
    /// with this process's id and a counter, so an existing file is never touched.
    fn create_temporary(&self) -> Result<(PathBuf, fs::File), String> {
        let name = self
            .target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for attempt in 0..100 {
            let path = self
                .directory()
                .join(format!(".{name}.{}.{attempt}.partial", std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok((path, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "cannot create a file in {}: {e}",
                        self.directory().display()
                    ))
                }
            }
        }
        Err(format!(
            "no free temporary name in {}",
            self.directory().display()
        ))
    }

    /// Writes `bytes` to a temporary file, flushes it to disk and renames it over the target:
    /// a reader sees the old file or the new one, never half of one.
    pub fn write(&self, bytes: &[u8]) -> Result<(), String> {
        let (tmp, mut file) = self.create_temporary().map_err(|e| self.failed(&e))?;
        let written = file
            .write_all(bytes)
            .and_then(|_| file.sync_all())
            .and_then(|_| keep_permissions(&self.target, &tmp))
            .and_then(|_| fs::rename(&tmp, &self.target));
        written.map_err(|e| {
            let _ = fs::remove_file(&tmp);
            self.failed(&e.to_string())
        })
    }

    /// The path as the user gave it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn failed(&self, why: &str) -> String {
        format!("cannot write {}: {why}", self.shown)
    }
}

/// Gives the new file the permissions of the one it replaces, if any.
fn keep_permissions(target: &Path, new: &Path) -> std::io::Result<()> {
    match fs::metadata(target) {
        Ok(m) => fs::set_permissions(new, m.permissions()),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("webgrad-dest-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn refusal(path: &Path) -> String {
        match Destination::check(path.to_str().unwrap()) {
            Ok(_) => panic!("{} was accepted", path.display()),
            Err(e) => e,
        }
    }

    #[test]
    fn bad_destinations_are_refused_before_training() {
        let dir = scratch("bad");
        assert!(Destination::check("")
            .unwrap_err()
            .contains("the path is empty"));
        assert!(refusal(&dir).contains("it is a directory"));
        assert!(refusal(&dir.join("missing/x.safetensors")).contains("does not exist"));
        assert!(refusal(Path::new("/dev/null")).contains("not a regular file"));
        let link = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nowhere"), &link).unwrap();
        assert!(refusal(&link).contains("symbolic link to a file that does not exist"));
        let ro = dir.join("read-only");
        fs::write(&ro, b"keep").unwrap();
        let mut p = fs::metadata(&ro).unwrap().permissions();
        p.set_readonly(true);
        fs::set_permissions(&ro, p).unwrap();
        assert!(refusal(&ro).contains("read-only"));
        assert_eq!(fs::read(&ro).unwrap(), b"keep");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            2,
            "the probe left a file behind"
        );
    }

    #[test]
    fn writing_replaces_the_file_and_nothing_else() {
        let dir = scratch("write");
        let out = dir.join("model.safetensors");
        // Someone else's file with the old fixed temporary name is left alone.
        let theirs = dir.join("model.safetensors.partial");
        fs::write(&theirs, b"not ours").unwrap();
        let d = Destination::check(out.to_str().unwrap()).unwrap();
        d.write(b"first").unwrap();
        d.write(b"second").unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"second");
        assert_eq!(fs::read(&theirs).unwrap(), b"not ours");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            2,
            "a temporary file was left"
        );
    }

    #[test]
    fn a_symbolic_link_is_written_through_and_kept() {
        let dir = scratch("link");
        let real = dir.join("real.safetensors");
        fs::write(&real, b"old").unwrap();
        let link = dir.join("link.safetensors");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        Destination::check(link.to_str().unwrap())
            .unwrap()
            .write(b"new")
            .unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
    }
}
