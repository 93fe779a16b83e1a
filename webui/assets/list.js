// The runs list: one page of runs (newest first) from GET /v1/runs, a
// status filter, Newer/Older paging through the API's cursors, and live
// updates by polling the page on view every two seconds.

import { api } from './api.js';
import { ExitReason, RunStatus } from './known.js';
import { el, fmtAge, fmtMs, reveal, runDuration, visible } from './util.js';

export const pageSize = 100;
const pollEvery = 2000;

const $ = (id) => document.getElementById(id);

export function statusBadge(status) {
  return el('span', { class: `badge st-${status}` }, status);
}

export function exitBadge(result) {
  if (!result) return '';
  const bad = result.exit_reason !== ExitReason.finished;
  return el('span', { class: bad ? 'badge st-bad' : 'badge st-finished' }, result.exit_reason);
}

function row(run, now) {
  const link = el('a', { href: `#/runs/${encodeURIComponent(run.id)}`, class: 'mono' }, visible(run.id));
  const steps = run.result ? String(run.result.steps_used) : '';
  return el('tr', { 'data-run': run.id, 'data-status': run.status },
    el('td', { 'data-label': 'Run' }, link),
    el('td', { class: 'task', 'data-label': 'Task', title: run.task_line ? reveal(run.task_line) : null }, visible(run.task_line)),
    el('td', { 'data-label': 'Status' }, statusBadge(run.status)),
    el('td', { 'data-label': 'Exit reason' }, exitBadge(run.result)),
    el('td', { class: 'num', 'data-label': 'Steps' }, steps),
    el('td', { class: 'num', 'data-label': 'Duration' }, fmtMs(runDuration(run, now))),
    el('td', { class: 'num', 'data-label': 'Age', title: run.created_at }, fmtAge(run.created_at, now)),
    el('td', { class: 'mono', 'data-label': 'Workspace' }, visible(run.workspace)),
  );
}

// ListView shows the list for a route's parameters (status, cursor).
export class ListView {
  constructor(spec, nav) {
    this.nav = nav;
    this.history = []; // cursors of the newer pages, for "Newer"
    const sel = $('status-filter');
    for (const s of spec.enums.RunStatus || Object.values(RunStatus)) sel.append(el('option', { value: s }, s));
    sel.addEventListener('change', () => { this.history = []; this.nav({ status: sel.value }); });
    $('live-list').addEventListener('change', () => this.schedule());
    $('page-first').addEventListener('click', () => { this.history = []; this.nav({ status: this.status }); });
    $('page-prev').addEventListener('click', () => {
      const cursor = this.history.pop();
      this.nav({ status: this.status, cursor });
    });
    $('page-next').addEventListener('click', () => {
      if (!this.next) return;
      this.history.push(this.cursor);
      this.nav({ status: this.status, cursor: this.next });
    });
  }

  // show loads the page for params and keeps it live until hide.
  async show(params) {
    this.hide();
    this.status = params.status || '';
    this.cursor = params.cursor || '';
    $('status-filter').value = this.status;
    this.abort = new AbortController();
    await this.load();
    this.schedule();
  }

  hide() {
    if (this.abort) this.abort.abort();
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  schedule() {
    clearTimeout(this.timer);
    if (!this.abort || this.abort.signal.aborted || !$('live-list').checked) return;
    this.timer = setTimeout(async () => {
      if (document.visibilityState === 'visible') await this.load().catch(() => {});
      this.schedule();
    }, pollEvery);
  }

  async load() {
    const signal = this.abort.signal;
    const page = await api('/v1/runs', { query: { status: this.status, limit: pageSize, cursor: this.cursor }, signal });
    if (signal.aborted) return;
    const now = Date.now();
    const frag = document.createDocumentFragment();
    for (const r of page.runs) frag.append(row(r, now));
    $('runs-body').replaceChildren(frag);
    this.next = page.next_cursor || '';
    $('page-next').disabled = !this.next;
    $('page-prev').disabled = this.history.length === 0;
    $('page-first').disabled = !this.cursor;
    const n = page.runs.length;
    // After a reload on a later page the pages before it are unknown.
    const from = this.history.length * pageSize + 1;
    $('page-label').textContent = !n ? '' : (this.cursor && this.history.length === 0 ? `${n} runs` : `runs ${from}–${from + n - 1}`);
    $('list-info').textContent = n ? '' : (this.status ? `no ${this.status} runs` : 'no runs yet');
    document.body.dataset.listLoaded = String((Number(document.body.dataset.listLoaded) || 0) + 1);
    performance.mark('specloop:list-rendered');
  }
}
