// One thread: its header with status and actions, the live transcript, what waits for a
// person (approval cards, variable forms) and the box to send the next message.

import { api, follow } from './api.js';
import { el, pretty, showError, statusBadge, when } from './dom.js';
import { Transcript } from './transcript.js';

const LIVE = new Set([
  'answer_started', 'answer_ended', 'text_delta', 'reasoning_delta',
  'tool_call_started', 'tool_call_arguments_delta', 'model_restarted',
]);

export class ThreadView {
  /** The view of thread `id`; `onChange(thread)` is called when its status changes. */
  constructor(id, onChange) {
    this.id = id;
    this.onChange = onChange;
    this.path = `/v1/threads/${encodeURIComponent(id)}`;
    this.transcript = new Transcript(id);
    this.status = el('span', {});
    this.title = el('h1', { tabindex: '-1' }, 'Thread');
    this.stopButton = el('button', { type: 'button', class: 'danger', hidden: true, onclick: () => this.stop() }, 'Stop');
    this.stopping = el('span', { class: 'stopping muted', role: 'status' });
    this.runButton = el('button', { type: 'button', hidden: true, onclick: () => this.resume() }, 'Run again');
    this.parent = el('p', { class: 'parent', hidden: true });
    this.children = el('nav', { class: 'children', 'aria-label': 'Sub-threads', hidden: true });
    this.waitingNode = el('section', { class: 'waiting', 'aria-label': 'Waiting for you', 'aria-live': 'polite' });
    // Spec 004: the thread's results at their `_outputPath`s, once there are any.
    this.stateNode = el('details', { class: 'state', open: true, hidden: true }, el('summary', {}, 'State'), el('pre', {}));
    // request or call id -> its card, kept while it waits so that typing is never lost
    this.cards = new Map();
    this.node = el(
      'article',
      { class: 'thread' },
      el('header', { class: 'thread-head' }, this.title, this.status, el('span', { class: 'actions' }, this.stopping, this.runButton, this.stopButton)),
      this.parent,
      this.children,
      this.transcript.node,
      this.stateNode,
      this.waitingNode,
      this.composer(),
    );
    this.refreshing = null;
  }

  async open() {
    await this.refresh();
    this.follower = follow(`${this.path}/events`, (e) => this.take(e), (text, ok) => {
      const node = document.getElementById('connection');
      node.textContent = text;
      node.classList.toggle('lost', !ok);
    });
  }

  close() {
    if (this.follower) this.follower.close();
    this.transcript.close();
  }

  take({ event, data }) {
    if (event === 'message') {
      this.transcript.add(data);
    } else if (LIVE.has(event)) {
      this.transcript.delta(event, data);
    } else if (event === 'status') {
      this.show(data);
      this.refresh();
    } else if (event === 'run_ended') {
      this.transcript.ended(data);
      this.refresh();
    } else if (event === 'event') {
      if (['approval_requested', 'approval_decided', 'variables_requested'].includes(data.kind)) this.refresh();
    } else if (event === 'error') {
      showError('Live updates', data.error || data.detail || data);
    }
  }

  show(thread) {
    const changed = !this.thread || this.thread.status !== thread.status;
    this.thread = thread;
    this.title.textContent = `${thread.agent} · ${thread.id.slice(0, 8)}`;
    this.status.replaceChildren(statusBadge(thread.status), ' ', el('span', { class: 'muted' }, `started ${when(thread.created_at)}`));
    this.stopButton.hidden = thread.status !== 'running';
    if (thread.status !== 'running') this.stopping.textContent = '';
    this.runButton.hidden = thread.status !== 'failed';
    if (thread.parent) {
      this.parent.hidden = false;
      this.parent.replaceChildren('Sub-thread of ', el('a', { href: `#/t/${thread.parent}` }, thread.parent.slice(0, 8)));
    }
    if (changed) this.onChange(thread);
  }

