// The Kubernetes manifests, checked without a cluster: every overlay renders (deploy/k8s/render.ts,
// the Kustomize subset we use), every object validates against the Kubernetes schemas in strict
// mode, and the invariants of docs/deployment.md hold.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { type KObject, render } from '../k8s/render.js';
import {
  allowed,
  type Container,
  type Endpoint,
  type LabelSelector,
  type NetworkPolicySpec,
  ofKind,
  selectorMatches,
  workloads,
} from './k8s-model.js';
import { validateObject } from './schemas.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const k8s = join(root, 'deploy', 'k8s');

const SERVICES = ['governance', 'ingestion', 'retrieval', 'context'] as const;
type ServiceName = (typeof SERVICES)[number];

/** DEFAULT_PORT of each service, read from its config.ts (the source of truth for ports). */
const PORTS = Object.fromEntries(
  SERVICES.map((s) => {
    const source = readFileSync(join(root, 'services', s, 'src', 'config.ts'), 'utf8');
    const match = /export const DEFAULT_PORT = (\d+);/.exec(source);
    if (match === null) throw new Error(`no DEFAULT_PORT in services/${s}/src/config.ts`);
    return [s, Number(match[1])];
  }),
) as Record<ServiceName, number>;

/** The gRPC service each process serves, from its proto package. */
const GRPC_NAMES: Record<ServiceName, string> = {
  governance: 'engram.governance.v1.GovernanceService',
  ingestion: 'engram.ingestion.v1.IngestionService',
  retrieval: 'engram.retrieval.v1.RetrievalService',
  context: 'engram.context.v1.ContextService',
};

/** The Secrets the manifests may reference (created by the operator, never in the repository). */
const SECRETS = new Set([
  'engram-jwt',
  'engram-service-jwt',
  'engram-mysql',
  'engram-mysql-migrate',
  'engram-llm',
  'engram-qdrant',
  'engram-mysql-server',
]);

const OVERLAYS = {
  dev: { namespace: 'engram-dev', qdrantReplicas: 1, mysql: 'statefulset' },
  prod: { namespace: 'engram', qdrantReplicas: 3, mysql: 'external' },
} as const;

const rendered = Object.fromEntries(
  Object.keys(OVERLAYS).map((name) => [name, render(join(k8s, 'overlays', name))]),
) as Record<keyof typeof OVERLAYS, KObject[]>;

function spec<T>(o: KObject): T {
  return o['spec'] as T;
}

function engramWorkload(objects: KObject[], service: string) {
  const w = workloads(objects).find((x) => x.kind === 'Deployment' && x.name === service);
  if (w === undefined) throw new Error(`no Deployment ${service}`);
  return w;
}

function mainContainer(objects: KObject[], service: ServiceName): Container {
  const c = engramWorkload(objects, service).spec.containers.find((x) => x.name === service);
  if (c === undefined) throw new Error(`no container ${service}`);
  return c;
}

function isEngramImage(image: string): boolean {
  return /(^|\/)engram(:|@|$)/.test(image);
}

describe('the Kustomize base', () => {
  it('renders on its own', () => {
    const objects = render(join(k8s, 'base'));
    expect(objects.length).toBeGreaterThan(20);
  });
});

