// The Kustomize subset of deploy/k8s/render.ts: the semantics our manifests rely on, and the
// refusal of everything outside the subset.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { configMapHash, imageName, render, RenderError, strategicMerge } from '../k8s/render.js';

const work = mkdtempSync(join(tmpdir(), 'engram-render-'));
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

let counter = 0;
function tree(files: Record<string, string>): string {
  const dir = join(work, String(counter++));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: example/web:1.0.0
          envFrom:
            - configMapRef: {name: settings}
          env:
            - {name: A, value: '1'}
            - {name: B, value: '2'}
      volumes:
        - name: settings
          configMap: {name: settings}
`;

describe('render', () => {
  it('applies namespace, labels, images, generators and patches as kustomize does', () => {
    const dir = tree({
      'base/kustomization.yaml': `resources: [web.yaml]
labels:
  - pairs: {part-of: demo}
    includeTemplates: true
configMapGenerator:
  - name: settings
    literals: [X=1, Y=two]
`,
      'base/web.yaml': deployment,
      'overlay/kustomization.yaml': `resources: [../base]
namespace: demo
images:
  - {name: example/web, newName: registry.example.com/web, newTag: 2.0.0}
configMapGenerator:
  - name: settings
    behavior: merge
    literals: [Y=three]
patches:
  - path: patch.yaml
`,
      'overlay/patch.yaml': `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          env:
            - {name: B, value: '20'}
            - {name: C, value: '3'}
            - {name: A, $patch: delete}
`,
    });
    const [web, cm] = render(join(dir, 'overlay'));
    const hash = configMapHash('settings', { X: '1', Y: 'three' });
    expect(cm).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `settings-${hash}`, namespace: 'demo', labels: { 'part-of': 'demo' } },
      data: { X: '1', Y: 'three' },
    });
    expect(web?.metadata).toEqual({ name: 'web', namespace: 'demo', labels: { 'part-of': 'demo' } });
    const spec = web?.['spec'] as {
      selector: unknown;
      template: { metadata: unknown; spec: { containers: Record<string, unknown>[]; volumes: unknown[] } };
    };
    expect(spec.selector).toEqual({ matchLabels: { app: 'web' } }); // selectors untouched
    expect(spec.template.metadata).toEqual({ labels: { app: 'web', 'part-of': 'demo' } });
    const container = spec.template.spec.containers[0]!;
    expect(container['image']).toBe('registry.example.com/web:2.0.0');
    expect(container['env']).toEqual([
      { name: 'B', value: '20' },
      { name: 'C', value: '3' },
    ]);
    expect(container['envFrom']).toEqual([{ configMapRef: { name: `settings-${hash}` } }]);
    expect(spec.template.spec.volumes).toEqual([
      { name: 'settings', configMap: { name: `settings-${hash}` } },
    ]);
  });

  it('patches every object of a kind with a target, whatever name the patch carries', () => {
    const dir = tree({
      'kustomization.yaml': `resources: [a.yaml]
patches:
  - path: p.yaml
    target: {kind: ConfigMap}
`,
      'a.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: one}
data: {k: a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two}
data: {k: b}
`,
      'p.yaml': `apiVersion: v1
kind: ConfigMap
metadata: {name: ignored}
data: {k: patched}
`,
    });
    expect(render(dir).map((o) => [o.metadata.name, o['data']])).toEqual([
      ['one', { k: 'patched' }],
      ['two', { k: 'patched' }],
    ]);
  });

  it.each([
    [
      'an unsupported kustomization field',
      'namePrefix: x-\nresources: [a.yaml]\n',
      /unsupported field namePrefix/,
    ],
    ['a duplicate object', 'resources: [a.yaml, a.yaml]\n', /defined twice/],
    ['a missing resource', 'resources: [missing.yaml]\n', /not found/],
    [
      'a patch with no target object',
      'resources: [a.yaml]\npatches:\n  - patch: "{apiVersion: v1, kind: Service, metadata: {name: x}}"\n',
      /no Service\/x/,
    ],
    [
      'a JSON 6902 patch',
      'resources: [a.yaml]\npatches:\n  - path: a.yaml\n    options: {}\n',
      /unsupported patch field options/,
    ],
  ])('refuses %s', (_name, kustomization, error) => {
    const dir = tree({
      'kustomization.yaml': kustomization,
      'a.yaml': 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n',
    });
    expect(() => render(dir)).toThrow(RenderError);
    expect(() => render(dir)).toThrow(error);
  });
});

describe('strategicMerge', () => {
  it('merges maps, deletes on null, merges keyed lists and replaces the others', () => {
    const base = {
      a: { b: 1, c: 2 },
      ports: [{ containerPort: 80, name: 'http' }],
      args: ['x', 'y'],
      volumeMounts: [{ mountPath: '/tmp', name: 'tmp' }],
    };
    const patch = {
      a: { c: null, d: 3 },
      ports: [{ containerPort: 80, protocol: 'TCP' }, { containerPort: 81 }],
      args: ['z'],
      volumeMounts: [{ mountPath: '/data', name: 'data' }],
    };
    expect(strategicMerge(base, patch, 'containers[0]')).toEqual({
      a: { b: 1, d: 3 },
      ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }, { containerPort: 81 }],
      args: ['z'],
      volumeMounts: [
        { mountPath: '/tmp', name: 'tmp' },
        { mountPath: '/data', name: 'data' },
      ],
    });
  });

  it('merges Service ports on port', () => {
    expect(
      strategicMerge(
        { ports: [{ name: 'grpc', port: 1 }] },
        { ports: [{ port: 1, targetPort: 'grpc' }] },
        'spec',
      ),
    ).toEqual({ ports: [{ name: 'grpc', port: 1, targetPort: 'grpc' }] });
  });
});

describe('helpers', () => {
  it('takes the name of an image reference', () => {
    expect(imageName('engram:0.1.0')).toBe('engram');
    expect(imageName('registry:5000/a/b:1@sha256:00')).toBe('registry:5000/a/b');
    expect(imageName('registry:5000/a/b')).toBe('registry:5000/a/b');
  });

  it('hashes ConfigMaps into kustomize-style suffixes that change with the data', () => {
    const a = configMapHash('cm', { a: '1' });
    expect(a).toMatch(/^[a-z0-9]{10}$/);
    expect(a).not.toMatch(/[013ae]/);
    expect(configMapHash('cm', { a: '1' })).toBe(a);
    expect(configMapHash('cm', { a: '2' })).not.toBe(a);
  });
});
