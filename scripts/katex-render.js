#!/usr/bin/env node
// katex-render.js — typeset formulas for the HTML exports (scripts/nbcheck -render-math calls it).
// stdin: a JSON list of {"tex": "...", "display": bool}; stdout: a JSON list of HTML strings, one
// per formula: KaTeX's MathML output (<span class="katex"><math>…</math></span>), which browsers
// draw natively — no script, stylesheet or font is needed to read the export offline.
//
// KaTeX comes from Debian's libjs-katex 0.16.4 (/usr/share/javascript/katex/katex.js;
// scripts/install-notebook-stack.sh installs it) or from KATEX_JS, e.g. an npm install of
// katex@0.16.4 (node_modules/katex/dist/katex.js). A formula KaTeX cannot parse fails the export.
"use strict";
const path = process.env.KATEX_JS || "/usr/share/javascript/katex/katex.js";
const katex = require(path);
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const items = JSON.parse(input);
  const out = [];
  let failed = false;
  for (const it of items) {
    try {
      out.push(katex.renderToString(it.tex, { displayMode: !!it.display, output: "mathml", throwOnError: true, strict: "ignore" }));
    } catch (e) {
      failed = true;
      process.stderr.write(`katex-render: cannot typeset ${JSON.stringify(it.tex)}: ${e.message}\n`);
    }
  }
  if (failed) process.exit(1);
  process.stdout.write(JSON.stringify(out));
});
