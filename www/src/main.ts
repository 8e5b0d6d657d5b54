// The demo app: a chat with the in-browser agent, its artifacts, the review
// dialog for destructive edits, and an offline project editor. Everything is
// stored in IndexedDB by the package; the proxy at /api reaches the LLM.
import "./style.css";
import init, { Agent, type AgentEvent, type Artifact, type Lifecycle, type ManuscriptSection, type RunResult, type SessionInfo } from "atelier-agent";
import { renderStream } from "./render";
import { setupPlayground } from "./playground";
import { setupSearch } from "./search";

/** Which session the app shows (a preference of this browser; the sessions live in IndexedDB). */
const CURRENT_session_KEY = "atelier-current-session";
let session = localStorage.getItem(CURRENT_session_KEY) ?? "main";
const PROXY = "/api";
/** Where the client token (ATELIER_CLIENT_TOKEN of the proxy) is kept in this browser. */
const TOKEN_KEY = "atelier-client-token";

function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`missing #${id}`);
  return node as T;
}

const ui = {
  status: byId<HTMLParagraphElement>("status"),
  banner: byId<HTMLParagraphElement>("banner"),
  transcript: byId<HTMLDivElement>("transcript"),
  composer: byId<HTMLFormElement>("composer"),
  input: byId<HTMLTextAreaElement>("input"),
  agentMode: byId<HTMLInputElement>("agent-mode"),
  send: byId<HTMLButtonElement>("send"),
  stop: byId<HTMLButtonElement>("stop"),
  artifacts: byId<HTMLUListElement>("artifact-list"),
  review: byId<HTMLDialogElement>("review"),
  reviewSummary: byId<HTMLParagraphElement>("review-summary"),
  reviewDiff: byId<HTMLPreElement>("review-diff"),
  reviewReason: byId<HTMLInputElement>("review-reason"),
  reopenReview: byId<HTMLButtonElement>("reopen-review"),
  continueRun: byId<HTMLButtonElement>("continue-run"),
  interject: byId<HTMLButtonElement>("interject"),
  usage: byId<HTMLParagraphElement>("usage"),
  sessionSelect: byId<HTMLSelectElement>("session-select"),
  sessionTitle: byId<HTMLInputElement>("session-title"),
  newSession: byId<HTMLButtonElement>("new-session"),
  renameSession: byId<HTMLButtonElement>("rename-session"),
  deleteSession: byId<HTMLButtonElement>("delete-session"),
  approve: byId<HTMLButtonElement>("approve"),
  approveSession: byId<HTMLButtonElement>("approve-session"),
  grantList: byId<HTMLUListElement>("grant-list"),
  noGrants: byId<HTMLParagraphElement>("no-grants"),
  reject: byId<HTMLButtonElement>("reject"),
  projectForm: byId<HTMLFormElement>("new-project"),
  projectTitle: byId<HTMLInputElement>("project-title"),
  projectSelect: byId<HTMLSelectElement>("project-select"),
  chapters: byId<HTMLDivElement>("chapters"),
  chapterForm: byId<HTMLFormElement>("new-chapter"),
  chapterTitle: byId<HTMLInputElement>("chapter-title"),
  chapterText: byId<HTMLTextAreaElement>("chapter-text"),
  chapterLabel: byId<HTMLLabelElement>("chapter-label"),
  saveChapter: byId<HTMLButtonElement>("save-chapter"),
  history: byId<HTMLDetailsElement>("history"),
  conflict: byId<HTMLDialogElement>("conflict"),
  keepMine: byId<HTMLButtonElement>("keep-mine"),
  keepSaved: byId<HTMLButtonElement>("keep-saved"),
  historyList: byId<HTMLOListElement>("history-list"),
  continuityNotes: byId<HTMLDivElement>("continuity-notes"),
  updateContinuity: byId<HTMLButtonElement>("update-continuity"),
  undo: byId<HTMLButtonElement>("undo"),
  mainModel: byId<HTMLInputElement>("main-model"),
  subModel: byId<HTMLInputElement>("sub-model"),
  fullThreshold: byId<HTMLInputElement>("full-threshold"),
  longTermMemory: byId<HTMLInputElement>("long-term-memory"),
  contextWindow: byId<HTMLInputElement>("context-window"),
  compression: byId<HTMLInputElement>("compression"),
  continuityMemory: byId<HTMLInputElement>("continuity-memory"),
  searchByMeaning: byId<HTMLInputElement>("search-by-meaning"),
  delegationModel: byId<HTMLSelectElement>("delegation-model"),
  clientToken: byId<HTMLInputElement>("client-token"),
  modelList: byId<HTMLDataListElement>("model-list"),
  modelSource: byId<HTMLParagraphElement>("model-source"),
  approvals: byId<HTMLFieldSetElement>("approvals"),
  mcpServers: byId<HTMLFieldSetElement>("mcp-servers"),
  mcpStatus: byId<HTMLParagraphElement>("mcp-status"),
  settingsStatus: byId<HTMLSpanElement>("settings-status"),
  saveSettings: byId<HTMLButtonElement>("save-settings"),
};

let agent: Agent;
let running: AbortController | null = null;
let phase = "idle";
let activeTool: string | null = null;
/** The running call's progress as its MCP server reports it ("2/5: reading"), until the tool changes. */
let toolProgress: string | null = null;
let known: { reads: number; web: number; changes: number } | null = null;
let currentSection: ManuscriptSection | null = null;
/** The chapter text has edits that are not saved yet: nothing overwrites them. */
let dirty = false;
let reviewing = false;
/** The session's artifacts as last listed (to link cited sources to them). */
let artifactsSeen: Artifact[] = [];

