//! The admin listener's two files in the data directory: the bearer token (`admin.token`,
//! mode 0600, created on the first start and kept afterwards) and the address the listener is
//! bound to (`admin.addr`, rewritten on every start), which is how `xray keys` finds both.
//!
//! Called on the main thread at start-up and by the `xray keys` commands.
//!
//! Invariant: the token file is created with mode 0600 in one step (`create_new` + mode), so
//! it is never readable by others, not even briefly; an existing token file with looser
//! permissions is refused rather than used. The token never appears in a log line.

use crate::config::ADMIN_FILE_BYTES_MAX;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// File name of the admin bearer token inside the data directory.
pub const TOKEN_FILE_NAME: &str = "admin.token";
/// File name of the admin listener's bound address inside the data directory.
pub const ADDR_FILE_NAME: &str = "admin.addr";
/// Random bytes in an admin token (hex-encoded on disk and on the wire).
pub const TOKEN_RANDOM_BYTES: usize = 32;
/// Permission bits of the token file: owner read/write only.
const TOKEN_FILE_MODE: u32 = 0o600;

/// The admin token of `data_dir`, created (0600) if the directory has none yet.
pub fn load_or_create_token(data_dir: &Path) -> Result<String, String> {
    let path = data_dir.join(TOKEN_FILE_NAME);
    match OpenOptions::new().write(true).create_new(true).mode(TOKEN_FILE_MODE).open(&path) {
        Ok(mut file) => {
            let token = new_token()?;
            file.write_all(format!("{token}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            tracing::info!(path = %path.display(), "created the admin token");
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_token(data_dir),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The admin token stored in `data_dir` (refused when others may read the file).
pub fn read_token(data_dir: &Path) -> Result<String, String> {
    let path = data_dir.join(TOKEN_FILE_NAME);
    let mode = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!("{}: permissions {:o} let others read it; chmod 600 it", path.display(), mode & 0o777));
    }
    let token = read_line(&path)?;
    let valid = token.len() == TOKEN_RANDOM_BYTES * 2 && token.bytes().all(|b| b.is_ascii_hexdigit());
    if !valid {
        return Err(format!("{}: not an admin token", path.display()));
    }
    Ok(token)
}

/// Records the address the admin listener is bound to.
pub fn write_addr(data_dir: &Path, addr: SocketAddr) -> Result<(), String> {
    let path = data_dir.join(ADDR_FILE_NAME);
    std::fs::write(&path, format!("{addr}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// The address the admin listener of `data_dir` was last bound to.
pub fn read_addr(data_dir: &Path) -> Result<SocketAddr, String> {
    let path = data_dir.join(ADDR_FILE_NAME);
    let text = read_line(&path)?;
    text.parse().map_err(|_| format!("{}: not a socket address", path.display()))
}

fn read_line(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(ADMIN_FILE_BYTES_MAX).read_to_string(&mut text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text.trim().to_owned())
}

fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; TOKEN_RANDOM_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| format!("random: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_created_once_with_mode_0600_and_then_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create_token(dir.path()).expect("created");
        assert_eq!(first.len(), TOKEN_RANDOM_BYTES * 2);
        let mode = std::fs::metadata(dir.path().join(TOKEN_FILE_NAME)).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(load_or_create_token(dir.path()).expect("reused"), first);
        assert_eq!(read_token(dir.path()).expect("read"), first);
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        load_or_create_token(dir.path()).expect("created");
        let path = dir.path().join(TOKEN_FILE_NAME);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(read_token(dir.path()).expect_err("refused").contains("chmod 600"));
    }

    #[test]
    fn address_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr: SocketAddr = "127.0.0.1:9901".parse().expect("addr");
        write_addr(dir.path(), addr).expect("written");
        assert_eq!(read_addr(dir.path()).expect("read"), addr);
    }
}
