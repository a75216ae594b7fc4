//! The op cases the browser tests also run (tests/common/cases.rs), natively: one table, so
//! the two runners check the same shapes.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{cases, run};

#[test]
fn layers_match_the_cpu_reference() {
    run(cases::check_all(cases::layers()));
}

#[test]
fn fast_paths_match_the_cpu_reference() {
    run(cases::check_all(cases::fast_paths()));
}

#[test]
fn every_other_kernel_matches_the_cpu_reference() {
    run(cases::check_all(cases::others()));
}
