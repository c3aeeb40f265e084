//! Pages of `tools/list`.

use rmcp::ErrorData as McpError;

/// The most tools one page of `tools/list` holds.
pub const TOOLS_PAGE_SIZE: usize = 50;

/// The names of one page of `tools/list` out of `sorted`, and the cursor of the next page (none
/// after the last). A cursor is opaque to clients; it is the last name of the page before, so a
/// tool added or removed between pages neither repeats nor skips another. A cursor this server
/// never gave is an invalid-params error.
pub(super) fn page<'a>(
    sorted: &'a [String],
    cursor: Option<&str>,
    size: usize,
) -> Result<(&'a [String], Option<String>), McpError> {
    let start = match cursor {
        None => 0,
        Some(cursor) => {
            let Some(after) = cursor.strip_prefix("after:") else {
                return Err(McpError::invalid_params(
                    format!("cursor {cursor:?} was not given by this server"),
                    None,
                ));
            };
            sorted.partition_point(|name| name.as_str() <= after)
        }
    };
    let end = (start + size).min(sorted.len());
    let next = (end < sorted.len()).then(|| format!("after:{}", sorted[end - 1]));
    Ok((&sorted[start..end], next))
}

#[cfg(test)]
mod tests {
    use super::page;

    #[test]
    fn pages_cover_every_tool_once_and_the_last_has_no_cursor() {
        let names: Vec<String> = (0..7).map(|i| format!("tool_{i}")).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (names, next) = page(&names, cursor.as_deref(), 3).unwrap();
            seen.extend(names.iter().cloned());
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, names);
        let (all, next) = page(&names, None, 50).unwrap();
        assert_eq!((all.len(), next), (7, None));
        // A tool removed between pages does not shift the next page.
        let fewer: Vec<String> = names.iter().filter(|n| *n != "tool_1").cloned().collect();
        let (rest, _) = page(&fewer, Some("after:tool_2"), 3).unwrap();
        assert_eq!(rest, ["tool_3", "tool_4", "tool_5"]);
        assert!(page(&names, Some("bogus"), 3).is_err());
    }
}
