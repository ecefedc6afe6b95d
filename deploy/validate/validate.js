#!/usr/bin/env node
// Validates Kubernetes objects without a cluster (tests/k8s_schema_test.sh).
//
//   node validate.js FILE.yaml...    (multi-document YAML, e.g. the output of
//                                     `kubectl kustomize`)
//
// Each object is checked twice:
//   1. against the Kubernetes OpenAPI schemas as compiled by the npm package
//      kubernetes-models (and @kubernetes-models/prometheus-operator for the
//      ServiceMonitor): types, enums, required fields;
//   2. strictly: every key must be a field the schema declares. The OpenAPI
//      schemas allow unknown fields (the API server would drop them
//      silently), so this walks the packages' type declarations (.d.ts), the
//      same schemas in another form, and rejects anything else.
// Volcano's PodGroup has no npm model; it is checked against the fields of
// scheduling.volcano.sh/v1beta1 listed below.
// Prints one line per problem and exits 1 if there is any.
"use strict";

const fs = require("fs");
const path = require("path");
const yaml = require("js-yaml");

const MODULES = path.join(__dirname, "node_modules");

// apiVersion -> module folder of its models.
function modelFile(apiVersion, kind) {
  if (apiVersion === "monitoring.coreos.com/v1") {
    return path.join(MODULES, "@kubernetes-models/prometheus-operator",
                     "monitoring.coreos.com/v1", kind);
  }
  return path.join(MODULES, "kubernetes-models", apiVersion, kind);
}

// ---- A small parser for the TypeScript types of the .d.ts files. ----------

function tokenize(text) {
  const tokens = [];
  const re = /\s*("(?:[^"\\]|\\.)*"|[A-Za-z_$][\w$]*|-?\d+(?:\.\d+)?|\S)/gy;
  let m;
  while ((m = re.exec(text)) !== null && m[0].length > 0) tokens.push(m[1]);
  return tokens;
}

function parseType(t) {
  const options = [parsePrimary(t)];
  while (t.tokens[t.i] === "|") {
    t.i++;
    options.push(parsePrimary(t));
  }
  return options.length === 1 ? options[0] : { kind: "union", options };
}

function parsePrimary(t) {
  const tok = t.tokens[t.i++];
  if (tok === "{") return parseMembers(t);
  if (tok === "Array" && t.tokens[t.i] === "<") {
    t.i++;
    const item = parseType(t);
    t.i++;  // ">"
    return { kind: "array", item };
  }
  if (/^I[A-Z]\w*$/.test(tok)) return { kind: "ref", name: tok };
  return { kind: "leaf" };  // string, number, boolean, literals, aliases
}

function parseMembers(t) {
  const node = { kind: "object", props: {}, index: null };
  while (t.tokens[t.i] !== "}") {
    if (t.tokens[t.i] === "[") {  // [key: string]: T;
      while (t.tokens[t.i++] !== "]");
      t.i++;  // ":"
      node.index = parseType(t);
    } else {
      const name = JSON.parse(t.tokens[t.i++]);
      if (t.tokens[t.i] === "?") t.i++;
      t.i++;  // ":"
      node.props[name] = parseType(t);
    }
    if (t.tokens[t.i] === ";") t.i++;
  }
  t.i++;
  return node;
}

const files = new Map();  // .d.ts path -> {schema, imports, file}

function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
}

function resolveModule(from, spec) {
  const base = spec.startsWith(".")
    ? path.resolve(path.dirname(from), spec)
    : path.join(MODULES, spec);
  return base.replace(/\.js$/, "") + ".d.ts";
}

// The first interface of a .d.ts file, with the imports its types name.
function loadDts(file) {
  if (files.has(file)) return files.get(file);
  const text = stripComments(fs.readFileSync(file, "utf8"));
  const imports = {};
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*"([^"]+)"/g)) {
    for (const part of m[1].split(",")) {
      const [orig, alias] = part.trim().split(/\s+as\s+/);
      if (orig) imports[(alias || orig).trim()] = resolveModule(file, m[2]);
    }
  }
  const start = text.search(/export interface I\w+(\s+extends\s+[\w<>, ]+)?\s*\{/);
  let schema = { kind: "leaf" };
  if (start >= 0) {
    const t = { tokens: tokenize(text.slice(text.indexOf("{", start))), i: 0 };
    t.i++;
    schema = parseMembers(t);
  }
  const entry = { schema, imports, file };
  files.set(file, entry);
  return entry;
}

