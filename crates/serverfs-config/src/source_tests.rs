use std::path::PathBuf;

use pretty_assertions::assert_eq;

use crate::test_support::{Fixture, env, message};
use crate::{Config, ConfigError, ConfigSource, select_source};

fn specs(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn select_source_precedence() {
    let cli = specs(&["a=/x"]);
    let all = env(&[
        ("SERVERFS_CONFIG", "/etc/serverfs.toml"),
        ("WORKDIR_01_ALIAS", "a"),
    ]);
    assert_eq!(
        select_source(Some(PathBuf::from("/c.toml")), &cli, &all),
        Ok(ConfigSource::Toml(PathBuf::from("/c.toml")))
    );
    assert_eq!(
        select_source(None, &cli, &all),
        Ok(ConfigSource::Cli(cli.clone()))
    );
    assert_eq!(
        select_source(None, &[], &all),
        Ok(ConfigSource::Toml(PathBuf::from("/etc/serverfs.toml")))
    );
    assert_eq!(
        select_source(
            None,
            &[],
            &env(&[("SERVERFS_CONFIG", " "), ("WORKDIR_01_ALIAS", "a")])
        ),
        Ok(ConfigSource::Environment)
    );
    // Any slot variable selects the environment, even a Compose-only one.
    assert_eq!(
        select_source(None, &[], &env(&[("WORKDIR_16_PATH", "/srv")])),
        Ok(ConfigSource::Environment)
    );
}

#[test]
fn no_source_is_an_error() {
    for vars in [
        env(&[]),
        env(&[("SERVERFS_MAX_READ_LINES", "10"), ("HOME", "/h")]),
        env(&[("WORKDIR_17_ALIAS", "x"), ("WORKDIR_ROOT", "/x")]),
    ] {
        let err = select_source(None, &[], &vars).unwrap_err();
        assert_eq!(err, ConfigError::NoSource);
        assert_eq!(
            err.to_string(),
            "no workdirs configured: pass --workdir ALIAS=PATH[:rw], --config FILE, \
             or set SERVERFS_CONFIG or WORKDIR_01_ALIAS"
        );
    }
}

#[test]
fn load_reads_the_file_and_resolves_against_its_directory() {
    let fx = Fixture::new();
    let data = fx.mkdir("conf/data");
    let file = fx.file(
        "conf/serverfs.toml",
        "[server]\nmax_read_lines = 10\n[[workdirs]]\nalias = \"data\"\npath = \"data\"\n",
    );
    let config = Config::load(&ConfigSource::Toml(file), &[], &env(&[])).unwrap();
    assert_eq!(config.workdirs[0].root, data);
    assert_eq!(config.workdirs[0].max_read_lines, 10);
}

#[test]
fn toml_mode_ignores_serverfs_variables() {
    let fx = Fixture::new();
    fx.mkdir("data");
    let file = fx.file(
        "serverfs.toml",
        "[[workdirs]]\nalias = \"data\"\npath = \"data\"\n",
    );
    let vars = env(&[("SERVERFS_MAX_READ_LINES", "10"), ("WORKDIR_01_ALIAS", "x")]);
    let config = Config::load(&ConfigSource::Toml(file), &[], &vars).unwrap();
    assert_eq!(config.workdirs.len(), 1);
    assert_eq!(config.workdirs[0].max_read_lines, 500);
}

#[test]
fn an_unreadable_file_is_an_error() {
    let fx = Fixture::new();
    let missing = fx.join("nope.toml");
    let err = Config::load(&ConfigSource::Toml(missing.clone()), &[], &env(&[])).unwrap_err();
    let ConfigError::ReadFile { path, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(path, &missing);
    assert!(
        err.to_string()
            .starts_with(&format!("cannot read configuration file {missing:?}: ")),
        "{err}"
    );
}

#[test]
fn extra_cli_workdirs_join_the_file_and_inherit_its_defaults() {
    let fx = Fixture::new();
    fx.mkdir("data");
    let extra = fx.mkdir("extra");
    let file = fx.file(
        "serverfs.toml",
        "[server]\nmax_read_lines = 10\ndeny = [\"*.log\"]\n\
         [[workdirs]]\nalias = \"data\"\npath = \"data\"\n",
    );
    let source = ConfigSource::Toml(file);
    let config = Config::load(
        &source,
        &specs(&[&format!("extra={}:rw", extra.display())]),
        &env(&[]),
    )
    .unwrap();
    let added = &config.workdirs[1];
    assert_eq!(added.alias.as_str(), "extra");
    assert_eq!(added.root, extra);
    assert!(!added.read_only);
    assert_eq!(
        (added.max_read_lines, added.deny.clone()),
        (10, vec!["*.log".to_owned()])
    );

    let spec = format!("Data={}", extra.display());
    assert_eq!(
        message(Config::load(&source, &specs(&[&spec]), &env(&[]))),
        format!(
            "--workdir {spec:?} \"Data\" duplicates \"data\" from workdirs[0].alias \
             (aliases are unique ignoring case)"
        )
    );
}

#[test]
fn cli_mode_takes_settings_from_serverfs_globals() {
    let fx = Fixture::new();
    let a = fx.mkdir("a");
    let b = fx.mkdir("b");
    let source = ConfigSource::Cli(specs(&[
        &format!("a={}", a.display()),
        &format!("b={}:rw", b.display()),
        &format!("c={}:ro", b.display()),
    ]));
    let vars = env(&[
        ("SERVERFS_MAX_READ_LINES", "10"),
        ("SERVERFS_MAX_LIST_ENTRIES", "7"),
        ("XDG_RUNTIME_DIR", "/run/user/5"),
        // Slots are not read in command-line mode.
        ("WORKDIR_01_ALIAS", "slot"),
    ]);
    let config = Config::load(&source, &[], &vars).unwrap();
    let summary: Vec<(&str, bool, u32)> = config
        .workdirs
        .iter()
        .map(|w| (w.alias.as_str(), w.read_only, w.max_read_lines))
        .collect();
    assert_eq!(
        summary,
        [("a", true, 10), ("b", false, 10), ("c", true, 10)]
    );
    assert_eq!(config.workdirs[0].legacy_slot, None);
    assert_eq!(
        (
            config.server.default_list_limit,
            config.server.max_list_entries
        ),
        (7, 7)
    );
    // Native Bridge defaults, not the container's.
    assert_eq!(
        config.agent.bridge_socket,
        PathBuf::from("/run/user/5/serverfs/bridge.sock")
    );
    assert_eq!(
        config.agent.lock_dir,
        PathBuf::from("/run/user/5/serverfs/locks")
    );
    let socket_only = Config::load(
        &source,
        &[],
        &env(&[("SERVERFS_AGENT_BRIDGE_SOCKET", "/b/s.sock")]),
    )
    .unwrap();
    assert_eq!(socket_only.agent.lock_dir, PathBuf::from("/b/locks"));
    // `--workdir` specs are new configurations: hard-linked files are not
    // read unless SERVERFS_READ_HARDLINKED_FILES says so.
    assert!(config.workdirs.iter().all(|w| !w.read_hardlinked_files));
    let reading = Config::load(
        &source,
        &[],
        &env(&[("SERVERFS_READ_HARDLINKED_FILES", "true")]),
    )
    .unwrap();
    assert!(reading.workdirs.iter().all(|w| w.read_hardlinked_files));
}

#[test]
fn cli_mode_errors() {
    let fx = Fixture::new();
    let a = fx.mkdir("a");
    assert_eq!(
        message(Config::load(
            &ConfigSource::Cli(specs(&["a"])),
            &[],
            &env(&[])
        )),
        "--workdir \"a\": missing '=' (expected ALIAS=PATH, ALIAS=PATH:ro or ALIAS=PATH:rw)"
    );
    let spec = format!("9a={}", a.display());
    let err = Config::load(&ConfigSource::Cli(specs(&[&spec])), &[], &env(&[])).unwrap_err();
    assert_eq!(err.key(), Some(format!("--workdir {spec:?}")));
    assert!(err.to_string().contains("is not a valid workdir alias"));
    let missing = fx.join("missing");
    let spec = format!("m={}", missing.display());
    assert_eq!(
        message(Config::load(
            &ConfigSource::Cli(specs(&[&spec])),
            &[],
            &env(&[])
        )),
        format!("--workdir {spec:?}: root of workdir \"m\" ({missing:?}) does not exist")
    );
    assert_eq!(
        message(Config::load(&ConfigSource::Cli(vec![]), &[], &env(&[]))),
        "no enabled workdir: no --workdir was given"
    );
    assert_eq!(
        message(Config::load(
            &ConfigSource::Cli(specs(&[&format!("a={}", a.display())])),
            &[],
            &env(&[("SERVERFS_MAX_READ_BYTES", "lots")])
        )),
        "SERVERFS_MAX_READ_BYTES: expected a positive integer, got \"lots\""
    );
}

#[test]
fn environment_source_end_to_end() {
    let fx = Fixture::new();
    let root = fx.slot(2);
    let vars = env(&[
        ("WORKDIR_02_ALIAS", "two"),
        ("SERVERFS_WORKDIRS_ROOT", &fx.path().display().to_string()),
    ]);
    let source = select_source(None, &[], &vars).unwrap();
    assert_eq!(source, ConfigSource::Environment);
    let config = Config::load(&source, &[], &vars).unwrap();
    assert_eq!(config.workdirs[0].root, root);
    assert_eq!(config.workdirs[0].legacy_slot, Some(2));
}

#[test]
fn error_keys() {
    let cases: [(ConfigError, Option<&str>); 4] = [
        (ConfigError::NoSource, None),
        (
            ConfigError::OutOfRange {
                key: "server.max_walk_entries".to_owned(),
                got: 0,
                min: 1,
                max: 2,
            },
            Some("server.max_walk_entries"),
        ),
        (
            ConfigError::UnknownVariable {
                name: "WORKDIR_01_X".to_owned(),
                hint: "",
            },
            Some("WORKDIR_01_X"),
        ),
        (
            ConfigError::Slot {
                slot: 4,
                root: PathBuf::from("/workdirs/04"),
                alias: None,
                problem: crate::SlotProblem::MountWithoutAlias,
            },
            Some("WORKDIR_04"),
        ),
    ];
    for (err, key) in cases {
        assert_eq!(err.key().as_deref(), key, "{err:?}");
    }
}
