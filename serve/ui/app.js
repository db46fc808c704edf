// orca serve's page: sessions, a session's conversation, its timeline (with
// what allowed, asked, rewrote or blocked each tool call), its parked
// approvals, the questions MCP servers ask (their forms), a chat box, and
// the runs of orca eval kept in the store, the schedules it fires. It talks to the API of the same origin (the
// sign-in cookie carries the token) and follows the session's events over
// Server-Sent Events. Data is put on the page as text, never as HTML (the
// model's Markdown too: markdown builds its nodes from text).
'use strict';

const $ = (s) => document.querySelector(s);
const EVENTS = ['session_started', 'session_ended', 'turn_started', 'iteration_started', 'llm_call_started', 'llm_call_completed',
  'llm_call_failed', 'tool_exec_started', 'tool_exec_completed', 'tool_exec_failed', 'user_message_injected', 'output_rejected',
  'tool_blocked', 'approval_requested', 'approval_resolved', 'hook_failed', 'hook_message', 'config_warning', 'middleware_failed',
  'compaction_started', 'compaction_completed', 'verification_completed', 'subagent_started', 'subagent_completed', 'turn_completed',
  'mcp_server_started', 'mcp_server_failed', 'mcp_server_dropped', 'mcp_server_reconnected', 'mcp_server_tools_changed',
  'tool_progress', 'elicitation_requested', 'elicitation_resolved'];

let current = null;   // the session shown
let source = null;    // its EventSource
let events = [];      // its events, in order
let renderQueued = false;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k.startsWith('data-')) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

async function api(method, path, body) {
  const opts = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  if (r.status === 401) {
    showLogin();
    throw new Error('sign in first');
  }
  const text = await r.text();
  const data = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error(data && data.error ? data.error.message : r.statusText);
  return data;
}

function showLogin() {
  $('#app').hidden = true;
  $('#login').hidden = false;
  $('#token').focus();
}

$('#login').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('#login-error').textContent = '';
  const r = await fetch('/v1/login', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token: $('#token').value }) });
  if (!r.ok) {
    $('#login-error').textContent = 'That is not the token.';
    return;
  }
  $('#token').value = '';
  start();
});

const num = (n) => (n || 0).toLocaleString('en');
const ms = (ns) => ns ? (ns / 1e6 >= 1000 ? (ns / 1e9).toFixed(1) + ' s' : Math.round(ns / 1e6) + ' ms') : '';
const plural = (n, w) => `${num(n)} ${w}${n === 1 ? '' : 's'}`;
const totalsText = (t) => t ? `${plural(t.turns, 'turn')} · ${plural(t.input_tokens + t.output_tokens, 'token')} · ${plural(t.tool_calls, 'tool call')} · $${(t.cost_usd || 0).toFixed(4)}` : '';

async function loadSessions() {
  const { sessions } = await api('GET', '/v1/sessions');
  const ul = $('#sessions');
  ul.replaceChildren(...sessions.map((s) => el('li', { class: s.id === current ? 'active' : '', 'data-id': s.id, onclick: () => select(s.id) },
    s.id, el('small', {}, s.last_prompt ? s.last_prompt.slice(0, 60) : 'no turn yet'), el('small', {}, totalsText(s.totals)))));
  $('#status').textContent = `${sessions.length} session${sessions.length === 1 ? '' : 's'}`;
}

$('#new-session').addEventListener('click', async () => {
  const s = await api('POST', '/v1/sessions', {});
  await loadSessions();
  select(s.id);
});

// loadSchedules lists the schedules the server fires (orca schedule),
// each with its state and when it is due next.
async function loadSchedules() {
  const { schedules } = await api('GET', '/v1/schedules');
  $('#schedules-head').hidden = schedules.length === 0;
  $('#schedules').replaceChildren(...schedules.map((sc) => el('li', { 'data-schedule': sc.id, onclick: () => showSchedule(sc.id) },
    sc.id, ' ', el('span', { class: 'badge ' + (sc.state === 'active' ? 'ok' : 'ask') }, sc.state),
    el('small', {}, `${sc.spec}${sc.time_zone ? ' in ' + sc.time_zone : ''}` + (sc.next_at ? ` · next ${new Date(sc.next_at).toLocaleString()}` : '')))));
}

