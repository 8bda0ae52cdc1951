// The page's only ways to the daemon (docs/WEB.md): GET /api/session, POST /api/op with one
// control-protocol request and the CSRF header, and GET /api/events (Server-Sent Events of
// the events `deskctl follow` gets). Everything the page does is a control op of the one table.

let csrf = '';

/** Thrown when the server wants a login (TCP without the session cookie). */
export class LoginNeeded extends Error {}

/** Reads the session: {csrf, user, version}; remembers the CSRF token for op(). */
export async function startSession() {
  const response = await fetch('/api/session', { credentials: 'same-origin', cache: 'no-store' });
  if (response.status === 401) throw new LoginNeeded('Not logged in.');
  if (!response.ok) throw new Error(`The session could not be read (HTTP ${response.status}).`);
  const session = await response.json();
  csrf = String(session.csrf ?? '');
  return session;
}

/**
 * Sends one control-protocol request ({op: 'status', desk: 'nifty'}) and returns its reply
 * object ({ok: true, ...} or {ok: false, code, error}); a transport failure becomes an
 * {ok: false} reply too, so that every caller handles one shape.
 */
export async function op(request) {
  let response;
  try {
    response = await fetch('/api/op', {
      method: 'POST',
      credentials: 'same-origin',
      cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-Deskd-Csrf': csrf },
      body: JSON.stringify(request),
    });
  } catch (error) {
    return { ok: false, code: 'unreachable', error: `deskd could not be reached: ${error.message}` };
  }
  if (response.status === 401) return { ok: false, code: 'login', error: 'The login has ended: open a new link from `deskctl web-url`.' };
  if (response.status !== 200) return { ok: false, code: `http_${response.status}`, error: `deskd answered HTTP ${response.status}.` };
  try {
    return await response.json();
  } catch {
    return { ok: false, code: 'bad_reply', error: 'deskd answered with something that is not JSON.' };
  }
}

/**
 * Follows events: `onEvent(event)` for each ({id, time, desk, kind, data}), of one desk or
 * of all (desk empty), kept ones first with `replay`. `onDropped(n)` when the server dropped
 * events for a slow page. Returns a function that stops following. EventSource reconnects
 * on its own and resumes after the last id it saw (Last-Event-ID).
 */
export function follow({ desk = '', replay = false, onEvent, onDropped = () => {}, onState = () => {} }) {
  const query = new URLSearchParams();
  if (desk) query.set('desk', desk);
  if (replay) query.set('replay', '1');
  const search = query.toString();
  const source = new EventSource(`/api/events${search ? `?${search}` : ''}`);
  source.addEventListener('event', (message) => {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;  // not an event: nothing to show
    }
    if (event && typeof event === 'object') onEvent(event);
  });
  source.addEventListener('dropped', (message) => {
    try {
      onDropped(Number(JSON.parse(message.data).dropped) || 0);
    } catch {
      onDropped(0);
    }
  });
  source.addEventListener('open', () => onState('live'));
  source.addEventListener('error', () => onState(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting'));
  return () => source.close();
}

/** The reply's `field` when it is ok; throws its error sentence otherwise. */
export async function ask(request, field) {
  const reply = await op(request);
  if (!reply.ok) throw new Error(reply.error || `The ${request.op} request was refused (${reply.code}).`);
  return field ? reply[field] : reply;
}
