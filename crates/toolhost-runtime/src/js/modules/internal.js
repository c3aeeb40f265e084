// toolhost's glue between a tool file and the runtime: what a tool file declares
// (`describeTool`), and one call of it (`runTool`) with the `state` it is given. The state's
// durable parts go through the one door the host gives a tool run, `__toolhost(op, json)`.

import { ToolDefinitionError } from '@standardagents/spec';

const host = (op, args) => {
  const text = __toolhost(op, JSON.stringify(args === undefined ? {} : args));
  return text === '' ? undefined : JSON.parse(text);
};

// A question to whoever made the call. A question that waits for the client's next round
// (MCP 2026-07-28) throws an `InputRequired` error: the tool should let it through, since the
// round's result is thrown away and the call runs again with the answer.
const ask = (op, args) => {
  try {
    return host(op, args);
  } catch (e) {
    if (e instanceof Error && e.message.startsWith('input required:')) e.name = 'InputRequired';
    throw e;
  }
};

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

const toBase64 = (bytes) => {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
    out += i + 1 < bytes.length ? B64[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.length ? B64[n & 63] : '=';
  }
  return out;
};

// A string's UTF-8 bytes.
const utf8 = (text) => {
  const out = [];
  for (const ch of text) {
    const c = ch.codePointAt(0);
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(out);
};

const fromBase64 = (text) => {
  const clean = text.replace(/=+$/, '');
  const bytes = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let at = 0;
  for (const ch of clean) {
    value = (value << 6) | B64.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes[at++] = (value >> bits) & 255;
    }
  }
  return bytes;
};

// What a tool file declared: its blueprint (the JSON Schema of its arguments with its
// description and tenvs at the root, as a blueprint file holds them), and whether `execute`
// takes arguments.
export function describeTool(tool) {
  if (tool === null || typeof tool !== 'object' || tool.__toolhostTool !== true) {
    throw new ToolDefinitionError('the default export is not a tool: export default defineTool({ description, args, execute })');
  }
  const blueprint = tool.args
    ? tool.args.toJSONSchema()
    : { type: 'object', properties: {}, additionalProperties: false };
  blueprint.description = tool.description;
  if (tool.variables) blueprint.variables = tool.variables;
  if (tool.tenvs) blueprint.tenvs = tool.tenvs.toJSONSchema();
  if (tool.executionMode !== undefined) blueprint.executionMode = tool.executionMode;
  if (tool.executionProvider !== undefined) blueprint.executionProvider = tool.executionProvider;
  if (tool.idempotent !== undefined) blueprint.idempotent = tool.idempotent;
  if (tool.annotations !== undefined) blueprint.annotations = tool.annotations;
  return { blueprint, hasArgs: tool.args !== null };
}

// The thread's variables as a function of a name (its value, or null) that also has each as a
// property (a function's own `name` and `length` give way to variables of those names).
function envOf(values) {
  const env = async (name) => (Object.prototype.hasOwnProperty.call(values, name) ? values[name] : null);
  for (const [name, value] of Object.entries(values)) {
    Object.defineProperty(env, name, { value, enumerable: true });
  }
  return Object.freeze(env);
}

