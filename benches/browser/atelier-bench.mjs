// The project's page module for shared/bench (`node run.mjs --extra ...`):
// the same workloads as the anchors, run by the Rust/WASM engine in the same
// Chromium. `cargo xtask bench` copies this file next to the bench build of
// the package (pkg/bench) and runs the harness.
import init, { GraphBench } from "./atelier_agent.js";

await init();

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

  return { us_per_step: usPerStep, us_per_step_checkpointed: usPerStepCheckpointed, final_messages: finalMessages };
}
