// Step stepper data (lesson 6, "One training step on the GPU"): the lesson's complete
// step (Linear(8, 3), SGD lr 0.1, features (4, 8), labels [0, 2, 1, 0]) cut into the lines
// that run, each tagged with its row of the lesson's five-stage table, what the CPU and
// the GPU are doing, and which tensors exist in host and device memory afterwards.
// Pure data and functions, no DOM: the tests check the byte counts and the order.
//
// The step is one in the middle of training, so last step's gradients are still on the
// GPU when it starts; zero_grad() frees them (set_to_none=True, the default since
// PyTorch 2.0). Sizes are each tensor's own bytes (elements × bytes per element); the
// caching allocator rounds every block up to 512 bytes, so memory_allocated() reads more.

/** The five rows of the lesson's table, in order. */
export const STAGES = ['Batch read', 'Device copy', 'Forward', 'Backward', 'Logging'];

const BYTES = { float32: 4, int64: 8 };

/** A tensor that can appear in a memory list. */
function tensor(id, label, shape, dtype) {
  const elements = shape.reduce((p, d) => p * d, 1);
  return { id, label, shape, dtype, bytes: elements * BYTES[dtype] };
}

export const TENSORS = {
  weight: tensor('weight', 'model.weight', [3, 8], 'float32'),
  bias: tensor('bias', 'model.bias', [3], 'float32'),
  weightGrad: tensor('weightGrad', 'model.weight.grad', [3, 8], 'float32'),
  biasGrad: tensor('biasGrad', 'model.bias.grad', [3], 'float32'),
  hostFeatures: tensor('hostFeatures', 'features', [4, 8], 'float32'),
  hostLabels: tensor('hostLabels', 'labels', [4], 'int64'),
  features: tensor('features', 'features', [4, 8], 'float32'),
  labels: tensor('labels', 'labels', [4], 'int64'),
  logits: tensor('logits', 'logits', [4, 3], 'float32'),
  logSoftmax: tensor('logSoftmax', 'log-softmax of logits (kept for backward)', [4, 3], 'float32'),
  loss: tensor('loss', 'loss', [], 'float32'),
  hostLoss: tensor('hostLoss', 'loss.cpu() (then .item() gives a Python float)', [], 'float32'),
};

const PARAMETERS = ['weight', 'bias'];
const LAST_GRADIENTS = ['weightGrad', 'biasGrad'];

/**
 * The lines of the step. `host` and `device` list the tensors alive after the line runs;
 * `cpu`/`gpu` say what each side does, with a state: busy, waiting or idle.
 */
