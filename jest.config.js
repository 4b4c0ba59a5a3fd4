// Two projects: `unit` (pure logic and in-memory transports, *.spec.ts beside the code) and
// `integration` (real sockets and real dependencies, test/**/*.int.spec.ts). Integration suites
// never skip: a missing dependency is a failure that says how to start it.
const swc = [
  '@swc/jest',
  {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022', keepClassNames: true },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

/** @type {import('jest').Config} */
const common = {
  // Node, with the host's typed-array constructors so onnxruntime (the embedding model) works
  // inside Jest's per-file contexts; see jest.environment.mjs.
  testEnvironment: '<rootDir>/jest.environment.mjs',
  // Resolve workspace packages to their TypeScript sources (see the "@engram/source" condition).
  testEnvironmentOptions: { customExportConditions: ['@engram/source', 'node', 'node-addons'] },
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': swc },
};

/** @type {import('jest').Config} */
export default {
  // A global option: Jest ignores `testTimeout` inside `projects`. Integration tests start real
  // processes and models on a loaded 2-core machine; a slow start is not a failure.
  testTimeout: 60_000,
  projects: [
    {
      ...common,
      displayName: 'unit',
      // Property tests and the real embedding model need headroom on a loaded 2-core machine.
      testTimeout: 30_000,
      testMatch: [
        '<rootDir>/libs/*/src/**/*.spec.ts',
        '<rootDir>/services/*/src/**/*.spec.ts',
        '<rootDir>/apps/*/src/**/*.spec.ts',
        '<rootDir>/clients/*/src/**/*.spec.ts',
        '<rootDir>/bench/**/*.spec.ts',
        '<rootDir>/deploy/test/**/*.spec.ts',
      ],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: [
        '<rootDir>/libs/*/test/**/*.int.spec.ts',
        '<rootDir>/services/*/test/**/*.int.spec.ts',
        '<rootDir>/apps/*/test/**/*.int.spec.ts',
      ],
      testTimeout: 60_000,
    },
  ],
};
