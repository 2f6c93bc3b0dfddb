// sessionfs ui: live updates (server-sent events) and copy buttons. The pages read without it.
'use strict';
(function () {
  // The session list: on a "sessions" event, its rows are fetched again and swapped in.
  const table = document.getElementById('sessions');
  if (table && window.EventSource) {
    const es = new EventSource(table.dataset.live || '/events');
    let busy = false;
    es.addEventListener('sessions', async () => {
      if (busy) return;
      busy = true;
      try {
        const u = new URL(location.href);
        u.searchParams.set('partial', 'rows');
        const r = await fetch(u, { credentials: 'same-origin' });
        if (r.ok) {
          const tpl = document.createElement('template');
          tpl.innerHTML = '<table>' + await r.text() + '</table>';
          const body = tpl.content.querySelector('tbody');
          if (body) table.tBodies[0].replaceWith(body);
        }
      } finally { busy = false; }
    });
  }

  // A conversation: the entries appended after the last one shown.
  const conv = document.getElementById('conversation');
  if (conv && conv.dataset.events && window.EventSource) {
    const last = () => { const n = conv.querySelectorAll('.entry'); return n.length ? n[n.length - 1].id.slice(1) : '0'; };
    const es = new EventSource(conv.dataset.events + '?after=' + encodeURIComponent(last()));
    es.addEventListener('open', () => { conv.dataset.stream = 'open'; }); // appends from here show live
    es.addEventListener('entry', (ev) => {
      const e = JSON.parse(ev.data);
      if (document.getElementById('e' + e.n)) return;
      let into = conv;
      if (e.sub) {
        const tail = conv.lastElementChild;
        if (tail && tail.matches('section.subagent') && tail.dataset.subagent === e.sub) {
          into = tail;
        } else {
          into = document.createElement('section');
          into.className = 'subagent';
          into.dataset.subagent = e.sub;
          const h = document.createElement('h3');
          h.textContent = 'Subagent ' + e.sub;
          into.append(h);
          conv.append(into);
        }
      }
      into.insertAdjacentHTML('beforeend', e.html);
    });
  }

  // Copy buttons beside each resume command.
  for (const code of document.querySelectorAll('#resume code')) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'copy';
    b.textContent = 'Copy';
    b.addEventListener('click', async () => {
      try { await navigator.clipboard.writeText(code.textContent); b.textContent = 'Copied'; }
      catch { b.textContent = 'Select and copy'; }
    });
    code.after(b);
  }
})();
