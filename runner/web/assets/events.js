// One event of the bus as the page shows it: the model's words, a tool call and its output,
// the turn's start and end. The kinds and their data are the event table's
// (runner/events/event_kinds.h); a kind the page does not know is shown by name with its
// data as JSON, so nothing is hidden. Every field is the desk's to choose: text nodes only.

import { clock, el, firstLines } from './dom.js';

const TOOL_OUTPUT_LINES = 12;

function text(data, field) {
  const value = data?.[field];
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

// A tool's input, short: its command, path or job id, else its JSON (as deskctl's {input:short}).
function shortInput(input) {
  if (input && typeof input === 'object') {
    for (const key of ['command', 'path', 'job', 'job_id', 'task']) {
      if (typeof input[key] === 'string') return input[key];
    }
  }
  return JSON.stringify(input ?? {});
}

function folded(body, lines) {
  const shown = firstLines(body, lines);
  if (!shown.cut) return el('pre', { class: 'output' }, shown.text);
  return el('details', { class: 'output' }, el('summary', {}, el('pre', {}, shown.text)), el('pre', {}, body));
}

// What each kind says: [class, ...children]. null: bookkeeping the live view leaves out.
const RENDERERS = {
  TURN_STARTED: () => ['turn-start', 'turn started'],
  TURN_FINISHED: (d) => ['turn-end', `turn finished${d.cut ? `, but its reply was cut (${text(d, 'cut')})` : ''}`],
  TURN_FAILED: (d) => ['turn-end bad', `turn failed: ${text(d, 'error')}`],
  TURN_STOPPED: (d) => ['turn-end', `turn stopped (${text(d, 'reason')})`],
  BUDGET_REACHED: (d) => ['turn-end bad', `budget reached: ${text(d, 'reason')}`],
  MODEL_TEXT: (d) => ['model', el('pre', { class: 'prose' }, text(d, 'text'))],
  MODEL_RETRYING: (d) => ['note', `the model call failed and is retried: ${text(d, 'reason')}`],
  MODEL_REPLY_CUT: (d) => ['note bad', `the model's reply was cut at ${text(d, 'limit')}; ${text(d, 'advice')}`],
  TOOL_CALLED: (d) => ['tool', el('code', {}, `> ${text(d, 'tool')} ${shortInput(d.input)}`)],
  TOOL_FINISHED: (d) => [d.is_error ? 'tool-output bad' : 'tool-output', d.is_error ? 'refused or failed:' : null,
    folded(text(d, 'text'), TOOL_OUTPUT_LINES)],
  STEERING_QUEUED: () => ['note', 'message queued for the running turn\'s next tool round'],
  STEERING_DELIVERED: () => ['note steer', 'message delivered to the running turn'],
  COMMAND_ANSWERED: (d) => ['command', el('strong', {}, text(d, 'command')), folded(text(d, 'reply'), 40)],
  SUBAGENT_STARTED: (d) => ['note', `subagent ${text(d, 'subagent')} started: ${text(d, 'task')}`],
  SUBAGENT_FINISHED: (d) => ['note', `subagent ${text(d, 'subagent')} ${text(d, 'state')}`],
  REFUSED: (d) => ['note bad', `refused by ${text(d, 'enforcer')}: ${text(d, 'what')}`],
  NETWORK_REFUSED: (d) => ['note bad', `network refused ${text(d, 'host')}:${text(d, 'port')}: ${text(d, 'why')}`],
  API_CALL_AWAITING_APPROVAL: (d) => ['note bad', `api ${text(d, 'api')}: ${text(d, 'method')} ${text(d, 'url')} waits for approval: `,
    el('a', { href: '#/decisions' }, 'decide')],
  PROPOSAL_ACCEPTED: (d) => ['note', `proposal ${text(d, 'proposal')} accepted by ${text(d, 'by')} (${text(d, 'path')})`],
  PROPOSAL_REJECTED: (d) => ['note', `proposal ${text(d, 'proposal')} rejected by ${text(d, 'by')} (${text(d, 'path')})`],
  DESK_STARTED: () => ['note', 'desk started'],
  DESK_STOPPED: () => ['note', 'desk stopped'],
  DESK_FAILED: (d) => ['note bad', `desk failed: ${text(d, 'error')}`],
  DESK_PAUSED: () => ['note', 'paused'],
  DESK_RESUMED: () => ['note', 'resumed'],
  TRIGGER_ACCEPTED: () => null,
  TRIGGER_QUEUED: () => null,
  TRIGGER_FINISHED: () => null,
};

/** Whether `kind` ends a turn for who watches it (the table's "ends turn" column). */
export function endsTurn(event) {
  if (event.kind === 'TURN_FAILED') return !event.data?.rollover;
  return ['TURN_FINISHED', 'TURN_STOPPED', 'BUDGET_REACHED', 'COMMAND_ANSWERED'].includes(event.kind);
}

/** The event as a list item; null for bookkeeping kinds. */
export function eventItem(event) {
  const render = RENDERERS[event.kind];
  const data = event.data && typeof event.data === 'object' ? event.data : {};
  const shown = render ? render(data) : ['other', `${event.kind} ${JSON.stringify(data)}`];
  if (shown === null) return null;
  const [className, ...body] = shown;
  return el('li', { class: `event ${className}`, 'data-kind': String(event.kind) },
    el('span', { class: 'time' }, clock(event.time)), ...body);
}

/** One line of plain text for the overview's "last lines". */
export function eventLine(event) {
  const data = event.data && typeof event.data === 'object' ? event.data : {};
  switch (event.kind) {
    case 'MODEL_TEXT': return firstLines(text(data, 'text'), 1).text;
    case 'TOOL_CALLED': return `> ${text(data, 'tool')} ${shortInput(data.input)}`;
    case 'TOOL_FINISHED': return `  ${firstLines(text(data, 'text'), 1).text}`;
    case 'TURN_STARTED': return 'turn started';
    case 'TURN_FINISHED': return 'turn finished';
    case 'TURN_FAILED': return `turn failed: ${text(data, 'error')}`;
    case 'TURN_STOPPED': return `turn stopped (${text(data, 'reason')})`;
    case 'STEERING_DELIVERED': return 'message delivered to the running turn';
    default: return null;
  }
}
