//! The MOS object directory (OpenZFS `DMU_POOL_DIRECTORY_OBJECT` and the `DMU_POOL_*` names
//! of `include/sys/dmu.h`).
//!
//! Object 1 of the MOS is a ZAP whose entries name the pool-wide objects. Most values are a
//! single u64 object number; `scan` is an array of u64 (`dsl_scan_phys_t`), `checksum_salt`
//! a byte string, and the `DDT-*` names are formatted from the checksum, type and class.
//! An import reads `config` (the packed XDR nvlist of the pool config), `features_for_read`
//! (feature → refcount; an unknown active one refuses the import), then `root_dataset` (the
//! root DSL dir, e.g. 32, whose head dataset is the pool's root filesystem).

/// The object number of the MOS object directory.
pub const DIRECTORY_OBJECT: u64 = 1;

pub const CONFIG: &str = "config";
pub const FEATURES_FOR_WRITE: &str = "features_for_write";
pub const FEATURES_FOR_READ: &str = "features_for_read";
pub const FEATURE_DESCRIPTIONS: &str = "feature_descriptions";
pub const FEATURE_ENABLED_TXG: &str = "feature_enabled_txg";
pub const ROOT_DATASET: &str = "root_dataset";
pub const SYNC_BPLIST: &str = "sync_bplist";
pub const ERRLOG_SCRUB: &str = "errlog_scrub";
pub const ERRLOG_LAST: &str = "errlog_last";
pub const SPARES: &str = "spares";
pub const DEFLATE: &str = "deflate";
pub const HISTORY: &str = "history";
pub const POOL_PROPS: &str = "pool_props";
pub const L2CACHE: &str = "l2cache";
pub const TMP_USERREFS: &str = "tmp_userrefs";
pub const DDT_STATS: &str = "DDT-statistics";
pub const CREATION_VERSION: &str = "creation_version";
pub const SCAN: &str = "scan";
pub const ERROR_SCRUB: &str = "error_scrub";
pub const LAST_SCRUBBED_TXG: &str = "last_scrubbed_txg";
pub const FREE_BPOBJ: &str = "free_bpobj";
pub const BPTREE_OBJ: &str = "bptree_obj";
pub const EMPTY_BPOBJ: &str = "empty_bpobj";
pub const CHECKSUM_SALT: &str = "org.illumos:checksum_salt";
pub const VDEV_ZAP_MAP: &str = "com.delphix:vdev_zap_map";
pub const REMOVING: &str = "com.delphix:removing";
pub const OBSOLETE_BPOBJ: &str = "com.delphix:obsolete_bpobj";
pub const CONDENSING_INDIRECT: &str = "com.delphix:condensing_indirect";
pub const ZPOOL_CHECKPOINT: &str = "com.delphix:zpool_checkpoint";
pub const LOG_SPACEMAP_ZAP: &str = "com.delphix:log_spacemap_zap";
pub const DELETED_CLONES: &str = "com.delphix:deleted_clones";
pub const TXG_LOG_TIME_MINUTES: &str = "com.klarasystems:txg_log_time:minutes";
pub const TXG_LOG_TIME_DAYS: &str = "com.klarasystems:txg_log_time:days";
pub const TXG_LOG_TIME_MONTHS: &str = "com.klarasystems:txg_log_time:months";

/// The name of a dedup table's ZAP: `DDT-<checksum>-<type>-<class>` (e.g.
/// `DDT-sha256-zap-unique`).
pub fn ddt_name(checksum: &str, table_type: &str, class: &str) -> String {
    format!("DDT-{checksum}-{table_type}-{class}")
}
