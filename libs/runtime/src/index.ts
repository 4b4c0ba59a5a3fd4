/**
 * @engram/runtime: what every Engram service process shares. Server bootstrap (gRPC, gRPC-Web and
 * Connect on one HTTP/2 port), grpc.health.v1, reflection, graceful shutdown, the error boundary,
 * authentication, structured logs, configuration parsing, service-to-service clients, Prometheus
 * metrics and OpenTelemetry tracing.
 */
export {
  PrincipalAdmission,
  burstOf,
  type AdmissionLimits,
  type AdmissionOptions,
  type AdmissionTicket,
} from './admission.js';
export {
  ADAPTIVE_MIN_SLOTS,
  ProcessAdmission,
  admitted,
  processAdmission,
  type AdmissionClock,
  type OverloadLimit,
  type ProcessAdmissionLimits,
  type ProcessAdmissionOptions,
} from './process-admission.js';
export {
  DEFAULT_MAX_TOKEN_LIFETIME_SEC,
  MAX_SUBJECT_LENGTH,
  MAX_TENANT_LENGTH,
  ROLES,
  createAuthenticator,
  mintToken,
  principalKey,
  requirePrincipal,
  requireRole,
  type AuthConfig,
  type Authenticator,
  type Principal,
  type Role,
  type ServiceVerifyKey,
  type SigningKey,
  type TokenClaims,
} from './auth.js';
export {
  createInProcessTransport,
  createNetworkTransport,
  forwardedCallOptions,
  serviceClient,
} from './clients.js';
export { ConfigError, envEnum, envInt, envNumber, envString, parseEnv } from '@engram/config';
export {
  DEFAULT_METRICS_PORT,
  MIN_HS256_SECRET_BYTES,
  authConfigFromEnv,
  isLoopbackHost,
  limitsFromEnv,
  metricsPortFromEnv,
  serverEnvShape,
  serviceEnvSchema,
  type ServerEnv,
  type ServiceEnv,
  type ServerLimits,
} from './config.js';
export { requestIdKey } from './context-keys.js';
export {
  EngramError,
  dependencyFailure,
  describeError,
  errorInfoOf,
  errors,
  isEngramError,
  loggableError,
  toConnectError,
  type ErrorMetadata,
  type Reason,
} from '@engram/errors';
export { HealthRegistry, ServingStatus, createHealthService } from './health.js';
export {
  matchRoute,
  type BearerHttpRoute,
  type HttpCaller,
  type HttpRoute,
  type PublicHttpRoute,
} from './http-routes.js';
export { createServerInterceptor } from './interceptors.js';
export { createLogger, type Logger } from '@engram/telemetry';
export { startMetricsServer, type MetricsServer } from './metrics-server.js';
export {
  embeddingMetrics,
  grpcCodeName,
  indexPassMetrics,
  metricsRegistry,
  modelMetrics,
  registerSampledGauge,
  rpcMetrics,
  scopedMetrics,
  searchStageMetrics,
  type EmbeddingMetrics,
  type GaugeSample,
  type IndexPassMetrics,
  type ModelMetrics,
  type Registry,
  type RpcMetrics,
  type SampledGaugeSpec,
  type SearchStageMetrics,
  type ServiceMetrics,
} from '@engram/telemetry';
export { createReflectionService } from './reflection.js';
export {
  activeTraceFields,
  createClientTracingInterceptor,
  engramTracer,
  extractTraceContext,
  initTracing,
  injectTraceContext,
  traceContextKey,
  withoutTrace,
  type TraceExporter,
  type Tracing,
  type TracingOptions,
} from './tracing.js';
export {
  domainOf,
  engramRoutes,
  exitOnSignals,
  registration,
  serverInterceptors,
  startServer,
  type EngramServer,
  type RoutingOptions,
  type ServerOptions,
  type ServiceRegistration,
} from './server.js';
export { Worker, type PassOutcome, type WorkerOptions } from './worker.js';
export {
  moduleContext,
  moduleHttpRoutes,
  moduleRegistrations,
  networkPeers,
  peerClient,
  serviceModule,
  startModules,
  stopModules,
  type ModuleContext,
  type ServiceModule,
} from './module.js';
export { runMain, serve, type ServeContext, type ServeOptions } from './process.js';
export {
  createServiceCredentials,
  serviceSigningKey,
  type ServiceCredentials,
} from './service-credentials.js';
export {
  loadTenantPolicies,
  redactSecretsOf,
  type TenantPolicies,
  type TenantSettings,
} from './tenant-policy.js';

export {
  LOCAL_SECRET_FILE,
  LOCAL_SERVICE_SECRET_FILE,
  loadOrCreateLocalSecret,
  readLocalSecret,
} from './local-secret.js';
