//! The fake's argv check: exactly what the Bridge sends in native mode, or
//! a refusal naming the offending argument.

use super::Cli;
use super::error::FakeError;

/// The arguments the fake understood.
#[derive(Debug, Default)]
pub(super) struct Args {
    /// `--model=M` (one word: a model is never a separate argument).
    pub model: Option<String>,
    /// `--resume=ID` (Claude) or `--resume ID` (Qoder).
    pub resume: Option<String>,
}

/// A refusal of `argument` because it `problem`.
fn refused(argument: &str, problem: &'static str) -> FakeError {
    FakeError::Argv {
        argument: argument.to_owned(),
        problem,
    }
}

/// Checks `argv` against what the Bridge must send `cli` in native mode.
pub(super) fn parse(cli: Cli, argv: &[String]) -> Result<Args, FakeError> {
    let mut rest = argv.iter();
    let mut seen = Vec::new();
    let mut args = Args::default();
    while let Some(arg) = rest.next() {
        let mut value = || {
            rest.next()
                .cloned()
                .ok_or_else(|| refused(arg, "has no value"))
        };
        match (cli, arg.as_str()) {
            (_, "--output-format" | "--input-format") => {
                if value()? != "stream-json" {
                    return Err(refused(arg, "needs the value stream-json"));
                }
            }
            (_, "--permission-prompt-tool") => {
                if value()? != "stdio" {
                    return Err(refused(arg, "needs the value stdio"));
                }
            }
            (_, model) if model.starts_with("--model=") => {
                args.model = Some(model["--model=".len()..].to_owned());
            }
            (Cli::Claude, "--verbose") => {}
            (Cli::Claude, sources) if sources.starts_with("--setting-sources=") => {
                check_sources(arg, &sources["--setting-sources=".len()..])?;
            }
            (Cli::Claude, resume) if resume.starts_with("--resume=") => {
                args.resume = Some(resume["--resume=".len()..].to_owned());
            }
            (Cli::Qoder, "--print") => {}
            (Cli::Qoder, "--setting-sources") => check_sources(arg, &value()?)?,
            (Cli::Qoder, "--resume") => args.resume = Some(value()?),
            _ => return Err(refused(arg, "is not sent in native mode")),
        }
        seen.push(arg.as_str());
    }
    let mut required = vec![
        "--output-format",
        "--input-format",
        "--permission-prompt-tool",
    ];
    match cli {
        Cli::Claude => required.push("--verbose"),
        Cli::Qoder => required.extend(["--print", "--setting-sources"]),
    }
    for flag in required {
        if !seen.contains(&flag) {
            return Err(refused(flag, "is missing"));
        }
    }
    if cli == Cli::Claude && !seen.iter().any(|arg| arg.starts_with("--setting-sources=")) {
        return Err(refused("--setting-sources=", "is missing"));
    }
    Ok(args)
}

/// The task's sources, or the user's alone (model discovery).
fn check_sources(argument: &str, sources: &str) -> Result<(), FakeError> {
    match sources {
        "user,project,local" | "user" => Ok(()),
        _ => Err(refused(
            argument,
            "names other setting sources than user,project,local or user",
        )),
    }
}
