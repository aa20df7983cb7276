import js from '@eslint/js';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

// Node's built-ins that do no I/O and keep no state: the only packages the domain core may import.
const PURE_BUILTINS = ['assert', 'buffer', 'path', 'querystring', 'string_decoder', 'url', 'util'];

// The engine seam (docs/architecture.md): every PostgreSQL/SQLite difference lives in src/lib/db, one
// module per concern (locks, bulk writes, load documents, lane reads and stats). Nothing else asks which
// engine it runs on.
const ENGINE_BRANCH = 'Engine branches live in src/lib/db: add a function there that says what it does, not which engine it is.';
const ENGINE_SEAM = [
  { selector: 'BinaryExpression:matches([left.value=/^(postgres|sqlite)$/], [right.value=/^(postgres|sqlite)$/])', message: ENGINE_BRANCH },
  { selector: "BinaryExpression MemberExpression[property.name='dialect']", message: ENGINE_BRANCH },
  {
    selector: "ImportSpecifier[imported.name='dialectOf']",
    message: 'dialectOf is for src/lib/db only: the modules ask lib/db for what they need (locks, bulk writes, documents).',
  },
];
// On the paths that run once per row or per statement (the write pipeline, the record services, loads,
// lanes, events, imports, the database layer and the domain): no object literal that starts with a
// spread and goes on with more properties. Node 20's V8 adds each property after a leading spread on a
// slow path, about 1 µs each (a load row of 20 columns after `...base` was 27 µs, 2.7 ms of a 100-load
// batch); Node 24 does not. docs/architecture.md, "Hot paths".
const LEADING_SPREAD = {
  selector: 'ObjectExpression > SpreadElement:first-child:not(:last-child)',
  message:
    'A leading spread followed by more properties is slow on Node 20 (about 1 µs a property): list the fields, or write Object.assign({}, source, { ... }).',
};
// SQL has one home (docs/architecture.md): a module's `*.repo.ts`, or src/lib/db for the engine
// primitives the repos use. Services, routes, the dashboard and lib/http call repo functions.
const SQL_IN_REPOS =
  "SQL goes in a repo: write this statement as a function in the module's *.repo.ts (or, for an engine primitive, in src/lib/db) and call it.";
const QUERY_BUILDERS = ['selectFrom', 'insertInto', 'updateTable', 'deleteFrom'].map((property) => ({ property, message: SQL_IN_REPOS }));
const HOT_PATHS = [
  'src/lib/db/**/*.ts',
  'src/domain/**/*.ts',
  'src/modules/{shared,loads,lanes,events,imports,tracking,rates,locations,carriers,customers}/**/*.ts',
];

export default tseslint.config(
  { ignores: ['dist/', 'clients/typescript/dist/', 'node_modules/', 'data/', 'coverage/', 'bench/results/', 'src/geo/data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  // Layers (docs/architecture.md): data flows route → service → (domain, repo) → database. The rules
  // go by folder: import-x resolves each import to its file (`./x.js` to `./x.ts`), so a zone holds
  // whatever the path is spelled like.
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json', '.node'], extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          basePath: import.meta.dirname,
          zones: [
            {
              target: './src/lib',
              from: ['./src/modules', './src/dashboard', './src/app.ts', './src/main.ts'],
              message: 'lib/ holds no domain knowledge: it must not import modules, the dashboard or the app.',
            },
            // src/geo/distance.ts (great-circle distance, no imports) is the one pure file of geo/; its index loads data files.
            {
              target: './src/domain',
              from: './src',
              except: ['./domain', './geo/distance.ts'],
              message: 'The domain core imports only the domain (and geo/distance.ts): no lib, modules, dashboard or geo data.',
            },
          ],
        },
      ],
      // No import circle anywhere in src/ (an `import type` is erased at run time and does not count).
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(?!\\.\\.?/|node:(?:${PURE_BUILTINS.join('|')})$)`,
              message: `The domain core does no I/O: it imports no package and of Node only ${PURE_BUILTINS.map((b) => `node:${b}`).join(', ')}.`,
            },
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
        {
          paths: [{ name: 'fastify', message: 'Services never see requests or replies.' }],
          patterns: [{ group: ['fastify/*', '@fastify/*', '**/*.routes.js'], message: 'Services never import HTTP code.' }],
        },
      ],
    },
  },
  {
    files: ['src/modules/**/*.repo.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/*.service.js', '**/*.routes.js'], message: 'Repos hold SQL only: they never call services or routes.' }] },
      ],
    },
  },
  {
    // Route handlers and dashboard pages call services: no SQL, no repo, and of lib/db only its types.
    files: ['src/modules/**/*.routes.ts', 'src/dashboard/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/*.repo.js'], message: 'Routes and dashboard pages call services, never repos.' },
            {
              group: ['**/lib/db/**', 'kysely', 'kysely/*'],
              allowTypeImports: true,
              message: 'Routes and dashboard pages call services: of the database layer they may import types only (import type).',
            },
          ],
        },
      ],
    },
  },
  // SQL in repos (above): no query builder and no sql`…` outside *.repo.ts and src/lib/db.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.repo.ts', 'src/lib/db/**'],
    rules: { 'no-restricted-properties': ['error', ...QUERY_BUILDERS] },
  },
  {
    // Routes and dashboard pages may import nothing of kysely but types (above): sql is already refused there.
    files: ['src/**/*.ts'],
    ignores: ['src/**/*.repo.ts', 'src/lib/db/**', 'src/modules/**/*.routes.ts', 'src/dashboard/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: [{ name: 'kysely', importNames: ['sql'], allowTypeImports: true, message: SQL_IN_REPOS }] },
      ],
    },
  },
  // The engine seam (above): no engine branch outside src/lib/db; and no leading spread on hot paths.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/lib/db/**', ...HOT_PATHS],
    rules: { 'no-restricted-syntax': ['error', ...ENGINE_SEAM] },
  },
  {
    files: HOT_PATHS,
    ignores: ['src/lib/db/**', 'src/lib/db/migrations/**'],
    rules: { 'no-restricted-syntax': ['error', ...ENGINE_SEAM, LEADING_SPREAD] },
  },
  {
    files: ['src/lib/db/**/*.ts'],
    ignores: ['src/lib/db/migrations/**'],
    rules: { 'no-restricted-syntax': ['error', LEADING_SPREAD] },
  },
  // Sizes a reader can hold (docs/architecture.md, "Sizes"): a file of at most 400 lines, a function of at
  // most 80, counted as Prettier writes them (comments and blank lines included).
  {
    files: ['src/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 400 }], 'max-lines-per-function': ['error', { max: 80 }] },
  },
);
