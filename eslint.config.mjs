// eslint with typescript-eslint's type-checked rules (`npm run lint`, part of `npm test`). `eslint-disable` only with
// a reason on the same line (`// eslint-disable-next-line rule -- why`); unused disables are errors.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      '**/*.js',
      '**/*.cjs',
      '**/*.mjs',
      'deploy/lambda/node_modules/**',
      'scripts/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_name` says "deliberately unused" (a field dropped by destructuring, an interface's parameter).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      // Adapters and stores implement async interfaces; a method with nothing to await is still `async` so it
      // answers with a promise and turns a throw into a rejection, as the contract says.
      '@typescript-eslint/require-await': 'off',
      // Off until the one-time `npx eslint . --fix` pass after every branch has landed (it rewrites ~360 lines in
      // ~100 files others are editing); then 'error'.
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
      // Off for now, each with findings in code that several engineers were changing this session; turn on one by one.
      // no-unsafe-*: `any` from JSON.parse, acorn's nodes and untyped SDK corners (~35 sites in src/ and adapters/).
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Method references passed on purpose (`list.map(this.describe)` on bound or static-like methods): 15 sites.
      '@typescript-eslint/unbound-method': 'off',
      // The `(clearTimeout(timer), resolve(value))` comma style in callbacks: 10 sites.
      '@typescript-eslint/no-unused-expressions': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/no-redundant-type-constituents': 'off',
    },
  },
  {
    // Code lines <= 140 columns (issue 24; prettier's printWidth covers code, this covers strings, comments and the
    // console's htm templates, which prettier leaves alone). URLs are not split (a link must stay one token). No file
    // is exempt: break an htm template between attributes or between tags (htm drops whitespace holding a newline,
    // so a space in text stays as ${' '}), embedded program text where its language allows. Every other code file
    // (.py/.js/.mjs/.cjs) is checked by test/package/line-length.test.ts.
    files: ['**/*.ts', '**/*.tsx'],
    rules: { 'max-len': ['error', { code: 140, ignoreUrls: true }] },
  },
  {
    // Tests read JSON answers (HTTP bodies, CLI output) as `any` on purpose: the assertions are the type check.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
)
