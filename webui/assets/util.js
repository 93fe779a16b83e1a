// DOM and formatting helpers. Text from the server (or the model) only ever
// reaches the page as text, never as HTML, and with its invisible and
// control characters marked (visible).

// el builds an element: el('td', {class: 'num'}, 'text', child…).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

export function show(e, visible) {
  e.hidden = !visible;
}

// hiddenChar matches what text from the model must not do unseen on the
// page: control characters but newline and tab (C0, DEL, C1), format
// characters (\p{Cf}: the bidi overrides, embeddings, isolates and marks,
// zero-width spaces and joiners, the BOM, soft hyphens, tag characters),
// the line and paragraph separators, and lone surrogates. A bidi override
// in a file name makes notes\u202etxt.exe read as notes"exe.txt.
const hiddenChar = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
const hasHidden = new RegExp(hiddenChar.source, 'u');

function codePoint(c) {
  return 'U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0');
}

// reveal returns s with each hidden character written as <U+XXXX>, for
// where the page can put text only (a title, an attribute).
export function reveal(s) {
  return String(s).replace(hiddenChar, (c) => `<${codePoint(c)}>`);
}

// visible returns s as the page shows text from the server (which holds
// what the model wrote): a fragment of its text, each hidden character
// replaced by a marked <U+XXXX> span; '' for an empty or absent s.
export function visible(s) {
  if (s === undefined || s === null || s === '') return '';
  s = String(s);
  if (!hasHidden.test(s)) return s;
  const frag = document.createDocumentFragment();
  let last = 0;
  for (const m of s.matchAll(hiddenChar)) {
    if (m.index > last) frag.append(s.slice(last, m.index));
    const code = codePoint(m[0]);
    frag.append(el('span', { class: 'hidden-char', title: `an invisible or control character, ${code}, shown by its code` }, `<${code}>`));
    last = m.index + m[0].length;
  }
  if (last < s.length) frag.append(s.slice(last));
  return frag;
}

// setText fills e with visible(s).
export function setText(e, s) {
  e.replaceChildren(visible(s));
}

export function fmtMs(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return '';
  if (ms < 1) return ms.toFixed(2) + ' ms';
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

export function fmtAge(iso, now) {
  if (!iso) return '';
  const s = Math.max(0, (now - Date.parse(iso)) / 1000);
  if (s < 60) return Math.floor(s) + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min';
  if (s < 86400) return Math.floor(s / 3600) + ' h';
  return Math.floor(s / 86400) + ' d';
}

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return d.toLocaleString();
}

// runDuration is how long a run ran: to its end, or until now.
export function runDuration(run, now) {
  if (!run.started_at) return undefined;
  const end = run.finished_at ? Date.parse(run.finished_at) : now;
  return Math.max(0, end - Date.parse(run.started_at));
}

// summary renders a trace summary ("chars=N;sha256=HEX", what the
// privacy-safe trace keeps of a text) as "N chars" with the whole summary
// as its title; any other text is shown as it is (see visible).
export function summary(s) {
  if (!s) return '';
  const m = /^chars=(\d+);sha256=([0-9a-f]{64})$/.exec(s);
  if (!m) return el('span', { class: 'muted' }, visible(s));
  return el('span', { class: 'muted summary', title: s }, `${m[1]} chars`);
}

export function fmtTokens(u) {
  if (!u) return '';
  return `${u.input_tokens} in / ${u.output_tokens} out`;
}

// diffClasses gives each line of a unified diff its class: file headers
// (outside hunks), hunk headers, added, removed and context lines. Inside a
// hunk, a removed line that reads "--- x" is still a removed line.
export function diffClasses(lines) {
  let inHunk = false;
  return lines.map((line) => {
    if (line.startsWith('diff ')) inHunk = false;
    if (line.startsWith('@@')) { inHunk = true; return 'hunk'; }
    if (!inHunk) return 'file';
    if (line.startsWith('+')) return 'add';
    if (line.startsWith('-')) return 'del';
    return 'ctx';
  });
}

// renderDiff fills pre with the patch, one span per line, added and
// removed lines coloured by their class.
export function renderDiff(pre, patch) {
  const frag = document.createDocumentFragment();
  const lines = patch.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const classes = diffClasses(lines);
  lines.forEach((line, i) => frag.append(el('span', { class: classes[i] }, visible(line))));
  pre.replaceChildren(frag);
}

// metaList fills a <dl> with [term, value] pairs, skipping empty values.
export function metaList(dl, pairs) {
  const frag = document.createDocumentFragment();
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    frag.append(el('dt', null, k), el('dd', null, v));
  }
  dl.replaceChildren(frag);
}
