//! Where a call's result is remembered (spec 004's `_outputPath`): the path's grammar, shared by
//! a blueprint that fixes one and the runtime that follows it.

/// The most segments a path may have.
const MAX_SEGMENTS: usize = 32;

/// The segments of a path, or why it is not one.
pub fn output_path_segments(text: &str) -> Result<Vec<String>, String> {
    let segments: Vec<String> = match text.strip_prefix('/') {
        Some(pointer) => pointer
            .split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect(),
        None => text.split('.').map(str::to_owned).collect(),
    };
    if segments.iter().any(String::is_empty) {
        return Err(format!(
            "`_outputPath` {text:?} has an empty segment (write `a.b` or `/a/b`)"
        ));
    }
    if segments.len() > MAX_SEGMENTS {
        return Err(format!(
            "`_outputPath` {text:?} has more than {MAX_SEGMENTS} segments"
        ));
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_dotted_or_pointers_without_empty_segments() {
        assert_eq!(output_path_segments("a.b").unwrap(), ["a", "b"]);
        assert_eq!(output_path_segments("/a~1b/c~0").unwrap(), ["a/b", "c~"]);
        for bad in ["", ".", "a..b", "/", "/a//b", "a."] {
            assert!(output_path_segments(bad).is_err(), "{bad}");
        }
        let deep = vec!["x"; MAX_SEGMENTS + 1].join(".");
        assert!(output_path_segments(&deep)
            .unwrap_err()
            .contains("more than"));
    }
}
