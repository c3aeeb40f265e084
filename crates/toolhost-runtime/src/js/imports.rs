//! The modules a tool file runs with: the file itself, the files of the project's `agents/`
//! folder it imports with relative specifiers (and what those import, transitively), and
//! toolhost's own modules for `@standardagents/spec`, `@standardagents/builder` and `zod`.
//!
//! Each project file is named by its path from the project folder (`agents/tools/x.js`), the
//! name the sandbox resolves relative specifiers against. A relative import that leaves
//! `agents/`, or names a file that cannot be read, is refused at load with the importing file
//! and the specifier.

use super::strip::strip_types;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// toolhost's modules, by the specifier a tool file imports them with.
pub(super) const OWN_MODULES: [(&str, &str); 4] = [
    ("@standardagents/spec", include_str!("modules/spec.js")),
    (
        "@standardagents/builder",
        include_str!("modules/builder.js"),
    ),
    ("zod", include_str!("modules/zod.js")),
    ("toolhost:internal", include_str!("modules/internal.js")),
];

/// The most project files one tool may pull in.
const MAX_MODULES: usize = 64;

/// The modules of the tool file at `path` of the project at `root`, by name, and the name of
/// the tool file's own module.
pub(super) fn gather(
    root: &Path,
    path: &Path,
) -> Result<(BTreeMap<String, String>, String), String> {
    let mut modules: BTreeMap<String, String> = OWN_MODULES
        .iter()
        .map(|(name, source)| ((*name).to_owned(), (*source).to_owned()))
        .collect();
    let entry = name_of(root, path)?;
    let mut pending = vec![(path.to_owned(), entry.clone())];
    while let Some((file, name)) = pending.pop() {
        if modules.contains_key(&name) {
            continue;
        }
        if modules.len() >= MAX_MODULES + OWN_MODULES.len() {
            return Err(format!(
                "it imports more than {MAX_MODULES} files of the project"
            ));
        }
        let mut source = read_module(&file)?;
        if name == entry {
            source = with_spec_names(&source);
        }
        for specifier in relative_imports(&source) {
            let target = resolve(root, &file, &specifier)
                .map_err(|why| format!("{name} imports \"{specifier}\", which {why}"))?;
            let target_name = name_of(root, &target)?;
            pending.push((target, target_name));
        }
        modules.insert(name, source);
    }
    Ok((modules, entry))
}

/// The names the spec's examples use from toolhost's modules, and the module of each. The
/// spec's snippets leave their import lines out; a tool file pasted from them works as it is.
const SPEC_NAMES: [(&str, &str); 4] = [
    ("defineTool", "@standardagents/spec"),
    ("z", "zod"),
    ("queueTool", "@standardagents/builder"),
    ("emitThreadEvent", "@standardagents/builder"),
];

/// `source` with an import of each of [`SPEC_NAMES`] it uses but neither imports nor declares,
/// added in front of its first line (so that every line keeps its number).
fn with_spec_names(source: &str) -> String {
    let words: Vec<&str> = source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
        .collect();
    let bound = |name: &str| {
        let mut importing = false;
        words.windows(2).any(|pair| {
            match pair[0] {
                "import" => importing = true,
                "from" => importing = false,
                _ => {}
            }
            let declares = matches!(pair[0], "const" | "let" | "var" | "function" | "class");
            (importing || declares) && pair[1] == name
        })
    };
    let added: String = SPEC_NAMES
        .iter()
        .filter(|(name, _)| words.contains(name) && !bound(name))
        .map(|(name, module)| format!("import {{ {name} }} from '{module}'; "))
        .collect();
    format!("{added}{source}")
}

/// A module file's JavaScript: TypeScript is stripped of its types.
fn read_module(path: &Path) -> Result<String, String> {
    let text = crate::files::read_text(path, crate::project::MAX_TOOL_FILE_BYTES)
        .map_err(|e| e.reason())?;
    if path.extension().is_some_and(|e| e == "ts" || e == "mts") {
        return strip_types(&text).map_err(|e| format!("{}: {e}", path.display()));
    }
    Ok(text)
}

/// The module name of a project file: its path from the project folder, with `/`.
fn name_of(root: &Path, path: &Path) -> Result<String, String> {
    let relative = path
        .strip_prefix(root)
        .map_err(|_| format!("{} is outside the project", path.display()))?;
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok(parts.join("/"))
}

/// Where `specifier`, imported by `from`, points: a file inside the project's `agents/`.
fn resolve(root: &Path, from: &Path, specifier: &str) -> Result<PathBuf, String> {
    let agents = root.join("agents");
    let mut at = from.parent().unwrap_or(root).to_owned();
    for part in Path::new(specifier).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !at.pop() {
                    return Err("leaves the project".to_owned());
                }
            }
            Component::Normal(p) => at.push(p),
            Component::RootDir | Component::Prefix(_) => {
                return Err("is not relative".to_owned());
            }
        }
    }
    let outside =
        || "is outside the project's agents/ folder; a tool imports only files there".to_owned();
    if !at.starts_with(&agents) {
        return Err(outside());
    }
    if !at.is_file() {
        return Err("is not a file".to_owned());
    }
    // A link inside agents/ may not lead out of it.
    let real = at
        .canonicalize()
        .map_err(|e| format!("cannot be read: {e}"))?;
    let real_agents = agents
        .canonicalize()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !real.starts_with(&real_agents) {
        return Err(outside());
    }
    Ok(at)
}

/// The relative specifiers of a module's static imports and re-exports (`from './x.js'`,
/// `import './x.js'`). Bare specifiers are toolhost's own modules or refused when the module
/// runs; a dynamic `import()` of a relative file is refused then too.
fn relative_imports(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = source.as_bytes();
    for keyword in ["from", "import"] {
        let mut start = 0;
        while let Some(at) = source[start..].find(keyword) {
            let end = start + at + keyword.len();
            start = end;
            let before_ok =
                start - keyword.len() == 0 || !is_ident(bytes[start - keyword.len() - 1]);
            if !before_ok {
                continue;
            }
            let rest = source[end..].trim_start();
            let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                continue;
            };
            let Some(close) = rest[1..].find(quote) else {
                continue;
            };
            let specifier = &rest[1..1 + close];
            if specifier.starts_with("./") || specifier.starts_with("../") {
                found.push(specifier.to_owned());
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_without_its_imports_gets_them_on_its_first_line() {
        let snippet = "export default defineTool({\n  args: z.object({}),\n});\n";
        let with = with_spec_names(snippet);
        assert_eq!(
            with,
            format!(
                "import {{ defineTool }} from '@standardagents/spec'; import {{ z }} from 'zod'; {snippet}"
            )
        );
        assert_eq!(with.lines().count(), snippet.lines().count());
        // What is imported, or declared by the file itself, is left alone.
        let imported = "import {\n  defineTool,\n} from '@standardagents/spec';\nconst z = 1;\nexport default defineTool({ z });\n";
        assert_eq!(with_spec_names(imported), imported);
        let neither = "export default { description: 'x' };\n";
        assert_eq!(with_spec_names(neither), neither);
    }

    #[test]
    fn the_relative_specifiers_of_static_imports_are_found() {
        let source = r#"
            import { defineTool } from '@standardagents/spec';
            import helper, { other } from "./helper.js";
            import '../lib/setup.js';
            export { x } from './x.js';
            const imported = 1; // not an import
        "#;
        assert_eq!(
            relative_imports(source),
            vec!["../lib/setup.js", "./helper.js", "./x.js"]
        );
    }
}
