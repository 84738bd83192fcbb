//! Reading a file the user points reapcheck at (scenarios, dialect SQL and
//! profiles): regular files only (symlinks followed), at most
//! [`MAX_FILE_BYTES`], so a FIFO cannot block `check` and a symlink to
//! `/dev/zero` cannot be read into memory.

use std::io::Read;
use std::path::Path;

/// The largest input file read: 8 MiB, a thousand times the largest file
/// of the corpus or the dialects.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadErrorKind {
    /// The operating system refused.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// A FIFO, device or socket: refused before it is opened.
    #[error("not a regular file: input files must be regular files (or symlinks to one)")]
    NotRegular,
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("the file has {size} bytes, more than the {limit} an input file may have: split it")]
    TooLarge {
        /// Its size in bytes (at least, when it grew while read).
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
}

/// The bytes of the regular file at `path`, at most [`MAX_FILE_BYTES`].
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ReadErrorKind> {
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        return Err(ReadErrorKind::NotRegular);
    }
    let too_large = |size| ReadErrorKind::TooLarge { size, limit: MAX_FILE_BYTES };
    if metadata.len() > MAX_FILE_BYTES {
        return Err(too_large(metadata.len()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bytes`] as UTF-8 text; invalid UTF-8 is an `InvalidData` error.
pub fn read_string(path: &Path) -> Result<String, ReadErrorKind> {
    String::from_utf8(read_bytes(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()).into())
}

/// `path` as reapcheck shows it in messages and traces: relative to the
/// current folder when below it (so a terminal or editor opens it from
/// where the command ran), else absolute; `.` for the current folder.
pub fn shown_path(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let relative = path.strip_prefix(&cwd).unwrap_or(&path);
    if relative.as_os_str().is_empty() { ".".to_owned() } else { relative.display().to_string() }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_and_a_device_are_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!("reapcheck-input-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("x.sql");
        let _ = std::fs::remove_file(&fifo);
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(matches!(read_string(&fifo), Err(ReadErrorKind::NotRegular)));
        assert!(matches!(read_string(Path::new("/dev/zero")), Err(ReadErrorKind::NotRegular)));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
