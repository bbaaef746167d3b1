//! OpenZFS's own pool-level on-disk structures (uberblocks, feature flags), read from real
//! OpenZFS devices beside Zetta's private `spa::uberblock`.

pub mod discover;
pub mod feature;
pub mod history;
pub mod import;
pub mod pool;
pub mod scan;
pub mod space;
pub mod uberblock;
