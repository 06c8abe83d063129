//! The data directory's audit log (`.tfreg/audit.log`), whose lines name who issued, revoked,
//! yanked or deprecated what, is owner-only (0600) like every other file of the state folder:
//! made so whatever the umask, and made so when an older tfreg left it readable by others.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use tfreg_e2e::{tfreg_bin, TempDir};

/// `tfreg ARGS...` under umask 022 (files 0644 unless the program asks otherwise).
fn tfreg_with_umask_022(args: &[&str]) -> String {
    let output = Command::new("sh")
        .args(["-c", "umask 022 && exec \"$0\" \"$@\""])
        .arg(tfreg_bin())
        .args(args)
        .env_remove("TFREG_DATA")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "tfreg {args:?}:\n{text}");
    text
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_audit_log_is_owner_only_when_made_and_when_found_readable_by_others() {
    let data = TempDir::new().unwrap();
    let dir = data.path().to_str().unwrap();
    let audit = data.path().join(".tfreg/audit.log");

    // Given no audit log yet, when a token is created under umask 022,
    tfreg_with_umask_022(&["token", "create", "--data", dir]);

    // then the audit log holds its line, and only its owner may read it.
    let lines = std::fs::read_to_string(&audit).unwrap();
    assert!(lines.contains("token_issued"), "{lines}");
    assert_eq!(
        mode(&audit),
        0o600,
        "{} is {:o}",
        audit.display(),
        mode(&audit)
    );

    // Given an audit log readable by others (as tfreg made it before), when another token is
    // created, the log is made owner-only and keeps every line.
    std::fs::set_permissions(&audit, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = tfreg_with_umask_022(&["token", "create", "--data", dir]);
    assert!(!out.contains("audit log"), "{out}");
    assert_eq!(
        mode(&audit),
        0o600,
        "{} is {:o}",
        audit.display(),
        mode(&audit)
    );
    let lines = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(
        lines.lines().filter(|l| l.contains("token_issued")).count(),
        2,
        "{lines}"
    );
}
