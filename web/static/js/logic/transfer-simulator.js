// Transfer simulator logic (lesson 4, "Where tensors live"): which device each tensor is
// on, what moving one across the bus costs, and what PyTorch says when an operation mixes
// devices. Pure functions over plain objects, no DOM, so node's test runner can check every
// number the widget prints: the byte counts and copy times must match the lesson's table
// and the server's no-JavaScript fallback (server/course/fallbacks.rs).

import { thousands } from './numbers.js';

/** Bytes per element of the dtypes the lesson uses. */
export const BYTES_PER_ELEMENT = { float32: 4, float16: 2, bfloat16: 2, int64: 8 };

/** PCIe 4.0 x16, about 32 GB/s each way: the lesson's default bus. */
export const DEFAULT_BANDWIDTH_GBPS = 32;

/** GPU memory (HBM) bandwidth used for the "same bytes inside the GPU" comparison. */
export const HBM_GBPS = 2000;

/** The links the student can pick; a directive's own bandwidth is added if it differs. */
export const LINKS = [
  { gbps: 32, label: 'PCIe 4.0 x16 (32 GB/s)' },
  { gbps: 64, label: 'PCIe 5.0 x16 (64 GB/s)' },
];

/** The tensors on the table, as in the lesson's size table; all start in host memory. */
export const TENSORS = [
  { name: 'x', what: 'input batch', shape: [32, 3, 224, 224], dtype: 'float32' },
  { name: 'w', what: 'weight', shape: [512, 512], dtype: 'float32' },
  { name: 'b', what: 'bias', shape: [512], dtype: 'float32' },
];

/** Operations the student can run; `uses` are the tensor names each one reads. */
export const OPERATIONS = [
  { id: 'add-bias', code: 'y = w + b', uses: ['w', 'b'] },
  { id: 'numpy', code: 'a = x.numpy()', uses: ['x'] },
];

/** PyTorch's message when an elementwise op meets a CUDA and a CPU tensor. */
export const SAME_DEVICE_ERROR =
  'RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!';

/** PyTorch's message for .numpy() on a CUDA tensor. */
export const NUMPY_ERROR =
  "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.";

export function elementCount(shape) {
  return shape.reduce((product, dim) => product * dim, 1);
}

export function tensorBytes(tensor) {
  return elementCount(tensor.shape) * BYTES_PER_ELEMENT[tensor.dtype];
}

/** Seconds to move `bytes` over a link of `gbps` gigabytes (1e9 bytes) per second. */
export function copySeconds(bytes, gbps) {
  return bytes / (gbps * 1e9);
}

/** Decimal units, as the lesson uses: 19.27 MB, 1.05 MB, 2.05 KB. */
export function decimalSize(bytes) {
  const units = [
    [1e9, 'GB'],
    [1e6, 'MB'],
    [1e3, 'KB'],
  ];
  for (const [size, unit] of units) {
    if (bytes >= size) return `${(bytes / size).toFixed(2)} ${unit}`;
  }
  return `${bytes} B`;
}

/** A duration in the unit that reads best: 64 ns, 602.11 µs, 1.20 ms. */
export function formatSeconds(seconds) {
  if (seconds < 1e-6) return `${Math.round(seconds * 1e9)} ns`;
  if (seconds < 1e-3) return `${(seconds * 1e6).toFixed(2)} µs`;
  if (seconds < 1) return `${(seconds * 1e3).toFixed(2)} ms`;
  return `${seconds.toFixed(2)} s`;
}

/** "(32, 3, 224, 224)", and "(512,)" for one dimension, as Python prints tuples. */
export function formatShape(shape) {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
}

/** The device string PyTorch prints for a tensor on `place` ("cpu" or "cuda"). */
export function deviceName(place) {
  return place === 'cuda' ? 'cuda:0' : 'cpu';
}

/** A fresh simulation: every tensor on the CPU, no traffic yet. */
export function createState(gbps = DEFAULT_BANDWIDTH_GBPS) {
  const places = {};
  for (const tensor of TENSORS) places[tensor.name] = 'cpu';
  return { gbps, places, copies: 0, bytesMoved: 0, secondsOnBus: 0 };
}

export function findTensor(name) {
  const tensor = TENSORS.find((t) => t.name === name);
  if (!tensor) throw new Error(`no tensor named ${name}`);
  return tensor;
}

/**
 * Moves tensor `name` to the other device. Returns the new state and the console lines:
 * the PyTorch statement and a comment with its size and bus time.
 */
export function move(state, name) {
  const tensor = findTensor(name);
  const from = state.places[name];
  const to = from === 'cpu' ? 'cuda' : 'cpu';
  const bytes = tensorBytes(tensor);
  const seconds = copySeconds(bytes, state.gbps);
  const next = {
    ...state,
    places: { ...state.places, [name]: to },
    copies: state.copies + 1,
    bytesMoved: state.bytesMoved + bytes,
    secondsOnBus: state.secondsOnBus + seconds,
  };
  const direction = to === 'cuda' ? 'host → device' : 'device → host';
  return {
    state: next,
    seconds,
    lines: [
      { kind: 'code', text: `${name} = ${name}.to("${to}")` },
      {
        kind: 'comment',
        text: `# ${direction}: ${thousands(bytes)} bytes (${decimalSize(bytes)}) at ${state.gbps} GB/s ≈ ${formatSeconds(seconds)}`,
      },
    ],
  };
}

/** Runs operation `id` on the current placement; returns { ok, lines }. */
export function runOperation(state, id) {
  const op = OPERATIONS.find((o) => o.id === id);
  if (!op) throw new Error(`no operation ${id}`);
  const code = { kind: 'code', text: op.code };
  if (op.id === 'numpy') {
    const place = state.places.x;
    if (place === 'cuda') {
      return { ok: false, lines: [code, { kind: 'error', text: NUMPY_ERROR }] };
    }
    const x = findTensor('x');
    return {
      ok: true,
      lines: [code, { kind: 'comment', text: `# ok: a NumPy array ${formatShape(x.shape)} sharing x's host memory` }],
    };
  }
  const devices = new Set(op.uses.map((name) => state.places[name]));
  if (devices.size > 1) {
    return { ok: false, lines: [code, { kind: 'error', text: SAME_DEVICE_ERROR }] };
  }
  const [place] = devices;
  return {
    ok: true,
    lines: [code, { kind: 'comment', text: `# ok: y is ${formatShape([512, 512])} on ${deviceName(place)}` }],
  };
}

/** The time the same bytes take to stream through GPU memory, for comparison. */
export function hbmSeconds(bytes) {
  return copySeconds(bytes, HBM_GBPS);
}

/** The bandwidth choices for a directive whose parameter is `gbps`. */
export function linkChoices(gbps) {
  if (LINKS.some((link) => link.gbps === gbps)) return LINKS;
  return [...LINKS, { gbps, label: `This lesson's link (${gbps} GB/s)` }].sort((a, b) => a.gbps - b.gbps);
}
