//! `mock-codex`: a scripted stand-in for the `codex` binary (see
//! `serverfs_testkit::mock_codex`).

fn main() -> std::process::ExitCode {
    serverfs_testkit::mock_codex::run()
}
