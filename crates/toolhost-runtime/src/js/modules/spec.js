// toolhost's `@standardagents/spec`: `defineTool` (spec 000 §2, §9; spec 001 §2's
// `variables`), checked when the tool file loads. A field the spec does not define is refused, never passed over; toolhost adds
// `idempotent` and `annotations` (readOnlyHint, destructiveHint, openWorldHint), as a
// blueprint's root may hold them, checked where the blueprint is.

const FIELDS = [
  'description', 'args', 'execute', 'variables', 'tenvs', 'executionMode', 'executionProvider',
  'idempotent', 'annotations',
];

export class ToolDefinitionError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolDefinitionError';
  }
}

export function defineTool(options) {
  if (options === null || typeof options !== 'object') {
    throw new ToolDefinitionError('defineTool() takes an object: { description, args?, execute, variables?, tenvs? }');
  }
  for (const key of Object.keys(options)) {
    if (!FIELDS.includes(key)) {
      throw new ToolDefinitionError(`defineTool(): "${key}" is not a field of a tool definition (the fields are ${FIELDS.join(', ')})`);
    }
  }
  if (typeof options.description !== 'string' || options.description.trim() === '') {
    throw new ToolDefinitionError('defineTool(): `description` must be a non-empty string');
  }
  if (typeof options.execute !== 'function') {
    throw new ToolDefinitionError('defineTool(): `execute` must be a function (state, args) => ToolResult');
  }
  for (const key of ['args', 'tenvs']) {
    const schema = options[key];
    if (schema !== undefined && schema !== null && !(schema.__zod === true && schema.kind === 'object')) {
      throw new ToolDefinitionError(`defineTool(): \`${key}\` must be a z.object({...}) schema`);
    }
  }
  // Each declaration's fields are checked where the blueprint is (name, type, required,
  // scoped, description).
  if (options.variables !== undefined && !Array.isArray(options.variables)) {
    throw new ToolDefinitionError('defineTool(): `variables` must be a list of { name, type: "text" | "secret", required, scoped?, description }');
  }
  return Object.freeze({
    __toolhostTool: true,
    description: options.description,
    args: options.args ?? null,
    execute: options.execute,
    variables: options.variables ?? null,
    tenvs: options.tenvs ?? null,
    executionMode: options.executionMode,
    executionProvider: options.executionProvider,
    idempotent: options.idempotent,
    annotations: options.annotations,
  });
}
