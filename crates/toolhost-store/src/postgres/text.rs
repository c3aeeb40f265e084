//! Text PostgreSQL can hold. Its `text` cannot contain U+0000, which SQLite's can, and which a
//! program's output or a model's answer may carry: every text parameter the backend binds has
//! U+0000 replaced by U+FFFD (the replacement character) as it is encoded. Lookups are bound the
//! same way, so a key or an id is found again as it was written; what is read back carries
//! U+FFFD where U+0000 was. JSON is stored as text in which serde escapes U+0000, so it is kept
//! exactly.

use bytes::{BufMut, BytesMut};
use postgres::types::{IsNull, ToSql, Type};

/// What the replacement character is encoded as.
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// A parameter bound as itself, with U+0000 in its text replaced.
#[derive(Debug)]
struct Holdable<'a>(pub &'a (dyn ToSql + Sync));

impl ToSql for Holdable<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        let start = out.len();
        let is_null = self.0.to_sql_checked(ty, out)?;
        // Text is encoded as its UTF-8 bytes, where a zero byte is U+0000 and nothing else.
        if is_text(ty) && out[start..].contains(&0) {
            let encoded = out.split_off(start);
            for &byte in encoded.iter() {
                if byte == 0 {
                    out.put_slice(REPLACEMENT);
                } else {
                    out.put_u8(byte);
                }
            }
        }
        Ok(is_null)
    }

    /// The inner parameter's own check (in `to_sql_checked`) decides.
    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

fn is_text(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN
    )
}

/// `text` with U+0000 replaced, for text written into a statement rather than bound, or bound
/// inside an array (whose encoding is not rewritten: its headers hold zero bytes).
pub(super) fn holdable_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        text.replace('\0', "\u{FFFD}").into()
    } else {
        text.into()
    }
}

/// Runs `query` with `params`, each bound so that its text can be held.
pub(crate) fn with_holdable<T>(
    params: &[&(dyn ToSql + Sync)],
    query: impl FnOnce(&[&(dyn ToSql + Sync)]) -> T,
) -> T {
    let wrapped: Vec<Holdable<'_>> = params.iter().map(|p| Holdable(*p)).collect();
    let refs: Vec<&(dyn ToSql + Sync)> = wrapped.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
    query(&refs)
}
