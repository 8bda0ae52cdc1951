// A desk: its facts, the live turn streamed from /api/events (model text, tool calls and
// their output), a box to send a message (a message during a turn steers it), /stop,
// /pause and /resume, and its journal by kind. The buttons and the journal are the desk's
// slash commands sent with the send op, exactly as `deskctl send DESK /stop` does; the
// journal's answer comes back as the COMMAND_ANSWERED event of its trigger.

import { follow, op } from './api.js';
import { button, dollars, el, replace } from './dom.js';
import { endsTurn, eventItem } from './events.js';

const KEPT_ITEMS = 400;  // the live view's list is bounded: a desk can talk for days
const JOURNAL_ENTRIES = 50;
const REFRESH_MILLISECONDS = 5000;

function facts(status, budget) {
  const state = status.paused ? `${status.state}, paused` : status.state;
  return el('dl', { class: 'facts' },
    el('dt', {}, 'state'), el('dd', { class: 'desk-state' }, state ?? '—'),
    el('dt', {}, 'queue'), el('dd', {}, String(status.queued ?? '—')),
    el('dt', {}, 'model'), el('dd', {}, status.model ?? '—'),
    el('dt', {}, 'network'), el('dd', {}, status.network ?? '—'),
    el('dt', {}, 'mode'), el('dd', {}, status.mode ?? '—'),
    el('dt', {}, 'today'), el('dd', {}, budget
      ? `${dollars(budget.spent_usd)}${typeof budget.daily_usd === 'number' ? ` of ${dollars(budget.daily_usd)}` : ''}`
      : '—'));
}

export async function deskView(main, name) {
  const title = el('h1', {}, name);
  const factsBox = el('div', { class: 'facts-box' });
  const streamState = el('span', { class: 'badge stream-state' }, 'connecting');
  const live = el('ol', { class: 'live' });
  const sent = el('p', { class: 'sent quiet' });
  const message = el('textarea', { name: 'message', rows: 3, placeholder: 'A message, or a /command; during a turn it steers it', maxlength: 262144 });
  const kinds = el('datalist', { id: 'journal-kinds' });
  const kindInput = el('input', { name: 'kind', list: 'journal-kinds', placeholder: 'kind, e.g. TOOL_CALLED', autocomplete: 'off' });
  const journal = el('pre', { class: 'journal' }, 'Ask for the journal to see it here.');
  const answers = new Map();  // trigger id → COMMAND_ANSWERED reply, for the journal's answer
  const waiting = new Map();  // trigger id → who waits for its answer
  const seenKinds = new Set();

  async function send(text) {
    const reply = await op({ op: 'send', desk: name, text });
    sent.textContent = reply.ok ? `sent ${text.startsWith('/') ? text.split(' ')[0] : 'message'}: trigger ${reply.trigger}` : reply.error;
    sent.classList.toggle('problem', !reply.ok);
    return reply;
  }

  async function drawFacts() {
    const [status, budget] = await Promise.all([op({ op: 'status', desk: name }), op({ op: 'budget', desk: name })]);
    if (!status.ok) return replace(factsBox, el('p', { class: 'problem' }, status.error));
    replace(factsBox, facts(status.status, budget.ok ? budget.budget : null));
  }

  async function showJournal() {
    const kind = kindInput.value.trim();
    if (kind && !/^[A-Z_]+$/.test(kind)) {
      journal.textContent = 'A kind is written in capitals, like TOOL_CALLED.';
      return;
    }
    journal.textContent = 'Asking…';
    const reply = await send(`/journal ${JOURNAL_ENTRIES}${kind ? ` ${kind}` : ''}`);
    if (!reply.ok) return;
    const answer = answers.get(reply.trigger) ?? await new Promise((resolve) => waiting.set(reply.trigger, resolve));
    journal.textContent = answer;
  }

  const form = el('form', { class: 'send' }, message,
    el('div', { class: 'buttons' },
      el('button', { type: 'submit', class: 'primary' }, 'Send'),
      button('Stop', () => send('/stop'), 'stop'),
      button('Pause', () => send('/pause'), 'pause'),
      button('Resume', () => send('/resume'), 'resume')));
  form.addEventListener('submit', async (submitted) => {
    submitted.preventDefault();
    const text = message.value;
    if (!text.trim()) return;
    const reply = await send(text);
    if (reply.ok) message.value = '';
  });

  replace(main, title, factsBox,
    el('section', {}, el('h2', {}, 'Live ', streamState), live),
    el('section', {}, el('h2', {}, 'Send'), form, sent),
    el('section', {}, el('h2', {}, 'Journal'),
      el('div', { class: 'journal-ask' }, kindInput, kinds, button('Show', showJournal)), journal));
  await drawFacts();

  let factsTimer = null;
  const stopFollowing = follow({
    desk: name,
    replay: true,
    onState: (state) => { streamState.textContent = state; },
    onDropped: (dropped) => {
      live.append(el('li', { class: 'event note bad' }, `${dropped || 'some'} events were dropped: this page read too slowly`));
    },
    onEvent: (event) => {
      if (!seenKinds.has(event.kind)) {
        seenKinds.add(event.kind);
        kinds.append(el('option', { value: event.kind }));
      }
      if (event.kind === 'COMMAND_ANSWERED' && event.data?.trigger) {
        const reply = String(event.data.reply ?? '');
        answers.set(event.data.trigger, reply);
        if (answers.size > 50) answers.delete(answers.keys().next().value);
        waiting.get(event.data.trigger)?.(reply);
        waiting.delete(event.data.trigger);
      }
      const item = eventItem(event);
      if (item) {
        const atEnd = live.scrollTop + live.clientHeight >= live.scrollHeight - 40;
        live.append(item);
        while (live.childElementCount > KEPT_ITEMS) live.firstElementChild.remove();
        if (atEnd) live.scrollTop = live.scrollHeight;
      }
      // The state changes when a trigger ends, after its turn's last event.
      if (event.kind === 'TURN_STARTED' || event.kind === 'TRIGGER_FINISHED' || endsTurn(event) || event.kind.startsWith('DESK_')) {
        clearTimeout(factsTimer);
        factsTimer = setTimeout(drawFacts, 200);
      }
    },
  });
  const refreshTimer = setInterval(drawFacts, REFRESH_MILLISECONDS);
  return () => {
    clearTimeout(factsTimer);
    clearInterval(refreshTimer);
    stopFollowing();
  };
}