// showSchedule shows a schedule, its last fires (each opens its
// session), and Pause or Resume, and Fire now.
async function showSchedule(id) {
  current = null;
  if (source) source.close();
  const sc = await api('GET', `/v1/schedules/${encodeURIComponent(id)}`);
  document.querySelectorAll('#sessions li, #evals li').forEach((li) => li.classList.remove('active'));
  document.querySelectorAll('#schedules li').forEach((li) => li.classList.toggle('active', li.dataset.schedule === id));
  $('#empty').hidden = true;
  $('#detail').hidden = true;
  $('#eval').hidden = true;
  $('#schedule').hidden = false;
  $('#schedule').dataset.id = id;
  $('#schedule-error').textContent = '';
  $('#schedule-title').textContent = id;
  $('#schedule-summary').textContent = `${sc.spec}${sc.time_zone ? ' in ' + sc.time_zone : ''} · ${sc.state}` +
    (sc.next_at ? ` · next ${new Date(sc.next_at).toLocaleString()}` : '') + ` · $${sc.spent_usd.toFixed(4)} spent` + (sc.cap_usd ? ` of $${sc.cap_usd.toFixed(2)}` : '');
  $('#schedule-pause').textContent = sc.state === 'paused' ? 'Resume' : 'Pause';
  $('#schedule-prompt').textContent = sc.prompt;
  $('#schedule-fires').replaceChildren(...(sc.fires || []).map((f) => el('div', { class: 'item', 'data-fire': f.at },
    el('span', { class: 'badge ' + (f.status === 'done' ? 'ok' : f.status === 'failed' ? 'bad' : 'ask') }, f.status), ' ',
    new Date(f.at).toLocaleString(), ' ',
    f.session_id ? el('a', { href: '#', onclick: (ev) => { ev.preventDefault(); $('#schedule').hidden = true; select(f.session_id); } }, f.session_id) : null,
    f.note ? el('small', { class: 'muted' }, ' ' + f.note) : null)));
  if (!sc.fires || sc.fires.length === 0) $('#schedule-fires').replaceChildren(el('p', { class: 'muted' }, 'No fires yet.'));
}

$('#schedule-pause').addEventListener('click', async () => {
  const id = $('#schedule').dataset.id;
  try {
    await api('POST', `/v1/schedules/${encodeURIComponent(id)}/${$('#schedule-pause').textContent === 'Resume' ? 'resume' : 'pause'}`);
    await loadSchedules();
    await showSchedule(id);
  } catch (e) {
    $('#schedule-error').textContent = e.message;
  }
});

$('#schedule-run').addEventListener('click', async () => {
  const id = $('#schedule').dataset.id;
  try {
    await api('POST', `/v1/schedules/${encodeURIComponent(id)}/run`);
    await showSchedule(id);
    // The fire runs on the server: show it again until it has ended.
    for (let i = 0; i < 600 && $('#schedule').dataset.id === id && !$('#schedule').hidden; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const sc = await api('GET', `/v1/schedules/${encodeURIComponent(id)}`);
      if (!(sc.fires || []).some((f) => f.status === 'running')) break;
    }
    await loadSessions();
    if ($('#schedule').dataset.id === id && !$('#schedule').hidden) await showSchedule(id);
  } catch (e) {
    $('#schedule-error').textContent = e.message;
  }
});

// loadEvals lists the runs of orca eval kept in the store (orca eval
// --record), newest first.
async function loadEvals() {
  const { runs } = await api('GET', '/v1/evals');
  $('#evals-head').hidden = runs.length === 0;
  $('#evals').replaceChildren(...runs.map((r) => el('li', { 'data-eval': r.id, onclick: () => showEval(r.id) },
    el('span', { class: 'badge ' + (r.passed ? 'ok' : 'bad') }, r.passed ? 'passed' : 'failed'), ' ', new Date(r.time).toLocaleString(),
    el('small', {}, `${r.suites.join(', ')} · ${plural(r.cases, 'case')}${r.failed ? ` · ${num(r.failed)} failed` : ''}${r.live ? ` · live ×${r.repeat}` : ''}`))));
}

