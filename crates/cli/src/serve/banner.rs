//! What `tfreg serve` prints on stdout once it answers: where, how to trust its certificate,
//! how to get access, and the Terraform CLI configuration to use it.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why a `terraform login` can succeed and the next `init` still get 401.
const LOGIN_TRAP: &str = "                  (Terraform keeps that token in ~/.terraform.d/credentials.tfrc.json and ignores the file while TF_CLI_CONFIG_FILE is set: unset it, or copy the token into that file's credentials block)";

/// What the banner says.
pub struct Banner {
    pub addr: SocketAddr,
    pub hostname: String,
    /// The data directory (with the AWS shape, the state folder).
    pub data: PathBuf,
    pub cert: PathBuf,
    pub self_signed: bool,
    /// The self-signed certificate was made now.
    pub generated: bool,
    pub public: bool,
    /// The AWS shape's table and bucket, when serving them.
    pub aws: Option<(String, String)>,
    /// People sign in with `terraform login`.
    pub login: bool,
    /// The upstream providers the mirror caches, when any.
    pub upstream: Vec<String>,
}

/// How to run this very `tfreg` from a shell: `tfreg` when that is what the PATH finds,
/// else its full path (under `make run`, or before `make install`), so printed commands
/// work as printed.
fn tfreg_command() -> String {
    let Ok(exe) = std::env::current_exe().and_then(|e| e.canonicalize()) else {
        return "tfreg".into();
    };
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("tfreg"))
            .find(|candidate| candidate.is_file())
    });
    match on_path.and_then(|found| found.canonicalize().ok()) {
        Some(found) if found == exe => "tfreg".into(),
        _ => exe.display().to_string(),
    }
}

impl Banner {
    /// The host a module's `source` names, and why: the registry's hostname when it has one
    /// of its own (Terraform finds it through the CLI configuration's host block), else the
    /// address (Terraform needs a dot in a registry host: 127.0.0.1, not localhost).
    fn source_host(&self) -> (String, String) {
        let addr = self.addr.to_string();
        match self.hostname != addr && self.hostname.contains('.') {
            true => (
                self.hostname.clone(),
                format!(
                    "Terraform finds {} through the host block of the CLI configuration below",
                    self.hostname
                ),
            ),
            false => (
                addr,
                "Terraform needs a dot in the host, so use 127.0.0.1 rather than localhost".into(),
            ),
        }
    }

    /// What a user needs to point Terraform at this server, on stdout. The first line is stable:
    /// `tfreg serving https://ADDR/` (tests and scripts read the address from it).
    pub fn print(&self) {
        let b = self;
        let url = format!("https://{}", b.addr);
        let cert = b.cert.display();
        let mut out = String::new();
        out.push_str(&format!("tfreg serving {url}/\n\n"));
        match &b.aws {
            Some((table, bucket)) => out.push_str(&format!(
                "  table:          {table}\n  bucket:         {bucket} (indexed by the indexer function, or `tfreg reindex`)\n"
            )),
            None => out.push_str(&format!("  data directory: {}\n", b.data.display())),
        }
        let cert_note = match (b.self_signed, b.generated) {
            (true, true) => " (self-signed for localhost and 127.0.0.1, generated now)",
            (true, false) => " (self-signed for localhost and 127.0.0.1)",
            _ => "",
        };
        out.push_str(&format!("  certificate:    {cert}{cert_note}\n"));
        out.push_str(&format!("  hostname:       {}\n", b.hostname));
        if b.public {
            out.push_str("  access:         public: every request is answered, without a token\n");
        } else {
            let create = match &b.aws {
                Some((table, _)) => format!("{} token create --table {table}", tfreg_command()),
                None => format!(
                    "{} token create --data {}",
                    tfreg_command(),
                    b.data.display()
                ),
            };
            out.push_str(&format!(
                "  access:         a token is required; create one with\n                  {create}\n"
            ));
            if b.login {
                out.push_str(&format!(
                    "                  or sign in: terraform login {}\n\
                     {LOGIN_TRAP}\n",
                    b.addr
                ));
            }
        }
        if !b.upstream.is_empty() {
            out.push_str(&format!(
                "  upstream cache: {} (through {url}/v1/mirror/)\n",
                b.upstream.join(", ")
            ));
        }
        if b.self_signed {
            out.push_str(&format!(
                "\nTerraform trusts the certificate through:\n\n  export SSL_CERT_FILE={cert}\n"
            ));
        }
        let (source_host, how) = b.source_host();
        out.push_str(&format!(
            "\nUse a module ({how}):\n\n  \
             module \"example\" {{\n    source  = \"{source_host}/<namespace>/<name>/<system>\"\n    version = \"~> 1.0\"\n  }}\n",
        ));
        out.push_str(&format!(
            "\nTerraform CLI configuration (~/.terraformrc, or the file TF_CLI_CONFIG_FILE names):\n\n\
             # tfreg:cli-config:begin\n\
             host \"{host}\" {{\n  services = {{\n    \"modules.v1\"   = \"{url}/v1/modules/\"\n    \"providers.v1\" = \"{url}/v1/providers/\"\n  }}\n}}\n\
             {credentials}\
             # tfreg:cli-config:end\n",
            host = b.hostname,
            credentials = if b.public {
                String::new()
            } else {
                let mut hosts = vec![b.hostname.clone()];
                let addr = b.addr.to_string();
                if addr != b.hostname {
                    hosts.push(addr); // the mirror is reached at the address, port included
                }
                let mut lines = "# With a token from `tfreg token create`:\n".to_owned();
                for host in hosts {
                    lines.push_str(&format!("# credentials \"{host}\" {{ token = \"<token>\" }}\n"));
                }
                lines
            }
        ));
        print!("{out}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
    }
}
