// The form that starts a run: a CreateRunRequest (spec/agent.yaml) built
// from the fields, POST /v1/runs, then the new run's page.

import { api, APIError } from './api.js';
import { Provider } from './known.js';
import { el, setText, show } from './util.js';

const $ = (id) => document.getElementById(id);

function intField(id) {
  const v = $(id).value.trim();
  return v === '' ? undefined : Number(v);
}

// request builds the CreateRunRequest the form describes, or throws an
// Error naming the field that is wrong.
export function request() {
  const prompt = $('f-task').value;
  if (prompt.trim() === '') throw Object.assign(new Error('the task is required'), { field: 'f-task' });
  const provider = $('f-provider').value;
  let model;
  if (provider === Provider.script) {
    const responses = $('f-responses').value.split('\n').map((s) => s.trim()).filter((s) => s !== '');
    if (responses.length === 0) throw Object.assign(new Error('a script model needs at least one response'), { field: 'f-responses' });
    model = { provider, responses };
  } else {
    const name = $('f-model').value.trim();
    if (name === '') throw Object.assign(new Error('the model name is required'), { field: 'f-model' });
    model = { provider, model: name };
    const temperature = $('f-temperature').value.trim();
    if (temperature !== '') model.temperature = Number(temperature);
    const maxOut = intField('f-max-output');
    if (maxOut !== undefined) model.max_output_tokens = maxOut;
  }
  const req = { task: { prompt }, model };
  const workspace = $('f-workspace').value.trim();
  if (workspace !== '') req.workspace = workspace;
  const maxSteps = intField('f-max-steps');
  if (maxSteps !== undefined) req.max_steps = maxSteps;
  const budget = intField('f-token-budget');
  if (budget !== undefined) req.token_budget = budget;
  const policy = $('f-approval-policy').value;
  if (policy !== '') req.approval_policy = policy;
  const timeout = intField('f-approval-timeout');
  if (timeout !== undefined) req.approval_timeout_seconds = timeout;
  const check = $('f-check').value.trim();
  if (check !== '') req.check = check;
  return req;
}

// fieldIDs maps the problem's field (a JSON pointer into the request) to
// the form's input, to focus it.
const fieldIDs = {
  '/task': 'f-task', '/task/prompt': 'f-task', '/workspace': 'f-workspace', '/model': 'f-provider',
  '/model/provider': 'f-provider', '/model/responses': 'f-responses', '/model/model': 'f-model',
  '/model/temperature': 'f-temperature', '/model/max_output_tokens': 'f-max-output',
  '/max_steps': 'f-max-steps', '/token_budget': 'f-token-budget', '/check': 'f-check',
  '/approval_policy': 'f-approval-policy', '/approval_timeout_seconds': 'f-approval-timeout',
};

export class FormView {
  constructor(spec, onCreated) {
    const sel = $('f-provider');
    for (const p of spec.providers) sel.append(el('option', { value: p }, p));
    sel.value = spec.providers.includes(Provider.script) ? Provider.script : spec.providers[0];
    const policies = spec.enums.ApprovalPolicy || [];
    for (const p of policies) $('f-approval-policy').append(el('option', { value: p }, p));
    show($('approval-fields'), policies.length > 0);
    const steps = $('f-max-steps');
    steps.min = String(spec.max_steps.min);
    steps.max = String(spec.max_steps.max);
    steps.placeholder = String(spec.max_steps.default);
    const toggle = () => {
      show($('script-fields'), sel.value === Provider.script);
      show($('named-fields'), sel.value !== Provider.script);
    };
    sel.addEventListener('change', toggle);
    toggle();
    $('new-run-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit(onCreated);
    });
  }

  show() {
    $('f-task').focus();
  }

  fail(message, field) {
    const msg = $('form-msg');
    setText(msg, message);
    show(msg, true);
    const id = field && (fieldIDs[field] || (field.startsWith('f-') ? field : fieldIDs[field.replace(/\/\d+$/, '')]));
    if (id) $(id).focus();
  }

  async submit(onCreated) {
    show($('form-msg'), false);
    let req;
    try {
      req = request();
    } catch (e) {
      this.fail(e.message, e.field);
      return;
    }
    const b = $('f-submit');
    b.disabled = true;
    try {
      const run = await api('/v1/runs', { method: 'POST', body: req });
      onCreated(run);
    } catch (e) {
      this.fail(e instanceof APIError ? e.message : 'the run could not be started', e.field);
    } finally {
      b.disabled = false;
    }
  }
}
