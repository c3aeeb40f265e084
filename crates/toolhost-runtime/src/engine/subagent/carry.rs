//! Attachments across threads (spec 001 §7): the files a sub-agent's session ends with (its
//! `sessionStop` binding's `attachmentsProperty`) are paths in the child's file system; before
//! the parent is given them they are copied into the parent's, under
//! `/attachments/subagents/CHILD_ID/` followed by the child's path, so every reference the parent
//! receives names one of its own files. A path that is not a file of the child is refused and
//! nothing is passed on.

use super::super::{Runtime, RuntimeError};
use toolhost_core::result::AttachmentRefType;
use toolhost_core::AttachmentRef;
use toolhost_store::path::{normalize, FsPath};
use toolhost_store::{new_id, Write};

/// Where a file of `child` at `path` lands in its parent's file system.
pub(super) fn parent_path(child: &str, path: &FsPath) -> Result<FsPath, String> {
    normalize(&format!("/attachments/subagents/{child}{}", path.as_str()))
        .map_err(|e| format!("attachment \"{path}\": {e}"))
}

impl Runtime {
    /// Copies the files at `paths` of `child` into `parent` (see the module page) and returns a
    /// reference to each copy; or why one of them cannot be passed on.
    pub(super) async fn carry_up(
        &self,
        child: &str,
        parent: &str,
        paths: &[String],
    ) -> Result<Result<Vec<AttachmentRef>, String>, RuntimeError> {
        let mut refs = Vec::with_capacity(paths.len());
        let mut writes = Vec::with_capacity(paths.len());
        for path in paths {
            let from = match normalize(path) {
                Ok(p) => p,
                Err(e) => return Ok(Err(format!("attachment \"{path}\": {e}"))),
            };
            let stat = match self.db.stat(child, &from).await? {
                Some(s) if !s.is_folder => s,
                _ => {
                    return Ok(Err(format!(
                        "attachment \"{path}\" is not a file of the sub-agent's thread; nothing was passed on"
                    )))
                }
            };
            let to = match parent_path(child, &from) {
                Ok(to) => to,
                Err(why) => return Ok(Err(why)),
            };
            let bytes = self.db.read_file(child, &from).await?;
            let mime_type = stat
                .mime_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".to_owned());
            refs.push(AttachmentRef {
                id: new_id(),
                kind: AttachmentRefType::File,
                path: to.as_str().to_owned(),
                name: from
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
                path: to,
                bytes,
                mime_type: Some(mime_type),
                message_id: None,
            });
        }
        if !writes.is_empty() {
            // The same files are written again when a crash makes the call run again.
            self.db.apply(parent, writes).await?;
        }
        Ok(Ok(refs))
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
    }
}
