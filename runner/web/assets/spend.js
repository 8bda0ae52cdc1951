// Spend: each desk's cost and tokens as SVG bar charts drawn here: today against its daily
// caps, then by India day (the days deskd keeps, the last two weeks shown), and today's
// split by model. Ops: spend (every desk's usage by day, priced) and budget (each desk's
// caps, spent and reserved today).

import { op } from './api.js';
import { count, deskLink, dollars, el, replace, svg } from './dom.js';

const DAYS_SHOWN = 14;
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

function dayLabel(date) {
  return String(date).slice(5);  // MM-DD: the year is the chart's
}

// One desk's days: a cost chart and a tokens chart, a bar a day.
function deskDays(desk) {
  const days = (desk.days ?? []).slice(-DAYS_SHOWN);
  if (!days.some((day) => day.requests > 0)) return el('p', { class: 'quiet' }, 'No model requests on the days kept.');
  const costs = days.map((day) => ({ label: dayLabel(day.date), value: day.cost_usd ?? 0,
    text: typeof day.cost_usd === 'number' ? dollars(day.cost_usd) : 'cost unknown' }));
  const tokens = days.map((day) => ({ label: dayLabel(day.date), value: day.tokens ?? 0, text: count(day.tokens ?? 0) }));
  return el('div', {}, barChart(`Cost by day (US dollars)`, costs), barChart('Tokens by day', tokens));
}

// Today's split by model, as numbers.
function modelSplit(desk) {
  const today = (desk.days ?? []).at(-1);
  const models = Object.entries(today?.models ?? {});
  if (!models.length) return el('p', { class: 'quiet' }, 'No model requests today.');
  return el('table', { class: 'split' },
    el('tr', {}, el('th', {}, 'model'), el('th', {}, 'requests'), el('th', {}, 'tokens in'), el('th', {}, 'tokens out'), el('th', {}, 'cost')),
    ...models.map(([name, usage]) => el('tr', {}, el('td', {}, name), el('td', {}, count(usage.requests ?? 0)),
      el('td', {}, count((usage.input_tokens ?? 0) + (usage.cache_read_tokens ?? 0) + (usage.cache_write_tokens ?? 0))),
      el('td', {}, count(usage.output_tokens ?? 0)),
      el('td', {}, typeof usage.cost_usd === 'number' ? dollars(usage.cost_usd) : 'unknown'))));
}

export async function spendView(main, tell) {
  const reply = await op({ op: 'spend' });
  if (!reply.ok) {
    tell(reply.error);
    return undefined;
  }
  const desks = (reply.desks ?? []).filter((desk) => desk.running);
  const budgets = await Promise.all(desks.map(async (desk) => {
    const budget = await op({ op: 'budget', desk: desk.desk });
    return budget.ok ? budget.budget : null;
  }));
  const costs = desks.map((desk, index) => {
    const budget = budgets[index];
    const value = (budget?.spent_usd ?? 0) + (budget?.reserved_usd ?? 0);
    const cap = typeof budget?.daily_usd === 'number' ? budget.daily_usd : undefined;
    return { label: desk.desk, value, cap, over: cap !== undefined && value >= cap, text: `${dollars(value)}${cap ? ` of ${dollars(cap)}` : ''}` };
  });
  const tokens = desks.map((desk, index) => {
    const budget = budgets[index];
    const value = (budget?.spent_tokens ?? 0) + (budget?.reserved_tokens ?? 0);
    const cap = typeof budget?.daily_tokens === 'number' ? budget.daily_tokens : undefined;
    return { label: desk.desk, value, cap, over: cap !== undefined && value >= cap, text: `${count(value)}${cap ? ` of ${count(cap)}` : ''}` };
  });
  const resets = budgets.find((budget) => budget?.resets)?.resets;
  replace(main, el('h1', {}, 'Spend'),
    el('p', { class: 'quiet' }, resets ? `Daily caps reset at ${resets}. ` : '', 'A line marks a daily cap; days are India days.'),
    desks.length ? barChart('Cost per desk today (US dollars, spent and reserved)', costs) : el('p', { class: 'quiet' }, 'No desk is running.'),
    desks.length ? barChart('Tokens per desk today', tokens) : null,
    ...desks.map((desk) => el('section', { class: 'card' }, el('h2', {}, deskLink(desk.desk)), deskDays(desk),
      el('h3', {}, 'Per model, today'), modelSplit(desk))));
  return undefined;
}