/** The artifact that holds `url` (a search or a page the agent kept), if any. */
function sourceOf(url: string): { id: string; title: string } | null {
  const found = artifactsSeen.find((a) => a.content.includes(url));
  return found ? { id: found.id, title: found.title } : null;
}

/**
 * An artifact made of web material carries the fence the agent quotes it in
 * (`⟦quoted web material: KIND from SOURCE (nonce N)⟧` … `⟦end of quoted web
 * material N⟧`): shown here as its source and its text.
 */
function fromTheWeb(content: string): { source: string; body: string } | null {
  const open = /^⟦quoted web material: (.*) \(nonce (\w+)\)⟧\n/.exec(content);
  if (!open) return null;
  const close = `\n⟦end of quoted web material ${open[2]}⟧`;
  const body = content.slice(open[0].length);
  return { source: open[1] ?? "", body: body.endsWith(close) ? body.slice(0, -close.length) : body };
}

/** Opens an artifact in the panel and moves focus to it. */
function showArtifact(id: string): void {
  const item = ui.artifacts.querySelector<HTMLElement>(`li.artifact[data-id="${CSS.escape(id)}"]`);
  const details = item?.querySelector("details");
  if (!item || !details) return;
  details.open = true;
  item.scrollIntoView({ block: "nearest" });
  details.querySelector("summary")?.focus();
}

// ---- status, banner, transcript ------------------------------------------

function showStatus(): void {
  const label = phase === "idle" && reviewing ? "waiting for your review" : phase;
  const parts = [label];
  if (activeTool) parts.push(toolProgress ? `${activeTool} (${toolProgress})` : activeTool);
  if (known && phase !== "idle" && known.reads + known.web + known.changes > 0) {
    parts.push(`knows ${known.reads} read${known.reads === 1 ? "" : "s"}, ${known.web} web source${known.web === 1 ? "" : "s"}, ${known.changes} change${known.changes === 1 ? "" : "s"}`);
  }
  ui.status.textContent = parts.join(" · ");
  ui.status.dataset.phase = phase;
}

function showBanner(message: string | null): void {
  ui.banner.hidden = message === null;
  ui.banner.textContent = message ?? "";
}

function addTurn(role: "person" | "agent", text = ""): HTMLElement {
  const turn = document.createElement("article");
  turn.className = `turn ${role}`;
  turn.setAttribute("aria-label", role === "person" ? "You" : "Agent");
  const body = document.createElement("div");
  body.className = "body";
  if (role === "person") body.textContent = text;
  turn.append(body);
  ui.transcript.append(turn);
  ui.transcript.scrollTop = ui.transcript.scrollHeight;
  return body;
}

/** Shows `session`'s conversation as stored in IndexedDB by the package. */
async function restoreTranscript(): Promise<void> {
  ui.transcript.replaceChildren();
  const entries = await agent.transcript(session);
  // Conversations from before transcripts were stored by the package.
  const legacy = entries.length === 0 ? localStorage.getItem(`atelier-transcript-${session}`) : null;
  const shown = legacy
    ? (JSON.parse(legacy) as { role: "person" | "agent"; text: string }[]).map((t) => ({ ...t, status: undefined }))
    : entries;
  for (const turn of shown) {
    const body = addTurn(turn.role, turn.text);
    const bubble = body.parentElement as HTMLElement;
    if (turn.role === "agent") {
      renderStream(body, turn.text, sourceOf);
      bubble.dataset.markdown = turn.text;
    }
    if (turn.status === "interrupted") bubble.dataset.interrupted = "true";
  }
}

// ---- sessions -------------------------------------------------------------

async function refreshSessions(): Promise<void> {
  const list: SessionInfo[] = await agent.sessions();
  const options = list.map((s) => {
    const option = document.createElement("option");
    option.value = s.id;
    option.textContent = s.title;
    return option;
  });
  if (!list.some((s) => s.id === session)) {
    // A new session appears in the list with its first message.
    const option = document.createElement("option");
    option.value = session;
    option.textContent = "New session";
    options.unshift(option);
  }
  ui.sessionSelect.replaceChildren(...options);
  ui.sessionSelect.value = session;
  ui.sessionTitle.value = list.find((s) => s.id === session)?.title ?? "";
}

/** Shows `id`: its conversation, artifacts and any review it waits for. */
async function switchSession(id: string): Promise<void> {
  if (running) return;
  session = id;
  localStorage.setItem(CURRENT_session_KEY, id);
  ui.review.close();
  ui.reopenReview.hidden = true;
  await refreshArtifacts();
  await restoreTranscript();
  await refreshSessions();
  await refreshGrants();
  // A review that was decided before the tab closed is not asked again; a
  // turn cut off mid-run (closed tab, crash) can be continued where it stopped.
  const state = await agent.runState(session);
  reviewing = state.state === "review";
  ui.continueRun.hidden = state.state !== "unfinished";
  showStatus();
  if (state.state === "review") openReview({ status: "interrupted", content: "", review: state.review, strategy: null });
}