  /** Reads the thread and what waits again; one read at a time, the latest wins. */
  async refresh() {
    if (this.refreshing) {
      this.again = true;
      return;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        try {
          const answer = await api('GET', this.path);
          this.show(answer.thread);
          await this.showWaiting(answer.waiting);
          await this.showChildren();
          await this.showState();
        } catch (e) {
          showError('The thread could not be read', e);
        }
      } while (this.again);
    })();
    await this.refreshing;
    this.refreshing = null;
  }

  /** The state document of a thread in spec 004's mode, when it holds anything. */
  async showState() {
    const { state } = await api('GET', `${this.path}/state`);
    this.stateNode.hidden = state === null;
    if (state !== null) this.stateNode.querySelector('pre').textContent = pretty(state);
  }

  /** The sub-threads this thread started, each with its status. */
  async showChildren() {
    const { threads } = await api('GET', `/v1/threads?parent=${encodeURIComponent(this.id)}&limit=100`);
    // Redrawn only when something changed, so that a link being clicked or focused stays.
    const shown = JSON.stringify(threads.map((t) => [t.id, t.status]));
    if (shown === this.childrenShown) return;
    this.childrenShown = shown;
    this.children.hidden = threads.length === 0;
    this.children.replaceChildren(
      el('span', { class: 'muted' }, 'Sub-threads: '),
      ...threads.map((t) => el('a', { href: `#/t/${t.id}` }, `${t.agent} · ${t.id.slice(0, 8)} `, statusBadge(t.status))),
    );
  }

  async showWaiting(waiting) {
    const keep = new Set();
    for (const approval of waiting.approvals) {
      keep.add(approval.call_id);
      if (!this.cards.has(approval.call_id)) this.addCard(approval.call_id, this.approvalCard(approval));
    }
    for (const request of waiting.variables) {
      keep.add(request.request_id);
      if (!this.cards.has(request.request_id)) {
        const details = await api('GET', `${this.path}/variables/${encodeURIComponent(request.request_id)}`);
        if (!this.cards.has(request.request_id)) this.addCard(request.request_id, this.variablesCard(details));
      }
    }
    for (const [key, card] of this.cards) {
      if (!keep.has(key)) {
        card.remove();
        this.cards.delete(key);
      }
    }
    this.transcript.waiting(new Set(waiting.approvals.map((a) => a.call_id)));
  }

  addCard(key, card) {
    this.cards.set(key, card);
    this.waitingNode.append(card);
  }

  approvalCard(request) {
    const original = JSON.stringify(request.arguments);
    const editor = el('textarea', { rows: 6, spellcheck: 'false', 'aria-label': `Arguments for ${request.tool}` }, pretty(request.arguments));
    const problems = el('ul', { class: 'form-error', role: 'alert' });
    const always = el('input', { type: 'checkbox' });
    const denial = el('input', { type: 'text', placeholder: 'Why not (the model is told)', 'aria-label': 'Message for a denial' });
    const busy = (on) => card.querySelectorAll('button').forEach((b) => { b.disabled = on; });
    const decide = async (body) => {
      busy(true);
      try {
        await api('POST', `${this.path}/approvals/${encodeURIComponent(request.call_id)}`, body);
      } catch (e) {
        problems.replaceChildren(el('li', {}, e.message));
        busy(false);
        return;
      }
      // Decided: the card stays disabled until the thread's next read takes it away.
      card.classList.add('decided');
      await this.refresh();
    };
    const approve = async () => {
      problems.replaceChildren();
      let args;
      try {
        args = JSON.parse(editor.value);
      } catch (e) {
        problems.replaceChildren(el('li', {}, `The arguments are not JSON: ${e.message}`));
        return;
      }
      const body = { decision: 'approve', always: always.checked };
      if (JSON.stringify(args) !== original) {
        // Checked against the tool's schema before anything is sent.
        try {
          const check = await api('POST', `/v1/tools/${encodeURIComponent(request.tool)}/validate`, { arguments: args });
          if (!check.valid) {
            problems.replaceChildren(...check.violations.map((v) => el('li', {}, v.pointer ? `${v.pointer}: ${v.message}` : v.message)));
            return;
          }
        } catch (e) {
          problems.replaceChildren(el('li', {}, `The arguments could not be checked: ${e.message}`));
          return;
        }
        body.arguments = args;
      }
      await decide(body);
    };
    const deny = () => {
      problems.replaceChildren();
      const body = { decision: 'deny', always: always.checked };
      if (denial.value.trim()) body.message = denial.value.trim();
      return decide(body);
    };
    const card = el(
      'div',
      { class: 'card approval', 'data-call-id': request.call_id },
      el('h2', {}, `Approve ${request.tool}?`),
      request.reason ? el('p', {}, request.reason) : null,
      el('label', {}, 'Arguments (edit to run with others)', editor),
      problems,
      el('label', { class: 'check' }, always, ' Decide the same for later calls of this tool in this thread'),
      el('div', { class: 'row' }, el('button', { type: 'button', onclick: approve }, 'Approve')),
      el('div', { class: 'row' }, denial, el('button', { type: 'button', class: 'danger', onclick: deny }, 'Deny')),
    );
    return card;
  }

  variablesCard(request) {
    const inputs = request.variables.map((v) => ({
      v,
      input: el('input', { type: v.secret ? 'password' : 'text', autocomplete: 'off', required: true, name: v.name, spellcheck: 'false' }),
    }));
    const problems = el('p', { class: 'form-error', role: 'alert' });
    const submit = el('button', { type: 'submit' }, 'Give');
    const form = el(
      'form',
      {
        class: 'card variables',
        'data-request-id': request.request_id,
        onsubmit: async (event) => {
          event.preventDefault();
          const body = { variables: {}, secrets: {} };
          for (const { v, input } of inputs) (v.secret ? body.secrets : body.variables)[v.name] = input.value;
          submit.disabled = true;
          try {
            await api('POST', `${this.path}/variables/${encodeURIComponent(request.request_id)}`, body);
          } catch (e) {
            problems.textContent = e.message;
            submit.disabled = false;
            return;
          }
          // Given: the values leave the page at once; the form goes with the thread's next read.
          for (const { input } of inputs) input.value = '';
          await this.refresh();
        },
      },
      el('h2', {}, 'Values needed'),
      ...inputs.map(({ v, input }) => el('label', {}, v.secret ? `${v.name} (secret: never shown again)` : v.name, input)),
      problems,
      submit,
    );
    return form;
  }

  composer() {
    const box = el('textarea', { rows: 3, placeholder: 'Message (Ctrl+Enter sends)', 'aria-label': 'Message', required: true });
    const problems = el('p', { class: 'form-error', role: 'alert' });
    const button = el('button', { type: 'submit' }, 'Send');
    const form = el('form', {
      class: 'composer',
      onsubmit: async (event) => {
        event.preventDefault();
        if (!box.value.trim()) return;
        button.disabled = true;
        problems.textContent = '';
        try {
          await api('POST', `${this.path}/messages`, { message: box.value });
          box.value = '';
        } catch (e) {
          problems.textContent = `Not sent: ${e.message}`;
        } finally {
          button.disabled = false;
        }
      },
    }, box, el('div', { class: 'row' }, problems, button));
    box.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) form.requestSubmit();
    });
    return form;
  }

  async stop() {
    try {
      const { stop_requested: asked } = await api('POST', `${this.path}/stop`);
      this.stopping.textContent = asked
        ? 'Stop asked: a running tool program is interrupted and the model is not asked again.'
        : 'Nothing was running to stop.';
    } catch (e) {
      showError('The thread could not be stopped', e);
    }
  }

  async resume() {
    try {
      await api('POST', `${this.path}/run`);
      await this.refresh();
    } catch (e) {
      showError('The thread could not be run again', e);
    }
  }
}
