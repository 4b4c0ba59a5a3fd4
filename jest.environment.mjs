// Jest environment for every suite: Node with the host's typed-array constructors.
// Jest runs each test file in its own V8 context, whose typed-array constructors differ from the
// host's. onnxruntime-node creates output tensors' data in the host context and then checks
// `data instanceof Float32Array` against the sandbox's constructor, which fails with "A float32
// tensor's data must be type of function Float32Array()". Sharing the host's typed-array
// constructors with the sandbox makes the check hold; plain Node has no such split.
import { TestEnvironment } from 'jest-environment-node';

const SHARED = [
  'ArrayBuffer',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'Float32Array',
  'Float64Array',
  'BigInt64Array',
  'BigUint64Array',
];

export default class HostTypedArraysEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of SHARED) this.global[name] = globalThis[name];
  }
}