function errorText(e: unknown): string {
  const code = e instanceof Error ? (e as Error & { code?: string }).code : undefined;
  if (code === "not_configured") return "No model is available: start a local model server (for example `ollama serve` with a model pulled) and send again — the proxy finds it by itself — or set ATELIER_UPSTREAM_URL and a key (see the README).";
  if (code === "reload_required") return "This app was updated in another tab: reload this page to go on (nothing was lost).";
  if (code === "conflict") return "The text was changed after the agent's change, so undo would throw that work away: nothing was undone. The chapter's history can restore any version.";
  if (code === "blocked") return "Another tab with an older copy of this app keeps your data open, so it cannot be updated: close or reload your other atelier tabs, then reload this page. Nothing was changed.";
  if (code === "review_pending") return "A change waits for your review: approve or reject it first (Open the pending review).";
  if (code === "busy") return "This session is running in another tab: wait for it to finish there, or start a new session here.";
  if (code === "rate_limited") return "The model provider is limiting requests right now: wait a minute, then send again.";
  if (code === "bad_request" && e instanceof Error && /model/i.test(e.message)) return `The proxy refused the model: ${e.message}`;
  if (code === "context_overflow") return "The conversation no longer fits the model's context window: start a new session, turn some artifacts off, or raise contextWindow in the settings if your model has a larger one.";
  if (code === "context_too_long") return "The conversation is too long for the model: start a new session or turn some artifacts off.";
  if (code === "not_running") return "The agent had already finished: send your message again as a new one.";
  if (code === "incomplete") return "The agent kept trying to finish without doing what the task needs (reading the chapter, or searching when you asked for a search), so the run was stopped: try again, or say what it should read.";
  if (code === "tool_loop") return "The agent kept repeating the same steps, so the run was stopped: rephrase the request, or give it what it seems to be missing.";
  if (code === "recursion_limit") return "The agent took too many steps without finishing: rephrase the request or break it into smaller ones.";
  if (code === "auth") return "The proxy (or the LLM behind it) refused the credentials: if the proxy asks for a client token, enter it under Settings.";
  if (code === "upstream_unavailable") return "The proxy or the LLM cannot be reached. Your projects and artifacts still work offline.";
  return e instanceof Error ? e.message : String(e);
}

// ---- runs -----------------------------------------------------------------

async function run(start: (options: { agentMode: boolean; signal: AbortSignal; onEvent: (e: AgentEvent) => void }) => Promise<RunResult>): Promise<void> {
  const controller = new AbortController();
  running = controller;
  ui.continueRun.hidden = true;
  ui.send.disabled = true;
  ui.interject.hidden = false;
  ui.stop.disabled = false;
  const body = addTurn("agent");
  const turn = body.parentElement as HTMLElement;
  let markdown = "";
  try {
    const result = await start({
      agentMode: ui.agentMode.checked,
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === "content") {
          markdown += event.text;
          renderStream(body, markdown, sourceOf);
        } else if (event.type === "phase") {
          phase = event.phase;
          showStatus();
        } else if (event.type === "active_tool") {
          activeTool = event.tool;
          toolProgress = null;
          showStatus();
        } else if (event.type === "progress") {
          const done = event.total ? `${event.progress}/${event.total}` : `${event.progress}`;
          toolProgress = event.message ? `${done}: ${event.message}` : done;
          showStatus();
        } else if (event.type === "artifact") {
          void refreshArtifacts();
        } else if (event.type === "warning") {
          showBanner(event.message);
        } else if (event.type === "delegate") {
          // A delegate's steps, grouped per call under the turn's stream.
          let box = turn.querySelector<HTMLDetailsElement>(`details.delegate[data-call="${CSS.escape(event.callId)}"]`);
          if (!box) {
            box = document.createElement("details");
            box.className = "delegate";
            box.dataset.call = event.callId;
            box.open = true;
            const summary = document.createElement("summary");
            summary.textContent = `Delegate: ${event.detail}`;
            box.append(summary, document.createElement("ol"));
            body.after(box);
          }
          if (event.phase !== "started") {
            const item = document.createElement("li");
            item.dataset.phase = event.phase;
            item.textContent = event.phase === "step" ? event.detail : `${event.phase}${event.detail ? `: ${event.detail}` : ""}`;
            box.querySelector("ol")!.append(item);
          }
          if (event.phase === "done" || event.phase === "incomplete") box.dataset.state = event.phase;
        } else if (event.type === "info" && event.name === "continuity") {
          void refreshContinuity();
        } else if (event.type === "facts") {
          known = { reads: event.reads, web: event.web, changes: event.changes };
          showStatus();
        } else if (event.type === "compressed") {
          const notice = document.createElement("p");
          notice.className = "notice compressed";
          const why = { token_threshold: "the conversation grew long", heavy_tool: "a large tool result arrived", turn_limit: "many model calls since the last summary" }[event.reason];
          notice.textContent = `Earlier conversation summarised to fit the model's window (${why}): about ${event.tokensBefore} → ${event.tokensAfter} tokens. The full transcript stays here.`;
          body.before(notice);
        } else if (event.type === "usage") {
          ui.usage.hidden = false;
          ui.usage.textContent = `Last model call: ${event.promptTokens} prompt tokens (${event.cachedTokens} from the model's cache), ${event.completionTokens} generated`;
        }
      },
    });
    showBanner(null);
    if (result.status === "aborted") {
      turn.remove();
    } else {
      renderStream(body, result.content, sourceOf);
      turn.dataset.markdown = result.content;
    }
    if (result.status === "interrupted") {
      turn.dataset.interrupted = "true";
      openReview(result);
    }
    reviewing = result.status === "interrupted";
  } catch (e) {
    turn.remove();
    showBanner(errorText(e));
  } finally {
    running = null;
    phase = "idle";
    activeTool = null;
    known = null;
    showStatus();
    ui.send.disabled = false;
    ui.interject.hidden = true;
    ui.stop.disabled = true;
    await refreshSessions();
    await refreshArtifacts();
    await refreshSection();
  }
}

