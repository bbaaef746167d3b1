//! OpenZFS's own on-disk vdev structures, read from real OpenZFS devices (beside Zetta's
//! private `vdev::label`, which stays untouched until the writer switches).

pub mod label;
