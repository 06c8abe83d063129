//! What `make stack` prints: the stack's URL, names and environment, and commands to run in
//! another shell, exactly as they run there (tested as printed: `stack::banner_commands_run_as_printed`).

use super::Stack;

impl Stack {
    /// The banner for the stack served as `host`. Its commands name the workspace's own
    /// `tfreg` (built with the AWS shape's commands) by its full path: the `tfreg` a quick
    /// start installs is built without them.
    pub fn banner(&self, host: &str) -> String {
        let tfreg = crate::tfreg_bin();
        let mut out = format!("tfreg stack serving {}/\n\n", self.url);
        out += &format!("  table:  {}\n  bucket: {}\n", self.table, self.bucket);
        out += "\nThe emulated AWS, for `aws` and `tfreg --table` in another shell:\n\n";
        for (k, v) in &self.env {
            out += &format!("  export {k}={v}\n");
        }
        out += &format!(
            "  export AWS_CA_BUNDLE={}  # for the aws CLI\n",
            self.cert.display()
        );
        out += &format!(
            "\nPublish:   aws s3 cp FILE s3://{}/modules/acme/network/aws/1.0.0.tar.gz\n",
            self.bucket
        );
        out += &format!(
            "Token:     {} token create --table {} --expires 90d\n",
            tfreg.display(),
            self.table
        );
        out += &format!(
            "\nTerraform CLI configuration:\n\nhost \"{host}\" {{\n  services = {{\n    \"modules.v1\"   = \"{url}/v1/modules/\"\n    \"providers.v1\" = \"{url}/v1/providers/\"\n  }}\n}}\ncredentials \"{host}\" {{ token = \"<token>\" }}\ncredentials \"{addr}\" {{ token = \"<token>\" }}\n",
            url = self.url,
            addr = self.addr
        );
        out += &format!(
            "\nLogs of the functions: {}\nCtrl-C stops the stack.\n",
            self.dir().display()
        );
        out
    }

    /// The banner's shell lines to run in another shell: its `export` lines, then the
    /// command after `label` (`Token:`).
    pub fn banner_command(banner: &str, label: &str) -> Option<String> {
        let exports: Vec<&str> = banner
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("export "))
            .map(|l| l.split("  #").next().unwrap_or(l))
            .collect();
        let command = banner.lines().find_map(|l| l.strip_prefix(label))?.trim();
        Some(format!("{}\n{command}\n", exports.join("\n")))
    }
}
