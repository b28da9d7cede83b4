//! The `serverfs` binary: all logic lives in the library.

fn main() -> std::process::ExitCode {
    serverfs::run()
}
