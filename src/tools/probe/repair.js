const Module = require("module"), fs = require("fs"), path = require("path");
const [tag, test] = process.argv.slice(1);
const root = process.cwd(), testAbs = path.resolve(test), start = Date.now();
const orig = Module._extensions[".js"];
let patch = null;
Module._extensions[".js"] = function (m, file) {
  if (patch && file === patch.file) return m._compile(patch.src, file);
  return orig(m, file);
};
const ours = (f) => f.startsWith(root + path.sep) && !f.includes(path.sep + "node_modules" + path.sep);
const quiet = () => {};
function run() {
  for (const k of Object.keys(require.cache)) if (ours(k)) delete require.cache[k];
  const log = console.log, err = console.error, exit = process.exit, out = [];
  console.log = (...a) => out.push(a.join(" "));
  console.error = quiet;
  process.exit = (c) => { throw new Error("exit " + c); };
  try { require(testAbs); return out; } catch (e) { return null; }
  finally { console.log = log; console.error = err; process.exit = exit; }
}
if (run() !== null) process.exit(0);
const files = Object.keys(require.cache).filter((f) => ours(f) && f !== testAbs && f.endsWith(".js")).slice(0, 4);
const SWAPS = [["<=", "<"], ["<", "<="], [">=", ">"], [">", ">="], ["<", ">"], [">", "<"], ["===", "!=="], ["!==", "==="],
  ["&&", "||"], ["||", "&&"], ["Math.min", "Math.max"], ["Math.max", "Math.min"], [" + 1", ""], [" - 1", ""], ["+", "-"], ["-", "+"], ["*", "/"], ["/", "*"]];
function* mutants(lines) {
  let params = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const sig = line.match(/function\s*\w*\s*\(([^)]*)\)|\(([^)]*)\)\s*=>/);
    if (sig) params = (sig[1] ?? sig[2]).split(",").map((p) => p.trim().split("=")[0].trim()).filter((p) => /^\w+$/.test(p));
    if (/^\s*(\/\/|\*|\/\*)/.test(line)) continue;
    const ret = line.match(/^(.*\breturn\s+)(\w+)(\s*;?\s*)$/);
    if (ret) for (const p of params) if (p !== ret[2]) yield [i, ret[1] + p + ret[3]];
    for (const [a, b] of SWAPS) {
      let at = line.indexOf(a);
      while (at >= 0) {
        const before = line[at - 1] || " ", after = line[at + a.length] || " ";
        // A whole operator: `<` not from `<=`, `+` not from `++` or `+=`.
        const whole = !(a.length <= 2 && /[<>=!&|+\-*\/]/.test(after)) && !(a.length <= 2 && /[<>=!&|+\-*\/]/.test(before));
        if (whole || a.startsWith("Math") || a.startsWith(" ")) yield [i, line.slice(0, at) + b + line.slice(at + a.length)];
        at = line.indexOf(a, at + 1);
      }
    }
  }
}
let tried = 0;
for (const file of files) {
  const src = fs.readFileSync(file, "utf8"), lines = src.split("\n");
  if (lines.length > 2000) continue;
  for (const [i, now] of mutants(lines)) {
    if (Date.now() - start > 8000 || tried >= 300) process.exit(0);
    tried++;
    const copy = lines.slice();
    copy[i] = now;
    patch = { file, src: copy.join("\n") };
    const out = run();
    if (out !== null) {
      console.log(`${tag} ${path.relative(root, file)}:${i + 1}`);
      console.log(`  was: ${lines[i].trim()}`);
      console.log(`  now: ${now.trim()}`);
      for (const l of out.slice(0, 4)) console.log(`  out: ${String(l).slice(0, 160)}`);
      process.exit(0);
    }
  }
}
