//! The docs of real archives, as a publisher's `tar -czf` or `zip -r` makes them.

use std::io::Write;

use super::*;
use crate::layout::ArchiveFormat;
use crate::module_archive::{archive_of, ModuleLimits};

const MAIN_TF: &str = r#"
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
    }
    random = ">= 3.1"
  }
}

variable "name" {
  type        = string
  description = "The name of everything."
}

variable "tags" {
  type = map(string)
  default = {
    team = "net"
  }
}

variable "subnets" {
  type = list(object({
    cidr = string
    az   = optional(string)
  }))
  default     = []
  description = "Subnets to make."
}

variable "password" {
  type      = string
  sensitive = true
  nullable  = false
  default   = null
}

variable "count_of" {
  default = 3
}

resource "aws_vpc" "this" {
  cidr_block = "10.0.0.0/16"
}

module "subnets" {
  source  = "./modules/subnets"
}

module "labels" {
  source  = "cloudposse/label/null"
  version = "0.25.0"
}

output "vpc_id" {
  description = "The VPC's id."
  value       = aws_vpc.this.id
}

output "secret" {
  value     = var.password
  sensitive = true
}
"#;

const SUBMODULE_TF: &str = r#"
variable "vpc_id" {
  type = string
}
resource "aws_subnet" "this" {
  vpc_id = var.vpc_id
}
output "ids" {
  value = aws_subnet.this[*].id
}
"#;

const EXAMPLE_TF: &str = r#"
module "vpc" {
  source = "../.."
  name   = "example"
}
"#;

fn docs_of(format: ArchiveFormat, files: &[(&str, &[u8])]) -> Result<ModuleDocs, DocsError> {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(&archive_of(format, files)).unwrap();
    read(&file, format, &ModuleLimits::default())
}

fn full_module() -> Vec<(&'static str, &'static [u8])> {
    vec![
        ("main.tf", MAIN_TF.as_bytes()),
        ("README.md", b"# VPC\n\nMakes a VPC.\n"),
        ("README", b"not this one"),
        ("modules/subnets/main.tf", SUBMODULE_TF.as_bytes()),
        ("modules/subnets/README.md", b"Subnets."),
        ("examples/simple/main.tf", EXAMPLE_TF.as_bytes()),
        ("examples/simple/.terraform.lock.tf", b"this { is not read"),
        (
            "modules/subnets/nested/deep.tf",
            b"this { is not read either",
        ),
        ("files/policy.json", b"{not read"),
    ]
}