describe.each(Object.entries(OVERLAYS))('overlay %s', (overlay, expected) => {
  const objects = rendered[overlay as keyof typeof OVERLAYS];
  const all = workloads(objects);
  const policies = ofKind(objects, 'NetworkPolicy').map((p) => spec<NetworkPolicySpec>(p));

  it('validates every object against the Kubernetes schemas (unknown fields rejected)', () => {
    const problems = objects.flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}${e}`));
    expect(problems).toEqual([]);
  });

  it('puts every object in the overlay namespace, each name once per kind', () => {
    for (const o of objects) expect(o.metadata.namespace).toBe(expected.namespace);
    const ids = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('has a Deployment, Service, HPA and PDB for every service, on its DEFAULT_PORT', () => {
    for (const s of SERVICES) {
      const w = engramWorkload(objects, s);
      expect(w.labels).toMatchObject({
        'app.kubernetes.io/name': 'engram',
        'app.kubernetes.io/component': s,
      });
      const c = mainContainer(objects, s);
      expect(c.args).toEqual([s]);
      expect(c.ports).toEqual(
        expect.arrayContaining([
          { name: 'grpc', containerPort: PORTS[s], protocol: 'TCP' },
          { name: 'metrics', containerPort: 9464, protocol: 'TCP' },
        ]),
      );
      expect(c.env).toEqual(expect.arrayContaining([{ name: 'ENGRAM_PORT', value: String(PORTS[s]) }]));
      expect((w.object['spec'] as Record<string, unknown>)['replicas']).toBeUndefined(); // the HPA owns it

      const svc = ofKind<{
        spec: {
          selector?: Record<string, string>;
          ports: { name: string; port: number; targetPort: string | number }[];
        };
      }>(objects, 'Service').find((x) => x.metadata.name === s);
      expect(svc?.spec.ports).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'grpc', port: PORTS[s], targetPort: 'grpc' }),
          expect.objectContaining({ name: 'metrics', port: 9464, targetPort: 'metrics' }),
        ]),
      );

      const hpa = ofKind<{
        spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number };
      }>(objects, 'HorizontalPodAutoscaler').find(
        (x) => x.spec.scaleTargetRef.kind === 'Deployment' && x.spec.scaleTargetRef.name === s,
      );
      expect(hpa?.apiVersion).toBe('autoscaling/v2');
      expect(hpa!.spec.minReplicas).toBeGreaterThanOrEqual(1);
      expect(hpa!.spec.maxReplicas).toBeGreaterThanOrEqual(hpa!.spec.minReplicas);

      const pdb = ofKind<{ spec: { selector: LabelSelector } }>(objects, 'PodDisruptionBudget').find((x) =>
        selectorMatches(x.spec.selector, w.labels),
      );
      expect(pdb).toBeDefined();
    }
  });

  it('probes every service with native gRPC health: the server for liveness, the service for readiness', () => {
    for (const s of SERVICES) {
      const c = mainContainer(objects, s);
      expect(c.livenessProbe?.grpc).toEqual({ port: PORTS[s] });
      expect(c.startupProbe?.grpc).toEqual({ port: PORTS[s] });
      expect(c.readinessProbe?.grpc).toEqual({ port: PORTS[s], service: GRPC_NAMES[s] });
    }
  });

  it('gives every long-running container probes, and every container requests and limits', () => {
    for (const w of all) {
      for (const c of w.spec.containers) {
        if (w.kind !== 'Job') {
          expect({ [`${w.name}/${c.name}`]: [c.livenessProbe, c.readinessProbe].every(Boolean) }).toEqual({
            [`${w.name}/${c.name}`]: true,
          });
        }
      }
      for (const c of [...(w.spec.initContainers ?? []), ...w.spec.containers]) {
        for (const part of ['requests', 'limits'] as const) {
          for (const resource of ['cpu', 'memory']) {
            expect({ [`${w.name}/${c.name} ${part}.${resource}`]: c.resources?.[part]?.[resource] }).toEqual({
              [`${w.name}/${c.name} ${part}.${resource}`]: expect.any(String),
            });
          }
        }
      }
    }
  });

  it('runs every container non-root, read-only, without privilege escalation or capabilities, under RuntimeDefault seccomp', () => {
    for (const w of all) {
      const pod = w.spec.securityContext ?? {};
      for (const c of [...(w.spec.initContainers ?? []), ...w.spec.containers]) {
        const sc = c.securityContext ?? {};
        const id = `${w.name}/${c.name}`;
        expect({ id, runAsNonRoot: sc.runAsNonRoot ?? pod.runAsNonRoot }).toEqual({ id, runAsNonRoot: true });
        expect({ id, uid: sc.runAsUser ?? pod.runAsUser }).toEqual({ id, uid: expect.any(Number) });
        expect(sc.runAsUser ?? pod.runAsUser).not.toBe(0);
        expect({ id, escalation: sc.allowPrivilegeEscalation }).toEqual({ id, escalation: false });
        expect({ id, readOnly: sc.readOnlyRootFilesystem }).toEqual({ id, readOnly: true });
        expect({ id, drop: sc.capabilities?.drop }).toEqual({ id, drop: ['ALL'] });
        expect({ id, add: sc.capabilities?.add }).toEqual({ id, add: undefined });
        expect({ id, privileged: sc.privileged }).toEqual({ id, privileged: undefined });
        expect({ id, seccomp: (sc.seccompProfile ?? pod.seccompProfile)?.type }).toEqual({
          id,
          seccomp: 'RuntimeDefault',
        });
        // A read-only root needs a writable /tmp.
        const tmp = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
        const volume = w.spec.volumes?.find((v) => v.name === tmp?.name);
        expect({ id, tmp: volume?.['emptyDir'] }).toEqual({ id, tmp: expect.any(Object) });
      }
    }
  });

  it('pins every image: no latest, a version tag or a digest', () => {
    for (const w of all) {
      for (const c of [...(w.spec.initContainers ?? []), ...w.spec.containers]) {
        expect(c.image).not.toMatch(/:latest(@|$)/);
        expect(c.image).toMatch(/(:v?\d+\.\d+\.\d+[\w.-]*)(@sha256:[0-9a-f]{64})?$|@sha256:[0-9a-f]{64}$/);
      }
    }
    const engram = all.flatMap((w) => w.spec.containers.map((c) => c.image)).filter(isEngramImage);
    expect(new Set(engram).size).toBe(1); // one image, one version, everywhere
  });

  it('selects the pods of a Deployment or StatefulSet with every Service, on ports those pods declare', () => {
    const services = ofKind<{
      spec: { selector?: Record<string, string>; ports: { port: number; targetPort?: number | string }[] };
    }>(objects, 'Service');
    for (const svc of services) {
      if (svc.spec.selector === undefined) {
        // An external endpoint: its EndpointSlice names it.
        const slices = ofKind<{
          metadata: { labels?: Record<string, string> };
          endpoints: { addresses: string[] }[];
        }>(objects, 'EndpointSlice').filter(
          (e) => e.metadata.labels?.['kubernetes.io/service-name'] === svc.metadata.name,
        );
        expect({ service: svc.metadata.name, slices: slices.length }).toEqual({
          service: svc.metadata.name,
          slices: 1,
        });
        continue;
      }
      const selected = all.filter(
        (w) => w.kind !== 'Job' && selectorMatches({ matchLabels: svc.spec.selector }, w.labels),
      );
      expect({ service: svc.metadata.name, selected: selected.length }).toEqual({
        service: svc.metadata.name,
        selected: 1,
      });
      const ports = selected[0]!.spec.containers.flatMap((c) => c.ports ?? []);
      for (const p of svc.spec.ports) {
        const target = p.targetPort ?? p.port;
        const found = ports.some((cp) =>
          typeof target === 'string' ? cp.name === target : cp.containerPort === target,
        );
        expect({ service: svc.metadata.name, target, found }).toEqual({
          service: svc.metadata.name,
          target,
          found: true,
        });
      }
    }
    // Every workload's selector matches its own template.
    for (const w of all.filter((x) => x.kind !== 'Job')) {
      const selector = (w.object['spec'] as { selector: LabelSelector }).selector;
      expect(selectorMatches(selector, w.labels)).toBe(true);
    }
  });

  it('configures from the ConfigMap and takes credentials from Secrets only, with no Secret in the manifests', () => {
    expect(ofKind(objects, 'Secret')).toEqual([]);
    const configMaps = ofKind<{ data?: Record<string, string> }>(objects, 'ConfigMap');
    // engram-config, and in dev the MySQL StatefulSet's user script.
    expect(configMaps.map((c) => c.metadata.name).sort()).toEqual([
      expect.stringMatching(/^engram-config-[a-z0-9]{10}$/),
      ...(expected.mysql === 'statefulset' ? ['mysql-init'] : []),
    ]);
    const engramConfig = configMaps.find((c) => c.metadata.name.startsWith('engram-config-'))!;
    const data = engramConfig.data ?? {};
    for (const [key, value] of Object.entries(data)) {
      // Credentials are never values here: only paths to files mounted from Secrets.
      if (/SECRET|PASSWORD|API_KEY|PRIVATE_KEY/.test(key)) {
        expect({
          key,
          ok: key.endsWith('_FILE') && (value === '' || value.startsWith('/var/run/secrets/')),
        }).toEqual({
          key,
          ok: true,
        });
      }
    }
    expect(data['ENGRAM_LLM_API_KEY_FILE']).toBe('/var/run/secrets/engram/llm/api-key');
    for (const s of SERVICES) {
      const variable = `ENGRAM_${s.toUpperCase()}_URL`;
      expect(data[variable]).toBe(`http://${s}:${PORTS[s]}`);
    }
    expect(data['QDRANT_URL']).toBe('http://qdrant:6333');
    expect(data['ENGRAM_METRICS_PORT']).toBe('9464'); // the `metrics` container port

    for (const w of all) {
      for (const c of [...(w.spec.initContainers ?? []), ...w.spec.containers]) {
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.['secretKeyRef'];
          if (ref !== undefined) expect(SECRETS).toContain(ref.name);
          const mountedFile = e.name.endsWith('_FILE') && e.value?.startsWith('/var/run/secrets/') === true;
          if (/SECRET|PASSWORD|API_KEY|MYSQL_URL/.test(e.name) && e.value !== undefined && !mountedFile) {
            throw new Error(`${w.name}/${c.name}: ${e.name} has a literal value`);
          }
        }
        if (isEngramImage(c.image)) {
          expect(c.envFrom).toEqual([{ configMapRef: { name: engramConfig.metadata.name } }]);
          // The migration Job connects as the schema owner; everything else as the data-only user.
          const database = w.name === 'engram-migrate' ? 'engram-mysql-migrate' : 'engram-mysql';
          expect(c.env).toEqual(
            expect.arrayContaining([
              { name: 'MYSQL_URL', valueFrom: { secretKeyRef: { name: database, key: 'url' } } },
            ]),
          );
        }
      }
      for (const v of w.spec.volumes ?? []) {
        const secret = v['secret'] as { secretName: string } | undefined;
        if (secret !== undefined) expect(SECRETS).toContain(secret.secretName);
      }
    }
    for (const s of SERVICES) {
      const w = engramWorkload(objects, s);
      const mounts = mainContainer(objects, s).volumeMounts ?? [];
      expect(mounts).toEqual(
        expect.arrayContaining([{ name: 'jwt', mountPath: '/var/run/secrets/engram/jwt', readOnly: true }]),
      );
      const llm = w.spec.volumes?.find((v) => v.name === 'llm');
      if (s === 'retrieval') expect(llm).toBeUndefined();
      else expect(llm?.['secret']).toMatchObject({ secretName: 'engram-llm', optional: true });
    }
  });

  it('mounts the service key only where background calls are made or received, never in retrieval', () => {
    // governance's forget worker → ingestion/context EraseSubject; ingestion's hand-off →
    // governance ExtractMemories (which reads ingestion with the same token); context's
    // compaction → ingestion MarkMessagesCompacted. Retrieval neither mints nor receives them.
    const data =
      ofKind<{ data?: Record<string, string> }>(objects, 'ConfigMap').find((c) =>
        c.metadata.name.startsWith('engram-config-'),
      )?.data ?? {};
    expect(Object.keys(data).filter((k) => k.startsWith('ENGRAM_SERVICE_'))).toEqual([]);
    for (const s of SERVICES) {
      const w = engramWorkload(objects, s);
      const c = mainContainer(objects, s);
      const volume = w.spec.volumes?.find((v) => v.name === 'service-jwt');
      const mount = (c.volumeMounts ?? []).find((m) => m.name === 'service-jwt');
      const variables = (c.env ?? []).filter((e) => e.name.startsWith('ENGRAM_SERVICE_'));
      if (s === 'retrieval') {
        expect([volume, mount, variables]).toEqual([undefined, undefined, []]);
        continue;
      }
      expect(volume?.['secret']).toMatchObject({ secretName: 'engram-service-jwt' });
      expect(volume?.['secret']).not.toHaveProperty('optional', true);
      expect(mount).toEqual({
        name: 'service-jwt',
        mountPath: '/var/run/secrets/engram/service-jwt',
        readOnly: true,
      });
      expect(variables).toEqual([
        { name: 'ENGRAM_SERVICE_JWT_SECRET_FILE', value: '/var/run/secrets/engram/service-jwt/secret' },
      ]);
    }
  });

  it('checks the issuer and audience of every token', () => {
    const data =
      ofKind<{ data?: Record<string, string> }>(objects, 'ConfigMap').find((c) =>
        c.metadata.name.startsWith('engram-config-'),
      )?.data ?? {};
    expect(data['ENGRAM_JWT_ISSUER']).toMatch(/^https:\/\/\S+$/);
    expect(data['ENGRAM_JWT_AUDIENCE']).toMatch(/^\S+$/);
    expect(data['ENGRAM_AUTH_MODE']).not.toBe('insecure');
  });

  it('requires the Qdrant API key in Qdrant and in retrieval (no optional Secret)', () => {
    const apiKeyRefs = all.flatMap((w) =>
      w.spec.containers.flatMap((c) =>
        (c.env ?? [])
          .filter((e) => e.name === 'QDRANT_API_KEY' || e.name === 'QDRANT__SERVICE__API_KEY')
          .map((e) => [w.name, e.name, e.valueFrom?.['secretKeyRef']]),
      ),
    );
    expect(apiKeyRefs.sort()).toEqual([
      ['qdrant', 'QDRANT__SERVICE__API_KEY', { name: 'engram-qdrant', key: 'api-key' }],
      ['retrieval', 'QDRANT_API_KEY', { name: 'engram-qdrant', key: 'api-key' }],
    ]);
  });

  it('runs the migration Job before the services: the Job migrates, every service waits for it', () => {
    const job = all.find((w) => w.kind === 'Job' && w.name === 'engram-migrate');
    expect(job?.spec.containers.map((c) => c.args)).toEqual([['migrate']]);
    expect(
      (job?.object['spec'] as { template: { spec: { restartPolicy: string } } }).template.spec.restartPolicy,
    ).toBe('OnFailure');
    for (const s of SERVICES) {
      const init = engramWorkload(objects, s).spec.initContainers ?? [];
      expect(init.map((c) => [c.name, c.args])).toEqual([['wait-for-migrations', ['wait-for-migrations']]]);
      expect(init[0]!.image).toBe(mainContainer(objects, s).image);
    }
  });

  it(`runs Qdrant as a StatefulSet with persistent volumes (${expected.qdrantReplicas} replica(s))`, () => {
    const qdrant = ofKind<{
      spec: {
        replicas: number;
        volumeClaimTemplates: { metadata: { name: string } }[];
        template: { spec: { containers: Container[] } };
      };
    }>(objects, 'StatefulSet').find((x) => x.metadata.name === 'qdrant');
    expect(qdrant?.spec.replicas).toBe(expected.qdrantReplicas);
    expect(qdrant!.spec.volumeClaimTemplates.map((v) => v.metadata.name)).toEqual(['storage']);
    const c = qdrant!.spec.template.spec.containers[0]!;
    expect(c.image).toMatch(/^qdrant\/qdrant:v\d+\.\d+\.\d+/);
    expect(c.volumeMounts).toEqual(
      expect.arrayContaining([{ name: 'storage', mountPath: '/qdrant/storage' }]),
    );
    const cluster = c.env?.find((e) => e.name === 'QDRANT__CLUSTER__ENABLED')?.value;
    expect(cluster).toBe(expected.qdrantReplicas > 1 ? 'true' : undefined);
  });

  it(`provides MySQL as ${expected.mysql === 'statefulset' ? 'a StatefulSet' : 'an external endpoint'}`, () => {
    const statefulSet = ofKind(objects, 'StatefulSet').find((x) => x.metadata.name === 'mysql');
    const service = ofKind<{ spec: { selector?: unknown } }>(objects, 'Service').find(
      (x) => x.metadata.name === 'mysql',
    );
    expect(service).toBeDefined();
    if (expected.mysql === 'statefulset') {
      expect(statefulSet).toBeDefined();
      expect(service!.spec.selector).toBeDefined();
    } else {
      expect(statefulSet).toBeUndefined();
      expect(service!.spec.selector).toBeUndefined();
    }
  });

  it('scrapes every service with a ServiceMonitor on the metrics port', () => {
    const monitors = ofKind<{ spec: { selector: LabelSelector; endpoints: { port: string }[] } }>(
      objects,
      'ServiceMonitor',
    );
    expect(monitors).toHaveLength(1);
    const m = monitors[0]!;
    expect(m.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(m.spec.endpoints.map((e) => e.port)).toEqual(['metrics']);
    const services = ofKind<{
      metadata: { labels?: Record<string, string> };
      spec: { ports: { name: string }[] };
    }>(objects, 'Service').filter((x) => selectorMatches(m.spec.selector, x.metadata.labels ?? {}));
    expect(services.map((x) => x.metadata.name).sort()).toEqual([...SERVICES].sort());
    for (const svc of services) expect(svc.spec.ports.map((p) => p.name)).toContain('metrics');
  });

  describe('NetworkPolicies', () => {
    const ns = expected.namespace;
    const nsLabels = { 'kubernetes.io/metadata.name': ns };
    const pod = (w: (typeof all)[number], name = w.name): Endpoint => ({
      kind: 'pod',
      name,
      namespace: ns,
      namespaceLabels: nsLabels,
      labels: w.labels,
      ports: w.spec.containers.flatMap((c) => c.ports ?? []),
    });
    const byName = (name: string) => {
      const w = all.find((x) => x.name === name);
      if (w === undefined) throw new Error(`no workload ${name}`);
      return w;
    };
    const mysqlEndpoint: Endpoint =
      expected.mysql === 'statefulset'
        ? pod(byName('mysql'))
        : {
            kind: 'address',
            name: 'mysql',
            ip: ofKind<{ endpoints: { addresses: string[] }[] }>(objects, 'EndpointSlice')[0]!.endpoints[0]!
              .addresses[0]!,
          };
    const client: Endpoint = {
      kind: 'pod',
      name: 'client',
      namespace: 'engram-clients',
      namespaceLabels: { 'kubernetes.io/metadata.name': 'engram-clients' },
      labels: { 'engram-client': 'true' },
      ports: [],
    };
    // The client label is not enough elsewhere, nor a namespace label anyone with namespace rights
    // can add; an unlabelled pod of the client namespace gets nothing either.
    const labelledElsewhere: Endpoint = {
      kind: 'pod',
      name: 'labelled-elsewhere',
      namespace: 'apps',
      namespaceLabels: { 'kubernetes.io/metadata.name': 'apps', 'engram-client': 'true' },
      labels: { 'engram-client': 'true' },
      ports: [],
    };
    const unlabelledClient: Endpoint = {
      ...client,
      name: 'unlabelled-client',
      labels: { app: 'something-else' },
    };
    const prometheus: Endpoint = {
      kind: 'pod',
      name: 'prometheus',
      namespace: 'monitoring',
      namespaceLabels: { 'kubernetes.io/metadata.name': 'monitoring' },
      labels: { 'app.kubernetes.io/name': 'prometheus' },
      ports: [],
    };
    const stranger: Endpoint = {
      kind: 'pod',
      name: 'stranger',
      namespace: ns,
      namespaceLabels: nsLabels,
      labels: { app: 'something-else' },
      ports: [],
    };
    const engramPods = [...SERVICES.map((s) => pod(byName(s))), pod(byName('engram-migrate'), 'migrate')];
    const qdrant = pod(byName('qdrant'));
    const sources = [
      ...engramPods,
      qdrant,
      ...(mysqlEndpoint.kind === 'pod' ? [mysqlEndpoint] : []),
      client,
      labelledElsewhere,
      unlabelledClient,
      prometheus,
      stranger,
    ];
    const destinations: [Endpoint, number[]][] = [
      ...SERVICES.map((s): [Endpoint, number[]] => [pod(byName(s)), [PORTS[s], 9464]]),
      [qdrant, [6333, 6335]],
      [mysqlEndpoint, [3306]],
    ];

    it('exist for every service and deny by default', () => {
      const deny = policies.find(
        (p) => Object.keys(p.podSelector).length === 0 && p.ingress === undefined && p.egress === undefined,
      );
      expect(deny?.policyTypes).toEqual(['Ingress', 'Egress']);
      for (const s of SERVICES) {
        const w = byName(s);
        const own = policies.filter(
          (p) =>
            Object.keys(p.podSelector).length > 0 &&
            selectorMatches(p.podSelector, w.labels) &&
            p.ingress !== undefined,
        );
        expect({ s, policies: own.length }).toEqual({ s, policies: 1 });
      }
    });

    it('let exactly the calls of blueprint §2 through', () => {
      const actual: string[] = [];
      for (const from of sources) {
        for (const [to, ports] of destinations) {
          // Traffic between two parties outside this namespace is not ours to police.
          if (to.kind === 'address' && from.kind === 'pod' && from.namespace !== ns) continue;
          for (const port of ports) {
            if (allowed(policies, ns, from, to, port)) actual.push(`${from.name} -> ${to.name}:${port}`);
          }
        }
      }
      const expectedCalls = [
        ...SERVICES.map((s) => `client -> ${s}:${PORTS[s]}`),
        ...SERVICES.map((s) => `prometheus -> ${s}:9464`),
        `ingestion -> governance:${PORTS.governance}`,
        `governance -> ingestion:${PORTS.ingestion}`,
        `governance -> context:${PORTS.context}`,
        `context -> ingestion:${PORTS.ingestion}`,
        `context -> governance:${PORTS.governance}`,
        `context -> retrieval:${PORTS.retrieval}`,
        'retrieval -> qdrant:6333',
        'qdrant -> qdrant:6333',
        'qdrant -> qdrant:6335',
        ...[...SERVICES, 'migrate'].map((s) => `${s} -> mysql:3306`),
      ];
      expect(actual.sort()).toEqual(expectedCalls.sort());
    });

    it('let every pod resolve names, and no pod reach outside the cluster', () => {
      const dns: Endpoint = {
        kind: 'pod',
        name: 'kube-dns',
        namespace: 'kube-system',
        namespaceLabels: { 'kubernetes.io/metadata.name': 'kube-system' },
        labels: { 'k8s-app': 'kube-dns' },
        ports: [],
      };
      for (const from of [...engramPods, qdrant])
        expect(allowed(policies, ns, from, dns, 53, 'UDP')).toBe(true);
      const api: Endpoint = { kind: 'address', name: 'model-api', ip: '203.0.113.10' };
      const reaching = [...engramPods, qdrant]
        .filter((from) => allowed(policies, ns, from, api, 443))
        .map((p) => p.name);
      // A model API is the overlay's to allow, by its address (docs/deployment.md).
      expect(reaching).toEqual([]);
      const internal: Endpoint = { kind: 'address', name: 'internal', ip: '10.1.2.3' };
      expect(engramPods.filter((from) => allowed(policies, ns, from, internal, 443))).toEqual([]);
    });
  });
});

