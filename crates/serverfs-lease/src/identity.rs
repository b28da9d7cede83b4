//! Lease identity: which lock artifact serialises writers of one workdir.
//!
//! The rules are spec-agent-bridge.md §8.1 and spec-mcp-filesystem.md §10.2.
//! Both processes derive artifact names from the id independently, so the
//! derivation here is the whole interoperability contract: the test vectors
//! are pinned byte for byte.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::error::{LeaseError, LeaseIdProblem};

/// Longest accepted lease id, counted in characters (spec §8.1).
const MAX_ID_CHARS: usize = 256;
/// Hex characters of SHA-256 kept in an alias artifact stem (spec §8.1).
const ALIAS_STEM_HEX: usize = 40;
/// Legacy Compose deployments number their workdirs `01`..`16`.
const SLOTS: std::ops::RangeInclusive<u8> = 1..=16;

const SLOT_PREFIX: &str = "slot:";
const ALIAS_PREFIX: &str = "alias:";

/// The identity of one workdir's writer lease: `slot:NN` (legacy Compose
/// slot, `NN` = `01`..`16`) or `alias:<exact alias>`.
///
/// A value of this type has passed every validation rule, and carries its
/// artifact [`stem`](LeaseId::stem), computed once.
///
/// # Security
///
/// The stem is either two digits or 40 lowercase hex characters, so an
/// artifact name derived from it can never contain a separator, `..`, or
/// anything the alias text would smuggle in (spec §8.1: aliases are hashed
/// precisely so that `Foo` and `foo` stay distinct on case-folding
/// filesystems and `..` is a harmless name).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LeaseId {
    id: String,
    stem: String,
    slot: Option<u8>,
}

impl LeaseId {
    /// Parses and validates a full lease id (`slot:NN` or `alias:<alias>`).
    ///
    /// # Errors
    ///
    /// `INVALID_LEASE_ID` when the id is empty, longer than 256 characters,
    /// contains a control character, `/` or `\`, has an unknown prefix, a
    /// slot other than exactly two digits in `01`..`16`, or an empty alias or
    /// one containing `:`.
    pub fn parse(id: &str) -> Result<LeaseId, LeaseError> {
        if id.is_empty() {
            return Err(LeaseError::invalid_id(LeaseIdProblem::Empty));
        }
        if id.chars().count() > MAX_ID_CHARS {
            return Err(LeaseError::invalid_id(LeaseIdProblem::TooLong));
        }
        if id.chars().any(char::is_control) {
            return Err(LeaseError::invalid_id(LeaseIdProblem::ControlCharacter));
        }
        if id.contains(['/', '\\']) {
            return Err(LeaseError::invalid_id(LeaseIdProblem::Separator));
        }
        if let Some(digits) = id.strip_prefix(SLOT_PREFIX) {
            let slot = parse_slot_digits(digits)?;
            Ok(LeaseId {
                id: id.to_owned(),
                stem: digits.to_owned(),
                slot: Some(slot),
            })
        } else if let Some(alias) = id.strip_prefix(ALIAS_PREFIX) {
            if alias.is_empty() {
                return Err(LeaseError::invalid_id(LeaseIdProblem::EmptyAlias));
            }
            if alias.contains(':') {
                return Err(LeaseError::invalid_id(LeaseIdProblem::AliasColon));
            }
            Ok(LeaseId {
                id: id.to_owned(),
                stem: alias_stem(id),
                slot: None,
            })
        } else {
            Err(LeaseError::invalid_id(LeaseIdProblem::UnknownPrefix))
        }
    }

    /// The lease id of a legacy Compose slot (`1` → `slot:01`).
    ///
    /// # Errors
    ///
    /// `INVALID_LEASE_ID` when `slot` is outside `1..=16`.
    pub fn slot(slot: u8) -> Result<LeaseId, LeaseError> {
        if !SLOTS.contains(&slot) {
            return Err(LeaseError::invalid_id(LeaseIdProblem::SlotOutOfRange));
        }
        let stem = format!("{slot:02}");
        Ok(LeaseId {
            id: format!("{SLOT_PREFIX}{stem}"),
            stem,
            slot: Some(slot),
        })
    }

    /// The lease id of a workdir alias, used verbatim: no trimming, no case
    /// folding (`Foo` and `foo` are different leases).
    ///
    /// # Errors
    ///
    /// `INVALID_LEASE_ID` under the rules of [`LeaseId::parse`].
    pub fn alias(alias: &str) -> Result<LeaseId, LeaseError> {
        LeaseId::parse(&format!("{ALIAS_PREFIX}{alias}"))
    }

    /// The lease of a configured workdir, as both processes derive it: the
    /// slot lease `slot:NN` for a workdir configured through a legacy
    /// container slot (the layout a legacy deployment shares), the alias
    /// lease otherwise (spec-mcp-filesystem.md §10.2).
    ///
    /// # Errors
    ///
    /// `INVALID_LEASE_ID` for an invalid slot or alias.
    pub fn of_workdir(alias: &str, legacy_slot: Option<u8>) -> Result<LeaseId, LeaseError> {
        match legacy_slot {
            Some(slot) => LeaseId::slot(slot),
            None => LeaseId::alias(alias),
        }
    }

