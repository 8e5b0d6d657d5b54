// A consumer of the npm package, type-checked with `tsc --strict --noEmit`:
// it must compile against the generated .d.ts with no `any` leaking in.
import init, {
  Agent,
  applyEdits,
  applyEditsWithReport,
  applySearchReplace,
  editsResponseFormat,
  parseEditsJson,
  parseSearchReplace,
  type AditError,
  type ApprovalAnswer,
  type Grant,
  type HostTool,
  type ToolCallInfo,
  type AgentEvent,
  type Artifact,
  type ArtifactInput,
  type Memory,
  type PlotItem,
  type ProjectExport,
  type ReviewPayload,
  type RunResult,
  type SearchHit,
  type SearchResults,
  type SearchStatus,
  type SessionInfo,
  type TranscriptEntry,
  type AppliedEdits,
  type Edit,
  type EditReport,
  type MatchLevel,
} from "atelier-agent";

async function main(): Promise<void> {
  await init();
  const edits: Edit[] = [{ search: "world", replace: "there" }];
  const text: string = applyEdits("Hello world", edits);
  const applied: AppliedEdits = applyEditsWithReport(text, edits);
  const first: EditReport | undefined = applied.reports[0];
  const level: MatchLevel | undefined = first?.level;
  const parsed: Edit[] = parseSearchReplace("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n");
  const fromJson: Edit[] = parseEditsJson('{"edits":[]}');
  const format = editsResponseFormat();
  const strict: true = format.json_schema.strict;
  try {
    applySearchReplace("a", "no blocks");
  } catch (e) {
    const err = e as AditError;
    const code: "no_match" | "ambiguous" | "parse" = err.code;
    const index: number = err.index;
    const closest: string | undefined = err.closest?.text;
    console.log(code, index, closest);
  }
  console.log(level, parsed.length, fromJson.length, strict);

  const agent: Agent = await Agent.open({ proxyUrl: "/api", settings: { longTermMemory: true } });
  // A typed host tool and an approval policy.
  const wordCount: HostTool<{ text: string }> = {
    name: "word_count",
    description: "Counts words.",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    readOnly: true,
    approval: (args) => args.text.length > 1000,
    execute: async ({ text }, { sessionId, callId, signal }) => {
      signal.throwIfAborted();
      return { words: text.split(/\s+/).length, sessionId, callId };
    },
  };
  const policy = (call: ToolCallInfo): ApprovalAnswer => (call.tool === "open_url" ? { decision: "deny", reason: "offline app" } : undefined);
  const withTools: Agent = await Agent.open({ proxyUrl: "/api", tools: [wordCount as HostTool], approve: policy });
  await withTools.resume("session-1", { approved: true, grant: "session" });
  const grants: Grant[] = await withTools.grants("session-1");
  const createdAt: number | undefined = grants[0]?.createdAt;
  await withTools.revokeGrant("session-1", grants[0]?.tool ?? "word_count");
  console.log(createdAt);
  const controller = new AbortController();
  const seen: string[] = [];
  const result: RunResult = await agent.send("session-1", "Hello", {
    agentMode: true,
    signal: controller.signal,
    onEvent: (event: AgentEvent) => {
      if (event.type === "content") seen.push(event.text);
      if (event.type === "active_tool") seen.push(event.tool ?? "none");
    },
  });
  const plain: RunResult = await agent.send("session-1", "No options");
  if (result.status === "interrupted" && result.review !== null) {
    const review: ReviewPayload = result.review;
    const diff: string | null = review.diff;
    const resumed: RunResult = await agent.resume("session-1", { approved: diff !== null, reason: "checked" });
    console.log(resumed.content);
  }
  const pending: ReviewPayload | null = await agent.pendingReview("session-1");
  const artifacts: Artifact[] = await agent.listArtifacts("session-1");
  const newest = artifacts[0];
  if (newest !== undefined) await agent.setArtifactActive(newest.id, !newest.isActive);
  const fromDexie: ArtifactInput = {
    id: "d-1", sessionId: "session-1", type: "web_search", title: "Search: x", content: "y",
    isActive: true, createdAt: 1, updatedAt: 1,
  };
  const stored: number = await agent.importArtifacts([...artifacts, fromDexie]);
  console.log(plain.status, pending?.tool, seen.length, stored);
  const project = await agent.createProject("Novel");
  const plot: PlotItem[] = await agent.plot(project.id);
  const backup: ProjectExport = await agent.exportProject(project.id);
  await agent.importProject(backup);
  const memories: Memory[] = await agent.memories("2026-01-01", "2026-12-31");
  console.log(plot.length, memories.length, agent.settings().mainModel, agent.settings().pageChars);
  const sessions: SessionInfo[] = await agent.sessions();
  const transcript: TranscriptEntry[] = await agent.transcript(sessions[0]?.id ?? "session-1");
  const fromPerson: boolean = transcript.some((entry) => entry.role === "person");
  await agent.renameSession("session-1", "Research");
  await agent.deleteSession("session-1");
  const reason: string | null = pending?.reason ?? null;
  console.log(fromPerson, reason);
  const hits: SearchResults = await agent.search("砂時計", { scope: ["manuscripts", "memories"], projectId: project.id, limit: 5 });
  const top: SearchHit | undefined = hits[0];
  const at: number | undefined = top?.start;
  const status: SearchStatus = agent.searchStatus();
  console.log(hits.complete, hits.pending, top?.kind, at, status.indexed, (await agent.search("x")).length);
  // The relayed MCP servers, with the fixed shape of DESIGN.md, and their switches.
  const servers: { name: string; status: string; tools: { name: string; description: string; readOnly: boolean; enabled: boolean }[] }[] =
    await agent.mcpServers();
  const relayed = servers[0];
  if (relayed !== undefined) {
    await agent.updateSettings({ mcp: { [relayed.name]: { enabled: false }, other: { tools: { search: false } } } });
  }
  const switched: boolean = agent.settings().mcp["notes"]?.enabled ?? true;
  const withoutMcp: Agent = await Agent.open({ proxyUrl: "/api", mcp: false });
  console.log(switched, withoutMcp);
}

void main();
