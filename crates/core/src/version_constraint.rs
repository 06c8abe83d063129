//! Terraform's version constraints (`>= 1.2, < 2.0`, `~> 1.2`, `= 1.0.0`, `!= 1.3.0`), as
//! `required_providers` writes them: `tfreg sync --version` picks upstream versions with
//! them. A pre-release matches only a constraint that names it exactly, as in Terraform.

use std::fmt;

use crate::version::Version;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    /// `~>`: only the rightmost given part may grow.
    Pessimistic,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    op: Op,
    version: semver::Version,
    /// How many of MAJOR.MINOR.PATCH were written (for `~>`).
    given: usize,
}

/// A list of constraints, all of which a version must meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraints {
    parts: Vec<Part>,
    text: String,
}

impl Constraints {
    /// Parses `>= 1.2, < 2.0` and the like; an empty text matches every release.
    pub fn parse(text: &str) -> Result<Constraints, String> {
        let mut parts = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (op, rest) = [
                ("~>", Op::Pessimistic),
                (">=", Op::Ge),
                ("<=", Op::Le),
                ("!=", Op::Ne),
                (">", Op::Gt),
                ("<", Op::Lt),
                ("=", Op::Eq),
            ]
            .into_iter()
            .find_map(|(sign, op)| item.strip_prefix(sign).map(|rest| (op, rest)))
            .unwrap_or((Op::Eq, item));
            let rest = rest.trim();
            let (core, pre) = match rest.split_once('-') {
                Some((core, pre)) => (core, Some(pre)),
                None => (rest, None),
            };
            let numbers: Vec<&str> = core.split('.').collect();
            let bad = || {
                format!("{item:?} is not a version constraint (e.g. \">= 1.2, < 2.0\", \"~> 5.0\")")
            };
            if numbers.is_empty()
                || numbers.len() > 3
                || numbers.iter().any(|n| n.parse::<u64>().is_err())
            {
                return Err(bad());
            }
            let mut full: Vec<&str> = numbers.clone();
            full.resize(3, "0");
            let mut written = full.join(".");
            if let Some(pre) = pre {
                written = format!("{written}-{pre}");
            }
            let version = semver::Version::parse(&written).map_err(|_| bad())?;
            parts.push(Part {
                op,
                version,
                given: numbers.len(),
            });
        }
        Ok(Constraints {
            parts,
            text: text.trim().to_owned(),
        })
    }

    /// True when `version` meets every constraint.
    pub fn matches(&self, version: &Version) -> bool {
        let v = version.semver();
        if version.is_prerelease() && !self.parts.iter().any(|p| p.op == Op::Eq && p.version == *v)
        {
            return false;
        }
        self.parts.iter().all(|p| {
            let (at, bare) = (&p.version, strip(v));
            match p.op {
                Op::Eq => v == at,
                Op::Ne => v != at,
                Op::Gt => v > at,
                Op::Ge => v >= at,
                Op::Lt => v < at,
                Op::Le => v <= at,
                Op::Pessimistic => {
                    let upper = match p.given {
                        1 | 2 => semver::Version::new(at.major + 1, 0, 0),
                        _ => semver::Version::new(at.major, at.minor + 1, 0),
                    };
                    v >= at && bare < upper
                }
            }
        })
    }
}

fn strip(v: &semver::Version) -> semver::Version {
    semver::Version::new(v.major, v.minor, v.patch)
}

impl fmt::Display for Constraints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.text.is_empty() {
            f.write_str("any version")
        } else {
            f.write_str(&self.text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(c: &str, v: &str) -> bool {
        Constraints::parse(c)
            .unwrap()
            .matches(&Version::parse(v).unwrap())
    }

    #[test]
    fn constraints_match_as_terraform_reads_them() {
        assert!(ok("", "1.0.0"));
        assert!(ok(">= 1.2, < 2.0", "1.9.9"));
        assert!(!ok(">= 1.2, < 2.0", "2.0.0"));
        assert!(ok("~> 1.2", "1.9.0"));
        assert!(!ok("~> 1.2", "2.0.0"));
        assert!(ok("~> 1.2.3", "1.2.9"));
        assert!(!ok("~> 1.2.3", "1.3.0"));
        assert!(ok("~> 0.2", "0.9.0"));
        assert!(ok("1.0.0", "1.0.0"));
        assert!(!ok("!= 1.0.0", "1.0.0"));
        assert!(!ok(">= 1.0", "2.0.0-beta.1"));
        assert!(ok("= 2.0.0-beta.1", "2.0.0-beta.1"));
        for bad in ["latest", ">= x", "1.2.3.4"] {
            assert!(Constraints::parse(bad).is_err(), "{bad}");
        }
    }
}
