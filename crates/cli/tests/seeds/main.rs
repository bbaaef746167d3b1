//! The seed posts' lab notebook as acceptance tests (issue 7, docs/SEEDS.md): each
//! experiment the ZFS administrator ran on real ZFS, run again on Zetta through the real
//! binary (`zpool`/`zfs` symlinks, a daemon, FUSE mounts, sparse file vdevs), expecting the
//! posts' own results: messages word for word, ratios and counts within the tolerances
//! written next to each assertion, each beside the post's line it checks.
//!
//! Needs root and /dev/fuse (the experiments write through mounts, as the admin did).
//! One module per post; the posts are in `shared/seeds/` beside the repository:
//! - `mirror`: "ZFS does NOT favor lower latency devices" (000, 002);
//! - `allocation`: "ZFS allocates writes according to free space per vdev", "How data gets
//!   imbalanced on ZFS", "Demonstrating ZFS zpool write distribution" (001, 002);
//! - `primer`: "Primer: How data is stored on-disk with ZFS" (001, 002);
//! - `copies`: "Testing copies=n resiliency", "copies=n is not a substitute for device
//!   redundancy!" (003);
//! - `recordsize`: "About ZFS recordsize" (000, 004);
//! - `compression`: "ZFS compression: yes, you want this" (003);
//! - `clones`: "ZFS clones: Probably not what you really want" (000, 001, 002, 004);
//! - `cold_storage`: "ZFS snapshots and cold storage" (000, 002, 004);
//! - `verifying_copies`: "Verifying copies" (000);
//! - `reshuffling`: "Reshuffling pool storage on the fly" (003).
//!
//! Sizes are the posts' except where docs/SEEDS.md says they are scaled down (the
//! allocation ratios do not depend on size); `ZETTA_SEEDS_FULL=1` runs those at the posts'
//! sizes.

#[path = "../common/mod.rs"]
mod common;

mod allocation;
mod clones;
mod cold_storage;
mod compression;
mod copies;
mod lab;
mod mirror;
mod primer;
mod recordsize;
mod reshuffling;
mod verifying_copies;
