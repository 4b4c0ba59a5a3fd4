/**
 * A small Kustomize renderer for CI without a cluster or a kustomize binary (no npm package renders
 * Kustomize without downloading one). It implements only the subset our manifests use, with
 * kustomize's semantics, and refuses every other field, so a manifest that uses more fails loudly
 * here instead of rendering differently from `kubectl apply -k`:
 *
 * - `resources`: YAML files (one or more documents) and directories holding a kustomization.yaml;
 * - `namespace`: set on every namespaced object;
 * - `labels`: `pairs` added to every object's metadata.labels, to pod templates with
 *   `includeTemplates: true` and to selectors with `includeSelectors: true`;
 * - `images`: `name` → `newName`, `newTag`, `digest` on every container and init container;
 * - `configMapGenerator`: `literals`, `behavior` create or merge, and the content-hash name suffix
 *   (kustomize's algorithm) with every reference in pod specs renamed to it;
 * - `patches`: strategic merge patches (`path` or inline `patch`, optional `target` by kind and
 *   name), with the merge keys of the Kubernetes fields we patch and `$patch: delete`.
 *
 * Usage: `node --import tsx deploy/k8s/render.ts deploy/k8s/overlays/prod` prints the multi-document
 * YAML that `kubectl kustomize` would print (up to object order).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';

export type KObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> } & Record<string, unknown>;
};

type Json = Record<string, unknown>;

const KUSTOMIZATION_FIELDS = new Set([
  'apiVersion',
  'kind',
  'resources',
  'namespace',
  'labels',
  'images',
  'configMapGenerator',
  'patches',
]);

/** Kinds that are not namespaced (the only ones `namespace` leaves alone). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
]);

/** Marks a generated ConfigMap with its name before the hash suffix (removed before output). */
const GENERATED = Symbol('generated');

