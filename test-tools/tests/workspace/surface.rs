//! The public names of every crate, counted the way the crates' public-API snapshots list them. Run it to
//! see the surface of the whole workspace: `cargo test -p kwas-test-tools --test workspace surface --
//! --ignored --nocapture`.

use kwas_test_tools::run::repo_root;
use kwas_test_tools::source::public_api;

#[test]
#[ignore = "prints figures; nothing to check"]
fn print_the_public_names_of_every_crate() {
    let root = repo_root();
    for krate in super::layering::CRATES {
        println!("{krate}: {}", public_api(&root.join(krate)).len());
    }
}
