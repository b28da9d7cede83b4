//! The published JSON Schemas of the Bridge protocol.
//!
//! The crate commits them under `schema/`; a test regenerates and diffs
//! them (`UPDATE_SCHEMA=1 cargo test -p serverfs-protocol` refreshes).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};

use super::envelope::{Request, Response};
use super::error::BridgeErrorCode;
use super::event::BridgeEvent;
use super::method::BridgeMethod;

/// The root schema of `T` (draft 2020-12), with only its own definitions.
pub(crate) fn schema_for<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// Every published schema as `(file name, schema)`, in a fixed order:
/// the request and response envelopes, the event, the error codes, then
/// each method's `<method>.params.json` and `<method>.result.json`.
pub fn json_schemas() -> Vec<(String, Schema)> {
    let mut schemas = vec![
        ("request.json".to_owned(), schema_for::<Request>()),
        ("response.json".to_owned(), schema_for::<Response>()),
        ("event.json".to_owned(), schema_for::<BridgeEvent>()),
        (
            "error_code.json".to_owned(),
            schema_for::<BridgeErrorCode>(),
        ),
    ];
    for method in BridgeMethod::ALL {
        schemas.push((
            format!("{}.params.json", method.as_str()),
            method.params_schema(),
        ));
        schemas.push((
            format!("{}.result.json", method.as_str()),
            method.result_schema(),
        ));
    }
    schemas
}
