use super::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A new project folder with `files` (path, content) written in it.
fn project(files: &[(&str, &str)]) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let root = std::env::temp_dir().join(format!(
        "toolhost-catalog-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&root);
    for (path, content) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    std::fs::create_dir_all(&root).unwrap();
    root
}

/// The one problem loading `files` gives.
fn refusal(files: &[(&str, &str)]) -> String {
    let root = project(files);
    let (_, problems) = load_mcp_catalog(&root);
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(problems.len(), 1, "{problems:?}");
    problems[0].message.clone()
}

#[test]
fn prompts_and_resources_load_with_their_parts() {
    let root = project(&[
        (
            "agents/mcp-prompts/review.json",
            r#"{"description": "Reviews a file.",
                "arguments": [{"name": "file", "required": true, "values": ["a.rs", "b.rs"]}],
                "messages": [
                  {"role": "user", "text": ["Review ", {"argument": "file"}, "."]},
                  {"role": "user", "image": "logo.png"},
                  {"role": "assistant", "resource": "docs://guide"},
                  {"role": "user", "tool": "summarize_file"}
                ]}"#,
        ),
        ("agents/mcp-prompts/logo.png", "not really a png"),
        (
            "agents/mcp-resources/guide.json",
            r#"{"uri": "docs://guide", "description": "The guide.", "text": "Read me."}"#,
        ),
        (
            "agents/mcp-resources/user.json",
            r#"{"uriTemplate": "db://users/{id}", "description": "A user.", "tool": "lookup_user", "mimeType": "application/json"}"#,
        ),
    ]);
    let (catalog, problems) = load_mcp_catalog(&root);
    assert!(problems.is_empty(), "{problems:?}");
    let review = &catalog.prompts["review"];
    assert_eq!(review.arguments[0].values, ["a.rs", "b.rs"]);
    assert_eq!(
        review.messages[0].content,
        MessageContent::Text(vec![
            TextPart::Literal("Review ".into()),
            TextPart::Argument("file".into()),
            TextPart::Literal(".".into()),
        ])
    );
    assert!(matches!(
        &review.messages[1].content,
        MessageContent::Image { mime_type, .. } if mime_type == "image/png"
    ));
    assert_eq!(review.messages[2].role, Role::Assistant);
    assert_eq!(
        review.messages[3].content,
        MessageContent::Tool("summarize_file".into())
    );
    assert_eq!(
        catalog.resource("docs://guide").map(|r| &r.source),
        Some(&ResourceSource::Text("Read me.".into()))
    );
    let (user, values) = catalog.templated("db://users/a%20b").unwrap();
    assert_eq!(user.mime_type, "application/json");
    assert_eq!(values["id"], "a b");
    assert!(catalog.templated("db://users/a/b").is_none());
    assert!(catalog.resource("db://users/{id}").is_none());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn each_refusal_names_the_field() {
    let prompt = |body: &str| refusal(&[("agents/mcp-prompts/p.json", body)]);
    assert!(prompt(
        r#"{"description": "d", "messages": [{"role": "user", "text": "x"}], "extra": 1}"#
    )
    .contains("field `extra`"));
    assert!(prompt(r#"{"messages": [{"role": "user", "text": "x"}]}"#).contains("`description`"));
    assert!(prompt(r#"{"description": "d", "messages": []}"#).contains("`messages` is empty"));
    let undeclared = prompt(
        r#"{"description": "d", "messages": [{"role": "user", "text": [{"argument": "who"}]}]}"#,
    );
    assert!(
        undeclared.contains("`messages/0`/text") && undeclared.contains("\"who\""),
        "{undeclared}"
    );
    assert!(
        prompt(r#"{"description": "d", "messages": [{"role": "system", "text": "x"}]}"#)
            .contains("`messages/0`/role")
    );
    assert!(prompt(
        r#"{"description": "d", "messages": [{"role": "user", "text": "x", "image": "a.png"}]}"#
    )
    .contains("exactly one"));
    assert!(prompt(r#"{"description": "d", "arguments": [{"name": "a"}, {"name": "a"}], "messages": [{"role": "user", "text": "x"}]}"#)
        .contains("declared twice"));
    assert!(prompt(
        r#"{"description": "d", "messages": [{"role": "user", "text": "x", "tool": "t"}]}"#
    )
    .contains("exactly one"));
    assert!(prompt(
        r#"{"description": "d", "messages": [{"role": "user", "tool": "t"}, {"role": "user", "tool": "u"}]}"#
    )
    .contains("2 messages made by a tool"));
    let escape = prompt(
        r#"{"description": "d", "messages": [{"role": "user", "image": "../../secret.png"}]}"#,
    );
    assert!(
        escape.contains("/image") && escape.contains("no `..`"),
        "{escape}"
    );

    let resource = |body: &str| refusal(&[("agents/mcp-resources/r.json", body)]);
    assert!(resource(r#"{"description": "d", "text": "x"}"#).contains("`uri`"));
    assert!(resource(r#"{"uri": "plain", "description": "d", "text": "x"}"#).contains("no scheme"));
    assert!(resource(
        r#"{"uri": "toolhost://threads/t/files/a", "description": "d", "text": "x"}"#
    )
    .contains("toolhost's own"));
    assert!(
        resource(r#"{"uri": "a://b", "description": "d", "text": "x", "file": "f"}"#)
            .contains("exactly one")
    );
    assert!(
        resource(r#"{"uriTemplate": "a://{x}{y}", "description": "d", "tool": "t"}"#)
            .contains("follow each other")
    );
    assert!(
        resource(r#"{"uriTemplate": "a://fixed", "description": "d", "tool": "t"}"#)
            .contains("at least one")
    );
    assert!(
        resource(r#"{"uriTemplate": "a://{x}", "description": "d", "text": "t"}"#)
            .contains("read by a `tool`")
    );
    assert!(
        resource(r#"{"uri": "a://b", "description": "d", "file": "data.bin"}"#)
            .contains("cannot be read")
    );
}

#[test]
fn two_resources_may_not_claim_one_uri() {
    let message = refusal(&[
        (
            "agents/mcp-resources/a.json",
            r#"{"uri": "docs://x", "description": "d", "text": "1"}"#,
        ),
        (
            "agents/mcp-resources/b.json",
            r#"{"uri": "docs://x", "description": "d", "text": "2"}"#,
        ),
    ]);
    assert!(message.contains("served by a.json already"), "{message}");
}

#[cfg(unix)]
#[test]
fn a_link_out_of_the_definitions_folder_is_refused() {
    let outside = project(&[("secret.txt", "do not serve")]);
    let root = project(&[(
        "agents/mcp-resources/r.json",
        r#"{"uri": "docs://x", "description": "d", "file": "link.txt"}"#,
    )]);
    std::os::unix::fs::symlink(
        outside.join("secret.txt"),
        root.join("agents/mcp-resources/link.txt"),
    )
    .unwrap();
    let (catalog, problems) = load_mcp_catalog(&root);
    assert!(catalog.resources.is_empty());
    assert!(
        problems[0]
            .message
            .contains("leads out of the definition's folder"),
        "{problems:?}"
    );
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn a_template_value_is_one_segment_and_each_occurrence_of_the_next_literal_is_tried() {
    let template = UriTemplate::parse("docs://{name}.md").unwrap();
    assert_eq!(template.matches("docs://a.md.md").unwrap()["name"], "a.md");
    assert_eq!(template.matches("docs://a%20b.md").unwrap()["name"], "a b");
    for refused in [
        "docs://a/b.md",
        "docs://a%2Fb.md",
        "docs://a%2fb.md",
        "docs://a?x.md",
        "docs://a%3Fx.md",
        "docs://a%+Fb.md",
        "docs://.md",
        "docs://a.txt",
    ] {
        assert!(template.matches(refused).is_none(), "{refused}");
    }
    let two = UriTemplate::parse("db://{table}/{id}").unwrap();
    let values = two.matches("db://users/7").unwrap();
    assert_eq!(
        (values["table"].as_str(), values["id"].as_str()),
        ("users", "7")
    );
    assert!(UriTemplate::parse("docs://a}b/{x}").is_err());
    assert!(UriTemplate::parse("docs://{x}/a}").is_err());
    assert!(UriTemplate::parse("docs://{x").is_err());
}

#[cfg(unix)]
#[test]
fn a_file_swapped_for_a_link_after_loading_is_not_read() {
    let outside = project(&[("secret.txt", "do not serve")]);
    let root = project(&[
        (
            "agents/mcp-resources/r.json",
            r#"{"uri": "docs://x", "description": "d", "file": "notes.txt"}"#,
        ),
        ("agents/mcp-resources/notes.txt", "notes"),
    ]);
    let (catalog, problems) = load_mcp_catalog(&root);
    assert!(problems.is_empty(), "{problems:?}");
    let ResourceSource::File(file) = &catalog.resources["r"].source else {
        panic!("a file resource");
    };
    assert_eq!(file.read(100).unwrap(), b"notes");
    let notes = root.join("agents/mcp-resources/notes.txt");
    std::fs::remove_file(&notes).unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), &notes).unwrap();
    let refused = file.read(100).unwrap_err();
    assert!(
        matches!(refused, DefinitionFileError::OutsideFolder),
        "{refused:?}"
    );
    let refused = refused.to_string();
    assert!(
        refused.contains("leads out of the definition's folder"),
        "{refused}"
    );
    assert!(
        !refused.contains("secret"),
        "the reason names no path: {refused}"
    );
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn a_file_elsewhere_in_the_project_is_not_beside_the_definition() {
    let message = refusal(&[
        (
            "agents/mcp-resources/r.json",
            r#"{"uri": "docs://x", "description": "d", "file": "data/../../../toolhost.toml"}"#,
        ),
        ("toolhost.toml", "[server]"),
    ]);
    assert!(
        message.contains("`file`") && message.contains("no `..`"),
        "{message}"
    );
    let literal = refusal(&[(
        "agents/mcp-prompts/p.json",
        r#"{"description": "d", "messages": [{"role": "user", "resource": "no scheme"}]}"#,
    )]);
    assert!(
        literal.contains("`messages/0`/resource") && literal.contains("no scheme"),
        "{literal}"
    );
}