// showEval shows a kept run of orca eval: each suite's cases, and what
// failed in each.
async function showEval(id) {
  current = null;
  if (source) source.close();
  const rep = await api('GET', `/v1/evals/${encodeURIComponent(id)}`);
  document.querySelectorAll('#sessions li').forEach((li) => li.classList.remove('active'));
  document.querySelectorAll('#evals li').forEach((li) => li.classList.toggle('active', li.dataset.eval === id));
  $('#empty').hidden = true;
  $('#detail').hidden = true;
  $('#schedule').hidden = true;
  $('#eval').hidden = false;
  $('#eval-title').textContent = id;
  $('#eval-summary').textContent = `${rep.passed ? 'passed' : 'failed'} · ${ms(rep.duration_ns)}` + (rep.cost_usd ? ` · $${rep.cost_usd.toFixed(4)}` : '');
  $('#eval-cases').replaceChildren(...rep.suites.map((s) => el('div', { class: 'suite' },
    el('h3', {}, `${s.name} — ${Math.round(s.pass_rate * 100)}% of ${plural(s.cases.length, 'case')} passed`,
      el('span', { class: 'badge ' + (s.passed ? 'ok' : 'bad') }, s.passed ? 'passed' : 'failed')),
    (s.failed_gates || []).map((g) => el('p', { class: 'error' }, 'gate failed: ' + g)),
    s.cases.map((c) => el('details', { class: 'turn case', 'data-case': c.name, open: !c.passed },
      el('summary', {}, el('span', { class: 'badge ' + (c.passed ? 'ok' : 'bad') }, c.passed ? 'ok' : 'failed'), ' ', c.name,
        c.runs.length > 1 ? el('small', { class: 'muted' }, ` ${c.passed_runs}/${c.runs.length} runs passed`) : null),
      c.runs.map((r, k) => [
        r.error ? el('div', { class: 'item error' }, (c.runs.length > 1 ? `run ${k + 1}: ` : '') + r.error) : null,
        (r.scores || []).filter((sc) => !sc.pass).map((sc) => el('div', { class: 'item' },
          el('b', {}, (sc.turn ? `turn ${sc.turn} ` : '') + sc.scorer), ': ', sc.detail || 'failed')),
      ]))))));
}

async function select(id) {
  current = id;
  events = [];
  if (source) source.close();
  $('#empty').hidden = true;
  $('#eval').hidden = true;
  $('#schedule').hidden = true;
  $('#detail').hidden = false;
  $('#session-title').textContent = id;
  document.querySelectorAll('#sessions li').forEach((li) => li.classList.toggle('active', li.dataset.id === id));
  await refresh();
  source = new EventSource(`/v1/sessions/${encodeURIComponent(id)}/events`);
  for (const name of EVENTS) {
    source.addEventListener(name, (m) => onEvent(id, Number(m.lastEventId), name, JSON.parse(m.data)));
  }
  renderTimeline();
}

function onEvent(id, seq, name, data) {
  if (id !== current) return;
  events.push({ seq, name, data });
  if (!renderQueued) {
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; renderTimeline(); });
  }
  if ((name === 'turn_completed' && !data.depth) || name === 'approval_requested' || name === 'compaction_completed') {
    refresh();
    loadSessions();
  }
  if (name === 'elicitation_requested' || name === 'elicitation_resolved') loadElicitations();
}

async function refresh() {
  const id = current;
  const s = await api('GET', `/v1/sessions/${encodeURIComponent(id)}`);
  if (id !== current) return;
  $('#session-totals').textContent = totalsText(s.totals) + (s.running_turn ? ' · running' : '');
  renderTranscript(s.transcript || []);
  renderApprovals(s.parked || []);
  loadElicitations();
}

// loadElicitations shows the questions of MCP servers that wait for an
// answer in the session shown.
async function loadElicitations() {
  const id = current;
  const { elicitations } = await api('GET', `/v1/elicitations?session=${encodeURIComponent(id)}`);
  if (id !== current) return;
  renderElicitations(elicitations || []);
}

