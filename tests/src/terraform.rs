//! The real `terraform` CLI in a working directory of its own, and the CLI configurations
//! the tests give it.

use super::*;

/// A working directory for the real `terraform` CLI with its own CLI configuration.
pub struct Terraform {
    /// The working directory: `terraform` runs here.
    pub dir: TempDir,
    env: Vec<(String, String)>,
}

impl Terraform {
    /// A fresh directory whose CLI configuration is `cli_config`, trusting `cert`.
    pub fn new(cli_config: &str, cert: &Path) -> Terraform {
        require_terraform();
        let dir = TempDir::new().unwrap();
        let config = dir.path().join("terraform.rc");
        std::fs::write(&config, cli_config).unwrap();
        let env = vec![
            ("TF_CLI_CONFIG_FILE".into(), config.display().to_string()),
            ("SSL_CERT_FILE".into(), cert.display().to_string()),
            ("CHECKPOINT_DISABLE".into(), "1".into()),
            ("TF_IN_AUTOMATION".into(), "1".into()),
            ("TF_INPUT".into(), "0".into()),
        ];
        Terraform { dir, env }
    }

    /// Writes `content` to `file` in the working directory.
    pub fn write(&self, file: &str, content: &str) {
        std::fs::write(self.dir.path().join(file), content).unwrap();
    }

    /// Sets an environment variable for every run (`HOME`, for `terraform login`'s
    /// credentials file).
    pub fn set_env(&mut self, name: &str, value: &str) {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.to_owned(), value.to_owned()));
    }

    /// The environment every run gets.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// Runs `terraform ARGS...` in the directory.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new("terraform");
        command.args(args).current_dir(self.dir.path());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
            .env_remove("TF_LOG")
            .env_remove("TF_PLUGIN_CACHE_DIR");
        command.output().expect("terraform runs")
    }

    /// `terraform init`, asserting it succeeds.
    pub fn init(&self, extra: &[&str]) -> String {
        let mut args = vec!["init", "-no-color", "-input=false"];
        args.extend_from_slice(extra);
        let output = self.run(&args);
        let text = describe(&output);
        assert!(output.status.success(), "terraform init failed:\n{text}");
        text
    }

    /// `terraform ARGS...`, asserting it succeeds, with `what` it was for in the failure
    /// message; returns its output.
    pub fn run_ok(&self, args: &[&str], what: &str) -> String {
        let output = self.run(args);
        let text = describe(&output);
        assert!(
            output.status.success(),
            "{what}: terraform {args:?} failed:\n{text}"
        );
        text
    }

    /// `terraform init`, asserting it fails; returns its output.
    pub fn init_fails(&self) -> String {
        let output = self.run(&["init", "-no-color", "-input=false"]);
        let text = describe(&output);
        assert!(
            !output.status.success(),
            "terraform init should have failed:\n{text}"
        );
        text
    }

    /// The installed version of each module call, from `.terraform/modules/modules.json`.
    pub fn installed_modules(&self) -> std::collections::BTreeMap<String, String> {
        let path = self.dir.path().join(".terraform/modules/modules.json");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        json["Modules"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["Key"] != "")
            .map(|m| {
                (
                    m["Key"].as_str().unwrap().to_owned(),
                    m["Version"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// The content of an installed module's file.
    pub fn module_file(&self, key: &str, file: &str) -> String {
        let path = self
            .dir
            .path()
            .join(".terraform/modules")
            .join(key)
            .join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// The platform this machine's Terraform installs for (`linux_amd64`).
pub fn terraform_platform() -> String {
    require_terraform();
    let output = Command::new("terraform")
        .args(["version", "-json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    json["platform"]
        .as_str()
        .expect("terraform version -json has a platform")
        .to_owned()
}

/// The CLI configuration that maps `hostname` to a local server (providers and modules).
pub fn host_block(hostname: &str, url: &str) -> String {
    format!(
        "host \"{hostname}\" {{\n  services = {{\n    \"modules.v1\"   = \"{url}/v1/modules/\"\n    \"providers.v1\" = \"{url}/v1/providers/\"\n  }}\n}}\n"
    )
}

/// A CLI configuration installing every provider through a network mirror.
pub fn mirror_config(url: &str) -> String {
    format!(
        "provider_installation {{\n  network_mirror {{\n    url = \"{url}/v1/mirror/\"\n  }}\n}}\n"
    )
}

/// A configuration requiring one provider.
pub fn requires_provider(name: &str, source: &str, version: &str) -> String {
    format!(
        "terraform {{\n  required_providers {{\n    {name} = {{\n      source  = \"{source}\"\n      version = \"{version}\"\n    }}\n  }}\n}}\n"
    )
}

/// A configuration requiring each provider `(name, source)` at `version`.
pub fn requires_providers(providers: &[(&str, String)], version: &str) -> String {
    let entries: String = providers
        .iter()
        .map(|(name, source)| {
            format!("    {name} = {{\n      source  = \"{source}\"\n      version = \"{version}\"\n    }}\n")
        })
        .collect();
    format!("terraform {{\n  required_providers {{\n{entries}  }}\n}}\n")
}

/// Terraform's error for one provider in `terraform init`'s output (`address` as
/// `HOST/NAMESPACE/TYPE`, `version` as `1.0.0`), whitespace folded (Terraform wraps its
/// messages); empty when there is none.
pub fn install_error(output: &str, address: &str, version: &str) -> String {
    let folded = output.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = format!("Error while installing {address} v{version}:");
    let Some(at) = folded.find(&start) else {
        return String::new();
    };
    let rest = &folded[at + start.len()..];
    let end = rest.find("Error").unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// Whether `terraform init`'s output says it installed `address` at `version`.
pub fn installed(output: &str, address: &str, version: &str) -> bool {
    output.contains(&format!("Installed {address} v{version}"))
}
