//! Reading a project folder (the layout of DESIGN.md, mirroring the spec's auto-discovery):
//!
//! ```text
//! agents/tools/        one tool per file (*.json blueprints)
//! agents/activities/   process activities (*.json)
//! agents/prompts/      prompt definitions (*.json, the spec's camelCase field names)
//! agents/agents/       agent definitions (*.json: ai_human or dual_ai)
//! agents/models/       model definitions (*.json)
//! agents/mcp-prompts/  prompts served to MCP clients (*.json, see `mcp_catalog`)
//! agents/mcp-resources/ resources served to MCP clients (*.json, see `mcp_catalog`)
//! ```
//! Every file's stem is its name. A file that cannot be read becomes a [`FileProblem`] naming
//! the file and what is wrong; the other files still load. A file that loads but names
//! something that does not exist is a [`FileProblem`] too, marked as loaded. Whether an agent
//! can run despite them is decided when a thread of it starts
//! (`Runtime::check_agent`): only the definitions it reaches count.

mod agent;
mod agent_tools;
mod definitions;
mod files_seen;
mod includes;
mod mcp_catalog;
mod offers;
mod prompt;
mod prompt_tools;
mod tools;

pub use agent::{AgentDef, AgentKind, SessionBinding, SideDef};
pub use agent_tools::{agent_tool, MAX_SUBAGENT_DEPTH, SUBAGENT_CREATE, SUBAGENT_MESSAGE};
pub(crate) use definitions::json_files;
pub use definitions::{load_definitions, Definitions, ModelDef, ModelDefError, DEFAULT_MAX_STEPS};
pub use files_seen::ProjectFiles;
pub use includes::{MAX_INCLUDE_DEPTH, MAX_PROMPT_BYTES, MAX_PROMPT_PARTS};
pub use mcp_catalog::{
    load_mcp_catalog, media_type, percent_decoded, DefinitionFile, DefinitionFileError, McpCatalog,
    McpPromptDef, McpResourceDef, MessageContent, PromptArgument, PromptMessage, ResourceSource,
    Role, TemplateError, TextPart, UriTemplate, MAX_COMPLETION_VALUES, PROMPTS_DIR, RESOURCES_DIR,
};
pub use offers::{
    Immediate, ParentCommunication, ReceivingSide, Resumable, SubagentToolConfig, SubpromptConfig,
    ToolOffer,
};
pub use prompt::{PromptDef, PromptPart, ToolChoice, DEFAULT_RECENT_IMAGE_THRESHOLD};
pub use prompt_tools::{
    prompt_tool, prompt_tool_schema, DEFAULT_MESSAGE_PROPERTY, MAX_SUBPROMPT_DEPTH,
};
pub use tools::{
    load_tools, FileProblem, LoadedTool, ProjectError, ProjectTools, MAX_TOOL_FILE_BYTES,
};
