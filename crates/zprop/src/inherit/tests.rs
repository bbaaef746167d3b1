use super::*;

fn get(store: &PropStore, name: &str, prop: &str) -> (String, String) {
    let resolved = resolve(store, name, prop).expect("property resolves");
    (resolved.value, resolved.source.to_string())
}

fn pair(value: &str, source: &str) -> (String, String) {
    (value.to_string(), source.to_string())
}

// Nothing set anywhere: every dataset shows the built-in default with source `default`.
#[test]
fn defaults_everywhere() {
    let store = PropStore::new();
    assert_eq!(
        get(&store, "tank/a/b", "compression"),
        pair("on", "default")
    );
    assert_eq!(
        get(&store, "tank/a/b", "recordsize"),
        pair("131072", "default")
    );
    assert_eq!(get(&store, "tank", "quota"), pair("0", "default"));
}

// A local value is `local` on its dataset and `inherited from` below it, up to the next
// local value.
#[test]
fn local_then_inherited_chain() {
    let mut store = PropStore::new();
    store.set_local("tank/a", "compression", "zstd");
    store.set_local("tank/a/b/c", "compression", "off");
    assert_eq!(get(&store, "tank", "compression"), pair("on", "default"));
    assert_eq!(get(&store, "tank/a", "compression"), pair("zstd", "local"));
    assert_eq!(
        get(&store, "tank/a/b", "compression"),
        pair("zstd", "inherited from tank/a")
    );
    assert_eq!(
        get(&store, "tank/a/b/c", "compression"),
        pair("off", "local")
    );
    assert_eq!(
        get(&store, "tank/a/b/c/d", "compression"),
        pair("off", "inherited from tank/a/b/c")
    );
}

// Non-inheritable properties never flow down: a child of a quota'd dataset has no quota.
#[test]
fn non_inheritable_stays_put() {
    let mut store = PropStore::new();
    store.set_local("tank/a", "quota", "1073741824");
    assert_eq!(get(&store, "tank/a", "quota"), pair("1073741824", "local"));
    assert_eq!(get(&store, "tank/a/b", "quota"), pair("0", "default"));
}

// Mountpoints append the path below the setpoint; none/legacy inherit as is; the default is
// /<name>; a root of `/` does not double the slash.
#[test]
fn mountpoint_paths() {
    let mut store = PropStore::new();
    assert_eq!(
        get(&store, "tank/a/b", "mountpoint"),
        pair("/tank/a/b", "default")
    );
    assert_eq!(get(&store, "tank", "mountpoint"), pair("/tank", "default"));
    store.set_local("tank", "mountpoint", "/srv");
    assert_eq!(get(&store, "tank", "mountpoint"), pair("/srv", "local"));
    assert_eq!(
        get(&store, "tank/a/b", "mountpoint"),
        pair("/srv/a/b", "inherited from tank")
    );
    store.set_local("tank/a", "mountpoint", "legacy");
    assert_eq!(
        get(&store, "tank/a/b", "mountpoint"),
        pair("legacy", "inherited from tank/a")
    );
    store.set_local("tank/a", "mountpoint", "/");
    assert_eq!(
        get(&store, "tank/a/b", "mountpoint"),
        pair("/b", "inherited from tank/a")
    );
    assert_eq!(get(&store, "tank/a", "mountpoint"), pair("/", "local"));
    // An altroot is prepended (zpool import -R /mnt).
    let resolved =
        resolve_native_with_altroot(&store, "tank/x", ZfsProp::Mountpoint, Some("/mnt")).unwrap();
    assert_eq!(resolved.value, "/mnt/srv/x");
}

