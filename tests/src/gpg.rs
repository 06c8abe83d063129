//! Release keys, signatures and provider releases, made with GnuPG as publishers make them.

use super::*;

/// A throwaway GnuPG home for making release keys and signatures, as publishers do.
pub struct Gpg {
    home: TempDir,
}

impl Gpg {
    /// A fresh GnuPG home, with no key yet.
    pub fn new() -> Gpg {
        let found = Command::new("gpg")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "`gpg` is not on PATH, and the provider tests sign releases with it as publishers do. \
             Install GnuPG (`apt-get install gnupg`) and run the tests again."
        );
        Gpg {
            home: TempDir::new().unwrap(),
        }
    }

    /// The GnuPG home (`GNUPGHOME`), for running other programs against this keyring.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `gpg` in this home, unattended, with `args`.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("gpg");
        command
            .env("GNUPGHOME", self.home.path())
            .args(["--batch", "--yes", "--pinentry-mode", "loopback"])
            .args(["--passphrase", ""])
            .args(args);
        command
    }

    fn gpg(&self, args: &[&str]) -> Output {
        let output = self.command(args).output().expect("gpg runs");
        assert!(
            output.status.success(),
            "gpg {args:?} failed:\n{}",
            describe(&output)
        );
        output
    }

    /// Generates a key (`rsa2048`, `ed25519`, ...) for `email`, expiring as `expire` says
    /// (`never`, or a date).
    pub fn generate(&self, email: &str, algorithm: &str, expire: &str, faked_time: Option<&str>) {
        let uid = format!("tfreg test <{email}>");
        let mut args = vec![];
        if let Some(time) = faked_time {
            args.extend(["--faked-system-time", time]);
        }
        args.extend(["--quick-gen-key", &uid, algorithm, "sign", expire]);
        self.gpg(&args);
    }

    /// The ASCII-armored public key of `email`.
    pub fn export(&self, email: &str) -> Vec<u8> {
        self.gpg(&["--armor", "--export", email]).stdout
    }

    /// The ASCII-armored secret key of `email` (unprotected), as `tfreg publish module
    /// --sign` reads it.
    pub fn export_secret(&self, email: &str) -> Vec<u8> {
        self.gpg(&["--armor", "--export-secret-keys", email]).stdout
    }

    /// The 16-hex-digit key ID of `email`'s primary key.
    pub fn key_id(&self, email: &str) -> String {
        let out = self.gpg(&["--list-keys", "--with-colons", email]).stdout;
        let text = String::from_utf8(out).unwrap();
        let pub_line = text.lines().find(|l| l.starts_with("pub:")).unwrap();
        pub_line.split(':').nth(4).unwrap().to_owned()
    }

    /// A binary detached signature of `content` by `email`, as `gpg --detach-sign` makes it.
    pub fn sign(&self, email: &str, content: &[u8], faked_time: Option<&str>) -> Vec<u8> {
        let dir = TempDir::new().unwrap();
        let input = dir.path().join("in");
        let output = dir.path().join("in.sig");
        std::fs::write(&input, content).unwrap();
        let mut args = vec![];
        if let Some(time) = faked_time {
            args.extend(["--faked-system-time", time]);
        }
        args.extend(["--local-user", email, "--detach-sign", "-o"]);
        let (i, o) = (input.to_str().unwrap(), output.to_str().unwrap());
        args.extend([o, i]);
        self.gpg(&args);
        std::fs::read(output).unwrap()
    }
}

impl Gpg {
    /// `gpg --local-user EMAIL ARGS... -o OUT IN` over `content`: any signing command
    /// (`--detach-sign --armor`, `--clearsign`, `--sign`, ...). Returns what gpg wrote.
    pub fn sign_as(&self, email: &str, content: &[u8], args: &[&str]) -> Vec<u8> {
        let dir = TempDir::new().unwrap();
        let (input, output) = (dir.path().join("in"), dir.path().join("out"));
        std::fs::write(&input, content).unwrap();
        let mut all = vec!["--local-user", email];
        all.extend_from_slice(args);
        all.extend(["-o", output.to_str().unwrap(), input.to_str().unwrap()]);
        self.gpg(&all);
        std::fs::read(output).unwrap()
    }
}

/// Key management beyond one signing key, for the signature cases of e2e `signatures`.
impl Gpg {
    /// `gpg --quick-gen-key` with a usage (`sign`, `cert`, ...), as `generate` but with the
    /// usage chosen.
    pub fn generate_for(&self, email: &str, algorithm: &str, usage: &str, expire: &str) {
        let uid = format!("tfreg test <{email}>");
        self.gpg(&["--quick-gen-key", &uid, algorithm, usage, expire]);
    }

