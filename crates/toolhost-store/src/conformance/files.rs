//! Conformance cases for the thread file system: folders and files behave like a file system,
//! and large files are chunked and read back whole.

use super::{p, thread};
use crate::*;

/// Files: parents made on write, folders listed, the usual errors for the wrong kind of entry.
pub fn files_and_folders_behave_like_a_file_system(store: &dyn Store) {
    let t = thread(store);
    let w = |path: &str, bytes: &[u8]| Write::WriteFile {
        path: p(path),
        bytes: bytes.to_vec(),
        mime_type: Some("text/plain".into()),
        message_id: None,
    };
    store
        .apply(
            &t,
            vec![
                w("/notes/a.txt", b"alpha\nbeta"),
                w("/notes/deep/b.txt", b"gamma beta"),
                w("/top.md", b"# beta"),
            ],
        )
        .unwrap();
    assert_eq!(
        store.read_file(&t, &p("notes/a.txt")).unwrap(),
        b"alpha\nbeta"
    );
    let stat = store.stat(&t, &p("/notes/a.txt")).unwrap().unwrap();
    assert_eq!(
        (stat.size, stat.is_folder, stat.mime_type.as_deref()),
        (10, false, Some("text/plain"))
    );
    assert!(
        store
            .stat(&t, &p("/notes/deep"))
            .unwrap()
            .unwrap()
            .is_folder
    );
    let names: Vec<String> = store
        .readdir(&t, &p("/"))
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .collect();
    assert_eq!(names, ["/notes", "/top.md"]);
    let found: Vec<String> = store
        .find(&t, &p("/notes"), "*.txt")
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .collect();
    assert_eq!(found, ["/notes/a.txt", "/notes/deep/b.txt"]);
    let hits = store.grep(&t, &p("/"), "beta", 10).unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| (h.path.as_str(), h.line))
            .collect::<Vec<_>>(),
        [
            ("/notes/a.txt", 2),
            ("/notes/deep/b.txt", 1),
            ("/top.md", 1)
        ]
    );
    assert_eq!(store.grep(&t, &p("/"), "beta", 2).unwrap().len(), 2);

    assert!(matches!(
        store.apply(&t, vec![Write::Rmdir(p("/notes"))]),
        Err(StoreError::FolderNotEmpty(_))
    ));
    assert!(matches!(
        store.apply(&t, vec![w("/top.md/x", b"")]),
        Err(StoreError::NotAFolder(_))
    ));
    assert!(matches!(
        store.apply(&t, vec![w("/notes", b"")]),
        Err(StoreError::IsAFolder(_))
    ));
    assert!(matches!(
        store.read_file(&t, &p("/notes")),
        Err(StoreError::IsAFolder(_))
    ));
    assert!(matches!(
        store.read_file(&t, &p("/missing")),
        Err(StoreError::FileNotFound(_))
    ));
    assert!(matches!(
        store.apply(&t, vec![Write::Rmdir(p("/"))]),
        Err(StoreError::Root)
    ));

    store
        .apply(
            &t,
            vec![
                Write::Unlink(p("/notes/deep/b.txt")),
                Write::Rmdir(p("/notes/deep")),
                Write::Mkdir(p("/empty/inner")),
            ],
        )
        .unwrap();
    assert_eq!(store.stat(&t, &p("/notes/deep")).unwrap(), None);
    assert!(store.readdir(&t, &p("/empty/inner")).unwrap().is_empty());
    assert!(matches!(
        store.apply(&t, vec![Write::Unlink(p("/notes/deep/b.txt"))]),
        Err(StoreError::FileNotFound(_))
    ));
}

/// A file larger than one chunk reads back whole, and streams as several chunks in order.
pub fn large_files_are_chunked_and_read_back_whole(store: &dyn Store) {
    let t = thread(store);
    let big: Vec<u8> = (0..(CHUNK_SIZE * 2 + 12_345))
        .map(|i| (i % 251) as u8)
        .collect();
    store
        .apply(
            &t,
            vec![Write::WriteFile {
                path: p("/attachments/big.bin"),
                bytes: big.clone(),
                mime_type: None,
                message_id: None,
            }],
        )
        .unwrap();
    assert_eq!(
        store.read_file(&t, &p("/attachments/big.bin")).unwrap(),
        big
    );
    let mut chunks = Vec::new();
    let stat = store
        .stream_file(&t, &p("/attachments/big.bin"), &mut |c| {
            chunks.push(c.len())
        })
        .unwrap();
    assert_eq!(chunks, [CHUNK_SIZE, CHUNK_SIZE, 12_345]);
    assert_eq!(stat.size, big.len() as u64);
    // Chunk by chunk, each with the file's stat: chunk i starts at i * CHUNK_SIZE.
    let path = p("/attachments/big.bin");
    for (i, want) in big.chunks(CHUNK_SIZE).enumerate() {
        let (chunk_stat, bytes) = store.file_chunk(&t, &path, i as u64).unwrap();
        assert_eq!(chunk_stat, stat);
        assert_eq!(bytes.as_deref(), Some(want), "chunk {i}");
    }
    assert_eq!(store.file_chunk(&t, &path, 3).unwrap().1, None);
    assert_eq!(store.file_chunk(&t, &path, u64::MAX).unwrap().1, None);
    assert!(matches!(
        store.file_chunk(&t, &p("/attachments/none.bin"), 0),
        Err(StoreError::FileNotFound(_))
    ));
    // Overwriting with a smaller file leaves no stale chunk behind.
    store
        .apply(
            &t,
            vec![Write::WriteFile {
                path: p("/attachments/big.bin"),
                bytes: b"small".to_vec(),
                mime_type: None,
                message_id: None,
            }],
        )
        .unwrap();
    assert_eq!(
        store.read_file(&t, &p("/attachments/big.bin")).unwrap(),
        b"small"
    );
}