describe('the schema validation itself', () => {
  const deployment = rendered.dev.find((o) => o.kind === 'Deployment')!;

  it('accepts a rendered Deployment', () => {
    expect(validateObject(deployment)).toEqual([]);
  });

  it('rejects an unknown field, a wrong type and a missing required field', () => {
    const typo = structuredClone(deployment);
    const spec = typo['spec'] as { template: { spec: { containers: Record<string, unknown>[] } } };
    (spec.template.spec.containers[0]!['readinessProbe'] as { grpc: Record<string, unknown> }).grpc[
      'servce'
    ] = 'x';
    expect(validateObject(typo)).toEqual([
      expect.stringContaining('readinessProbe/grpc/servce: unknown field'),
    ]);

    const wrong = structuredClone(deployment);
    (
      wrong['spec'] as { template: { spec: { containers: Record<string, unknown>[] } } }
    ).template.spec.containers[0]!['ports'] = 'grpc';
    expect(validateObject(wrong).join('\n')).toContain('/ports');

    const missing = structuredClone(deployment);
    delete (missing['spec'] as Record<string, unknown>)['selector'];
    expect(validateObject(missing).join('\n')).toContain('selector');
  });

  it('checks a ServiceMonitor against its CRD schema and its metadata against ObjectMeta', () => {
    const monitor = structuredClone(rendered.prod.find((o) => o.kind === 'ServiceMonitor')!);
    expect(validateObject(monitor)).toEqual([]);
    (monitor['spec'] as { endpoints: Record<string, unknown>[] }).endpoints[0]!['prot'] = 'metrics';
    (monitor.metadata as Record<string, unknown>)['label'] = {};
    expect(validateObject(monitor).sort()).toEqual([
      '/metadata/label: unknown field',
      '/spec/endpoints/0/prot: unknown field',
    ]);
  });

  it('refuses kinds it has no schema for', () => {
    expect(validateObject({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual(
      ['no schema known for example.com/v1/Widget'],
    );
  });
});
