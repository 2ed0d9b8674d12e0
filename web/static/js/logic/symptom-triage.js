// Symptom triage logic (lesson 9, "When it is slow or broken"): a symptom and the answers
// to its two questions lead to the likely cause, ordered checks, ordered fixes, the row of
// the lesson's four-symptom table it lands on (if any) and links to the lesson sections
// that explain it. Pure data and functions, no DOM; the tests walk every answer
// combination and check that every link names a heading that exists in the lessons.

/** The four rows of lesson 9's symptom table. */
export const TABLE_ROWS = {
  mismatch: 'Device mismatch',
  oom: 'CUDA out of memory after the model loaded fine',
  throughput: 'GPU memory full but throughput low',
  noTime: 'A kernel “takes no time”',
};

const LINKS = {
  moveBatch: ['/lessons/where-tensors-live#move-the-whole-batch-not-one-field', 'Move the whole batch, not one field'],
  preflight: ['/lessons/where-tensors-live#a-preflight-check-before-a-long-run', 'A preflight check before a long run'],
  toReturnsNew: ['/lessons/where-tensors-live#todevice-returns-a-new-tensor', '.to(device) returns a new tensor'],
  pinned: ['/lessons/where-tensors-live#pinned-memory-and-non-blocking-copies', 'Pinned memory and non-blocking copies'],
  mismatch: ['/lessons/slow-or-broken#device-mismatch', 'Device mismatch (this lesson)'],
  syncPoints: ['/lessons/async-and-timing#sync-points-where-the-cpu-waits', 'Sync points: where the CPU waits'],
  errorsLate: ['/lessons/async-and-timing#errors-arrive-late-too', 'Errors arrive late too'],
  timingTrap: ['/lessons/async-and-timing#the-timing-trap', 'The timing trap'],
  warmUp: ['/lessons/async-and-timing#warm-up-first', 'Warm up first'],
  honestTimer: ['/lessons/async-and-timing#a-host-timer-with-synchronize-or-cuda-events', 'A host timer with synchronize, or CUDA events'],
  zeroGrad: ['/lessons/training-step#forgetting-zero-grad', 'Forgetting zero_grad()'],
  graphsAlive: ['/lessons/training-step#keeping-graphs-alive', 'Keeping graphs alive'],
  breakStep: ['/lessons/training-step#advanced-break-it-on-purpose', 'Break it on purpose: a label out of range'],
  floor: ['/lessons/gpu-memory#the-16-bytes-per-parameter-floor', 'The 16-bytes-per-parameter floor'],
  firstBatch: ['/lessons/gpu-memory#why-a-model-that-loads-can-still-oom-on-its-first-batch', 'Why a model that loads can still OOM'],
  oomFixes: ['/lessons/gpu-memory#fixing-an-out-of-memory-error-in-order', 'Fixing an out-of-memory error, in order'],
  nvidiaSmi: ['/lessons/gpu-memory#why-nvidia-smi-reads-higher', 'Why nvidia-smi reads higher'],
  oomHere: ['/lessons/slow-or-broken#out-of-memory-after-the-model-loads', 'Out of memory after the model loads (this lesson)'],
  gradScaler: ['/lessons/mixed-precision#loss-scaling-why-fp16-needs-gradscaler', 'Loss scaling: why FP16 needs GradScaler'],
  autocast: ['/lessons/mixed-precision#autocast-16-bit-where-it-is-safe', 'Autocast: 16-bit where it is safe'],
  ampMemory: ['/lessons/mixed-precision#what-mixed-precision-saves-in-memory-and-what-it-does-not', 'What mixed precision saves in memory'],
  ampMistakes: ['/lessons/mixed-precision#common-mistakes', 'Mixed precision: common mistakes'],
  throughput: ['/lessons/slow-or-broken#memory-full-throughput-low', 'Memory full, throughput low (this lesson)'],
  noTime: ['/lessons/slow-or-broken#the-kernel-that-takes-no-time', 'The kernel that takes no time (this lesson)'],
  tinyModel: ['/lessons/slow-or-broken#cuda-is-slower-than-cpu-on-a-tiny-model', '“CUDA is slower than CPU” on a tiny model'],
  profiler: ['/lessons/slow-or-broken#measuring-instead-of-guessing-torchprofiler', 'Measuring instead of guessing: torch.profiler'],
};

