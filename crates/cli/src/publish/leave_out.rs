//! What `tfreg publish` leaves out of a module: local state, which is never published
//! whatever is asked, and secret-shaped files ([`tfreg_core::module_archive::secrets`]),
//! unless `--include PATTERN` brings them back.
//!
//! A PATTERN without `/` is matched against file names at any depth (`*.pub`,
//! `.env.example`); one with `/` against the whole path from the module folder
//! (`certs/*.pem`). `*` is any run of characters but `/`; case is ignored, as the secret rule
//! ignores it.

use tfreg_core::module_archive::secrets::{glob_matches, is_secret_shaped, SECRET_SHAPED};

/// Folders never packed, at any depth: Terraform's and version control's local state.
const EXCLUDED_FOLDERS: &[&str] = &[".terraform", ".git", ".hg", ".svn"];

/// Files never packed, at any depth: state files and plans (they hold secrets), variable
/// files (the usual home of secrets, and never read when the module is called), the
/// dependency lock file (only a root module's counts, and a called module's is ignored),
/// crash logs, and CLI configurations (they hold credentials).
fn never_published_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".tfstate")
        || lower.contains(".tfstate.")
        || lower.ends_with(".tfplan")
        || lower.ends_with(".tfvars")
        || lower.ends_with(".tfvars.json")
        || lower == ".terraform.lock.hcl"
        || lower == "crash.log"
        || (lower.starts_with("crash.") && lower.ends_with(".log"))
        || lower == ".terraformrc"
        || lower == "terraform.rc"
        // `.git` is a file in submodules and worktrees.
        || lower == ".git"
}

/// True when a folder or file named `name` is never published, whatever `--include` says.
pub fn never_published(name: &str, folder: bool) -> bool {
    match folder {
        true => EXCLUDED_FOLDERS.contains(&name),
        false => never_published_file(name),
    }
}

/// Why something is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOut {
    /// Local state: never published.
    Never,
    /// A secret-shaped file that no `--include` pattern brings back.
    SecretShaped,
}

/// One `--include` pattern, and what it did.
#[derive(Debug)]
struct Pattern {
    text: String,
    /// Secret-shaped files it brought back.
    used: bool,
    /// Files it matched that are never published (they stay out).
    never: Vec<String>,
}

impl Pattern {
    fn matches(&self, path: &str) -> bool {
        let path = path.strip_suffix('/').unwrap_or(path);
        match self.text.contains('/') {
            true => glob_matches(&self.text, path),
            false => glob_matches(&self.text, path.rsplit('/').next().unwrap_or(path)),
        }
    }
}

/// The `--include` patterns of one publish.
#[derive(Debug, Default)]
pub struct Includes {
    patterns: Vec<Pattern>,
}

impl Includes {
    pub fn new(patterns: &[String]) -> Includes {
        Includes {
            patterns: patterns
                .iter()
                .map(|text| Pattern {
                    text: text.clone(),
                    used: false,
                    never: Vec::new(),
                })
                .collect(),
        }
    }

    /// Why the file or folder at `path` (relative, `/`-separated, named `name`) is left out,
    /// if it is; notes what each pattern matched, for [`Includes::warnings`].
    pub fn left_out(&mut self, path: &str, name: &str, folder: bool) -> Option<LeftOut> {
        if never_published(name, folder) {
            for pattern in self.patterns.iter_mut().filter(|p| p.matches(path)) {
                pattern.never.push(path.to_owned());
            }
            return Some(LeftOut::Never);
        }
        if folder || !is_secret_shaped(path) {
            return None;
        }
        let mut included = false;
        for pattern in self.patterns.iter_mut().filter(|p| p.matches(path)) {
            pattern.used = true;
            included = true;
        }
        (!included).then_some(LeftOut::SecretShaped)
    }

    /// Why the file at `path` is left out, if it is, as far as its own name and path go:
    /// what a link inside the module may not point at. Notes nothing.
    pub fn left_out_target(&self, path: &str) -> Option<LeftOut> {
        let never = |s: &str| never_published(s, true) || never_published(s, false);
        if path.split('/').any(never) {
            return Some(LeftOut::Never);
        }
        let included = self.patterns.iter().any(|p| p.matches(path));
        (is_secret_shaped(path) && !included).then_some(LeftOut::SecretShaped)
    }

