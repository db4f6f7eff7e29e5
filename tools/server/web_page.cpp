// GET /: one self-contained chat page (no CDN, no external files). It keeps the conversation in
// the page and sends it whole each turn, so the server's slot cache serves the earlier turns;
// answers stream over SSE; a switch picks full or lazy (the safe preset); under each answer it shows TTFT,
// the share of the prompt's (token, layer) pairs computed, cached tokens and decode tokens/s
// (the "timings" of the last chunk). Stop ends a stream and keeps its text in the chat; New chat
// ends it and forgets it; either way the server frees the slot when the stream closes.
#include "server/http_server.h"

namespace lazyllm::server {

const char* web_page_html() {
    return R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lazyllm serve</title>
<style>
 body{font-family:system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
 header{background:#1d2330;color:#fff;padding:10px 16px;display:flex;gap:16px;align-items:center;flex-wrap:wrap;position:sticky;top:0}
 header h1{font-size:17px;margin:0;font-weight:600}
 header label{font-size:14px}
 #log{max-width:860px;margin:0 auto;padding:16px 16px 120px}
 .msg{margin:10px 0;padding:10px 14px;border-radius:10px;white-space:pre-wrap;line-height:1.4}
 .user{background:#dbe7ff;margin-left:15%}
 .assistant{background:#fff;margin-right:15%;box-shadow:0 1px 2px #0002}
 .stats{font-size:12px;color:#5b6475;margin-top:6px;white-space:normal}
 .err{background:#ffe0e0}
 form{position:fixed;bottom:0;left:0;right:0;background:#fff;border-top:1px solid #ccd;padding:10px}
 form div{max-width:860px;margin:0 auto;display:flex;gap:8px}
 textarea{flex:1;font:inherit;padding:8px;border-radius:8px;border:1px solid #aab;resize:vertical;min-height:40px}
 button{font:inherit;padding:8px 16px;border-radius:8px;border:0;background:#2b59c3;color:#fff;cursor:pointer}
 button:disabled{background:#99a}
 #stop{background:#b83232}
 input[type=password]{width:120px}
</style></head>
<body>
<header><h1>lazyllm serve</h1>
 <span>prefill:
  <label><input type="radio" name="policy" value="full" id="pfull"> full</label>
  <label title="LazyLLM with the model's safe preset: prompts under its context floor run as full"><input type="radio" name="policy" value="lazy" id="plazy" checked> lazy</label></span>
 <label>max tokens <input type="number" id="maxtok" value="128" min="1" style="width:64px"></label>
 <label>API key <input type="password" id="key" autocomplete="off"></label>
 <button type="button" id="clear">New chat</button>
 <span id="model" style="font-size:13px;opacity:.8"></span>
</header>
<div id="log"></div>
<form id="f"><div><textarea id="q" placeholder="Ask something..." required></textarea>
<button id="send" type="submit">Send</button><button id="stop" type="button" hidden>Stop</button></div></form>
<script>
"use strict";
const log = document.getElementById("log"), q = document.getElementById("q");
const send = document.getElementById("send"), key = document.getElementById("key");
const stop = document.getElementById("stop");
key.value = localStorage.getItem("lazyllm_key") || "";
let messages = [], chat = 0, current = null;  // chat: which conversation; current: its stream
function headers() {
  const h = {"Content-Type": "application/json"};
  if (key.value) h["Authorization"] = "Bearer " + key.value;
  return h;
}
function add(role, text) {
  const d = document.createElement("div");
  d.className = "msg " + role;
  const t = document.createElement("div");
  t.className = "text"; t.textContent = text;
  d.appendChild(t); log.appendChild(d);
  window.scrollTo(0, document.body.scrollHeight);
  return d;
}
function stats(div, tm, usage) {
  const s = document.createElement("div");
  s.className = "stats";
  const parts = [tm.policy + " prefill",
    "TTFT " + tm.ttft_ms.toFixed(1) + " ms",
    "prefill " + tm.prefill_pct_computed.toFixed(1) + "% computed",
    tm.predicted_per_second.toFixed(1) + " tokens/s",
    "cached " + tm.cache_n + " of " + (tm.cache_n + tm.prompt_n) + " prompt tokens"];
  if (tm.revivals) parts.push(tm.revivals + " revived");
  const floor = /min_context=(\d+)/.exec(tm.schedule || "");
  if (tm.policy === "lazy" && floor && tm.cache_n + tm.prompt_n < +floor[1]) {
    parts.push("under the floor of " + floor[1] + " tokens: run as full");
  }
  if (usage) parts.push(usage.completion_tokens + " tokens");
  s.textContent = parts.join(" \u00b7 ");
  div.appendChild(s);
}
async function ask(text) {
  const mine = chat, ctl = new AbortController();
  current = ctl;
  messages.push({role: "user", content: text});
  add("user", text);
  const div = add("assistant", ""), out = div.querySelector(".text");
  const policy = document.querySelector("input[name=policy]:checked").value;
  const body = {messages, stream: true, stream_options: {include_usage: true},
    max_tokens: parseInt(document.getElementById("maxtok").value) || 128,
    temperature: 0, lazyllm: {policy}};  // lazy: the model's safe preset
  let answer = "", timings = null, usage = null;
  try {
    const r = await fetch("/v1/chat/completions",
      {method: "POST", headers: headers(), body: JSON.stringify(body), signal: ctl.signal});
    if (!r.ok) {
      const e = await r.json().catch(() => ({error: {message: r.statusText}}));
      throw new Error(r.status + ": " + e.error.message);
    }
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const line = buf.slice(0, i).trim(); buf = buf.slice(i + 2);
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        if (j.usage) usage = j.usage;
        if (j.timings) timings = j.timings;
        for (const c of j.choices || []) {
          if (c.delta && c.delta.content) { answer += c.delta.content; out.textContent = answer; }
        }
      }
      window.scrollTo(0, document.body.scrollHeight);
    }
    if (mine === chat) messages.push({role: "assistant", content: answer});
    if (timings) stats(div, timings, usage);
    if (!document.getElementById("model").textContent) showModel();
    div.dataset.done = "1";
  } catch (e) {
    if (mine !== chat) return;  // a new chat began: this one's page and messages are gone
    if (e.name === "AbortError") {  // Stop: the answer so far stays, in the page and the chat
      if (!answer) {  // nothing yet: the question goes back to the box, as if never sent
        messages.pop();
        div.previousSibling.remove(); div.remove();
        if (!q.value) q.value = text;
        return;
      }
      messages.push({role: "assistant", content: answer});
      const s = document.createElement("div");
      s.className = "stats"; s.textContent = "stopped";
      div.appendChild(s);
      div.dataset.done = "stopped";
      return;
    }
    div.className = "msg assistant err";
    out.textContent = "error: " + e.message;
    messages.pop();
    div.dataset.done = "error";
  } finally {
    if (current === ctl) current = null;
  }
}
document.getElementById("f").addEventListener("submit", async ev => {
  ev.preventDefault();
  const text = q.value.trim();
  if (!text || current) return;  // one question at a time (Enter submits past the disabled Send)
  localStorage.setItem("lazyllm_key", key.value);
  q.value = ""; send.disabled = true; stop.hidden = false;
  try { await ask(text); } finally { send.disabled = false; stop.hidden = true; q.focus(); }
});
stop.addEventListener("click", () => { if (current) current.abort(); });
q.addEventListener("keydown", ev => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); document.getElementById("f").requestSubmit(); }
});
document.getElementById("clear").addEventListener("click", () => {
  chat++;
  if (current) current.abort();  // the server frees the slot when the stream closes
  messages = []; log.textContent = "";
});
function showModel() {
  fetch("/v1/models", {headers: headers()}).then(r => r.json()).then(j => {
    if (j.data) document.getElementById("model").textContent = j.data[0].id;
  }).catch(() => {});
}
key.addEventListener("change", showModel);  // with --api-key the list needs the key
showModel();
</script></body></html>
)HTML";
}

}  // namespace lazyllm::server
