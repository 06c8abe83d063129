//! Reading a file that a working directory or a home folder names, as hostile: only a regular
//! file is read (a FIFO, a device or a folder is refused without blocking on it), at most a
//! given number of bytes, and, where asked, never through a link. The file is opened with
//! `O_NONBLOCK` (so opening a FIFO cannot wait for a writer) and its type checked on the
//! opened descriptor (so nothing can swap it between a check and the read).

use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// Whether the last component of the path may be a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A link is refused (`O_NOFOLLOW`): files of a Terraform working directory.
    Refuse,
    /// A link is followed to a regular file: the user's own configuration files, which
    /// dotfile managers often link.
    Follow,
}

/// The bytes of `path`, a regular file of at most `max` bytes. A missing file is an error of
/// kind [`io::ErrorKind::NotFound`]; every refusal says what the path is and why.
pub fn read(path: &Path, max: u64, links: Links) -> io::Result<Vec<u8>> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    if links == Links::Refuse {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) if links == Links::Refuse => {
            return Err(refused(path, "is a symbolic link"));
        }
        Err(e) => return Err(e.into()),
    };
    let file = std::fs::File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(refused(
            path,
            "is not a regular file (a FIFO, a device or a folder)",
        ));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(refused(path, &format!("is larger than {max} bytes")));
    }
    Ok(bytes)
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{} {why}: not read", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `read` on another thread, failing (not hanging) when it does not return at once.
    fn read_soon(path: &Path, links: Links) -> io::Result<Vec<u8>> {
        let path = path.to_path_buf();
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(read(&path, 1024, links)));
        result
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading did not return within 10 s: it blocked on the file")
    }

    #[test]
    fn only_bounded_regular_files_are_read_and_a_fifo_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"hello").unwrap();
        assert_eq!(read_soon(&file, Links::Refuse).unwrap(), b"hello");

        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        for links in [Links::Refuse, Links::Follow] {
            let refused = read_soon(&fifo, links).unwrap_err().to_string();
            assert!(refused.contains("not a regular file"), "{refused}");
        }
        let refused = read_soon(dir.path(), Links::Follow)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("not a regular file"), "{refused}");

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let refused = read_soon(&link, Links::Refuse).unwrap_err().to_string();
        assert!(refused.contains("symbolic link"), "{refused}");
        assert_eq!(read_soon(&link, Links::Follow).unwrap(), b"hello");

        std::fs::write(&file, vec![b'x'; 1025]).unwrap();
        let refused = read_soon(&file, Links::Follow).unwrap_err().to_string();
        assert!(refused.contains("larger than 1024 bytes"), "{refused}");
        let missing = read_soon(&dir.path().join("missing"), Links::Refuse).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