    /// The primary key's fingerprint, then each subkey's.
    pub fn fingerprints(&self, email: &str) -> Vec<String> {
        let out = self.gpg(&["--list-keys", "--with-colons", email]).stdout;
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("fpr:"))
            .map(|l| l.split(':').nth(9).unwrap().to_owned())
            .collect()
    }

    /// Adds a signing subkey (`gpg --quick-add-key FPR ALGORITHM sign never`).
    pub fn add_signing_subkey(&self, email: &str, algorithm: &str) {
        let primary = self.fingerprints(email).remove(0);
        self.gpg(&["--quick-add-key", &primary, algorithm, "sign", "never"]);
    }

    /// Adds a user ID (`gpg --quick-add-uid`).
    pub fn add_uid(&self, email: &str, uid: &str) {
        self.gpg(&["--quick-add-uid", email, uid]);
    }

    /// Revokes a user ID (`gpg --quick-revoke-uid`).
    pub fn revoke_uid(&self, email: &str, uid: &str) {
        self.gpg(&["--quick-revoke-uid", email, uid]);
    }

    /// Sets the primary key's expiry (`gpg --quick-set-expire`), at a faked time if given.
    pub fn set_expire(&self, email: &str, expire: &str, faked_time: Option<&str>) {
        let primary = self.fingerprints(email).remove(0);
        let mut args = vec![];
        if let Some(time) = faked_time {
            args.extend(["--faked-system-time", time]);
        }
        args.extend(["--quick-set-expire", &primary, expire]);
        self.gpg(&args);
    }

    /// Revokes the key, as importing the revocation certificate GnuPG wrote when it made the
    /// key does: its published armor then carries the revocation.
    pub fn revoke(&self, email: &str) {
        let primary = self.fingerprints(email).remove(0);
        let path = self
            .home
            .path()
            .join(format!("openpgp-revocs.d/{primary}.rev"));
        let certificate = std::fs::read_to_string(&path).unwrap();
        // GnuPG writes it with the armor's first line escaped, against importing it by mistake.
        let certificate = certificate.replace(":-----BEGIN", "-----BEGIN");
        let file = self.home.path().join("revoke.asc");
        std::fs::write(&file, certificate).unwrap();
        self.gpg(&["--import", file.to_str().unwrap()]);
    }

    /// Revokes the key's first subkey (`gpg --edit-key`: `key 1`, `revkey`).
    pub fn revoke_subkey(&self, email: &str) {
        let primary = self.fingerprints(email).remove(0);
        let mut child = self
            .command(&["--command-fd", "0", "--edit-key", &primary])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("gpg runs");
        use std::io::Write as _;
        // Select subkey 1, revoke it, answer "yes", reason 0, no description, "okay", save.
        let answers = b"key 1\nrevkey\ny\n0\n\ny\nsave\n";
        child.stdin.take().unwrap().write_all(answers).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "gpg revkey:\n{}",
            describe(&output)
        );
        let listing = self.gpg(&["--list-keys", "--with-colons", email]).stdout;
        let listing = String::from_utf8(listing).unwrap();
        assert!(
            listing.lines().any(|l| l.starts_with("sub:r:")),
            "the subkey is not revoked:\n{listing}"
        );
    }
}

impl Default for Gpg {
    fn default() -> Self {
        Self::new()
    }
}

/// A provider package: a zip holding an executable `terraform-provider-<type>_v<version>`.
pub fn provider_zip(type_: &str, version: &str, platform: &str) -> Vec<u8> {
    let binary = format!("terraform-provider-{type_}_v{version}");
    let content = format!("#!/bin/sh\necho 'fake provider {type_} {version} for {platform}'\n");
    zip(&[(&binary, content.as_bytes(), 0o755)])
}

/// The files goreleaser's `dist/` holds for a release: one zip per platform and SHA256SUMS.
/// Returns (file name, content) pairs; the signature is made separately.
pub fn provider_release(type_: &str, version: &str, platforms: &[&str]) -> Vec<(String, Vec<u8>)> {
    use sha2::Digest;
    let mut files = Vec::new();
    let mut sums = String::new();
    for platform in platforms {
        let name = format!("terraform-provider-{type_}_{version}_{platform}.zip");
        let zip = provider_zip(type_, version, platform);
        sums.push_str(&format!(
            "{}  {name}\n",
            hex::encode(sha2::Sha256::digest(&zip))
        ));
        files.push((name, zip));
    }
    files.push((
        format!("terraform-provider-{type_}_{version}_SHA256SUMS"),
        sums.into_bytes(),
    ));
    files
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
