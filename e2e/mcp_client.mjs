// Black-box test of system3's MCP server with the official TypeScript SDK,
// driven by cmd/system3/mcp_e2e_test.go. It connects over stdio (spawning
// `system3 mcp`) or Streamable HTTP (a running `system3 serve`), lists the
// tools, calls status, injects guidance into a pane, waits for a wake and
// acknowledges it, reports an outcome and reflects on it, and over HTTP checks that a request without the token
// gets 401, one from a foreign Origin gets 403, and that session ids follow
// the spec (404 for an id never issued or ended, 400 for none).
//
// Settings come from the environment:
//   MCP_MODE      stdio | http
//   MCP_URL       http: the /mcp endpoint
//   MCP_TOKEN     http: the bearer token
//   SYSTEM3_BIN   stdio: the system3 binary
//   SYSTEM3_ARGS  stdio: JSON array of arguments before "mcp"
//   INJECT_TARGET the session to type into; INJECT_TEXT what to type
//   WAKE_SESSION  the session whose awaiting_input wake to wait for
// It prints one JSON object with what it saw and exits 0, or prints the
// failure and exits 1.

import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = process.env;
const mode = env.MCP_MODE;
const report = { mode };

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

function parse(result, tool) {
  check(!result.isError, `${tool} failed: ${JSON.stringify(result.content)}`);
  const text = result.content.find((c) => c.type === "text")?.text;
  check(text, `${tool}: no text content`);
  return JSON.parse(text);
}

let httpTransport;

async function connect() {
  const client = new Client({ name: "system3-e2e-sdk", version: "1.0.0" });
  let transport;
  if (mode === "stdio") {
    transport = new StdioClientTransport({
      command: env.SYSTEM3_BIN,
      args: [...JSON.parse(env.SYSTEM3_ARGS || "[]"), "mcp"],
      env: { ...env },
      stderr: "inherit",
    });
  } else if (mode === "http") {
    transport = new StreamableHTTPClientTransport(new URL(env.MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${env.MCP_TOKEN}` } },
    });
  } else {
    throw new Error(`MCP_MODE must be stdio or http, not ${mode}`);
  }
  await client.connect(transport);
  if (mode === "http") httpTransport = transport;
  return client;
}

// sessionChecks holds the Streamable HTTP session rules (docs/mcp.md):
// the id the SDK was given is system3's; an id never issued gets 404 and a
// request without one 400, each with a JSON-RPC error; a session the SDK
// ends with DELETE is gone (404), and a new one starts.
async function sessionChecks() {
  const sid = httpTransport.sessionId;
  check(typeof sid === "string" && sid.startsWith("s3-"), `session id ${sid}`);
  const headers = {
    "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${env.MCP_TOKEN}`, "Mcp-Protocol-Version": "2025-06-18",
  };
  const call = JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "status", arguments: {} } });
  const forged = await fetch(env.MCP_URL, { method: "POST", headers: { ...headers, "Mcp-Session-Id": "s3-NEVERISSUED" }, body: call });
  const forgedBody = await forged.json();
  check(forged.status === 404 && forgedBody.error?.code === -32001, `forged id: ${forged.status} ${JSON.stringify(forgedBody)}`);
  const missing = await fetch(env.MCP_URL, { method: "POST", headers, body: call });
  const missingBody = await missing.json();
  check(missing.status === 400 && missingBody.error?.message.includes("Mcp-Session-Id"), `no id: ${missing.status} ${JSON.stringify(missingBody)}`);

  // A second SDK client ends its session; the id is then refused.
  const other = await connect();
  const otherTransport = httpTransport;
  const otherSid = otherTransport.sessionId;
  parse(await other.callTool({ name: "status", arguments: {} }), "status (second client)");
  await otherTransport.terminateSession();
  const ended = await fetch(env.MCP_URL, { method: "POST", headers: { ...headers, "Mcp-Session-Id": otherSid }, body: call });
  check(ended.status === 404, `DELETEd id: status ${ended.status}, want 404`);
  await other.close();
  report.sessions = { id_prefix: sid.slice(0, 3), forged: forged.status, missing: missing.status, deleted: ended.status };
}