function links(...keys) {
  return keys.map((key) => ({ href: LINKS[key][0], text: LINKS[key][1] }));
}

const yesNo = [
  { value: 'yes', label: 'Yes' },
  { value: 'no', label: 'No' },
];

export const SYMPTOMS = [
  {
    id: 'mismatch',
    label: 'Crash: “Expected all tensors to be on the same device”',
    questions: [
      {
        id: 'where',
        text: 'Which line raises it?',
        options: [
          { value: 'forward', label: 'The model’s forward pass (the message may name mat1 or addmm)' },
          { value: 'loss', label: 'The loss line (cross_entropy)' },
          { value: 'later', label: 'An evaluation or logging step, long after training started' },
        ],
      },
      {
        id: 'how',
        text: 'How does the batch get to the GPU?',
        options: [
          { value: 'helper', label: 'One helper moves every field' },
          { value: 'by-hand', label: 'Some fields are moved one by one' },
          { value: 'loader', label: 'I thought the DataLoader did it' },
        ],
      },
    ],
    diagnose({ where, how }) {
      const cause = {
        forward: 'The input reached a layer whose weights are on the GPU while it is still in host memory: a batch field left behind, or an x.to(device) whose result was never kept.',
        loss: 'The labels (or the attention mask) stayed in host memory while the features were moved, so the loss meets cuda:0 and cpu.',
        later: 'The evaluation or logging path builds or moves its batch differently from the training loop, so one field stays on the CPU.',
      }[where];
      const firstFix = {
        helper: 'Make sure the helper keeps its results (x = x.to(device)) and covers every field, and that tensors made inside the loop pass device=device.',
        'by-hand': 'Replace the field-by-field moves with one helper, to_device(batch, device), used everywhere a batch is made.',
        loader: 'Move each batch yourself: DataLoader never puts data on the GPU; pin_memory=True only pins host memory for a faster copy.',
      }[how];
      return {
        row: TABLE_ROWS.mismatch,
        cause,
        checks: [
          'Print where everything is: next(model.parameters()).device and {k: v.device for k, v in batch.items()}.',
          'Look for x.to(device) on a line of its own: .to() returns a new tensor and leaves x where it was.',
          'Run the preflight check on the first batch, before the long run starts.',
        ],
        fixes: [
          firstFix,
          'Move the model once, before creating the optimizer: model.to(device) moves its parameters in place.',
          'Keep the preflight check in the script, so the next mismatch fails in seconds with a readable message.',
        ],
        links: links('moveBatch', 'toReturnsNew', 'preflight', 'mismatch'),
      };
    },
  },
  {
    id: 'oom',
    label: 'Crash: “CUDA out of memory”',
    questions: [
      {
        id: 'when',
        text: 'When does it happen?',
        options: [
          { value: 'load', label: 'While moving the model to the GPU' },
          { value: 'first-step', label: 'In the first training step' },
          { value: 'later', label: 'After many steps, or in evaluation' },
        ],
      },
      {
        id: 'floor',
        text: 'How does the floor (16 bytes per parameter for FP32 Adam) compare with the card’s memory?',
        options: [
          { value: 'above', label: 'The floor alone is more than the card' },
          { value: 'below', label: 'Well below the card' },
          { value: 'unknown', label: 'I have not worked it out' },
        ],
      },
    ],
    diagnose({ when, floor }) {
      const workItOut =
        'Work out the floor first: parameters × 16 bytes for FP32 Adam (1,000,000,000 parameters → 14.90 GiB), then add activations.';
      let result;
      if (floor === 'above') {
        result = {
          row: null,
          cause: 'The model cannot fit on one card at any batch size: weights, gradients and optimizer state alone are larger than its memory.',
          checks: ['Compare the floor with the card’s memory; mixed precision does not lower it (autocast keeps FP32 weights, gradients and Adam state).'],
          fixes: [
            'Shard weights, gradients and optimizer state across GPUs (FSDP, ZeRO-style sharding).',
            'Or train a smaller model, or use an optimizer with less state (plain SGD keeps none).',
          ],
          links: links('floor', 'ampMemory', 'oomFixes'),
        };
      } else if (when === 'load') {
        result = {
          row: null,
          cause: 'Something other than this model holds the card: another process, or an earlier copy of the model in the same process. Loading puts only the weights on the card.',
          checks: [
            'Run nvidia-smi: which processes hold memory on this GPU?',
            'Print torch.cuda.memory_allocated() before loading: is it already above zero?',
          ],
          fixes: [
            'Stop the other process or choose a free GPU (CUDA_VISIBLE_DEVICES).',
            'Delete the old model and drop every reference to it (del, then no lists or closures holding it) before loading another.',
          ],
          links: links('nvidiaSmi', 'floor', 'oomFixes'),
        };
      } else if (when === 'first-step') {
        result = {
          row: TABLE_ROWS.oom,
          cause: 'Activations, which grow with batch × sequence length (attention scores with sequence²), plus gradients from the first backward() and Adam’s moments from the first optimizer.step(): none of them existed when the model loaded.',
          checks: [
            'Add up the terms: floor plus activations for your batch and sequence length.',
            'Print torch.cuda.max_memory_allocated() after one step with a smaller batch, and see how it scales.',
          ],
          fixes: [
            'Halve the per-step batch and accumulate gradients over two steps (same effective batch).',
            'Shorter sequences: truncate or bucket by length (attention scores shrink with sequence²).',
            'Mixed precision with autocast, which roughly halves the activations.',
            'Gradient checkpointing: recompute activations in backward instead of keeping them.',
          ],
          links: links('firstBatch', 'oomFixes', 'oomHere'),
        };
      } else {
        result = {
          row: TABLE_ROWS.oom,
          cause: 'Memory grows step after step: something keeps tensors alive, such as a list of loss tensors (each holds its graph) or evaluation run without torch.no_grad().',
          checks: [
            'Print torch.cuda.memory_allocated() every N steps: does it climb?',
            'Search for losses.append(loss) or outputs kept across steps.',
            'Check that evaluation runs under torch.no_grad() and model.eval().',
          ],
          fixes: [
            'Store loss.item() when you log (or loss.detach()), never the loss tensor itself.',
            'Wrap evaluation in torch.no_grad().',
            'del tensors you no longer need; torch.cuda.empty_cache() frees nothing a tensor still uses.',
          ],
          links: links('graphsAlive', 'oomFixes', 'oomHere'),
        };
      }
      if (floor === 'unknown') result.checks = [workItOut, ...result.checks];
      return result;
    },
  },
  {
    id: 'throughput',
    label: 'Slow training: GPU memory looks full, throughput is low',
    questions: [
      {
        id: 'workers',
        text: 'How is the DataLoader set up?',
        options: [
          { value: 'zero', label: 'num_workers=0 (the default)' },
          { value: 'many', label: 'num_workers above 0, with pin_memory=True' },
        ],
      },
      {
        id: 'sync',
        text: 'Does every step call loss.item(), print(loss) or .cpu()?',
        options: yesNo,
      },
    ],
    diagnose({ workers, sync }) {
      const checks = [
        'Time the wait for the next batch separately from the step (synchronise, for this diagnosis only).',
        'Count the sync points in one step: .item(), print of a tensor, .cpu(), if on a GPU value.',
        'Profile a few steps with torch.profiler: look for aten::copy_, cudaStreamSynchronize and gaps in the GPU lane.',
      ];
      if (workers === 'zero') {
        return {
          row: TABLE_ROWS.throughput,
          cause: `The GPU waits for data: with num_workers=0 the training process builds every batch while the GPU idles.${sync === 'yes' ? ' The sync on every step then stops the CPU from queuing ahead as well.' : ''}`,
          checks,
          fixes: [
            'DataLoader(num_workers=4, pin_memory=True, persistent_workers=True), and copy with non_blocking=True.',
            ...(sync === 'yes' ? ['Log every N steps instead of every step.'] : []),
            'Then profile again: what is left is small batches or repeated copies.',
          ],
          links: links('throughput', 'pinned', 'profiler'),
        };
      }
      if (sync === 'yes') {
        return {
          row: TABLE_ROWS.throughput,
          cause: 'Sync points: every step the CPU waits for the GPU to finish, so it cannot queue the next step ahead, and the two take turns.',
          checks,
          fixes: [
            'Log every N steps; keep a running sum with loss.detach() on the GPU in between.',
            'Remove Python branches on GPU values (if loss > x) from the inner loop.',
          ],
          links: links('syncPoints', 'throughput', 'profiler'),
        };
      }
      return {
        row: TABLE_ROWS.throughput,
        cause: 'Small batches or repeated copies: kernels too small to fill the GPU, or the same data crossing the bus every step.',
        checks,
        fixes: [
          'Raise the batch size while memory allows, so each launch carries more work.',
          'Move lookup tables and constants to the GPU once, outside the loop; keep metrics on the device.',
        ],
        links: links('throughput', 'profiler', 'tinyModel'),
      };
    },
  },
  {
    id: 'no-time',
    label: 'Suspiciously fast: a kernel or forward pass “takes no time”',
    questions: [
      {
        id: 'sync',
        text: 'Does the timer call torch.cuda.synchronize() before it stops, or use CUDA events?',
        options: yesNo,
      },
      {
        id: 'warm',
        text: 'Did you warm up and repeat the measurement?',
        options: yesNo,
      },
    ],
    diagnose({ sync, warm }) {
      if (sync === 'no') {
        return {
          row: TABLE_ROWS.noTime,
          cause: 'The host timer stopped when the last launch returned, before the queued GPU work finished: it measured how fast the CPU queues work. (40 ms of GPU work launched in 2 ms reads as 2 ms, 20× too low.)',
          checks: [
            'Is a later line, often loss.item(), unexpectedly slow? It absorbs the time the timer missed.',
            'Time again with torch.cuda.synchronize() before starting and before stopping the timer.',
          ],
          fixes: [
            ...(warm === 'no' ? ['Warm up with a few calls first: the first call pays one-time costs.'] : []),
            'Synchronise around the host timer, or record CUDA events and read elapsed_time() after end.synchronize().',
            'Repeat and report the median (torch.utils.benchmark.Timer does all of this).',
          ],
          links: links('timingTrap', 'honestTimer', 'noTime'),
        };
      }
      if (warm === 'no') {
        return {
          row: TABLE_ROWS.noTime,
          cause: 'The clock is synchronised, but one cold measurement is not trustworthy: check that the synchronize() (or end.synchronize()) really runs before the timer is read, and measure again properly.',
          checks: ['Is the sync between the work and the timer read, not before the work?'],
          fixes: [
            'Warm up with a few calls, then repeat 20 times and take the median.',
            'Or use torch.utils.benchmark.Timer, which warms up and synchronises for you.',
          ],
          links: links('warmUp', 'honestTimer', 'noTime'),
        };
      }
      return {
        row: null,
        cause: 'The measurement looks honest, so it may really be fast. Check it against arithmetic: Linear(768, 3) on a (32, 128, 768) batch is about 18.9 MFLOP, about 1 µs at an A100’s 19.5 TFLOP/s FP32.',
        checks: ['Divide the work (FLOPs and bytes) by the GPU’s peak rates: a time below that bound means the timer is wrong.'],
        fixes: ['Look at the kernel’s own duration in the profiler’s CUDA time column.'],
        links: links('tinyModel', 'profiler', 'noTime'),
      };
    },
  },
  {
    id: 'nan',
    label: 'The loss is NaN or inf',
    questions: [
      {
        id: 'precision',
        text: 'What precision does the run use?',
        options: [
          { value: 'fp16', label: 'FP16 autocast' },
          { value: 'bf16', label: 'BF16 autocast' },
          { value: 'fp32', label: 'FP32' },
        ],
      },
      {
        id: 'fp32',
        text: 'Does the same run stay finite in FP32?',
        options: [
          { value: 'yes', label: 'Yes, only the 16-bit run breaks' },
          { value: 'no', label: 'No, FP32 breaks too' },
          { value: 'untried', label: 'Not tried' },
        ],
      },
    ],
    diagnose({ precision, fp32 }) {
      const tryFp32 = 'Run a few steps in FP32: if they stay finite, the 16-bit format is the cause.';
      if (precision === 'fp32' || fp32 === 'no') {
        return {
          row: null,
          cause: 'Not a precision problem: bad inputs, a learning rate that is too high, gradients that pile up, or an operation such as log(0).',
          checks: [
            'Is optimizer.zero_grad() called every step? Without it gradients add up and training can diverge.',
            'Check every batch field with torch.isfinite(t).all(), and find the first step whose loss is not finite.',
            'For debugging only: torch.autograd.set_detect_anomaly(True) names the backward operation that produced the NaN (slow).',
          ],
          fixes: [
            'Lower the learning rate, and clip gradients with torch.nn.utils.clip_grad_norm_.',
            'Clean or clamp the inputs that are not finite.',
          ],
          links: links('zeroGrad'),
        };
      }
      const checks =
        precision === 'fp16'
          ? [
              'Is torch.amp.GradScaler("cuda") in the loop: scale(loss).backward(), unscale_, step, update?',
              'Are masks filled with -1e9 or another huge constant? FP16 tops out at 65,504.',
              'Is gradient clipping done after scaler.unscale_(optimizer)?',
            ]
          : [
              'Look for manual .half() or .bfloat16() casts outside autocast, for example of a loss or of softmax inputs.',
              'Are the weights or optimizer state stored in BF16? Updates smaller than a few tenths of a percent of a weight vanish.',
            ];
      return {
        row: null,
        cause:
          precision === 'fp16'
            ? 'FP16’s narrow range: values above 65,504 overflow to inf, and tiny gradients underflow to zero.'
            : 'BF16 has FP32’s range, so overflow is unlikely; look for precision lost where code casts by hand instead of leaving it to autocast.',
        checks: fp32 === 'untried' ? [tryFp32, ...checks] : checks,
        fixes:
          precision === 'fp16'
            ? [
                'Add torch.amp.GradScaler("cuda"): it scales the loss, skips steps with inf or NaN and adjusts the scale.',
                'Use torch.finfo(t.dtype).min for masks, or switch to BF16 where the hardware supports it.',
              ]
            : [
                'Let autocast choose per operation: it keeps softmax, norms and losses in FP32.',
                'Keep FP32 master weights and optimizer state (the standard autocast recipe does).',
              ],
        links: precision === 'fp16' ? links('gradScaler', 'ampMistakes', 'autocast') : links('autocast', 'ampMemory', 'ampMistakes'),
      };
    },
  },
  {
    id: 'assert',
    label: 'Crash: “CUDA error: device-side assert triggered”',
    questions: [
      {
        id: 'blocking',
        text: 'Did you rerun with CUDA_LAUNCH_BLOCKING=1?',
        options: yesNo,
      },
      {
        id: 'kernel',
        text: 'What does the assertion line name?',
        options: [
          { value: 'loss', label: 'A loss kernel: nll_loss … t >= 0 && t < n_classes' },
          { value: 'index', label: 'An indexing kernel: indexSelect or an embedding' },
          { value: 'unknown', label: 'I can’t tell' },
        ],
      },
    ],
    diagnose({ blocking, kernel }) {
      const cause = {
        loss: 'A label outside the class range: with three actions (answer, escalate, block) every label must be 0, 1 or 2.',
        index: 'An index out of range: a token id at or above the embedding’s size, or a negative index.',
        unknown: 'A kernel failed and reported late, so the traceback points at an innocent line.',
      }[kernel];
      const fix = {
        loss: 'Check labels.min() >= 0 and labels.max() < 3 on the CPU copy, before the device copy, where it costs no sync.',
        index: 'Check input_ids.max() < embedding.num_embeddings on the CPU copy, before the device copy.',
        unknown: 'Run the failing step once on the CPU: the same check raises a readable error (such as IndexError: Target 3 is out of bounds) at once.',
      }[kernel];
      return {
        row: null,
        cause,
        checks: [
          ...(blocking === 'no' ? ['Rerun with CUDA_LAUNCH_BLOCKING=1 (debugging only): the traceback moves to the line that failed.'] : []),
          'Read the assertion line: it names the kernel and the condition that failed.',
        ],
        fixes: [fix, 'Restart Python after a device-side assert: the process’s CUDA context is unusable.'],
        links: links('errorsLate', 'breakStep'),
      };
    },
  },
  {
    id: 'slower-than-cpu',
    label: 'The GPU is slower than the CPU',
    questions: [
      {
        id: 'size',
        text: 'How much work is in one step?',
        options: [
          { value: 'tiny', label: 'Tiny: a toy model, a few thousand numbers' },
          { value: 'large', label: 'Large: big matrix multiplies or batches' },
        ],
      },
      {
        id: 'timed',
        text: 'Did you warm up and synchronise before reading the timer?',
        options: yesNo,
      },
    ],
    diagnose({ size, timed }) {
      if (timed === 'no') {
        return {
          row: TABLE_ROWS.noTime,
          cause: 'The measurement, first: a cold first call pays one-time costs (CUDA context, loading kernels, cuBLAS set-up), and without synchronising you time the queueing, not the work.',
          checks: ['Warm up, synchronise, repeat, then compare again.'],
          fixes: ['Time both devices the honest way before drawing a conclusion.'],
          links: links('warmUp', 'honestTimer', 'tinyModel'),
        };
      }
      if (size === 'tiny') {
        return {
          row: null,
          cause: 'Launch and copy overhead: each kernel costs microseconds to launch and the batch must cross the bus, which outweighs a few hundred multiply-adds.',
          checks: ['Count the work: Linear(8, 3) on a (4, 8) batch is 96 multiply-adds, under a microsecond on one CPU core.'],
          fixes: ['Keep a model this small on the CPU, or give each launch more work (bigger batches, bigger layers).'],
          links: links('tinyModel', 'profiler'),
        };
      }
      return {
        row: TABLE_ROWS.throughput,
        cause: 'The GPU is waiting: data crosses the bus every step or the input pipeline cannot keep up.',
        checks: ['Time the wait for data separately from the step, and profile a few steps.'],
        fixes: ['Move data once; use DataLoader workers with pin_memory=True and non_blocking copies.'],
        links: links('throughput', 'pinned', 'profiler'),
      };
    },
  },
];

export function findSymptom(id) {
  return SYMPTOMS.find((s) => s.id === id) ?? null;
}

/** The diagnosis for `symptomId` once both questions are answered, else null. */
export function diagnose(symptomId, answers) {
  const symptom = findSymptom(symptomId);
  if (!symptom) return null;
  const complete = symptom.questions.every((q) => q.options.some((o) => o.value === answers[q.id]));
  return complete ? symptom.diagnose(answers) : null;
}

/** Every answer combination of a symptom, for tests and for exhaustive checks. */
export function answerCombinations(symptom) {
  const [first, second] = symptom.questions;
  return first.options.flatMap((a) => second.options.map((b) => ({ [first.id]: a.value, [second.id]: b.value })));
}
