//! The tests of `served`: what a change rewrites, what it touches, a stop, and what a reader
//! believes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use tfreg_core::store::RecordId;
use tfreg_core::{ModuleAddress, ProviderAddress};
use tfreg_local::changes::Changed;

use super::changes::item_of;
use super::disk::{set_aside, SET_ASIDE};
use super::files::{path, Item, ServerFile, MAX_SERVER_BYTES, STALE_AFTER};
use super::read;
use super::testing::{archive, Server};

fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .map(|p| if p.is_dir() { files_under(&p) } else { 1 })
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn one_change_rewrites_only_the_files_of_what_it_touches() {
    // Given a server over 40 modules, each with its file,
    let mut server = Server::with_modules(40).await;
    assert_eq!(files_under(&server.dir().join("modules")), 40);

    // when one module gets a version and another a broken archive,
    server
        .publish("modules/ns3/net/aws/1.1.0.tar.gz", &archive("1.1.0"))
        .await;
    let broken = "modules/ns7/net/aws/2.0.0.tar.gz";
    server.publish(broken, b"not an archive").await;

    // then only the first module's file and the broken archive's problem are written
    // (the second module serves what it served: its file is left as it is),
    let problem = Item::Problem(RecordId::problem(broken).sort).path(Path::new(""));
    assert_eq!(
        server.follow().await,
        BTreeSet::from([PathBuf::from("modules/ns3/net/aws.json"), problem])
    );
    // and nothing more is written while nothing changes.
    assert_eq!(server.follow().await, BTreeSet::new());

    // A reader sees both, reading those files alone.
    let served = read(server.data.path()).unwrap();
    assert_eq!(served.server.hostname, "registry.test");
    let ns3 = ModuleAddress::parse("ns3", "net", "aws").unwrap();
    let status = served.module(&ns3).unwrap().unwrap();
    let versions: Vec<&str> = status.modules[0]
        .versions
        .iter()
        .map(|v| v.version.as_str())
        .collect();
    assert_eq!(versions, ["1.0.0", "1.1.0"]);
    let refused = served.problem(broken).unwrap().unwrap();
    assert_eq!(refused.key, broken);
    assert_eq!(
        served.problem("modules/ns3/net/aws/1.1.0.tar.gz").unwrap(),
        None
    );
}

#[tokio::test]
async fn a_change_of_a_namespaces_keys_touches_its_modules_and_providers_alone() {
    let server = Server::with_modules(3).await;
    let keys = |namespace: &str, sort: &str| RecordId {
        partition: format!("keys/{namespace}"),
        sort: sort.into(),
    };
    let changed = Changed {
        records: BTreeSet::from([keys("ns1", "keys/ns1/ci.asc")]),
        documents: BTreeSet::new(),
    };
    let ns1 = ModuleAddress::parse("ns1", "net", "aws").unwrap();
    assert_eq!(
        server.keeper_touched(&changed),
        BTreeSet::from([Item::Module(ns1.clone())])
    );
    // Each partition names its subject: records, documents, listings.
    let id = |partition: &str, sort: &str| RecordId {
        partition: partition.into(),
        sort: sort.into(),
    };
    let mut none = BTreeSet::new();
    let acme = ProviderAddress::parse("acme", "widget").unwrap();
    for (changed, item) in [
        (
            id("module/ns1/net/aws", "1.0.0/k"),
            Item::Module(ns1.clone()),
        ),
        (
            id("doc/module/ns1/net/aws", "versions"),
            Item::Module(ns1.clone()),
        ),
        (
            id("namespace/ns1", "module/net/aws"),
            Item::Module(ns1.clone()),
        ),
        (
            id("namespace-modules/ns1", "net/aws"),
            Item::Module(ns1.clone()),
        ),
        (id("modules", "ns1/net/aws"), Item::Module(ns1.clone())),
        (
            id("provider/acme/widget", "package/1.0.0/k"),
            Item::Provider(acme.clone()),
        ),
        (
            id("doc/provider/acme/widget", "release/1.0.0"),
            Item::Provider(acme.clone()),
        ),
        (id("namespace/acme", "widget"), Item::Provider(acme.clone())),
        (id("providers", "acme/widget"), Item::Provider(acme.clone())),
        (
            id("problems", "keys/acme/x.asc"),
            Item::Problem("keys/acme/x.asc".into()),
        ),
    ] {
        assert_eq!(item_of(&changed, &mut none), Some(item), "{changed:?}");
    }
    for ignored in [
        id("pins", "slot"),
        id("doc/listing", "modules"),
        id("mirror/example.com/acme/widget", "package/1.0.0/k"),
        id("uploads/module/ns1/net/aws", "1.0.0/k#r"),
        id("provider-docs/acme/widget", "1.0.0"),
    ] {
        assert_eq!(item_of(&ignored, &mut none), None, "{ignored:?}");
    }
    assert!(none.is_empty());
}

#[tokio::test]
async fn a_stop_sets_the_files_aside_at_once_and_the_next_start_deletes_them() {
    let server = Server::with_modules(3).await;
    let (data, served) = (server.data.path(), server.dir().to_path_buf());
    let state = served.parent().unwrap().to_path_buf();
    let aside = || {
        std::fs::read_dir(&state)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().starts_with(SET_ASIDE)
            })
            .count()
    };
    // A stop renames the folder, whatever it holds,
    set_aside(&served, "a-run-stop").unwrap();
    assert!(!served.exists());
    assert_eq!(files_under(&state.join(".served-old-a-run-stop")), 3);
    // and the next start begins with an empty one and deletes what was set aside.
    std::fs::create_dir_all(served.join("modules/stale")).unwrap();
    server.keeper_begin();
    assert_eq!(files_under(&served), 0);
    assert!(read(data).is_ok());
    let deadline = Instant::now() + Duration::from_secs(30);
    while aside() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(aside(), 0);
}

#[tokio::test]
async fn a_stale_file_or_one_of_another_version_or_run_is_no_server() {
    let server = Server::with_modules(1).await;
    let data = server.data.path();
    let ns0 = ModuleAddress::parse("ns0", "net", "aws").unwrap();
    assert!(read(data).unwrap().module(&ns0).unwrap().is_some());

    // A file another run left is not believed,
    let info = path(data);
    let mut file: ServerFile = serde_json::from_slice(&std::fs::read(&info).unwrap()).unwrap();
    file.run = "another run".into();
    std::fs::write(&info, serde_json::to_vec(&file).unwrap()).unwrap();
    assert!(read(data).unwrap().module(&ns0).unwrap().is_none());

    // the whole document an earlier version kept is said to be another version's,
    let old = serde_json::json!({"server": file.server, "status": {"modules": []}});
    std::fs::write(&info, serde_json::to_vec(&old).unwrap()).unwrap();
    let why = read(data).unwrap_err();
    assert!(why.contains("another version"), "{why}");
    std::fs::write(&info, vec![b' '; MAX_SERVER_BYTES as usize + 1]).unwrap();
    let why = read(data).unwrap_err();
    assert!(why.contains("another version"), "{why}");

    // and a file that has not moved for a while is no server at all.
    let old = SystemTime::now() - STALE_AFTER - Duration::from_secs(1);
    std::fs::File::options()
        .write(true)
        .open(&info)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let why = read(data).unwrap_err();
    assert!(why.contains("last updated"), "{why}");
}
