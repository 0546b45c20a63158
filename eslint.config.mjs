// The JS linter of prism-review (`npm run lint`, run by .ci/run next to cargo fmt and
// clippy): ESLint's recommended rules over the glue, the CLI, scripts, benchmarks and tests.
import js from '@eslint/js'
import globals from 'globals'

export default [
  { ignores: ['binding.js', 'binding.d.ts', 'npm/**', 'node_modules/**', 'target/**', 'fuzz/**'] },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, globals: { ...globals.node } },
    rules: {
      // `catch {}` where a failure is deliberately ignored (cleanup, best-effort reads).
      'no-empty': ['error', { allowEmptyCatch: true }],
      // Control characters are what the output sanitizers exist to match.
      'no-control-regex': 'off',
      // `const { a, ...rest } = x` drops `a` on purpose.
      'no-unused-vars': ['error', { ignoreRestSiblings: true, argsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  { files: ['**/*.js'], languageOptions: { sourceType: 'commonjs' } },
  { files: ['**/*.mjs'], languageOptions: { sourceType: 'module' } },
]