export class RenderError extends Error {
  override readonly name = 'RenderError';
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Reads every YAML document of a file, failing on YAML errors and empty documents. */
export function readYamlDocuments(file: string): Json[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  const out: Json[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new RenderError(`${file}: ${doc.errors[0]?.message ?? 'YAML error'}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (!isObject(value)) throw new RenderError(`${file}: a document is not a mapping`);
    out.push(value);
  }
  return out;
}

function asKObject(value: Json, where: string): KObject {
  const meta = value['metadata'];
  if (typeof value['apiVersion'] !== 'string' || typeof value['kind'] !== 'string' || !isObject(meta)) {
    throw new RenderError(`${where}: not a Kubernetes object (apiVersion, kind, metadata)`);
  }
  if (typeof meta['name'] !== 'string') throw new RenderError(`${where}: metadata.name missing`);
  return value as KObject;
}

export function objectId(o: KObject): string {
  return `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

// ------------------------------------------------------------------------------------------------
// Strategic merge patch (the subset: maps merge, null deletes, keyed lists merge, others replace)

/** patchMergeKey of the list fields we patch, by field name (the Kubernetes API's values). */
function mergeKeyFor(field: string, items: unknown[], parentPath: string): string | undefined {
  switch (field) {
    case 'containers':
    case 'initContainers':
    case 'env':
    case 'volumes':
      return 'name';
    case 'volumeMounts':
      return 'mountPath';
    case 'ports':
      // Service ports merge on `port`, container ports on `containerPort`.
      return items.some((item) => isObject(item) && 'containerPort' in item) ||
        parentPath.includes('containers')
        ? 'containerPort'
        : 'port';
    default:
      return undefined;
  }
}

function keyOf(item: unknown, key: string): unknown {
  return isObject(item) ? item[key] : undefined;
}

export function strategicMerge(base: unknown, patch: unknown, path = ''): unknown {
  if (isObject(patch)) {
    if (patch['$patch'] === 'replace') {
      const { $patch: _drop, ...rest } = patch;
      return clone(rest);
    }
    if (!isObject(base)) return stripDirectives(patch);
    const out: Json = { ...base };
    for (const [key, value] of Object.entries(patch)) {
      if (key === '$patch') throw new RenderError(`${path}: unsupported $patch directive "${String(value)}"`);
      if (value === null) {
        // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- null deletes the field
        delete out[key];
      } else if (Array.isArray(value)) {
        out[key] = mergeList(key, out[key], value, `${path}.${key}`);
      } else {
        out[key] = strategicMerge(out[key], value, `${path}.${key}`);
      }
    }
    return out;
  }
  return clone(patch);
}

function stripDirectives(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.filter((v) => !(isObject(v) && v['$patch'] === 'delete')).map(stripDirectives);
  }
  if (isObject(value)) {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) if (k !== '$patch') out[k] = stripDirectives(v);
    return out;
  }
  return value;
}

function mergeList(field: string, base: unknown, patch: unknown[], path: string): unknown[] {
  const key = mergeKeyFor(field, patch, path);
  if (key === undefined || !Array.isArray(base)) return stripDirectives(patch) as unknown[];
  const out: unknown[] = base.map((item: unknown) => clone(item));
  for (const item of patch) {
    if (!isObject(item) || keyOf(item, key) === undefined) {
      throw new RenderError(`${path}: a patch item has no merge key "${key}"`);
    }
    const index = out.findIndex((existing) => keyOf(existing, key) === keyOf(item, key));
    if (item['$patch'] === 'delete') {
      if (index >= 0) out.splice(index, 1);
    } else if (index >= 0) {
      out[index] = strategicMerge(out[index], item, `${path}[${String(keyOf(item, key))}]`);
    } else {
      out.push(stripDirectives(item));
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Transformers

/** Pod specs inside a workload object, with the path of their template metadata. */
function podTemplates(o: KObject): { metadata: Json; spec: Json }[] {
  const spec = o['spec'];
  if (!isObject(spec)) return [];
  const templates: Json[] = [];
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(o.kind)) {
    if (isObject(spec['template'])) templates.push(spec['template']);
  } else if (o.kind === 'CronJob') {
    const jobTemplate = spec['jobTemplate'];
    if (isObject(jobTemplate) && isObject(jobTemplate['spec']) && isObject(jobTemplate['spec']['template'])) {
      templates.push(jobTemplate['spec']['template']);
    }
  }
  return templates.map((t) => {
    if (!isObject(t['metadata'])) t['metadata'] = {};
    if (!isObject(t['spec'])) t['spec'] = {};
    return { metadata: t['metadata'] as Json, spec: t['spec'] as Json };
  });
}

export function allContainers(podSpec: Json): Json[] {
  const list = (field: string) => (Array.isArray(podSpec[field]) ? (podSpec[field] as unknown[]) : []);
  return [...list('initContainers'), ...list('containers')].filter(isObject);
}

function addLabels(objects: KObject[], entry: Json): void {
  const pairs = entry['pairs'];
  if (!isObject(pairs)) throw new RenderError('labels: an entry without pairs');
  for (const key of Object.keys(entry)) {
    if (!['pairs', 'includeSelectors', 'includeTemplates'].includes(key)) {
      throw new RenderError(`labels: unsupported field ${key}`);
    }
  }
  const includeSelectors = entry['includeSelectors'] === true;
  const includeTemplates = entry['includeTemplates'] === true || includeSelectors;
  for (const o of objects) {
    o.metadata.labels = { ...o.metadata.labels, ...(pairs as Record<string, string>) };
    if (includeTemplates) {
      for (const t of podTemplates(o)) {
        t.metadata['labels'] = { ...(t.metadata['labels'] as Json | undefined), ...pairs };
      }
    }
    if (includeSelectors) {
      throw new RenderError('labels: includeSelectors is outside the supported subset');
    }
  }
}

interface ImageRule {
  name: string;
  newName?: string;
  newTag?: string;
  digest?: string;
}

/** The name part of an image reference (without tag and digest). */
export function imageName(image: string): string {
  const withoutDigest = image.split('@')[0] ?? image;
  const slash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  return colon > slash ? withoutDigest.slice(0, colon) : withoutDigest;
}

function applyImages(objects: KObject[], rules: ImageRule[]): void {
  for (const rule of rules) {
    for (const key of Object.keys(rule)) {
      if (!['name', 'newName', 'newTag', 'digest'].includes(key)) {
        throw new RenderError(`images: unsupported field ${key}`);
      }
    }
  }
  for (const o of objects) {
    for (const t of podTemplates(o)) {
      for (const c of allContainers(t.spec)) {
        const image = c['image'];
        if (typeof image !== 'string') continue;
        const rule = rules.find((r) => r.name === imageName(image));
        if (rule === undefined) continue;
        const [beforeDigest = image, oldDigest] = image.split('@');
        const oldTag =
          beforeDigest.length > imageName(image).length
            ? beforeDigest.slice(imageName(image).length + 1)
            : undefined;
        const name = rule.newName ?? imageName(image);
        const tag = rule.newTag ?? (rule.digest === undefined ? oldTag : undefined);
        const digest = rule.digest ?? (rule.newTag === undefined ? oldDigest : undefined);
        c['image'] =
          `${name}${tag === undefined ? '' : `:${tag}`}${digest === undefined ? '' : `@${digest}`}`;
      }
    }
  }
}

/** kustomize's ConfigMap name hash: sha256 of the JSON {data, kind, name}, 10 hex chars, re-encoded. */
export function configMapHash(name: string, data: Record<string, string>): string {
  const sorted = Object.fromEntries(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const json = JSON.stringify({ data: sorted, kind: 'ConfigMap', name })
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026');
  const hex = createHash('sha256').update(json).digest('hex').slice(0, 10);
  return hex.replace(/[013ae]/g, (ch) => ({ '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' })[ch] ?? ch);
}

function literalsToData(literals: unknown, where: string): Record<string, string> {
  if (!Array.isArray(literals)) throw new RenderError(`${where}: literals must be a list`);
  const data: Record<string, string> = {};
  for (const literal of literals) {
    if (typeof literal !== 'string' || !literal.includes('=')) {
      throw new RenderError(`${where}: a literal is not KEY=VALUE: ${String(literal)}`);
    }
    const at = literal.indexOf('=');
    data[literal.slice(0, at)] = literal.slice(at + 1);
  }
  return data;
}

function generateConfigMaps(objects: KObject[], generators: unknown, namespace: string | undefined): void {
  if (!Array.isArray(generators)) throw new RenderError('configMapGenerator must be a list');
  for (const g of generators) {
    if (!isObject(g) || typeof g['name'] !== 'string')
      throw new RenderError('configMapGenerator: entry without name');
    for (const key of Object.keys(g)) {
      if (!['name', 'literals', 'behavior'].includes(key)) {
        throw new RenderError(`configMapGenerator ${g['name']}: unsupported field ${key}`);
      }
    }
    const name = g['name'];
    const data = literalsToData(g['literals'] ?? [], `configMapGenerator ${name}`);
    const behavior = g['behavior'] ?? 'create';
    const existing = objects.find(
      (o) => o.kind === 'ConfigMap' && (o as unknown as Record<symbol, unknown>)[GENERATED] === name,
    );
    if (behavior === 'create') {
      if (existing !== undefined) throw new RenderError(`configMapGenerator ${name}: already generated`);
      const cm = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
        data,
      } as KObject;
      (cm as unknown as Record<symbol, unknown>)[GENERATED] = name;
      objects.push(cm);
    } else if (behavior === 'merge') {
      if (existing === undefined) throw new RenderError(`configMapGenerator ${name}: nothing to merge into`);
      existing['data'] = { ...(existing['data'] as Json | undefined), ...data };
    } else {
      throw new RenderError(`configMapGenerator ${name}: unsupported behavior ${JSON.stringify(behavior)}`);
    }
  }
}

/** Appends the hash suffix to generated ConfigMaps and renames every reference to them. */
function finishGenerated(objects: KObject[]): void {
  const renames = new Map<string, string>();
  for (const o of objects) {
    const original = (o as unknown as Record<symbol, unknown>)[GENERATED];
    if (typeof original !== 'string') continue;
    const hashed = `${original}-${configMapHash(original, o['data'] as Record<string, string>)}`;
    renames.set(original, hashed);
    o.metadata.name = hashed;
    // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- drop the internal marker
    delete (o as unknown as Record<symbol, unknown>)[GENERATED];
  }
  const rename = (holder: unknown, field = 'name') => {
    if (isObject(holder) && typeof holder[field] === 'string') {
      const to = renames.get(holder[field]);
      if (to !== undefined) holder[field] = to;
    }
  };
  for (const o of objects) {
    for (const t of podTemplates(o)) {
      for (const c of allContainers(t.spec)) {
        for (const from of (c['envFrom'] as unknown[] | undefined) ?? []) {
          if (isObject(from)) rename(from['configMapRef']);
        }
        for (const env of (c['env'] as unknown[] | undefined) ?? []) {
          if (isObject(env) && isObject(env['valueFrom'])) rename(env['valueFrom']['configMapKeyRef']);
        }
      }
      for (const volume of (t.spec['volumes'] as unknown[] | undefined) ?? []) {
        if (!isObject(volume)) continue;
        rename(volume['configMap']);
        const projected = volume['projected'];
        if (isObject(projected)) {
          for (const source of (projected['sources'] as unknown[] | undefined) ?? []) {
            if (isObject(source)) rename(source['configMap']);
          }
        }
      }
    }
  }
}

function applyPatch(objects: KObject[], patch: Json, target: Json | undefined, where: string): void {
  if (target !== undefined) {
    for (const key of Object.keys(target)) {
      if (!['kind', 'name'].includes(key)) throw new RenderError(`${where}: unsupported target field ${key}`);
    }
  }
  const kind = target?.['kind'] ?? patch['kind'];
  const name = target === undefined ? (patch['metadata'] as Json | undefined)?.['name'] : target['name'];
  const matches = objects.filter(
    (o) =>
      o.kind === kind &&
      (name === undefined ||
        o.metadata.name === name ||
        (o as unknown as Record<symbol, unknown>)[GENERATED] === name),
  );
  if (matches.length === 0) throw new RenderError(`${where}: no ${String(kind)}/${String(name)} to patch`);
  for (const o of matches) {
    const body = clone(patch);
    // With a target, the patch's own identity is not used (kustomize behaviour).
    if (target !== undefined && isObject(body['metadata'])) {
      const { name: _name, ...meta } = body['metadata'];
      body['metadata'] = meta;
    }
    const merged = strategicMerge(o, body, objectId(o)) as KObject;
    const marker = (o as unknown as Record<symbol, unknown>)[GENERATED];
    for (const key of Object.keys(o)) {
      // eslint-disable-next-line @typescript-eslint/no-dynamic-delete -- replace in place
      delete o[key];
    }
    Object.assign(o, merged);
    if (marker !== undefined) (o as unknown as Record<symbol, unknown>)[GENERATED] = marker;
  }
}

// ------------------------------------------------------------------------------------------------

function renderDir(dir: string): KObject[] {
  const file = join(dir, 'kustomization.yaml');
  if (!existsSync(file)) throw new RenderError(`${dir}: no kustomization.yaml`);
  const [k, ...rest] = readYamlDocuments(file);
  if (k === undefined || rest.length > 0) throw new RenderError(`${file}: expected one document`);
  for (const key of Object.keys(k)) {
    if (!KUSTOMIZATION_FIELDS.has(key)) throw new RenderError(`${file}: unsupported field ${key}`);
  }

  const objects: KObject[] = [];
  for (const resource of (k['resources'] as unknown[] | undefined) ?? []) {
    if (typeof resource !== 'string') throw new RenderError(`${file}: a resource is not a path`);
    const path = resolve(dir, resource);
    if (!existsSync(path)) throw new RenderError(`${file}: resource ${resource} not found`);
    if (statSync(path).isDirectory()) {
      objects.push(...renderDir(path));
    } else {
      objects.push(...readYamlDocuments(path).map((doc, i) => asKObject(doc, `${path}#${i}`)));
    }
  }

  const namespace = k['namespace'];
  if (namespace !== undefined && typeof namespace !== 'string')
    throw new RenderError(`${file}: bad namespace`);
  if (k['configMapGenerator'] !== undefined) generateConfigMaps(objects, k['configMapGenerator'], namespace);

  for (const entry of (k['patches'] as unknown[] | undefined) ?? []) {
    if (!isObject(entry)) throw new RenderError(`${file}: a patch is not a mapping`);
    for (const key of Object.keys(entry)) {
      if (!['path', 'patch', 'target'].includes(key))
        throw new RenderError(`${file}: unsupported patch field ${key}`);
    }
    const docs =
      typeof entry['path'] === 'string'
        ? readYamlDocuments(resolve(dir, entry['path']))
        : typeof entry['patch'] === 'string'
          ? parseAllDocuments(entry['patch']).map((d) => d.toJS() as Json)
          : [];
    if (docs.length !== 1) throw new RenderError(`${file}: a patch must hold exactly one document`);
    const target = entry['target'];
    if (target !== undefined && !isObject(target)) throw new RenderError(`${file}: bad patch target`);
    applyPatch(
      objects,
      docs[0] as Json,
      target,
      `${file} patch ${typeof entry['path'] === 'string' ? entry['path'] : '(inline)'}`,
    );
  }

  if (k['labels'] !== undefined) {
    if (!Array.isArray(k['labels'])) throw new RenderError(`${file}: labels must be a list`);
    for (const entry of k['labels']) {
      if (!isObject(entry)) throw new RenderError(`${file}: bad labels entry`);
      addLabels(objects, entry);
    }
  }
  if (k['images'] !== undefined) applyImages(objects, k['images'] as ImageRule[]);
  if (namespace !== undefined) {
    for (const o of objects) if (!CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = namespace;
  }

  const seen = new Set<string>();
  for (const o of objects) {
    const id = objectId(o);
    if (seen.has(id)) throw new RenderError(`${file}: ${id} defined twice`);
    seen.add(id);
  }
  return objects;
}

/** Renders a kustomization directory into its objects, as `kubectl kustomize` would. */
export function render(dir: string): KObject[] {
  const objects = renderDir(resolve(dir));
  finishGenerated(objects);
  return objects;
}

export function toYaml(objects: KObject[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n');
}

const invokedAs = process.argv[1] === undefined ? '' : resolve(process.argv[1]);
if (invokedAs === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), 'overlays', 'dev');
  process.stdout.write(toYaml(render(dir)));
}
