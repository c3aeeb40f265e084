//! The tools of a project: the files under `agents/tools/`.
//!
//! One tool per file; the file stem is the tool's name. `*.json` files are blueprints (spec 004);
//! `*.js`, `*.mjs` and `*.ts` files are tools written as the spec writes them (see [`crate::js`]).
//! Files are read in name order so that output is stable. A file that cannot be read as a tool
//! becomes a [`FileProblem`] and the others still load.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use toolhost_core::blueprint::{Activities, Binding, Blueprint};
use toolhost_core::AnyTool;

/// The largest tool file read; larger ones are refused rather than read into memory.
pub const MAX_TOOL_FILE_BYTES: u64 = crate::files::MAX_FILE_BYTES;

/// A tool loaded from a file.
#[derive(Debug, Clone)]
pub struct LoadedTool {
    /// The file it came from.
    pub path: PathBuf,
    /// The blueprint as written.
    pub blueprint: Blueprint,
    /// Latent or bound to an activity.
    pub binding: Binding,
    /// The registered tool.
    pub tool: AnyTool,
}

/// A file that could not be loaded as a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The file.
    pub path: PathBuf,
    /// The tool name the file would have defined (its stem).
    pub tool: String,
    /// What is wrong, with JSON pointers where they apply.
    pub message: String,
    /// Whether the file itself loaded: then what is wrong is a name it refers to (a prompt, a
    /// model, a tool) that does not exist, and the file is kept; otherwise it was left out.
    pub loaded: bool,
}

impl FileProblem {
    /// A file that could not be loaded and was left out.
    pub fn not_loaded(path: PathBuf, name: &str, message: String) -> Self {
        Self {
            path,
            tool: name.to_owned(),
            message,
            loaded: false,
        }
    }

    /// A file that loaded but refers to something that does not exist.
    pub fn dangling(path: PathBuf, name: &str, message: String) -> Self {
        Self {
            path,
            tool: name.to_owned(),
            message,
            loaded: true,
        }
    }
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// Everything read from a project's `agents/tools/`.
#[derive(Debug, Clone, Default)]
pub struct ProjectTools {
    /// The tools that loaded, in file-name order.
    pub tools: Vec<LoadedTool>,
    /// Files that did not load.
    pub problems: Vec<FileProblem>,
}

impl ProjectTools {
    /// The loaded tool with this name.
    pub fn get(&self, name: &str) -> Option<&LoadedTool> {
        self.tools.iter().find(|t| t.tool.name() == name)
    }

    /// The problem of the file that would define this tool, if that file did not load.
    pub fn problem_for(&self, name: &str) -> Option<&FileProblem> {
        self.problems.iter().find(|p| p.tool == name)
    }
}

/// Why a project's tools could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The folder does not exist or is not a folder.
    #[error("{} is not a project folder: {source}", path.display())]
    NotAFolder {
        /// The folder given.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The project has no `agents/tools/` folder.
    #[error("{} has no agents/tools/ folder; a project keeps one tool per file there", path.display())]
    NoToolsFolder {
        /// The project folder.
        path: PathBuf,
    },
    /// The tools folder could not be listed.
    #[error("cannot list {}: {source}", path.display())]
    Unreadable {
        /// The tools folder.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
}

/// Reads and registers every tool file of the project at `root`, binding blueprints to the
/// given activities.
pub fn load_tools(root: &Path, activities: &Activities) -> Result<ProjectTools, ProjectError> {
    let meta = fs::metadata(root).map_err(|source| ProjectError::NotAFolder {
        path: root.to_owned(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(ProjectError::NotAFolder {
            path: root.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "it is a file"),
        });
    }
    let dir = root.join("agents").join("tools");
    if !dir.is_dir() {
        return Err(ProjectError::NoToolsFolder {
            path: root.to_owned(),
        });
    }
    let unreadable = |source| ProjectError::Unreadable {
        path: dir.clone(),
        source,
    };
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(unreadable)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        // Not `is_file`: a FIFO or device named like a tool is reported, not passed over.
        .filter(|p| !p.is_dir())
        .collect();
    paths.sort();

    let mut out = ProjectTools::default();
    for path in paths {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let problem = |message: String| FileProblem::not_loaded(path.clone(), &stem, message);
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => match load_blueprint(&path, &stem, activities) {
                Ok(tool) => out.tools.push(tool),
                Err(message) => out.problems.push(problem(message)),
            },
            Some("js" | "mjs" | "ts") => match load_js(root, &path, &stem) {
                Ok(tool) => out.tools.push(tool),
                Err(message) => out.problems.push(problem(message)),
            },
            _ => {}
        }
    }
    Ok(out)
}

/// A tool file written in JavaScript or TypeScript: what it declares, checked as a blueprint
/// is, bound to an activity that runs its `execute` (see [`crate::js`]).
fn load_js(root: &Path, path: &Path, stem: &str) -> Result<LoadedTool, String> {
    let declared = crate::js::JsTool::load(root, path, stem).map_err(|e| e.to_string())?;
    let blueprint = Blueprint::from_value(stem, &declared.blueprint).map_err(|e| e.to_string())?;
    let mut activities = Activities::new();
    let tool = std::sync::Arc::new(declared.tool);
    activities.register(stem, move |args, _meta, ctx| {
        let tool = tool.clone();
        async move { Ok::<_, toolhost_core::tool::ToolError>(tool.call(args, ctx).await) }
    });
    bound(path, blueprint, &activities)
}

fn load_blueprint(path: &Path, stem: &str, activities: &Activities) -> Result<LoadedTool, String> {
    let text = crate::files::read_text(path, MAX_TOOL_FILE_BYTES).map_err(|e| e.reason())?;
    let blueprint = Blueprint::parse(stem, &text).map_err(|e| e.to_string())?;
    // A named activity that is missing would leave a tool that can never run.
    if let Some(activity) = blueprint.meta.activity.as_deref().filter(|a| !a.is_empty()) {
        if !activities.contains(activity) {
            let file = path
                .parent()
                .and_then(Path::parent)
                .map(|agents| agents.join("activities").join(format!("{activity}.json")));
            let why = match file {
                Some(f) if f.is_file() => format!("its file {} did not load", f.display()),
                _ => "which is not in agents/activities/".to_owned(),
            };
            return Err(format!(
                "at /properties/_activity: names activity \"{activity}\", {why}"
            ));
        }
    }
    bound(path, blueprint, activities)
}

/// The tool of `blueprint` bound to `activities` (or latent), or its problems, each at its
/// pointer.
fn bound(path: &Path, blueprint: Blueprint, activities: &Activities) -> Result<LoadedTool, String> {
    let (tool, binding) = activities.bind(&blueprint).map_err(|e| {
        e.issues
            .iter()
            .map(|i| format!("at {}: {}", i.pointer, i.reason))
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    Ok(LoadedTool {
        path: path.to_owned(),
        blueprint,
        binding,
        tool,
    })
}
