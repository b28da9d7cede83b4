//! `fake-qodercli`: a scripted stand-in for the `qodercli` CLI (see
//! `serverfs_testkit::mock_stream_json`).

fn main() -> std::process::ExitCode {
    serverfs_testkit::mock_stream_json::run(serverfs_testkit::mock_stream_json::Cli::Qoder)
}