function openReview(result: RunResult): void {
  const review = result.review;
  if (!review) return;
  const target = review.target ? ` “${review.target.title}”` : "";
  const why = review.reason ? ` ${review.reason}` : "";
  ui.reviewSummary.textContent = `The agent wants to run ${review.tool}${target}.${why}`;
  ui.reviewDiff.textContent = review.diff ?? review.arguments;
  ui.reviewReason.value = "";
  if (!ui.review.open) ui.review.showModal();
}

/** Answers the review; `forSession` approves the tool for the rest of the session. */
async function decide(approved: boolean, forSession = false): Promise<void> {
  ui.review.close();
  ui.reopenReview.hidden = true;
  reviewing = false;
  // The resumed run's output repeats the paused turn's: it replaces that bubble.
  ui.transcript.querySelector(".turn.agent[data-interrupted]")?.remove();
  const reason = ui.reviewReason.value.trim();
  const decision = forSession ? { approved, grant: "session" as const } : reason ? { approved, reason } : { approved };
  await run((options) => agent.resume(session, decision, options));
  await refreshGrants();
}

/** The session's grants in the settings, each with a button that revokes it. */
async function refreshGrants(): Promise<void> {
  const grants = await agent.grants(session);
  ui.noGrants.hidden = grants.length > 0;
  ui.grantList.replaceChildren(
    ...grants.map((grant) => {
      const item = document.createElement("li");
      item.className = "grant";
      item.dataset.tool = grant.tool;
      const revoke = document.createElement("button");
      revoke.type = "button";
      revoke.className = "secondary";
      revoke.textContent = "Revoke";
      revoke.setAttribute("aria-label", `Revoke ${grant.tool}`);
      revoke.addEventListener("click", () => {
        void agent.revokeGrant(session, grant.tool).then(refreshGrants, (e: unknown) => showBanner(errorText(e)));
      });
      item.append(`${grant.tool} `, revoke);
      return item;
    }),
  );
}

// ---- artifacts ------------------------------------------------------------

async function refreshArtifacts(): Promise<void> {
  const list: Artifact[] = await agent.listArtifacts(session);
  artifactsSeen = list;
  ui.artifacts.replaceChildren(
    ...list.map((artifact) => {
      const item = document.createElement("li");
      item.className = `artifact ${artifact.isActive ? "active" : "inactive"}`;
      item.dataset.id = artifact.id;
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      summary.textContent = artifact.title;
      const content = document.createElement("pre");
      const web = fromTheWeb(artifact.content);
      content.textContent = web ? web.body : artifact.content;
      if (web) {
        const origin = document.createElement("p");
        origin.className = "hint web-origin";
        origin.textContent = `From the web: ${web.source} — quoted to the agent as data, never as instructions.`;
        details.append(origin);
      }
      details.prepend(summary);
      details.append(content);
      const toggle = document.createElement("input");
      toggle.type = "checkbox";
      toggle.checked = artifact.isActive;
      toggle.setAttribute("aria-label", `Use “${artifact.title}” in the context`);
      const toggleLabel = document.createElement("label");
      toggleLabel.className = "toggle";
      toggleLabel.append(toggle, " In context");
      toggle.addEventListener("change", () => void agent.setArtifactActive(artifact.id, toggle.checked).then(refreshArtifacts));
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "secondary";
      remove.textContent = "Delete";
      remove.setAttribute("aria-label", `Delete “${artifact.title}”`);
      remove.addEventListener("click", () => void agent.deleteArtifact(artifact.id).then(refreshArtifacts));
      // The lifecycle: only the person changes it (the agent cannot).
      const lifecycle = document.createElement("select");
      lifecycle.className = "lifecycle";
      lifecycle.setAttribute("aria-label", `How “${artifact.title}” may change`);
      for (const [value, label] of [["overwritable", "Editable"], ["append_only", "Append only"], ["static", "Read-only"]] as const) {
        const option = document.createElement("option");
        option.value = value;
        option.textContent = label;
        lifecycle.append(option);
      }
      lifecycle.value = artifact.lifecycle;
      lifecycle.addEventListener("change", () => {
        const chosen = lifecycle.value as Lifecycle;
        void agent.setArtifactLifecycle(artifact.id, chosen).then(refreshArtifacts, (e: unknown) => showBanner(errorText(e)));
      });
      const bar = document.createElement("div");
      bar.className = "row";
      bar.append(toggleLabel, lifecycle, remove);
      item.append(details, bar);
      return item;
    }),
  );
  if (list.length === 0) {
    const empty = document.createElement("li");
    empty.className = "empty";
    empty.textContent = "Search results and notes the agent keeps appear here.";
    ui.artifacts.append(empty);
  }
}

// ---- projects -------------------------------------------------------------

async function refreshProjects(select?: string): Promise<void> {
  const projects = await agent.projects();
  ui.projectSelect.replaceChildren(
    ...projects.map((p) => {
      const option = document.createElement("option");
      option.value = p.id;
      option.textContent = p.title;
      return option;
    }),
  );
  if (select) ui.projectSelect.value = select;
  await refreshChapters();
}

