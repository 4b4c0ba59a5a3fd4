import type { DescService } from '@bufbuild/protobuf';
import type { Client, ServiceImpl, Transport } from '@connectrpc/connect';
import type { Logger, ServiceMetrics } from '@engram/telemetry';
import { createNetworkTransport, serviceClient } from './clients.js';
import type { HttpRoute } from './http-routes.js';
import { registration, type ServiceRegistration } from './server.js';
import type { ServiceCredentials } from './service-credentials.js';
import type { Worker } from './worker.js';

/**
 * One service package as a process mounts it: the full implementation of its gRPC service (typed
 * against the whole `ServiceImpl`, so a missing RPC is a compile error) and the background workers
 * it needs. A process composes modules: it registers their services, starts their workers in order
 * once it serves, and at shutdown stops them in reverse (each module's workers last to first, then
 * its `stop`).
 */
export interface ServiceModule<S extends DescService = DescService> {
  readonly descriptor: S;
  readonly service: ServiceImpl<S>;
  readonly workers: readonly Worker[];
  /** Waits for work the handlers started outside any worker (extraction jobs in flight). */
  readonly stop?: () => Promise<void>;
  /** Plain HTTP routes the module serves beside its RPCs (context: the gateway's `/v1/` and `/mcp`). */
  readonly httpRoutes?: readonly HttpRoute[];
}

/** Binds a descriptor, its complete implementation and its workers into a {@link ServiceModule}. */
export function serviceModule<S extends DescService>(
  descriptor: S,
  service: ServiceImpl<S>,
  workers: readonly Worker[] = [],
  stop?: () => Promise<void>,
): ServiceModule<S> {
  return { descriptor, service, workers, ...(stop !== undefined ? { stop } : {}) };
}

/** What every module is built with, by its own process or by the all-in-one. */
export interface ModuleContext {
  readonly logger: Logger;
  /** Tokens for the module's own background calls to other services (`service` role). */
  readonly credentials: ServiceCredentials;
  /** The process's metrics: modules register their gauges here. */
  readonly metrics: ServiceMetrics;
  /** How to reach another Engram service: in-process in the all-in-one, over the network otherwise. */
  readonly transport: (service: DescService) => Transport;
}

/** What `serve` gives a process's modules, plus how they reach their peers. */
export function moduleContext(
  logger: Logger,
  serve: { readonly serviceCredentials: ServiceCredentials; readonly metrics: ServiceMetrics },
  transport: (service: DescService) => Transport,
): ModuleContext {
  return { logger, credentials: serve.serviceCredentials, metrics: serve.metrics, transport };
}

/** A client of a peer service through the module's transport. */
export function peerClient<S extends DescService>(context: ModuleContext, service: S): Client<S> {
  return serviceClient(service, context.transport(service));
}

/**
 * Network transports to peer services by their descriptors (`{ [GovernanceService.typeName]: url }`),
 * one per service, created on first use. A peer without a URL is a programming error.
 */
export function networkPeers(urls: Readonly<Record<string, string>>): (service: DescService) => Transport {
  const transports = new Map<string, Transport>();
  return (service) => {
    let transport = transports.get(service.typeName);
    if (transport === undefined) {
      const url = urls[service.typeName];
      if (url === undefined) throw new Error(`no URL configured for ${service.typeName}`);
      transport = createNetworkTransport(url);
      transports.set(service.typeName, transport);
    }
    return transport;
  };
}

/** The HTTP routes of composed modules. */
export function moduleHttpRoutes(modules: readonly ServiceModule[]): HttpRoute[] {
  return modules.flatMap((m) => m.httpRoutes ?? []);
}

/** The registrations of composed modules (what the server routes). */
export function moduleRegistrations(modules: readonly ServiceModule[]): ServiceRegistration[] {
  return modules.map((m) => registration(m.descriptor, m.service));
}

/** Starts every module's workers, in the order given. */
export function startModules(modules: readonly ServiceModule[]): void {
  for (const m of modules) for (const w of m.workers) w.start();
}

/** Stops modules in reverse: each module's workers last to first, then its `stop`. */
export async function stopModules(modules: readonly ServiceModule[]): Promise<void> {
  for (const m of [...modules].reverse()) {
    for (const w of [...m.workers].reverse()) await w.stop();
    await m.stop?.();
  }
}