    /// What the patterns did not do: one that matched nothing, one that matched only
    /// files that are never published.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for pattern in &self.patterns {
            if !pattern.never.is_empty() {
                warnings.push(format!(
                    "--include {:?} cannot bring back {}: Terraform state and plans, variable files, .terraform/ and the other local state are never published",
                    pattern.text,
                    pattern.never.join(" ")
                ));
            } else if !pattern.used {
                warnings.push(format!(
                    "--include {:?} matched no secret-shaped file, so it changed nothing: is it spelled right? (a PATTERN without / is matched against file names, one with / against paths from the module folder)",
                    pattern.text
                ));
            }
        }
        warnings
    }
}

/// `--include`'s value: a pattern, with any leading `./` taken off.
pub fn include_pattern(value: &str) -> Result<String, String> {
    let pattern = value.trim_start_matches("./");
    if pattern.is_empty() {
        return Err(
            "an empty pattern matches nothing; give a file name or path, as in '*.pub'".into(),
        );
    }
    if pattern.contains('\\') {
        return Err("use / between folders, as in 'certs/*.pem'".into());
    }
    Ok(pattern.to_owned())
}

/// `--include`'s `--help`, listing the secret rule's patterns from the one list.
pub fn include_help() -> String {
    format!(
        "Publish the secret-shaped files this PATTERN matches (repeatable).\n\n\
         When a folder is packed, secret-shaped files are left out, at any depth, ignoring \
         case: {}. Terraform configuration (*.tf, *.tf.json) is never secret-shaped. When an \
         archive is published, each secret-shaped file in it must be matched by a PATTERN, or \
         nothing is uploaded.\n\n\
         A PATTERN without / is matched against file names ('*.pub', '.env.example'); one \
         with / against the path from the module folder ('certs/ca.pem', 'certs/*.pem'). * is \
         any run of characters but /; case is ignored. A PATTERN that brings nothing back is \
         warned about.\n\n\
         Local state (Terraform state and plans, *.tfvars, .terraform/, .git/, ...) is never \
         published, whatever the patterns.",
        SECRET_SHAPED.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn includes(patterns: &[&str]) -> Includes {
        Includes::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>())
    }

    fn name(path: &str) -> &str {
        path.rsplit('/').next().unwrap()
    }

    #[test]
    fn patterns_bring_back_secret_shaped_files_by_name_or_path_but_never_state() {
        let mut with = includes(&["*.PUB", "certs/*.pem", "terraform.tfstate", "nope.txt"]);
        let mut verdict = |path: &str| with.left_out(path, name(path), false);
        assert_eq!(verdict("a/id_ed25519.pub"), None);
        assert_eq!(verdict("certs/ca.pem"), None);
        assert_eq!(verdict("other/ca.pem"), Some(LeftOut::SecretShaped));
        assert_eq!(verdict("terraform.tfstate"), Some(LeftOut::Never));
        assert_eq!(verdict("main.tf"), None);
        let warnings = with.warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("\"terraform.tfstate\" cannot bring back terraform.tfstate"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains("\"nope.txt\" matched no secret-shaped file"),
            "{warnings:?}"
        );
        assert!(includes(&[]).warnings().is_empty());
    }

    #[test]
    fn links_may_point_only_at_what_is_published() {
        let with = includes(&[".env"]);
        assert_eq!(with.left_out_target("main.tf"), None);
        assert_eq!(with.left_out_target(".env"), None);
        let secret = Some(LeftOut::SecretShaped);
        assert_eq!(with.left_out_target("keys/a.pem"), secret);
        assert_eq!(
            with.left_out_target(".terraform/x.tf"),
            Some(LeftOut::Never)
        );
        assert_eq!(with.left_out_target("prod.tfvars"), Some(LeftOut::Never));
    }

    #[test]
    fn patterns_are_checked_when_given() {
        assert_eq!(include_pattern("./certs/*.pem").unwrap(), "certs/*.pem");
        assert!(include_pattern("").is_err());
        assert!(include_pattern("certs\\a.pem").is_err());
    }
}
