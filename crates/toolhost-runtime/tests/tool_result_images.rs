//! A tool result's images reach the model with the result: inline image blocks and stored image
//! attachments, read back from the thread's files; other attachments do not. Images no API
//! takes, and images past the per-request cap (the oldest), are named in the text instead.

mod common;

use common::{ListModel, Project};
use serde_json::Value;
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{NewAttachment, ToolContent, ToolResult};
use toolhost_providers::{ModelResponse, ModelToolCall};
use toolhost_runtime::engine::{Runtime, MAX_IMAGES_PER_REQUEST};
use toolhost_store::{SqliteStore, Store};

/// The eight bytes of a PNG signature, base64-encoded.
const PNG: &str = "iVBORw0KGgo=";

#[tokio::test]
async fn images_of_a_result_are_sent_with_it() {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Look.", "model": "list", "tools": ["snap"]}"#,
        ),
    ]);
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store.clone()).unwrap();
    let model = ListModel::new(vec![
        Ok(ModelResponse {
            tool_calls: vec![ModelToolCall {
                id: "w1".into(),
                name: "snap".into(),
                arguments: "{}".into(),
            }],
            ..ModelResponse::default()
        }),
        Ok(ModelResponse {
            text: Some("I see it.".into()),
            ..ModelResponse::default()
        }),
    ]);
    rt.register_model("list", model.clone());
    rt.register_tool(
        DynamicTool::new("snap", "Takes a picture.")
            .handler(|_: Value, _| async move {
                let mut result = ToolResult::success("two pictures and a log")
                    .with_attachment(NewAttachment {
                        name: "photo.png".into(),
                        mime_type: "image/png".into(),
                        data: PNG.into(),
                        width: None,
                        height: None,
                    })
                    .with_attachment(NewAttachment {
                        name: "log.txt".into(),
                        mime_type: "text/plain".into(),
                        data: "aGVsbG8=".into(),
                        width: None,
                        height: None,
                    });
                result.content = Some(vec![
                    ToolContent::Text {
                        text: "two pictures and a log".into(),
                    },
                    ToolContent::Image {
                        data: PNG.into(),
                        mime_type: "image/png".into(),
                    },
                ]);
                Ok::<_, ToolError>(result)
            })
            .build()
            .unwrap(),
    );
    let thread = rt.start_thread("a", "take a picture").unwrap();
    rt.run(&thread.id).await.unwrap();

    let second = &model.requests()[1];
    let result = second.iter().find(|m| m.tool_call_id.is_some()).unwrap();
    let images: Vec<(&str, &str, &str)> = result
        .images
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.mime_type.as_str(),
                i.data_base64.as_str(),
            )
        })
        .collect();
    assert_eq!(
        images,
        [
            ("image 1", "image/png", PNG),
            ("photo.png", "image/png", PNG)
        ]
    );
    // The text attachment stays a stored file.
    let files = store
        .find(
            &thread.id,
            &toolhost_store::path::normalize("/attachments").unwrap(),
            "*",
        )
        .unwrap();
    let stored: Vec<&str> = files
        .iter()
        .filter(|f| !f.is_folder)
        .map(|f| f.path.rsplit('/').next().unwrap())
        .collect();
    assert_eq!(stored, ["log.txt", "photo.png"]);
}

/// A runtime whose `snap` tool returns `result`, and the model it runs on.
fn snapping(project: &Project, result: ToolResult) -> (Runtime, Arc<ListModel>) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&project.root.join("t.db")).unwrap());
    let mut rt = Runtime::load(&project.root, store).unwrap();
    let model = ListModel::new(vec![
        Ok(ModelResponse {
            tool_calls: vec![ModelToolCall {
                id: "w1".into(),
                name: "snap".into(),
                arguments: "{}".into(),
            }],
            ..ModelResponse::default()
        }),
        Ok(ModelResponse {
            text: Some("Seen.".into()),
            ..ModelResponse::default()
        }),
    ]);
    rt.register_model("list", model.clone());
    rt.register_tool(
        DynamicTool::new("snap", "Takes pictures.")
            .handler(move |_: Value, _| {
                let result = result.clone();
                async move { Ok::<_, ToolError>(result) }
            })
            .build()
            .unwrap(),
    );
    (rt, model)
}

#[tokio::test]
async fn images_no_api_takes_and_images_past_the_cap_are_named_instead() {
    let project = Project::with_files(&[
        (
            "agents/agents/a.json",
            r#"{"type": "ai_human", "sideA": {"prompt": "p"}}"#,
        ),
        (
            "agents/prompts/p.json",
            r#"{"toolDescription": "x", "prompt": "Look.", "model": "list", "tools": ["snap"]}"#,
        ),
    ]);
    let mut content = vec![ToolContent::Text {
        text: "many pictures".into(),
    }];
    content.extend((0..MAX_IMAGES_PER_REQUEST + 3).map(|_| ToolContent::Image {
        data: PNG.into(),
        mime_type: "image/png".into(),
    }));
    let mut result = ToolResult::success("many pictures").with_attachment(NewAttachment {
        name: "drawing.svg".into(),
        mime_type: "image/svg+xml".into(),
        data: "PHN2Zy8+".into(),
        width: None,
        height: None,
    });
    result.content = Some(content);
    let (rt, model) = snapping(&project, result);
    let thread = rt.start_thread("a", "take pictures").unwrap();
    rt.run(&thread.id).await.unwrap();

    let second = &model.requests()[1];
    let result = second.iter().find(|m| m.tool_call_id.is_some()).unwrap();
    assert_eq!(result.images.len(), MAX_IMAGES_PER_REQUEST);
    // The most recent images are kept: the first three are named instead.
    assert_eq!(result.images[0].name, "image 4");
    let text = result.content.as_deref().unwrap();
    assert!(
        text.contains("[image drawing.svg not shown: image/svg+xml is not a type models take"),
        "{text}"
    );
    for k in 1..=3 {
        assert!(
            text.contains(&format!(
                "[image image {k} not shown: only the most recent images are sent]"
            )),
            "{text}"
        );
    }
}
