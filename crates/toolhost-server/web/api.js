// The API as the page uses it: JSON requests with the token, problem bodies turned into
// errors that say what went wrong, and event streams that reconnect with the last id they saw.

const TOKEN_KEY = 'toolhost.token';

/** A request that failed: `status` 0 when the server could not be reached. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `the server answered ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** Called when the server says the token reaches nothing (401). */
let onSignedOut = () => {};
export function whenSignedOut(callback) {
  onSignedOut = callback;
}

function headers(extra = {}) {
  return { Authorization: `Bearer ${token()}`, ...extra };
}

async function send(method, path, init) {
  let response;
  try {
    response = await fetch(path, { method, ...init });
  } catch (e) {
    throw new ApiError(0, { detail: `the server could not be reached (${e.message})` });
  }
  if (response.status === 401) onSignedOut();
  return response;
}

async function failure(response) {
  const text = await response.text();
  let problem;
  try {
    problem = JSON.parse(text);
  } catch {
    problem = { detail: text || response.statusText };
  }
  return new ApiError(response.status, problem);
}

/** A JSON request; resolves to the answer's JSON (null for 204). */
export async function api(method, path, body) {
  const init = { headers: headers() };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await send(method, path, init);
  if (!response.ok) throw await failure(response);
  if (response.status === 204) return null;
  return response.json();
}

/** A file of a thread as a blob (the download needs the token, so no plain link can do it). */
export async function fileBlob(threadId, path) {
  const clean = path.replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/');
  const response = await send('GET', `/v1/threads/${encodeURIComponent(threadId)}/files/${clean}`, {
    headers: headers(),
  });
  if (!response.ok) throw await failure(response);
  return response.blob();
}

/**
 * Follows a server-sent event stream. `onEvent({event, data, id})` gets each event;
 * `onState(text, ok)` is told when the stream connects or is lost. After a drop it reconnects
 * with `Last-Event-ID`, so nothing stored is missed. Returns `{close}`.
 */
export function follow(path, onEvent, onState) {
  let closed = false;
  let lastId = null;
  let controller = null;
  let retry = 500;

  async function connect() {
    while (!closed) {
      controller = new AbortController();
      const extra = { Accept: 'text/event-stream' };
      if (lastId) extra['Last-Event-ID'] = lastId;
      try {
        const response = await send('GET', path, { headers: headers(extra), signal: controller.signal });
        if (!response.ok) {
          const error = await failure(response);
          onState(`live updates failed: ${error.message}`, false);
          if (response.status === 401 || response.status === 403 || response.status === 404) return;
        } else {
          onState('live', true);
          retry = 500;
          await read(response.body);
          if (!closed) onState('reconnecting…', false);
        }
      } catch (e) {
        if (closed) return;
        onState(`connection lost (${e.message}); reconnecting…`, false);
      }
      await new Promise((resolve) => setTimeout(resolve, retry));
      retry = Math.min(retry * 2, 8000);
    }
  }

  async function read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        dispatch(block);
      }
    }
  }

  function dispatch(block) {
    let event = 'message';
    const data = [];
    let id = null;
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (data.length === 0) return;
    if (id) lastId = id;
    let parsed;
    try {
      parsed = JSON.parse(data.join('\n'));
    } catch {
      parsed = data.join('\n');
    }
    onEvent({ event, data: parsed, id });
  }

  connect();
  return {
    close() {
      closed = true;
      if (controller) controller.abort();
    },
  };
}
