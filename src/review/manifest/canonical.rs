//! Writing: the content's RFC 8785 canonical JSON (what the digest hashes), the manifest's
//! JSON text, the artifact attach input, and the digest of a manifest given as a JSON value
//! (`assertCodingPatchAccepted` recomputes it).
//!
//! The manifest's JSON text is `{"reviewId","createdAt","state","digest"` followed by the
//! canonical content members, so the content is serialized once for both.

use super::finish::Parts;
use super::model::{ArtifactInput, Content};
use crate::error::{PrismError, Result};
use crate::json;
use crate::review::canon::{write_int, write_object_value, write_str, write_u64};
use serde::{ser, Serialize};
use serde_json::{Map, Value};

/// The four members the digest does not bind.
pub const UNBOUND_MEMBERS: [&str; 4] = ["digest", "reviewId", "createdAt", "state"];

/// RFC 8785 canonical JSON of the content: [`Content`] serialized compactly, whose members
/// are declared in canonical order (see model.rs; a test checks it against a general
/// canonicalizer), through [`Canonical`].
pub(super) fn canonical_json(c: &Content<'_>) -> Result<Vec<u8>> {
    let text: usize = c
        .changed_paths
        .iter()
        .map(|p| p.path.as_str().len() + 3)
        .sum::<usize>()
        + c.diffstat
            .iter()
            .map(|r| r.file.as_str().len() + 48)
            .sum::<usize>()
        + c.diagnostics
            .iter()
            .map(|g| g.file.as_str().len() + 64)
            .sum::<usize>();
    let mut w = Canonical {
        out: Vec::with_capacity(text + 4096),
    };
    c.serialize(&mut w)
        .map_err(|e| PrismError::internal(format!("serialising the manifest failed: {}", e.0)))?;
    Ok(w.out)
}

/// A compact JSON writer over serde's data model for the manifest's value space (structs,
/// sequences, strings, integers): strings go through [`write_str`], which copies the common
/// string that needs no escaping at once (serde_json inspects every byte: 3-5x slower on a
/// manifest's paths), and escapes the others exactly as RFC 8785 does. Members are written in
/// declaration order; anything outside that space (floats, maps, bytes, enum payloads) is an
/// error.
struct Canonical {
    out: Vec<u8>,
}

/// Why a value cannot be written canonically.
#[derive(Debug)]
struct Unsupported(String);

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Unsupported(msg.to_string())
    }
}

fn unsupported<T>(what: &str) -> std::result::Result<T, Unsupported> {
    Err(Unsupported(format!(
        "{what} is outside the manifest's value space"
    )))
}

type Done = std::result::Result<(), Unsupported>;

impl<'a> ser::Serializer for &'a mut Canonical {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = ser::Impossible<(), Unsupported>;
    type SerializeMap = ser::Impossible<(), Unsupported>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = ser::Impossible<(), Unsupported>;

