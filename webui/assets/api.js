// The server's API as the page uses it: the token kept in sessionStorage,
// JSON requests, and the run's event stream read with fetch (EventSource
// cannot send an Authorization header) and resumed with Last-Event-ID.

const tokenKey = 'specloop.token';

export function token() {
  return sessionStorage.getItem(tokenKey) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(tokenKey, t);
  else sessionStorage.removeItem(tokenKey);
}

// The API is the page's parent directory (/ui/ -> /), so the page also
// works behind a proxy that mounts the server under a prefix.
const base = new URL('../', document.baseURI);

export function apiURL(path, query) {
  const u = new URL(path.replace(/^\//, ''), base);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  }
  return u;
}

// APIError is a failed request: its HTTP status and the problem document's
// detail (the server never echoes submitted values in it).
export class APIError extends Error {
  constructor(status, problem) {
    super(problem && (problem.detail || problem.title) ? (problem.detail || problem.title) : `the server answered ${status}`);
    this.status = status;
    this.field = problem ? problem.field : undefined;
  }
}

// unauthorized fires when the server asks for a token.
export const unauthorized = new EventTarget();

function headers(extra) {
  const h = Object.assign({}, extra);
  const t = token();
  if (t) h.Authorization = 'Bearer ' + t;
  return h;
}

async function failure(resp) {
  let problem = null;
  try { problem = await resp.json(); } catch { /* not a problem document */ }
  const err = new APIError(resp.status, problem);
  if (resp.status === 401) unauthorized.dispatchEvent(new Event('unauthorized'));
  return err;
}

export async function api(path, { method = 'GET', query, body, signal } = {}) {
  const init = { method, signal, cache: 'no-store', headers: headers({ Accept: 'application/json' }) };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(apiURL(path, query), init);
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

// parseBlock parses one Server-Sent Event (the lines before a blank line).
export function parseBlock(block) {
  const ev = { id: '', event: 'message', data: '' };
  const data = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') ev.id = value;
    else if (field === 'event') ev.event = value;
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return null;
  ev.data = data.join('\n');
  return ev;
}

// follow streams a run's events from after position `after`, calling
// onEvent(type, data, id) for each, and onState with 'live',
// 'reconnecting' or 'ended'. With content, the stream also carries the
// run's transcript entries (events named ContentEvent) and its ids are
// "P:S" (the trace position and the transcript seq). It reconnects (with
// Last-Event-ID) when the connection drops before run_finished, and
// returns after run_finished or when signal aborts; an error the server
// answers (404, 401…) is thrown.
export async function follow(runID, { after = 0, content = false, endEvent, onEvent, onState, signal }) {
  let last = after ? String(after) : '';
  let wait = 250;
  while (!signal.aborted) {
    let ended = false;
    try {
      const h = headers({ Accept: 'text/event-stream' });
      if (last) h['Last-Event-ID'] = last;
      const query = content ? { content: 'true' } : {};
      const resp = await fetch(apiURL(`/v1/runs/${encodeURIComponent(runID)}/events`, query), { headers: h, signal, cache: 'no-store' });
      if (!resp.ok) {
        const err = await failure(resp);
        if (resp.status !== 429 && resp.status < 500) throw err;
      } else {
        onState('live');
        wait = 250;
        const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        let cr = false; // a chunk ended in \r: the next may start with its \n
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          let text = cr ? '\r' + value : value;
          cr = text.endsWith('\r');
          if (cr) text = text.slice(0, -1);
          buf += text.replace(/\r\n?/g, '\n');
          let start = 0;
          let i;
          while ((i = buf.indexOf('\n\n', start)) >= 0) {
            const ev = parseBlock(buf.slice(start, i));
            start = i + 2;
            if (!ev) continue;
            if (ev.id) last = ev.id;
            onEvent(ev.event, JSON.parse(ev.data), last);
            if (ev.event === endEvent) ended = true;
          }
          buf = buf.slice(start);
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof APIError) throw e;
      // A dropped connection: reconnect below.
    }
    if (ended) { onState('ended'); return; }
    if (signal.aborted) return;
    onState('reconnecting');
    await sleep(wait, signal);
    wait = Math.min(wait * 2, 8000);
  }
}
