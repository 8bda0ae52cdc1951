// Building the page's elements. Every byte a desk controls is hostile: text goes into the
// DOM only as text nodes (never innerHTML, never an attribute a browser would obey), so a
// desk that prints <script> or <img onerror=...> shows those characters.

const SVG = 'http://www.w3.org/2000/svg';

// Attributes the page sets; nothing else is allowed through el(), so no desk-written value
// can become an event handler or a URL of its choosing.
const ALLOWED_ATTRIBUTES = new Set([
  'class', 'href', 'type', 'name', 'placeholder', 'value', 'rows', 'list', 'id', 'for', 'min', 'max',
  'title', 'aria-label', 'autocomplete', 'data-kind', 'data-desk', 'data-id', 'hidden', 'open', 'maxlength',
]);

function checkedAttribute(name, value) {
  if (!ALLOWED_ATTRIBUTES.has(name)) throw new Error(`el(): attribute '${name}' is not one the page sets`);
  // Links are the page's own routes only.
  if (name === 'href' && !String(value).startsWith('#/')) throw new Error('el(): a link must be a #/ route');
  return String(value);
}

function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** An HTML element: el('p', {class: 'x'}, 'text', child, ...); strings become text nodes. */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    element.setAttribute(name, value === true ? '' : checkedAttribute(name, value));
  }
  return append(element, children);
}

/** An SVG element with numeric or page-chosen attributes (never desk text: that goes in children). */
export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return append(element, children);
}

/** Replaces everything in `parent` with `children`. */
export function replace(parent, ...children) {
  parent.replaceChildren();
  return append(parent, children);
}

/** A button that runs `action` on click, disabled while it runs. */
export function button(label, action, className = '') {
  const element = el('button', { type: 'button', class: className || undefined }, label);
  element.addEventListener('click', async () => {
    element.disabled = true;
    try {
      await action();
    } finally {
      element.disabled = false;
    }
  });
  return element;
}

/** A route link: #/desk/NAME with the name escaped for the URL. */
export function deskLink(name) {
  return el('a', { href: `#/desk/${encodeURIComponent(name)}`, class: 'desk-link' }, name);
}

/** US dollars for people: $0.0042, $1.27. */
export function dollars(amount) {
  if (typeof amount !== 'number' || !Number.isFinite(amount)) return '—';
  return amount < 1 ? `$${amount.toFixed(4)}` : `$${amount.toFixed(2)}`;
}

/** A whole number with thousands grouped. */
export function count(number) {
  return typeof number === 'number' ? number.toLocaleString('en-US') : '—';
}

/** The first `lines` lines of `text`, and whether some were left out. */
export function firstLines(text, lines) {
  const all = String(text ?? '').split('\n');
  return { text: all.slice(0, lines).join('\n'), cut: all.length > lines };
}

/** hh:mm:ss of an event's ISO time (as deskd wrote it, India time). */
export function clock(isoTime) {
  const match = /T(\d\d:\d\d:\d\d)/.exec(String(isoTime ?? ''));
  return match ? match[1] : '';
}
