//! The laboratory's recorded expectations (the loader is `driver_common::expectations`).

pub use driver_common::expectations::*;

pub mod make_check;
pub mod proc_access;
