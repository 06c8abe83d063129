//! What the indexer records of a module version's docs and publisher metadata, and what it
//! refuses: configuration that does not parse, and bad sidecars (which leave the version
//! served).

mod world;

use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_core::store::ModuleArchive;
use tfreg_core::tokens::Access;
use tfreg_core::{ModuleAddress, Version};
use world::World;

const MAIN: &[u8] = br#"
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
  }
}
variable "cidr" {
  type    = string
  default = "10.0.0.0/16"
}
output "id" {
  value = 1
}
"#;

const ARCHIVE: &str = "modules/acme/network/aws/1.0.0.tar.gz";
const SIDECAR: &str = "modules/acme/network/aws/1.0.0.json";

fn address() -> ModuleAddress {
    ModuleAddress::parse("acme", "network", "aws").unwrap()
}

async fn record(world: &World) -> Option<ModuleArchive> {
    let version = Version::parse("1.0.0").unwrap();
    world
        .registry
        .module_archive(&Access::All, &address(), &version)
        .await
        .ok()
}

async fn problem(world: &World, key: &str) -> Option<String> {
    let problems = world.registry.problems().await.unwrap();
    problems
        .into_iter()
        .find(|p| p.key == key)
        .map(|p| p.problem)
}

#[tokio::test]
async fn a_published_module_records_its_docs_and_the_publishers_metadata() {
    let world = World::new();
    // Given a sidecar written before the archive, as `tfreg publish` does,
    let sidecar =
        br#"{"source": "https://git.example.com/acme/network", "description": "A network."}"#;
    world.put(SIDECAR, sidecar.to_vec()).await;
    world
        .put(
            ARCHIVE,
            archive_of(
                ArchiveFormat::TarGz,
                &[("main.tf", MAIN), ("README.md", b"# Network")],
            ),
        )
        .await;

    // then the record carries both.
    let archive = record(&world).await.expect("served");
    assert!(archive.published_at > 0);
    assert_eq!(
        archive.source.as_deref(),
        Some("https://git.example.com/acme/network")
    );
    assert_eq!(archive.description.as_deref(), Some("A network."));
    let docs = archive.docs.expect("docs");
    assert_eq!(docs.root.readme, "# Network");
    assert_eq!(docs.root.inputs[0].name, "cidr");
    assert_eq!(
        docs.root.inputs[0].default.as_deref(),
        Some("\"10.0.0.0/16\"")
    );
    assert_eq!(docs.root.outputs[0].name, "id");
    assert_eq!(docs.root.provider_dependencies[0].source, "hashicorp/aws");
    let published_at = archive.published_at;

    // When the sidecar changes, the record follows without the archive's event;
    let changed = br#"{"description": "Networks, now."}"#;
    world.put(SIDECAR, changed.to_vec()).await;
    let archive = record(&world).await.expect("served");
    assert_eq!(archive.source, None);
    assert_eq!(archive.description.as_deref(), Some("Networks, now."));
    assert_eq!(archive.published_at, published_at);
    assert!(archive.docs.is_some());

    // a bad sidecar is refused on its own, and the version stays served without it;
    world
        .put(SIDECAR, br#"{"source": "javascript:alert(1)"}"#.to_vec())
        .await;
    let reason = problem(&world, SIDECAR).await.expect("a problem record");
    assert!(reason.contains("not an http(s) URL"), "{reason}");
    let archive = record(&world).await.expect("still served");
    assert_eq!((archive.source, archive.description), (None, None));
    assert_eq!(problem(&world, ARCHIVE).await, None);

    // and deleting the sidecar ends its problem.
    world.delete(SIDECAR).await;
    assert_eq!(problem(&world, SIDECAR).await, None);
    assert!(record(&world).await.is_some());
}

#[tokio::test]
async fn a_module_whose_configuration_does_not_parse_is_refused_with_file_and_line() {
    let world = World::new();
    let broken = b"variable \"cidr\" {\n  default = \"10.0.0.0/16\n}\n";
    let zip = "modules/acme/network/aws/1.0.0.zip";
    world
        .put(
            zip,
            archive_of(
                ArchiveFormat::Zip,
                &[("main.tf", MAIN), ("modules/sub/variables.tf", broken)],
            ),
        )
        .await;
    assert!(record(&world).await.is_none());
    let reason = problem(&world, zip).await.expect("a problem record");
    assert!(
        reason.starts_with("modules/sub/variables.tf does not parse: line 2"),
        "{reason}"
    );
}
