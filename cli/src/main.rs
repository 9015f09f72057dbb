//! The `kwas` command line. Its subcommands (`demo`, `dev`, `compile`, `scheduler`, `controllers`) arrive
//! with the issues that build the parts they run.

fn main() {
    println!("kwas {}", env!("CARGO_PKG_VERSION"));
}