// renderElicitations draws each question: a URL to open (never opened by
// the page itself), or its form — a field for each of the schema's, its
// default filled in — with accept, decline and cancel.
function renderElicitations(list) {
  $('#elicitations').replaceChildren(...list.map((q) => {
    const box = el('form', { class: 'approval elicitation', 'data-id': q.id },
      el('b', {}, `The MCP server ${q.server} asks`),
      el('div', {}, q.message || ''));
    const inputs = [];
    if (q.mode === 'url') {
      box.append(el('div', {}, el('a', { href: q.url, rel: 'noopener noreferrer', target: '_blank' }, q.url)),
        el('div', { class: 'muted' }, 'Open it yourself if you trust it, then say so.'));
    }
    for (const f of q.fields || []) {
      const start = q.content ? q.content[f.name] : undefined;
      const label = el('label', {}, el('span', {}, (f.title || f.name) + (f.required ? ' *' : '')));
      let input;
      switch (f.kind) {
        case 'boolean':
          input = el('input', { type: 'checkbox', name: f.name, checked: start === true });
          break;
        case 'enum':
          input = el('select', { name: f.name },
            f.required ? null : el('option', { value: '' }, '—'),
            (f.options || []).map((o) => el('option', { value: o.value, selected: o.value === start }, o.title)));
          break;
        case 'multi':
          input = el('span', { class: 'choices' }, (f.options || []).map((o) =>
            el('label', {}, el('input', { type: 'checkbox', name: f.name, value: o.value, checked: Array.isArray(start) && start.includes(o.value) }), ' ' + o.title)));
          break;
        case 'number':
        case 'integer':
          input = el('input', { type: 'number', name: f.name, step: f.kind === 'integer' ? '1' : 'any', min: f.minimum, max: f.maximum, value: start === undefined ? '' : String(start) });
          break;
        default:
          input = el('input', { type: f.format === 'email' ? 'email' : f.format === 'date' ? 'date' : f.format === 'uri' ? 'url' : 'text', name: f.name, value: start === undefined ? '' : String(start) });
      }
      inputs.push([f, input]);
      label.append(input);
      if (f.description) label.append(el('small', { class: 'muted' }, f.description));
      box.append(label);
    }
    const answer = (action) => async (ev) => {
      ev.preventDefault();
      const body = { action, by: 'web' };
      if (action === 'accept' && q.mode !== 'url') {
        body.content = {};
        for (const [f, input] of inputs) {
          let v;
          if (f.kind === 'boolean') v = input.checked;
          else if (f.kind === 'multi') v = [...input.querySelectorAll('input:checked')].map((c) => c.value);
          else if (input.value === '') continue; // left out: its default, if it has one
          else if (f.kind === 'number' || f.kind === 'integer') v = Number(input.value);
          else v = input.value;
          body.content[f.name] = v;
        }
      }
      try {
        await api('POST', `/v1/elicitations/${encodeURIComponent(q.id)}`, body);
        $('#chat-error').textContent = '';
      } catch (e) {
        $('#chat-error').textContent = e.message;
      }
      loadElicitations();
    };
    box.addEventListener('submit', answer('accept'));
    box.append(el('div', { class: 'row' },
      el('span', { class: 'muted' }, `Declined if not answered by ${new Date(q.expires_at).toLocaleTimeString()}.`),
      el('span', {},
        el('button', { class: 'primary accept', type: 'submit' }, q.mode === 'url' ? 'I opened it' : 'Send'),
        ' ',
        el('button', { class: 'decline', type: 'button', onclick: answer('decline') }, 'Decline'),
        ' ',
        el('button', { class: 'cancel', type: 'button', onclick: answer('cancel') }, 'Cancel'))));
    return box;
  }));
}

