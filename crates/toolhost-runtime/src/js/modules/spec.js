// toolhost's `@standardagents/spec`: `defineTool` (spec 000 §2, §9), checked when the tool
// file loads. A field the spec does not define is refused, never passed over; toolhost adds
// `idempotent` and `annotations` (readOnlyHint, destructiveHint, openWorldHint), as a
// blueprint's root may hold them, checked where the blueprint is.

const FIELDS = [
  'description', 'args', 'execute', 'tenvs', 'executionMode', 'executionProvider',
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
    throw new ToolDefinitionError('defineTool() takes an object: { description, args?, execute, tenvs? }');
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
  return Object.freeze({
    __toolhostTool: true,
    description: options.description,
    args: options.args ?? null,
    execute: options.execute,
    tenvs: options.tenvs ?? null,
    executionMode: options.executionMode,
    executionProvider: options.executionProvider,
    idempotent: options.idempotent,
    annotations: options.annotations,
  });
}