#[test]
fn a_module_documents_its_inputs_outputs_providers_and_parts() {
    for format in [ArchiveFormat::TarGz, ArchiveFormat::Zip] {
        let docs = docs_of(format, &full_module()).unwrap();
        let root = &docs.root;
        assert_eq!(root.path, "");
        assert_eq!(root.readme, "# VPC\n\nMakes a VPC.\n");
        assert!(!root.empty);
        assert_eq!(root.required_version.as_deref(), Some(">= 1.5"));

        let input = |name: &str| root.inputs.iter().find(|i| i.name == name).unwrap();
        let name = input("name");
        assert_eq!(name.type_, "string");
        assert_eq!(name.description, "The name of everything.");
        assert!(name.required && name.default.is_none() && name.nullable);
        assert_eq!(input("tags").type_, "map(string)");
        assert_eq!(input("tags").default.as_deref(), Some(r#"{"team":"net"}"#));
        assert!(!input("tags").required);
        let subnets = input("subnets");
        assert!(
            subnets.type_.starts_with("list(object({"),
            "{}",
            subnets.type_
        );
        assert!(subnets.type_.contains("az   = optional(string)"));
        assert_eq!(subnets.default.as_deref(), Some("[]"));
        let password = input("password");
        assert!(password.sensitive && !password.nullable && !password.required);
        assert_eq!(password.default.as_deref(), Some("null"));
        assert_eq!(input("count_of").default.as_deref(), Some("3"));
        assert_eq!(input("count_of").type_, "");

        assert_eq!(root.outputs.len(), 2);
        assert_eq!(root.outputs[0].description, "The VPC's id.");
        assert!(!root.outputs[0].sensitive && root.outputs[1].sensitive);

        assert_eq!(
            root.provider_dependencies,
            vec![
                ProviderDependency {
                    name: "aws".into(),
                    namespace: "hashicorp".into(),
                    source: "hashicorp/aws".into(),
                    version: ">= 5.0".into(),
                },
                ProviderDependency {
                    name: "random".into(),
                    namespace: String::new(),
                    source: String::new(),
                    version: ">= 3.1".into(),
                },
            ]
        );
        assert_eq!(
            root.resources,
            vec![ModuleResource {
                name: "this".into(),
                type_: "aws_vpc".into()
            }]
        );
        assert_eq!(root.dependencies.len(), 2);
        assert_eq!(root.dependencies[1].source, "cloudposse/label/null");
        assert_eq!(root.dependencies[1].version, "0.25.0");

        assert_eq!(docs.submodules.len(), 1, "{format:?}");
        let sub = &docs.submodules[0];
        assert_eq!(sub.path, "modules/subnets");
        assert_eq!(sub.readme, "Subnets.");
        assert_eq!(sub.inputs[0].name, "vpc_id");
        assert_eq!(sub.outputs[0].name, "ids");
        assert_eq!(docs.examples.len(), 1);
        assert_eq!(docs.examples[0].path, "examples/simple");
        assert_eq!(docs.examples[0].dependencies[0].source, "../..");
        assert!(!docs.truncated);
    }
}

#[test]
fn a_tf_json_module_is_read_by_terraforms_json_syntax() {
    let main = br#"{
      "terraform": [{"required_version": "~> 1.6",
                     "required_providers": {"aws": {"source": "hashicorp/aws", "version": "~> 5.0"},
                                            "null": ">= 3"}}],
      "variable": {
        "region": {"type": "string", "default": "eu-west-1", "description": "Where."},
        "ids": {"type": "list(number)", "sensitive": true, "nullable": false}
      },
      "output": {"arn": {"value": "${aws_s3_bucket.b.arn}", "description": "The ARN.", "sensitive": true}},
      "resource": {"aws_s3_bucket": {"b": {"bucket": "x"}, "c": {}}},
      "module": [{"child": {"source": "./child", "version": "1.0.0"}}]
    }"#;
    let docs = docs_of(ArchiveFormat::TarGz, &[("main.tf.json", main)]).unwrap();
    let root = &docs.root;
    assert_eq!(root.required_version.as_deref(), Some("~> 1.6"));
    assert_eq!(root.provider_dependencies.len(), 2);
    assert_eq!(root.provider_dependencies[0].namespace, "hashicorp");
    assert_eq!(root.provider_dependencies[1].version, ">= 3");
    let region = root.inputs.iter().find(|i| i.name == "region").unwrap();
    assert_eq!(region.default.as_deref(), Some("\"eu-west-1\""));
    assert_eq!(region.description, "Where.");
    let ids = root.inputs.iter().find(|i| i.name == "ids").unwrap();
    assert!(ids.required && ids.sensitive && !ids.nullable);
    assert_eq!(ids.type_, "list(number)");
    assert_eq!(root.outputs[0].description, "The ARN.");
    assert!(root.outputs[0].sensitive);
    assert_eq!(root.resources.len(), 2);
    assert_eq!(root.dependencies[0].version, "1.0.0");
}

#[test]
fn configuration_that_does_not_parse_is_refused_with_file_and_line() {
    let broken = "variable \"a\" {\n  type = string\n}\n\nresource \"x\" \"y\" {\n  a = [1, 2\n}\n";
    for format in [ArchiveFormat::TarGz, ArchiveFormat::Zip] {
        let mut files = full_module();
        files.push(("modules/subnets/broken.tf", broken.as_bytes()));
        let error = docs_of(format, &files).unwrap_err();
        let reason = error.to_string();
        assert!(
            reason.starts_with("modules/subnets/broken.tf does not parse: line 7"),
            "{reason}"
        );
    }
    let json = docs_of(
        ArchiveFormat::TarGz,
        &[("main.tf.json", b"{\n\"variable\": {,}\n}")],
    )
    .unwrap_err()
    .to_string();
    assert!(
        json.starts_with("main.tf.json does not parse: line 2"),
        "{json}"
    );
    let labels = docs_of(ArchiveFormat::TarGz, &[("main.tf", b"\n\nvariable {}\n")])
        .unwrap_err()
        .to_string();
    assert_eq!(labels, "main.tf, line 3: a variable block with 0 label(s)");
}

#[test]
fn hostile_configuration_gets_a_verdict_not_a_crash() {
    let deep = format!("a = {}{}\n", "[".repeat(5000), "]".repeat(5000));
    let error = docs_of(ArchiveFormat::TarGz, &[("main.tf", deep.as_bytes())]).unwrap_err();
    assert!(matches!(error, DocsError::Syntax { .. }), "{error}");
    // Text that does not compress, so the archive's ratio check lets it through.
    let mut seed = 7u64;
    let big: Vec<u8> = (0..=MAX_CONFIG_FILE_BYTES)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            b'a' + (seed >> 59) as u8 % 26
        })
        .collect();
    let error = docs_of(ArchiveFormat::TarGz, &[("main.tf", &big)]).unwrap_err();
    assert!(matches!(error, DocsError::TooLarge { .. }), "{error}");
    let error = docs_of(ArchiveFormat::TarGz, &[("main.tf", b"\xff\xfe")]).unwrap_err();
    assert!(matches!(error, DocsError::NotUtf8 { .. }), "{error}");
    // The archive's own verdict comes first.
    let error = docs_of(
        ArchiveFormat::TarGz,
        &[("README.md", b"x"), ("modules/a/main.tf", b"x {")],
    )
    .unwrap_err();
    assert!(matches!(error, DocsError::Archive(_)), "{error}");
}

