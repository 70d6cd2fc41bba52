// The Reprise web UI: one page, routed by the URL's hash, drawing what the
// JSON API under /api/ answers. Every value from the server reaches the page
// as text (textContent, never innerHTML), so a workflow id or a payload
// cannot inject markup or script.
'use strict';

const STATUSES = ['RUNNING', 'COMPLETED', 'FAILED', 'CANCELED', 'TERMINATED', 'CONTINUED_AS_NEW', 'TIMED_OUT'];

// el('a', {href: '#/'}, 'text', child): an element; strings become text nodes.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function namespace() { return document.getElementById('namespace').value.trim(); }

class ApiError extends Error {}

async function api(path, params) {
  const query = new URLSearchParams({namespace: namespace()});
  for (const [k, v] of Object.entries(params || {})) if (v) query.set(k, v);
  const response = await fetch(path + '?' + query.toString());
  return answer(response);
}

async function post(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: {'Content-Type': 'application/json', 'X-Reprise-UI': '1'},
    body: JSON.stringify(Object.assign({namespace: namespace()}, body)),
  });
  return answer(response);
}

async function answer(response) {
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    throw new ApiError((body && body.error) || ('HTTP ' + response.status));
  }
  return body;
}

// A workflow returns one value: its result is a list of one payload.
function single(values) { return Array.isArray(values) && values.length === 1 ? values[0] : values; }
function badge(status) { return el('span', {class: 'badge ' + (status || '')}, status || '—'); }
function time(text) { return text ? text.replace('T', ' ').replace(/\.(\d{3})\d*Z$/, '.$1Z') : '—'; }
function workflowHref(id, run) {
  return '#/workflow/' + encodeURIComponent(id) + (run ? '/' + encodeURIComponent(run) : '');
}

// A JSON value as indented text in a <pre>; claim-check references
// ({"$ref": "sha256:…", "size": N}) become links that download the blob.
function jsonBlock(value, id) {
  const pre = el('pre', {class: 'json', id});
  write(pre, value, '');
  return pre;
}
function write(pre, value, indent) {
  if (value && typeof value === 'object' && typeof value.$ref === 'string' && value.$ref.startsWith('sha256:')) {
    const hex = value.$ref.slice(7);
    const href = '/api/blob?' + new URLSearchParams({sha256: hex, namespace: namespace()}).toString();
    pre.append(el('a', {href, class: 'blob-link', download: hex + '.bin'},
                  'claim-check ' + hex.slice(0, 12) + '… (' + value.size + ' bytes, download)'));
    return;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) { pre.append('[]'); return; }
    pre.append('[\n');
    value.forEach((v, i) => {
      pre.append(indent + '  ');
      write(pre, v, indent + '  ');
      pre.append(i + 1 < value.length ? ',\n' : '\n');
    });
    pre.append(indent + ']');
    return;
  }
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 0) { pre.append('{}'); return; }
    pre.append('{\n');
    keys.forEach((k, i) => {
      pre.append(indent + '  ' + JSON.stringify(k) + ': ');
      write(pre, value[k], indent + '  ');
      pre.append(i + 1 < keys.length ? ',\n' : '\n');
    });
    pre.append(indent + '}');
    return;
  }
  pre.append(JSON.stringify(value));
}

function show(...nodes) {
  const main = document.getElementById('main');
  main.replaceChildren(...nodes.flat().filter(n => n !== null && n !== undefined && n !== false));
  for (const a of document.querySelectorAll('header nav a')) {
    a.classList.toggle('active', a.getAttribute('href') === (location.hash.startsWith('#/server') ? '#/server' : '#/'));
  }
}
function failure(error) { return el('p', {class: 'error'}, error.message || String(error)); }

// The in-page confirmation: resolves true when the user confirms.
function confirmAction(text, yesLabel) {
  const box = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = text;
  const yes = document.getElementById('confirm-yes');
  yes.textContent = yesLabel;
  box.hidden = false;
  return new Promise(resolve => {
    const done = ok => { box.hidden = true; yes.onclick = null; document.getElementById('confirm-no').onclick = null; resolve(ok); };
    yes.onclick = () => done(true);
    document.getElementById('confirm-no').onclick = () => done(false);
  });
}

// ---- The workflow list ------------------------------------------------------

