// A thread's transcript: stored messages in order, each tool call as a card that its result
// fills in, and the answer being written shown live until its stored message replaces it.

import { api, fileBlob } from './api.js';
import { el, duration, pretty, showError, statusBadge } from './dom.js';

export class Transcript {
  constructor(threadId) {
    this.threadId = threadId;
    this.node = el('ol', { class: 'transcript', 'aria-label': 'Transcript' });
    this.seen = new Set();
    // call id -> the parts of its card
    this.cards = new Map();
    this.live = null;
    this.urls = [];
  }

  /** Adds a stored message once (a reconnect may send what was seen before). */
  add(message) {
    if (this.seen.has(message.id)) return;
    this.seen.add(message.id);
    if (message.role === 'assistant') this.dropLive();
    const depth = Math.min(message.depth || 0, 4);
    if (message.role === 'tool') {
      this.fill(message);
      return;
    }
    if (message.role === 'assistant') {
      const meta = message.metadata || {};
      if (message.content || meta.reasoning) {
        this.node.append(
          el(
            'li',
            { class: `msg assistant depth-${depth}`, 'data-seq': message.seq },
            el('span', { class: 'who' }, meta.side ? `Assistant (${meta.side})` : 'Assistant'),
            meta.reasoning ? el('details', { class: 'reasoning' }, el('summary', {}, 'Reasoning'), el('p', {}, meta.reasoning)) : null,
            message.content ? el('p', { class: 'text' }, message.content) : null,
          ),
        );
      }
      // Spec 004: why the model made each call, kept with its combined reply.
      const said = (meta.combined && meta.combined.calls) || [];
      (message.tool_calls || []).forEach((call, i) => this.card(call, depth, said[i] && said[i]._reasoningForCall));
      return;
    }
    const who = message.role === 'user' ? 'You' : message.role;
    // A message stored while an answer is being written came before that answer.
    this.place(
      el(
        'li',
        { class: `msg ${message.role} depth-${depth}`, 'data-seq': message.seq },
        el('span', { class: 'who' }, message.name ? `${who} (${message.name})` : who),
        el('p', { class: 'text' }, message.content || ''),
      ),
    );
  }

  /** A tool call's card, waiting for its result; `why` is the model's reason for it, if given. */
  card(call, depth, why) {
    if (this.cards.has(call.id)) return this.cards.get(call.id);
    const state = el('span', { class: 'badge call-running' }, 'running');
    const took = el('span', { class: 'took' });
    const body = el('div', { class: 'call-body' });
    const node = el(
      'li',
      { class: `call depth-${depth}`, 'data-call-id': call.id },
      el('div', { class: 'call-head' }, el('span', { class: 'tool-name' }, call.name), state, took),
      typeof why === 'string' ? el('p', { class: 'why muted' }, `Why: ${why}`) : null,
      el('details', { class: 'arguments' }, el('summary', {}, 'Arguments'), el('pre', {}, pretty(call.arguments))),
      body,
    );
    this.node.append(node);
    const parts = { node, state, took, body, done: false };
    this.cards.set(call.id, parts);
    return parts;
  }

  /** Marks the calls that wait for a person's approval. */
  waiting(callIds) {
    for (const [id, parts] of this.cards) {
      if (parts.done) continue;
      const waits = callIds.has(id);
      parts.state.textContent = waits ? 'waits for approval' : 'running';
      parts.state.className = `badge ${waits ? 'call-waiting' : 'call-running'}`;
    }
  }

  /** A tool result fills the card of its call. */
  fill(message) {
    const parts = this.cards.get(message.tool_call_id) ||
      this.card({ id: message.tool_call_id, name: message.name, arguments: '{}' }, message.depth || 0);
    const meta = message.metadata || {};
    const result = meta.result || {};
    const status = message.status || result.status || 'success';
    parts.done = true;
    parts.state.textContent = status;
    parts.state.className = `badge call-${status}`;
    if (typeof meta.durationMs === 'number') parts.took.textContent = duration(meta.durationMs);
    if (meta.ranWith) {
      parts.body.append(el('details', { class: 'arguments' }, el('summary', {}, 'Ran with edited arguments'), el('pre', {}, pretty(meta.ranWith.arguments))));
    }
    const text = status === 'error' ? result.error || message.content : message.content;
    if (text) parts.body.append(el('pre', { class: `result result-${status}` }, pretty(text)));
    // A call of an MCP server's tool refused because the server changed it since the project
    // first used it: a person may accept the new definition here.
    if (status === 'error' && message.name && /since the project first used it/.test(text || '')) {
      parts.body.append(this.acceptDefinition(message.name));
    }
    for (const block of result.content || []) {
      if (block.type === 'image' && /^image\/(png|jpeg|gif|webp)$/.test(block.mimeType)) {
        parts.body.append(el('img', { class: 'result-image', src: `data:${block.mimeType};base64,${block.data}`, alt: `Image from ${message.name}` }));
      }
    }
    for (const attachment of result.attachments || []) parts.body.append(this.attachment(attachment));
  }

