pub mod blkptr;