async function listPage(params) {
  const field = (label, input) => el('label', {}, label, input);
  const value = name => params.get(name) || '';
  const status = el('select', {id: 'f-status', name: 'status'}, el('option', {value: ''}, 'any'),
                    STATUSES.map(s => el('option', {value: s, selected: s === value('status')}, s)));
  const localTime = text => text ? text.replace(/Z$/, '').slice(0, 16) : '';
  const form = el('form', {class: 'filters', id: 'filters'},
    field('Workflow id starts with', el('input', {id: 'f-id-prefix', name: 'id_prefix', value: value('id_prefix')})),
    field('Type', el('input', {id: 'f-type', name: 'type', value: value('type')})),
    field('Status', status),
    field('Task queue', el('input', {id: 'f-queue', name: 'queue', value: value('queue')})),
    field('Started after (UTC)', el('input', {id: 'f-after', name: 'started_after', type: 'datetime-local', value: localTime(value('started_after'))})),
    field('Started before (UTC)', el('input', {id: 'f-before', name: 'started_before', type: 'datetime-local', value: localTime(value('started_before'))})),
    field('Per page', el('select', {id: 'f-page-size', name: 'page_size'},
      ['20', '50', '100'].map(n => el('option', {value: n, selected: n === (value('page_size') || '20')}, n)))),
    el('button', {type: 'submit', class: 'primary', id: 'f-apply'}, 'Filter'));
  form.addEventListener('submit', event => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form).entries()) {
      if (!v) continue;
      next.set(k, k.startsWith('started_') ? v + ':00Z' : v);
    }
    location.hash = '#/workflows?' + next.toString();
  });
  const body = el('tbody');
  const table = el('table', {id: 'workflows'},
    el('thead', {}, el('tr', {}, ['Workflow id', 'Run', 'Type', 'Task queue', 'Status', 'Started', 'Closed'].map(h => el('th', {}, h)))),
    body);
  const pager = el('div', {class: 'pager'});
  show(el('h1', {}, 'Workflows'), form, table, pager);

  const query = Object.fromEntries(params.entries());
  query.page_size = query.page_size || '20';
  let page;
  try {
    page = await api('/api/workflows', query);
  } catch (e) {
    table.replaceWith(failure(e));
    return;
  }
  for (const w of page.executions) {
    const id = w.execution.workflow_id, run = w.execution.run_id;
    body.append(el('tr', {'data-id': id},
      el('td', {class: 'id'}, el('a', {class: 'wf-link', href: workflowHref(id, run)}, id)),
      el('td', {class: 'id muted'}, run.slice(0, 8)),
      el('td', {}, w.type ? w.type.name : ''),
      el('td', {}, w.task_queue ? w.task_queue.name : ''),
      el('td', {}, badge(w.status)),
      el('td', {}, time(w.start_time)),
      el('td', {}, time(w.close_time))));
  }
  if (page.executions.length === 0) body.append(el('tr', {}, el('td', {colspan: 7, class: 'muted'}, 'No workflows match.')));
  if (params.get('next_page_token')) {
    const first = new URLSearchParams(params);
    first.delete('next_page_token');
    pager.append(el('a', {id: 'first-page', href: '#/workflows?' + first.toString()}, '« First page'));
  }
  if (page.next_page_token) {
    const next = new URLSearchParams(params);
    next.set('next_page_token', page.next_page_token);
    pager.append(el('a', {id: 'next-page', href: '#/workflows?' + next.toString()}, 'Next page »'));
  }
}

// ---- One workflow -----------------------------------------------------------

function attributesOf(event) {
  for (const [k, v] of Object.entries(event)) if (k !== 'event_id' && k !== 'event_time' && k !== 'event_type') return v;
  return {};
}

