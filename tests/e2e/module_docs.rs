//! Module docs, as a publisher makes them: a module with inputs, outputs, required providers,
//! a submodule and an example, published with `--source` and `--description` into a served
//! data directory, then shown by `tfreg show`; a module whose `.tf` does not parse is refused
//! with the file and line.

use std::path::Path;

use tfreg_e2e::{tfreg_run, Server, TempDir};

const REFUSED: i32 = 3;

const MAIN_TF: &str = r#"
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws    = { source = "hashicorp/aws", version = ">= 5.0" }
    random = ">= 3.1"
  }
}

variable "cidr" {
  type        = string
  description = "The VPC's CIDR block."
  default     = "10.0.0.0/16"
}

variable "subnets" {
  type = list(object({ cidr = string }))
}

variable "token" {
  type      = string
  sensitive = true
  nullable  = false
}

resource "aws_vpc" "this" {
  cidr_block = var.cidr
}

module "subnets" {
  source = "./modules/subnets"
}

output "vpc_id" {
  description = "The VPC's id."
  value       = aws_vpc.this.id
}
"#;

fn write(root: &Path, path: &str, content: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_published_module_shows_its_inputs_outputs_providers_submodules_and_examples() {
    let data = TempDir::new().unwrap();
    let server = Server::start(data.path(), &[]);
    let folder = TempDir::new().unwrap();
    let root = folder.path();
    write(root, "main.tf", MAIN_TF);
    write(root, "README.md", "# VPC\n\nA network.\n");
    write(
        root,
        "modules/subnets/main.tf",
        "variable \"vpc_id\" {\n  type = string\n}\noutput \"ids\" {\n  value = []\n}\n",
    );
    write(
        root,
        "examples/simple/main.tf",
        "module \"vpc\" {\n  source = \"../..\"\n}\n",
    );

    // When the folder is published with a source and a description,
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(root),
            "acme/vpc/aws",
            "1.0.0",
            "--source",
            "https://git.example.com/acme/vpc",
            "--description",
            "A VPC with subnets.",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("served: module acme/vpc/aws 1.0.0"), "{out}");
    assert!(
        data.path()
            .join("modules/acme/vpc/aws/1.0.0.json")
            .is_file(),
        "the sidecar is beside the archive"
    );

    // then `tfreg show --json` answers its record with everything read at publish.
    let (code, out, err) = tfreg_run(
        &["show", "acme/vpc/aws", "--json", "--data", s(data.path())],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(doc["version"], "1.0.0");
    assert_eq!(doc["source"], "https://git.example.com/acme/vpc");
    assert_eq!(doc["description"], "A VPC with subnets.");
    assert!(doc["published_at"].as_u64().unwrap() > 1_700_000_000);
    let root_doc = &doc["docs"]["root"];
    assert_eq!(root_doc["readme"], "# VPC\n\nA network.\n");
    assert_eq!(root_doc["required_version"], ">= 1.5");
    let inputs = root_doc["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 3);
    assert_eq!(inputs[0]["name"], "cidr");
    assert_eq!(inputs[0]["default"], "\"10.0.0.0/16\"");
    assert_eq!(inputs[0]["required"], false);
    assert_eq!(inputs[1]["type"], "list(object({ cidr = string }))");
    assert_eq!(inputs[1]["required"], true);
    assert_eq!(inputs[2]["sensitive"], true);
    assert_eq!(inputs[2]["nullable"], false);
    assert_eq!(root_doc["outputs"][0]["name"], "vpc_id");
    assert_eq!(root_doc["outputs"][0]["description"], "The VPC's id.");
    let providers = root_doc["provider_dependencies"].as_array().unwrap();
    assert_eq!(providers[0]["source"], "hashicorp/aws");
    assert_eq!(providers[0]["version"], ">= 5.0");
    assert_eq!(providers[1]["name"], "random");
    assert_eq!(providers[1]["version"], ">= 3.1");
    assert_eq!(root_doc["resources"][0]["type"], "aws_vpc");
    assert_eq!(root_doc["dependencies"][0]["source"], "./modules/subnets");
    assert_eq!(doc["docs"]["submodules"][0]["path"], "modules/subnets");
    assert_eq!(doc["docs"]["submodules"][0]["inputs"][0]["name"], "vpc_id");
    assert_eq!(doc["docs"]["examples"][0]["path"], "examples/simple");

    // The read API answers the same facts in the public registry's shape,
    let (status, body) = server.get("/v1/modules/acme/vpc/aws/1.0.0");
    assert_eq!(status, 200, "{body}");
    let details: serde_json::Value = serde_json::from_str(&body).expect(&body);
    assert_eq!(details["id"], "acme/vpc/aws/1.0.0");
    assert_eq!(details["source"], "https://git.example.com/acme/vpc");
    assert_eq!(details["description"], "A VPC with subnets.");
    assert!(
        details["published_at"].as_str().unwrap().ends_with('Z'),
        "{body}"
    );
    assert_eq!(details["root"]["inputs"], doc["docs"]["root"]["inputs"]);
    assert_eq!(details["root"]["outputs"], doc["docs"]["root"]["outputs"]);
    assert_eq!(
        details["root"]["provider_dependencies"],
        doc["docs"]["root"]["provider_dependencies"]
    );
    assert_eq!(details["submodules"][0]["path"], "modules/subnets");
    assert_eq!(details["examples"][0]["path"], "examples/simple");
    assert_eq!(details["versions"], serde_json::json!(["1.0.0"]));
    // and `/versions` carries the source, which Renovate reads for its changelogs.
    let (status, body) = server.get("/v1/modules/acme/vpc/aws/versions");
    assert_eq!(status, 200, "{body}");
    let versions: serde_json::Value = serde_json::from_str(&body).expect(&body);
    assert_eq!(
        versions["modules"][0]["versions"][0]["source"],
        "https://git.example.com/acme/vpc"
    );
    assert_eq!(
        versions["modules"][0]["source"],
        "https://git.example.com/acme/vpc"
    );

    // and in words, for people.
    let (code, out, err) = tfreg_run(
        &["show", "acme/vpc/aws@1.0.0", "--data", s(data.path())],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("cidr string = \"10.0.0.0/16\"  The VPC's CIDR block."),
        "{out}"
    );
    assert!(out.contains("token string (required) (sensitive)"), "{out}");
    assert!(out.contains("aws hashicorp/aws >= 5.0"), "{out}");

    // When a version whose configuration does not parse is published, it is refused with
    // the file and line, and nothing is uploaded.
    write(
        root,
        "modules/subnets/broken.tf",
        "output \"x\" {\n  value = [1,\n}\n",
    );
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(root),
            "acme/vpc/aws",
            "1.1.0",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, REFUSED, "{out}{err}");
    assert!(
        err.contains("modules/subnets/broken.tf does not parse: line 3"),
        "{err}"
    );
    assert!(!data
        .path()
        .join("modules/acme/vpc/aws/1.1.0.tar.gz")
        .exists());

    // A bad --source is refused before anything is uploaded.
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(root),
            "acme/vpc/aws",
            "1.2.0",
            "--source",
            "git@x:y",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, REFUSED, "{out}{err}");
    assert!(err.contains("not an http(s) URL"), "{err}");

    // The next version published without --source and --description keeps 1.0.0's,
    std::fs::remove_file(root.join("modules/subnets/broken.tf")).unwrap();
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(root),
            "acme/vpc/aws",
            "1.3.0",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("description: carried forward from 1.0.0 (--description to change it)"),
        "{out}"
    );
    assert!(
        out.contains("source: carried forward from 1.0.0 (--source to change it)"),
        "{out}"
    );
    let (status, body) = server.get("/v1/modules/acme/vpc/aws/1.3.0");
    assert_eq!(status, 200, "{body}");
    let details: serde_json::Value = serde_json::from_str(&body).expect(&body);
    assert_eq!(details["description"], "A VPC with subnets.", "{body}");
    assert_eq!(details["source"], "https://git.example.com/acme/vpc");
    // so the catalogue, which shows the latest version's, still has it;
    let (status, body) = server.get("/v1/modules/acme");
    assert_eq!(status, 200, "{body}");
    let listed: serde_json::Value = serde_json::from_str(&body).expect(&body);
    assert_eq!(listed["modules"][0]["version"], "1.3.0", "{body}");
    assert_eq!(listed["modules"][0]["description"], "A VPC with subnets.");
    // and one given replaces it from that version on.
    let (code, out, err) = tfreg_run(
        &[
            "publish",
            "module",
            s(root),
            "acme/vpc/aws",
            "1.4.0",
            "--description",
            "A VPC, its subnets and routes.",
            "--data",
            s(data.path()),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("description: carried forward"), "{out}");
    let (_, body) = server.get("/v1/modules/acme/vpc/aws/1.4.0");
    let details: serde_json::Value = serde_json::from_str(&body).expect(&body);
    assert_eq!(details["description"], "A VPC, its subnets and routes.");
    assert_eq!(details["source"], "https://git.example.com/acme/vpc");
}
