// Renders the agent's Markdown stream: ```thought blocks as a collapsed
// "Reasoning" section, ```plan as a card, ```tool as compact chips, the rest
// as text paragraphs. Everything goes through textContent (no HTML injection).

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Where a cited URL is kept: an artifact of the session. */
export type SourceLookup = (url: string) => { id: string; title: string } | null;

/** Footnote definitions (`[^1]: https://…`) by label. */
type Notes = Map<string, string>;

const NOTE_DEFINITION = /^\[\^([^\]\s]+)\]:\s*(.+)$/;
const NOTE_REFERENCE = /\[\^([^\]\s]+)\]/g;

function safeUrl(text: string): string | null {
  const match = /https?:\/\/[^\s<>"')\]]+/.exec(text);
  if (!match) return null;
  try {
    const url = new URL(match[0]);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

function noteId(target: HTMLElement, label: string): string {
  target.dataset.noteScope ??= Math.random().toString(36).slice(2, 8);
  return `fn-${target.dataset.noteScope}-${label}`;
}

/** Text with `[^n]` references as superscript links to the note below. */
function withReferences(target: HTMLElement, node: HTMLElement, text: string, notes: Notes): void {
  let last = 0;
  for (const match of text.matchAll(NOTE_REFERENCE)) {
    const label = match[1] ?? "";
    if (!notes.has(label)) continue;
    node.append(text.slice(last, match.index));
    const sup = el("sup", "note-ref");
    const link = el("a", undefined, `[${label}]`);
    link.href = `#${noteId(target, label)}`;
    link.setAttribute("aria-label", `Source ${label}`);
    sup.append(link);
    node.append(sup);
    last = (match.index ?? 0) + match[0].length;
  }
  node.append(text.slice(last));
}

function paragraphs(target: HTMLElement, text: string, notes: Notes): void {
  for (const block of text.split(/\n{2,}/)) {
    const lines = block.split("\n").filter((line) => !NOTE_DEFINITION.test(line.trim()));
    const trimmed = lines.join("\n").trim();
    if (!trimmed) continue;
    const p = el("p");
    withReferences(target, p, trimmed, notes);
    target.append(p);
  }
}

/** The cited sources: each a link to its URL and to the artifact that holds it. */
function footnotes(target: HTMLElement, notes: Notes, sources?: SourceLookup): void {
  if (notes.size === 0) return;
  const list = el("ol", "footnotes");
  list.setAttribute("aria-label", "Sources");
  for (const [label, definition] of notes) {
    const item = el("li");
    item.id = noteId(target, label);
    item.value = Number.parseInt(label, 10) || list.children.length + 1;
    const url = safeUrl(definition);
    if (url) {
      const link = el("a", undefined, definition.replace(/^<|>$/g, ""));
      link.href = url;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      item.append(link);
      const held = sources?.(url);
      if (held) {
        const open = el("button", "source-artifact", `in artifact “${held.title}”`);
        open.type = "button";
        open.dataset.artifactId = held.id;
        item.append(" ", open);
      }
    } else {
      item.append(definition);
    }
    list.append(item);
  }
  target.append(list);
}

/** Renders `markdown` into `target` (replacing what was there). */
export function renderStream(target: HTMLElement, markdown: string, sources?: SourceLookup): void {
  target.replaceChildren();
  const notes: Notes = new Map();
  for (const line of markdown.split("\n")) {
    const m = NOTE_DEFINITION.exec(line.trim());
    if (m?.[1] && m[2]) notes.set(m[1], m[2].trim());
  }
  // Chips open at the start of a line: the agent defuses chip fences in model
  // text (a zero-width space before them), so a model cannot draw one.
  const fence = /(?:^|\n)```(thought|plan|tool)\n([\s\S]*?)\n```/g;
  let last = 0;
  for (const match of markdown.matchAll(fence)) {
    paragraphs(target, markdown.slice(last, match.index), notes);
    const [, kind, body = ""] = match;
    if (kind === "thought") {
      const details = el("details", "thought");
      details.append(el("summary", undefined, "Reasoning"), el("p", undefined, body));
      target.append(details);
    } else if (kind === "plan") {
      const [goal = "", ...steps] = body.split("\n");
      const card = el("div", "plan");
      card.append(el("strong", undefined, goal));
      const list = el("ol");
      for (const step of steps) list.append(el("li", undefined, step.replace(/^\d+\.\s*/, "")));
      card.append(list);
      target.append(card);
    } else {
      target.append(el("span", "chip", body));
    }
    last = (match.index ?? 0) + match[0].length;
  }
  // An unfinished fence (still streaming) is shown as plain text.
  paragraphs(target, markdown.slice(last), notes);
  footnotes(target, notes, sources);
}