async function refreshChapters(selectId?: string): Promise<void> {
  const projectId = ui.projectSelect.value;
  const sections = projectId ? await agent.sections(projectId) : [];
  ui.chapters.replaceChildren(
    ...sections.map((s, i) => {
      const button = document.createElement("button");
      button.type = "button";
      button.setAttribute("role", "listitem");
      button.className = "chapter";
      button.textContent = `${i + 1}. ${s.title}`;
      button.addEventListener("click", () => openSection(s));
      return button;
    }),
  );
  const chosen = sections.find((s) => s.id === (selectId ?? currentSection?.id)) ?? sections[0] ?? null;
  if (chosen) openSection(chosen);
  else {
    currentSection = null;
    ui.chapterText.value = "";
    ui.chapterText.disabled = true;
    ui.saveChapter.disabled = true;
  }
}

function openSection(section: ManuscriptSection): void {
  currentSection = section;
  dirty = false;
  ui.chapterLabel.textContent = `Chapter text: ${section.title} (id ${section.id.slice(0, 8)})`;
  ui.chapterText.value = section.content;
  ui.chapterText.disabled = false;
  ui.saveChapter.disabled = false;
  ui.chapterText.dataset.sectionId = section.id;
  void refreshHistory();
  void refreshContinuity();
}

/** Re-reads the open chapter, unless the person has unsaved text in it. */
async function refreshSection(): Promise<void> {
  if (!currentSection) return;
  const sections = await agent.sections(currentSection.projectId);
  const fresh = sections.find((s) => s.id === currentSection?.id);
  if (!fresh) return;
  if (!dirty) {
    openSection(fresh);
  } else if (fresh.content !== currentSection.content) {
    showBanner("The chapter changed while you were typing. Your unsaved text is kept in the editor; the other version is in the chapter's history.");
    void refreshHistory();
  }
}

/** The agent is working: the words join its turn before its next model call. */
function interject(text: string): void {
  ui.input.value = "";
  addTurn("person", text).parentElement?.classList.add("interjection");
  void agent.interject(session, text).catch((e: unknown) => showBanner(errorText(e)));
}

/** A save refused as stale: the person's text, to keep if they choose so. */
let conflicted: ManuscriptSection | null = null;

async function saveChapter(section: ManuscriptSection): Promise<void> {
  try {
    const saved = await agent.saveSection(section);
    currentSection = saved;
    dirty = false;
    // A notice about this chapter (changed elsewhere, not saved) is settled now.
    showBanner(null);
    await refreshChapters(saved.id);
  } catch (e) {
    const current = (e as { current?: ManuscriptSection }).current;
    if ((e as { code?: string }).code === "conflict" && current) {
      // Keep mine = save again on top of the version that is there now.
      conflicted = { ...current, title: section.title, content: section.content };
      ui.conflict.showModal();
      return;
    }
    // The text stays in the editor; the person learns why it was not saved.
    showBanner(`The chapter was not saved: ${errorText(e)}`);
  }
}

/** What another tab changed, shown here: lists, the open chapter (unless typing), the review state. */
async function refreshFromOtherTab(stores: Set<string>, done: () => void): Promise<void> {
  done();
  if (running) return;
  if (stores.has("sessionArtifacts")) await refreshArtifacts();
  if (stores.has("sessions") || stores.has("transcript")) {
    await refreshSessions();
    await restoreTranscript();
  }
  if (stores.has("projects") || stores.has("manuscripts")) {
    if (dirty) await refreshSection();
    else await refreshProjects(ui.projectSelect.value || undefined);
  }
  if (stores.has("checkpoints")) {
    const state = await agent.runState(session);
    reviewing = state.state === "review";
    ui.reopenReview.hidden = !reviewing || ui.review.open;
    ui.continueRun.hidden = state.state !== "unfinished";
    if (!reviewing && ui.review.open) ui.review.close();
    showStatus();
  }
}

/** The project's continuity notes, one collapsible block each. */
async function refreshContinuity(): Promise<void> {
  const projectId = ui.projectSelect.value;
  ui.updateContinuity.disabled = !currentSection;
  const notes = projectId ? await agent.continuityNotes(projectId).catch(() => []) : [];
  if (notes.length === 0) {
    const empty = document.createElement("p");
    empty.className = "hint";
    empty.textContent = "No notes yet.";
    ui.continuityNotes.replaceChildren(empty);
    return;
  }
  ui.continuityNotes.replaceChildren(
    ...notes.map((note) => {
      const block = document.createElement("details");
      block.className = "note";
      const title = document.createElement("summary");
      title.textContent = `${note.title} (${note.content.split("\n").filter((l) => l.trim()).length} lines)`;
      const text = document.createElement("pre");
      text.textContent = note.content;
      block.append(title, text);
      return block;
    }),
  );
}

