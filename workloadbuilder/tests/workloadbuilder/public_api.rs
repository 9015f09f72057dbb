//! The crate's public surface is deliberate: every public name is listed in a snapshot, so adding or removing
//! one shows up in review (and in the CHANGELOG).

use std::path::Path;

#[test]
fn the_public_api_is_the_one_in_the_snapshot() {
    let names = kwas_test_tools::source::public_api(Path::new(env!("CARGO_MANIFEST_DIR")));
    insta::assert_snapshot!(names.join("\n"));
}
