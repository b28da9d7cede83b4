//! Test modules, plus the two assertions every wire test uses.

#[cfg(all(feature = "client", unix))]
mod client;
mod envelope;
mod errors;
mod events;
mod frame;
mod params;
mod results;
mod schema;

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// `value` encodes to exactly `json`, and `json` decodes to exactly `value`.
#[track_caller]
pub fn pin<T>(value: &T, json: Value)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    assert_eq!(serde_json::to_value(value).unwrap(), json, "encoding");
    assert_eq!(
        &serde_json::from_value::<T>(json).unwrap(),
        value,
        "decoding"
    );
}

/// `json` decodes to `value`, which encodes to `canonical` (absent and
/// `null` folding, defaults being written).
#[track_caller]
pub fn folds<T>(json: Value, value: &T, canonical: Value)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    assert_eq!(
        &serde_json::from_value::<T>(json).unwrap(),
        value,
        "decoding"
    );
    assert_eq!(serde_json::to_value(value).unwrap(), canonical, "encoding");
}

/// `json` does not decode as `T`.
#[track_caller]
pub fn refuses<T: DeserializeOwned + Debug>(json: Value) {
    let decoded = serde_json::from_value::<T>(json.clone());
    assert!(decoded.is_err(), "{json} decoded as {decoded:?}");
}

/// The object inside a `json!({...})` literal.
#[track_caller]
pub fn object(json: Value) -> Map<String, Value> {
    match json {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}
