#include "src/admin/status_page.h"

namespace holdfast {
namespace {

constexpr char kStatusPage[] = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>holdfast</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2733; background: #f4f5f7; }
header { background: #1d2733; color: #fff; padding: 10px 20px; display: flex; gap: 22px;
         flex-wrap: wrap; align-items: baseline; }
header h1 { font-size: 18px; margin: 0; }
main { padding: 14px 20px; display: grid; gap: 14px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 10px 14px; }
h2 { font-size: 15px; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eef0f2; vertical-align: top; }
th { font-weight: 600; color: #4a5562; }
.nacking, .Rejected, .down { color: #b3261e; font-weight: 600; }
.pending, .Warning, .persisted { color: #9a6700; font-weight: 600; }
.synced, .Accepted, .up { color: #1a7f37; }
.mono { font-family: ui-monospace, monospace; font-size: 12px; }
.note { color: #4a5562; margin: 6px 0 0; }
#auth { display: none; border-color: #b3261e; }
</style>
</head>
<body>
<header>
  <h1>holdfast</h1>
  <span id="replica">loading</span>
  <span id="role"></span>
  <span id="store"></span>
  <span id="snapshot"></span>
  <span id="updated"></span>
</header>
<main>
  <section id="auth">
    <h2>Token required</h2>
    <p>This admin endpoint requires the bearer token of serve's <code>--admin-token-file</code>.
       It stays in this tab only.</p>
    <input id="token" type="password" size="44" aria-label="token"> <button id="use-token">Use token</button>
  </section>
  <section id="readiness-section"><h2>Replica</h2><div id="readiness"></div></section>
  <section><h2>Proxies</h2><table id="proxy-counts"></table><table id="proxies"></table>
    <p class="note" id="proxies-note"></p></section>
  <section><h2>Objects</h2><div id="object-counts"></div><table id="objects"></table>
    <p class="note" id="objects-note"></p></section>
  <section><h2>Recent events</h2><table id="events"></table></section>
</main>
<script>
'use strict';
const REFRESH_MS = 2000;
const MAX_OBJECT_ROWS = 200;
let token = sessionStorage.getItem('holdfast-token') || '';

class Unauthorized extends Error {}

async function get(path, asText) {
  const headers = token ? { Authorization: 'Bearer ' + token } : {};
  const response = await fetch(path, { headers, cache: 'no-store' });
  if (response.status === 401) throw new Unauthorized(path);
  if (response.status === 404) return null;
  if (!response.ok && path !== '/readyz') throw new Error(path + ': HTTP ' + response.status);
  return asText ? response.text() : response.json();
}

function el(tag, className, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(child ?? ''));
  }
  return node;
}

function fill(table, header, rows) {
  const head = el('tr', '', ...header.map(h => el('th', '', h)));
  table.replaceChildren(...(rows.length ? [head, ...rows] : []));
}

function ago(iso) {
  if (!iso) return '';
  const s = (Date.now() - Date.parse(iso)) / 1000;
  if (s < 90) return Math.max(0, Math.round(s)) + 's ago';
  if (s < 5400) return Math.round(s / 60) + 'm ago';
  return Math.round(s / 3600) + 'h ago';
}

function shortType(url) {
  const name = (url || '').split('/').pop();
  return ({ 'envoy.config.listener.v3.Listener': 'LDS',
            'envoy.config.route.v3.RouteConfiguration': 'RDS',
            'envoy.config.cluster.v3.Cluster': 'CDS',
            'envoy.config.endpoint.v3.ClusterLoadAssignment': 'EDS',
            'envoy.extensions.transport_sockets.tls.v3.Secret': 'SDS' })[name] || name;
}

function setText(id, text, className) {
  const node = document.getElementById(id);
  node.textContent = text;
  node.className = className || '';
}

function renderHeader(ready, replica, leader, store, snapshots) {
  if (replica) {
    setText('replica', 'v' + replica.version + ' · ' + replica.source + ' · up ' +
            ago(replica.started).replace(' ago', ''));
  }
  if (leader) {
    setText('role', leader.is_leader ? 'leader, term ' + leader.term
            : 'follower' + (leader.leader ? ' of ' + leader.leader : '') + ', term ' + leader.term);
  } else {
    setText('role', 'no election');
  }
  if (store) {
    setText('store', store.connected ? 'store connected'
            : 'store unreachable for ' + Math.round(store.unreachable_seconds) + 's',
            store.connected ? 'up' : 'down');
  } else {
    setText('store', '');
  }
  const group = snapshots && snapshots.groups && (snapshots.groups['default'] ||
                Object.values(snapshots.groups)[0]);
  const persisted = store && store.serving === 'persisted';
  setText('snapshot', group ? 'snapshot published ' + ago(group.created) +
          (persisted ? ' · serving last known good' : '') : 'no snapshot yet',
          persisted ? 'persisted' : '');
  const line = (ready || '').trim();
  setText('readiness', line, line.startsWith('ready') ? 'up' : 'down');
}

function renderProxies(fleet) {
  const groups = Object.entries(fleet.by_group || {});
  fill(document.getElementById('proxy-counts'), ['group', 'synced', 'pending', 'nacking'],
       groups.map(([group, c]) => el('tr', '', el('td', '', group),
         el('td', 'synced', String(c.synced || 0)), el('td', 'pending', String(c.pending || 0)),
         el('td', 'nacking', String(c.nacking || 0)))));
  fill(document.getElementById('proxies'), ['node', 'group', 'state', 'since', 'what'],
       fleet.troubled.map(p => el('tr', 'proxy',
         el('td', 'mono', p.node_id), el('td', '', p.group), el('td', p.state, p.state),
         el('td', '', ago(p.since)),
         el('td', 'mono', ...p.types.map(t => el('div', '', shortType(t.type_url) + ' ' +
           t.version + (t.error ? ': ' + t.error : ' awaits its ACK')))))));
  const unlisted = fleet.troubled_total - fleet.troubled.length;
  document.getElementById('proxies-note').textContent =
      fleet.total + ' proxies' + (fleet.troubled_total ? ', ' + fleet.troubled_total + ' not synced' : ', all synced') +
      (unlisted > 0 ? ' (' + unlisted + ' more not listed)' : '');
}

function objectRows(status) {
  if (status && Array.isArray(status.objects)) {
    return status.objects.map(o => ({
      status: o.status, what: o.kind + ' ' + o.namespace + '/' + o.name, where: o.location || '',
      why: (o.reasons || []).map(r => r.field + ': ' + r.message +
                                (r.location ? ' (' + r.location + ')' : '')).join('\n') }));
  }
  if (status && Array.isArray(status.rejected)) {  // --xds-dir: rejected input only
    return status.rejected.map(r => ({ status: 'Rejected', what: shortType(r.type_url) + ' ' + r.name,
                                       where: r.file + ':' + r.line, why: r.error }));
  }
  return [];
}

function renderObjects(status) {
  const rank = { Rejected: 0, Warning: 1 };
  const rows = objectRows(status).sort((a, b) => (rank[a.status] ?? 2) - (rank[b.status] ?? 2));
  const counts = {};
  for (const row of rows) counts[row.status] = (counts[row.status] || 0) + 1;
  document.getElementById('object-counts').replaceChildren(...Object.entries(counts).map(
      ([s, n]) => el('span', s, n + ' ' + s + '  ')));
  fill(document.getElementById('objects'), ['status', 'object', 'where', 'why'],
       rows.slice(0, MAX_OBJECT_ROWS).map(r => el('tr', 'object',
         el('td', r.status, r.status), el('td', 'mono', r.what), el('td', 'mono', r.where),
         el('td', 'mono', ...r.why.split('\n').map(line => el('div', '', line))))));
  document.getElementById('objects-note').textContent = rows.length > MAX_OBJECT_ROWS
      ? (rows.length - MAX_OBJECT_ROWS) + ' more not listed (holdfast status, /debug/status)' : '';
}

function renderEvents(events) {
  fill(document.getElementById('events'), ['when', 'what', ''],
       (events || []).map(e => el('tr', 'event', el('td', '', ago(e.at)), el('td', '', e.kind),
                                  el('td', '', e.message))));
}

async function refresh() {
  try {
    const [ready, replica, leader, store, snapshots, fleet, status, events] = await Promise.all([
      get('/readyz', true), get('/debug/replica'), get('/debug/leader'), get('/debug/store'),
      get('/debug/snapshot?resources=false'), get('/debug/fleet?limit=100'),
      get('/debug/status'), get('/debug/events')]);
    document.getElementById('auth').style.display = 'none';
    renderHeader(ready, replica, leader, store, snapshots);
    renderProxies(fleet);
    renderObjects(status);
    renderEvents(events);
    setText('updated', 'updated ' + new Date().toLocaleTimeString());
  } catch (error) {
    if (error instanceof Unauthorized) document.getElementById('auth').style.display = 'block';
    setText('updated', 'not updated: ' + error.message, 'down');
  }
  setTimeout(refresh, REFRESH_MS);
}

document.getElementById('use-token').addEventListener('click', () => {
  token = document.getElementById('token').value.trim();
  sessionStorage.setItem('holdfast-token', token);
});
refresh();
</script>
</body>
</html>
)html";

}  // namespace

HttpResponse StatusPage() {
  HttpResponse response;
  response.status = 200;
  response.content_type = "text/html; charset=utf-8";
  response.body = kStatusPage;
  // Only this document's own script and requests to this endpoint.
  response.headers.emplace_back("Content-Security-Policy",
                                "default-src 'none'; script-src 'unsafe-inline'; "
                                "style-src 'unsafe-inline'; connect-src 'self'; "
                                "frame-ancestors 'none'; form-action 'none'");
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return response;
}

}  // namespace holdfast
