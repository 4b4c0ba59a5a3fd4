// Module boundaries, checked on every import (npm run lint:deps, part of npm test).
// The rules mirror the Nx tags in each package.json (type:contracts < type:lib < type:service <
// type:app): dependencies point inwards, nothing imports a service from a library, services do
// not import each other (they talk through generated gRPC clients), and there are no cycles.
// Libraries never import the server runtime, production code never imports @engram/testing, and
// the benchmarks (bench/) use only public entry points.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles make initialization order fragile and layers meaningless.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'contracts-are-leaves',
      severity: 'error',
      comment: 'Generated contracts depend on nothing of ours.',
      from: { path: '^libs/contracts/' },
      to: { path: '^(libs|services)/', pathNot: '^libs/contracts/' },
    },
    {
      name: 'libs-never-import-services',
      severity: 'error',
      comment: 'Libraries are shared by services; a library importing a service inverts the layers.',
      from: { path: '^libs/' },
      to: { path: '^services/' },
    },
    {
      name: 'services-do-not-import-each-other',
      severity: 'error',
      comment: 'Services share no in-process state; they call each other through generated clients.',
      from: { path: '^services/(?!all-in-one/)([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'only-the-app-composes-services',
      severity: 'error',
      comment: 'Only services/all-in-one may mount several services (through their public index).',
      from: { path: '^services/all-in-one/' },
      to: { path: '^services/(governance|ingestion|retrieval|context)/src/(?!index\\.ts$)' },
    },
    {
      name: 'apps-talk-to-services-over-grpc',
      severity: 'error',
      comment: 'Client applications (apps/*) use the generated contracts and libraries, never service code.',
      // Their tests may start a real server in-process.
      from: { path: '^apps/', pathNot: '^apps/[^/]+/test/' },
      to: { path: '^services/' },
    },
    {
      name: 'nothing-imports-apps',
      severity: 'error',
      comment: 'Applications are leaves: no library or service depends on them.',
      from: { path: '^(libs|services)/' },
      to: { path: '^apps/' },
    },
    {
      name: 'no-deep-imports-into-libs',
      severity: 'error',
      comment:
        'Libraries expose one deliberate entry point (package exports); reach inside only from within.',
      from: { path: '^(libs|services|apps)/([^/]+)/' },
      to: {
        path: '^libs/([^/]+)/src/',
        pathNot: [
          '^libs/$2/',
          '^libs/[^/]+/src/index\\.ts$',
          '^libs/contracts/src/[a-z]+\\.ts$',
          // Declared subpath exports: @engram/errors/openai.
          '^libs/errors/src/openai\\.ts$',
        ],
      },
    },
    {
      name: 'libs-never-import-the-runtime',
      severity: 'error',
      comment:
        'Libraries and adapters never import the server runtime (libs/runtime): it composes them. The ground floor is @engram/errors, @engram/telemetry and @engram/config.',
      from: { path: '^libs/(?!runtime/)' },
      to: { path: '^libs/runtime/' },
    },
    {
      name: 'testing-is-for-tests',
      severity: 'error',
      comment:
        '@engram/testing (seeded randomness, synthetic secrets, a throw-away Qdrant) serves tests and benchmarks; no package source outside its specs depends on it.',
      from: { path: '^(libs|services|apps)/[^/]+/src/', pathNot: ['\\.spec\\.ts$', '^libs/testing/'] },
      to: { path: '^libs/testing/' },
    },
    {
      name: 'bench-uses-public-entry-points',
      severity: 'error',
      comment:
        "Benchmarks measure the packages as their users see them: through each package's public index (its package exports), @engram/testing and the test fixtures meant for sharing, never a package's internals.",
      from: { path: '^bench/' },
      to: {
        path: '^(libs|services|apps)/',
        pathNot: [
          '^(libs|services|apps)/[^/]+/src/index\\.ts$',
          '^libs/contracts/src/[a-z]+\\.ts$',
          '^services/governance/test/fixtures/',
          // The hand-written two-topic conversations of ingestion's topic-shift test (bench/topic-shift.ts).
          '^services/ingestion/test/topic-fixtures\\.ts$',
          // The labelled redaction corpus and its scoring (bench/redaction.ts, issue 18).
          '^libs/redaction/test/corpus/',
        ],
      },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['(^|/)(dist|node_modules|coverage)/', '^bench/out/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      conditionNames: ['@engram/source', 'import', 'require', 'node', 'default'],
      exportsFields: ['exports'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'],
      mainFields: ['module', 'main', 'types'],
    },
  },
};
