// Above this line mm sets FILE (the JavaScript file, from the root), NAMES
// (the functions whose code may change; empty: the whole file) and CHECK
// (the request's check script, which prints a FAILED: line per failing
// check and ends with process.exit).
const Module = require("module"), fs = require("fs"), path = require("path"), vm = require("vm");
const root = process.cwd(), file = path.resolve(root, FILE), start = Date.now();
const LIMIT = 20000, TRIES = 3000, BEAM = 3, DEPTH = 3;
const orig = Module._extensions[".js"];
let patch = null;
Module._extensions[".js"] = function (m, f) {
  if (patch !== null && f === file) return m._compile(patch, f);
  return orig(m, f);
};
const ours = (f) => f.startsWith(root + path.sep) && !f.includes(path.sep + "node_modules" + path.sep);
const checks = new vm.Script("(function (require, process, console) {\n" + CHECK + "\n})", { filename: "checks" }).runInThisContext();
const runner = new vm.Script("__mmRun()");
const src0 = fs.readFileSync(file, "utf8");

// How many checks fail on src: null when it cannot be judged (it does not
// load, it hangs, the checks gave no verdict).
function score(src) {
  for (const k of Object.keys(require.cache)) if (ours(k)) delete require.cache[k];
  patch = src;
  const out = [], log = console.log, err = console.error, warn = console.warn;
  const cons = { log: (...a) => out.push(a.join(" ")), error: () => {}, warn: () => {} };
  const proc = Object.create(process);
  proc.exit = (c) => { throw { mmExit: c === undefined ? 0 : c }; };
  globalThis.__mmRun = () => checks(require, proc, cons);
  console.log = console.error = console.warn = () => {};
  let status = null;
  try {
    runner.runInThisContext({ timeout: 1000 });
    status = 0;
  } catch (e) {
    if (e && typeof e === "object" && "mmExit" in e) status = e.mmExit;
    else return null;
  } finally {
    console.log = log; console.error = err; console.warn = warn;
  }
  const failed = out.filter((l) => l.startsWith("FAILED: "));
  if (failed.some((l) => l.startsWith("FAILED: require("))) return null;
  if (status === 0 && failed.length === 0) return 0;
  if (status === 1 && failed.length > 0) return failed.length;
  return null;
}

// The checks' rows that expect a value: [call, want].
function rows() {
  const m = CHECK.match(/const CHECKS = (\[[\s\S]*?\n\]);/);
  if (!m) return [];
  try { return new Function("return " + m[1])().filter((r) => r[2] === null); } catch (e) { return []; }
}

