//! `fake-acp`: a scripted ACP agent (see `serverfs_testkit::mock_acp`).

fn main() -> std::process::ExitCode {
    serverfs_testkit::mock_acp::run()
}
