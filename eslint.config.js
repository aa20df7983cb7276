import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'bench/results/', 'src/geo/data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  // Layers (docs/architecture.md): data flows route → service → (domain, repo) → database.
  {
    files: ['src/lib/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/modules/**', '**/dashboard/**', '**/app.js'], message: 'lib/ holds no domain knowledge: it must not import modules, the dashboard or the app.' }] }],
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['fastify', 'kysely', 'pg', 'better-sqlite3', 'ioredis'].map((name) => ({ name, message: 'The domain core does no I/O.' })),
          patterns: [
            // Subpaths too (kysely/helpers/postgres, fastify/types/...): the package's own root is covered by paths.
            { group: ['fastify/*', 'kysely/*', 'pg/*', 'better-sqlite3/*', 'ioredis/*'], message: 'The domain core does no I/O.' },
            { group: ['**/lib/db/**', '**/lib/http/**', '**/modules/**', '**/dashboard/**', '@fastify/*'], message: 'The domain core does no I/O and knows no HTTP.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/modules/**/*.service.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'fastify', message: 'Services never see requests or replies.' }], patterns: [{ group: ['fastify/*', '@fastify/*', '**/*.routes.js'], message: 'Services never import HTTP code.' }] },
      ],
    },
  },
  {
    files: ['src/modules/**/*.repo.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/*.service.js', '**/*.routes.js'], message: 'Repos hold SQL only: they never call services or routes.' }] }],
    },
  },
  {
    files: ['src/dashboard/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/*.repo.js'], message: 'Dashboard pages call services, never repos.' }] }],
    },
  },
  // The engine seam (docs/architecture.md): every PostgreSQL/SQLite difference lives in src/lib/db, one
  // module per concern (locks, bulk writes, load documents, lane reads and stats). Nothing else asks which
  // engine it runs on.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/lib/db/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: 'BinaryExpression:matches([left.value=/^(postgres|sqlite)$/], [right.value=/^(postgres|sqlite)$/])', message: 'Engine branches live in src/lib/db: add a function there that says what it does, not which engine it is.' },
        { selector: "BinaryExpression MemberExpression[property.name='dialect']", message: 'Engine branches live in src/lib/db: add a function there that says what it does, not which engine it is.' },
        { selector: "ImportSpecifier[imported.name='dialectOf']", message: 'dialectOf is for src/lib/db only: the modules ask lib/db for what they need (locks, bulk writes, documents).' },
      ],
    },
  },
);