// The punctuation and spaces of the values the checks expect.
function wantedChars() {
  const chars = new Set([" "]);
  const walk = (v) => {
    if (typeof v === "string") for (const ch of v) { if (!/[\p{L}\p{N}]/u.test(ch)) chars.add(ch); }
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  for (const row of rows()) {
    try { walk(new Function("return (" + row[1] + ");")()); } catch (e) {}
  }
  return [...chars].sort().slice(0, 8);
}

// Where a string the code gives and the one a check expects part, the few
// characters one has and the other lacks (`boxs`, `boxes`: `e`).
function gaps() {
  const out = [];
  for (const k of Object.keys(require.cache)) if (ours(k)) delete require.cache[k];
  patch = src0;
  let m;
  const log = console.log;
  console.log = () => {};
  try { m = require(file); } catch (e) { return out; } finally { console.log = log; }
  const scope = Object.assign(Object.create(null), m);
  for (const [call, want] of rows()) {
    let g, w;
    globalThis.__mmRun = () => {
      g = new Function("scope", "with (scope) { return (" + call + "); }")(scope);
      w = new Function("return (" + want + ");")();
    };
    console.log = () => {};
    try { runner.runInThisContext({ timeout: 1000 }); } catch (e) { continue; } finally { console.log = log; }
    if (typeof g !== "string" || typeof w !== "string" || g === w) continue;
    let i = 0, j = 0;
    while (i < Math.min(g.length, w.length) && g[i] === w[i]) i++;
    while (j < Math.min(g.length, w.length) - i && g[g.length - 1 - j] === w[w.length - 1 - j]) j++;
    for (const piece of [g.slice(i, g.length - j), w.slice(i, w.length - j)]) {
      if (piece.length > 0 && piece.length <= 3 && !out.includes(piece)) out.push(piece);
    }
  }
  return out.slice(0, 6);
}
const AFFIX = wantedChars();
for (const g of gaps()) if (!AFFIX.includes(g)) AFFIX.push(g);

// The lines of the named functions (every line when none is found).
function ranges(lines) {
  const out = [];
  for (const name of NAMES) {
    const head = new RegExp(`(function\\s*\\*?\\s*${name}\\s*\\(|\\b${name}\\s*[:=]\\s*(async\\s+)?(function\\b|\\([^)]*\\)\\s*=>|\\w+\\s*=>)|^\\s*(async\\s+)?${name}\\s*\\([^)]*\\)\\s*\\{)`);
    const at = lines.findIndex((l) => head.test(l));
    if (at < 0) continue;
    let depth = 0, opened = false, end = at;
    for (let i = at; i < lines.length; i++) {
      const code = lines[i].replace(/\/\/.*$/, "").replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`/g, "''");
      for (const ch of code) {
        if (ch === "{") { depth++; opened = true; } else if (ch === "}") depth--;
      }
      end = i;
      if (opened && depth <= 0) break;
      if (!opened && i > at && /;\s*$/.test(code)) break;
    }
    out.push([at, end]);
  }
  return out.length ? out : [[0, lines.length - 1]];
}

const OPS = { "===": ["!=="], "!==": ["==="], "<": ["<=", ">"], "<=": ["<", ">="], ">": [">=", "<"], ">=": [">", "<="],
  "&&": ["||"], "||": ["&&"], "+": ["-"], "-": ["+"], "*": ["/"], "/": ["*"], "!": [""] };
const WORDS = { toUpperCase: ["toLowerCase"], toLowerCase: ["toUpperCase"], startsWith: ["endsWith"], endsWith: ["startsWith"],
  indexOf: ["lastIndexOf"], lastIndexOf: ["indexOf"], trim: ["trimEnd", "trimStart"], trimEnd: ["trim"], trimStart: ["trim"],
  min: ["max"], max: ["min"], floor: ["ceil", "round"], ceil: ["floor", "round"], round: ["floor", "ceil"],
  some: ["every"], every: ["some"], true: ["false"], false: ["true"], push: ["unshift"], unshift: ["push"] };
const TOKEN = /(\/\/.*$)|('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`)|(\b\d+\b)|([A-Za-z_$][\w$]*)|(===|!==|<=|>=|&&|\|\||=>|\+\+|--|\+=|-=|\*=|\/=|[<>+\-*\/!])/g;

function textVariants(s) {
  const out = [];
  for (const c of AFFIX) out.push(s + c, c + s);
  if (s.length) {
    out.push(s.slice(0, -1), s.slice(1));
    if (s.length <= 2) out.push(...AFFIX, "");
  }
  return [...new Set(out)].filter((v) => v !== s);
}

function* lineMutants(line) {
  for (const m of line.matchAll(TOKEN)) {
    if (m[1] !== undefined) break;
    const at = m.index, tok = m[0], put = (t) => line.slice(0, at) + t + line.slice(at + tok.length);
    if (m[2] !== undefined) {
      const q = tok[0], inner = tok.slice(1, -1);
      for (const v of textVariants(inner)) if (!v.includes(q) && !v.includes("\\")) yield put(q + v + q);
    } else if (m[3] !== undefined) {
      yield put(String(Number(tok) + 1));
      yield put(String(Number(tok) - 1));
    } else if (m[4] !== undefined) {
      for (const w of WORDS[tok] || []) yield put(w);
    } else if (m[5] !== undefined) {
      for (const o of OPS[tok] || []) yield put(o);
    }
  }
  const split = line.match(/\.split\((' '|" ")\)/);
  if (split) yield line.replace(split[0], ".trim().split(/\\s+/).filter(Boolean)");
  const ret = line.match(/^(\s*return\s+)(.+?)(;?\s*)$/);
  if (ret) for (const c of AFFIX) {
    const lit = c === "'" ? `"'"` : `'${c === "\\" ? "\\\\" : c}'`;
    yield ret[1] + "(" + ret[2] + ") + " + lit + ret[3];
    yield ret[1] + lit + " + (" + ret[2] + ")" + ret[3];
  }
  const cond = line.match(/^(\s*(?:\}\s*else\s+)?(?:if|while)\s*\()(.*)(\)\s*\{?\s*)$/);
  if (cond) yield cond[1] + "!(" + cond[2] + ")" + cond[3];
}

function* step(src) {
  const lines = src.split("\n");
  for (const [a, b] of ranges(lines)) {
    for (let i = a; i <= b; i++) {
      if (/^\s*(\/\/|\*|\/\*)/.test(lines[i])) continue;
      for (const now of lineMutants(lines[i])) {
        if (now === lines[i]) continue;
        const copy = lines.slice();
        copy[i] = now;
        yield [copy.join("\n"), `line ${i + 1}: \`${lines[i].trim()}\` became \`${now.trim()}\``];
      }
    }
  }
}

const base = score(src0);
const seen = new Set([src0]);
let tried = 0, found = null;
let frontier = [[base === null ? 1e9 : base, src0, []]];
search: for (let depth = 0; depth < DEPTH; depth++) {
  const better = [];
  for (const [k, src, how] of frontier) {
    for (const [now, what] of step(src)) {
      if (tried >= TRIES || Date.now() - start > LIMIT) break search;
      if (seen.has(now)) continue;
      seen.add(now);
      tried++;
      const s = score(now);
      if (s === 0) { found = [now, how.concat([what])]; break search; }
      if (s !== null && s < k) better.push([s, now, how.concat([what])]);
    }
  }
  if (!better.length) break;
  better.sort((x, y) => x[0] - y[0]);
  frontier = better.slice(0, BEAM);
}
if (found) console.log("MM-MUTATE " + JSON.stringify({ source: found[0], changes: found[1], tried }));
else console.log(`MM-MUTATE-NONE tried ${tried}`);
process.exit(0);
