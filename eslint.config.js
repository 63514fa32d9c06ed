// ESLint for the static JavaScript: the HIT page (annotation/static/), each task type's script
// (annotation/task_types/<name>/static/) and the test fixture's (tests/fixtures/). They are classic browser
// scripts, loaded with <script defer>, not modules: each is one "use strict" IIFE that talks to the others only
// through window.ArgoraHIT / window.ArgoraDrafts (hit.js and drafts.js define them). `make check` runs this
// (README "Checks").
"use strict";

const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  {
    // installed packages, and var/ (collected static files, test output)
    ignores: ["node_modules/**", ".venv/**", "var/**"],
  },
  {
    // any static folder: a new app's or task type's scripts are linted without a change here
    files: ["**/static/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      ...js.configs.recommended.rules,
      // every name a script shares goes on window explicitly; nothing leaks out of the IIFE by accident
      "no-implicit-globals": "error",
      // each file's IIFE opens with "use strict"
      strict: ["error", "function"],
      // == only for the `x == null` idiom (null or undefined)
      eqeqeq: ["error", "smart"],
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "none" }],
    },
  },
  {
    // this file: Node, CommonJS
    files: ["eslint.config.js"],
    languageOptions: { sourceType: "commonjs", globals: { ...globals.node } },
    rules: js.configs.recommended.rules,
  },
];
