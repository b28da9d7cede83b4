use proptest::prelude::*;

use super::*;
use crate::error::LeaseErrorCode;

fn problem(id: &str) -> Option<LeaseIdProblem> {
    match LeaseId::parse(id) {
        Ok(_) => None,
        Err(LeaseError::InvalidLeaseId { problem }) => Some(problem),
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

/// spec-agent-bridge.md §8.1: shared with the MCP side, byte for byte.
#[test]
fn stems_match_the_spec_vectors() {
    let vectors = [
        ("slot:01", "01"),
        ("slot:16", "16"),
        ("alias:repo", "255b6be1a22d261f7c81e80e37b195e16c9212de"),
        ("alias:Foo", "8665896a714f759ccc3ca905910d92cd3607e079"),
        ("alias:foo", "62cc1bea70d19330680ae63a48d871f25900549f"),
        ("alias:con", "da499902b64252157afa2e0c9b43afb5d7710cfa"),
        ("alias:a b", "308002eb6850cf6965196dd5ec61b943d771964a"),
        ("alias:..", "5ef1397ecf813e259b51567c3c15754f2cc9bf0c"),
        ("alias:中文", "96870bc5ff80257d6c9e6ac325b80dfb6f45395d"),
    ];
    for (id, stem) in vectors {
        let lease = LeaseId::parse(id).unwrap();
        assert_eq!(lease.stem(), stem, "{id}");
        assert_eq!(lease.as_str(), id);
        assert_eq!(lease.lock_file_name(), format!("{stem}.lock"));
        assert!(is_guard_name(stem), "{stem}");
    }
}

#[test]
fn slot_stems_are_the_legacy_layout() {
    let stems: Vec<String> = LeaseId::legacy_slots()
        .map(|id| id.stem().to_owned())
        .collect();
    let expected: Vec<String> = (1..=16).map(|n| format!("{n:02}")).collect();
    assert_eq!(stems, expected);
    for (n, id) in (1u8..).zip(LeaseId::legacy_slots()) {
        assert_eq!(id.slot_number(), Some(n));
        assert_eq!(id, LeaseId::parse(&format!("slot:{n:02}")).unwrap());
        assert_eq!(id.label(), format!("workdir slot {n:02}"));
    }
    assert!(LeaseId::slot(0).is_err());
    assert!(LeaseId::slot(17).is_err());
}

#[test]
fn validation_table() {
    let long_alias = format!("alias:{}", "a".repeat(250));
    let too_long = format!("alias:{}", "a".repeat(251));
    let cases: Vec<(&str, Option<LeaseIdProblem>)> = vec![
        ("alias:repo", None),
        ("alias:a b", None),
        ("alias:..", None),
        ("alias: padded ", None),
        (long_alias.as_str(), None),
        (too_long.as_str(), Some(LeaseIdProblem::TooLong)),
        ("", Some(LeaseIdProblem::Empty)),
        ("alias:", Some(LeaseIdProblem::EmptyAlias)),
        ("alias:a:b", Some(LeaseIdProblem::AliasColon)),
        ("alias:a/b", Some(LeaseIdProblem::Separator)),
        ("alias:a\\b", Some(LeaseIdProblem::Separator)),
        ("alias:a\nb", Some(LeaseIdProblem::ControlCharacter)),
        ("alias:a\u{7f}", Some(LeaseIdProblem::ControlCharacter)),
        ("alias:a\u{85}", Some(LeaseIdProblem::ControlCharacter)),
        ("Alias:repo", Some(LeaseIdProblem::UnknownPrefix)),
        ("repo", Some(LeaseIdProblem::UnknownPrefix)),
        ("slot", Some(LeaseIdProblem::UnknownPrefix)),
        ("slot:01", None),
        ("slot:16", None),
        ("slot:00", Some(LeaseIdProblem::SlotOutOfRange)),
        ("slot:17", Some(LeaseIdProblem::SlotOutOfRange)),
        ("slot:99", Some(LeaseIdProblem::SlotOutOfRange)),
        ("slot:1", Some(LeaseIdProblem::SlotFormat)),
        ("slot:001", Some(LeaseIdProblem::SlotFormat)),
        ("slot:+1", Some(LeaseIdProblem::SlotFormat)),
        ("slot: 1", Some(LeaseIdProblem::SlotFormat)),
        ("slot:", Some(LeaseIdProblem::SlotFormat)),
    ];
    for (id, expected) in cases {
        assert_eq!(problem(id), expected, "{id:?}");
    }
    let err = LeaseId::parse("").unwrap_err();
    assert_eq!(err.code(), LeaseErrorCode::InvalidLeaseId);
}

#[test]
fn length_counts_characters_not_bytes() {
    // 250 three-byte characters: 256 characters, 756 bytes.
    let id = format!("alias:{}", "中".repeat(250));
    assert_eq!(problem(&id), None);
    let id = format!("alias:{}", "中".repeat(251));
    assert_eq!(problem(&id), Some(LeaseIdProblem::TooLong));
}

#[test]
fn aliases_are_verbatim() {
    let upper = LeaseId::alias("Foo").unwrap();
    let lower = LeaseId::alias("foo").unwrap();
    assert_ne!(upper.stem(), lower.stem());
    assert_eq!(upper.label(), "workdir Foo");
    assert_eq!(upper.slot_number(), None);
    assert_eq!(upper.to_string(), "alias:Foo");
    assert_eq!("alias:Foo".parse::<LeaseId>().unwrap(), upper);
}

#[test]
fn lease_key_picks_the_id() {
    assert_eq!(LeaseKey::default(), LeaseKey::Alias);
    assert_eq!(
        LeaseKey::Alias.lease_id("repo", Some(3)).unwrap().as_str(),
        "alias:repo"
    );
    assert_eq!(
        LeaseKey::Alias.lease_id("repo", None).unwrap().as_str(),
        "alias:repo"
    );
    assert_eq!(
        LeaseKey::Slot.lease_id("repo", Some(3)).unwrap().as_str(),
        "slot:03"
    );
    assert!(matches!(
        LeaseKey::Slot.lease_id("repo", None),
        Err(LeaseError::InvalidLeaseId {
            problem: LeaseIdProblem::MissingSlot
        })
    ));
    assert!(LeaseKey::Slot.lease_id("repo", Some(17)).is_err());
    assert!(LeaseKey::Alias.lease_id("a:b", None).is_err());
    for key in [LeaseKey::Alias, LeaseKey::Slot] {
        assert_eq!(key.as_str().parse::<LeaseKey>().unwrap(), key);
    }
    assert!("Alias".parse::<LeaseKey>().is_err());
}

#[test]
fn guard_name_recogniser() {
    let hex40 = "255b6be1a22d261f7c81e80e37b195e16c9212de";
    for name in ["01", "09", "10", "16", hex40] {
        assert!(is_guard_name(name), "{name}");
    }
    let upper = hex40.to_uppercase();
    let temp = format!(".{hex40}.0123456789abcdef.tmp");
    let long = format!("{hex40}0");
    for name in [
        "00",
        "17",
        "1",
        "001",
        "01.lock",
        &upper,
        &temp,
        &long,
        &hex40[..39],
        "",
        "zz",
    ] {
        assert!(!is_guard_name(name), "{name}");
    }
}

proptest! {
    #[test]
    fn property_valid_aliases_hash_to_guard_names(alias in "[^:/\\\\\\p{Cc}]{1,250}") {
        let id = LeaseId::alias(&alias).unwrap();
        prop_assert_eq!(id.as_str(), format!("alias:{alias}"));
        prop_assert_eq!(id.stem().len(), 40);
        prop_assert!(is_guard_name(id.stem()));
        prop_assert_eq!(LeaseId::parse(id.as_str()).unwrap(), id.clone());
        prop_assert_eq!(id.label(), format!("workdir {alias}"));
    }

    #[test]
    fn aliases_with_forbidden_characters_are_refused(
        head in "[a-z]{0,8}",
        bad in prop::sample::select(vec![':', '/', '\\', '\0', '\n', '\u{1b}', '\u{7f}']),
        tail in "[a-z]{0,8}",
    ) {
        let alias = format!("{head}{bad}{tail}");
        prop_assert!(LeaseId::alias(&alias).is_err());
    }
}
