// The page: sign in with a token, the threads newest first, a form to start one, and a
// thread's own view. The address (`#/new`, `#/t/ID`) says what is shown, so a reload keeps it.

import { api, forgetToken, setToken, token, whenSignedOut } from './api.js';
import { clearErrors, el, showError, statusBadge, when } from './dom.js';
import { ThreadView } from './thread.js';

const LIST_REFRESH_MS = 3000;

let current = null;
let agents = null;
let nextCursor = null;
let listTimer = null;
let listShown = '';

function $(id) {
  return document.getElementById(id);
}

function signedIn() {
  $('sign-in').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  route();
  refreshList();
  clearInterval(listTimer);
  listTimer = setInterval(() => {
    if (document.visibilityState === 'visible') refreshList();
  }, LIST_REFRESH_MS);
}

function signedOut(message) {
  forgetToken();
  clearInterval(listTimer);
  if (current) current.close();
  current = null;
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = message || '';
  $('token').focus();
}

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  setToken($('token').value.trim());
  try {
    await api('GET', '/v1/agents');
    $('token').value = '';
    signedIn();
  } catch (e) {
    signedOut(`That token was not accepted: ${e.message}`);
  }
});
$('sign-out').addEventListener('click', () => signedOut());
whenSignedOut(() => signedOut('The token is no longer accepted; sign in again.'));

// ---- the threads, newest first ----

function threadItem(thread) {
  const here = current instanceof ThreadView && current.id === thread.id;
  return el(
    'li',
    { 'data-thread-id': thread.id },
    el(
      'a',
      { href: `#/t/${thread.id}`, 'aria-current': here ? 'page' : null },
      el('span', { class: 'agent' }, thread.agent),
      statusBadge(thread.status),
      el('span', { class: 'muted' }, when(thread.created_at)),
    ),
  );
}

async function refreshList() {
  try {
    // As many as are shown, older pages loaded included (within the server's page limit).
    const limit = Math.min(Math.max(30, $('thread-list').children.length), 200);
    const page = await api('GET', `/v1/threads?limit=${limit}`);
    // Redrawn only when something changed, so that a keyboard user's place in it stays.
    const shown = JSON.stringify(page.threads.map((t) => [t.id, t.status]));
    if (shown === listShown && !nextCursor === !page.next_cursor) return;
    listShown = shown;
    $('thread-list').replaceChildren(...page.threads.map(threadItem));
    nextCursor = page.next_cursor;
    $('more-threads').hidden = !nextCursor;
  } catch (e) {
    if (e.status !== 401) showError('The threads could not be listed', e);
  }
}

$('more-threads').addEventListener('click', async () => {
  try {
    const page = await api('GET', `/v1/threads?limit=30&cursor=${encodeURIComponent(nextCursor)}`);
    $('thread-list').append(...page.threads.map(threadItem));
    nextCursor = page.next_cursor;
    $('more-threads').hidden = !nextCursor;
  } catch (e) {
    showError('Older threads could not be listed', e);
  }
});

// ---- starting a thread ----

function variableField(v) {
  const input = el('input', {
    type: v.secret ? 'password' : 'text',
    name: v.name,
    autocomplete: 'off',
    spellcheck: 'false',
    required: v.required_at_start,
    'data-secret': v.secret ? 'true' : null,
  });
  const label = `${v.name}${v.required_at_start ? ' (required)' : ''}${v.secret ? ' — secret, never shown again' : ''}`;
  return el('label', {}, label, v.description ? el('small', {}, v.description) : null, input);
}

async function newThreadView(main) {
  if (!agents) {
    try {
      agents = (await api('GET', '/v1/agents')).agents;
    } catch (e) {
      showError('The agents could not be listed', e);
      return;
    }
  }
  const select = el('select', { name: 'agent', id: 'agent', required: true }, ...agents.map((a) => el('option', { value: a.name }, a.title || a.name)));
  const fields = el('div', { class: 'variables' });
  const showFields = () => {
    const agent = agents.find((a) => a.name === select.value);
    const now = agent.variables.filter((v) => v.required_at_start);
    const later = agent.variables.filter((v) => !v.required_at_start);
    fields.replaceChildren(
      ...now.map(variableField),
      later.length ? el('details', {}, el('summary', {}, 'Values its tools will ask for (optional now)'), ...later.map(variableField)) : null,
    );
  };
  select.addEventListener('change', showFields);
  const message = el('textarea', { name: 'message', id: 'message', rows: 4, required: true });
  const problems = el('p', { class: 'form-error', role: 'alert' });
  const submit = el('button', { type: 'submit' }, 'Start');
  const form = el(
    'form',
    {
      class: 'new-thread',
      onsubmit: async (event) => {
        event.preventDefault();
        const body = { agent: select.value, message: message.value, variables: {}, secrets: {} };
        for (const input of fields.querySelectorAll('input')) {
          if (input.value === '') continue;
          (input.dataset.secret ? body.secrets : body.variables)[input.name] = input.value;
        }
        submit.disabled = true;
        problems.textContent = '';
        try {
          const { thread } = await api('POST', '/v1/threads', body);
          location.hash = `#/t/${thread.id}`;
          refreshList();
        } catch (e) {
          problems.textContent = `Not started: ${e.message}`;
        } finally {
          submit.disabled = false;
        }
      },
    },
    el('h1', { tabindex: '-1' }, 'New thread'),
    el('label', { for: 'agent' }, 'Agent'),
    select,
    fields,
    el('label', { for: 'message' }, 'Message'),
    message,
    problems,
    submit,
  );
  if (agents.length === 0) {
    main.replaceChildren(el('p', {}, 'This token reaches no agent.'));
    return;
  }
  showFields();
  main.replaceChildren(form);
  form.querySelector('h1').focus();
}

// ---- routing ----

async function route() {
  if (!token()) return;
  clearErrors();
  if (current) current.close();
  current = null;
  const main = $('main');
  const hash = location.hash;
  const thread = hash.match(/^#\/t\/([\w-]+)$/);
  if (thread) {
    // The list follows the status of the thread shown at once, the others at its next refresh.
    const view = new ThreadView(thread[1], () => refreshList());
    current = view;
    main.replaceChildren(view.node);
    view.title.focus();
    await view.open();
  } else {
    await newThreadView(main);
  }
  for (const link of document.querySelectorAll('#thread-list a')) {
    const here = thread && link.getAttribute('href') === `#/t/${thread[1]}`;
    if (here) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

window.addEventListener('hashchange', route);

if (token()) signedIn();
else signedOut();
