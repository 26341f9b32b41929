// Conclave escalation console: plain browser JavaScript, no framework, no build step.
// Inbox and detail come from the HTTP API; decisions arrive live over Server-Sent Events.
(function () {
  'use strict';
  const $ = (id) => document.getElementById(id);
  const state = { selected: null, detail: null };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') node.className = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
    return node;
  }

  // The token lives in this tab's session only (never localStorage, which outlives the tab and
  // every script of the origin can read); the id is not a secret.
  $('who').value = localStorage.getItem('conclave.who') || '';
  $('who').addEventListener('change', () => localStorage.setItem('conclave.who', $('who').value.trim()));
  localStorage.removeItem('conclave.token');
  $('token').value = sessionStorage.getItem('conclave.token') || '';
  $('token').addEventListener('change', () => {
    sessionStorage.setItem('conclave.token', $('token').value.trim());
    refreshInbox();
    connectFeed();
  });

  function authHeaders() {
    const token = $('token').value.trim();
    return token ? { Authorization: 'Bearer ' + token } : {};
  }

  async function api(path, options) {
    const headers = Object.assign({ 'Content-Type': 'application/json' }, authHeaders());
    const res = await fetch(path, Object.assign({ headers }, options || {}));
    const body = await res.json();
    if (!body.ok) throw Object.assign(new Error(body.error.message), { code: body.error.code });
    return body;
  }

  async function refreshInbox() {
    try {
      const { escalations } = await api('/escalations?status=open');
      $('inbox-count').textContent = '(' + escalations.length + ' open)';
      $('inbox').replaceChildren(
        ...escalations.map((e) =>
          el(
            'li',
            {
              'data-proposal-id': e.proposal_id,
              class: e.proposal_id === state.selected ? 'selected' : '',
              onclick: () => select(e.proposal_id),
            },
            el('div', {}, el('span', { class: 'tag' }, e.escalation.reason), e.domain),
            el('div', { class: 'muted' }, e.proposal_id),
            el('div', { class: 'muted' }, 'assigned to ' + (e.assignees.join(', ') || 'anyone') + ' · since ' + e.escalation.escalated_at),
          ),
        ),
      );
      if (escalations.length === 0) $('inbox').replaceChildren(el('li', { class: 'muted' }, 'Nothing waits for a human.'));
    } catch (err) {
      $('inbox').replaceChildren(el('li', { class: 'muted' }, 'inbox unavailable: ' + err.message));
    }
  }

  async function select(proposalId) {
    state.selected = proposalId;
    document.querySelectorAll('#inbox li').forEach((li) => li.classList.toggle('selected', li.dataset.proposalId === proposalId));
    try {
      state.detail = await api('/escalations/' + encodeURIComponent(proposalId));
      renderDetail();
    } catch (err) {
      $('detail').replaceChildren(el('p', { class: 'error' }, err.message));
    }
  }

  function renderDetail() {
    const { escalation: e, proposal: p, votes, binding } = state.detail;
    const open = e.status === 'open';
    const rows = p.responses.map((r) =>
      el(
        'tr',
        {},
        el('td', {}, r.participant_id),
        el('td', { class: r.response_type === 'endorse' ? 'approved' : 'rejected' }, r.response_type),
        el('td', {}, r.weight),
        el('td', {}, r.confidence + ' × ' + r.domain_authority + ' × ' + r.trust_score),
        el('td', {}, r.reason || ''),
      ),
    );
    const signOff = e.routing && e.routing.sign_off;
    $('detail').replaceChildren(
      el('div', {}, el('strong', {}, p.domain), ' ', el('span', { class: 'muted' }, p.proposal_id)),
      el(
        'p',
        {},
        el('span', { class: 'tag' }, e.escalation.reason),
        'escalated ',
        e.escalation.escalated_at,
        ' by ',
        e.escalation.requested_by,
        e.escalation.note ? ' — ' + e.escalation.note : '',
      ),
      el(
        'p',
        { class: 'muted' },
        'author ',
        p.author,
        ' · assigned to ',
        e.assignees.join(', ') || 'anyone',
        e.next_step_due_at ? ' · next ladder step ' + e.next_step_due_at : '',
      ),
      el('h2', {}, 'Payload'),
      el('pre', { 'data-testid': 'payload' }, JSON.stringify(p.payload, null, 2)),
      el('h2', {}, 'Responses (for ' + votes.for + ' / against ' + votes.against + ')'),
      el(
        'table',
        {},
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            el('th', {}, 'participant'),
            el('th', {}, 'type'),
            el('th', {}, 'weight'),
            el('th', {}, 'confidence × authority × trust'),
            el('th', {}, 'reason'),
          ),
        ),
        el('tbody', {}, ...rows),
      ),
      signOff
        ? el(
            'p',
            {},
            'Sign-off: ' +
              signOff.required +
              ' of ' +
              signOff.of.join(', ') +
              (signOff.veto ? ' (any may veto)' : '') +
              ' · so far: ' +
              (e.sign_offs.map((s) => s.by + ' ' + s.outcome).join(', ') || 'none'),
          )
        : '',
      open
        ? el(
            'div',
            {},
            el('h2', {}, 'Your resolution'),
            el('textarea', { id: 'note', 'data-testid': 'note', placeholder: 'Why? (required)' }),
            el(
              'div',
              { class: 'actions' },
              el('button', { class: 'approve', 'data-testid': 'approve', onclick: () => resolve('approved', binding) }, 'Approve'),
              el('button', { class: 'reject', 'data-testid': 'reject', onclick: () => resolve('rejected', binding) }, 'Reject'),
            ),
            el('div', { id: 'message', 'data-testid': 'message' }),
          )
        : el('p', { class: e.resolution ? e.resolution.outcome : '' }, 'Closed: ' + (e.resolution ? e.resolution.outcome : e.status)),
    );
  }

  async function resolve(outcome, binding) {
    const note = $('note').value.trim();
    const message = $('message');
    if (!note) {
      message.className = 'error';
      message.textContent = 'A note is required: say why.';
      return;
    }
    const body = { outcome, note, escalation_id: binding.escalation_id, payload_hash: binding.payload_hash };
    const who = $('who').value.trim();
    if (who) body.resolved_by = who;
    document.querySelectorAll('.actions button').forEach((b) => (b.disabled = true));
    try {
      const { proposal } = await api('/escalations/' + encodeURIComponent(state.selected) + '/resolve', {
        method: 'POST',
        body: JSON.stringify(body),
      });
      message.className = '';
      message.textContent =
        proposal.status === 'resolved' ? 'Resolved: ' + proposal.resolution.outcome : 'Sign-off recorded; waiting for the others.';
      refreshInbox();
    } catch (err) {
      message.className = 'error';
      message.textContent = err.code + ': ' + err.message;
      document.querySelectorAll('.actions button').forEach((b) => (b.disabled = false));
    }
  }

  function showDecision(d) {
    if (document.querySelector('#feed li[data-event-id="' + d.event_id + '"]')) return;
    const item = el(
      'li',
      { 'data-event-id': d.event_id, 'data-proposal-id': d.proposal_id, 'data-outcome': d.outcome },
      el('strong', { class: d.outcome }, d.outcome.toUpperCase()),
      ' (' + d.trigger + (d.resolved_by ? ' by ' + d.resolved_by : '') + ') ',
      el('span', { class: 'muted' }, d.domain + ' ' + d.proposal_id),
    );
    $('feed').prepend(item);
    while ($('feed').children.length > 100) $('feed').lastChild.remove();
    refreshInbox();
    if (state.selected === d.proposal_id) select(d.proposal_id);
  }

  // Server-Sent Events read with fetch, because EventSource cannot send the Authorization header.
  let feed = null;
  async function connectFeed() {
    if (feed) feed.abort();
    const mine = (feed = new AbortController());
    try {
      const res = await fetch('/console/decisions', { headers: authHeaders(), signal: mine.signal });
      if (!res.ok || !res.body) throw new Error('feed refused (' + res.status + ')');
      $('feed-state').textContent = 'live';
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          if (/^event: decision$/m.test(frame) && data) showDecision(JSON.parse(data));
        }
      }
    } catch (err) {
      if (mine.signal.aborted) return;
      $('feed-state').textContent = 'reconnecting… (' + err.message + ')';
    }
    if (!mine.signal.aborted) setTimeout(() => feed === mine && connectFeed(), 3000);
  }

  refreshInbox();
  connectFeed();
  setInterval(refreshInbox, 5000);
})();