function strictCheck(value, node, where, ctx, problems) {
  if (value === null || value === undefined) return;
  switch (node.kind) {
    case "ref": {
      const target = ctx.imports[node.name];
      if (!target || !fs.existsSync(target)) return;  // an alias of a scalar
      const entry = loadDts(target);
      strictCheck(value, entry.schema, where, entry, problems);
      return;
    }
    case "array":
      if (Array.isArray(value)) {
        value.forEach((v, i) => strictCheck(v, node.item, `${where}[${i}]`,
                                            ctx, problems));
      }
      return;
    case "union":
      for (const option of node.options) {
        const isObject = typeof value === "object" && !Array.isArray(value);
        if ((option.kind === "array" && Array.isArray(value)) ||
            ((option.kind === "object" || option.kind === "ref") && isObject)) {
          strictCheck(value, option, where, ctx, problems);
          return;
        }
      }
      return;
    case "object":
      if (typeof value !== "object" || Array.isArray(value)) return;
      for (const [key, v] of Object.entries(value)) {
        const child = node.props[key] || node.index;
        if (!child) {
          problems.push(`${where}.${key}: unknown field`);
          continue;
        }
        strictCheck(v, child, `${where}.${key}`, ctx, problems);
      }
      return;
    default:
      return;
  }
}

// ---- Volcano's PodGroup (no npm model). -----------------------------------

function checkPodGroup(obj, where, problems) {
  const allowed = {
    "": ["apiVersion", "kind", "metadata", "spec"],
    ".spec": ["minMember", "minTaskMember", "minResources", "queue",
              "priorityClassName"],
  };
  for (const [sub, keys] of Object.entries(allowed)) {
    const v = sub ? obj.spec : obj;
    for (const key of Object.keys(v || {})) {
      if (!keys.includes(key)) problems.push(`${where}${sub}.${key}: unknown field`);
    }
  }
  if (!Number.isInteger(obj.spec && obj.spec.minMember) || obj.spec.minMember < 1) {
    problems.push(`${where}.spec.minMember: must be an integer >= 1`);
  }
  const meta = loadDts(path.join(MODULES,
      "@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta.d.ts"));
  strictCheck(obj.metadata, meta.schema, `${where}.metadata`, meta, problems);
}

// ---- Main. ----------------------------------------------------------------

function validateObject(obj, where, problems) {
  if (!obj || typeof obj !== "object") {
    problems.push(`${where}: not an object`);
    return;
  }
  const { apiVersion, kind } = obj;
  if (apiVersion === "scheduling.volcano.sh/v1beta1" && kind === "PodGroup") {
    checkPodGroup(obj, where, problems);
    return;
  }
  const file = modelFile(String(apiVersion), String(kind));
  if (!fs.existsSync(file + ".js")) {
    problems.push(`${where}: no schema for ${apiVersion} ${kind}`);
    return;
  }
  const Model = require(file)[kind];
  try {
    new Model(obj).validate();
  } catch (e) {
    problems.push(`${where}: ${e.message}`);
  }
  const entry = loadDts(file + ".d.ts");
  // A declaration the parser could not read would make the check vacuous.
  if (entry.schema.kind !== "object" || !entry.schema.props.spec &&
      !entry.schema.props.data) {
    problems.push(`${where}: cannot read the declared fields of ${kind}`);
    return;
  }
  strictCheck(obj, entry.schema, where, entry, problems);
}

function main() {
  const args = process.argv.slice(2);
  if (args.length === 0) {
    console.error("usage: node validate.js FILE.yaml...");
    process.exit(2);
  }
  const problems = [];
  let count = 0;
  for (const file of args) {
    let docs;
    try {
      docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter(Boolean);
    } catch (e) {
      problems.push(`${file}: ${e.reason || e.message}`);
      continue;
    }
    docs.forEach((obj) => {
      const name = `${obj.kind}/${(obj.metadata || {}).name}`;
      validateObject(obj, `${path.basename(file)}: ${name}`, problems);
      count++;
    });
  }
  for (const p of problems) console.log(p);
  if (problems.length > 0) process.exit(1);
  console.log(`${count} objects valid (schemas + strict fields)`);
}

main();
