// A consumer of the npm package, type-checked with `tsc --strict --noEmit`:
// it must compile against the generated .d.ts with no `any` leaking in.
import init, {
  applyEdits,
  applyEditsWithReport,
  applySearchReplace,
  editsResponseFormat,
  parseEditsJson,
  parseSearchReplace,
  type AditError,
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
}

void main();
