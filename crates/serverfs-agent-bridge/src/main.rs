//! `serverfs-agent-bridge`: the Agent Bridge daemon. The command-line
//! modules live in `src/cli/` and belong to this binary only; the library
//! holds everything they drive.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