#[test]
fn readmes_are_capped_at_a_character_boundary_and_cut_first_to_fit_the_record() {
    let long = "é".repeat(MAX_README_BYTES); // two bytes each
    let files: Vec<(&str, &[u8])> = vec![("main.tf", b""), ("README.md", long.as_bytes())];
    let docs = docs_of(ArchiveFormat::TarGz, &files).unwrap();
    assert_eq!(docs.root.readme.len(), MAX_README_BYTES);
    assert!(docs.root.readme_truncated);

    let mut docs = ModuleDocs::default();
    docs.root.readme = "r".repeat(1000);
    docs.root.inputs.push(ModuleInput {
        name: "kept".into(),
        ..Default::default()
    });
    docs.examples.push(ModulePart {
        path: "examples/a".into(),
        readme: "e".repeat(1000),
        ..Default::default()
    });
    fit(&mut docs, 1200);
    assert!(serde_json::to_vec(&docs).unwrap().len() <= 1200);
    assert!(docs.examples[0].readme_truncated && docs.examples[0].readme.len() < 1000);
    assert_eq!(docs.root.inputs[0].name, "kept");
    assert!(!docs.truncated);
    let size = |d: &ModuleDocs| serde_json::to_vec(d).unwrap().len();
    let mut bare = docs.clone();
    bare.root.readme.clear();
    bare.examples[0].readme.clear();
    let max = size(&bare) + 100;
    fit(&mut docs, max);
    assert!(size(&docs) <= max, "{docs:?}");
    assert!(docs.root.readme_truncated && !docs.root.readme.is_empty());
    assert!(!docs.truncated);
    fit(&mut docs, 10);
    assert!(docs.truncated && docs.root.readme.is_empty());
}