    /// The sixteen legacy slot leases `slot:01`..`slot:16`, in order. A
    /// Bridge that must interoperate with a legacy MCP container pre-creates
    /// all of them (spec §8.2).
    pub fn legacy_slots() -> impl Iterator<Item = LeaseId> {
        SLOTS.filter_map(|slot| LeaseId::slot(slot).ok())
    }

    /// The full id, e.g. `alias:repo`.
    pub fn as_str(&self) -> &str {
        &self.id
    }

    /// The artifact stem: `NN` for a slot lease (the legacy layout), else the
    /// first 40 hex characters of SHA-256 of the UTF-8 id.
    pub fn stem(&self) -> &str {
        &self.stem
    }

    /// The slot number of a slot lease; `None` for an alias lease.
    pub fn slot_number(&self) -> Option<u8> {
        self.slot
    }

    /// The human label used in messages: `workdir slot NN` or
    /// `workdir <alias>` (spec §8.1). Never a host path.
    pub fn label(&self) -> String {
        match (self.slot, self.id.strip_prefix(ALIAS_PREFIX)) {
            (Some(_), _) => format!("workdir slot {}", self.stem),
            (None, Some(alias)) => format!("workdir {alias}"),
            // Unreachable by construction (every non-slot id was built from
            // the alias prefix); the full id is still a safe label.
            (None, None) => format!("workdir {}", self.id),
        }
    }

    /// The lock artifact's file name inside the lock directory,
    /// `<stem>.lock`.
    pub fn lock_file_name(&self) -> String {
        format!("{}.lock", self.stem)
    }
}

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

impl fmt::Debug for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LeaseId({:?})", self.id)
    }
}

impl FromStr for LeaseId {
    type Err = LeaseError;

    fn from_str(id: &str) -> Result<LeaseId, LeaseError> {
        LeaseId::parse(id)
    }
}

/// `NN` exactly two ASCII digits in `01`..`16` (so `1`, `001`, `+1` and
/// `١٢` are all refused, not normalised).
fn parse_slot_digits(digits: &str) -> Result<u8, LeaseError> {
    let well_formed = digits.len() == 2 && digits.bytes().all(|b| b.is_ascii_digit());
    let slot = digits.parse::<u8>().ok().filter(|_| well_formed);
    match slot {
        Some(slot) if SLOTS.contains(&slot) => Ok(slot),
        Some(_) => Err(LeaseError::invalid_id(LeaseIdProblem::SlotOutOfRange)),
        None => Err(LeaseError::invalid_id(LeaseIdProblem::SlotFormat)),
    }
}

fn alias_stem(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    let mut hex = String::with_capacity(2 * digest.len());
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    hex.truncate(ALIAS_STEM_HEX);
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether a directory entry of `active/` names a recovery guard: exactly two
/// digits in `01`..`16`, or exactly 40 lowercase hex characters (spec §8.1).
/// Temporary files, `.lock` files and junk are not guards.
pub fn is_guard_name(name: &str) -> bool {
    if name.len() == 2 {
        return parse_slot_digits(name).is_ok();
    }
    name.len() == ALIAS_STEM_HEX && name.bytes().all(|b| HEX.contains(&b))
}

/// Which lease id a deployment keys its workdirs by. One switch for the
/// whole configuration, never mixed per workdir: the two processes derive
/// artifact names independently, and a mix would let them lock different
/// files while both report success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LeaseKey {
    /// `alias:<exact alias>` — the native layout, and this product's
    /// default.
    #[default]
    Alias,
    /// `slot:NN` — legacy Compose deployments (`01.lock`..`16.lock`).
    Slot,
}

impl LeaseKey {
    /// The configuration spelling: `"alias"` or `"slot"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseKey::Alias => "alias",
            LeaseKey::Slot => "slot",
        }
    }

    /// The lease id of a workdir under this key. With [`LeaseKey::Alias`] a
    /// legacy slot, if any, plays no part; with [`LeaseKey::Slot`] the slot
    /// is required.
    ///
    /// # Errors
    ///
    /// `INVALID_LEASE_ID` when the alias or slot is invalid, or when the key
    /// is `slot` and the workdir has no slot.
    pub fn lease_id(self, alias: &str, legacy_slot: Option<u8>) -> Result<LeaseId, LeaseError> {
        match (self, legacy_slot) {
            (LeaseKey::Alias, _) => LeaseId::alias(alias),
            (LeaseKey::Slot, Some(slot)) => LeaseId::slot(slot),
            (LeaseKey::Slot, None) => Err(LeaseError::invalid_id(LeaseIdProblem::MissingSlot)),
        }
    }
}

impl FromStr for LeaseKey {
    type Err = LeaseError;

    fn from_str(key: &str) -> Result<LeaseKey, LeaseError> {
        match key {
            "alias" => Ok(LeaseKey::Alias),
            "slot" => Ok(LeaseKey::Slot),
            _ => Err(LeaseError::invalid_id(LeaseIdProblem::UnknownKey)),
        }
    }
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
