// Small helpers for building the page. Text always goes in as text nodes, never as HTML, so
// whatever a model or a tool wrote is shown, never run.

/** An element with attributes (`on*` functions become listeners) and children. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      node.className = value;
    } else if (value === true) {
      node.setAttribute(key, '');
    } else {
      node.setAttribute(key, String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Shows an error until it is dismissed: failed requests always say so. */
export function showError(context, error) {
  const alerts = document.getElementById('alerts');
  const text = `${context}: ${error && error.message ? error.message : error}`;
  const item = el(
    'div',
    { class: 'alert' },
    el('span', {}, text),
    el('button', { type: 'button', class: 'quiet', 'aria-label': 'Dismiss', onclick: () => item.remove() }, '×'),
  );
  alerts.append(item);
}

export function clearErrors() {
  document.getElementById('alerts').replaceChildren();
}

/** A thread status as a badge. */
export function statusBadge(status) {
  return el('span', { class: `badge status-${status}` }, status);
}

/** A time as the reader's clock shows it. */
export function when(millis) {
  const date = new Date(millis);
  const today = new Date();
  return date.toDateString() === today.toDateString()
    ? date.toLocaleTimeString()
    : date.toLocaleString();
}

/** A duration in milliseconds, readable. */
export function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** JSON as indented text; text that is not JSON as it is. */
export function pretty(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}