// Events grouped by what they are about: an activity's schedule, start and
// close; a timer's start and firing; a child's initiation to its close; a
// workflow task's schedule, start and completion. Others stand alone.
function groupEvents(events) {
  const groups = new Map();
  const add = (key, kind, title, event) => {
    if (!groups.has(key)) groups.set(key, {kind, title, events: []});
    const g = groups.get(key);
    if (title && !g.title) g.title = title;
    g.events.push(event);
  };
  for (const e of events) {
    const type = e.event_type || '', a = attributesOf(e);
    if (type.startsWith('ACTIVITY_TASK_')) {
      const scheduled = type === 'ACTIVITY_TASK_SCHEDULED';
      add('activity:' + (scheduled ? e.event_id : a.scheduled_event_id), 'activity',
          scheduled ? 'Activity ' + (a.activity_type ? a.activity_type.name : '') + ' (id ' + a.activity_id + ')' : '', e);
    } else if (type.startsWith('TIMER_')) {
      const started = type === 'TIMER_STARTED';
      add('timer:' + (started ? e.event_id : a.started_event_id), 'timer', started ? 'Timer ' + a.timer_id : '', e);
    } else if (type.startsWith('CHILD_WORKFLOW_') || type.startsWith('START_CHILD_WORKFLOW_')) {
      const initiated = type === 'START_CHILD_WORKFLOW_EXECUTION_INITIATED';
      add('child:' + (initiated ? e.event_id : a.initiated_event_id), 'child',
          initiated ? 'Child workflow ' + a.workflow_id : '', e);
    } else if (type.startsWith('WORKFLOW_TASK_')) {
      const scheduled = type === 'WORKFLOW_TASK_SCHEDULED';
      add('wft:' + (scheduled ? e.event_id : a.scheduled_event_id), 'workflow-task', 'Workflow task', e);
    } else if (type.endsWith('_EXTERNAL_WORKFLOW_EXECUTION_INITIATED')) {
      add('external:' + e.event_id, 'external', 'External ' + a.workflow_execution?.workflow_id, e);
    } else if (type.startsWith('EXTERNAL_WORKFLOW_EXECUTION_') || type.endsWith('_EXTERNAL_WORKFLOW_EXECUTION_FAILED')) {
      add('external:' + a.initiated_event_id, 'external', '', e);
    } else {
      const name = type === 'WORKFLOW_EXECUTION_SIGNALED' ? 'Signal ' + a.signal_name
                 : type === 'MARKER_RECORDED' ? 'Marker ' + a.marker_name
                 : type.toLowerCase().replace(/_/g, ' ').replace(/^./, c => c.toUpperCase());
      add('event:' + e.event_id, 'single', name, e);
    }
  }
  return [...groups.values()];
}

function timeline(events) {
  const box = el('div', {class: 'timeline', id: 'history'});
  for (const g of groupEvents(events)) {
    const last = g.events[g.events.length - 1].event_type || '';
    const failed = /FAILED|TIMED_OUT|TERMINATED/.test(last);
    box.append(el('div', {class: 'group ' + g.kind + (failed ? ' failed' : ''), 'data-kind': g.kind},
      el('div', {class: 'group-title'}, el('span', {}, g.title || g.kind), el('span', {class: 'muted'}, last)),
      g.events.map(e => el('details', {class: 'event', 'data-event-id': e.event_id},
        el('summary', {}, el('span', {class: 'eid'}, e.event_id), ' ', time(e.event_time), '  ', e.event_type),
        jsonBlock(attributesOf(e))))));
  }
  return box;
}

function pendingTable(id, headers, rows) {
  if (rows.length === 0) return el('p', {class: 'muted', id}, 'None.');
  return el('table', {id}, el('thead', {}, el('tr', {}, headers.map(h => el('th', {}, h)))),
    el('tbody', {}, rows.map(r => el('tr', {}, r.map(c => el('td', {}, c))))));
}

async function allEvents(id, run) {
  const events = [];
  let token = '';
  do {
    const page = await api('/api/history', {id, run, next_page_token: token});
    events.push(...page.events);
    token = page.next_page_token;
  } while (token);
  return events;
}

