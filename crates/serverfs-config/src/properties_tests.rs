//! Property tests of the configuration parser: whatever the operator
//! writes, in a TOML file or the environment, loading gives a
//! configuration or an error naming what is wrong; it never panics, and
//! the error is one line (the CLI prints it as such). The soak suite
//! (`scripts/soak.sh --long`) runs these with 100,000 cases each.

use proptest::prelude::*;

use crate::test_support::{Fixture, env};
use crate::{Config, ConfigSource};

/// A value as an operator might (mis)type it.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("true".to_owned()),
        Just("\"yes\"".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        "-?[0-9]{1,25}(\\.[0-9]{1,3})?".prop_map(|n| n),
        "\"[ -~]{0,20}\"".prop_map(|s| s),
        Just("[]".to_owned()),
        Just("[\"a\", 1]".to_owned()),
        Just("\"/tmp\"".to_owned()),
        Just("{ x = 1 }".to_owned()),
    ]
}

/// Known keys of each table, and a few unknown ones.
const KEYS: &[&str] = &[
    "log_level",
    "max_read_lines",
    "max_read_bytes",
    "allow_hidden",
    "deny",
    "text_content",
    "binary_transfer",
    "read_hardlinked_files",
    "alias",
    "path",
    "read_only",
    "agent_mode",
    "agent_runtimes",
    "bind",
    "auth",
    "token_file",
    "header_timeout_ms",
    "max_sessions",
    "enabled",
    "socket",
    "state_dir",
    "codex_bin",
    "acp_profiles",
    "unknown_key",
];

/// A TOML document of known tables with arbitrary key/value lines.
fn document() -> impl Strategy<Value = String> {
    let line = (prop::sample::select(KEYS), value()).prop_map(|(k, v)| format!("{k} = {v}\n"));
    let table = (
        prop::sample::select(
            &[
                "[server]",
                "[http]",
                "[agent]",
                "[[workdirs]]",
                "[[agent.acp_profiles]]",
                "[nope]",
            ][..],
        ),
        proptest::collection::vec(line, 0..5),
    )
        .prop_map(|(header, lines)| format!("{header}\n{}", lines.concat()));
    prop_oneof![
        proptest::collection::vec(table, 0..5).prop_map(|tables| tables.concat()),
        "\\PC{0,200}",
    ]
}

/// Environment variables of the container mode with arbitrary values.
const VARIABLES: &[&str] = &[
    "WORKDIR_01_ALIAS",
    "WORKDIR_01_READ_ONLY",
    "WORKDIR_01_MAX_READ_LINES",
    "WORKDIR_01_AGENT_MODE",
    "WORKDIR_02_ALIAS",
    "SERVERFS_HTTP_BIND",
    "SERVERFS_HTTP_AUTH",
    "SERVERFS_HTTP_MAX_CONNECTIONS",
    "SERVERFS_LOG_LEVEL",
    "SERVERFS_DENY",
    "SERVERFS_AGENT_ENABLED",
    "SERVERFS_ACP_PROFILES_JSON",
    "SERVERFS_TEXT_CONTENT",
];

fn assert_one_line(message: &str) -> Result<(), TestCaseError> {
    prop_assert!(!message.is_empty());
    prop_assert!(!message.contains('\n'), "{message:?}");
    Ok(())
}

/// Runs `case` on `PROPTEST_CASES` (at least 256) values of `strategy`.
/// The cases share their caller's fixture, which none of them changes: the
/// long profile's 100,000 cases would otherwise spend their time creating
/// and removing directories.
fn run_cases<S: Strategy>(strategy: S, case: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let config = ProptestConfig {
        cases: ProptestConfig::default().cases.max(256),
        ..ProptestConfig::default()
    };
    if let Err(failure) = proptest::test_runner::TestRunner::new(config).run(&strategy, case) {
        panic!("{failure}");
    }
}

#[test]
fn property_any_toml_loads_or_says_why_in_one_line() {
    let fx = Fixture::new();
    fx.mkdir("w");
    run_cases(document(), |text| {
        if let Err(error) = Config::from_toml_str_with_env(&text, fx.path(), &env(&[])) {
            assert_one_line(&error.to_string())?;
        }
        Ok(())
    });
}

#[test]
fn property_any_environment_loads_or_says_why_in_one_line() {
    let fx = Fixture::new();
    fx.slot(1);
    fx.slot(2);
    let source = ConfigSource::Cli(vec![format!("c={}", fx.mkdir("c").display())]);
    let pairs = proptest::collection::vec((prop::sample::select(VARIABLES), "[ -~]{0,24}"), 0..8);
    run_cases(pairs, |pairs| {
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if let Err(error) = fx.env_config(&pairs) {
            assert_one_line(&error.to_string())?;
        }
        if let Err(error) = Config::load(&source, &[], &env(&pairs)) {
            assert_one_line(&error.to_string())?;
        }
        Ok(())
    });
}