// The `state` of one call (spec 002's ThreadState, as far as toolhost grants it).
function makeState(info) {
  const abortSignal = Object.freeze({
    get aborted() {
      return host('aborted') === true;
    },
  });
  const getValue = async (key) => host('getValue', { key }) ?? null;
  const setValue = async (key, value) => {
    host('setValue', { key, value: value === undefined ? null : value });
  };
  const state = {
    threadId: info.threadId,
    agentId: info.agent,
    // The same for the same call however often it runs (after a crash): a key for outside
    // services that dedupe.
    idempotencyKey: info.idempotencyKey,
    currentSide: info.side,
    turnCount: info.turn,
    // Spec 001 reads a variable with `await state.env('NAME')`, spec 000 as `state.env.NAME`:
    // both work.
    env: envOf(info.env),
    tenvs: Object.freeze(Object.assign({}, info.env)),
    context: {},
    execution: Object.freeze({
      stepCount: info.step,
      currentSide: info.side,
      turn: info.turn,
      promptPath: info.promptPath,
      abortSignal,
    }),
    storage: Object.freeze({
      get: getValue,
      put: setValue,
      delete: async (key) => setValue(key, null),
    }),
    getValue,
    setValue,
    readFile: async (path) => fromBase64(host('readFile', { path })),
    readFileText: async (path) => host('readText', { path }),
    writeFile: async (path, data, mimeType) => {
      if (typeof data === 'string') return host('writeText', { path, text: data, mimeType });
      if (data instanceof Uint8Array) return host('writeFile', { path, data: toBase64(data), mimeType });
      throw new TypeError('writeFile(path, data, mimeType?): data is a string or a Uint8Array');
    },
    readdir: async (path) => host('readdir', { path }),
    stat: async (path) => host('stat', { path }) ?? null,
    queueTool: async (name, args) => {
      host('queueTool', { name, arguments: args === undefined ? {} : args });
    },
    emitThreadEvent: async (event, data) => {
      host('emitThreadEvent', { event, data: data === undefined ? null : data });
    },
    // How far the call is (live only; passed on to an MCP client that asked for progress).
    progress: async (progress, total, message) => {
      host('progress', { progress, total, message });
    },
    runCode: async (source, options) => host('runCode', Object.assign({ source }, options ?? {})),
    // Asks the person who made the call to fill in a form (MCP elicitation), the model on
    // their side for a completion (MCP sampling), or for their roots; throws when nobody can
    // answer. `options.key` names the question (a 2026-07-28 client's retry answers by key).
    elicit: async (message, requestedSchema, options) => {
      if (typeof message !== 'string') throw new TypeError('elicit(message, requestedSchema, options?): message is a string');
      return ask('elicit', { message, requestedSchema: requestedSchema ?? { type: 'object', properties: {} }, key: options?.key });
    },
    sample: async (request, options) => {
      if (request === null || typeof request !== 'object') throw new TypeError('sample(request, options?): request is an object with messages and maxTokens');
      return ask('sample', { request, key: options?.key });
    },
    roots: async (options) => ask('roots', { key: options?.key }),
  };
  state.rootState = state;
  return state;
}

const shape = (value) =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object without `status`' : `a ${typeof value}`;

// One call: the tool's `execute` with the state and the validated arguments; its return value
// as a ToolResult (a string is a successful result).
export async function runTool(tool, args, info) {
  const state = makeState(info);
  const out = info.hasArgs ? await tool.execute(state, args) : await tool.execute(state);
  if (typeof out === 'string') return { status: 'success', result: out };
  if (out !== null && typeof out === 'object' && (out.status === 'success' || out.status === 'error')) {
    return out;
  }
  throw new TypeError(`execute returned ${shape(out)}; a tool returns a ToolResult ({ status: 'success' | 'error', result?, error?, attachments? }) or a string`);
}

// What a tool file gets instead of the capabilities of a host it does not have.
const absent = (name, instead) => () => {
  throw new ReferenceError(`${name} is not available to a tool file: toolhost grants a tool only its state and console${instead ? `; ${instead}` : ''}`);
};
// `fetch` reaches only the hosts the project allows (toolhost.toml's [fetch] hosts), through
// toolhost's HTTP client; the whole answer is read before it returns.
globalThis.fetch = async (input, init = {}) => {
  const url = String(input);
  let headers = [];
  if (Array.isArray(init.headers)) headers = init.headers.map(([k, v]) => [String(k), String(v)]);
  else if (init.headers && typeof init.headers === 'object') {
    headers = Object.entries(init.headers).map(([k, v]) => [k, String(v)]);
  }
  let body;
  if (typeof init.body === 'string') body = toBase64(utf8(init.body));
  else if (init.body instanceof Uint8Array) body = toBase64(init.body);
  else if (init.body !== undefined && init.body !== null) {
    throw new TypeError('fetch: a body is a string or a Uint8Array');
  }
  let answer;
  try {
    answer = host('fetch', { url, method: init.method ?? 'GET', headers, body });
  } catch (e) {
    throw new TypeError(e.message);
  }
  const lower = answer.headers.map(([k, v]) => [k.toLowerCase(), v]);
  return Object.freeze({
    ok: answer.status >= 200 && answer.status < 300,
    status: answer.status,
    statusText: answer.statusText,
    url,
    headers: Object.freeze({
      get: (name) => {
        const found = lower.filter(([k]) => k === String(name).toLowerCase()).map(([, v]) => v);
        return found.length === 0 ? null : found.join(', ');
      },
      has: (name) => lower.some(([k]) => k === String(name).toLowerCase()),
      entries: () => lower.values(),
    }),
    text: async () => answer.text,
    json: async () => JSON.parse(answer.text),
    arrayBuffer: async () => fromBase64(answer.base64).buffer,
  });
};
globalThis.setTimeout = absent('setTimeout');
globalThis.setInterval = absent('setInterval');
globalThis.require = absent('require', 'use import');
