//! Golden tests for `list.rs`: whole tables compared with OpenZFS's layout.

use super::*;

fn strings(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|cell| cell.to_string()).collect()
}

fn default_pool_row(name: &str) -> Vec<String> {
    strings(&[
        name, "960M", "104K", "960M", "-", "-", "0%", "0%", "1.00x", "ONLINE", "-",
    ])
}

// `zpool list` with default columns: fixed 5-wide numbers, HEALTH right-aligned in 8,
// ALTROOT last and bare. Scripts (sanoid) split this on whitespace.
#[test]
fn zpool_list_default_golden() {
    let columns = zpool_list_columns(ZPOOL_LIST_DEFAULT, false);
    let text = format_table(&columns, &[default_pool_row("tank")], false);
    let expected = "\
NAME   SIZE  ALLOC   FREE  CKPOINT  EXPANDSZ   FRAG    CAP  DEDUP    HEALTH  ALTROOT
tank   960M   104K   960M        -         -     0%     0%  1.00x    ONLINE  -
";
    assert_eq!(text, expected);
}

// A long pool name widens NAME (it is flexible); fixed number columns do not widen.
#[test]
fn zpool_list_name_column_widens() {
    let columns = zpool_list_columns(&["name", "size", "health"], false);
    let rows = vec![
        strings(&["tank", "960M", "ONLINE"]),
        strings(&["backup-pool", "1.50G", "DEGRADED"]),
    ];
    let expected = "\
NAME          SIZE    HEALTH
tank          960M    ONLINE
backup-pool  1.50G  DEGRADED
";
    assert_eq!(format_table(&columns, &rows, false), expected);
}

// -p makes number columns flexible so exact byte counts line up.
#[test]
fn zpool_list_parsable_widens_numbers() {
    let columns = zpool_list_columns(&["name", "size"], true);
    let rows = vec![strings(&["tank", "1006632960"])];
    assert_eq!(
        format_table(&columns, &rows, false),
        "NAME        SIZE\ntank  1006632960\n"
    );
}

// -H: no header, one tab between fields, no padding anywhere.
#[test]
fn table_scripted_uses_single_tabs() {
    let columns = zpool_list_columns(ZPOOL_LIST_DEFAULT, false);
    let text = format_table(&columns, &[default_pool_row("tank")], true);
    assert_eq!(
        text,
        "tank\t960M\t104K\t960M\t-\t-\t0%\t0%\t1.00x\tONLINE\t-\n"
    );
}

// `zfs list`: NAME and MOUNTPOINT left (MOUNTPOINT bare, last), sizes right in 5.
#[test]
fn zfs_list_default_golden() {
    let columns = zfs_list_columns(ZFS_LIST_DEFAULT, false);
    let rows = vec![
        strings(&["tank", "147K", "832M", "24K", "/tank"]),
        strings(&["tank/home", "24K", "832M", "24K", "/tank/home"]),
        strings(&["tank/home@snap1", "0B", "-", "24K", "-"]),
    ];
    let expected = "\
NAME              USED  AVAIL  REFER  MOUNTPOINT
tank              147K   832M    24K  /tank
tank/home          24K   832M    24K  /tank/home
tank/home@snap1     0B      -    24K  -
";
    assert_eq!(format_table(&columns, &rows, false), expected);
}

// `zfs list -o space` headers, and that a right-aligned last column is padded.
#[test]
fn zfs_list_space_headers() {
    let columns = zfs_list_columns(ZFS_LIST_SPACE, false);
    let rows = vec![strings(&[
        "tank", "832M", "147K", "0B", "24K", "0B", "123K",
    ])];
    let expected = "\
NAME  AVAIL   USED  USEDSNAP  USEDDS  USEDREFRESERV  USEDCHILD
tank   832M   147K        0B     24K             0B       123K
";
    assert_eq!(format_table(&columns, &rows, false), expected);
}

