/**
 * Dot products of one query with many rows, in WebAssembly SIMD (f32x4, two accumulators): about
 * four times the speed of the best plain-JS loop on 512 dimensions, which is what keeps an exact
 * scan of ten thousand rows within a few milliseconds.
 *
 * The module is assembled here from its opcodes (no toolchain, no binary blob to trust): one
 * function over an imported memory,
 *
 *   dots(query, rows, n, dims, out): for i < n:
 *     out[i] = Σ_d query[d] · vectors[rows[i] · dims + d]        (vectors start at address 0)
 *
 * with byte addresses for `query`, `rows` (i32 slots) and `out` (f32). `dims` must be a positive
 * multiple of 8; other sizes use the JS loop of the caller.
 */

// Opcodes (WebAssembly core 2.0 + fixed-width SIMD).
const BLOCK = 0x02;
const LOOP = 0x03;
const VOID = 0x40;
const END = 0x0b;
const BR = 0x0c;
const BR_IF = 0x0d;
const LOCAL_GET = 0x20;
const LOCAL_SET = 0x21;
const LOCAL_TEE = 0x22;
const I32_LOAD = 0x28;
const F32_STORE = 0x38;
const I32_CONST = 0x41;
const I32_LT_U = 0x49;
const I32_GE_U = 0x4f;
const I32_ADD = 0x6a;
const I32_MUL = 0x6c;
const I32_SHL = 0x74;
const F32_ADD = 0x92;
const I32 = 0x7f;
const V128 = 0x7b;
const SIMD = 0xfd;
const V128_LOAD = [SIMD, 0x00];
const V128_CONST_ZERO = [SIMD, 0x0c, ...new Array<number>(16).fill(0)];
const F32X4_EXTRACT_LANE = [SIMD, 0x1f];
const F32X4_ADD = [SIMD, 0xe4, 0x01];
const F32X4_MUL = [SIMD, 0xe6, 0x01];
const V128_LOAD8X8_S = [SIMD, 0x01];
const I32X4_EXTEND_LOW_I16X8_S = [SIMD, 0xa7, 0x01];
const I32X4_EXTEND_HIGH_I16X8_S = [SIMD, 0xa8, 0x01];
const F32X4_CONVERT_I32X4_S = [SIMD, 0xfa, 0x01];

// Parameters and locals of `dots`.
const QUERY = 0;
const ROWS = 1;
const N = 2;
const DIMS = 3;
const OUT = 4;
const I = 5;
const D = 6;
const BASE = 7;
const BYTES = 8;
const ACC0 = 9;
const ACC1 = 10;

const get = (local: number) => [LOCAL_GET, local];
const set = (local: number) => [LOCAL_SET, local];
const i32 = (value: number) => [I32_CONST, value]; // small non-negative constants only (< 64)
const load128 = (offset: number) => [...V128_LOAD, 4, offset];

/** acc += v128(query + d + offset) * v128(base + d + offset) */
const multiplyAdd = (acc: number, offset: number) => [
  ...get(acc),
  ...get(QUERY),
  ...get(D),
  I32_ADD,
  ...load128(offset),
  ...get(BASE),
  ...get(D),
  I32_ADD,
  ...load128(offset),
  ...F32X4_MUL,
  ...F32X4_ADD,
  ...set(acc),
];

/**
 * The shape both kernels share: `for i < n: base = rows[i] · rowBytes; acc0 = acc1 = 0; d = 0;
 * <inner loop>; out[i] = Σ lanes(acc0 + acc1)`. `locals` declares the locals after the parameters,
 * `setup` runs once, `rowSetup` per row (after `d = 0`), `inner` is the body of the loop over d.
 */
function kernel(
  locals: readonly number[],
  setup: readonly number[],
  rowBytes: number,
  rowSetup: readonly number[],
  inner: readonly number[],
): number[] {
  return [
    ...locals,
    ...setup,
    BLOCK,
    VOID,
    LOOP,
    VOID,
    ...get(I),
    ...get(N),
    I32_GE_U,
    BR_IF,
    1,
    // base = rows[i] * rowBytes
    ...get(ROWS),
    ...get(I),
    ...i32(2),
    I32_SHL,
    I32_ADD,
    I32_LOAD,
    2,
    0,
    ...get(rowBytes),
    I32_MUL,
    ...set(BASE),
    ...V128_CONST_ZERO,
    ...set(ACC0),
    ...V128_CONST_ZERO,
    ...set(ACC1),
    ...i32(0),
    ...set(D),
    ...rowSetup,
    LOOP,
    VOID,
    ...inner,
    END,
    // out[i] = horizontal sum of acc0 + acc1
    ...get(OUT),
    ...get(I),
    ...i32(2),
    I32_SHL,
    I32_ADD,
    ...get(ACC0),
    ...get(ACC1),
    ...F32X4_ADD,
    LOCAL_TEE,
    ACC0,
    ...F32X4_EXTRACT_LANE,
    0,
    ...get(ACC0),
    ...F32X4_EXTRACT_LANE,
    1,
    F32_ADD,
    ...get(ACC0),
    ...F32X4_EXTRACT_LANE,
    2,
    F32_ADD,
    ...get(ACC0),
    ...F32X4_EXTRACT_LANE,
    3,
    F32_ADD,
    F32_STORE,
    2,
    0,
    ...get(I),
    ...i32(1),
    I32_ADD,
    ...set(I),
    BR,
    0,
    END,
    END,
    END,
  ];
}

