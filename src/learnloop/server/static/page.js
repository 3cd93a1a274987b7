// The learner page: adaptive sessions over learning API v2 and a pronunciation exercise over the voice API.
// Plain JavaScript, no dependencies; every request goes to the server that served the page.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";

  const state = {
    key: "",
    user: "",
    items: new Map(), // item_id -> item of the item database
    catalog: null, // the chosen catalog
    catalogs: new Map(), // catalog_id -> catalog of the application
    catalogWanted: null, // the catalog named in the address (#catalog=...), until shown
    nodes: new Map(), // topic_id -> {group, shape, value} of the graph
    session: null, // session_context
    recommendation: null,
    shownAt: 0,
  };

  // what the recommender's reason keywords mean, for the learner
  const REASONS = {
    knowledge_retention: "a review of something you may be forgetting",
    observed_knowledge_gap: "practice where your answers showed a gap",
    predicted_knowledge_gap: "practice where a gap is likely",
    content_progression: "the next step through the course",
    assessment: "a question that tells the most about what you know",
    exploration: "something new, to learn more about what you know",
  };
  const STOPS = {
    max_proficiency: "the proficiency target was reached",
    max_interaction_count: "the planned number of interactions was reached",
    max_duration_ms: "the time limit was reached",
  };

  // ---- helpers -----------------------------------------------------------------------------
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (name === "text") node.textContent = value;
      else node.setAttribute(name, value);
    }
    node.append(...children);
    return node;
  }

  function svg(tag, attrs = {}) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    return node;
  }

  function percent(value) {
    return value === null || value === undefined ? "—" : `${Math.round(value * 100)} %`;
  }

  function duration(ms) {
    const seconds = Math.round(ms / 100) / 10;
    if (seconds < 60) return `${seconds.toFixed(1)} s`;
    const minutes = Math.floor(seconds / 60);
    return `${minutes} min ${Math.round(seconds - minutes * 60)} s`;
  }

  function showError(message) {
    const box = $("error");
    box.textContent = message;
    box.hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }

  function busy(on) {
    document.body.dataset.busy = on ? "1" : "0";
  }

  function fill(list, rows) {
    list.replaceChildren(...rows.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: value })]));
  }

  // ---- requests ----------------------------------------------------------------------------
  function credentials() {
    return state.key ? { "X-API-KEY": state.key } : {};
  }

  async function v2(endpoint, body) {
    const response = await fetch(`v2/${endpoint}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...credentials() },
      body: JSON.stringify(body ?? {}),
    });
    const doc = await response.json().catch(() => null);
    if (!response.ok || !doc || !doc.data) {
      const message = doc?.error?.message ?? `HTTP ${response.status}`;
      throw new Error(`${endpoint}: ${message}${response.status === 401 ? " (check the API key under Connection)" : ""}`);
    }
    return doc.data;
  }

  async function scoreRecording(blob, phrase) {
    const form = new FormData();
    form.append("dialect", "en-us");
    form.append("user_id", state.user);
    form.append("target_phrase", phrase);
    form.append("audio_format", "webm");
    form.append("audio", blob, "recording.webm");
    const response = await fetch("api/v1/score", { method: "POST", headers: credentials(), body: form });
    const doc = await response.json().catch(() => null);
    if (!response.ok || !doc) {
      const details = (doc?.errors ?? []).map((e) => e.detail).join("; ");
      throw new Error(`score: ${details || `HTTP ${response.status}`}`);
    }
    return doc;
  }

  // ---- connection --------------------------------------------------------------------------
  function readSettings() {
    // #key=...&user=... fills the fields once and leaves the address bar
    const fragment = new URLSearchParams(location.hash.slice(1));
    if (fragment.has("key")) sessionStorage.setItem("learnloop-key", fragment.get("key"));
    if (fragment.has("user")) localStorage.setItem("learnloop-user", fragment.get("user"));
    if (fragment.has("catalog")) state.catalogWanted = fragment.get("catalog");
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
    let user = localStorage.getItem("learnloop-user");
    if (!user) {
      const bytes = crypto.getRandomValues(new Uint8Array(4));
      user = "learner-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
      localStorage.setItem("learnloop-user", user);
    }
    $("api-key").value = sessionStorage.getItem("learnloop-key") ?? "";
    $("user-id").value = user;
  }

  function applySettings() {
    state.key = $("api-key").value.trim();
    state.user = $("user-id").value.trim();
    sessionStorage.setItem("learnloop-key", state.key);
    localStorage.setItem("learnloop-user", state.user);
  }

  // another learner: what the page shows from now on is theirs (a session under way was the other's)
  async function changeLearner(event) {
    event.preventDefault();
    applySettings();
    clearError();
    $("session").hidden = true;
    state.session = null;
    state.recommendation = null;
    if (!state.catalog) return;
    busy(true);
    try {
      await refreshMastery(null);
    } catch (error) {
      showError(String(error.message ?? error));
    } finally {
      busy(false);
    }
  }

  async function connect() {
    applySettings();
    clearError();
    busy(true);
    try {
      const ids = (await v2("query-catalog-ids")).catalog_ids;
      const catalogs = await Promise.all(ids.map((id) => v2("query-catalog", { catalog_id: id })));
      const items = (await v2("query-item-database")).items;
      state.items = new Map(items.map((item) => [item.item_id, item]));
      catalogs.sort((a, b) => (a.catalog_id < b.catalog_id ? -1 : a.catalog_id > b.catalog_id ? 1 : 0));
      $("catalog").replaceChildren(
        ...catalogs.map((c) => el("option", { value: c.catalog_id, text: `${c.display_name} (${c.catalog_id})` })),
      );
      state.catalogs = new Map(catalogs.map((c) => [c.catalog_id, c]));
      if (!catalogs.length) showError("This application has no course yet: upload a catalog (POST /v2/upsert-catalog).");
      else {
        $("catalog").value = preferredCatalog(catalogs.map((c) => c.catalog_id));
        await chooseCatalog();
      }
    } catch (error) {
      $("connection").open = true;
      showError(String(error.message ?? error));
    } finally {
      busy(false);
    }
  }

  // the course shown first: the one named in the address (#catalog=...), else the last one shown in this
  // browser, else the demo's sample course, else the first by id; a course made later never takes over,
  // since the one shown is remembered
  const SAMPLE_COURSE = "sample-course";

  function preferredCatalog(ids) {
    const wanted = [state.catalogWanted, localStorage.getItem("learnloop-catalog"), SAMPLE_COURSE];
    return wanted.find((id) => id && ids.includes(id)) ?? ids[0];
  }

  async function chooseCatalog() {
    const catalog = state.catalogs.get($("catalog").value);
    state.catalog = catalog;
    state.catalogWanted = null;
    localStorage.setItem("learnloop-catalog", catalog.catalog_id);
    const parents = new Map();
    for (const topic of catalog.topics) {
      for (const child of topic.child_topic_refs ?? []) parents.set(child.topic_id, topic.topic_id);
    }
    const depth = (id) => (parents.has(id) ? 1 + depth(parents.get(id)) : 0);
    $("scope").replaceChildren(
      el("option", { value: "", text: "All topics" }),
      ...catalog.topics.map((t) =>
        el("option", { value: t.topic_id, text: `${"\u2003".repeat(depth(t.topic_id))}${t.display_name}` }),
      ),
    );
    drawGraph(catalog);
    $("session").hidden = true;
    await refreshMastery(null);
  }

  // ---- the topic graph ---------------------------------------------------------------------
  const NODE_W = 150;
  const NODE_H = 46;
  const COL_W = 178;
  const ROW_H = 84;

  function layout(catalog) {
    const byId = new Map(catalog.topics.map((t) => [t.topic_id, t]));
    const order = new Map(catalog.topics.map((t, i) => [t.topic_id, i]));
    const parents = new Set(catalog.topics.flatMap((t) => (t.child_topic_refs ?? []).map((c) => c.topic_id)));
    const leaves = (topic) =>
      topic.child_topic_refs?.length
        ? topic.child_topic_refs.flatMap((c) => (byId.has(c.topic_id) ? leaves(byId.get(c.topic_id)) : []))
        : [topic];
    const rank = new Map(); // longest chain of prerequisites before a topic
    const visiting = new Set();
    const rankOf = (id) => {
      if (rank.has(id)) return rank.get(id);
      if (visiting.has(id)) return 0; // a cycle: the content checks forbid it, the drawing survives it
      visiting.add(id);
      let value = 0;
      for (const ref of byId.get(id)?.prerequisite_topic_refs ?? []) {
        if (byId.has(ref.topic_id)) value = Math.max(value, rankOf(ref.topic_id) + 1);
      }
      visiting.delete(id);
      rank.set(id, value);
      return value;
    };
    const sorted = (topics) =>
      [...topics].sort((a, b) => rankOf(a.topic_id) - rankOf(b.topic_id) || order.get(a.topic_id) - order.get(b.topic_id));
    const rows = [];
    const loose = [];
    for (const topic of catalog.topics.filter((t) => !parents.has(t.topic_id))) {
      if (topic.child_topic_refs?.length) rows.push({ label: topic, nodes: sorted(leaves(topic)) });
      else loose.push(topic);
    }
    if (loose.length) rows.push({ label: null, nodes: sorted(loose) });
    const labelled = rows.some((r) => r.label);
    const x0 = labelled ? 12 + NODE_W + 28 : 12;
    const place = new Map();
    rows.forEach((row, r) => {
      const y = 12 + r * ROW_H;
      if (row.label) place.set(row.label.topic_id, { x: 12, y, topic: row.label, chapter: true });
      row.nodes.forEach((topic, c) => place.set(topic.topic_id, { x: x0 + c * COL_W, y, topic, chapter: false }));
    });
    const columns = Math.max(1, ...rows.map((r) => r.nodes.length));
    return { place, byId, width: x0 + (columns - 1) * COL_W + NODE_W + 12, height: 12 + rows.length * ROW_H - 14 };
  }

  function edgePath(from, to) {
    if (from.y === to.y && to.x > from.x) {
      const y = from.y + NODE_H / 2;
      return `M${from.x + NODE_W},${y} L${to.x - 4},${y}`;
    }
    const [x1, y1, x2, y2] = [from.x + NODE_W / 2, from.y + NODE_H, to.x + NODE_W / 2, to.y - 4];
    const bend = Math.max(24, Math.abs(y2 - y1) / 2);
    return `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`;
  }

  function truncate(text, max) {
    return text.length > max ? `${text.slice(0, max - 1)}…` : text;
  }

  function drawGraph(catalog) {
    const { place, byId, width, height } = layout(catalog);
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-labelledby": "graph-title" });
    const title = svg("title", { id: "graph-title" });
    title.textContent = `Topic graph of ${catalog.display_name}: ${place.size} topics, coloured by proficiency`;
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-head" }));
    defs.append(marker);
    root.append(title, defs);
    for (const [id, to] of place) {
      for (const ref of byId.get(id).prerequisite_topic_refs ?? []) {
        const from = place.get(ref.topic_id);
        if (from) root.append(svg("path", { d: edgePath(from, to), class: "edge", "marker-end": "url(#arrow)" }));
      }
    }
    state.nodes = new Map();
    for (const [id, spot] of place) {
      const group = svg("g", { class: spot.chapter ? "node chapter" : "node", "data-topic": id, transform: `translate(${spot.x},${spot.y})` });
      const shape = svg("rect", { width: NODE_W, height: NODE_H, rx: spot.chapter ? 4 : 10, fill: "#e6e6e6" });
      const tip = svg("title");
      tip.textContent = spot.topic.display_name;
      const name = svg("text", { x: NODE_W / 2, y: 19, class: "node-name" });
      name.textContent = truncate(spot.topic.display_name, 22);
      const value = svg("text", { x: NODE_W / 2, y: 36, class: "node-value" });
      value.textContent = "—";
      group.append(tip, shape, name, value);
      root.append(group);
      state.nodes.set(id, { group, shape, value, topic: spot.topic });
    }
    $("graph").replaceChildren(root);
    $("legend").replaceChildren(
      "Proficiency: ",
      ...[0, 0.25, 0.5, 0.75, 1].map((p) => el("span", { class: "swatch", "data-p": p, text: percent(p) })),
      el("span", { class: "swatch none", text: "— no scorable items" }),
    );
    for (const swatch of $("legend").querySelectorAll("[data-p]")) swatch.style.background = masteryColour(+swatch.dataset.p);
    $("graph-figure").hidden = false;
  }

  function masteryColour(p) {
    return p === null || p === undefined ? "#e6e6e6" : `hsl(${Math.round(p * 120)} 70% 78%)`;
  }

  async function refreshMastery(currentTopic) {
    const catalog = state.catalog;
    const topics = [...state.nodes.keys()];
    const statuses = (
      await v2("user-status", {
        user_id: state.user,
        catalog_id: catalog.catalog_id,
        filter_list: topics.map((id) => ({ include_topic_ids: [id] })),
      })
    ).user_status_list;
    const rows = [];
    topics.forEach((id, i) => {
      const node = state.nodes.get(id);
      const status = statuses[i];
      node.shape.setAttribute("fill", masteryColour(status.proficiency));
      node.value.textContent = `${percent(status.proficiency)} · ${Math.round(status.progress * 100)} % done`;
      node.group.dataset.proficiency = status.proficiency ?? "";
      node.group.classList.toggle("current", id === currentTopic);
      rows.push(
        el("tr", {}, el("th", { scope: "row", text: node.topic.display_name }), el("td", { text: percent(status.proficiency) }), el("td", { text: percent(status.progress) })),
      );
    });
    $("mastery-table").tBodies[0].replaceChildren(...rows);
    await refreshDue();
  }

  // what review would serve: the items answered whose predicted recall fell below the desired retention
  async function refreshDue() {
    const data = await v2("query-due-items", { user_id: state.user, catalog_id: state.catalog.catalog_id });
    const name = (d) => state.items.get(d.item_id)?.display_name ?? d.item_id;
    const topic = (d) => state.nodes.get(d.topic_id)?.topic.display_name ?? d.topic_id;
    const when = (iso) => new Date(iso).toLocaleString();
    const due = data.items.filter((d) => d.overdue);
    const next = data.items.find((d) => !d.overdue);
    let upcoming = "nothing answered yet";
    if (next) upcoming = `${name(next)} (${topic(next)}), ${when(next.due_at)}`;
    else if (data.items.length) upcoming = "every item answered is due now";
    fill($("due-status"), [
      ["Due now", String(data.due_now)],
      ["Next review", upcoming],
    ]);
    const shown = due.slice(0, 5).map((d) =>
      el("li", { "data-item": d.item_id, text: `${name(d)} · ${topic(d)} · recall ${percent(d.recall)} · due since ${when(d.due_at)}` }),
    );
    if (due.length > shown.length) shown.push(el("li", { class: "more", text: `and ${due.length - shown.length} more` }));
    $("due-list").replaceChildren(...shown);
    $("review").dataset.dueNow = String(data.due_now);
    $("review").hidden = false;
  }

  // ---- adaptive sessions -------------------------------------------------------------------
  function stoppingConditions() {
    const out = {};
    const count = $("max-count").value;
    const proficiency = $("max-proficiency").value;
    const minutes = $("max-minutes").value;
    if (count) out.max_interaction_count = Number(count);
    if (proficiency) out.max_proficiency = Number(proficiency);
    if (minutes) out.max_duration_ms = Math.round(Number(minutes) * 60000);
    return out;
  }

  async function startSession(event) {
    event.preventDefault();
    applySettings();
    clearError();
    busy(true);
    try {
      const scope = $("scope").value;
      const mode = document.querySelector("input[name=mode]:checked").value;
      const request = {
        user_id: state.user,
        catalog_id: state.catalog.catalog_id,
        mode: { type: mode },
        filter: scope ? { include_topic_ids: [scope] } : {},
      };
      const stops = stoppingConditions();
      if (Object.keys(stops).length) request.stopping_conditions = stops;
      state.session = (await v2("create-adaptive-session", request)).session_context;
      $("session").dataset.mode = mode;
      $("session").hidden = false;
      await engine([]);
    } catch (error) {
      showError(String(error.message ?? error));
    } finally {
      busy(false);
    }
  }

  async function engine(events) {
    const data = await v2("adaptive-engine", { session_context: state.session, events });
    showStatus(data);
    const stop = data.session_status.stop_session;
    const recommendation = stop ? null : data.recommendation;
    state.recommendation = recommendation;
    if (recommendation) showRecommendation(recommendation);
    else showStopped(data);
    await refreshMastery(recommendation?.topic_id ?? null);
  }

  function showStatus(data) {
    const user = data.user_status;
    const session = data.session_status;
    fill($("user-status"), [
      ["Progress", percent(user.progress)],
      ["Proficiency", percent(user.proficiency)],
      ["Time spent", duration(user.time_spent_ms)],
      ["Last interaction", user.last_interaction_timestamp ? new Date(user.last_interaction_timestamp).toLocaleString() : "none"],
    ]);
    const keys = session.satisfied_stopping_condition_keys;
    fill($("session-status"), [
      ["Stop session", session.stop_session ? "yes" : "no"],
      ["Interactions", String(session.interaction_count)],
      ["Duration", duration(session.duration_ms)],
      ["Stopping conditions met", keys.length ? keys.join(", ") : "none"],
    ]);
    const box = $("session");
    box.dataset.stop = String(session.stop_session);
    box.dataset.interactions = String(session.interaction_count);
    $("announce").textContent = session.stop_session
      ? "The session has stopped."
      : `Interaction ${session.interaction_count + 1}; proficiency ${percent(user.proficiency)}.`;
  }

  function showRecommendation(rec) {
    const item = state.items.get(rec.item_id) ?? { item_id: rec.item_id, display_name: rec.item_id, scorable: true };
    const topic = state.nodes.get(rec.topic_id)?.topic;
    const theory = !item.scorable && item.content_type === "theory";
    $("stopped").hidden = true;
    const card = $("recommendation");
    card.hidden = false;
    card.dataset.item = rec.item_id;
    $("item-kind").textContent = theory ? "theory" : item.scorable ? "exercise" : "item";
    $("item-topic").textContent = topic ? topic.display_name : rec.topic_id;
    $("item-name").textContent = item.display_name;
    const meta = [item.content_type, item.difficulty !== undefined && item.difficulty !== null ? `difficulty ${item.difficulty}` : null, ...(item.tags ?? []).map((t) => `#${t}`), rec.item_id];
    $("item-meta").textContent = meta.filter(Boolean).join(" · ");
    $("reason-keyword").textContent = rec.reason.keyword;
    $("reason-explained").textContent = REASONS[rec.reason.keyword] ? `— ${REASONS[rec.reason.keyword]}` : "";
    $("reason-description").textContent = rec.reason.description;
    let buttons;
    if (theory) {
      $("answer-help").textContent = "Read the theory of this topic, then say so.";
      buttons = [["I read it", { type: "view_theory", fraction_completed: 1 }], ["Skip", { type: "skip" }]];
    } else if (item.scorable) {
      $("answer-help").textContent = "Work the exercise, then record how you did.";
      buttons = [
        ["I got it right", { type: "attempt", score: 1 }],
        ["I got it wrong", { type: "attempt", score: 0 }],
        ["Skip", { type: "skip" }],
      ];
    } else {
      $("answer-help").textContent = "Open the item, then say you are done.";
      buttons = [["Done", { type: "attempt" }], ["Skip", { type: "skip" }]];
    }
    $("answers").replaceChildren(
      ...buttons.map(([label, event]) => {
        const button = el("button", { type: "button", text: label, "data-event": event.type });
        button.addEventListener("click", () => answer(event));
        return button;
      }),
    );
    state.shownAt = performance.now();
    $("answers").firstElementChild.focus();
  }

  function showStopped(data) {
    $("recommendation").hidden = true;
    const keys = data.session_status.satisfied_stopping_condition_keys;
    let why = "no item of the session's topics is left to recommend";
    if (data.session_status.stop_session) why = keys.map((k) => `${STOPS[k] ?? k} (${k})`).join("; ");
    else if (data.nothing_due) why = data.nothing_due.reason.description;
    $("stop-reason").textContent = `Why: ${why}. ${data.session_status.interaction_count} interactions in ${duration(data.session_status.duration_ms)}; proficiency ${percent(data.user_status.proficiency)}.`;
    $("stopped").hidden = false;
    $("again").focus();
  }

  async function answer(template) {
    const rec = state.recommendation;
    if (!rec || document.body.dataset.busy === "1") return;
    for (const button of $("answers").querySelectorAll("button")) button.disabled = true;
    const event = { ...template, timestamp: new Date().toISOString(), recommendation_context: rec.recommendation_context };
    if (template.type !== "skip") event.time_spent_ms = Math.max(0, Math.round(performance.now() - state.shownAt));
    clearError();
    busy(true);
    try {
      await engine([event]);
    } catch (error) {
      showError(String(error.message ?? error));
      for (const button of $("answers").querySelectorAll("button")) button.disabled = false;
    } finally {
      busy(false);
    }
  }

  // ---- pronunciation -----------------------------------------------------------------------
  const MAX_RECORDING_MS = 10000;
  const voice = { recorder: null, timer: 0 };

  function band(score) {
    if (score >= 90) return ["excellent", "excellent, native-like"];
    if (score >= 80) return ["good", "good, intelligible"];
    if (score >= 60) return ["acceptable", "acceptable, room for improvement"];
    return ["retry", "retry"];
  }

  function voiceState(name, text) {
    $("voice").dataset.state = name;
    $("record-status").textContent = text;
  }

  async function toggleRecording() {
    if (voice.recorder) {
      voice.recorder.stop();
      return;
    }
    applySettings();
    clearError();
    const phrase = $("phrase").value.trim();
    if (!phrase) return showError("Type the phrase you are going to read first.");
    if (!navigator.mediaDevices?.getUserMedia || typeof MediaRecorder === "undefined") {
      return showError("This browser cannot record here (the microphone needs https, or http on localhost).");
    }
    const mimeType = ["audio/webm;codecs=opus", "audio/webm"].find((m) => MediaRecorder.isTypeSupported(m));
    if (!mimeType) return showError("This browser cannot record audio/webm, the format sent to the voice API.");
    let stream;
    try {
      const audio = { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false };
      stream = await navigator.mediaDevices.getUserMedia({ audio });
    } catch (error) {
      return showError(`No microphone: ${error.message ?? error}`);
    }
    const chunks = [];
    const recorder = new MediaRecorder(stream, { mimeType });
    recorder.addEventListener("dataavailable", (e) => e.data.size && chunks.push(e.data));
    recorder.addEventListener("stop", async () => {
      clearInterval(voice.timer);
      for (const track of stream.getTracks()) track.stop();
      voice.recorder = null;
      $("record").textContent = "Record";
      voiceState("scoring", "Scoring…");
      try {
        showScore(await scoreRecording(new Blob(chunks, { type: "audio/webm" }), phrase));
        voiceState("scored", "Scored.");
      } catch (error) {
        voiceState("error", "");
        showError(String(error.message ?? error));
      }
    });
    voice.recorder = recorder;
    const started = performance.now();
    recorder.start();
    $("record").textContent = "Stop";
    voiceState("recording", "Recording… 0.0 s");
    voice.timer = setInterval(() => {
      const elapsed = performance.now() - started;
      $("record-status").textContent = `Recording… ${(elapsed / 1000).toFixed(1)} s`;
      if (elapsed >= MAX_RECORDING_MS && recorder.state === "recording") recorder.stop();
    }, 100);
  }

  function phonemeLabel(ipa, arpabet) {
    return `/${ipa}/ ${arpabet}`;
  }

  function showScore(result) {
    const [overallBand, overallText] = band(result.overall_score);
    $("overall-score").textContent = String(result.overall_score);
    $("overall-band").textContent = overallText;
    $("overall-band").className = `band-text band band-${overallBand}`;
    $("words").replaceChildren(
      ...result.word_scores.map((word) => {
        const [name, text] = band(word.score);
        const head = el(
          "p",
          { class: "word-head" },
          el("span", { class: "word-text", text: word.word }),
          " ",
          el("span", { class: "word-score", text: String(word.score) }),
          " ",
          el("span", { class: "word-band", text }),
        );
        if (!word.is_matched) head.append(" ", el("span", { class: "unmatched", text: "(not heard as said)" }));
        const phonemes = el(
          "ul",
          { class: "phonemes", "aria-label": `sounds of ${word.word}` },
          ...word.phoneme_scores.map((p) => {
            const [pname, ptext] = band(p.score);
            const item = el(
              "li",
              { class: `phoneme band band-${pname}` },
              el("span", { class: "ph-label", text: phonemeLabel(p.phoneme_ipa, p.phoneme) }),
              " ",
              el("span", { class: "ph-score", text: String(p.score) }),
              " ",
              el("span", { class: "ph-band", text: ptext.split(",")[0] }),
            );
            if (p.sounds_like !== p.phoneme) {
              const heard = p.sounds_like === "#" ? "nothing heard" : `sounds like ${phonemeLabel(p.sounds_like_ipa, p.sounds_like)}`;
              item.append(" ", el("span", { class: "sounds-like", text: heard }));
            }
            return item;
          }),
        );
        return el("li", { class: `word band-${name}` }, head, phonemes);
      }),
    );
    $("voice-result").hidden = false;
  }

  // ---- wiring ------------------------------------------------------------------------------
  document.addEventListener("DOMContentLoaded", () => {
    busy(false);
    readSettings();
    $("connect").addEventListener("click", connect);
    $("learner").addEventListener("submit", changeLearner);
    $("catalog").addEventListener("change", () => chooseCatalog().catch((e) => showError(String(e.message ?? e))));
    $("session-form").addEventListener("submit", startSession);
    $("again").addEventListener("click", () => {
      $("session").hidden = true;
      $("start").focus();
    });
    $("record").addEventListener("click", toggleRecording);
    voiceState("idle", "");
    connect();
  });
  // a new #key=... or #user=... on the open page (e.g. pasted into the address bar)
  window.addEventListener("hashchange", () => {
    if (!location.hash) return;
    readSettings();
    connect();
  });
})();