// markdown draws the model's Markdown — paragraphs, headings, lists,
// fenced code, `code`, **bold**, *emphasis*, [links](https://…) — as DOM
// nodes made from text: no HTML the model writes ever reaches the page as
// HTML, and a link goes only to http(s).
function markdown(src) {
  const out = [];
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  let para = [], list = null;
  const flush = () => {
    if (para.length) out.push(el('p', {}, inline(para.join(' '))));
    para = [];
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const fence = l.match(/^\s*(```|~~~)/);
    if (fence) {
      flush();
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      out.push(el('pre', {}, el('code', {}, code.join('\n'))));
      continue;
    }
    const h = l.match(/^(#{1,6})\s+(.*)$/);
    const item = l.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
    if (h) {
      flush();
      out.push(el('h' + Math.min(h[1].length + 1, 4), {}, inline(h[2])));
    } else if (item) {
      if (para.length) { out.push(el('p', {}, inline(para.join(' ')))); para = []; }
      const ordered = /\d/.test(item[1]);
      if (!list || list.ordered !== ordered) {
        list = { ordered, node: el(ordered ? 'ol' : 'ul', {}) };
        out.push(list.node);
      }
      list.node.append(el('li', {}, inline(item[2])));
    } else if (!l.trim()) {
      flush();
    } else {
      if (list) list = null;
      para.push(l.trim());
    }
  }
  flush();
  return out;
}

// inline draws `code`, **bold**, *emphasis* and [text](http…) of s.
function inline(s) {
  const out = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g;
  let last = 0, m;
  while ((m = re.exec(s))) {
    if (m.index > last) out.push(s.slice(last, m.index));
    if (m[1] !== undefined) out.push(el('code', {}, m[1]));
    else if (m[2] !== undefined) out.push(el('strong', {}, m[2]));
    else if (m[3] !== undefined) out.push(el('em', {}, m[3]));
    else out.push(el('a', { href: m[5], rel: 'noopener noreferrer', target: '_blank' }, m[4]));
    last = re.lastIndex;
  }
  if (last < s.length) out.push(s.slice(last));
  return out;
}

// shown draws an image or a PDF the session showed the model, by its
// digest: an image as itself, a PDF as a link to it.
function shown(media) {
  if (!media || !media.digest) return null;
  const src = `/v1/sessions/${encodeURIComponent(current)}/attachments/${encodeURIComponent(media.digest)}`;
  const dims = media.width ? ` ${media.width}×${media.height}` : '';
  const label = `${media.name || media.media_type}${dims}, ${size(media.size || 0)}`;
  if (media.media_type === 'application/pdf') return el('a', { class: 'attachment', href: src, target: '_blank', rel: 'noopener' }, '📄 ' + label);
  return el('figure', { class: 'attachment' }, el('img', { src, alt: label, title: label, loading: 'lazy' }), el('figcaption', { class: 'muted' }, label));
}

function size(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MB';
  if (n >= 1 << 10) return Math.round(n / 1024) + ' KB';
  return n + ' bytes';
}

function renderTranscript(msgs) {
  const out = [];
  for (const m of msgs) {
    for (const b of m.content || []) {
      if (b.type === 'image' || b.type === 'document') out.push(el('div', { class: 'msg ' + m.role }, el('span', { class: 'who' }, 'you showed'), shown(b.media)));
      for (const p of b.parts || []) out.push(el('div', { class: 'msg tool' }, el('span', { class: 'who' }, 'tool showed'), shown(p.media)));
      if (b.type === 'text' && b.text && m.role !== 'user') out.push(el('div', { class: 'msg md ' + m.role }, el('span', { class: 'who' }, 'agent'), markdown(b.text)));
      else if (b.type === 'text' && b.text) out.push(el('div', { class: 'msg ' + m.role }, el('span', { class: 'who' }, 'you'), b.text));
      if (b.type === 'tool_use') out.push(el('div', { class: 'msg tool' }, el('span', { class: 'who' }, 'tool call'), `${b.name} ${JSON.stringify(b.input)}`));
      if (b.type === 'tool_result') out.push(el('div', { class: 'msg tool' }, el('span', { class: 'who' }, b.is_error ? 'tool error' : 'tool result'), (b.content || '').slice(0, 2000)));
    }
  }
  $('#transcript').replaceChildren(...out);
}

function renderApprovals(parked) {
  $('#approvals').replaceChildren(...parked.map((p) => el('div', { class: 'approval', 'data-id': p.id },
    el('b', {}, `${p.tool_name} waits for your decision`),
    el('pre', {}, JSON.stringify(p.input, null, 2)),
    el('div', { class: 'muted' }, p.reason),
    el('div', { class: 'row' },
      el('span', { class: 'muted' }, 'Decide, and the turn goes on.'),
      el('span', {},
        el('button', { class: 'primary approve', type: 'button', onclick: () => decide(p.id, true) }, 'Approve'),
        ' ',
        el('button', { class: 'deny', type: 'button', onclick: () => decide(p.id, false) }, 'Deny'))))));
}

async function decide(id, approve) {
  try {
    const d = await api('POST', `/v1/approvals/${encodeURIComponent(id)}`, { approve, by: 'web' });
    const what = approve ? 'Approved' : 'Denied';
    $('#chat-error').textContent = d.resumed ? `${what}: the turn goes on.` : `${what}: a turn is running; the next message goes on from it.`;
  } catch (e) {
    $('#chat-error').textContent = e.message;
  }
  refresh();
}

// story says what the control plane did with one tool call.
function story(call) {
  const lines = [];
  for (const a of call.asked) lines.push(['asked', a.reason]);
  for (const r of call.resolved) {
    const parked = !r.allowed && (r.reason || '').startsWith('parked');
    lines.push([r.allowed ? 'approved' : parked ? 'parked' : 'refused', `${r.by}${r.scope ? ' (' + r.scope + ')' : ''}${r.reason && !parked ? ': ' + r.reason : parked ? ': a person decides' : ''}`]);
  }
  if (call.blocked) lines.push(['blocked by ' + call.blocked.by, call.blocked.reason]);
  if (call.end && call.end.allowed_by) {
    const a = call.end.allowed_by;
    lines.push(['allowed by ' + a.by, (a.rule ? a.rule + ' — ' : '') + (a.reason || '')]);
  }
  if (call.end && call.end.rewritten_by) lines.push(['input rewritten by', call.end.rewritten_by.join(', ')]);
  for (const h of call.hooks) lines.push([`hook ${h.handler}`, h.message || h.error]);
  for (const q of call.questions) {
    lines.push([`MCP server ${q.server} asked`, q.mode === 'url' ? `${q.message} (${q.url})` : q.message]);
    if (q.answer) lines.push([`${q.answer.action} by ${q.answer.by}`, q.answer.reason || (q.answer.fields || []).join(', ')]);
  }
  return lines.map(([k, v]) => el('div', { class: 'story' }, el('b', {}, k), ' ', v || ''));
}

function renderTimeline() {
  const turns = new Map();
  const calls = new Map();
  const turnOf = (d) => {
    if (!turns.has(d.turn_id)) turns.set(d.turn_id, { id: d.turn_id, items: [], end: null, input: '' });
    return turns.get(d.turn_id);
  };
  for (const { name, data: d } of events) {
    if (!d.turn_id) continue;
    const t = turnOf(d);
    const depth = d.depth || 0;
    switch (name) {
      case 'turn_started':
        if (!depth) t.input = d.input;
        break;
      case 'turn_completed':
        if (!depth) t.end = d;
        break;
      case 'llm_call_completed':
      case 'llm_call_failed':
        t.items.push({ kind: 'llm', depth, d, name });
        break;
      case 'tool_exec_started': {
        // A call parked for approval starts again when the turn goes on:
        // one entry, in its place, with its state now.
        const seen = calls.get(d.tool_use_id);
        if (seen) {
          seen.start = d;
          break;
        }
        const c = { kind: 'tool', depth, start: d, end: null, asked: [], resolved: [], blocked: null, hooks: [], questions: [] };
        calls.set(d.tool_use_id, c);
        t.items.push(c);
        break;
      }
      case 'tool_exec_completed':
      case 'tool_exec_failed':
        if (calls.has(d.tool_use_id)) calls.get(d.tool_use_id).end = d;
        break;
      case 'tool_progress':
        // How far a running call has come: its last word counts.
        if (calls.has(d.tool_use_id)) calls.get(d.tool_use_id).progress = d;
        break;
      case 'approval_requested':
        if (calls.has(d.tool_use_id)) calls.get(d.tool_use_id).asked.push(d);
        break;
      case 'elicitation_requested':
        if (calls.has(d.tool_use_id)) calls.get(d.tool_use_id).questions.push({ ...d, answer: null });
        break;
      case 'elicitation_resolved':
        if (calls.has(d.tool_use_id)) {
          const q = calls.get(d.tool_use_id).questions.find((x) => x.id === d.id);
          if (q) q.answer = d;
        }
        break;
      case 'approval_resolved':
        if (calls.has(d.tool_use_id)) calls.get(d.tool_use_id).resolved.push(d);
        break;
      case 'tool_blocked':
        if (calls.has(d.tool_use_id)) calls.get(d.tool_use_id).blocked = d;
        break;
      case 'hook_message':
      case 'hook_failed':
        if (d.tool_use_id && calls.has(d.tool_use_id)) calls.get(d.tool_use_id).hooks.push(d);
        else t.items.push({ kind: 'note', depth, text: `hook ${d.handler}: ${d.message || d.error}` });
        break;
      case 'subagent_started':
        t.items.push({ kind: 'note', depth, text: `subagent ${d.agent} started${d.background ? ' in the background' : ''}` });
        break;
      case 'subagent_completed':
        t.items.push({ kind: 'note', depth, text: `subagent ${d.agent} ${d.stop_reason}: ${(d.answer || d.error || '').slice(0, 200)}` });
        break;
      case 'output_rejected':
        t.items.push({ kind: 'note', depth, text: `answer rejected (${d.correction}): ${d.error}` });
        break;
      case 'middleware_failed':
        t.items.push({ kind: 'note', depth, text: `middleware ${d.middleware} (${d.chain}) failed: ${d.error}` });
        break;
    }
  }
  const out = [];
  for (const t of turns.values()) {
    const head = t.end ? `${t.end.stop_reason} · ${plural(t.end.iterations, 'iteration')} · ${plural(t.end.tool_calls, 'tool call')}` : 'running…';
    const items = t.items.map((it) => {
      const cls = `item depth${Math.min(it.depth, 3)}`;
      if (it.kind === 'llm') {
        const u = it.d.usage || {};
        return el('div', { class: cls + ' llm' }, `model call · iteration ${it.d.iteration} · ${num(u.input_tokens)} in / ${num(u.output_tokens)} out · ${ms(it.d.duration_ns)}`,
          it.name === 'llm_call_failed' ? el('span', { class: 'badge bad' }, 'failed') : null);
      }
      if (it.kind === 'note') return el('div', { class: cls + ' note muted' }, it.text);
      const s = it.start, e = it.end;
      const waiting = it.asked.length > it.resolved.length || it.resolved.some((r) => !r.allowed && (r.reason || '').startsWith('parked')) && !it.resolved.some((r) => r.allowed) ||
        !e && it.questions.some((q) => !q.answer);
      const state = e ? (e.is_error ? ['bad', it.blocked ? 'blocked' : 'failed'] : ['ok', 'done']) : (waiting ? ['ask', 'waiting'] : ['', 'running' + progressText(it.progress)]);
      return el('div', { class: cls + ' tool', 'data-tool-use-id': s.tool_use_id },
        el('span', { class: 'tool' }, `${s.tool_name} ${s.summary || ''}`),
        el('span', { class: 'badge ' + state[0] }, state[1]),
        e ? el('span', { class: 'muted' }, ' ' + ms(e.duration_ns)) : null,
        story(it),
        el('details', { class: 'io' }, el('summary', { class: 'muted' }, 'input and output'),
          el('pre', {}, JSON.stringify(s.input, null, 2)), e ? el('pre', { class: 'output' }, e.output || '') : null));
    });
    out.push(el('details', { class: 'turn', open: true, 'data-turn': t.id },
      el('summary', {}, el('b', {}, (t.input || '').slice(0, 80)), ' ', el('span', { class: 'muted' }, head)), items));
  }
  $('#timeline').replaceChildren(...out);
}

// progressText says how far a running call has come (its last
// tool_progress), as the terminal's spinner does: ' · 2/5 indexing src'.
function progressText(p) {
  if (!p) return '';
  const n = p.total ? (p.total === 100 ? `${p.progress}%` : `${p.progress}/${p.total}`) : `${p.progress}`;
  return ` · ${n}${p.message ? ' ' + p.message.slice(0, 60) : ''}`;
}

$('#chat').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const text = $('#message').value;
  if (!text.trim() || !current) return;
  $('#chat-error').textContent = '';
  try {
    // Files picked go with the message, their bytes in base64.
    const attachments = [];
    for (const f of $('#attach').files) {
      const bytes = new Uint8Array(await f.arrayBuffer());
      let bin = '';
      for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      attachments.push({ name: f.name, media_type: f.type, data: btoa(bin) });
    }
    const body = attachments.length ? { text, attachments } : { text };
    const r = await api('POST', `/v1/sessions/${encodeURIComponent(current)}/messages`, body);
    $('#message').value = '';
    $('#attach').value = '';
    if (r.queued) $('#chat-error').textContent = 'Queued into the running turn.';
  } catch (e) {
    $('#chat-error').textContent = e.message;
  }
});

$('#message').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) $('#chat').requestSubmit();
});

async function start() {
  try {
    await loadSessions();
  } catch (e) {
    return;
  }
  $('#login').hidden = true;
  $('#app').hidden = false;
  loadEvals().catch(() => {});
  loadSchedules().catch(() => {});
  const first = document.querySelector('#sessions li');
  if (first) select(first.dataset.id);
}

start();
