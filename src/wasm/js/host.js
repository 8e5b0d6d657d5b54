// @ts-check
// The JavaScript side of host tools and the approval policy
// (`Agent.open({ tools, approve })`), loaded by `src/wasm/host.rs`: what
// the host gives is read and checked here, its functions are called here,
// and Rust gets plain text back.

/** @typedef {{ sessionId: string, callId: string, signal: AbortSignal }} ToolContext */
/** @typedef {{ name?: unknown, description?: unknown, parameters?: unknown, execute?: unknown, readOnly?: unknown, approval?: unknown, sendsData?: unknown, keepResult?: unknown, strategies?: unknown }} Declared */

/**
 * What a thrown value says.
 * @param {unknown} e
 * @returns {string}
 */
function message(e) {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Reads `AgentConfig.tools`: for each tool, its declaration as JSON text
 * (`name`, `description`, `parameters`, `readOnly`, `approval`: "never",
 * "always", "call" or null, `sendsData`, `keep`: null or a title, "" for
 * the default one, `strategies`), its `execute` and its approval function
 * (or null). A string instead: what is wrong, for an `invalid_argument`.
 *
 * @param {unknown} tools
 * @returns {string | [string, Function, Function | null][]}
 */
export function readTools(tools) {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) return "tools must be an array of { name, description, parameters, execute, ... }";
  /** @type {[string, Function, Function | null][]} */
  const read = [];
  for (const [i, tool] of tools.entries()) {
    /** @type {Declared} */
    const t = tool ?? {};
    const at = `tools[${i}] (${typeof t.name === "string" ? t.name : "unnamed"})`;
    if (typeof t.name !== "string") return `${at}: name must be a string`;
    if (typeof t.execute !== "function") return `${at}: execute must be a function`;
    if (typeof t.parameters !== "object" || t.parameters === null) return `${at}: parameters must be a JSON Schema object`;
    const approval = t.approval;
    if (approval !== undefined && approval !== "never" && approval !== "always" && typeof approval !== "function") {
      return `${at}: approval must be "never", "always" or a function of the arguments`;
    }
    const keep = t.keepResult;
    const title = /** @type {{ title?: unknown }} */ (keep ?? {}).title;
    let text;
    try {
      text = JSON.stringify({
        name: t.name,
        description: typeof t.description === "string" ? t.description : "",
        parameters: t.parameters,
        readOnly: t.readOnly === true,
        approval: typeof approval === "function" ? "call" : approval ?? null,
        sendsData: t.sendsData === true,
        keep: keep ? (typeof title === "string" ? title : "") : null,
        strategies: Array.isArray(t.strategies) ? t.strategies : null,
      });
    } catch (e) {
      return `${at}: parameters are not JSON (${message(e)})`;
    }
    read.push([text, t.execute, typeof approval === "function" ? approval : null]);
  }
  return read;
}

/**
 * Whether a call asks the person first, by the tool's approval function
 * (one that throws asks).
 *
 * @param {Function} approval
 * @param {unknown} args
 * @returns {boolean}
 */
export function asksFirst(approval, args) {
  try {
    return Boolean(approval(args));
  } catch {
    return true;
  }
}

/**
 * Runs a host tool's `execute`: its result as text (a string as it is,
 * anything else as JSON, nothing as ""); a throw or rejection rejects with
 * its message.
 *
 * @param {(args: unknown, ctx: ToolContext) => unknown} execute
 * @param {unknown} args
 * @param {string} sessionId
 * @param {string} callId
 * @param {AbortSignal} signal
 * @returns {Promise<string>}
 */
export async function runTool(execute, args, sessionId, callId, signal) {
  try {
    const value = await execute(args, { sessionId, callId, signal });
    return typeof value === "string" ? value : JSON.stringify(value) ?? "";
  } catch (e) {
    throw message(e);
  }
}

/**
 * Asks the host's approval policy about a call: "approve", "ask", "deny:"
 * followed by the reason (if any), or "" when it gives no answer (the
 * settings and the tool decide). A throw, a rejection or another answer
 * rejects with what went wrong (the call is then reviewed).
 *
 * @param {(call: { sessionId: string, tool: string, arguments: unknown }) => unknown} policy
 * @param {string} sessionId
 * @param {string} tool
 * @param {unknown} args
 * @returns {Promise<string>}
 */
export async function askPolicy(policy, sessionId, tool, args) {
  /** @type {unknown} */
  let answer;
  try {
    answer = await policy({ sessionId, tool, arguments: args });
  } catch (e) {
    throw message(e);
  }
  if (answer === undefined || answer === null) return "";
  const { decision, reason } = /** @type {{ decision?: unknown, reason?: unknown }} */ (
    typeof answer === "object" ? answer : { decision: answer }
  );
  if (decision === "approve" || decision === "ask") return decision;
  if (decision === "deny") return `deny:${typeof reason === "string" ? reason : ""}`;
  throw `approve returned ${JSON.stringify(answer)}, not "approve", "ask" or "deny"`;
}