// User properties always inherit and are unset (None -> `-`) where nobody set them.
#[test]
fn user_properties_inherit() {
    let mut store = PropStore::new();
    assert_eq!(resolve(&store, "tank/a", "syncoid:sync"), None);
    store.set_local("tank", "syncoid:sync", "false");
    assert_eq!(
        get(&store, "tank/a/b", "syncoid:sync"),
        pair("false", "inherited from tank")
    );
    assert_eq!(
        get(&store, "tank/a@s1", "syncoid:sync"),
        pair("false", "inherited from tank")
    );
    store.set_local("tank/a@s1", "syncoid:sync", "true");
    assert_eq!(
        get(&store, "tank/a@s1", "syncoid:sync"),
        pair("true", "local")
    );
    assert_eq!(
        store.user_props_visible_from("tank/a@s1"),
        vec!["syncoid:sync".to_string()]
    );
}

// Snapshots take inheritable values from their filesystem, shown as inherited from it.
#[test]
fn snapshots_read_their_dataset() {
    let mut store = PropStore::new();
    store.set_local("tank/a", "exec", "off");
    assert_eq!(
        get(&store, "tank/a@s", "exec"),
        pair("off", "inherited from tank/a")
    );
    assert_eq!(get(&store, "tank/b@s", "exec"), pair("on", "default"));
}

// zfs receive values show as `received`; zfs set overrides; zfs inherit hides the received
// value (falls back to the parent); zfs inherit -S brings it back.
#[test]
fn received_and_inherit_s() {
    let mut store = PropStore::new();
    store.set_local("tank", "compression", "lz4");
    store.set_received("tank/r", "compression", "gzip");
    assert_eq!(
        get(&store, "tank/r", "compression"),
        pair("gzip", "received")
    );
    assert_eq!(
        get(&store, "tank/r/c", "compression"),
        pair("gzip", "inherited from tank/r")
    );
    store.set_local("tank/r", "compression", "off");
    assert_eq!(get(&store, "tank/r", "compression"), pair("off", "local"));
    store.inherit("tank/r", "compression", false);
    assert_eq!(
        get(&store, "tank/r", "compression"),
        pair("lz4", "inherited from tank")
    );
    store.inherit("tank/r", "compression", true);
    assert_eq!(
        get(&store, "tank/r", "compression"),
        pair("gzip", "received")
    );
    // set clears the marker: after set + inherit -S the received value is back too.
    store.inherit("tank/r", "compression", false);
    store.set_local("tank/r", "compression", "zle");
    store.inherit("tank/r", "compression", true);
    assert_eq!(
        get(&store, "tank/r", "compression"),
        pair("gzip", "received")
    );
    // A received mountpoint applies to the dataset itself without appending its name.
    store.set_received("tank/r", "mountpoint", "/backup");
    assert_eq!(
        get(&store, "tank/r", "mountpoint"),
        pair("/backup", "received")
    );
    assert_eq!(
        get(&store, "tank/r/c", "mountpoint"),
        pair("/backup/c", "inherited from tank/r")
    );
}

// Properties whose SOURCE is always `-` (ZPL properties, volblocksize) or `-` once set.
#[test]
fn dash_sources() {
    let mut store = PropStore::new();
    assert_eq!(
        get(&store, "tank", "casesensitivity"),
        pair("sensitive", "-")
    );
    assert_eq!(get(&store, "tank/v", "volblocksize"), pair("16384", "-"));
    assert_eq!(get(&store, "tank", "encryption"), pair("off", "default"));
    store.set_local("tank/e", "encryption", "aes-256-gcm");
    assert_eq!(
        get(&store, "tank/e", "encryption"),
        pair("aes-256-gcm", "-")
    );
    assert_eq!(
        get(&store, "tank/e/c", "encryption"),
        pair("aes-256-gcm", "-")
    );
    // Read-only statistics are not stored here: nothing to resolve.
    assert_eq!(resolve(&store, "tank", "origin"), None);
}

// The SOURCE column words.
#[test]
fn source_display() {
    assert_eq!(Source::None.to_string(), "-");
    assert_eq!(Source::Temporary.to_string(), "temporary");
    assert_eq!(
        Source::Inherited("tank".into()).to_string(),
        "inherited from tank"
    );
}
