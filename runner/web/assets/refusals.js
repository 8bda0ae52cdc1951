// Refusals: what the desks' enforcers refused lately (the refusals op: the newest REFUSED
// events deskd keeps), newest first, filtered by desk and enforcer on the page.

import { op } from './api.js';
import { button, clock, deskLink, el, replace } from './dom.js';

function choice(name, label, values, selected) {
  const select = el('select', { name, 'aria-label': label }, el('option', { value: '' }, `every ${label}`));
  for (const value of [...values].sort()) select.append(el('option', { value }, value));
  select.value = values.has(selected) ? selected : '';
  return select;
}

function refusalItem(event) {
  const data = event.data ?? {};
  const said = (field) => (data[field] === undefined ? null : String(typeof data[field] === 'string' ? data[field] : JSON.stringify(data[field])));
  return el('li', { class: 'card refusal' },
    el('p', {}, el('span', { class: 'time' }, clock(event.time)), ' ', deskLink(event.desk), ' ',
      el('span', { class: 'badge' }, said('enforcer') ?? '?'), ' ', said('what')),
    said('rule') ? el('p', { class: 'quiet' }, `rule: ${said('rule')}`) : null,
    said('details') ? el('p', { class: 'quiet' }, said('details')) : null,
    said('process') || said('comm') ? el('p', { class: 'quiet' }, `process: ${said('process') ?? said('comm')}`) : null,
    said('folded') ? el('p', { class: 'quiet' }, `and ${said('folded')} more times`) : null);
}

export async function refusalsView(main, tell) {
  const filters = el('div', { class: 'filters' });
  const list = el('ul', { class: 'cards refusals' });
  let refusals = [];
  let desk = '';
  let enforcer = '';
  replace(main, el('h1', {}, 'Refusals'), filters, list);

  function draw() {
    const desks = new Set(refusals.map((event) => String(event.desk)));
    const enforcers = new Set(refusals.map((event) => String(event.data?.enforcer ?? '?')));
    const deskChoice = choice('desk', 'desk', desks, desk);
    const enforcerChoice = choice('enforcer', 'enforcer', enforcers, enforcer);
    deskChoice.addEventListener('change', () => { desk = deskChoice.value; draw(); });
    enforcerChoice.addEventListener('change', () => { enforcer = enforcerChoice.value; draw(); });
    replace(filters, deskChoice, enforcerChoice, button('Refresh', load));
    const shown = refusals.filter((event) => (!desk || event.desk === desk) &&
      (!enforcer || String(event.data?.enforcer ?? '?') === enforcer)).reverse();
    replace(list, ...(shown.length ? shown.map(refusalItem) : [el('li', { class: 'quiet' }, 'Nothing refused.')]));
  }

  async function load() {
    const reply = await op({ op: 'refusals' });
    if (!reply.ok) return tell(reply.error);
    refusals = Array.isArray(reply.refusals) ? reply.refusals : [];
    draw();
  }

  await load();
}
