/**
 * @engram/testing: support for the tests and benchmarks, never for production code (a dependency
 * rule forbids importing it from any package's `src/` outside its specs): one seeded random
 * generator, the percentile statistics of the benchmark reports, synthetic secrets for the
 * detectors' tests, the nice value of each thread of the process, a real Qdrant started on free
 * loopback ports and the launch options of Debian's chromium for the browser tests.
 */
export { CHROMIUM, CHROMIUM_LAUNCH_OPTIONS } from './chromium.js';
export { choices, pick, seededRandom, type Choices, type Random } from './random.js';
export { median, percentile, quantile } from './statistics.js';
export { startedThreadNiceness, threadNiceness } from './threads.js';
export {
  BASE62,
  fakeAnthropicKey,
  fakeAwsAccessKeyId,
  fakeAwsSecretAccessKey,
  fakeAwsTemporaryKeyId,
  fakeCardNumber,
  fakeCnResidentId,
  fakeGenericSecret,
  fakeGithubFineGrainedToken,
  fakeGithubToken,
  fakeGoogleApiKey,
  fakeIban,
  fakeJwt,
  fakeOpenAiKey,
  fakeOpenAiProjectKey,
  fakePemPrivateKey,
  fakeSlackBotToken,
  fakeStripeKey,
  fakeStripeRestrictedKey,
  groupDigits,
  luhnCheckDigit,
  randomString,
} from './secrets.js';
export {
  freePorts,
  qdrantBinary,
  qdrantEnv,
  qdrantReady,
  qdrantScratchRoot,
  startQdrant,
  type RunningQdrant,
} from './qdrant.js';