    fn serialize_bool(self, v: bool) -> Done {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Done {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Done {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Done {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Done {
        write_int(&mut self.out, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Done {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Done {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Done {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Done {
        write_u64(&mut self.out, v);
        Ok(())
    }
    fn serialize_f32(self, _: f32) -> Done {
        unsupported("a float")
    }
    fn serialize_f64(self, _: f64) -> Done {
        unsupported("a float")
    }
    fn serialize_char(self, v: char) -> Done {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Done {
        write_str(&mut self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Done {
        unsupported("bytes")
    }
    fn serialize_none(self) -> Done {
        self.serialize_unit()
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Done {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Done {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Done {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Done {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, v: &T) -> Done {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Done {
        unsupported("an enum payload")
    }
    fn serialize_seq(self, _: Option<usize>) -> std::result::Result<Compound<'a>, Unsupported> {
        Ok(Compound::open(self, b'[', b']'))
    }
    fn serialize_tuple(self, _: usize) -> std::result::Result<Compound<'a>, Unsupported> {
        Ok(Compound::open(self, b'[', b']'))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Compound<'a>, Unsupported> {
        Ok(Compound::open(self, b'[', b']'))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeTupleVariant, Unsupported> {
        unsupported("an enum payload")
    }
    fn serialize_map(
        self,
        _: Option<usize>,
    ) -> std::result::Result<Self::SerializeMap, Unsupported> {
        unsupported("a map")
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Compound<'a>, Unsupported> {
        Ok(Compound::open(self, b'{', b'}'))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self::SerializeStructVariant, Unsupported> {
        unsupported("an enum payload")
    }
}

/// An array or object being written: commas between entries, the closing bracket at the end.
struct Compound<'a> {
    w: &'a mut Canonical,
    first: bool,
    close: u8,
}

impl<'a> Compound<'a> {
    fn open(w: &'a mut Canonical, open: u8, close: u8) -> Self {
        w.out.push(open);
        Self {
            w,
            first: true,
            close,
        }
    }

    fn next(&mut self) {
        if !self.first {
            self.w.out.push(b',');
        }
        self.first = false;
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, v: &T) -> Done {
        self.next();
        v.serialize(&mut *self.w)
    }
    fn end(self) -> Done {
        self.w.out.push(self.close);
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, v: &T) -> Done {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Done {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, v: &T) -> Done {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Done {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Unsupported;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, v: &T) -> Done {
        self.next();
        write_str(&mut self.w.out, key);
        self.w.out.push(b':');
        v.serialize(&mut *self.w)
    }
    fn end(self) -> Done {
        self.w.out.push(self.close);
        Ok(())
    }
}

/// The manifest's JSON text before the content members.
pub(super) fn review_prefix(review_id: &str, created_at: &str, digest: &str) -> Vec<u8> {
    let mut o = Vec::with_capacity(review_id.len() + created_at.len() + 160);
    o.extend_from_slice(b"{\"reviewId\":");
    write_str(&mut o, review_id);
    o.extend_from_slice(b",\"createdAt\":");
    write_str(&mut o, created_at);
    o.extend_from_slice(b",\"state\":\"pending\",\"digest\":");
    write_str(&mut o, digest);
    o.push(b',');
    o
}

fn utf8(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes)
        .map_err(|e| PrismError::internal(format!("manifest JSON is not UTF-8: {e}")))
}

impl Parts<'_> {
    /// The structural artifact attach input (without `preview`), as @arnilo/prism builds it.
    pub fn artifact_input(&self) -> ArtifactInput<'_> {
        let c = &self.content;
        ArtifactInput {
            thread_id: c.thread_id.as_str(),
            id: c.artifact_id.as_str(),
            uri: c.patch.uri.as_str(),
            mime: format!("application/x-{}", c.patch.kind.as_str()),
            hash: c.patch.sha256.as_str(),
            size: c.patch.bytes,
            title: c.title.as_ref().map_or_else(
                || format!("Coding patch review {}", self.review_id),
                |t| t.as_str().to_string(),
            ),
            change_note: format!("head {} over base {}", c.head.as_str(), c.base.as_str()),
        }
    }

    fn artifact_input_json(&self) -> Result<String> {
        serde_json::to_string(&self.artifact_input())
            .map_err(|e| PrismError::internal(format!("serialising artifact input failed: {e}")))
    }

    /// The manifest's JSON text.
    pub fn review_json(&self) -> Result<String> {
        let mut o = Vec::with_capacity(self.manifest_bytes());
        o.extend_from_slice(&self.prefix);
        o.extend_from_slice(self.canonical.get(1..).unwrap_or_default());
        utf8(o)
    }

    /// The JSON text path's result: the artifact input's JSON text without `preview`, a
    /// newline (JSON text never holds a raw newline, so the first one separates), and the
    /// manifest's JSON text. The short part comes first so the reader finds the newline at once.
    pub fn binding_text(&self) -> Result<String> {
        let head = self.artifact_input_json()?;
        let mut out = String::with_capacity(self.manifest_bytes() + head.len() + 1);
        out.push_str(&head);
        out.push('\n');
        out.push_str(&self.review_json()?);
        Ok(out)
    }

    /// The columns path's result: `{"a":A,"r":R}`, `A` the artifact input's JSON text
    /// without `preview`, `R` the manifest's JSON text with `changedPaths`, `diagnostics` and
    /// `diffstat` empty (the caller fills them from its own copies, in place).
    pub fn small_json(&mut self) -> Result<String> {
        let head = self.artifact_input_json()?;
        let c = &mut self.content;
        let lists = (
            std::mem::take(&mut c.changed_paths),
            std::mem::take(&mut c.diffstat),
            std::mem::take(&mut c.diagnostics),
        );
        let rest = canonical_json(c);
        (c.changed_paths, c.diffstat, c.diagnostics) = lists;
        let rest = rest?;
        let mut o = Vec::with_capacity(head.len() + self.prefix.len() + rest.len() + 16);
        o.extend_from_slice(b"{\"a\":");
        o.extend_from_slice(head.as_bytes());
        o.extend_from_slice(b",\"r\":");
        o.extend_from_slice(&self.prefix);
        o.extend_from_slice(rest.get(1..).unwrap_or_default());
        o.push(b'}');
        utf8(o)
    }
}

/// The digest of a manifest given as a JSON object: lowercase hex SHA-256 of the RFC 8785
/// canonical JSON of the object without [`UNBOUND_MEMBERS`]. Equal to
/// `json::canonical_digest` of a copy with those members removed, without the copy.
pub fn digest_of_manifest_value(manifest: &Map<String, Value>) -> String {
    // Fast path: the manifest value space (strings, safe integers) written directly.
    let mut out = Vec::with_capacity(4096);
    if write_object_value(&mut out, manifest, &UNBOUND_MEMBERS) {
        return json::sha256_hex(&out);
    }
    let mut copy = manifest.clone();
    for k in UNBOUND_MEMBERS {
        copy.remove(k);
    }
    json::canonical_digest(&Value::Object(copy))
}