async function refreshHistory(): Promise<void> {
  const section = currentSection;
  ui.historyList.replaceChildren();
  if (!section) return;
  const revisions = await agent.revisions(section.id);
  for (const revision of revisions) {
    const item = document.createElement("li");
    const when = new Date(revision.createdAt).toLocaleString();
    const who = revision.origin === "agent" ? `the agent (${revision.reason})` : revision.reason === "restore" ? "you (a restore)" : "you";
    item.textContent = `${when}: changed by ${who}; before it, ${revision.created ? "the chapter did not exist" : `${revision.beforeChars} characters`} `;
    if (!revision.created) {
      const restore = document.createElement("button");
      restore.type = "button";
      restore.className = "secondary";
      restore.textContent = "Restore the version before";
      restore.dataset.revision = revision.id;
      restore.addEventListener("click", () => {
        void agent.restoreRevision(revision.id).then(async () => {
          dirty = false;
          showBanner(null);
          await refreshSection();
        }, (e: unknown) => showBanner(errorText(e)));
      });
      item.append(restore);
    }
    ui.historyList.append(item);
  }
}

// ---- wiring -----------------------------------------------------------------

async function checkProxy(): Promise<void> {
  let answer: Response;
  try {
    answer = await fetch(`${PROXY}/health`, { cache: "no-store" });
  } catch {
    showBanner("The proxy cannot be reached: chat is unavailable, your projects and artifacts still work offline.");
    return;
  }
  {
    const health = (await answer.json()) as {
      chat?: {
        configured?: boolean;
        upstream?: {
          url: string;
          source: string;
          detected: boolean;
          models: { main: { id: string } | null; sub: { id: string } | null; available: { id: string; embedding: boolean }[] };
        } | null;
      };
      clientTokenRequired?: boolean;
    };
    showModels(health.chat?.upstream ?? null);
    if (health.clientTokenRequired && !localStorage.getItem(TOKEN_KEY)) {
      showBanner("This proxy asks for a client token: enter it under Settings (it stays in this browser).");
    } else if (!health.chat?.configured) {
      showBanner("No model is available yet: start a local model server (Ollama, llama.cpp, LM Studio, vLLM) and it is found on your next message, or set ATELIER_UPSTREAM_URL (see the README). Everything else works.");
    }
  }
}

function openAgent(): Promise<Agent> {
  const clientToken = localStorage.getItem(TOKEN_KEY) ?? undefined;
  return Agent.open(clientToken ? { proxyUrl: PROXY, clientToken } : { proxyUrl: PROXY });
}

/** The model picker: the aliases and every chat model the proxy's upstream offers. */
function showModels(upstream: { url: string; source: string; detected: boolean; models: { main: { id: string } | null; sub: { id: string } | null; available: { id: string; embedding: boolean }[] } } | null): void {
  // An older proxy reports no list.
  const chat = (upstream?.models?.available ?? []).filter((m) => !m.embedding).map((m) => m.id);
  ui.modelList.replaceChildren(
    ...["main", "sub", ...chat].map((id) => {
      const option = document.createElement("option");
      option.value = id;
      if (id === "main" && upstream?.models.main) option.label = `the proxy's main model (${upstream.models.main.id})`;
      if (id === "sub" && upstream?.models.sub) option.label = `the proxy's sub model (${upstream.models.sub.id})`;
      return option;
    }),
  );
  ui.modelSource.textContent = upstream
    ? `${upstream.detected ? `Found ${upstream.source}` : "Using"} at ${upstream.url}: main ${upstream.models.main?.id ?? "—"}, sub ${upstream.models.sub?.id ?? "—"}.`
    : "No model server yet: start Ollama, llama.cpp, LM Studio or vLLM and it is found on your next message.";
}

const GROUPS = { general: "General capabilities", manuscript: "Manuscript tools", plot: "Plot and structure" } as const;

/** One approval toggle per tool, grouped as the person thinks of them. */
function showApprovals(): void {
  const approvals = agent.settings().approvals;
  const parts: HTMLElement[] = [];
  for (const [group, title] of Object.entries(GROUPS)) {
    const tools = agent
      .tools()
      .filter((t) => t.group === group)
      // Reading tools never ask; the web tools are listed (they reach other sites).
      .filter((t) => !t.readOnly || t.needsApprovalByDefault || t.name === "web_search" || t.name === "open_url");
    if (tools.length === 0) continue;
    const heading = document.createElement("p");
    heading.className = "group";
    heading.textContent = title;
    const list = document.createElement("div");
    list.className = "tools";
    for (const tool of tools) {
      const label = document.createElement("label");
      label.className = "toggle";
      label.title = tool.description;
      const box = document.createElement("input");
      box.type = "checkbox";
      box.dataset.tool = tool.name;
      box.checked = approvals[tool.name] ?? tool.needsApprovalByDefault;
      label.append(box, ` ${tool.name}`);
      list.append(label);
    }
    parts.push(heading, list);
  }
  ui.approvals.replaceChildren(ui.approvals.querySelector("legend") ?? document.createElement("legend"), ...parts);
}

const MCP_STATUS = { ready: "ready", unreachable: "not answering", error: "answers with an error", off: "off" } as const;

/**
 * The MCP servers the proxy relays: one switch per server and per tool.
 * A switch takes effect at once (the tools leave or join the next request).
 */
