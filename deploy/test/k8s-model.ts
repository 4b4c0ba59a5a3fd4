/**
 * Typed access to rendered Kubernetes objects for the deploy tests, and a NetworkPolicy evaluator:
 * whether a connection from one pod (or address) to another pod (or address) on a port is allowed
 * by the policies of a namespace, with the Kubernetes semantics (policies are additive; a pod
 * selected by no policy of a direction is open in that direction).
 */
import type { KObject } from '../k8s/render.js';

export type Labels = Readonly<Record<string, string>>;

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
}

export interface Probe {
  grpc?: { port: number; service?: string };
  httpGet?: { path?: string; port: number | string };
  exec?: { command: string[] };
}

export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type: string };
  privileged?: boolean;
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  ports?: ContainerPort[];
  env?: { name: string; value?: string; valueFrom?: Record<string, { name: string; key: string }> }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  securityContext?: SecurityContext & { fsGroup?: number };
  volumes?: ({ name: string } & Record<string, unknown>)[];
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
}

export interface Workload {
  object: KObject;
  kind: string;
  name: string;
  namespace: string;
  labels: Labels;
  spec: PodSpec;
}

/** The pod templates of Deployments, StatefulSets and Jobs. */
export function workloads(objects: readonly KObject[]): Workload[] {
  const out: Workload[] = [];
  for (const o of objects) {
    if (!['Deployment', 'StatefulSet', 'Job'].includes(o.kind)) continue;
    const template = (o['spec'] as { template: { metadata?: { labels?: Labels }; spec: PodSpec } }).template;
    out.push({
      object: o,
      kind: o.kind,
      name: o.metadata.name,
      namespace: o.metadata.namespace ?? '',
      labels: template.metadata?.labels ?? {},
      spec: template.spec,
    });
  }
  return out;
}

export function ofKind<T = Record<string, unknown>>(
  objects: readonly KObject[],
  kind: string,
): (KObject & T)[] {
  return objects.filter((o) => o.kind === kind) as (KObject & T)[];
}

export function selectorMatches(selector: LabelSelector | undefined, labels: Labels): boolean {
  if (selector === undefined) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(value ?? ''))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(value ?? '')) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

// ------------------------------------------------------------------------------------------------
// NetworkPolicy evaluation

/** One end of a connection: a pod (namespace, labels, its container ports) or a bare address. */
export type Endpoint =
  | {
      kind: 'pod';
      name: string;
      namespace: string;
      namespaceLabels: Labels;
      labels: Labels;
      ports: ContainerPort[];
    }
  | { kind: 'address'; name: string; ip: string };

interface PolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}

interface PolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}

interface PolicyRule {
  from?: PolicyPeer[];
  to?: PolicyPeer[];
  ports?: PolicyPort[];
}

export interface NetworkPolicySpec {
  podSelector: LabelSelector;
  policyTypes?: ('Ingress' | 'Egress')[];
  ingress?: PolicyRule[];
  egress?: PolicyRule[];
}

function ipToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

export function inCidr(ip: string, cidr: string): boolean {
  const [base = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(ipToInt(base) / size) * size;
  const value = ipToInt(ip);
  return value >= start && value < start + size;
}

function peerMatches(peer: PolicyPeer, policyNamespace: string, other: Endpoint): boolean {
  if (peer.ipBlock !== undefined) {
    // ipBlock is meant for addresses outside the cluster; we never match pods with it.
    if (other.kind !== 'address') return false;
    return (
      inCidr(other.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c) => inCidr(other.ip, c))
    );
  }
  if (other.kind !== 'pod') return false;
  if (peer.namespaceSelector === undefined) {
    if (other.namespace !== policyNamespace) return false;
  } else if (!selectorMatches(peer.namespaceSelector, other.namespaceLabels)) {
    return false;
  }
  return peer.podSelector === undefined || selectorMatches(peer.podSelector, other.labels);
}

function portMatches(
  rulePorts: PolicyPort[] | undefined,
  port: number,
  protocol: string,
  dest: Endpoint,
): boolean {
  if (rulePorts === undefined || rulePorts.length === 0) return true;
  return rulePorts.some((p) => {
    if ((p.protocol ?? 'TCP') !== protocol) return false;
    if (p.port === undefined) return true;
    if (typeof p.port === 'number')
      return p.endPort === undefined ? p.port === port : port >= p.port && port <= p.endPort;
    // A named port resolves against the destination pod's container ports.
    return dest.kind === 'pod' && dest.ports.some((cp) => cp.name === p.port && cp.containerPort === port);
  });
}

function types(policy: NetworkPolicySpec): ('Ingress' | 'Egress')[] {
  return policy.policyTypes ?? (policy.egress === undefined ? ['Ingress'] : ['Ingress', 'Egress']);
}

/** Whether `policies` (all in `namespace`) let `from` open a connection to `to` on `port`. */
export function allowed(
  policies: readonly NetworkPolicySpec[],
  namespace: string,
  from: Endpoint,
  to: Endpoint,
  port: number,
  protocol = 'TCP',
): boolean {
  const selecting = (pod: Endpoint, direction: 'Ingress' | 'Egress') =>
    pod.kind === 'pod' && pod.namespace === namespace
      ? policies.filter((p) => types(p).includes(direction) && selectorMatches(p.podSelector, pod.labels))
      : undefined; // not governed by these policies
  const egress = selecting(from, 'Egress');
  const egressOk =
    egress === undefined ||
    egress.length === 0 ||
    egress.some((p) =>
      (p.egress ?? []).some(
        (r) =>
          (r.to === undefined ||
            r.to.length === 0 ||
            r.to.some((peer) => peerMatches(peer, namespace, to))) &&
          portMatches(r.ports, port, protocol, to),
      ),
    );
  const ingress = selecting(to, 'Ingress');
  const ingressOk =
    ingress === undefined ||
    ingress.length === 0 ||
    ingress.some((p) =>
      (p.ingress ?? []).some(
        (r) =>
          (r.from === undefined ||
            r.from.length === 0 ||
            r.from.some((peer) => peerMatches(peer, namespace, from))) &&
          portMatches(r.ports, port, protocol, to),
      ),
    );
  return egressOk && ingressOk;
}
