// system1's function-hook module (Claude Code 2.1.287 and later load it from hooks.json "modules").
//
// At `agent.spawn` it asks the system1 binary, once, which model the subagent should run on
// (`system1 hook agent-spawn`, the same routing and `[routing] enforce` as the PreToolUse hook) and
// sets the spawn's `model` to what the binary prints. On anything else (no binary, a crash, a
// timeout, no answer, System-1 paused or off) the spawn goes on exactly as Claude made it.
//
// At `session.start` it puts the session's id in SYSTEM1_SPAWN_MODULE, in Claude Code's own
// environment: the PreToolUse hook of that session then steps aside, so one hook acts on each spawn
// and one log entry names it. Where this module does not load (older Claude Code, an organization
// that allows only its own mods), nothing sets the variable and the PreToolUse hook acts as before.
// See docs/routing.md, "Two ways to set the model".

// The most the binary is given, as hooks.json gives the PreToolUse hook; its own engine budget
// (`[routing] budget_ms`) ends well before.
const TIMEOUT_MS = 5000;

// Whether this module told the session's PreToolUse hook to step aside; until it has, it acts on
// nothing, so a spawn is never routed twice.
let acting = false;

export function register(on) {
  on("session.start", async ($, e, next) => {
    try {
      const id = await $.session.id();
      const set = await $.env.set("SYSTEM1_SPAWN_MODULE", id);
      acting = typeof id === "string" && id !== "" && set?.deny === undefined;
    } catch {
      acting = false;
    }
    return next(e);
  });

  on("agent.spawn", async ($, e, next) => {
    // A resumed agent keeps its model, and a workflow's agents are no Agent call.
    if (!acting || e.resume !== undefined || e.workflow !== undefined) return next(e);
    let model;
    try {
      model = await ask($, e);
    } catch {
      model = undefined;
    }
    return next(model === undefined ? e : { ...e, model });
  });
}

// The model the binary sets for spawn `e`, or undefined to leave it as it is.
async function ask($, e) {
  const [session, cwd, installDir, home] = await Promise.all([
    $.session.id(),
    $.session.cwd(),
    $.env.get("SYSTEM1_INSTALL_DIR"),
    $.env.get("HOME"),
  ]);
  // The input the PreToolUse hook gets, built from the spawn.
  const input = {
    session_id: session,
    cwd: e.cwd ?? cwd,
    hook_event_name: "agent.spawn",
    tool_name: "Agent",
    tool_use_id: e.tool_use_id,
    tool_input: {
      description: e.description,
      prompt: e.prompt,
      subagent_type: e.fork ? "fork" : e.subagentType,
      ...(e.model === undefined ? {} : { model: e.model }),
    },
  };
  const dir = installDir || (home ? `${home}/.system1-gateway` : undefined);
  const binaries = dir ? [`${dir}/bin/system1`, "system1"] : ["system1"];
  for (const binary of binaries) {
    let result;
    try {
      result = await $.process.run([binary, "hook", "agent-spawn"], {
        stdin: JSON.stringify(input),
        timeoutMs: TIMEOUT_MS,
      });
    } catch (err) {
      // Not there: the next place. Anything else (a timeout): the spawn as it is.
      if (String(err).includes("failed to start")) continue;
      return undefined;
    }
    if (result.exitCode !== 0) return undefined;
    const text = result.stdout.trim();
    if (text === "") return undefined;
    const answer = JSON.parse(text);
    return typeof answer?.model === "string" && answer.model !== "" ? answer.model : undefined;
  }
  return undefined;
}