// Aliases (column names) select the same property; user properties are upper-cased
// and left-aligned; index properties get the width of their longest value.
#[test]
fn column_lookup_aliases_user_props_and_index_widths() {
    let columns = zfs_list_columns(
        &["avail", "refer", "ratio", "com.example:tag", "compression"],
        false,
    );
    let headers: Vec<&str> = columns.iter().map(|c| c.header.as_str()).collect();
    assert_eq!(
        headers,
        ["AVAIL", "REFER", "RATIO", "COM.EXAMPLE:TAG", "COMPRESS"]
    );
    assert_eq!(columns[3].align, Align::Left);
    assert_eq!(columns[4].width_min, 14);
    let pool = zpool_list_columns(
        &["alloc", "cap", "frag", "ckpoint", "expandsz", "dedup"],
        false,
    );
    let headers: Vec<&str> = pool.iter().map(|c| c.header.as_str()).collect();
    assert_eq!(
        headers,
        ["ALLOC", "CAP", "FRAG", "CKPOINT", "EXPANDSZ", "DEDUP"]
    );
    assert!(pool.iter().all(|c| c.align == Align::Right));
}

fn vdev(name: &str, depth: usize, values: &[&str]) -> PoolListLine {
    PoolListLine::Vdev {
        name: name.to_string(),
        depth,
        values: strings(values),
    }
}

// `zpool list -v`: indented vdev rows padded to the name width, every value
// right-aligned in its unexpanded width (ALTROOT too), class rows full of dashes.
#[test]
fn zpool_list_verbose_golden() {
    let columns = zpool_list_columns(ZPOOL_LIST_DEFAULT, false);
    let leaf = ["-", "-", "-", "-", "-", "-", "-", "-", "ONLINE", "-"];
    let pools = vec![PoolListEntry {
        values: default_pool_row("tank"),
        vdevs: vec![
            vdev(
                "mirror-0",
                2,
                &[
                    "960M", "104K", "960M", "-", "-", "0%", "0.01%", "-", "ONLINE", "-",
                ],
            ),
            vdev("/tmp/a", 4, &leaf),
            vdev("/tmp/b", 4, &leaf),
            PoolListLine::Class("logs".to_string()),
            vdev(
                "/tmp/log",
                2,
                &[
                    "1.88G", "0", "1.88G", "-", "-", "0%", "0.00%", "-", "ONLINE", "-",
                ],
            ),
        ],
    }];
    let expected = "\
NAME         SIZE  ALLOC   FREE  CKPOINT  EXPANDSZ   FRAG    CAP  DEDUP    HEALTH  ALTROOT
tank         960M   104K   960M        -         -     0%     0%  1.00x    ONLINE  -
  mirror-0   960M   104K   960M        -         -     0%  0.01%      -    ONLINE        -
    /tmp/a      -      -      -        -         -      -      -      -    ONLINE        -
    /tmp/b      -      -      -        -         -      -      -      -    ONLINE        -
logs            -      -      -        -         -      -      -      -         -        -
  /tmp/log  1.88G      0  1.88G        -         -     0%  0.00%      -    ONLINE        -
";
    assert_eq!(format_zpool_list(&columns, &pools, true, false), expected);
}

// `zpool list -vH`: vdev rows start with a tab (OpenZFS prints "\t%s" for the name).
#[test]
fn zpool_list_verbose_scripted_vdev_rows_start_with_tab() {
    let columns = zpool_list_columns(&["name", "size", "health"], false);
    let pools = vec![PoolListEntry {
        values: strings(&["tank", "960M", "ONLINE"]),
        vdevs: vec![vdev("/tmp/a", 2, &["960M", "ONLINE"])],
    }];
    assert_eq!(
        format_zpool_list(&columns, &pools, true, true),
        "tank\t960M\tONLINE\n\t/tmp/a\t960M\tONLINE\n"
    );
}

// Vdev CAP cells switch precision at 10% and 100%, as collect_vdev_prop does.
#[test]
fn vdev_capacity_text_precisions() {
    assert_eq!(vdev_capacity_text(1, false), "0.01%");
    assert_eq!(vdev_capacity_text(1_234, false), "12.3%");
    assert_eq!(vdev_capacity_text(10_000, false), "100%");
    assert_eq!(vdev_capacity_text(1_234, true), "12");
}