  /** A button accepting, for the whole project, the definition an MCP server now gives `tool`. */
  acceptDefinition(tool) {
    const row = el('div', { class: 'row accept-definition' });
    const button = el(
      'button',
      {
        type: 'button',
        onclick: async () => {
          button.disabled = true;
          try {
            await api('POST', `/v1/threads/${encodeURIComponent(this.threadId)}/mcp-definitions/${encodeURIComponent(tool)}`);
            row.replaceChildren(el('p', { class: 'accepted' }, `Accepted: the next call of ${tool} goes through, in this thread and every other.`));
          } catch (e) {
            button.disabled = false;
            showError(`The new definition of ${tool} was not accepted`, e);
          }
        },
      },
      `Accept the new definition of ${tool}`,
    );
    row.append(button);
    return row;
  }

  /** An attachment: images shown inline, every one downloadable. */
  attachment(file) {
    const item = el('div', { class: 'attachment' });
    if (/^image\//.test(file.mimeType)) {
      const img = el('img', { class: 'result-image', alt: file.description || file.name });
      item.append(img);
      fileBlob(this.threadId, file.path)
        .then((blob) => {
          img.src = this.url(blob);
        })
        .catch((e) => showError(`The image ${file.name} could not be loaded`, e));
    }
    item.append(
      el(
        'button',
        {
          type: 'button',
          class: 'quiet download',
          onclick: async () => {
            try {
              const link = el('a', { href: this.url(await fileBlob(this.threadId, file.path)), download: file.name });
              document.body.append(link);
              link.click();
              link.remove();
            } catch (e) {
              showError(`${file.name} could not be downloaded`, e);
            }
          },
        },
        `Download ${file.name} (${file.size} bytes)`,
      ),
    );
    return item;
  }

  url(blob) {
    const url = URL.createObjectURL(blob);
    this.urls.push(url);
    return url;
  }

  /** A live piece of the answer being written. */
  delta(kind, data) {
    if (kind === 'answer_started' || !this.live) this.startLive();
    const live = this.live;
    if (kind === 'text_delta') {
      live.text.textContent += data.text;
    } else if (kind === 'reasoning_delta') {
      live.reasoning.hidden = false;
      live.reasoning.lastChild.textContent += data.text;
    } else if (kind === 'tool_call_started') {
      const args = el('pre', {});
      live.calls.set(data.callId, args);
      live.node.append(el('div', { class: 'live-call' }, el('span', { class: 'tool-name' }, `calling ${data.name}`), args));
    } else if (kind === 'tool_call_arguments_delta') {
      const args = live.calls.get(data.callId);
      if (args) args.textContent += data.fragment;
    } else if (kind === 'model_restarted') {
      live.text.textContent = '';
      live.note.textContent = `The model was asked again (${data.reason}).`;
    }
  }

  /** Appends `node`, before the answer being written when there is one. */
  place(node) {
    if (this.live) this.node.insertBefore(node, this.live.node);
    else this.node.append(node);
  }

  startLive() {
    this.dropLive();
    const text = el('p', { class: 'text' });
    const note = el('p', { class: 'note' });
    const reasoning = el('details', { class: 'reasoning', hidden: true }, el('summary', {}, 'Reasoning'), el('p', {}));
    const node = el('li', { class: 'msg assistant live', 'aria-busy': 'true' }, el('span', { class: 'who' }, 'Assistant (writing…)'), reasoning, text, note);
    this.node.append(node);
    this.live = { node, text, note, reasoning, calls: new Map() };
  }

  dropLive() {
    if (this.live) this.live.node.remove();
    this.live = null;
  }

  /** How a run ended, as a line in the transcript. */
  ended(data) {
    this.dropLive();
    let text;
    if (data.status === 'failed') text = `The run failed: ${data.error}`;
    else if (data.status === 'paused' && data.waiting_for === 'approval') text = `Waiting for approval of ${data.tool}.`;
    else if (data.status === 'paused') text = `Waiting for: ${(data.names || []).join(', ')}.`;
    else if (data.reason === 'stopped') text = 'The run was stopped.';
    else if (data.reason && data.reason !== 'response') text = `The run ended (${data.reason.replace(/_/g, ' ')}).`;
    if (text) {
      this.node.append(el('li', { class: `run-ended run-${data.status}` }, statusBadge(data.status), ' ', text));
    }
  }

  /** Frees the object URLs of the images and downloads. */
  close() {
    for (const url of this.urls) URL.revokeObjectURL(url);
    this.urls = [];
  }
}
