//! Module signatures and the namespace policy file, through the core: the indexer judges each
//! archive's `.sig` against the namespace's keys and policy, whatever order the files arrive
//! in, and the registry serves only what that judgement allows. Keys are the throwaway
//! fixtures of `fixtures/module-signing/`; signatures are made with `gpg_sign`, as `tfreg
//! publish module --sign` makes them.

mod world;

use tfreg_core::gpg_sign::sign_detached;
use tfreg_core::module_archive::{archive_of, ArchiveFormat};
use tfreg_core::tokens::Access;
use tfreg_core::{ModuleAddress, Version};
use world::*;

const ARCHIVE: &str = "modules/acme/network/aws/1.0.0.tar.gz";
const SIG: &str = "modules/acme/network/aws/1.0.0.tar.gz.sig";
const KEY: &str = "keys/acme/signer.asc";
const POLICY: &str = "keys/acme/policy.json";

fn signing(name: &str) -> Vec<u8> {
    fixture(&format!("module-signing/{name}"))
}

fn archive() -> Vec<u8> {
    archive_of(
        ArchiveFormat::TarGz,
        &[("main.tf", b"output \"v\" { value = 1 }\n")],
    )
}

fn signature(secret: &str, content: &[u8]) -> Vec<u8> {
    sign_detached(&signing(secret), "", content).unwrap().0
}

fn address() -> ModuleAddress {
    ModuleAddress::parse("acme", "network", "aws").unwrap()
}

/// The served versions, and the key ID that signed 1.0.0 if it is served.
async fn served(world: &World) -> (Vec<String>, Option<String>) {
    let versions = match world
        .registry
        .module_versions(&Access::All, &address())
        .await
    {
        Ok(doc) => doc.modules[0]
            .versions
            .iter()
            .map(|v| v.version.to_string())
            .collect(),
        Err(_) => vec![],
    };
    let signer = match versions.iter().any(|v| v == "1.0.0") {
        true => world
            .registry
            .module_details(
                &Access::All,
                &address(),
                Some(&Version::parse("1.0.0").unwrap()),
            )
            .await
            .unwrap()
            .signed_by
            .map(|s| s.key_id),
        false => None,
    };
    (versions, signer)
}

async fn problem(world: &World, key: &str) -> String {
    world
        .registry
        .problems()
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.key == key)
        .map(|p| p.problem)
        .unwrap_or_default()
}

fn key_id() -> String {
    tfreg_core::gpg::parse_public_key(&signing("signer.asc"), std::time::SystemTime::now())
        .unwrap()
        .key_id
}

#[tokio::test]
async fn a_signed_version_is_served_with_its_signer_whatever_order_its_files_arrive_in() {
    let bytes = archive();
    let files = [
        (ARCHIVE, bytes.clone()),
        (SIG, signature("signer-secret.asc", &bytes)),
        (KEY, signing("signer.asc")),
    ];
    for order in [[0, 1, 2], [2, 1, 0], [1, 0, 2], [1, 2, 0]] {
        let world = World::new();
        for i in order {
            world.put(files[i].0, files[i].1.clone()).await;
        }
        assert_eq!(
            served(&world).await,
            (vec!["1.0.0".to_owned()], Some(key_id())),
            "order {order:?}: {}",
            problem(&world, SIG).await
        );
        assert_eq!(problem(&world, SIG).await, "");
    }
}

#[tokio::test]
async fn a_bad_signature_refuses_the_version_until_its_key_is_trusted() {
    // Given a version signed by a key the namespace does not trust,
    let world = World::new();
    let bytes = archive();
    world.put(KEY, signing("signer.asc")).await;
    world.put(ARCHIVE, bytes.clone()).await;
    world
        .put(SIG, signature("stranger-secret.asc", &bytes))
        .await;
    // it is not served, and the signature file says why;
    assert_eq!(served(&world).await, (vec![], None));
    assert!(
        problem(&world, SIG)
            .await
            .contains("does not verify with any"),
        "{}",
        problem(&world, SIG).await
    );
    // a signature of other bytes is refused the same way;
    world
        .put(SIG, signature("signer-secret.asc", b"other"))
        .await;
    assert_eq!(served(&world).await, (vec![], None));
    // a good one is served, and the key's removal refuses it again.
    world.put(SIG, signature("signer-secret.asc", &bytes)).await;
    assert_eq!(served(&world).await.0, ["1.0.0"]);
    world.delete(KEY).await;
    assert_eq!(served(&world).await, (vec![], None));
    assert!(problem(&world, SIG).await.contains("no usable signing key"));
}

#[tokio::test]
async fn a_policy_requiring_signatures_refuses_unsigned_versions_and_a_broken_one_keeps_refusing() {
    // Given an unsigned version, served,
    let world = World::new();
    world.put(ARCHIVE, archive()).await;
    assert_eq!(served(&world).await, (vec!["1.0.0".to_owned()], None));
    // a policy requiring signatures refuses it, naming the policy file;
    world
        .put(POLICY, br#"{"require_signed_modules": true}"#.to_vec())
        .await;
    assert_eq!(served(&world).await.0, Vec::<String>::new());
    assert!(problem(&world, ARCHIVE)
        .await
        .contains("keys/acme/policy.json requires signed modules"));
    // a broken policy file is refused and keeps requiring them;
    world
        .put(POLICY, b"{\"require_signed_modules\": tru".to_vec())
        .await;
    assert!(problem(&world, POLICY).await.contains("not a policy"));
    assert_eq!(served(&world).await.0, Vec::<String>::new());
    assert!(problem(&world, ARCHIVE)
        .await
        .contains("the policy file keys/acme/policy.json is refused"));
    let policy = world
        .indexer
        .namespace_policy(&tfreg_core::Namespace::parse("acme").unwrap())
        .await
        .unwrap();
    assert!(policy.require_signed_modules);
    // and a policy that no longer requires them serves it again, its problem gone.
    world
        .put(POLICY, br#"{"require_signed_modules": false}"#.to_vec())
        .await;
    assert_eq!(served(&world).await.0, ["1.0.0"]);
    assert_eq!(problem(&world, ARCHIVE).await, "");
}

#[test]
fn signing_takes_eddsa_keys_and_refuses_what_is_not_a_secret_key() {
    // Terraform verifies EdDSA signatures (e2e `signatures`), so an ed25519 key signs.
    let (signature, key_id) = sign_detached(&signing("ed25519-secret.asc"), "", b"x").unwrap();
    assert!(!signature.is_empty() && key_id.len() == 16, "{key_id}");
    let public = sign_detached(&signing("signer.asc"), "", b"x").unwrap_err();
    assert!(public.to_string().contains("no secret key"), "{public}");
}
