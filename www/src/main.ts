// Adit playground: loads the WASM package and applies SEARCH/REPLACE edits
// to a manuscript, showing which matching level applied or why it refused.
import "./style.css";
import init, { applyEditsWithReport, parseSearchReplace, type AditError } from "atelier-agent";

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

function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id}`);
  return el as T;
}

const doc = byId<HTMLTextAreaElement>("doc");
const reply = byId<HTMLTextAreaElement>("reply");
const apply = byId<HTMLButtonElement>("apply");
const status = byId<HTMLParagraphElement>("status");
const report = byId<HTMLParagraphElement>("report");
const result = byId<HTMLPreElement>("result");

function isAditError(e: unknown): e is AditError {
  return e instanceof Error && typeof (e as Partial<AditError>).code === "string";
}

function run(): void {
  try {
    const edits = parseSearchReplace(reply.value);
    const applied = applyEditsWithReport(doc.value, edits);
    result.textContent = applied.text;
    result.dataset.state = "ok";
    report.textContent = applied.reports
      .map((r, i) => `Edit ${i + 1}: ${r.level.replace(/_/g, " ")} match at line ${r.line}`)
      .join(" · ") || "No edit in the reply.";
  } catch (e) {
    result.dataset.state = "error";
    if (isAditError(e)) {
      report.textContent = `Refused (${e.code}, edit ${e.index + 1}). The manuscript is unchanged.`;
      result.textContent = e.message;
    } else {
      report.textContent = "Unexpected error.";
      result.textContent = String(e);
    }
  }
}

async function main(): Promise<void> {
  doc.value = SAMPLE_DOC;
  reply.value = SAMPLE_REPLY;
  await init();
  status.textContent = "Engine ready. Edits run in your browser; nothing is sent anywhere.";
  apply.disabled = false;
  apply.addEventListener("click", run);
}

main().catch((e: unknown) => {
  status.textContent = `The engine failed to load: ${String(e)}`;
});
