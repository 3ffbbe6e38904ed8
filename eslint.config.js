// @ts-check
// `npm run lint`: ESLint with typescript-eslint's type-aware rules over every TypeScript file, then
// Prettier's check of the formatting, then knip for unused files, exports and dependencies.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** node:test's `test`/`describe` return promises that the runner itself awaits. */
const nodeTestCalls = {
  from: 'package',
  package: 'node:test',
  name: ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // TypeScript itself reports undefined names, with the types' knowledge of globals.
      'no-undef': 'off',
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [nodeTestCalls] }],
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // An `async` function without `await` is how a handler or a port method turns a throw into a
      // rejection (Fastify handlers, Runtime.inspect, fakes of a port in tests); the rule would
      // have them return Promise.resolve/reject by hand.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Tests read replies as JSON (`any`) and assert on them; the unsafe-any rules would only add
    // casts there. Everything else, floating promises included, holds in tests as in the code.
    files: ['**/*.test.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // Fakes of a line source that ends or fails before its first line.
      'require-yield': 'off',
    },
  },
  { files: ['**/*.js', '**/*.mjs', '**/*.cjs'], ...tseslint.configs.disableTypeChecked },
);
