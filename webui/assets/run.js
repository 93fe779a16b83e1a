// The run page: the run's record (GET /v1/runs/{id}), its trace events
// followed live through the event stream (one table row per step), its
// transcript from the same stream (content=true: the task, the model's
// text, each call's arguments, what each tool returned, feedback and
// errors, in full), its result, token usage and patch, the cancel button,
// the approval buttons while the run waits for a person, and once the run
// has ended the reply box that continues its conversation (continueRun)
// with links to the runs before and after it.

import { api, APIError, follow } from './api.js';
import { ActionType, Approvals, ContentEvent, DeltaEvent, EventType, ExitReason, RunStatus } from './known.js';
import { exitBadge, statusBadge } from './list.js';
import { el, fmtMs, fmtTime, fmtTokens, metaList, renderDiff, runDuration, setText, show, summary, visible } from './util.js';

const $ = (id) => document.getElementById(id);

// newStep is the page's record of one step: the model's actions and what
// came of them, in trace order.
function newStep(n) {
  return { n, actions: [], results: [], modelMs: 0, usage: null, toolMs: 0, error: false, rejected: false };
}

function addUsage(a, b) {
  if (!b) return a;
  if (!a) return { input_tokens: b.input_tokens, output_tokens: b.output_tokens };
  return { input_tokens: a.input_tokens + b.input_tokens, output_tokens: a.output_tokens + b.output_tokens };
}

function line(...children) {
  return el('span', { class: 'line' }, ...children);
}

function stepRow(s, meanings) {
  const model = [];
  const calls = [];
  for (const a of s.actions) {
    model.push(line(a.action_type || ''));
    if (a.action_type === ActionType.toolCall) {
      const keys = (a.argument_keys || []).join(', ');
      calls.push(line(el('strong', null, visible(a.tool_name) || '?'), el('span', { class: 'keys' }, visible(`(${keys})`))));
    } else if (a.action_type === ActionType.finish) {
      calls.push(line(el('span', { class: 'muted' }, 'answer: '), summary(a.output)));
    }
  }
  if (s.usage) model.push(line(el('span', { class: 'muted' }, fmtTokens(s.usage))));
  const results = s.results.map((r) => {
    switch (r.kind) {
      case EventType.observation:
        if (r.is_error) {
          const code = r.error_code || 'error';
          return line(el('span', { class: 'err', title: (meanings && meanings[code]) || '' }, visible(`${r.tool_name || ''} ${code}`)), ' ', summary(r.output));
        }
        return line(el('span', { class: 'ok' }, visible(`${r.tool_name || ''} ok`)), ' ', summary(r.output));
      case EventType.modelFeedback:
        return line(el('span', { class: 'warn' }, `feedback: ${r.feedback_kind || ''}`), ' ', summary(r.output));
      case EventType.finishRejected:
        return line(el('span', { class: 'warn' }, `finish rejected: check exited ${r.exit_code}`), ' ', summary(r.output));
      case Approvals.event:
        return line(el('span', { class: 'warn' }, visible(`${r.tool_name || ''} waits for approval`)));
      case Approvals.decided:
        return line(el('span', { class: r.decision === Approvals.deny ? 'err' : 'ok' }, visible(`${r.tool_name || ''} ${r.decision || ''}`)), ' ', summary(r.output));
      default:
        return line(visible(r.kind));
    }
  });
  const time = [];
  if (s.modelMs) time.push(line('model ' + fmtMs(s.modelMs)));
  if (s.toolMs) time.push(line('tools ' + fmtMs(s.toolMs)));
  const cls = s.error ? 'error' : (s.rejected ? 'rejected' : null);
  // Each cell holds one element, so that on a phone (one card per row)
  // the cell is its label and that element.
  const cell = (attrs, ...children) => el('td', attrs, el('div', null, ...children));
  return el('tr', { 'data-step': s.n, class: cls },
    cell({ class: 'num', 'data-label': 'Step' }, String(s.n)),
    cell({ 'data-label': 'Model' }, ...model),
    cell({ 'data-label': 'Tool calls' }, ...calls),
    cell({ 'data-label': 'Result' }, ...results),
    cell({ class: 'num', 'data-label': 'Time' }, ...time),
  );
}

