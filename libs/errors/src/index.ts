/**
 * @engram/errors: the errors Engram answers with. `EngramError` carries a gRPC code, a
 * `google.rpc.ErrorInfo` reason from `engram.common.v1.ErrorReason` and identifying metadata;
 * `toConnectError` is the error boundary's mapping. Depends only on connect's `Code` and the
 * contracts, so libraries and adapters throw the same errors as the server runtime without
 * importing it. The OpenAI-compatible clients' error reader is the subpath `@engram/errors/openai`.
 */
export {
  EngramError,
  dependencyFailure,
  describeError,
  errorInfoOf,
  errors,
  isEngramError,
  loggableError,
  retryDelayOf,
  toConnectError,
  type ErrorBoundaryOptions,
  type ErrorMetadata,
  type Reason,
} from './errors.js';
