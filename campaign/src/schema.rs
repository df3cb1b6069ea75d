//! JSON Schemas of the campaign types (feature `schema`), shaped for a Kubernetes
//! structural schema: the operator generates its `BenchmarkCampaign` CRD from them.
//!
//! The types whose serde form is custom get hand-written schemas here: sizes, durations
//! and quantities are `x-kubernetes-int-or-string` (`64KiB` or `65536`), a `List` (its schema is in `spec`) is a
//! list (a structural schema cannot say "a value or a list", and an untyped field would be
//! neither checked nor visible to CEL; so list-valued fields are lists everywhere, and
//! `pqbench run` refuses a single value as the API server does), and modes and backends
//! are string enums of their names.

use std::borrow::Cow;

use envelope::{Backend, Mode};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::cluster::Quantity;
use crate::units::{Dur, Size};

impl JsonSchema for Size {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Size".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "x-kubernetes-int-or-string": true,
            "description": "A size: bytes, or a number with a unit (64KiB, 1MiB, 2GB)."
        })
    }
}

impl JsonSchema for Dur {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "x-kubernetes-int-or-string": true,
            "description": "A duration: seconds, or a number with a unit (500ms, 20s, 5m, 1h)."
        })
    }
}

impl JsonSchema for Quantity {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Quantity".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "x-kubernetes-int-or-string": true,
            "description": "A Kubernetes quantity (500m, 2, 4Gi)."
        })
    }
}

fn names(all: impl IntoIterator<Item = &'static str>) -> Vec<&'static str> {
    all.into_iter().collect()
}

/// `baseline`: one mode name.
pub(crate) fn mode(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "enum": names(Mode::ALL.iter().map(|m| m.name())),
    })
}

/// `modes`: mode names.
pub(crate) fn modes(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": names(Mode::ALL.iter().map(|m| m.name())) },
    })
}

/// `backends`: backend names.
pub(crate) fn backends(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": names(Backend::EVERY.iter().map(|b| b.name())) },
    })
}

/// `arms[].backend`: a crypto backend or `remote`.
pub(crate) fn arm_backend(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "enum": names(Backend::EVERY.iter().map(|b| b.name()).chain(["remote"])),
    })
}

/// `server.cpus`, `clients.cpus`: a count, a quoted CPU list or `none`.
pub(crate) fn cpus(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-int-or-string": true,
        "description": "CPUs: a count (1), a quoted CPU list as `taskset -c` takes it (\"1\", \"0-3,8\"), or none. On Kubernetes a count is the pod's whole-CPU request = limit (Guaranteed QoS); a list stands for its length."
    })
}

/// A pod-spec object passed through as given (`affinity`).
pub(crate) fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}
