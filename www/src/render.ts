// Renders the agent's Markdown stream: ```thought blocks as a collapsed
// "Reasoning" section, ```plan as a card, ```tool as compact chips, the rest
// as text paragraphs. Everything goes through textContent (no HTML injection).

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function paragraphs(target: HTMLElement, text: string): void {
  for (const block of text.split(/\n{2,}/)) {
    const trimmed = block.trim();
    if (trimmed) target.append(el("p", undefined, trimmed));
  }
}

/** Renders `markdown` into `target` (replacing what was there). */
export function renderStream(target: HTMLElement, markdown: string): void {
  target.replaceChildren();
  // Chips open at the start of a line: the agent defuses chip fences in model
  // text (a zero-width space before them), so a model cannot draw one.
  const fence = /(?:^|\n)```(thought|plan|tool)\n([\s\S]*?)\n```/g;
  let last = 0;
  for (const match of markdown.matchAll(fence)) {
    paragraphs(target, markdown.slice(last, match.index));
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
  paragraphs(target, markdown.slice(last));
}
