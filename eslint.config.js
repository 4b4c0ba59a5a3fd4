// Code-quality lint for TypeScript. Module boundaries and cycles are checked by
// dependency-cruiser (.dependency-cruiser.cjs); formatting by Prettier; import order here.
import js from '@eslint/js';
import { importX } from 'eslint-plugin-import-x';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      'libs/contracts/src/gen/**',
      'coverage/**',
      '.nx/**',
      'bench/out/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: { 'import-x/internal-regex': '^@engram/' },
    rules: {
      // Node built-ins, then packages, then the workspace's @engram/* packages, then relative files.
      'import-x/order': [
        'error',
        {
          groups: ['builtin', 'external', 'internal', ['parent', 'sibling', 'index']],
          'newlines-between': 'never',
          alphabetize: { order: 'asc', caseInsensitive: true },
        },
      ],
      'import-x/first': 'error',
      'import-x/no-duplicates': 'error',
      // A function longer than this says why next to it (eslint-disable-next-line … -- reason).
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      '@typescript-eslint/prefer-nullish-coalescing': 'error',
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // Engram Studio runs in the browser (React; apps/studio/tsconfig.json).
    files: ['apps/studio/src/**/*.{ts,tsx}', 'apps/studio/vite.config.ts'],
    plugins: { 'react-hooks': reactHooks },
    languageOptions: { globals: { ...globals.browser } },
    rules: {
      ...reactHooks.configs.recommended.rules,
      // Event handlers such as `onChange={(e) => setValue(e.target.value)}` return the setter's void.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
    },
  },
  {
    files: ['**/*.spec.ts', '**/test/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Test doubles are often async generators or handlers that need not await.
      '@typescript-eslint/require-await': 'off',
      // Test helpers type dynamic grpc-js responses by the caller's expectation.
      '@typescript-eslint/no-unnecessary-type-parameters': 'off',
      'no-console': 'off',
    },
  },
  {
    // A module spreads its handler classes into one ServiceImpl (ARCHITECTURE.md, decision 0023):
    // their RPCs are own arrow-function fields, which a spread copies, and their state is in ES
    // private fields, which it does not. The rule guards against spreading prototype methods.
    files: ['services/*/src/module.ts'],
    rules: { '@typescript-eslint/no-misused-spread': 'off' },
  },
  {
    // describe() blocks are long by nature; the limit is for source functions.
    files: ['**/*.spec.ts', '**/test/**/*.ts'],
    rules: { 'max-lines-per-function': 'off' },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { ...globals.node } },
  },
);