async function showMcpServers(): Promise<void> {
  const servers = await agent.mcpServers();
  const parts: HTMLElement[] = [];
  for (const server of servers) {
    const heading = document.createElement("label");
    heading.className = "toggle server";
    const on = document.createElement("input");
    on.type = "checkbox";
    on.dataset.server = server.name;
    on.checked = server.status !== "off";
    const status = document.createElement("span");
    status.className = "status";
    status.textContent = ` — ${MCP_STATUS[server.status]}${server.problem ? ` (${server.problem})` : ""}`;
    heading.append(on, ` ${server.name}`, status);
    const list = document.createElement("div");
    list.className = "tools";
    for (const tool of server.tools) {
      const label = document.createElement("label");
      label.className = "toggle";
      label.title = `${tool.description}${tool.readOnly ? " (reads only)" : " (asks first: it can change things)"}`;
      const box = document.createElement("input");
      box.type = "checkbox";
      box.dataset.server = server.name;
      box.dataset.tool = tool.name;
      box.checked = tool.enabled;
      box.disabled = server.status === "off";
      label.append(box, ` ${tool.name}`);
      list.append(label);
    }
    parts.push(heading, list);
  }
  ui.mcpStatus.hidden = servers.length > 0;
  ui.mcpServers.replaceChildren(ui.mcpServers.querySelector("legend") ?? document.createElement("legend"), ui.mcpStatus, ...parts);
}

/** Stores the MCP switches as the section shows them, then shows the servers again. */
async function saveMcpSwitches(): Promise<void> {
  const mcp: Record<string, { enabled: boolean; tools: Record<string, boolean> }> = {};
  for (const box of ui.mcpServers.querySelectorAll<HTMLInputElement>("input[data-server]")) {
    const server = (mcp[box.dataset.server ?? ""] ??= { enabled: true, tools: {} });
    if (box.dataset.tool === undefined) server.enabled = box.checked;
    else if (!box.checked) server.tools[box.dataset.tool] = false;
  }
  await agent.updateSettings({ mcp });
  await showMcpServers();
}

async function main(): Promise<void> {
  setupPlayground(byId);
  await init();
  agent = await openAgent();
  const settings = agent.settings();
  ui.mainModel.value = settings.mainModel;
  ui.subModel.value = settings.subModel;
  ui.fullThreshold.value = String(settings.fullThreshold);
  ui.longTermMemory.checked = settings.longTermMemory;
  // Empty while "auto": the placeholder shows the window the proxy reported.
  ui.contextWindow.value = settings.contextWindowSource === "person" ? String(settings.contextWindow) : "";
  ui.contextWindow.placeholder = `auto (${settings.contextWindow})`;
  ui.compression.checked = settings.compression.enabled;
  ui.continuityMemory.checked = settings.continuityMemory;
  ui.searchByMeaning.checked = settings.searchByMeaning;
  ui.delegationModel.value = settings.delegationModel;
  ui.clientToken.value = localStorage.getItem(TOKEN_KEY) ?? "";
  showApprovals();
  showStatus();
  ui.mcpServers.addEventListener("change", () => void saveMcpSwitches().catch((e: unknown) => showBanner(errorText(e))));
  byId<HTMLDetailsElement>("settings").addEventListener("toggle", (event) => {
    if ((event.target as HTMLDetailsElement).open) void showMcpServers().catch((e: unknown) => showBanner(errorText(e)));
  });
  await switchSession(session);
  await refreshProjects();
  void checkProxy();
  setupSearch(agent, {
    async chapter(projectId, sectionId, start, end) {
      await refreshProjects(projectId);
      await refreshChapters(sectionId);
      ui.chapterText.focus();
      if (start !== undefined && end !== undefined) ui.chapterText.setSelectionRange(start, end);
    },
    async artifact(sessionId, artifactId) {
      if (sessionId !== session && !sessionId.startsWith("continuity:")) await switchSession(sessionId);
      showArtifact(artifactId);
    },
    session: switchSession,
  });

  ui.sessionSelect.addEventListener("change", () => void switchSession(ui.sessionSelect.value));
  ui.newSession.addEventListener("click", () => void switchSession(crypto.randomUUID()));
  ui.renameSession.addEventListener("click", () => {
    const title = ui.sessionTitle.value.trim();
    if (!title) return;
    void agent.renameSession(session, title).then(refreshSessions, (e: unknown) => showBanner(errorText(e)));
  });
  ui.deleteSession.addEventListener("click", () => {
    if (running || !confirm("Delete this session with its conversation and artifacts? Your projects are not touched.")) return;
    const gone = session;
    void agent.deleteSession(gone).then(async () => {
      localStorage.removeItem(`atelier-transcript-${gone}`);
      const rest = await agent.sessions();
      await switchSession(rest[0]?.id ?? crypto.randomUUID());
    });
  });

  ui.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = ui.input.value.trim();
    if (!text) return;
    if (running) {
      interject(text);
      return;
    }
    if (reviewing) {
      // The words stay in the box until the review is answered.
      showBanner(errorText(Object.assign(new Error(""), { code: "review_pending" })));
      ui.reopenReview.hidden = false;
      return;
    }
    ui.input.value = "";
    addTurn("person", text);
    void run((options) => agent.send(session, text, options));
  });
  ui.input.addEventListener("keydown", (event) => {
    // Enter sends; Shift+Enter is a newline; nothing sends while an input
    // method is composing (Japanese input confirms its conversion with Enter).
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    ui.composer.requestSubmit();
  });
  ui.stop.addEventListener("click", () => running?.abort());
  ui.interject.addEventListener("click", () => {
    const text = ui.input.value.trim();
    if (text && running) interject(text);
  });
  ui.continueRun.addEventListener("click", () => {
    if (running) return;
    void run((options) => agent.continueRun(session, options));
  });
  ui.transcript.addEventListener("click", (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>("button.source-artifact");
    if (button?.dataset.artifactId) showArtifact(button.dataset.artifactId);
  });
  ui.approve.addEventListener("click", () => void decide(true));
  ui.approveSession.addEventListener("click", () => void decide(true, true));
  // Escape closes the dialog; the review stays pending and reopens from the status line.
  ui.review.addEventListener("cancel", () => {
    ui.reopenReview.hidden = !reviewing;
  });
  ui.reopenReview.addEventListener("click", () => {
    ui.reopenReview.hidden = true;
    ui.review.showModal();
  });
  window.addEventListener("offline", () => showBanner("You are offline: chat waits for the network; your projects, chapters and artifacts work as usual."));
  window.addEventListener("online", () => {
    showBanner(null);
    void checkProxy();
  });
  ui.reject.addEventListener("click", () => void decide(false));
  ui.projectForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void agent.createProject(ui.projectTitle.value.trim()).then((p) => {
      ui.projectTitle.value = "";
      return refreshProjects(p.id);
    });
  });
  ui.projectSelect.addEventListener("change", () => void refreshChapters());
  ui.chapterForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const projectId = ui.projectSelect.value;
    if (!projectId) return;
    void agent.addSection(projectId, ui.chapterTitle.value.trim(), "").then((s) => {
      ui.chapterTitle.value = "";
      return refreshChapters(s.id);
    });
  });
  ui.chapterText.addEventListener("input", () => {
    dirty = true;
  });
  ui.updateContinuity.addEventListener("click", () => {
    const section = currentSection;
    if (!section) return;
    ui.updateContinuity.disabled = true;
    void agent
      .updateContinuity(section.id)
      .then(() => refreshContinuity())
      .catch((e) => showBanner(errorText(e)))
      .finally(() => (ui.updateContinuity.disabled = !currentSection));
  });
  ui.saveChapter.addEventListener("click", () => {
    if (!currentSection) return;
    void saveChapter({ ...currentSection, content: ui.chapterText.value });
  });
  ui.keepMine.addEventListener("click", () => {
    ui.conflict.close();
    const mine = conflicted;
    conflicted = null;
    // Based on the version that is there now: a deliberate overwrite (the saved text goes to the history).
    if (mine) void saveChapter(mine);
  });
  ui.keepSaved.addEventListener("click", () => {
    ui.conflict.close();
    conflicted = null;
    void refreshChapters(currentSection?.id).then(() => showBanner(null));
  });
  // Another tab changed something: show it here too (the editor's unsaved text is kept).
  let pending: ReturnType<typeof setTimeout> | undefined;
  const changed = new Set<string>();
  agent.onChange(({ stores }) => {
    stores.forEach((s) => changed.add(s));
    clearTimeout(pending);
    pending = setTimeout(() => {
      refreshFromOtherTab(new Set(changed.values()), () => changed.clear()).catch((e: unknown) => showBanner(errorText(e)));
    }, 150);
  });
  ui.undo.addEventListener("click", () => {
    void agent.undo().then(
      async (undone) => {
        showBanner(undone ? null : "Nothing of the agent's to undo.");
        await refreshArtifacts();
        await refreshSection();
      },
      (e: unknown) => showBanner(errorText(e)),
    );
  });
  ui.saveSettings.addEventListener("click", () => void saveSettings());
}

