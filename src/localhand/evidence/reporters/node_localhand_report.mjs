// localhand's reporter for node's test runner: each test's outcome, as JSON, in LOCALHAND_REPORT_DIR.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export default async function* localhandReport(source) {
  const tests = [];
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const data = event.data;
    if (data.details && data.details.type === "suite") continue;
    let outcome = event.type === "test:pass" ? "passed" : "failed";
    if (data.skip !== undefined || data.todo !== undefined) outcome = "skipped";
    tests.push({ file: data.file || "", name: data.name, outcome });
  }
  const dir = process.env.LOCALHAND_REPORT_DIR;
  if (dir) {
    const name = `node-${process.pid}-${Date.now()}.json`;
    writeFileSync(join(dir, name), JSON.stringify({ runner: "node", tests }));
  }
}
