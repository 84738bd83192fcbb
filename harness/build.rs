//! Rebuilds the binary when the embedded dialect SQL changes.
fn main() {
    println!("cargo::rerun-if-changed=../dialects");
}
