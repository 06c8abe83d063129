//! Which files a module's configuration names as paths, read as Terraform reads it: the
//! strings of its `.tf` (parsed as HCL, so comments and identifiers such as
//! `var.environment` are no mention of `.env`), of its `.tf.json`, and the expressions of its
//! templates. A left-out file named there (`file("${path.module}/keys/id_rsa.pub")`,
//! `templatefile(...)`, a local holding the path) would be missing for every caller.

use serde_json::Value;

/// Configuration larger than this is not searched (no module's is).
pub(super) const MAX_SEARCHED: u64 = 4 * 1024 * 1024;

/// Whether the file `name` (in the archive) is configuration worth searching, and how.
pub(super) fn kind_of(name: &str) -> Option<Kind> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".tf.json") {
        Some(Kind::Json)
    } else if lower.ends_with(".tf") {
        Some(Kind::Hcl)
    } else if lower.ends_with(".tftpl") || lower.ends_with(".tpl") {
        Some(Kind::Template)
    } else {
        None
    }
}

/// How a configuration file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `*.tf`: an HCL body.
    Hcl,
    /// `*.tf.json`: Terraform's JSON syntax.
    Json,
    /// `*.tftpl`, `*.tpl`: a string template; only its `${...}` and `%{...}` are expressions.
    Template,
}

/// The path-like words of the strings in `text`: `"${path.module}/.env"` gives `path.module`
/// and `/.env`. Text that does not parse as its kind is taken whole, comments and all: a
/// mention too many costs a refusal, one too few a module that fails for every caller.
pub(super) fn path_words(kind: Kind, text: &str) -> Vec<String> {
    let mut strings = Vec::new();
    match kind {
        Kind::Hcl => match hcl::from_str::<Value>(text) {
            Ok(value) => strings_of(&value, &mut strings),
            Err(_) => strings.push(text.to_owned()),
        },
        Kind::Json => match serde_json::from_str::<Value>(text) {
            Ok(value) => strings_of(&value, &mut strings),
            Err(_) => strings.push(text.to_owned()),
        },
        Kind::Template => {
            let Ok(template) = text.parse::<hcl::Template>() else {
                strings.push(text.to_owned());
                return words(&strings);
            };
            for element in template.elements() {
                match element {
                    hcl::template::Element::Literal(_) => {}
                    hcl::template::Element::Interpolation(i) => strings.push(i.expr.to_string()),
                    hcl::template::Element::Directive(d) => {
                        strings.push(hcl::format::to_string(&**d).unwrap_or_default())
                    }
                }
            }
        }
    }
    words(&strings)
}

fn words(strings: &[String]) -> Vec<String> {
    strings
        .iter()
        .flat_map(|s| {
            s.split(|c: char| c.is_whitespace() || "\"'`(){}[]$,;:=<>|&!?%#\\".contains(c))
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn strings_of(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(s) => into.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, into)),
        // A `"//"` property is a comment in Terraform's JSON syntax.
        Value::Object(map) => map
            .iter()
            .filter(|(key, _)| key.as_str() != "//")
            .for_each(|(_, v)| strings_of(v, into)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Whether one of `words` names `file` (a `/`-separated path from the module folder) as a
/// path: the word is the path or its name, or ends with `/` and either (`${path.module}/.env`,
/// `./keys/id_rsa.pub`). Patterns (`fileset(path.module, "*.pem")`) name no file: a file
/// they match that is missing is simply not in the set.
pub(super) fn names_file(words: &[String], file: &str) -> bool {
    let base = file.rsplit('/').next().unwrap_or(file);
    if base.is_empty() {
        return false;
    }
    words.iter().any(|word| {
        [file, base].iter().any(|target| {
            word == target
                || word
                    .strip_suffix(target)
                    .is_some_and(|head| head.ends_with('/'))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(kind: Kind, text: &str, file: &str) -> bool {
        names_file(&path_words(kind, text), file)
    }

    #[test]
    fn a_file_is_named_by_a_path_in_a_string_not_by_identifiers_or_comments() {
        let hcl = Kind::Hcl;
        // Identifiers and comments are no mention.
        let environment = "# secrets come from .envrc, see .env.example\n\
             variable \"environment\" {}\n\
             locals { name = \"app-${var.environment}\" }\n\
             output \"env\" { value = var.environment }\n";
        assert!(!names(hcl, environment, ".env"));
        // Paths in strings are, as Terraform would read them.
        for text in [
            "locals { x = file(\"${path.module}/.env\") }",
            "locals { x = templatefile(\"${path.module}/.env\", {}) }",
            "locals { p = \"${path.module}/.env\" }\noutput \"x\" { value = file(local.p) }",
            "locals { x = file(\"./.env\") }",
            "locals { x = file(\".env\") }",
            "locals {\n  x = <<-EOT\n    ${file(\"${path.module}/.env\")}\n  EOT\n}\n",
            // Unparsable configuration is taken whole.
            "locals { x = \"${path.module}/.env\"",
        ] {
            assert!(names(hcl, text, ".env"), "{text}");
        }
        assert!(names(
            hcl,
            "resource \"k\" \"k\" { public_key = file(\"${path.module}/keys/id_rsa.pub\") }",
            "keys/id_rsa.pub"
        ));
        // Another file's name that merely begins the same is not this one.
        assert!(!names(
            hcl,
            "locals { x = file(\"${path.module}/.envrc\") }",
            ".env"
        ));
        // Patterns name no file.
        assert!(!names(
            hcl,
            "locals { x = fileset(path.module, \"*.pem\") }",
            "ca.pem"
        ));

        // JSON syntax, and templates' expressions only.
        assert!(names(
            Kind::Json,
            r#"{"locals": {"x": "${file(\"${path.module}/.env\")}"}}"#,
            ".env"
        ));
        assert!(!names(
            Kind::Json,
            r#"{"//": "see .env", "variable": {"environment": {}}}"#,
            "x/.env"
        ));
        assert!(!names(
            Kind::Template,
            "export ENVIRONMENT=${environment}\nsource .env\n",
            ".env"
        ));
        assert!(names(
            Kind::Template,
            "key: ${file(\"${path.module}/.env\")}\n",
            ".env"
        ));
    }
}