// block is a labelled text block of the transcript: the text as it is
// (never HTML), in a pre that keeps its lines.
function block(label, text, cls) {
  return el('div', { class: 'block' }, el('div', { class: 'label muted' }, label),
    el('pre', { class: cls ? `text ${cls}` : 'text' }, visible(text)));
}

// argBlocks shows a call's arguments one by one: a string as it is (a
// command, a file's content with its lines), anything else as JSON.
function argBlocks(args) {
  return Object.entries(args || {}).map(([k, v]) =>
    block(k, typeof v === 'string' ? v : JSON.stringify(v, null, 2), 'arg'));
}

// entryItem renders one transcript entry (TranscriptEntry) as a list item;
// followUp: the run continues another, and what it was asked is the
// person's message.
function entryItem(e, meanings, followUp) {
  const parts = [];
  const head = (...c) => parts.push(el('div', { class: 'head' }, el('span', { class: 'muted' }, `step ${e.step} · `), ...c));
  switch (e.event_type) {
    case EventType.runStarted:
      head(el('strong', null, followUp ? 'Follow-up' : 'Task'));
      parts.push(block(followUp ? 'the person wrote' : 'prompt', e.task, 'task'));
      break;
    case EventType.modelAction: {
      const a = e.action || {};
      const call = a.type === ActionType.toolCall;
      head(el('strong', null, call ? visible(a.tool_name) : 'finish'), call ? el('span', { class: 'muted' }, ' called') : '');
      if (e.text) parts.push(block('the model wrote', e.text, 'model-text'));
      parts.push(...(call ? argBlocks(a.arguments) : [block('answer', a.answer)]));
      break;
    }
    case EventType.observation: {
      const o = e.observation || {};
      if (o.is_error) {
        const code = o.error_code || 'error';
        head(el('span', { class: 'err', title: (meanings && meanings[code]) || '' }, visible(`${o.tool_name || ''} failed: ${code}`)));
        parts.push(block('error', o.content, 'error'));
        if (e.output) parts.push(block('output', e.output, 'output'));
      } else {
        head(el('span', { class: 'ok' }, visible(`${o.tool_name || ''} returned`)));
        parts.push(block('output', e.output !== undefined ? e.output : o.content, 'output'));
      }
      if (e.output_truncated_bytes) parts.push(el('p', { class: 'muted' }, `(${e.output_truncated_bytes} more bytes not kept)`));
      break;
    }
    case EventType.modelFeedback:
    case EventType.finishRejected:
      head(el('span', { class: 'warn' }, e.event_type === EventType.finishRejected ? 'finish rejected' : `feedback: ${(e.feedback && e.feedback.kind) || ''}`));
      if (e.feedback) parts.push(block('told the model', e.feedback.message));
      if (e.check && e.check.output_tail) parts.push(block(`check exited ${e.check.exit_code}`, e.check.output_tail, 'output'));
      break;
    case EventType.historyCompacted:
      head(el('span', { class: 'muted' }, 'history compacted'));
      if (e.summary) parts.push(block('summary', e.summary));
      break;
    case Approvals.event:
      head(el('span', { class: 'warn' }, visible(`${e.tool_name || ''} waits for approval`)));
      if (e.reason) parts.push(block('why', e.reason));
      break;
    case Approvals.decided:
      head(el('span', { class: e.decision === Approvals.deny ? 'err' : 'ok' }, visible(`${e.tool_name || ''} ${e.decision || ''}`)));
      if (e.reason) parts.push(block('reason', e.reason));
      break;
    case EventType.runFinished: {
      const r = e.result || {};
      head(el('strong', null, 'run finished: '), visible(r.exit_reason));
      if (r.error && r.exit_reason !== ExitReason.finished) parts.push(block('error', r.error, 'error'));
      break;
    }
    default:
      head(visible(e.event_type));
  }
  return el('li', { 'data-seq': e.seq, 'data-kind': e.event_type }, ...parts);
}

