// deskd's dashboard: hash routes (#/, #/desk/NAME, #/decisions, #/refusals, #/spend), each
// a view that draws itself into <main> and returns what stops it (its event stream, its
// timers) when the route changes. Plain modules, no framework: the page must load quickly
// on a phone's slow link.

import { LoginNeeded, startSession } from './api.js';
import { decisionsView } from './decisions.js';
import { deskView } from './desk.js';
import { el, replace } from './dom.js';
import { overviewView } from './overview.js';
import { refusalsView } from './refusals.js';
import { spendView } from './spend.js';

const main = document.getElementById('view');
const problem = document.getElementById('problem');
let stopView = () => {};

/** Shows a sentence under the page (a refused op, a lost connection); empty hides it. */
export function tell(sentence) {
  problem.hidden = !sentence;
  problem.textContent = sentence || '';
}

// A hash a person typed may hold a lone % that decodeURIComponent refuses: it is the overview then.
function decodedHash() {
  try {
    return decodeURIComponent(location.hash.replace(/^#/, '')) || '/';
  } catch {
    return '/';
  }
}

function route() {
  const path = decodedHash();
  const desk = /^\/desk\/(.+)$/.exec(path);
  if (desk) return { name: 'overview', view: (into) => deskView(into, desk[1]) };
  switch (path) {
    case '/decisions': return { name: 'decisions', view: decisionsView };
    case '/refusals': return { name: 'refusals', view: refusalsView };
    case '/spend': return { name: 'spend', view: spendView };
    default: return { name: 'overview', view: overviewView };
  }
}

function show() {
  stopView();
  tell('');
  const { name, view } = route();
  for (const link of document.querySelectorAll('nav a')) {
    link.classList.toggle('current', link.dataset.route === name);
  }
  // Each view draws into a box of its own: a view that was still drawing when the route
  // changed (a fetch under way) then draws into a box no longer on the page, never over
  // the next view.
  const into = el('div', { class: 'view' }, el('p', { class: 'quiet' }, 'Loading…'));
  replace(main, into);
  let stopped = false;
  let stop = () => {};
  stopView = () => {
    stopped = true;
    stop();
  };
  Promise.resolve(view(into, tell))
    .then((stopper) => {
      stop = typeof stopper === 'function' ? stopper : () => {};
      if (stopped) stop();
    })
    .catch((error) => {
      replace(into, el('p', { class: 'problem' }, error.message));
    });
}

async function start() {
  try {
    const session = await startSession();
    document.getElementById('who').textContent = `${session.user ?? ''} · deskd ${session.version ?? ''}`;
  } catch (error) {
    if (error instanceof LoginNeeded) {
      replace(main, el('h1', {}, 'Log in'),
        el('p', {}, 'Open the one-time link that ', el('code', {}, 'deskctl web-url'),
          ' prints on the deskd host; it is good for five minutes.'));
      return;
    }
    replace(main, el('p', { class: 'problem' }, error.message));
    return;
  }
  window.addEventListener('hashchange', show);
  show();
}

start();
