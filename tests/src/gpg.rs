//! Release keys, signatures and provider releases, made with GnuPG as publishers make them.

use super::*;

/// A throwaway GnuPG home for making release keys and signatures, as publishers do.
pub struct Gpg {
    home: TempDir,
}

impl Gpg {
    /// A fresh GnuPG home with one RSA signing key (Terraform refuses EdDSA).
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

    fn gpg(&self, args: &[&str]) -> Output {
        let output = Command::new("gpg")
            .env("GNUPGHOME", self.home.path())
            .args([
                "--batch",
                "--yes",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
            ])
            .args(args)
            .output()
            .expect("gpg runs");
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
