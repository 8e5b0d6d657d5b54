// The Adit playground: apply SEARCH/REPLACE blocks to a text in the browser.
import { applyEditsWithReport, parseSearchReplace, type AditError } from "atelier-agent";

const SAMPLE_DOC = "\u3000吾輩は猫である。名前はまだ無い。\n\u3000どこで生れたかとんと見当がつかぬ。\n";
const SAMPLE_REPLY = [
  "Here is the change:",
  "<<<<<<< SEARCH",
  "どこで生れたかとんと見当がつかぬ。",
  "=======",
  "生まれは薄暗い台所である。",
  ">>>>>>> REPLACE",
  "",
].join("\n");

function isAditError(e: unknown): e is AditError {
  return e instanceof Error && typeof (e as Partial<AditError>).code === "string";
}

export function setupPlayground(byId: <T extends HTMLElement>(id: string) => T): void {
  const doc = byId<HTMLTextAreaElement>("doc");
  const reply = byId<HTMLTextAreaElement>("reply");
  const apply = byId<HTMLButtonElement>("apply");
  const report = byId<HTMLParagraphElement>("report");
  const result = byId<HTMLPreElement>("result");
  doc.value = SAMPLE_DOC;
  reply.value = SAMPLE_REPLY;
  apply.disabled = false;
  apply.addEventListener("click", () => {
    try {
      const applied = applyEditsWithReport(doc.value, parseSearchReplace(reply.value));
      result.textContent = applied.text;
      result.dataset.state = "ok";
      report.textContent =
        applied.reports.map((r, i) => `Edit ${i + 1}: ${r.level.replace(/_/g, " ")} match at line ${r.line}`).join(" · ") ||
        "No edit in the reply.";
    } catch (e) {
      result.dataset.state = "error";
      report.textContent = isAditError(e) ? `Refused (${e.code}, edit ${e.index + 1}). The manuscript is unchanged.` : "Unexpected error.";
      result.textContent = e instanceof Error ? e.message : String(e);
    }
  });
}
