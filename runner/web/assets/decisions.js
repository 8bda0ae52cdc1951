// Decisions: what waits for a person. Open proposals with their diffs (accept, reject: the
// accept and reject ops, which write the file with the owner's rights), and the API gate's
// held calls with their summaries and digests (approve, deny: the approve and deny ops).

import { op } from './api.js';
import { button, deskLink, el, replace } from './dom.js';

const REFRESH_MILLISECONDS = 5000;

// A unified diff, one line each, coloured by its first character (classes only: the text is
// the desk's).
function diffBlock(diff) {
  const block = el('pre', { class: 'diff' });
  for (const line of String(diff ?? '').split('\n')) {
    const kind = line.startsWith('+++') || line.startsWith('---') ? 'file'
      : line.startsWith('@@') ? 'hunk' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'remove' : 'same';
    block.append(el('span', { class: `diff-${kind}` }, line), '\n');
  }
  return block;
}

function proposalCard(proposal, decide) {
  return el('li', { class: 'card proposal', 'data-id': proposal.id },
    el('h3', {}, deskLink(proposal.desk), ' proposes a change to ', el('code', {}, proposal.path)),
    el('p', {}, el('span', { class: 'quiet' }, 'why: '), proposal.reason),
    el('p', { class: 'quiet' }, `${proposal.id} · ${proposal.time}`),
    diffBlock(proposal.diff),
    el('div', { class: 'buttons' },
      button('Accept', () => decide('accept', proposal.id), 'primary accept'),
      button('Reject', () => decide('reject', proposal.id), 'reject')));
}

function approvalCard(approval, decide) {
  return el('li', { class: 'card approval', 'data-id': approval.id },
    el('h3', {}, deskLink(approval.desk), ` · api ${approval.api}`),
    el('p', {}, el('code', {}, `${approval.method} ${approval.url}`)),
    el('pre', { class: 'prose' }, approval.summary),
    el('p', { class: 'digest' }, el('span', { class: 'quiet' }, 'sha256 '), el('code', {}, approval.sha256)),
    el('p', { class: 'quiet' }, `rule ${approval.rule} · asked ${approval.asked_at} · expires ${approval.expires_at}` +
      ` (in ${approval.expires_in_seconds} s)`),
    el('div', { class: 'buttons' },
      button('Approve once', () => decide('approve', approval.id), 'primary approve'),
      button('Deny', () => decide('deny', approval.id), 'deny')));
}

export async function decisionsView(main, tell) {
  const proposals = el('ul', { class: 'cards proposals' });
  const approvals = el('ul', { class: 'cards approvals' });
  const outcome = el('p', { class: 'outcome' });
  replace(main, el('h1', {}, 'Decisions'), outcome,
    el('section', {}, el('h2', {}, 'Proposals'), proposals),
    el('section', {}, el('h2', {}, 'API calls waiting for approval'), approvals));

  async function decide(operation, id) {
    const field = operation === 'accept' || operation === 'reject' ? 'proposal' : 'approval';
    const reply = await op({ op: operation, [field]: id });
    outcome.classList.toggle('problem', !reply.ok);
    outcome.textContent = reply.ok
      ? `${id}: ${reply[field]?.status ?? reply[field]?.decision ?? `${operation} done`}`
      : reply.error;
    await draw();
  }

  async function draw() {
    const [proposalReply, approvalReply] = await Promise.all([op({ op: 'proposals' }), op({ op: 'approvals' })]);
    if (!proposalReply.ok) tell(proposalReply.error);
    if (!approvalReply.ok) tell(approvalReply.error);
    const open = (proposalReply.proposals ?? []).filter((proposal) => proposal.status === 'open');
    replace(proposals, ...(open.length ? open.map((p) => proposalCard(p, decide)) : [el('li', { class: 'quiet' }, 'No open proposals.')]));
    const held = (approvalReply.approvals ?? []).filter((approval) => !approval.decision);
    replace(approvals, ...(held.length ? held.map((a) => approvalCard(a, decide)) : [el('li', { class: 'quiet' }, 'No API call waits.')]));
  }

  await draw();
  const timer = setInterval(draw, REFRESH_MILLISECONDS);
  return () => clearInterval(timer);
}