async function saveSettings(): Promise<void> {
  ui.settingsStatus.textContent = "Saving…";
  const approvals: Record<string, boolean> = {};
  for (const box of ui.approvals.querySelectorAll<HTMLInputElement>("input[data-tool]")) {
    approvals[box.dataset.tool ?? ""] = box.checked;
  }
  try {
    await agent.updateSettings({
      approvals,
      mainModel: ui.mainModel.value.trim() || "main",
      subModel: ui.subModel.value.trim() || "sub",
      fullThreshold: Number(ui.fullThreshold.value) || 1000,
      longTermMemory: ui.longTermMemory.checked,
      contextWindow: ui.contextWindow.value.trim() === "" ? "auto" : Math.max(1024, Number(ui.contextWindow.value) || 32768),
      compression: { enabled: ui.compression.checked },
      continuityMemory: ui.continuityMemory.checked,
      searchByMeaning: ui.searchByMeaning.checked,
      delegationModel: ui.delegationModel.value === "main" ? "main" : "sub",
    });
  } catch (e) {
    ui.settingsStatus.textContent = "Not saved.";
    showBanner(errorText(e));
    return;
  }
  const token = ui.clientToken.value.trim();
  if (token !== (localStorage.getItem(TOKEN_KEY) ?? "")) {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
    // The token is given to the agent when it opens: open it again (after the
    // settings above are stored, so the new one reads them).
    const old = agent;
    agent = await openAgent();
    old.free();
  }
  showBanner(null);
  ui.settingsStatus.textContent = "Saved.";
}

// A failed background call (a list refresh, a save) is shown in words, not lost in the console.
window.addEventListener("unhandledrejection", (event) => {
  const reason: unknown = event.reason;
  if (reason instanceof Error && "code" in reason) {
    event.preventDefault();
    showBanner(errorText(reason));
  }
});

// After the first visit the app opens offline (see sw/service-worker.js).
if ("serviceWorker" in navigator && location.protocol !== "file:") {
  window.addEventListener("load", () => {
    navigator.serviceWorker.register("/sw.js").catch(() => undefined);
  });
}

main().catch((e: unknown) => {
  ui.status.textContent = `The app failed to start: ${errorText(e)}`;
});