async function workflowPage(id, run) {
  show(el('h1', {id: 'wf-id'}, id), el('p', {class: 'muted'}, 'Loading…'));
  let described, events;
  try {
    [described, events] = await Promise.all([api('/api/workflow', {id, run}), allEvents(id, run)]);
  } catch (e) {
    show(el('h1', {id: 'wf-id'}, id), failure(e));
    return;
  }
  const info = described.info || {};
  const runId = (info.execution && info.execution.run_id) || run;
  const started = events.find(e => e.event_type === 'WORKFLOW_EXECUTION_STARTED');
  const closing = info.status !== 'RUNNING' ? events[events.length - 1] : null;
  const closeAttrs = closing ? attributesOf(closing) : null;
  const summary = el('dl', {class: 'summary'},
    el('dt', {}, 'Status'), el('dd', {}, el('span', {id: 'wf-status', class: 'badge ' + info.status}, info.status)),
    el('dt', {}, 'Run'), el('dd', {id: 'wf-run'}, runId),
    el('dt', {}, 'Type'), el('dd', {}, info.type ? info.type.name : ''),
    el('dt', {}, 'Task queue'), el('dd', {}, info.task_queue ? info.task_queue.name : ''),
    el('dt', {}, 'Started'), el('dd', {}, time(info.start_time)),
    el('dt', {}, 'Closed'), el('dd', {}, time(info.close_time)),
    el('dt', {}, 'History'), el('dd', {}, (info.history_length || 0) + ' events, ' + (info.history_size_bytes || 0) + ' bytes'),
    info.parent_execution ? [el('dt', {}, 'Parent'), el('dd', {}, el('a', {href: workflowHref(info.parent_execution.workflow_id, info.parent_execution.run_id)}, info.parent_execution.workflow_id))] : []);
  const blocked = described.last_workflow_task_failure
    ? el('div', {id: 'blocked'}, el('h2', {}, 'Blocked: the workflow task fails (attempt ' + described.workflow_task_attempt + ')'),
         jsonBlock(described.last_workflow_task_failure))
    : null;
  const problem = described.server_problem ? el('p', {class: 'error'}, 'Server: ' + described.server_problem) : null;

  const activities = (described.pending_activities || []).map(a => [
    a.activity_id, a.activity_type ? a.activity_type.name : '',
    a.started ? 'started' : (a.next_attempt_time ? 'backing off until ' + time(a.next_attempt_time) : 'scheduled'),
    String(a.attempt || 1),
    a.last_failure ? a.last_failure.message || '(failure)' : '—']);
  const timers = (described.pending_timers || []).map(t => [t.timer_id, time(t.fire_time)]);
  const children = (described.pending_children || []).map(c => [
    el('a', {href: workflowHref(c.workflow_id, c.run_id)}, c.workflow_id), c.workflow_type ? c.workflow_type.name : '']);

  const message = el('div', {id: 'action-message'});
  const act = async (work, done) => {
    message.replaceChildren();
    try {
      const result = await work();
      if (done) message.replaceChildren(el('p', {class: 'notice'}, done(result)));
    } catch (e) {
      message.replaceChildren(failure(e));
    }
  };
  const args = text => {
    const trimmed = text.trim();
    if (!trimmed) return [];
    const parsed = JSON.parse(trimmed);
    if (!Array.isArray(parsed)) throw new ApiError('Arguments must be a JSON array, one element per argument');
    return parsed;
  };
  const parseArgs = text => { try { return args(text); } catch (e) { throw new ApiError(e instanceof ApiError ? e.message : 'Arguments are not valid JSON: ' + e.message); } };
  const running = info.status === 'RUNNING';
  const target = {id, run: runId};

  const signalName = el('input', {id: 'signal-name', placeholder: 'signal name'});
  const signalArgs = el('textarea', {id: 'signal-args', placeholder: 'arguments as a JSON array, e.g. [{"approved": true}]'});
  const signalPanel = el('div', {class: 'panel'}, el('h3', {}, 'Signal'), el('div', {class: 'row'}, signalName), signalArgs,
    el('div', {class: 'row'}, el('button', {id: 'signal-send', class: 'primary', disabled: !running, onclick: () => act(async () => {
      const body = {...target, name: signalName.value.trim(), args: parseArgs(signalArgs.value)};
      if (!await confirmAction('Send signal "' + body.name + '" to ' + id + '?', 'Send signal')) return null;
      await post('/api/signal', body);
      route();
      return null;
    })}, 'Send signal…')));

  const queryName = el('input', {id: 'query-name', placeholder: 'query name'});
  const queryArgs = el('textarea', {id: 'query-args', placeholder: 'arguments as a JSON array, e.g. []'});
  const queryResult = el('div', {id: 'query-result'});
  const queryPanel = el('div', {class: 'panel'}, el('h3', {}, 'Query'), el('div', {class: 'row'}, queryName), queryArgs,
    el('div', {class: 'row'}, el('button', {id: 'query-run', class: 'primary', onclick: () => act(async () => {
      queryResult.replaceChildren();
      const answer = await post('/api/query', {...target, name: queryName.value.trim(), args: parseArgs(queryArgs.value)});
      queryResult.replaceChildren(jsonBlock(answer.result, 'query-answer'));
      return null;
    })}, 'Run query')), queryResult);

  const reason = el('input', {id: 'terminate-reason', placeholder: 'reason'});
  const stopPanel = el('div', {class: 'panel'}, el('h3', {}, 'Cancel or terminate'), el('div', {class: 'row'}, reason),
    el('div', {class: 'row'},
      el('button', {id: 'cancel-btn', disabled: !running, onclick: () => act(async () => {
        if (!await confirmAction('Request cancellation of ' + id + '? The workflow decides how to stop.', 'Request cancel')) return null;
        await post('/api/cancel', {...target, reason: reason.value});
        route();
        return null;
      })}, 'Request cancel…'),
      el('button', {id: 'terminate-btn', class: 'danger', disabled: !running, onclick: () => act(async () => {
        if (!await confirmAction('Terminate ' + id + ' now? Its code runs no further.', 'Terminate')) return null;
        await post('/api/terminate', {...target, reason: reason.value});
        route();
        return null;
      })}, 'Terminate…')));

  show(
    el('p', {}, el('a', {href: '#/'}, '« Workflows')),
    el('h1', {id: 'wf-id'}, id),
    problem, summary, blocked, message,
    el('div', {class: 'columns'}, signalPanel, queryPanel),
    stopPanel,
    el('div', {class: 'columns'},
      el('div', {}, el('h2', {}, 'Input'), jsonBlock(started ? attributesOf(started).input || [] : [], 'wf-input')),
      el('div', {}, el('h2', {}, 'Result'),
        closeAttrs ? jsonBlock(closeAttrs.result ? single(closeAttrs.result) : closeAttrs.failure || closeAttrs, 'wf-result')
                   : el('p', {class: 'muted', id: 'wf-result'}, 'Still running.'))),
    el('h2', {}, 'Pending activities'),
    pendingTable('pending-activities', ['Activity id', 'Type', 'State', 'Attempt', 'Last failure'], activities),
    el('h2', {}, 'Pending timers'), pendingTable('pending-timers', ['Timer id', 'Fires at'], timers),
    el('h2', {}, 'Pending children'), pendingTable('pending-children', ['Workflow id', 'Type'], children),
    el('h2', {}, 'History (' + events.length + ' events)'), timeline(events));
}

