// vc-mcp proxy dashboard: plain JS, no build step.
"use strict";
(function () {
  const rows = new Map(); // record id -> record
  let selected = null;
  const $ = (s) => document.querySelector(s);
  const grid = $("#grid tbody");

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  function tags(list, cls) {
    const span = el("span", {});
    for (const t of list || []) span.append(el("span", { class: "tag " + (cls || "") }, t));
    return span;
  }
  function ms(x) { return (x || 0).toFixed(1); }

  function cells(r) {
    const flags = [];
    if (r.broad) flags.push("broad");
    if (r.temporal) flags.push("temporal");
    if (r.first_sight) flags.push("first");
    if ((r.paging || []).length) flags.push("paging×" + r.paging.length);
    const time = new Date(r.time).toLocaleTimeString();
    return [
      r.id, time, r.instance, r.turn, r.format, r.stream ? "yes" : "no",
      tags(r.inbound_tags), tags(r.response_tags, "resp"),
      r.tokens_in + "→" + r.tokens_out, r.injected_tokens + "t",
      r.dropped + " msgs / " + r.turns_dropped + " turns",
      r.passthrough ? el("span", { class: "pass", title: r.passthrough }, "passthrough") : el("span", { class: "flag" }, flags.join(" ")),
      ms(r.overhead_ms), ms(r.upstream_ms), r.status,
    ];
  }

  function render(r, fresh) {
    rows.set(r.id, r);
    let tr = grid.querySelector('tr[data-id="' + r.id + '"]');
    const next = el("tr", { "data-id": r.id, "data-session": r.session, class: fresh ? "fresh" : "" });
    for (const c of cells(r)) next.append(el("td", {}, c));
    next.addEventListener("click", () => inspect(r.id));
    if (selected === r.id) next.classList.add("selected");
    if (tr) tr.replaceWith(next);
    else grid.prepend(next);
    $("#empty").hidden = rows.size > 0;
    if (selected === r.id) inspect(r.id);
  }

  function inspect(id) {
    const r = rows.get(id);
    if (!r) return;
    selected = id;
    for (const tr of grid.querySelectorAll("tr.selected")) tr.classList.remove("selected");
    const tr = grid.querySelector('tr[data-id="' + id + '"]');
    if (tr) tr.classList.add("selected");
    const body = $("#insp-body");
    body.replaceChildren();
    const dl = el("dl", {});
    const add = (k, v) => dl.append(el("dt", {}, k), el("dd", {}, v));
    add("session", r.session);
    add("model", r.model + " (window " + r.window + ")");
    add("path", r.path);
    add("turn", r.turn);
    add("messages", r.messages_in + " in, " + r.messages_out + " forwarded, " + r.dropped + " dropped");
    add("tokens", r.tokens_in + " in, " + r.tokens_out + " forwarded (estimates)");
    add("latency", "prepare " + ms(r.prepare_ms) + " ms, vc total " + ms(r.overhead_ms) + " ms, upstream " + ms(r.upstream_ms) + " ms");
    add("rounds", r.rounds);
    if (r.passthrough) add("passthrough", r.passthrough);
    if (r.store_error) add("store error", r.store_error);
    add("stored", r.stored + " messages" + (r.compacted ? ", compacted" : ""));
    body.append(dl);

    const b = r.breakdown || {};
    body.append(el("h3", {}, "Budget breakdown"));
    const bt = el("table", { id: "budget" });
    bt.append(el("tr", {}, el("th", {}, "budget"), el("th", {}, "turns"), el("th", {}, "summaries"), el("th", {}, "headers"), el("th", {}, "topic hint"), el("th", {}, "injected")));
    bt.append(el("tr", {}, el("td", {}, b.budget || 0), el("td", {}, b.turns || 0), el("td", {}, b.summaries || 0), el("td", {}, b.headers || 0), el("td", {}, b.topic_hint || 0), el("td", {}, r.injected_tokens)));
    body.append(bt);

    body.append(el("h3", {}, "Injected context"));
    body.append(el("pre", { id: "injected" }, r.injected || "(nothing injected)"));

    body.append(el("h3", {}, "Messages"));
    const list = el("div", { id: "messages" });
    for (const m of r.messages || []) {
      const cls = "msg" + (m.kept ? "" : " dropped");
      list.append(el("div", { class: cls }, el("span", { class: "role" }, m.role), el("span", {}, "turn " + m.turn), el("span", {}, (m.blocks || []).join(", ") || "text"), el("span", { class: "muted" }, "~" + m.tokens + "t" + (m.protected ? " protected" : ""))));
    }
    body.append(list);
    if ((r.paging || []).length) {
      body.append(el("h3", {}, "Paging calls"));
      for (const p of r.paging) body.append(el("div", {}, "round " + p.round + ": " + p.tool + " " + JSON.stringify(p.args) + " → " + p.chars + " chars" + (p.is_error ? " (error)" : "")));
    }
    if ((r.tools || []).length) {
      body.append(el("h3", {}, "Tools"));
      for (const t of r.tools) body.append(el("div", {}, (t.kept ? "✓ " : "✗ ") + t.name + ": " + t.why));
    }
    $("#inspector").hidden = false;
    $("#export").setAttribute("href", "api/export?session=" + encodeURIComponent(r.session));
    history(r.session);
  }

  async function history(session) {
    const box = $("#history");
    try {
      const res = await fetch("api/history?session=" + encodeURIComponent(session));
      if (!res.ok) { box.replaceChildren(el("p", { class: "muted" }, "Nothing stored yet for " + session + ".")); return; }
      const st = await res.json();
      const t = el("table", {});
      t.append(el("tr", {}, el("th", {}, "topic"), el("th", {}, "turns"), el("th", {}, "segments"), el("th", {}, "tokens"), el("th", {}, "depth")));
      for (const tag of (st.tags || []).slice(0, 40)) t.append(el("tr", {}, el("td", {}, tag.tag), el("td", {}, tag.turns), el("td", {}, tag.segments), el("td", {}, tag.full_tokens), el("td", {}, tag.depth)));
      const tot = st.totals || {};
      box.replaceChildren(el("p", {}, session + ": " + (tot.turns || 0) + " turns stored, " + (tot.segments || 0) + " segments, " + (tot.active_tokens || 0) + " active tokens"), t);
    } catch (e) {
      box.replaceChildren(el("p", { class: "muted" }, "history unavailable"));
    }
  }

  function sessions(list) {
    const tb = $("#sessions tbody");
    tb.replaceChildren();
    for (const s of list || []) {
      tb.append(el("tr", {}, el("td", {}, s.id), el("td", {}, s.instance), el("td", {}, s.requests), el("td", {}, s.turns), el("td", {}, s.stored), el("td", {}, s.injected_tokens + "t"), el("td", {}, s.dropped), el("td", {}, s.paging_calls), el("td", {}, s.passthroughs)));
    }
  }

  function bodies(list) {
    const ul = $("#bodies");
    ul.replaceChildren();
    for (const b of list || []) {
      const li = el("li", {}, "#" + b.id + " " + b.path + " (" + JSON.stringify(b.body).length + " bytes)");
      li.addEventListener("click", () => { const v = $("#body-view"); v.textContent = JSON.stringify(b.body, null, 2); v.hidden = false; });
      ul.append(li);
    }
  }

  async function refresh() {
    const res = await fetch("api/snapshot");
    const snap = await res.json();
    for (const r of (snap.records || []).slice().reverse()) render(r, false);
    sessions(snap.sessions);
    bodies(snap.bodies);
  }

  let pending = null;
  function refreshSide() {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      const snap = await (await fetch("api/snapshot")).json();
      sessions(snap.sessions);
      bodies(snap.bodies);
    }, 300);
  }

  function connect() {
    const es = new EventSource("api/events");
    es.onopen = () => { $("#live").textContent = "live"; $("#live").className = "on"; };
    es.onerror = () => { $("#live").textContent = "reconnecting…"; $("#live").className = "off"; };
    es.addEventListener("request", (e) => { render(JSON.parse(e.data), true); refreshSide(); });
    es.addEventListener("update", (e) => { render(JSON.parse(e.data), false); refreshSide(); });
  }

  $("#close").addEventListener("click", () => { $("#inspector").hidden = true; selected = null; });
  refresh().then(connect, connect);
})();
