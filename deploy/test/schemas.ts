/**
 * Offline validation of Kubernetes objects against the OpenAPI schemas compiled into the
 * `kubernetes-models` package (and `@kubernetes-models/prometheus-operator` for ServiceMonitor),
 * in strict mode: besides the schema's own errors, every field the schema does not know is an error
 * (what `kubeconform -strict` does). Unknown fields are found by watching which properties the
 * compiled validator reads: it reads every property its schema declares, and every entry of maps.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

interface CompiledValidator {
  (data: unknown): boolean;
  errors?: { instancePath: string; message?: string; keyword: string; params: unknown }[] | null;
}

/** apiVersion/kind → [package, compiled schema name]. Kinds not listed are refused. */
const SCHEMAS: Readonly<Record<string, readonly [string, string]>> = {
  'v1/ConfigMap': ['kubernetes-models', 'IoK8sApiCoreV1ConfigMap'],
  'v1/Secret': ['kubernetes-models', 'IoK8sApiCoreV1Secret'],
  'v1/Service': ['kubernetes-models', 'IoK8sApiCoreV1Service'],
  'v1/ServiceAccount': ['kubernetes-models', 'IoK8sApiCoreV1ServiceAccount'],
  'v1/Namespace': ['kubernetes-models', 'IoK8sApiCoreV1Namespace'],
  'apps/v1/Deployment': ['kubernetes-models', 'IoK8sApiAppsV1Deployment'],
  'apps/v1/StatefulSet': ['kubernetes-models', 'IoK8sApiAppsV1StatefulSet'],
  'batch/v1/Job': ['kubernetes-models', 'IoK8sApiBatchV1Job'],
  'autoscaling/v2/HorizontalPodAutoscaler': [
    'kubernetes-models',
    'IoK8sApiAutoscalingV2HorizontalPodAutoscaler',
  ],
  'policy/v1/PodDisruptionBudget': ['kubernetes-models', 'IoK8sApiPolicyV1PodDisruptionBudget'],
  'networking.k8s.io/v1/NetworkPolicy': ['kubernetes-models', 'IoK8sApiNetworkingV1NetworkPolicy'],
  'discovery.k8s.io/v1/EndpointSlice': ['kubernetes-models', 'IoK8sApiDiscoveryV1EndpointSlice'],
  'monitoring.coreos.com/v1/ServiceMonitor': [
    '@kubernetes-models/prometheus-operator',
    'MonitoringCoreosComV1ServiceMonitor',
  ],
};

/** ObjectMeta, for kinds whose (CRD) schema leaves metadata open. */
const OBJECT_META: readonly [string, string] = [
  '@kubernetes-models/apimachinery',
  'IoK8sApimachineryPkgApisMetaV1ObjectMeta',
];

const cache = new Map<string, CompiledValidator>();

function validator([pkg, schema]: readonly [string, string]): CompiledValidator {
  const key = `${pkg}/${schema}`;
  let v = cache.get(key);
  if (v === undefined) {
    // The compiled schemas are not in the packages' exports; load them by path.
    const root = dirname(require.resolve(pkg));
    v = (require(join(root, '_schemas', `${schema}.js`)) as { validate: CompiledValidator }).validate;
    cache.set(key, v);
  }
  return v;
}

/** Wraps `value` so every own property read is recorded; `all` collects every property path. */
function watch(value: unknown, path: string, read: Set<string>, all: Set<string>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (!Array.isArray(value)) for (const key of Object.keys(value)) all.add(`${path}/${key}`);
  return new Proxy(value, {
    get(target, key, receiver) {
      const result: unknown = Reflect.get(target, key, receiver);
      if (typeof key === 'string' && Object.hasOwn(target, key)) {
        read.add(`${path}/${key}`);
        return watch(result, `${path}/${key}`, read, all);
      }
      return result;
    },
  });
}

function run(v: CompiledValidator, data: unknown, prefix = ''): string[] {
  const read = new Set<string>();
  const all = new Set<string>();
  if (!v(watch(data, '', read, all))) {
    return (v.errors ?? []).map(
      (e) => `${prefix}${e.instancePath || '/'}: ${e.keyword} ${JSON.stringify(e.params)}`,
    );
  }
  return [...all].filter((path) => !read.has(path)).map((path) => `${prefix}${path}: unknown field`);
}

/** Every schema error and unknown field of `object`; empty when it is valid. */
export function validateObject(
  object: { apiVersion: string; kind: string } & Record<string, unknown>,
): string[] {
  const schema = SCHEMAS[`${object.apiVersion}/${object.kind}`];
  if (schema === undefined) return [`no schema known for ${object.apiVersion}/${object.kind}`];
  if (schema[0] === 'kubernetes-models') return run(validator(schema), object);
  // CRD schemas leave metadata open: check it against ObjectMeta separately.
  const { metadata, ...rest } = object;
  return [...run(validator(schema), rest), ...run(validator(OBJECT_META), metadata, '/metadata')];
}
