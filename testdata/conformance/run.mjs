// Runs the official MCP conformance suite's server scenarios against a built
// vc-mcp over Streamable HTTP on 127.0.0.1, and checks the outcome:
//
//   node run.mjs path/to/vc-mcp
//
// Every generic scenario must pass. The scenarios in not-applicable.yml call
// the suite's own fixtures (tools named test_*, prompts test_*, resources
// test://...) that a real server does not have; the suite's baseline mechanism
// expects them to fail, and this script checks that each failed for that
// reason only (its fixture was not found), so a real fault cannot hide there.
//
// The suite's CLI needs Node 22+ (fs.globSync); package.json installs one from
// npm (node-<os>-<arch>), used when the node running this script is older.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const bin = process.argv[2] && resolve(process.argv[2]);
if (!bin || !existsSync(bin)) {
  console.error(`usage: node run.mjs path/to/vc-mcp (got ${process.argv[2] ?? "nothing"})`);
  process.exit(2);
}
const cli = join(here, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
if (!existsSync(cli)) {
  console.error(`${cli} is missing: run npm ci in ${here}`);
  process.exit(2);
}

function node22() {
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath;
  const pkg = join(here, "node_modules", `node-${process.platform}-${process.arch}`, "bin", "node");
  if (existsSync(pkg)) return pkg;
  console.error(`the conformance CLI needs Node 22+; this is ${process.version} and npm installed no node-${process.platform}-${process.arch} (add it to package.json's optionalDependencies)`);
  process.exit(2);
}

const notApplicable = readFileSync(join(here, "not-applicable.yml"), "utf8")
  .split("\n")
  .map((l) => l.match(/^\s+-\s+([\w-]+)/)?.[1])
  .filter(Boolean);

const work = mkdtempSync(join(tmpdir(), "vc-mcp-conformance-"));
const server = spawn(bin, ["serve", "--data-dir", join(work, "data"), "--http", "127.0.0.1:0"], {
  stdio: ["ignore", "ignore", "pipe"],
  env: { ...process.env, HOME: work, XDG_CONFIG_HOME: join(work, "config") },
});
let stderr = "";
const url = await new Promise((ok, fail) => {
  const timer = setTimeout(() => fail(new Error(`vc-mcp did not report its address in 30 s:\n${stderr}`)), 30_000);
  server.stderr.on("data", (d) => {
    stderr += d;
    const m = stderr.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
    if (m) {
      clearTimeout(timer);
      ok(m[1] + "/mcp");
    }
  });
  server.on("exit", (code) => fail(new Error(`vc-mcp exited (${code}):\n${stderr}`)));
}).catch((e) => {
  console.error(e.message);
  process.exit(1);
});

let failed = false;
try {
  const out = join(work, "results");
  const run = spawnSync(
    node22(),
    [cli, "server", "--url", url, "--expected-failures", join(here, "not-applicable.yml"), "-o", out],
    { stdio: "inherit", timeout: 10 * 60_000 },
  );
  if (run.status !== 0) {
    console.error(`conformance: the suite failed (exit ${run.status ?? run.signal})`);
    failed = true;
  }
  // Each not-applicable scenario must fail only because its fixture is missing.
  const ran = new Map();
  for (const dir of readdirSync(out)) {
    const name = notApplicable.find((s) => dir.startsWith(`server-${s}-`));
    if (name) ran.set(name, JSON.parse(readFileSync(join(out, dir, "checks.json"), "utf8")));
  }
  for (const name of notApplicable) {
    const checks = ran.get(name);
    if (!checks) {
      console.error(`conformance: not-applicable scenario ${name} did not run`);
      failed = true;
      continue;
    }
    for (const c of checks.filter((c) => c.status === "FAILURE")) {
      if (!/'test[_:][^']*' not found|resource URI 'test:\/\/[^']*'/.test(c.errorMessage ?? "")) {
        console.error(`conformance: ${name} failed for another reason than a missing fixture: ${c.errorMessage}`);
        failed = true;
      }
    }
  }
  if (!failed) {
    console.log(`conformance: every generic server scenario passed; ${notApplicable.length} scenarios need the suite's fixtures (not applicable)`);
  }
} finally {
  server.kill("SIGTERM");
  await new Promise((ok) => (server.exitCode !== null ? ok() : server.on("exit", ok)));
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
