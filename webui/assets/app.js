// The page's entry: loads spec.json, routes on the location's hash
// (#/ the list, #/?status=S&cursor=C a filtered page, #/runs/ID a run,
// #/new the form) so that a reload shows the same view, and asks for the
// token when the server answers 401.

import { setToken, token, unauthorized } from './api.js';
import { FormView } from './form.js';
import { ListView } from './list.js';
import { RunView } from './run.js';
import { reveal, setText, show } from './util.js';

const $ = (id) => document.getElementById(id);

function parseRoute() {
  const h = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = h.split('?');
  const params = Object.fromEntries(new URLSearchParams(qs || ''));
  if (path === '/new') return { view: 'new' };
  const m = path.match(/^\/runs\/([^/]+)$/);
  if (m) return { view: 'run', id: decodeURIComponent(m[1]) };
  return { view: 'list', params };
}

function listHash(params) {
  const q = new URLSearchParams();
  if (params.status) q.set('status', params.status);
  if (params.cursor) q.set('cursor', params.cursor);
  const s = q.toString();
  return s ? `#/?${s}` : '#/';
}

async function main() {
  const resp = await fetch('spec.json', { cache: 'no-cache' });
  if (!resp.ok) throw new Error('spec.json could not be loaded');
  const spec = await resp.json();

  const views = { list: $('view-list'), run: $('view-run'), new: $('view-new') };
  const list = new ListView(spec, (params) => { location.hash = listHash(params); });
  const showRun = (r) => { location.hash = `#/runs/${encodeURIComponent(r.id)}`; };
  const run = new RunView(spec, showRun);
  const form = new FormView(spec, showRun);

  let current = null;
  const route = () => {
    const r = parseRoute();
    show($('global-msg'), false);
    for (const [name, v] of Object.entries(views)) show(v, name === r.view);
    $('nav-runs').toggleAttribute('aria-current', r.view === 'list');
    if (r.view === 'list') $('nav-runs').setAttribute('aria-current', 'page');
    $('nav-new').toggleAttribute('aria-current', r.view === 'new');
    if (r.view === 'new') $('nav-new').setAttribute('aria-current', 'page');
    if (current !== 'list' || r.view !== 'list') list.hide();
    if (r.view !== 'run') run.hide();
    current = r.view;
    if (r.view === 'list') {
      document.title = 'Runs · specloop';
      list.show(r.params).catch(report);
    } else if (r.view === 'run') {
      document.title = `Run ${reveal(r.id)} · specloop`;
      run.show(r.id);
    } else {
      document.title = 'New run · specloop';
      form.show();
    }
  };

  const dialog = $('token-dialog');
  const openToken = (why) => {
    $('token-why').textContent = why;
    $('token-input').value = token();
    if (!dialog.open) dialog.showModal();
  };
  $('token-button').addEventListener('click', () => openToken('The server\'s bearer token. It stays in this tab (sessionStorage) and is sent only to this server.'));
  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    setToken($('token-input').value.trim());
    dialog.close();
    route();
  });
  $('token-forget').addEventListener('click', () => { setToken(''); $('token-input').value = ''; dialog.close(); });
  $('token-cancel').addEventListener('click', () => dialog.close());
  unauthorized.addEventListener('unauthorized', () => openToken(token()
    ? 'The server refused this token. Enter the right one.'
    : 'This server needs a token. Enter it once; it stays in this tab (sessionStorage).'));

  window.addEventListener('hashchange', route);
  route();
  document.body.dataset.ready = 'true';
}

function report(e) {
  const m = $('global-msg');
  setText(m, e && e.message ? e.message : 'something went wrong');
  show(m, true);
}

main().catch(report);
