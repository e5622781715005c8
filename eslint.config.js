// ESLint flat config: typescript-eslint's recommended rules over the whole workspace.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.bench-out/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { console: 'readonly', process: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  // CommonJS files (PM2's ecosystem file must be one): node's module globals.
  {
    files: ['**/*.cjs'],
    languageOptions: { globals: { module: 'writable', __dirname: 'readonly' } },
  },
);
