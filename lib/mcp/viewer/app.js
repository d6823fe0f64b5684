// The OCR viewer (an MCP App, lib/mcp/viewer): plain browser JavaScript, inlined into the ui:// resource's HTML by
// ./html.ts. It speaks the MCP Apps protocol (JSON-RPC over postMessage with the host) itself: ui/initialize, the
// tool result that opened it, and tools/call of read_viewer_page for each page it shows. Nothing is fetched.
(() => {
  "use strict";
  const PROTOCOL = "2026-01-26";
  const PAGE_TOOL = "read_viewer_page";
  const pending = new Map();
  let nextId = 1;
  const state = { jobId: null, page: null, prev: null, next: null, data: null, selected: null, polls: 0 };
  const $ = (id) => document.getElementById(id);

  const send = (message) => window.parent.postMessage(message, "*");
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      send({ jsonrpc: "2.0", id, method, params });
    });
  const notify = (method, params) => send({ jsonrpc: "2.0", method, params: params || {} });

  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.id !== undefined && message.method === undefined) {
      const waiting = pending.get(message.id);
      if (!waiting) return;
      pending.delete(message.id);
      if (message.error) waiting.reject(new Error(message.error.message || "error"));
      else waiting.resolve(message.result);
      return;
    }
    if (message.id !== undefined) {
      // A request of the host: teardown and ping are answered; nothing else is asked of a view.
      const known = message.method === "ui/resource-teardown" || message.method === "ping";
      send(
        known
          ? { jsonrpc: "2.0", id: message.id, result: {} }
          : { jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "Method not found" } },
      );
      return;
    }
    if (message.method === "ui/notifications/tool-result") onToolResult(message.params);
    else if (message.method === "ui/notifications/host-context-changed") applyContext(message.params);
  });

  function applyContext(context) {
    if (!context) return;
    if (context.theme) document.documentElement.dataset.theme = context.theme;
  }

  function setStatus(text) {
    $("status").textContent = text;
  }

  function onToolResult(result) {
    const shown = result && result.structuredContent;
    if (!shown || typeof shown.jobId !== "string") {
      setStatus(result && result.isError ? textOf(result) : "Nothing to show.");
      return;
    }
    state.jobId = shown.jobId;
    if (shown.review) $("review").textContent = reviewLine(shown.review);
    void showPage(shown.page);
  }

  function textOf(result) {
    return (result.content || []).map((block) => (block.type === "text" ? block.text : "")).join(" ");
  }

  function reviewLine(review) {
    if (!review.pagesChecked) return "";
    if (!review.words) return `No word needs a second look on the ${review.pagesChecked} page(s) read.`;
    const spans = `${review.spans} span${review.spans === 1 ? "" : "s"}`;
    return `${spans} (${review.words} word${review.words === 1 ? "" : "s"}) on the ${review.pagesChecked} page(s) read need a second look.`;
  }

  async function showPage(page) {
    state.polls = 0;
    state.selected = null;
    await loadPage(page);
  }

  async function loadPage(page) {
    setStatus(`Loading page ${page}…`);
    let result;
    try {
      result = await request("tools/call", { name: PAGE_TOOL, arguments: { job_id: state.jobId, page } });
    } catch (error) {
      setStatus(`Page ${page} could not be loaded: ${error.message}`);
      return;
    }
    if (result.isError || !result.structuredContent) {
      setStatus(textOf(result) || `Page ${page} could not be loaded.`);
      return;
    }
    const data = result.structuredContent;
    const image = (result.content || []).find((block) => block.type === "image");
    state.page = data.page;
    state.prev = data.previousPage ?? null;
    state.next = data.nextPage ?? null;
    state.data = data;
    render(data, image);
    if (data.pageStatus === "pending" && state.polls < 60) {
      state.polls += 1;
      setTimeout(() => {
        if (state.page === data.page) void loadPage(data.page);
      }, 2000);
    }
  }

  function band(word) {
    if (word.review) return "review";
    if (word.confidence >= 90) return "high";
    if (word.confidence >= 80) return "mid";
    return "low";
  }

  function words(content) {
    const all = [];
    if (!content) return all;
    for (const block of content.blocks) for (const line of block.lines) all.push(line.words);
    return all;
  }

  function render(data, image) {
    $("pageno").textContent = `Page ${data.page} · ${data.index} of ${data.count}`;
    $("prev").disabled = state.prev === null;
    $("next").disabled = state.next === null;
    const img = $("page");
    const overlay = $("boxes");
    overlay.replaceChildren();
    const text = $("text");
    text.replaceChildren();
    if (image) {
      img.src = `data:${image.mimeType};base64,${image.data}`;
      img.hidden = false;
    } else {
      img.removeAttribute("src");
      img.hidden = true;
    }
    if (data.pageStatus === "pending") setStatus(`Page ${data.page} is still being read…`);
    else if (data.pageStatus === "failed")
      setStatus(`Page ${data.page} could not be read: ${data.failure ? data.failure.message : ""}`);
    else setStatus(data.imageError ? `No image: ${data.imageError}` : "");
    const lines = words(data.content);
    const svg = "http://www.w3.org/2000/svg";
    let count = 0;
    let flagged = 0;
    for (const line of lines) {
      const row = document.createElement("p");
      for (const word of line) {
        const id = `w${count++}`;
        const kind = band(word);
        if (word.review) flagged += 1;
        const [x0, y0, x1, y1] = word.bbox;
        const rect = document.createElementNS(svg, "rect");
        rect.setAttribute("x", String(x0));
        rect.setAttribute("y", String(y0));
        rect.setAttribute("width", String(Math.max(0.002, x1 - x0)));
        rect.setAttribute("height", String(Math.max(0.002, y1 - y0)));
        rect.setAttribute("class", `box ${kind}`);
        rect.dataset.word = id;
        overlay.append(rect);
        const span = document.createElement("span");
        span.textContent = word.text;
        span.className = `word ${kind}`;
        span.dataset.word = id;
        span.tabIndex = 0;
        row.append(span, " ");
        const show = () => describe(word, id);
        for (const element of [rect, span]) {
          element.addEventListener("mouseenter", show);
          element.addEventListener("focus", show);
          element.addEventListener("click", () => {
            state.selected = state.selected === id ? null : id;
            show();
          });
        }
      }
      text.append(row);
    }
    $("counts").textContent = data.pageStatus === "done" ? `${count} words, ${flagged} to check on this page` : "";
    document.body.dataset.words = String(count);
    describe(null, null);
  }

  function describe(word, id) {
    for (const element of document.querySelectorAll("[data-word].on")) element.classList.remove("on");
    const chosen = id || state.selected;
    if (chosen) for (const element of document.querySelectorAll(`[data-word="${chosen}"]`)) element.classList.add("on");
    if (!word) {
      $("info").textContent = "Hover or select a word to see its confidence and where it is.";
      return;
    }
    const [x0, y0, x1, y1] = word.bbox;
    const pct = (value) => `${Math.round(value * 100)}%`;
    let line = `“${word.text}” · confidence ${Math.round(word.confidence)} · at ${pct(x0)} from the left, ${pct(y0)} from the top (${pct(x1 - x0)} × ${pct(y1 - y0)})`;
    if (word.review)
      line += word.alternative ? ` · check it: the other reader read “${word.alternative}”` : " · check it";
    $("info").textContent = line;
  }

  function pageText() {
    return words(state.data && state.data.content)
      .map((line) => line.map((word) => word.text).join(" "))
      .join("\n");
  }

  async function copyText() {
    const text = pageText();
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    setStatus("Copied the page's text.");
  }

  $("prev").addEventListener("click", () => state.prev !== null && void showPage(state.prev));
  $("next").addEventListener("click", () => state.next !== null && void showPage(state.next));
  $("copy").addEventListener("click", () => void copyText());

  // The content's height (not the frame's: that would never let the host shrink it).
  new ResizeObserver(() => {
    const box = document.body.getBoundingClientRect();
    notify("ui/notifications/size-changed", { width: Math.ceil(box.width), height: Math.ceil(box.height) });
  }).observe(document.body);

  request("ui/initialize", {
    protocolVersion: PROTOCOL,
    appInfo: { name: "ocr-viewer", version: "1.0.0" },
    appCapabilities: {},
  }).then(
    (result) => {
      applyContext(result && result.hostContext);
      notify("ui/notifications/initialized", {});
      setStatus("Waiting for the document…");
    },
    (error) => setStatus(`The host did not answer: ${error.message}`),
  );
})();