// runLink links to a run's view.
function runLink(id) {
  return el('a', { href: `#/runs/${encodeURIComponent(id)}` }, visible(id));
}

export class RunView {
  // onRun(run) shows the run a reply created.
  constructor(spec, onRun) {
    this.spec = spec;
    this.onRun = onRun;
    $('cancel-run').addEventListener('click', () => this.cancel());
    $('reply-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.reply();
    });
    $('reply-message').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        $('reply-form').requestSubmit();
      }
    });
  }

  show(id) {
    this.hide();
    this.id = id;
    this.run = null;
    this.steps = new Map();
    this.rows = new Map();
    this.dirty = new Set();
    this.started = null;
    this.finished = null;
    this.usage = null;
    this.reads = 0;
    this.approvalItems = 0;
    this.seq = 0; // the last transcript entry shown
    this.entries = [];
    this.liveStep = 0; // the step whose model text streams in, and the text so far
    this.liveText = '';
    this.task = '';
    this.next = ''; // the run that continues this one, once known
    this.sending = false;
    $('approval-list').replaceChildren();
    $('reply-message').value = '';
    show($('reply-msg'), false);
    show($('reply-section'), false);
    $('transcript').replaceChildren();
    show($('transcript-section'), false);
    this.abort = new AbortController();
    document.body.dataset.runState = 'loading';
    setText($('run-id'), id);
    $('steps-body').replaceChildren();
    $('run-meta').replaceChildren();
    $('run-msg').textContent = '';
    $('stream-state').textContent = '';
    show($('result'), false);
    show($('patch-section'), false);
    show($('approvals'), false);
    show($('cancel-run'), false);
    this.start();
  }

  hide() {
    if (this.abort) this.abort.abort();
    cancelAnimationFrame(this.frame);
    this.frame = 0;
  }

  async start() {
    const signal = this.abort.signal;
    try {
      await this.refresh();
      await follow(this.id, {
        content: true,
        endEvent: EventType.runFinished,
        signal,
        onEvent: (type, ev) => this.onEvent(type, ev),
        onState: (st) => {
          $('stream-state').textContent = st;
          $('stream-state').className = `badge st-${st}`;
        },
      });
      if (signal.aborted) return;
      this.flush();
      await this.refresh();
      await this.loadNext();
    } catch (e) {
      if (signal.aborted) return;
      setText($('run-msg'), e instanceof APIError ? e.message : 'the run could not be loaded');
      $('run-msg').className = 'err';
      document.body.dataset.runState = 'error';
    }
  }

  // refresh reads the run's record and shows it (the result once finished).
  // Reads may overlap (approval events start them): only the last one
  // started is shown, so an older answer never undoes a newer one.
  async refresh() {
    const signal = this.abort.signal;
    const read = ++this.reads;
    const run = await api(`/v1/runs/${encodeURIComponent(this.id)}`, { signal });
    if (signal.aborted || read !== this.reads) return;
    this.run = run;
    this.renderMeta();
    const ended = run.status === RunStatus.finished;
    if (ended && run.result) this.renderResult(run.result);
    document.body.dataset.runState = run.status;
    // Only a run that ended can be continued: one in flight has no reply
    // box and no later run to look for.
    show($('reply-section'), ended);
    if (run.status === Approvals.status) await this.loadApprovals();
    else show($('approvals'), false);
  }

  onEvent(type, ev) {
    if (type === DeltaEvent) {
      if (ev.step !== this.liveStep) this.liveText = '';
      this.liveStep = ev.step;
      this.liveText += ev.text;
      this.scheduleMeta();
      return;
    }
    if (this.liveText && type !== ContentEvent) { // the step's next summary event ends the streamed text: its entry holds it whole
      this.liveText = '';
      this.scheduleMeta();
    }
    switch (type) {
      case ContentEvent:
        // A reconnection may repeat nothing (the id resumes both), but an
        // entry is shown once whatever the stream does.
        if (ev.seq <= this.seq) return;
        this.seq = ev.seq;
        if (ev.event_type === EventType.runStarted && ev.task) this.task = ev.task;
        this.entries.push(ev);
        this.scheduleMeta();
        return;
      case EventType.runStarted:
        this.started = ev;
        if (this.run && this.run.status === RunStatus.queued) this.run.status = RunStatus.running;
        this.scheduleMeta();
        return;
      case EventType.runFinished:
        this.finished = ev;
        this.scheduleMeta();
        return;
    }
    let s = this.steps.get(ev.step);
    if (!s) {
      s = newStep(ev.step);
      this.steps.set(ev.step, s);
    }
    switch (type) {
      case EventType.modelAction:
        s.actions.push(ev);
        s.modelMs += ev.model_duration_ms || 0;
        s.usage = addUsage(s.usage, ev.usage);
        this.usage = addUsage(this.usage, ev.usage);
        break;
      case EventType.observation:
        s.results.push(Object.assign({ kind: type }, ev));
        s.toolMs += ev.tool_duration_ms || 0;
        if (ev.is_error) s.error = true;
        break;
      case EventType.modelFeedback:
        s.results.push(Object.assign({ kind: type }, ev));
        s.modelMs += ev.model_duration_ms || 0;
        s.usage = addUsage(s.usage, ev.usage);
        this.usage = addUsage(this.usage, ev.usage);
        s.rejected = true;
        break;
      case EventType.finishRejected:
        s.results.push(Object.assign({ kind: type }, ev));
        s.toolMs += ev.tool_duration_ms || 0;
        s.rejected = true;
        break;
      case Approvals.event:
      case Approvals.decided:
        // The run's status changes (waiting_for_approval and back): read
        // it, with the calls that wait.
        s.results.push(Object.assign({ kind: type }, ev));
        this.refresh().catch(() => {});
        break;
      default:
        s.results.push({ kind: type });
    }
    this.dirty.add(ev.step);
    this.scheduleMeta();
  }

  // Rendering waits for the next frame, so a burst of events (a stream
  // that resumes on a long run) costs one layout, not one per event.
  scheduleMeta() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.renderFrame());
  }

  // flush renders what waits for the next frame now: the run is over, and
  // its page must be whole when it says so.
  flush() {
    if (!this.frame) return;
    cancelAnimationFrame(this.frame);
    this.renderFrame();
  }

  renderFrame() {
    this.frame = 0;
    const meanings = this.spec.meanings.ErrorCode;
    const body = $('steps-body');
    const frag = document.createDocumentFragment();
    const steps = [...this.dirty].sort((a, b) => a - b);
    this.dirty.clear();
    for (const n of steps) {
      const row = stepRow(this.steps.get(n), meanings);
      const old = this.rows.get(n);
      this.rows.set(n, row);
      if (old) old.replaceWith(row);
      else frag.append(row);
    }
    body.append(frag);
    body.dataset.steps = String(this.rows.size);
    if (this.entries.length) {
      const list = $('transcript');
      const followUp = !!(this.run && this.run.continues);
      list.append(...this.entries.map((e) => entryItem(e, meanings, followUp)));
      this.entries = [];
      list.dataset.entries = String(this.seq);
      show($('transcript-section'), true);
    }
    this.renderMeta();
  }

  renderMeta() {
    const live = $('live-text');
    setText(live, this.liveText ? `step ${this.liveStep}, the model is writing: ${this.liveText}` : '');
    show(live, !!this.liveText);
    const run = this.run;
    if (!run) return;
    const now = Date.now();
    const st = this.finished ? RunStatus.finished : run.status;
    const tokens = (run.result && run.result.usage) || (this.finished && this.finished.usage) || this.usage;
    const dur = this.finished && this.finished.duration_ms !== undefined ? this.finished.duration_ms : runDuration(run, now);
    metaList($('run-meta'), [
      ['Status', statusBadge(st)],
      // The task's first line (a follow-up's: its message's) from the
      // record, or the transcript's; the trace's summary when the run
      // keeps no transcript.
      [run.continues ? 'Message' : 'Task', run.task_line ? visible(run.task_line) : (this.task ? visible(this.task.trim().split('\n')[0]) : (this.started ? summary(this.started.input_summary) : ''))],
      ['Workspace', visible(run.workspace) || '(root)'],
      ['Created', fmtTime(run.created_at)],
      ['Started', fmtTime(run.started_at || (this.started && this.started.time))],
      ['Finished', fmtTime(run.finished_at || (this.finished && this.finished.time))],
      ['Duration', fmtMs(dur)],
      ['Steps', this.started && this.started.max_steps ? `${this.rows.size} of ${this.started.max_steps}` : String(this.rows.size)],
      ['Tokens', fmtTokens(tokens)],
      ['Tools', this.started && this.started.tool_names ? visible(this.started.tool_names.join(', ')) : ''],
      // A run of one conversation with others: its first run, and the
      // runs just before and after it.
      ['Conversation', run.continues || this.next ? runLink(run.conversation_id) : ''],
      ['Continues', run.continues ? runLink(run.continues) : ''],
      ['Continued by', this.next ? runLink(this.next) : ''],
    ]);
    show($('cancel-run'), st !== RunStatus.finished);
  }

  renderResult(res) {
    const check = res.check;
    metaList($('result-meta'), [
      ['Exit reason', exitBadge(res)],
      ['Steps used', String(res.steps_used)],
      ['Tokens', fmtTokens(res.usage)],
      ['Check', check ? `${check.passed ? 'passed' : 'failed'} (exit code ${check.exit_code})` : ''],
      ['Sandbox', res.sandbox ? res.sandbox.backend : ''],
    ]);
    setText($('answer'), res.answer);
    show($('answer-box'), !!res.answer);
    setText($('run-error'), res.error);
    show($('error-box'), res.exit_reason !== ExitReason.finished && !!res.error);
    setText($('check-tail'), check && check.output_tail);
    show($('check-box'), !!(check && check.output_tail));
    show($('result'), true);
    if (res.patch) renderDiff($('patch'), res.patch);
    show($('patch-section'), !!res.patch);
    show($('cancel-run'), false);
  }

  // loadNext learns which run continues this one, if any: the run record
  // names the run it continues but not the one after it, which only the
  // conversation lists. It is read once the run's stream has ended (a run
  // in flight has no later run) and after a refused reply, never polled: a
  // conversation that grows elsewhere later shows on the next Send, whose
  // 409 names the run.
  async loadNext() {
    const signal = this.abort.signal;
    const id = this.id;
    let conv;
    try {
      conv = await api(`/v1/conversations/${encodeURIComponent(this.run.conversation_id)}`, { signal });
    } catch {
      return; // the links before and after are a courtesy: the view stands without them
    }
    if (signal.aborted || id !== this.id) return;
    const runs = conv.runs || [];
    const i = runs.findIndex((r) => r.id === id);
    this.next = i >= 0 && i + 1 < runs.length ? runs[i + 1].id : '';
    this.renderMeta();
  }

  // reply sends the person's message (continueRun) and shows the run it
  // starts; a refusal shows the server's detail next to the box and keeps
  // the message.
  async reply() {
    if (this.sending) return;
    const msg = $('reply-msg');
    const text = $('reply-message');
    show(msg, false);
    // An empty message goes too: the server's 400 says what is wrong.
    const signal = this.abort.signal;
    const b = $('reply-send');
    this.sending = true;
    b.disabled = true;
    try {
      const run = await api(`/v1/runs/${encodeURIComponent(this.id)}/messages`,
        { method: 'POST', body: { message: text.value }, signal });
      if (signal.aborted) return;
      text.value = '';
      this.onRun(run);
    } catch (e) {
      if (signal.aborted) return;
      setText(msg, e instanceof APIError ? e.message : 'the message was not sent');
      show(msg, true);
      text.focus();
      // Refused because a later run continues this one: show its link.
      if (e instanceof APIError && e.status === 409) this.loadNext();
    } finally {
      this.sending = false;
      b.disabled = false;
    }
  }

  async cancel() {
    const b = $('cancel-run');
    b.disabled = true;
    try {
      await api(`/v1/runs/${encodeURIComponent(this.id)}/cancel`, { method: 'POST', signal: this.abort.signal });
      $('run-msg').textContent = 'cancelling…';
      $('run-msg').className = 'muted';
    } catch (e) {
      setText($('run-msg'), e instanceof APIError ? e.message : 'the run could not be cancelled');
      $('run-msg').className = 'err';
    } finally {
      b.disabled = false;
    }
  }

  // loadApprovals lists the calls waiting for a decision (listApprovals),
  // each with its arguments in full (what the person decides on; the trace
  // has only their names) and the approve, approve-for-run and deny
  // buttons.
  async loadApprovals() {
    const signal = this.abort.signal;
    const data = await api(`/v1/runs/${encodeURIComponent(this.id)}/approvals`, { signal });
    if (signal.aborted) return;
    const items = data.approvals || [];
    // A call already shown keeps its element, and the list is left alone
    // when nothing changed: the reason being typed keeps the focus.
    const list = $('approval-list');
    const shown = new Map([...list.children].map((li) => [li.dataset.call, li]));
    const next = items.map((a) => shown.get(a.call_id) || this.approvalItem(a));
    if (next.length !== list.children.length || next.some((li, i) => li !== list.children[i])) list.replaceChildren(...next);
    show($('approvals'), items.length > 0);
  }

  approvalItem(a) {
    const reasonID = `approval-reason-${++this.approvalItems}`;
    const reason = el('input', { id: reasonID, type: 'text', autocomplete: 'off' });
    const msg = el('span', { role: 'status' });
    const buttons = [];
    const decide = async (decision) => {
      for (const b of buttons) b.disabled = true;
      try {
        const body = reason.value ? { decision, reason: reason.value } : { decision };
        await api(`/v1/runs/${encodeURIComponent(this.id)}/approvals/${encodeURIComponent(a.call_id)}`,
          { method: 'POST', body, signal: this.abort.signal });
        await this.refresh();
      } catch (e) {
        setText(msg, e instanceof APIError ? e.message : 'the decision was not recorded');
        msg.className = 'err';
        for (const b of buttons) b.disabled = false;
      }
    };
    const button = (label, decision, cls) => {
      const b = el('button', { type: 'button', class: cls, 'data-decision': decision }, label);
      b.addEventListener('click', () => decide(decision));
      buttons.push(b);
      return b;
    };
    // Everything of the call but the step is the model's: its invisible
    // and control characters are shown by their codes (visible).
    return el('li', { 'data-call': a.call_id },
      el('div', null, `Step ${a.step}: `, el('strong', null, visible(a.tool_name)),
        el('span', { class: 'muted' }, ' (call ', el('code', { class: 'call-id' }, visible(a.call_id)), ')'),
        a.expires_at ? el('span', { class: 'muted' }, ` (denied at ${fmtTime(a.expires_at)} if no one decides)`) : ''),
      a.reason ? el('p', { class: 'warn approval-note' }, visible(a.reason)) : '',
      el('pre', { class: 'text args', 'aria-label': 'Arguments' }, visible(JSON.stringify(a.arguments, null, 2))),
      el('div', { class: 'field' }, el('label', { for: reasonID }, 'Reason (optional; a denial tells the model)'), reason),
      el('div', { class: 'toolbar' },
        button('Approve', Approvals.approve, 'primary'),
        button('Approve for this run', Approvals.approveForRun),
        button('Deny', Approvals.deny, 'danger'),
        msg),
    );
  }
}