async function rawChecks() {
  const init = JSON.stringify({
    jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  const noToken = await fetch(env.MCP_URL, { method: "POST", headers, body: init });
  check(noToken.status === 401, `no token: status ${noToken.status}, want 401`);
  const foreign = await fetch(env.MCP_URL, {
    method: "POST",
    headers: { ...headers, Authorization: `Bearer ${env.MCP_TOKEN}`, Origin: "https://evil.example.com" },
    body: init,
  });
  check(foreign.status === 403, `foreign origin: status ${foreign.status}, want 403`);
  const good = await fetch(env.MCP_URL, {
    method: "POST",
    headers: { ...headers, Authorization: `Bearer ${env.MCP_TOKEN}`, Origin: "http://localhost:6274" },
    body: init,
  });
  check(good.status === 200, `local origin with token: status ${good.status}, want 200`);
  const health = await fetch(new URL("/health", env.MCP_URL), { headers: { Authorization: `Bearer ${env.MCP_TOKEN}` } });
  const h = await health.json();
  check(health.status === 200 && h.ok === true, `health: ${health.status} ${JSON.stringify(h)}`);
  report.raw = { no_token: noToken.status, foreign_origin: foreign.status, local_origin: good.status, health: h };
}

async function main() {
  if (mode === "http") await rawChecks();
  const client = await connect();
  try {
    const info = client.getServerVersion();
    check(info?.name === "system3", `server name ${JSON.stringify(info)}`);
    report.server = info;

    const { tools } = await client.listTools();
    report.tools = tools.map((t) => t.name).sort();
    for (const want of ["status", "list_sessions", "get_session", "list_wakes", "list_tasks", "wait_for_wake",
      "inject_guidance", "answer_prompt", "interrupt", "ack_wake", "report_outcome", "capability_check", "reflect",
      "spawn_orchestrator", "stop_orchestrator", "link_task_list"]) {
      check(report.tools.includes(want), `tool ${want} missing from ${report.tools}`);
    }
    const status = tools.find((t) => t.name === "status");
    check(status.annotations?.readOnlyHint === true, "status is not annotated read-only");

    const st = parse(await client.callTool({ name: "status", arguments: {} }), "status");
    check(st.tmux_running === true && typeof st.uptime_seconds === "number", `status: ${JSON.stringify(st)}`);
    report.status = { version: st.version, tmux_running: st.tmux_running, unacked_wakes: st.unacked_wakes };

    const bad = await client.callTool({ name: "inject_guidance", arguments: { session: env.INJECT_TARGET } });
    check(bad.isError && bad.content[0].text.includes("missing required argument"), `bad call: ${JSON.stringify(bad)}`);

    const inj = parse(await client.callTool({
      name: "inject_guidance",
      arguments: { session: env.INJECT_TARGET, message: env.INJECT_TEXT },
    }), "inject_guidance");
    check(inj.delivered === true && inj.pane.startsWith("%"), `inject: ${JSON.stringify(inj)}`);
    report.inject = inj;

    // Wait for the wake, calling again while the server says "waiting".
    // The prompt shows up a few seconds after the start, so the wait
    // reports progress; the last notification, sent just before the
    // answer, must arrive before it (the SDK drops progress for a request
    // that has been answered).
    if (env.PROMPT_FLAG) writeFileSync(env.PROMPT_FLAG, "");
    let progress = [];
    let w;
    for (let i = 0; i < 6; i++) {
      progress = [];
      w = parse(await client.callTool(
        { name: "wait_for_wake", arguments: { reasons: ["awaiting_input"], session: env.WAKE_SESSION, max_wait_seconds: 20 } },
        undefined,
        { onprogress: (p) => { progress.push(p); }, timeout: 30000 },
      ), "wait_for_wake");
      if (w.status === "wake") break;
    }
    check(w.status === "wake" && w.wake.session === env.WAKE_SESSION, `wait: ${JSON.stringify(w)}`);
    report.wake = { id: w.wake.id, session: w.wake.session, reason: w.wake.reason, question: w.wake.question };
    report.progress = progress;
    // Over stdio under heavy load the last notification can still arrive
    // after the answer (docs/mcp.md, Limitations): there, require progress
    // while waiting, not the last one.
    if (env.EXPECT_PROGRESS === "some") {
      check(progress.length >= 1 && progress[0].message.startsWith("waiting for a wake"), `progress: ${JSON.stringify(progress)}`);
    }
    if (env.EXPECT_PROGRESS === "1") {
      const last = progress[progress.length - 1];
      check(progress.length >= 2 && last.message.startsWith("wake ") && last.progress === last.total,
        `progress: ${JSON.stringify(progress)}`);
    }

    const ack = parse(await client.callTool({ name: "ack_wake", arguments: { id: w.wake.id } }), "ack_wake");
    check(ack.count === 1 && ack.acked[0].acked_by === "mcp:system3-e2e-sdk", `ack: ${JSON.stringify(ack)}`);

    // The learning tools: an outcome reported, then recalled.
    const rep = parse(await client.callTool({
      name: "report_outcome",
      arguments: {
        initiative: `e2e ${mode}: add OAuth login`, outcome: "success", domain: "auth",
        reasoning_path: "The goal was OAuth login. First tests, then the handler. Chose the session store because it exists. " +
          "The risk was lockouts, so a fallback stayed. Verified: the tests pass.",
        learnings: ["Keep OAuth tokens in the session store"],
      },
    }), "report_outcome");
    check(rep.validated === true && rep.pattern_stored === true && rep.capability_updated === true && rep.confidence === 0.67,
      `report_outcome: ${JSON.stringify(rep)}`);
    const cap = parse(await client.callTool({ name: "capability_check", arguments: { domain: "auth" } }), "capability_check");
    check(cap.capabilities[0]?.evidence === "1 successful initiative out of 1", `capability_check: ${JSON.stringify(cap)}`);
    const refl = parse(await client.callTool({ name: "reflect", arguments: { query: "OAuth tokens", budget: "low" } }), "reflect");
    check(refl.patterns[0]?.text === "Keep OAuth tokens in the session store" && refl.mode === "retrieval",
      `reflect: ${JSON.stringify(refl)}`);
    report.learn = { confidence: rep.confidence, reflect_confidence: refl.confidence };
    const link = parse(await client.callTool({ name: "link_task_list", arguments: { session: env.INJECT_TARGET, task_list: "PRD-E2E" } }), "link_task_list");
    check(link.task_list === "PRD-E2E" && link.session === env.INJECT_TARGET, `link: ${JSON.stringify(link)}`);
    report.link = link;
    const stop = await client.callTool({ name: "stop_orchestrator", arguments: { name: "nosuch-e2e" } });
    check(stop.isError && stop.content[0].text.includes("no tmux session orch-nosuch-e2e"), `stop: ${JSON.stringify(stop)}`);

    // A system3 URI naming nothing is "resource not found".
    let notFound;
    try {
      await client.readResource({ uri: "system3://sessions/nosuch-e2e" });
    } catch (err) {
      notFound = err;
    }
    check(notFound?.code === -32002 && String(notFound.message).includes("no watched session"), `unknown resource: ${notFound}`);

    if (mode === "http") await sessionChecks();

    const res = await client.readResource({ uri: "system3://sessions" });
    check(res.contents[0].text.includes(env.INJECT_TARGET), "sessions resource lacks the target");
    const { resources } = await client.listResources();
    report.resources = resources.map((r) => r.uri).sort();
  } finally {
    await client.close();
  }
  console.log(JSON.stringify(report));
}

main().catch((err) => {
  console.error(`mcp_client.mjs (${mode}): ${err?.stack || err}`);
  console.log(JSON.stringify({ ...report, error: String(err) }));
  process.exit(1);
});
