// Spend: each desk's tokens and cost as SVG bar charts drawn here, against its daily cap,
// and the day's per-model split. Ops: status (the desks, and each desk's usage lines) and
// budget (spent_usd, spent_tokens, reserved, daily caps).
//
// What the ops do not give yet: days before today (a desk's usage.json holds only the
// current India day) and the per-model split as numbers (status gives it as the lines of
// /usage, shown here as text). The charts therefore show today, one bar per desk.

import { op } from './api.js';
import { count, deskLink, dollars, el, replace, svg } from './dom.js';

const BAR_HEIGHT = 22;
const LABEL_WIDTH = 110;
const CHART_WIDTH = 340;

// A horizontal bar chart: rows of {label, value, cap?, text}; a cap is drawn as a mark.
function barChart(title, rows) {
  const largest = Math.max(1e-12, ...rows.map((row) => Math.max(row.value, row.cap ?? 0)));
  const barSpace = CHART_WIDTH - LABEL_WIDTH - 10;
  const height = rows.length * (BAR_HEIGHT + 8) + 8;
  const chart = svg('svg', { viewBox: `0 0 ${CHART_WIDTH} ${height}`, class: 'chart', role: 'img' }, svg('title', {}, title));
  rows.forEach((row, index) => {
    const y = 8 + index * (BAR_HEIGHT + 8);
    const width = Math.max(1, (row.value / largest) * barSpace);
    chart.append(
      svg('text', { x: 0, y: y + BAR_HEIGHT * 0.7, class: 'chart-label' }, row.label.length > 14 ? `${row.label.slice(0, 13)}…` : row.label),
      svg('rect', { x: LABEL_WIDTH, y, width, height: BAR_HEIGHT, class: row.over ? 'bar over' : 'bar' }),
      svg('text', { x: LABEL_WIDTH + 4, y: y + BAR_HEIGHT * 0.7, class: 'bar-text' }, row.text));
    if (row.cap) {
      const x = LABEL_WIDTH + (row.cap / largest) * barSpace;
      chart.append(svg('line', { x1: x, x2: x, y1: y - 3, y2: y + BAR_HEIGHT + 3, class: 'cap' }));
    }
  });
  return el('figure', { class: 'chart-box' }, el('figcaption', {}, title), chart);
}

export async function spendView(main, tell) {
  const reply = await op({ op: 'status' });
  if (!reply.ok) {
    tell(reply.error);
    return undefined;
  }
  const desks = (reply.status?.desks ?? []).filter((desk) => desk.model !== undefined);
  const readings = await Promise.all(desks.map(async (desk) => {
    const [budget, status] = await Promise.all([op({ op: 'budget', desk: desk.name }), op({ op: 'status', desk: desk.name })]);
    return { name: desk.name, budget: budget.ok ? budget.budget : null, usage: status.ok ? status.status.usage : null };
  }));
  const costs = readings.map(({ name, budget }) => {
    const value = (budget?.spent_usd ?? 0) + (budget?.reserved_usd ?? 0);
    const cap = typeof budget?.daily_usd === 'number' ? budget.daily_usd : undefined;
    return { label: name, value, cap, over: cap !== undefined && value >= cap, text: `${dollars(value)}${cap ? ` of ${dollars(cap)}` : ''}` };
  });
  const tokens = readings.map(({ name, budget }) => {
    const value = (budget?.spent_tokens ?? 0) + (budget?.reserved_tokens ?? 0);
    const cap = typeof budget?.daily_tokens === 'number' ? budget.daily_tokens : undefined;
    return { label: name, value, cap, over: cap !== undefined && value >= cap, text: `${count(value)}${cap ? ` of ${count(cap)}` : ''}` };
  });
  const resets = readings.find((reading) => reading.budget?.resets)?.budget.resets;
  replace(main, el('h1', {}, 'Spend today'),
    el('p', { class: 'quiet' }, resets ? `Daily caps reset at ${resets}. ` : '',
      'Earlier days are not kept by deskd yet, so each chart shows today, one bar per desk; a line marks a daily cap.'),
    desks.length ? barChart('Cost per desk today (US dollars, spent and reserved)', costs) : el('p', { class: 'quiet' }, 'No desk is running.'),
    desks.length ? barChart('Tokens per desk today', tokens) : null,
    el('section', {}, el('h2', {}, 'Per model, today'),
      ...readings.map(({ name, usage }) => el('div', { class: 'card' }, el('h3', {}, deskLink(name)),
        el('pre', { class: 'usage' }, usage ?? '—')))));
  return undefined;
}
