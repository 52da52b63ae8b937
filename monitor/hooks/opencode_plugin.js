// system3: tells system3 what this opencode is doing (docs/hooks.md).
// Written by `system3 hooks install --agent opencode`, which replaces it
// when run again; remove the file to stop it.
//
// For each event that changes the pane's state (a turn started, a turn
// ended, a turn failed, a permission asked) it runs system3's hook command
// with the event on stdin, one at a time and in order, with the time it
// happened (a queued event is delivered late). It never breaks
// opencode: every error is swallowed, a command that hangs is killed after
// a few seconds, and nothing is printed.
import { spawn } from "node:child_process";

const COMMAND = "__SYSTEM3_HOOK_COMMAND__";
const TIMEOUT_MS = 5000;
const MAX_PENDING = 32;

export const System3 = async ({ directory }) => {
  const subagents = new Set(); // sessions a task tool started: not the pane's turn
  const busy = new Set(); // sessions whose turn was reported started
  const failed = new Set(); // sessions whose turn ended on an error
  let queue = Promise.resolve();
  let pending = 0;

  const run = (body) =>
    new Promise((resolve) => {
      let child;
      try {
        child = spawn("/bin/sh", ["-c", COMMAND], { stdio: ["pipe", "ignore", "ignore"] });
      } catch {
        resolve();
        return;
      }
      const timer = setTimeout(() => {
        try { child.kill("SIGKILL"); } catch {}
        resolve();
      }, TIMEOUT_MS);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      child.on("error", done);
      child.on("close", done);
      try {
        child.stdin.on("error", () => {});
        child.stdin.end(body);
      } catch {}
    });

  const send = (type, properties) => {
    if (pending >= MAX_PENDING) return;
    let body;
    try {
      body = JSON.stringify({ type, properties, directory, at: Date.now() });
    } catch {
      return;
    }
    pending++;
    queue = queue.then(() => run(body)).catch(() => {}).then(() => { pending--; });
  };

  // short keeps a permission's text fields, bounded: a diff may be large.
  const short = (meta) => {
    const out = {};
    for (const [k, v] of Object.entries(meta || {})) {
      if (typeof v === "string" && v.length <= 4096) out[k] = v;
    }
    return out;
  };

  const handle = (event) => {
    const p = event.properties || {};
    const id = p.sessionID;
    switch (event.type) {
      case "session.created":
      case "session.updated":
        if (p.info && p.info.parentID) subagents.add(p.info.id);
        return;
      case "session.status":
        if (!id || subagents.has(id) || !p.status || p.status.type !== "busy" || busy.has(id)) return;
        busy.add(id);
        failed.delete(id);
        send(event.type, { sessionID: id, status: { type: "busy" } });
        return;
      case "session.error": {
        const e = p.error || {};
        if (!id || subagents.has(id) || e.name === "MessageAbortedError") return;
        failed.add(id);
        const data = e.data || {};
        send(event.type, { sessionID: id, error: { name: e.name, data: { message: data.message, statusCode: data.statusCode } } });
        return;
      }
      case "session.idle":
        // One end per turn; a turn that failed ended with its error.
        if (!id || !busy.delete(id) || failed.has(id)) return;
        send(event.type, { sessionID: id });
        return;
      case "permission.asked":
        send(event.type, {
          id: p.id, sessionID: id, permission: p.permission, patterns: p.patterns,
          metadata: short(p.metadata), tool: p.tool,
        });
        return;
    }
  };

  return {
    event: async ({ event }) => {
      try {
        handle(event);
      } catch {}
    },
  };
};