// ---- The server -------------------------------------------------------------

async function serverPage() {
  show(el('h1', {}, 'Server'), el('p', {class: 'muted'}, 'Loading…'));
  let state;
  try {
    state = await api('/api/server');
  } catch (e) {
    show(el('h1', {}, 'Server'), failure(e));
    return;
  }
  const queues = state.queues.map(q => [q.namespace, q.queue, q.kind, String(q.backlog), String(q.pollers)]);
  const metrics = state.metrics ? Object.entries(state.metrics).map(([name, v]) => [name, String(Math.round(v * 1000) / 1000)]) : [];
  show(el('h1', {}, 'Server'),
    state.problem ? el('p', {class: 'error', id: 'server-problem'}, state.problem) : el('p', {class: 'notice', id: 'server-problem'}, 'Serving: the store writes normally.'),
    el('dl', {class: 'summary', id: 'pending'},
      el('dt', {}, 'Requests in flight'), el('dd', {}, String(state.pending_requests)),
      el('dt', {}, 'Queries waiting'), el('dd', {}, String(state.pending_queries))),
    el('h2', {}, 'Task queues'),
    pendingTable('queues', ['Namespace', 'Queue', 'Task kind', 'Backlog', 'Parked polls'], queues),
    el('h2', {}, 'Metrics (every series of a family added up; /metrics has the detail)'),
    pendingTable('metrics', ['Metric', 'Value'], metrics));
}

// ---- Routing ----------------------------------------------------------------

function route() {
  const hash = location.hash || '#/';
  const [path, query] = hash.slice(1).split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'workflow' && parts[1]) return workflowPage(parts[1], parts[2] || '');
  if (parts[0] === 'server') return serverPage();
  return listPage(new URLSearchParams(query || ''));
}

window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', () => {
  const ns = document.getElementById('namespace');
  ns.value = sessionStorage.getItem('reprise-namespace') || 'default';
  ns.addEventListener('change', () => { sessionStorage.setItem('reprise-namespace', ns.value); route(); });
  route();
});
