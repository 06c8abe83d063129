//! Attachments through the core: a signed provenance statement is verified whatever order its
//! module's archive, the statement, its signature and the namespace's key arrive in, also
//! when the module's documents (and so its listing) are made only after the batch, as the
//! indexer function makes them.

mod world;

use sha2::{Digest, Sha256};
use tfreg_core::gpg_sign::sign_detached;
use tfreg_core::layout::NoticeTarget;
use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_core::origin::Origin;
use tfreg_core::tokens::Access;
use tfreg_core::{Indexer, ModuleAddress, Version};
use world::*;

const ARCHIVE: &str = "modules/acme/network/aws/1.0.0.tar.gz";
const STATEMENT: &str = "modules/acme/network/aws/1.0.0.attachments/build.intoto.jsonl";
const SIGNATURE: &str = "modules/acme/network/aws/1.0.0.attachments/build.intoto.jsonl.sig";
const KEY: &str = "keys/acme/signer.asc";

fn archive() -> Vec<u8> {
    archive_of(
        ArchiveFormat::TarGz,
        &[("main.tf", b"output \"v\" { value = 1 }\n")],
    )
}

/// A SLSA provenance statement (one line) about the archive.
fn statement(archive: &[u8]) -> Vec<u8> {
    let mut line = serde_json::to_vec(&serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "1.0.0.tar.gz", "digest": {"sha256": hex::encode(Sha256::digest(archive))}}],
        "predicateType": "https://slsa.dev/provenance/v1",
        "predicate": {"buildDefinition": {}, "runDetails": {}}
    }))
    .unwrap();
    line.push(b'\n');
    line
}

/// The statement's verdict as the read API lists it: the key ID that verified it, or why not.
async fn verdict(world: &World) -> Result<String, String> {
    let target = NoticeTarget::Module {
        address: ModuleAddress::parse("acme", "network", "aws").unwrap(),
    };
    let version = Version::parse("1.0.0").unwrap();
    let origin = Origin::https(HOSTNAME).unwrap();
    let listed = world
        .registry
        .attachments(&Access::All, &target, &version, &origin)
        .await
        .map_err(|e| format!("not read: {e}"))?;
    let found = listed
        .iter()
        .find(|a| a.filename == "build.intoto.jsonl")
        .ok_or("not listed")?;
    match (found.verified, &found.key_id) {
        (true, Some(key_id)) => Ok(key_id.clone()),
        _ => Err(format!("{:?}", found.unverified_reason)),
    }
}

#[tokio::test]
async fn a_signed_statement_is_verified_whatever_order_its_files_and_key_arrive_in() {
    let bytes = archive();
    let said = statement(&bytes);
    let signing = |name: &str| fixture(&format!("module-signing/{name}"));
    let files = [
        (ARCHIVE, bytes.clone()),
        (STATEMENT, said.clone()),
        (
            SIGNATURE,
            sign_detached(&signing("signer-secret.asc"), "", &said)
                .unwrap()
                .0,
        ),
        (KEY, signing("signer.asc")),
    ];
    let key_id =
        tfreg_core::gpg::parse_public_key(&signing("signer.asc"), std::time::SystemTime::now())
            .unwrap()
            .key_id;
    // Every order, each both with documents made at every event and with documents made
    // only once the batch is done (the indexer function's way: a module is listed under its
    // namespace only then, so the key's arrival must find the statement another way).
    let orders = [
        [0, 1, 2, 3],
        [3, 0, 1, 2],
        [0, 3, 1, 2],
        [0, 1, 3, 2],
        [1, 2, 3, 0],
        [1, 2, 0, 3],
    ];
    for deferred in [false, true] {
        for order in orders {
            let mut world = World::new();
            if deferred {
                world.indexer = Indexer::new(world.metadata.clone(), world.artifacts.clone())
                    .with_deferred_documents();
            }
            for i in order {
                world.artifacts.put(files[i].0, files[i].1.clone());
                world.indexer.index_key(files[i].0).await.unwrap();
            }
            world.indexer.flush_documents().await.unwrap();
            assert_eq!(
                verdict(&world).await,
                Ok(key_id.clone()),
                "order {order:?}, documents deferred: {deferred}\n{}",
                world.problems().await
            );
        }
    }
}
