// The demo's search box: finds a line in the person's chapters and plot, the
// sessions' artifacts and transcripts, and long-term memories, offline
// (agent.search), and opens what was found: the chapter at the hit, the
// artifact, the session, or the memory shown in place.
import type { Agent, SearchHit } from "atelier-agent";

/** Where a hit is opened (the app's own views). */
export interface SearchTargets {
  chapter(projectId: string, sectionId: string, start?: number, end?: number): Promise<void>;
  artifact(sessionId: string, artifactId: string): Promise<void>;
  session(sessionId: string): Promise<void>;
}

const KIND: Record<SearchHit["kind"], string> = {
  manuscript: "Chapter",
  plot: "Plot",
  artifact: "Artifact",
  memory: "Memory",
  transcript: "Conversation",
};

/** Wires the search form of the page to `agent`. */
export function setupSearch(agent: Agent, targets: SearchTargets): void {
  const form = document.getElementById("search") as HTMLFormElement;
  const input = document.getElementById("search-input") as HTMLInputElement;
  const list = document.getElementById("search-results") as HTMLOListElement;
  const status = document.getElementById("search-status") as HTMLParagraphElement;
  let asked = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function search(): Promise<void> {
    const query = input.value;
    const mine = ++asked;
    if (!query.trim()) {
      list.replaceChildren();
      status.textContent = "";
      return;
    }
    const started = performance.now();
    try {
      const hits = await agent.search(query, { limit: 20 });
      if (mine !== asked) return; // a later search is on its way
      const ms = Math.round(performance.now() - started);
      const how = hits.meaning ? " by words and meaning" : "";
      status.textContent = hits.length
        ? `${hits.length} found${how} in ${ms} ms${hits.complete ? "" : ` (still indexing ${hits.pending} records: more may come)`}`
        : `Nothing found${how}${hits.complete ? "" : ` yet (still indexing ${hits.pending} records)`}`;
      list.replaceChildren(...hits.map((hit) => item(hit)));
    } catch (e) {
      if (mine !== asked) return;
      status.textContent = e instanceof Error ? e.message : String(e);
      list.replaceChildren();
    }
  }

  function item(hit: SearchHit): HTMLLIElement {
    const li = document.createElement("li");
    li.className = `search-hit ${hit.kind}`;
    const button = document.createElement("button");
    button.type = "button";
    const kind = document.createElement("span");
    kind.className = "search-kind";
    kind.textContent = KIND[hit.kind];
    const title = document.createElement("strong");
    title.textContent = hit.title || "(untitled)";
    const snippet = document.createElement("span");
    snippet.className = "search-snippet";
    snippet.textContent = hit.snippet;
    button.append(kind, " ", title, snippet);
    if (hit.byMeaning) {
      // Found by its meaning: none of the query's words is in it.
      const tag = document.createElement("span");
      tag.className = "search-meaning";
      tag.textContent = "related";
      tag.title = "None of your words is here: the embedding model found it close in meaning.";
      snippet.before(tag);
    }
    button.addEventListener("click", () => void open(hit, li));
    li.append(button);
    return li;
  }

  async function open(hit: SearchHit, li: HTMLLIElement): Promise<void> {
    if (hit.kind === "manuscript" && hit.projectId) await targets.chapter(hit.projectId, hit.id, hit.start, hit.end);
    else if (hit.kind === "artifact" && hit.sessionId) await targets.artifact(hit.sessionId, hit.id);
    else if (hit.kind === "transcript" && hit.sessionId) await targets.session(hit.sessionId);
    else {
      // A memory or a plot item: shown in place, whole.
      const more = li.querySelector(".search-full") ?? li.appendChild(document.createElement("p"));
      more.className = "search-full";
      more.textContent = hit.kind === "memory" ? `${hit.title}: ${hit.snippet}` : hit.snippet;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(timer);
    void search();
  });
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => void search(), 150);
  });
}
