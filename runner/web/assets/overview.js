// Overview: every desk with its state, queue, model, network mode, the running turn's last
// lines and today's spend against its budget. Ops: status (every desk's, then each desk's
// for its network and open proposals), budget (each running desk's), and one event stream
// of every desk for the last lines.

import { follow, op } from './api.js';
import { deskLink, dollars, el, replace } from './dom.js';
import { eventLine } from './events.js';

const LAST_LINES = 4;
const REFRESH_MILLISECONDS = 5000;

function spendMeter(budget) {
  if (!budget) return el('p', { class: 'quiet' }, 'spend: not running');
  const spent = Number(budget.spent_usd) || 0;
  if (typeof budget.daily_usd !== 'number') {
    return el('p', { class: 'spend' }, `spent today ${dollars(spent)} (no daily cap)`);
  }
  const meter = el('meter', { min: 0, max: budget.daily_usd, value: spent, 'aria-label': 'spend against budget' });
  return el('p', { class: 'spend' }, `spent today ${dollars(spent)} of ${dollars(budget.daily_usd)} `, meter);
}

function deskCard(summary, status, budget, lines) {
  const state = summary.paused ? `${summary.state}, paused` : summary.state;
  return el('li', { class: `card state-${String(summary.state).replace(/[^a-z]/g, '')}`, 'data-desk': summary.name },
    el('h2', {}, deskLink(summary.name), ' ', el('span', { class: 'badge' }, state)),
    el('dl', { class: 'facts' },
      el('dt', {}, 'queue'), el('dd', { class: 'queue' }, String(summary.queued ?? '—')),
      el('dt', {}, 'model'), el('dd', {}, summary.model ?? '—'),
      el('dt', {}, 'network'), el('dd', {}, status?.network ?? '—'),
      el('dt', {}, 'proposals'), el('dd', {}, String(status?.open_proposals ?? '—'))),
    summary.error ? el('p', { class: 'problem' }, summary.error) : null,
    spendMeter(budget),
    lastLinesBox(lines));
}

// One line each, cut with an ellipsis where the phone is too narrow, so the newest line
// always shows.
function lastLinesBox(lines) {
  return el('div', { class: 'last-lines' },
    ...(lines.length ? lines.map((line) => el('div', {}, line)) : [el('div', { class: 'quiet' }, '(no turn yet)')]));
}

export async function overviewView(main, tell) {
  const lastLines = new Map();  // desk → its newest lines, oldest first
  const list = el('ul', { class: 'desks' });
  replace(main, el('h1', {}, 'Desks'), list);
  let drawing = false;

  async function draw() {
    if (drawing) return;
    drawing = true;
    try {
      const reply = await op({ op: 'status' });
      if (!reply.ok) return tell(reply.error);
      const desks = reply.status?.desks ?? [];
      const cards = await Promise.all(desks.map(async (summary) => {
        const [status, budget] = await Promise.all([
          op({ op: 'status', desk: summary.name }),
          // A desk that is not running (no model in its summary) has no budget to read.
          summary.model === undefined ? null : op({ op: 'budget', desk: summary.name }),
        ]);
        return deskCard(summary, status?.ok ? status.status : null, budget?.ok ? budget.budget : null,
          lastLines.get(summary.name) ?? []);
      }));
      replace(list, ...(cards.length ? cards : [el('li', { class: 'quiet' }, 'No desks are configured.')]));
    } finally {
      drawing = false;
    }
  }

  await draw();
  const timer = setInterval(draw, REFRESH_MILLISECONDS);
  let redraw = null;
  const stopFollowing = follow({
    replay: true,
    onEvent: (event) => {
      const line = eventLine(event);
      if (line === null) return;
      const lines = lastLines.get(event.desk) ?? [];
      if (event.kind === 'TURN_STARTED') lines.length = 0;
      lines.push(line);
      lastLines.set(event.desk, lines.slice(-LAST_LINES));
      // Only the desk's lines change; its facts are redrawn by the timer, or at once when a
      // turn starts or ends (a burst of events, such as the replay, redraws once).
      for (const card of list.querySelectorAll('li.card')) {
        if (card.dataset.desk === event.desk) card.querySelector('.last-lines').replaceWith(lastLinesBox(lastLines.get(event.desk)));
      }
      if (event.kind.startsWith('TURN_')) {
        clearTimeout(redraw);
        redraw = setTimeout(draw, 300);
      }
    },
  });
  return () => {
    clearInterval(timer);
    clearTimeout(redraw);
    stopFollowing();
  };
}
