//! Field presence on the Bridge wire: absent, `null`, or a value.
//!
//! Every optional field of a Bridge type takes exactly one of three shapes,
//! chosen per field and pinned by the wire tests:
//!
//! | shape | Rust | decodes | encodes `None` as |
//! |---|---|---|---|
//! | required, nullable | `Option<T>` + `deserialize_with = "Option::deserialize"` | key must be present; `null` is `None` | `null` |
//! | optional, nullable | `Option<T>` + `default` | absent or `null` is `None` | absent |
//! | optional, not nullable | `Option<T>` + `default` + `deserialize_with = "present"` (`present_value` for free-form JSON) | absent is `None`; `null` is refused | absent |
//!
//! `deserialize_with = "Option::deserialize"` makes serde require the key
//! (serde only defaults a missing `Option` field when no custom deserializer
//! is given); the matching `#[schemars(with = "Nullable<T>")]` publishes it
//! as required and nullable. Not-nullable fields publish `T`'s schema with
//! `#[schemars(with = "T")]`.

use std::borrow::Cow;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};
use serde_json::Value;

/// Decodes a field that may be absent but, when present, must not be `null`.
///
/// Pair with `#[serde(default)]` so absence yields `None`; a `null` value
/// then reaches `T::deserialize` and is refused as a type error.
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// [`present`] for free-form JSON: `Value` itself accepts `null`, so refuse
/// it explicitly.
pub(crate) fn present_value<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Null => Err(de::Error::invalid_type(
            de::Unexpected::Unit,
            &"any JSON value but null",
        )),
        value => Ok(Some(value)),
    }
}

/// `skip_serializing_if` helper: `false` flags are written as absence.
pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

/// The JSON literal `true`, and nothing else.
///
/// Fields such as `resolved` and `accepted` are constant on the wire; this
/// type encodes them so that a `false` (or any other value) fails to decode
/// instead of being silently carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LiteralTrue;

impl Serialize for LiteralTrue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(true)
    }
}

impl<'de> Deserialize<'de> for LiteralTrue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if bool::deserialize(deserializer)? {
            Ok(LiteralTrue)
        } else {
            Err(de::Error::invalid_value(
                de::Unexpected::Bool(false),
                &"the literal true",
            ))
        }
    }
}

impl JsonSchema for LiteralTrue {
    fn schema_name() -> Cow<'static, str> {
        "LiteralTrue".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "boolean", "const": true })
    }
}

/// Schema only: a field that must be present and may be `null`.
///
/// schemars publishes an `Option` field either as optional or (with
/// `required`) as non-nullable; this type gives the third shape.
pub(crate) struct Nullable<T>(PhantomData<T>);

impl<T: JsonSchema> JsonSchema for Nullable<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Nullable_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<Option<T>>()
    }
}
