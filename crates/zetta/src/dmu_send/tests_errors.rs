//! A send's refusals are typed: each condition comes back as its `SendError` variant with
//! its names, and the send side of `dmu_send` carries no CLI sentence.

use super::tests::pool;
use super::*;

fn request(to: &str, from: Option<&str>, replicate: bool) -> SendRequest {
    SendRequest {
        to: to.to_string(),
        from: from.map(str::to_string),
        intermediates: false,
        replicate,
        options: SendOptions::default(),
    }
}

// Why: the send side returned `SendError::Refused("cannot send '…': …")`, OpenZFS's
// sentences written by the engine; the CLI (libzfs's role) now words each variant.
#[test]
fn send_refusals_are_variants_with_their_names() {
    let mut spa = pool();
    spa.create_filesystem("tank/fs").unwrap();
    spa.create_filesystem("tank/fs/kid").unwrap();
    spa.snapshot(&["tank/fs@a".to_string()]).unwrap();
    spa.snapshot(&["tank/fs@b".to_string()]).unwrap();
    let plan = |spa: &mut crate::spa::Spa, r: SendRequest| plan_send(spa, &r).map(|_| ());

    match plan(&mut spa, request("tank/fs", None, false)) {
        Err(SendError::NotSnapshot { name }) => assert_eq!(name, "tank/fs"),
        other => panic!("{other:?}"),
    }
    match plan(&mut spa, request("tank/fs@b", Some("tank/fs#m"), true)) {
        Err(SendError::BookmarkReplicationSource) => {}
        other => panic!("{other:?}"),
    }
    match plan(&mut spa, request("tank/fs@b", None, true)) {
        Err(SendError::MissingInDescendant { snapshot, missing }) => {
            assert_eq!(
                (snapshot.as_str(), missing.as_str()),
                ("tank/fs@b", "tank/fs/kid@b")
            )
        }
        other => panic!("{other:?}"),
    }
    let spec = |to: &str, from: Option<&str>| SubstreamSpec {
        to: to.to_string(),
        from: from.map(str::to_string),
        clone: false,
    };
    match Sender::new(
        &mut spa,
        spec("tank/fs@nosuch", None),
        SendOptions::default(),
    ) {
        Err(SendError::NoSuchDataset { name }) => assert_eq!(name, "tank/fs@nosuch"),
        other => panic!("{:?}", other.err()),
    }
    match Sender::new(
        &mut spa,
        spec("tank/fs@a", Some("tank/fs@b")),
        SendOptions::default(),
    ) {
        Err(SendError::NotEarlier { to }) => assert_eq!(to, "tank/fs@a"),
        other => panic!("{:?}", other.err()),
    }
}

// Why: every message text belongs to the CLI; the send side held nine "cannot …" sentences
// and the receive side twenty-five (session 18 made them `RecvRefusal` variants).
#[test]
fn no_send_or_receive_error_is_a_cli_sentence() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dmu_send");
    let files = [
        "send.rs",
        "replication.rs",
        "token.rs",
        "traverse.rs",
        "error.rs",
        "recv.rs",
        "recv_dsl.rs",
        "recv_state.rs",
        "recv_replication.rs",
    ];
    for file in files {
        let source = std::fs::read_to_string(dir.join(file)).unwrap();
        for (index, line) in source.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains("\"cannot "),
                "dmu_send/{file}:{}: a CLI sentence: {line}",
                index + 1
            );
        }
    }
}
