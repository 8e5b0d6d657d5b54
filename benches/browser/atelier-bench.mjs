// The project's page module for shared/bench (`node run.mjs --extra ...`):
// the same workloads as the anchors, run by the Rust/WASM engine in the same
// Chromium. `cargo xtask bench` copies this file next to the bench build of
// the package (pkg/bench) and runs the harness.
import init, { Agent, GraphBench, StoreBench } from "./atelier_agent.js";
import { STORE_DEFAULTS, storeData, fnv1a16, median, deleteDatabase } from "/lib/workload.js";

const wasm = await init();

export async function graphBench({ runs, turns }) {
  const steps = runs * (2 * turns + 2);
  const plain = new GraphBench(turns);
  let t0 = performance.now();
  const finalMessages = await plain.pass(runs, false);
  const usPerStep = ((performance.now() - t0) * 1000) / steps;
  plain.free();

  const checkpointed = new GraphBench(turns);
  t0 = performance.now();
  await checkpointed.pass(runs, true);
  const usPerStepCheckpointed = ((performance.now() - t0) * 1000) / steps;
  checkpointed.free();

  // Every checkpoint persisted to IndexedDB (reported under "more").
  const persisted = new GraphBench(turns);
  t0 = performance.now();
  await persisted.passPersisted(runs, "bench-extra-checkpoints");
  const usPerStepIdb = ((performance.now() - t0) * 1000) / steps;
  persisted.free();

  return {
    us_per_step: usPerStep,
    us_per_step_checkpointed: usPerStepCheckpointed,
    us_per_step_idb_checkpointed: usPerStepIdb,
    final_messages: finalMessages,
  };
}

export async function storeBench(params = {}) {
  const o = { ...STORE_DEFAULTS, ...params };
  const dbName = o.dbName || "bench-extra";
  const { bulk, single } = storeData(o);
  const store = await StoreBench.open(dbName);
  try {
    let t0 = performance.now();
    await store.bulkPut(bulk);
    const bulkMs = performance.now() - t0;
    // Search indexing is on: the records are searchable from here (a search
    // works their queue off first); their segmentation runs once writes
    // pause. Timed apart, so the figures below measure their own work.
    t0 = performance.now();
    await store.searchSettled();
    const bulkIndexMs = performance.now() - t0;

    const snippetTimes = [];
    let snippet = "";
    for (let k = 0; k < o.snippetReps; k++) {
      t0 = performance.now();
      snippet = await store.snippetIndex(o.querySession, o.snippetChars);
      snippetTimes.push(performance.now() - t0);
    }

    const putTimes = [];
    const putTimesByActivity = { true: [], false: [] };
    for (const rec of single) {
      t0 = performance.now();
      await store.put(rec);
      const ms = performance.now() - t0;
      putTimes.push(ms);
      putTimesByActivity[rec.isActive === true].push(ms);
    }
    // The person's chapter saves (manuscripts use strict durability): the
    // same texts as the single puts, each a save of its own.
    t0 = performance.now();
    await store.searchSettled();
    const singleIndexMs = performance.now() - t0;
    const chapter = await store.addChapter();
    const saveTimes = [];
    for (const rec of single) {
      t0 = performance.now();
      await store.saveSection(chapter, rec.content);
      saveTimes.push(performance.now() - t0);
    }
    const finalCount = await store.count();
    return {
      bulk_put_rps: o.records / (bulkMs / 1000),
      snippet_ms: median(snippetTimes),
      single_put_ms: median(putTimes),
      bulk_put_ms: bulkMs,
      // Segmenting and storing the search index of the bulk put (10,000
      // records, 20 M characters), after it committed; and of the 200 single puts.
      search_index_bulk_ms: bulkIndexMs,
      search_index_single_puts_ms: singleIndexMs,
      // Only active artifacts are indexed: their puts write the snippet key.
      single_put_active_ms: median(putTimesByActivity[true]),
      single_put_inactive_ms: median(putTimesByActivity[false]),
      section_save_strict_ms: median(saveTimes),
      // The first query after the bulk put also adds the session's index fields.
      snippet_first_ms: snippetTimes[0],
      active_count: snippet ? snippet.split("\n\n### [ID: ").length : 0,
      snippet_len: snippet.length,
      snippet_fnv: fnv1a16(snippet),
      final_count: finalCount,
    };
  } finally {
    store.close();
    store.free();
    await deleteDatabase(dbName);
  }
}

// The "search" workload (shared/bench WORKLOADS.md): the corpus imported
// with importProject (the path a restored backup takes), searched with
// agent.search, as examples/atelier-search/extra.mjs does with the package.
let agent = null;
let searchDb = null;
let searchRuns = 0;

export async function searchTeardown() {
  if (agent) {
    agent.free();
    agent = null;
  }
  if (searchDb) {
    await deleteDatabase(searchDb);
    searchDb = null;
  }
}

export async function searchSetup(corpus) {
  await searchTeardown();
  searchDb = `bench-search-extra-${searchRuns++}`;
  agent = await Agent.open({ proxyUrl: "/api", dbName: searchDb });
  const t = 1764000000000;
  for (const p of corpus.projects) {
    const docs = corpus.docs.filter((d) => d.projectId === p.id);
    await agent.importProject({
      format: "atelier-agent/project", version: 1,
      project: { id: p.id, title: p.title, description: "", createdAt: t, updatedAt: t },
      manuscripts: docs.map((d, i) => ({
        id: d.id, projectId: p.id, parentId: null, title: d.title, order: i, content: d.text, createdAt: t, updatedAt: t,
      })),
      plots: [],
    });
  }
  return { docs_indexed: corpus.docs.length };
}

export function searchMemory() {
  return wasm.memory.buffer.byteLength;
}

export async function searchQuery(q) {
  const opts = { scope: ["manuscripts"], limit: q.limit };
  if (q.projectId) opts.projectId = q.projectId;
  return (await agent.search(q.text, opts)).map((r) => r.id);
}
