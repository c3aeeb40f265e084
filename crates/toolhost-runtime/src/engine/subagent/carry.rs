//! Attachments across threads (spec 001 §7): the files a sub-agent's session ends with (its
//! `sessionStop` binding's `attachmentsProperty`) are paths in the child's file system; before
//! the parent is given them they are copied into the parent's, under
//! `/attachments/subagents/CHILD_ID/` followed by the child's path, so every reference the parent
//! receives names one of its own files. The other way, the files a call passes to the child it
//! starts (`initAttachmentsProperty`) are copied into the child under `/attachments/parent/`,
//! in the transaction that creates it. A path that is not a file of the sending thread is
//! refused and nothing is passed on.

use super::super::state::ThreadState;
use super::super::subprompt::attachment_paths;
use super::super::{Runtime, RuntimeError};
use crate::project::SubagentToolConfig;
use serde_json::Value;
use toolhost_core::result::AttachmentRefType;
use toolhost_core::AttachmentRef;
use toolhost_store::path::{normalize, FsPath};
use toolhost_store::{new_id, Write};

/// Where a file of `child` at `path` lands in its parent's file system.
pub(super) fn parent_path(child: &str, path: &FsPath) -> Result<FsPath, String> {
    normalize(&format!("/attachments/subagents/{child}{}", path.as_str()))
        .map_err(|e| format!("attachment \"{path}\": {e}"))
}

/// Where a file of the parent at `path` lands in its child's file system.
pub(super) fn child_path(path: &FsPath) -> Result<FsPath, String> {
    normalize(&format!("/attachments/parent{}", path.as_str()))
        .map_err(|e| format!("attachment \"{path}\": {e}"))
}

/// The files one thread passes to another: a reference to each copy, and the writes that make
/// the copies in the receiving thread.
type Copies = (Vec<AttachmentRef>, Vec<Write>);

impl Runtime {
    /// Copies the files at `paths` of `child` into `parent` (see the module page) and returns a
    /// reference to each copy; or why one of them cannot be passed on.
    pub(super) async fn carry_up(
        &self,
        child: &str,
        parent: &str,
        paths: &[String],
    ) -> Result<Result<Vec<AttachmentRef>, String>, RuntimeError> {
        let (refs, writes) = match self
            .copies(child, paths, |p| parent_path(child, p), "the sub-agent's")
            .await?
        {
            Ok(copies) => copies,
            Err(why) => return Ok(Err(why)),
        };
        if !writes.is_empty() {
            // The same files are written again when a crash makes the call run again.
            self.services.db.apply(parent, writes).await?;
        }
        Ok(Ok(refs))
    }

    /// The files a call of an agent tool passes to the child it starts (the argument its
    /// `initAttachmentsProperty` names, a list of paths of the calling thread): the lines that
    /// name them in the child's first message, and the writes that copy them into the child
    /// under `/attachments/parent/`; or why one of them cannot be passed on.
    pub(super) async fn carry_down(
        &self,
        state: &ThreadState,
        config: &SubagentToolConfig,
        args: &Value,
    ) -> Result<Result<(String, Vec<Write>), String>, RuntimeError> {
        let Some(property) = &config.init_attachments_property else {
            return Ok(Ok((String::new(), Vec::new())));
        };
        let paths = match attachment_paths(args, property) {
            Ok(paths) => paths,
            Err(why) => return Ok(Err(why)),
        };
        let (refs, writes) = match self
            .copies(state.thread_id(), &paths, child_path, "this thread's")
            .await?
        {
            Ok(copies) => copies,
            Err(why) => return Ok(Err(why)),
        };
        let listed = refs
            .iter()
            .map(|r| {
                format!(
                    "\n\nAttached: {} ({}, {} bytes)",
                    r.path, r.mime_type, r.size
                )
            })
            .collect();
        Ok(Ok((listed, writes)))
    }

    /// Reads the files at `paths` of `from` and makes the writes that copy each to where `to`
    /// puts it; a path that is not a file of `from` (`whose` names it) is refused.
    async fn copies(
        &self,
        from: &str,
        paths: &[String],
        to: impl Fn(&FsPath) -> Result<FsPath, String>,
        whose: &str,
    ) -> Result<Result<Copies, String>, RuntimeError> {
        let mut refs = Vec::with_capacity(paths.len());
        let mut writes = Vec::with_capacity(paths.len());
        for path in paths {
            let source = match normalize(path) {
                Ok(p) => p,
                Err(e) => return Ok(Err(format!("attachment \"{path}\": {e}"))),
            };
            let stat = match self.services.db.stat(from, &source).await? {
                Some(s) if !s.is_folder => s,
                _ => {
                    return Ok(Err(format!(
                    "attachment \"{path}\" is not a file of {whose} thread; nothing was passed on"
                )))
                }
            };
            let target = match to(&source) {
                Ok(t) => t,
                Err(why) => return Ok(Err(why)),
            };
            let bytes = self.services.db.read_file(from, &source).await?;
            let mime_type = stat
                .mime_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            refs.push(AttachmentRef {
                id: new_id(),
                kind: AttachmentRefType::File,
                path: target.as_str().to_owned(),
                name: source
                    .as_str()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
                mime_type: mime_type.clone(),
                size: stat.size,
                width: None,
                height: None,
                description: None,
            });
            writes.push(Write::WriteFile {
                path: target,
                bytes,
                mime_type: Some(mime_type),
                message_id: None,
            });
        }
        Ok(Ok((refs, writes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_file_lands_under_its_id_in_the_parent() {
        let from = normalize("/attachments/call_1/map.png").unwrap();
        assert_eq!(
            parent_path("c-1", &from).unwrap().as_str(),
            "/attachments/subagents/c-1/attachments/call_1/map.png"
        );
        assert_eq!(
            child_path(&from).unwrap().as_str(),
            "/attachments/parent/attachments/call_1/map.png"
        );
    }
}
