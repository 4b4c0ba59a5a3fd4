import { EventEmitter, on } from 'node:events';
import { Code, ConnectError, type ServiceImpl } from '@connectrpc/connect';
import { type Health, HealthCheckResponse_ServingStatus as Status } from '@engram/contracts/grpc';

export { Status as ServingStatus };

/**
 * Serving status per service name, for `grpc.health.v1`. The empty name is the server as a whole.
 * A status change is published to every `Watch` stream.
 */
export class HealthRegistry {
  readonly #statuses = new Map<string, Status>();
  readonly #changes = new EventEmitter<{ change: [service: string, status: Status] }>();

  constructor() {
    this.#changes.setMaxListeners(0);
  }

  /** Sets the status of `service` ('' for the whole server) and notifies watchers. */
  set(service: string, status: Status): void {
    if (this.#statuses.get(service) === status) return;
    this.#statuses.set(service, status);
    this.#changes.emit('change', service, status);
  }

  /** Sets every known service, and the server, to `status` (e.g. NOT_SERVING while draining). */
  setAll(status: Status): void {
    for (const service of [...this.#statuses.keys()]) this.set(service, status);
  }

  /** The status of a registered service, or undefined if the name is unknown. */
  get(service: string): Status | undefined {
    return this.#statuses.get(service);
  }

  /** All registered services and their statuses. */
  entries(): ReadonlyMap<string, Status> {
    return this.#statuses;
  }

  /**
   * Status changes of one service until `signal` aborts. Listening starts when this is called,
   * not when iteration starts.
   */
  changes(service: string, signal: AbortSignal): AsyncIterator<Status> {
    const events = on(this.#changes, 'change', { signal }) as AsyncIterableIterator<[string, Status]>;
    return {
      async next() {
        for (;;) {
          const event = await events.next();
          if (event.done === true) return { done: true, value: undefined };
          const [name, status] = event.value;
          if (name === service) return { done: false, value: status };
        }
      },
      async return() {
        await events.return?.();
        return { done: true, value: undefined };
      },
    };
  }
}

/** `grpc.health.v1.Health`: Check, Watch and List over a registry. Public (no authentication). */
export function createHealthService(registry: HealthRegistry): ServiceImpl<typeof Health> {
  return {
    check(request) {
      const status = registry.get(request.service);
      // NOT_FOUND for an unknown service is what the health protocol specifies.
      if (status === undefined) throw new ConnectError(`unknown service "${request.service}"`, Code.NotFound);
      return { status };
    },
    async *watch(request, context) {
      // Subscribe before reporting the current status, so no change in between is lost.
      const changes = registry.changes(request.service, context.signal);
      const first = changes.next();
      // If the client leaves after the first message, `first` rejects unobserved on abort.
      first.catch(() => undefined);
      // Per the health protocol an unknown service is reported as SERVICE_UNKNOWN, not an error,
      // and the stream stays open in case the service is registered later.
      yield { status: registry.get(request.service) ?? Status.SERVICE_UNKNOWN };
      try {
        for (let next = await first; next.done !== true; next = await changes.next()) {
          yield { status: next.value };
        }
      } catch (error) {
        // The deadline or the client ended the watch: surface the signal's reason (a ConnectError
        // with DEADLINE_EXCEEDED or CANCELED), not the AbortError from events.on().
        if (context.signal.aborted) throw context.signal.reason;
        throw error;
      } finally {
        await changes.return?.();
      }
    },
    list() {
      return {
        statuses: Object.fromEntries(
          [...registry.entries()].map(([service, status]) => [service, { status }]),
        ),
      };
    },
  };
}
