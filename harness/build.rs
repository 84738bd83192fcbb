//! Rebuilds the binary when the embedded dialect SQL or scenario corpus
//! changes (include_dir does not track the files it embeds). Nothing here
//! reads the environment: which servers exist is decided at run time, so
//! changing a `REAPCHECK_*_URL` never recompiles the crate.

fn main() {
    println!("cargo::rerun-if-changed=../dialects");
    println!("cargo::rerun-if-changed=../scenarios");
    println!("cargo::rerun-if-changed=build.rs");
}
