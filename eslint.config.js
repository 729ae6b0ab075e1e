import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'src/dashboard/public/', '.scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly', fetch: 'readonly', performance: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', structuredClone: 'readonly', queueMicrotask: 'readonly', TextDecoder: 'readonly', TextEncoder: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/db/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [
        { name: 'pg', message: 'Only src/db talks to a driver: take a Db.' },
        { name: '@electric-sql/pglite', message: 'Only src/db talks to a driver: take a Db.' },
      ] }],
    },
  },
);