const BODY = kernel(
  // locals: 4 × i32 (i, d, base, bytes), 2 × v128 (acc0, acc1)
  [2, 4, I32, 2, V128],
  [...get(DIMS), ...i32(2), I32_SHL, ...set(BYTES)],
  BYTES,
  [],
  [
    ...multiplyAdd(ACC0, 0),
    ...multiplyAdd(ACC1, 16),
    ...get(D),
    ...i32(32),
    I32_ADD,
    LOCAL_TEE,
    D,
    ...get(BYTES),
    I32_LT_U,
    BR_IF,
    0,
  ],
);

/**
 * `dots8(query, rows, n, dims, out)`: the same over int8 rows (vectors of `dims` bytes from address
 * 0, the query still float32): per 8 dimensions one 8-byte load sign-extended to i16x8, its halves
 * widened to i32x4 and converted to f32x4, multiplied with the query's two f32x4 and accumulated.
 * The caller multiplies each sum by the row's scale. Locals: i, d, base, q (i32), acc0, acc1, w.
 */
const Q = 8;
const W = 11;
/** acc += f32x4(widen(w)) * v128(q + offset) */
const widenMultiplyAdd = (acc: number, extend: readonly number[], offset: number) => [
  ...get(acc),
  ...get(W),
  ...extend,
  ...F32X4_CONVERT_I32X4_S,
  ...get(Q),
  ...load128(offset),
  ...F32X4_MUL,
  ...F32X4_ADD,
  ...set(acc),
];
const BODY8 = kernel(
  // locals: 4 × i32 (i, d, base, q), 3 × v128 (acc0, acc1, w)
  [2, 4, I32, 3, V128],
  [],
  DIMS,
  [...get(QUERY), ...set(Q)],
  [
    // w = i16x8(int8 row[d .. d+8))
    ...get(BASE),
    ...get(D),
    I32_ADD,
    ...V128_LOAD8X8_S,
    0,
    0,
    ...set(W),
    ...widenMultiplyAdd(ACC0, I32X4_EXTEND_LOW_I16X8_S, 0),
    ...widenMultiplyAdd(ACC1, I32X4_EXTEND_HIGH_I16X8_S, 16),
    ...get(Q),
    ...i32(32),
    I32_ADD,
    ...set(Q),
    ...get(D),
    ...i32(8),
    I32_ADD,
    LOCAL_TEE,
    D,
    ...get(DIMS),
    I32_LT_U,
    BR_IF,
    0,
  ],
);

/** Unsigned LEB128. */
function leb(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

const name = (text: string) => [text.length, ...Buffer.from(text, 'utf8')];
const section = (id: number, content: number[]) => [id, ...leb(content.length), ...content];

const MODULE = Uint8Array.from([
  0x00,
  0x61,
  0x73,
  0x6d, // \0asm
  0x01,
  0x00,
  0x00,
  0x00, // version 1
  // type 0: (i32 i32 i32 i32 i32) -> ()
  ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]),
  // import env.memory: memory, min 1 page, no maximum
  ...section(2, [1, ...name('env'), ...name('memory'), 0x02, 0x00, 1]),
  // functions 0 and 1 have type 0
  ...section(3, [2, 0, 0]),
  // export "dots" = function 0, "dots8" = function 1
  ...section(7, [2, ...name('dots'), 0x00, 0, ...name('dots8'), 0x00, 1]),
  ...section(10, [2, ...leb(BODY.length), ...BODY, ...leb(BODY8.length), ...BODY8]),
]);

/** `dots(query, rows, n, dims, out)` over `memory`, as described above. */
export type Dots = (query: number, rows: number, n: number, dims: number, out: number) => void;

/** A WebAssembly linear memory (typed here: the project's `lib` settings do not include it). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

interface WasmApi {
  Memory: new (descriptor: { initial: number; maximum?: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}

const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Bytes per WebAssembly page. */
export const WASM_PAGE = 65536;

/** A linear memory of `initial` pages that may grow to 4 GiB. */
export function wasmMemory(initial: number): WasmMemory {
  return new wasm.Memory({ initial, maximum: 65536 });
}

let compiled: object | null | undefined;

/**
 * The SIMD kernel bound to `memory`, or undefined where WebAssembly SIMD is unavailable (the
 * caller then scores in JS).
 */
export function simdDots(memory: WasmMemory): Dots | undefined {
  return kernels(memory)?.dots;
}

/** The int8 kernel (`dots8`, see above) bound to `memory`, or undefined without WebAssembly SIMD. */
export function simdDots8(memory: WasmMemory): Dots | undefined {
  return kernels(memory)?.dots8;
}

function kernels(memory: WasmMemory): { dots: Dots; dots8: Dots } | undefined {
  if (compiled === undefined) {
    try {
      compiled = new wasm.Module(MODULE);
    } catch {
      compiled = null;
    }
  }
  if (compiled === null) return undefined;
  const instance = new wasm.Instance(compiled, { env: { memory } });
  return { dots: instance.exports['dots'] as Dots, dots8: instance.exports['dots8'] as Dots };
}
