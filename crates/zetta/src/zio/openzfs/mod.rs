//! OpenZFS's on-disk I/O structures, read as OpenZFS 2.3 writes them: block pointers
//! (`blkptr`), the mapping of a DVA to leaf-device reads (`vdev_map`: single devices,
//! mirrors, raidz with its column map and parity, gang blocks) and reading a block's
//! physical bytes from a pool's devices (`read`). Zetta's own format stays in `zio::blkptr`
//! until the writer switches.

pub mod blkptr;
pub mod read;
pub mod vdev_map;
