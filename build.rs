//! Compiles `proto/kserve.proto` with a pure-Rust protobuf compiler (protox), so building the crate
//! needs no system `protoc`; and records the git commit the binary is built from
//! (`TTFTBENCH_GIT_COMMIT`, "unknown" outside a git checkout of this crate) for `--version`.

use std::path::Path;
use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    println!("cargo:rerun-if-changed=build.rs");
    let fds = protox::compile(["kserve.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    println!("cargo:rustc-env=TTFTBENCH_GIT_COMMIT={}", git_commit());
    Ok(())
}

/// `git` with `args` in the crate's directory, its trimmed stdout when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The short commit of HEAD, when the crate is the top of a git checkout (not a tarball
/// unpacked inside some other repository); rebuilt when HEAD or its branch moves.
fn git_commit() -> String {
    let top = git(&["rev-parse", "--show-toplevel"]);
    let ours = top.is_some_and(|t| {
        Path::new(&t).canonicalize().ok()
            == Path::new(env!("CARGO_MANIFEST_DIR")).canonicalize().ok()
    });
    if !ours {
        return "unknown".into();
    }
    for name in
        ["HEAD".to_string()]
            .into_iter()
            .chain(git(&["rev-parse", "--symbolic-full-name", "HEAD"]))
    {
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && Path::new(&path).exists()
        {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
}