export const STEPS = [
  {
    stage: 'Batch read',
    title: 'Build the batch',
    code: ['features = torch.randn(4, 8)', 'labels = torch.tensor([0, 2, 1, 0])'],
    cpu: { state: 'busy', text: 'Builds the features and labels in host memory, as a data loader would.' },
    gpu: { state: 'idle', text: 'Idle: nothing for it yet (or still finishing the previous step).' },
    host: ['hostFeatures', 'hostLabels'],
    device: [...PARAMETERS, ...LAST_GRADIENTS],
    note: 'The batch is born on the CPU. Nothing about DataLoader puts it on the GPU.',
  },
  {
    stage: 'Device copy',
    title: 'Copy every field to the device',
    code: ['features = features.to(device)', 'labels = labels.to(device)'],
    cpu: { state: 'waiting', text: 'Launches one copy per field; a plain .to() waits until the copy is done.' },
    gpu: { state: 'busy', text: 'The copy engine receives 128 + 32 bytes into device memory.' },
    host: [],
    device: [...PARAMETERS, ...LAST_GRADIENTS, 'features', 'labels'],
    note: 'Rebinding the names drops the host copies. Forget one field and a later line fails with “Expected all tensors to be on the same device”.',
  },
  {
    stage: 'Forward',
    title: 'optimizer.zero_grad()',
    code: ['optimizer.zero_grad()'],
    cpu: { state: 'busy', text: 'Sets every .grad to None: Python bookkeeping, no kernel.' },
    gpu: { state: 'idle', text: 'Nothing new queued.' },
    host: [],
    device: [...PARAMETERS, 'features', 'labels'],
    note: 'Last step’s gradients are released to PyTorch’s cache. Without this line, backward would add into them.',
  },
  {
    stage: 'Forward',
    title: 'Forward pass',
    code: ['logits = model(features)'],
    cpu: { state: 'busy', text: 'Runs Linear’s Python, queues one matrix-multiply kernel and returns at once.' },
    gpu: { state: 'busy', text: 'Runs features @ weight.T + bias into logits (4, 3).' },
    host: [],
    device: [...PARAMETERS, 'features', 'labels', 'logits'],
    note: 'The autograd graph keeps a reference to features for backward: no new copy.',
  },
  {
    stage: 'Forward',
    title: 'Loss',
    code: ['loss = F.cross_entropy(logits, labels)'],
    cpu: { state: 'busy', text: 'Queues the log-softmax and negative log-likelihood kernels; returns without the value.' },
    gpu: { state: 'busy', text: 'Computes the log-softmax and the mean loss, a 0-dimensional tensor on the GPU.' },
    host: [],
    device: [...PARAMETERS, 'features', 'labels', 'logits', 'logSoftmax', 'loss'],
    note: 'loss is a receipt: its value does not exist on the CPU yet.',
  },
  {
    stage: 'Backward',
    title: 'loss.backward()',
    code: ['loss.backward()'],
    cpu: { state: 'busy', text: 'Autograd walks the graph in reverse and launches a gradient kernel per operation.' },
    gpu: { state: 'busy', text: 'Computes the gradients into model.weight.grad and model.bias.grad.' },
    host: [],
    device: [...PARAMETERS, 'features', 'labels', 'logits', 'loss', 'weightGrad', 'biasGrad'],
    note: 'Backward frees what the graph saved. In a big model the peak comes here: activations and new gradients at once.',
  },
  {
    stage: 'Backward',
    title: 'optimizer.step()',
    code: ['optimizer.step()'],
    cpu: { state: 'busy', text: 'Queues the update kernels and moves on.' },
    gpu: { state: 'busy', text: 'Updates the weights in place: w ← w − 0.1 × grad.' },
    host: [],
    device: [...PARAMETERS, 'features', 'labels', 'logits', 'loss', 'weightGrad', 'biasGrad'],
    note: 'Plain SGD keeps no state. Adam would add two moment tensors the size of each parameter (2 × 108 = 216 bytes here) on its first step.',
  },
  {
    stage: 'Logging',
    title: 'Read the loss',
    code: ['print(f"loss {loss.detach().cpu().item():.4f}")'],
    cpu: { state: 'waiting', text: 'Needs the number, so it waits until the GPU has finished everything queued.' },
    gpu: { state: 'busy', text: 'Finishes its queue, then copies the 4-byte loss to host memory.' },
    host: ['hostLoss'],
    device: [...PARAMETERS, 'features', 'labels', 'logits', 'loss', 'weightGrad', 'biasGrad'],
    note: 'The only line of the step that makes the CPU wait for compute. Do it every N steps, not every step.',
  },
];

/** Which tensors appeared and which disappeared at step `index` in `side` (host/device). */
export function changes(index, side) {
  const now = STEPS[index][side];
  const before = index === 0 ? startOf(side) : STEPS[index - 1][side];
  return {
    added: now.filter((id) => !before.includes(id)),
    removed: before.filter((id) => !now.includes(id)),
  };
}

/** What exists before the first line: the model and last step's gradients on the GPU. */
export function startOf(side) {
  return side === 'device' ? [...PARAMETERS, ...LAST_GRADIENTS] : [];
}

/** Sum of the tensors' own bytes. */
export function totalBytes(ids) {
  return ids.reduce((sum, id) => sum + TENSORS[id].bytes, 0);
}

/** "(4, 8)", "(3,)", "()" as Python prints shapes. */
export function formatShape(shape) {
  if (shape.length === 0) return '()';
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
}

/** The first step index of each of the five stages (to jump to a row). */
export function firstStepOf(stage) {
  return STEPS.findIndex((s) => s.stage === stage);
}
