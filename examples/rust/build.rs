//! Runs adgen on src/model.rs: OUT_DIR/model.adgen.rs holds the wrappers (included by main.rs) and
//! OUT_DIR/model.adgen.o the derivatives, linked into the program. Copy this file as it is;
//! ADGEN names the adgen command where it is not on the PATH (a virtual environment's bin/adgen).

use std::{env, path::PathBuf, process::Command};

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let adgen = env::var("ADGEN").unwrap_or_else(|_| "adgen".into());
    let status = Command::new(&adgen)
        .args(["build", "-q", "src/model.rs", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {adgen} ({e}): pip install adgen, or set ADGEN"));
    assert!(status.success(), "adgen build src/model.rs failed");
    println!("cargo:rustc-link-arg={}", out.join("model.adgen.o").display());
    println!("cargo:rerun-if-changed=src/model.rs");
    println!("cargo:rerun-if-env-changed=ADGEN");
}
