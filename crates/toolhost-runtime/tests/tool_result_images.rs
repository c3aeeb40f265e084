//! A tool result's images reach the model with the result: inline image blocks and stored image
//! attachments, read back from the thread's files; other attachments do not. Images no API
//! takes, and images past the per-request cap (the oldest), are named in the text instead.

mod common;

use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel, Project};
use serde_json::Value;
use std::sync::Arc;
use toolhost_core::tool::{DynamicTool, ToolError};
use toolhost_core::{NewAttachment, ToolContent, ToolResult};
use toolhost_runtime::engine::{Runtime, MAX_IMAGES_PER_REQUEST};
use toolhost_store::Store;

/// The eight bytes of a PNG signature, base64-encoded.
const PNG: &str = "iVBORw0KGgo=";

#[tokio::test]
async fn images_of_a_result_are_sent_with_it() {
    let mut result = ToolResult::success("two pictures and a log")
        .with_attachment(attachment("photo.png", "image/png", PNG))
        .with_attachment(attachment("log.txt", "text/plain", "aGVsbG8="));
    result.content = Some(vec![
        ToolContent::Text {
            text: "two pictures and a log".into(),
        },
        ToolContent::Image {
            data: PNG.into(),
            mime_type: "image/png".into(),
        },
    ]);
    let (rt, store, model, _project) = snapping(result).await;
    let thread = rt.start_thread("a", "take a picture").await.unwrap();
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

/// A new attachment of `data` (base64).
fn attachment(name: &str, mime_type: &str, data: &str) -> NewAttachment {
    NewAttachment {
        name: name.into(),
        mime_type: mime_type.into(),
        data: data.into(),
        width: None,
        height: None,
    }
}

/// A runtime whose model calls `snap` once, which returns `result`, and then replies; with its
/// store, its model and its project folder (removed when dropped).
async fn snapping(result: ToolResult) -> (Runtime, Arc<dyn Store>, Arc<ListModel>, Project) {
    let project = one_prompt_project(&["snap"]);
    let model = ListModel::new(vec![call_answer("w1", "snap", "{}"), text_answer("Seen.")]);
    let (mut rt, store) = runtime_on(&project, model.clone()).await;
    rt.register_tool(
        DynamicTool::new("snap", "Takes pictures.")
            .handler(move |_: Value, _| {
                let result = result.clone();
                async move { Ok::<_, ToolError>(result) }
            })
            .build()
            .unwrap(),
    );
    (rt, store, model, project)
}

#[tokio::test]
async fn images_no_api_takes_and_images_past_the_cap_are_named_instead() {
    let mut content = vec![ToolContent::Text {
        text: "many pictures".into(),
    }];
    content.extend((0..MAX_IMAGES_PER_REQUEST + 3).map(|_| ToolContent::Image {
        data: PNG.into(),
        mime_type: "image/png".into(),
    }));
    let mut result = ToolResult::success("many pictures").with_attachment(attachment(
        "drawing.svg",
        "image/svg+xml",
        "PHN2Zy8+",
    ));
    result.content = Some(content);
    let (rt, _store, model, _project) = snapping(result).await;
    let thread = rt.start_thread("a", "take pictures").await.unwrap();
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

#[tokio::test]
async fn an_image_block_an_api_would_refuse_makes_the_result_an_error_naming_the_block() {
    for (data, mime_type, why) in [
        ("not-base64!", "image/png", "not valid base64"),
        // Valid base64 of bytes that are not a JPEG.
        (
            PNG,
            "image/jpeg",
            "bytes are not of the type it claims (image/jpeg)",
        ),
        (PNG, "image/bmp", "not a type models take"),
    ] {
        let mut result = ToolResult::success("a chart");
        result.content = Some(vec![
            ToolContent::Text {
                text: "a chart".into(),
            },
            ToolContent::Image {
                data: data.into(),
                mime_type: mime_type.into(),
            },
        ]);
        let (rt, store, model, _project) = snapping(result).await;
        let thread = rt.start_thread("a", "draw").await.unwrap();
        rt.run(&thread.id).await.unwrap();

        // The result is stored as an error that names the block; nothing of the image is kept.
        let stored = store
            .messages(&thread.id)
            .unwrap()
            .into_iter()
            .find(|m| m.tool_call_id.is_some())
            .unwrap();
        assert_eq!(stored.status, Some(toolhost_store::ToolStatus::Error));
        let text = stored.content.clone().unwrap();
        assert!(text.contains("content block 2 (image)"), "{text}");
        assert!(text.contains(why), "{text}");
        assert!(stored.metadata.result.unwrap().content.is_none());
        // The next request carries no image, so the API has nothing to refuse.
        let second = &model.requests()[1];
        let sent = second.iter().find(|m| m.tool_call_id.is_some()).unwrap();
        assert!(sent.images.is_empty());
    }
}

#[tokio::test]
async fn an_image_attachment_whose_bytes_are_not_its_type_is_named_instead_of_sent() {
    // "hello" is not a PNG, whatever the attachment says.
    let result = ToolResult::success("a picture").with_attachment(attachment(
        "fake.png",
        "image/png",
        "aGVsbG8=",
    ));
    let (rt, _store, model, _project) = snapping(result).await;
    let thread = rt.start_thread("a", "take a picture").await.unwrap();
    rt.run(&thread.id).await.unwrap();
    let second = &model.requests()[1];
    let sent = second.iter().find(|m| m.tool_call_id.is_some()).unwrap();
    assert!(sent.images.is_empty());
    let text = sent.content.as_deref().unwrap();
    assert!(
        text.contains(
            "[image fake.png not shown: its bytes are not of the type it claims (image/png)]"
        ),
        "{text}"
    );
}
