// "What does your machine say?", the reasoning: the lesson's checks as a decision tree
// (nvidia-smi, then torch.version.cuda, then torch.cuda.is_available(), then a one-line
// CUDA run), the diagnosis each path leads to, and a reader that pulls the answers out of
// pasted terminal output. No DOM here, so node's test runner can walk every path the
// widget (widgets/env-decision-tree.js) offers.
//
// The tree mirrors the lesson's "Reading the results together" table: each path ends at
// the first broken layer (driver, container, PyTorch build, process) or at "healthy".

/** The questions, in the order the checks are run. `next` is a question or a diagnosis. */
export const QUESTIONS = {
  smi: {
    prompt: 'What does nvidia-smi print?',
    command: 'nvidia-smi',
    options: [
      { id: 'table', label: 'A table that lists my GPU', next: 'torchCuda' },
      { id: 'not-found', label: 'nvidia-smi: command not found', code: true, next: 'container' },
      {
        id: 'no-driver',
        label: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
        code: true,
        next: 'driver-not-loaded',
      },
      {
        id: 'mismatch',
        label: 'Failed to initialize NVML: Driver/library version mismatch',
        code: true,
        next: 'driver-mismatch',
      },
      { id: 'mac', label: 'I am on a Mac with Apple silicon', next: 'apple-mps' },
    ],
  },
  container: {
    prompt: 'Are you running inside a container (Docker, Podman, a Kubernetes pod)?',
    options: [
      { id: 'yes', label: 'Yes, inside a container', next: 'containerTorch' },
      { id: 'no', label: 'No, directly on the machine', next: 'no-driver' },
    ],
  },
  containerTorch: {
    prompt: 'Inside the container, what does torch.cuda.is_available() print?',
    command: 'python check_env.py',
    options: [
      { id: 'true', label: 'True', code: true, next: 'container-no-smi' },
      { id: 'false', label: 'False', code: true, next: 'container-no-gpu' },
    ],
  },
  torchCuda: {
    prompt: 'What does torch.version.cuda print (the “built for CUDA” line of check_env.py)?',
    command: 'python check_env.py',
    options: [
      { id: 'none', label: 'None (and torch.__version__ ends in +cpu)', next: 'cpu-wheel' },
      { id: 'version', label: 'A version, such as 12.4', next: 'available' },
      {
        id: 'no-module',
        label: "ModuleNotFoundError: No module named 'torch'",
        code: true,
        next: 'wrong-python',
      },
    ],
  },
  available: {
    prompt: 'What does torch.cuda.is_available() print?',
    command: 'python check_env.py',
    options: [
      { id: 'true', label: 'True', code: true, next: 'runCheck' },
      {
        id: 'false-old-driver',
        label: 'False, with a warning that the NVIDIA driver is too old',
        next: 'driver-too-old',
      },
      {
        id: 'false-zero',
        label: 'False, no warning, and device_count() is 0',
        next: 'hidden-gpus',
      },
    ],
  },
  runCheck: {
    prompt: 'What does the one-line test print?',
    command:
      'python -c "import torch; x = torch.ones(3, device=\'cuda\'); print((x * 2).sum().item())"',
    options: [
      { id: 'six', label: '6.0', code: true, next: 'healthy' },
      {
        id: 'no-kernel-image',
        label: 'no kernel image is available for execution on the device',
        code: true,
        next: 'arch-unsupported',
      },
    ],
  },
};

/** The question every walk starts from. */
export const FIRST_QUESTION = 'smi';

const NO_TOOLKIT =
  'You do not need NVIDIA’s CUDA toolkit (nvcc) for this: the official PyTorch wheels bring their own CUDA runtime libraries.';

/** Where each path ends: the broken layer, why, and what to do next. */
export const DIAGNOSES = {
  'cpu-wheel': {
    layer: 'PyTorch build: a CPU-only wheel',
    healthy: false,
    why: 'The driver works, but the PyTorch you installed contains no CUDA code, so is_available() is False however good the driver is. This is the classic case.',
    next: `Uninstall it or start a fresh virtual environment, install the command from the selector on PyTorch’s “Get Started” page for your OS and a CUDA version your driver supports, then run check_env.py again. ${NO_TOOLKIT}`,
  },
  'driver-too-old': {
    layer: 'Driver: older than your PyTorch build needs',
    healthy: false,
    why: 'The driver belongs to an older CUDA family than the one your PyTorch was built for. Within a family a small gap is fine: thanks to minor version compatibility, a build for any CUDA 12.x runs on every driver from version 525 on, even one whose nvidia-smi corner shows an older 12.x. A CUDA 12.x build on a driver below 525, or a CUDA 13.x build on one below 580, is what produces this warning.',
    next: 'Update the NVIDIA driver (525 or newer for a CUDA 12.x build, 580 or newer for 13.x), or install a PyTorch build for an older CUDA from the official selector.',
  },
  'hidden-gpus': {
    layer: 'Process: the GPUs are hidden from it',
    healthy: false,
    why: 'The driver sees the GPU and PyTorch has CUDA, but this process is shown no devices. Usually CUDA_VISIBLE_DEVICES is set to an empty string, -1 or an index that does not exist, often by a job script or scheduler.',
    next: 'In the same process, print os.environ.get("CUDA_VISIBLE_DEVICES"); unset it or set it to a valid index such as 0, and check the job’s environment.',
  },
  'no-driver': {
    layer: 'Driver: not installed',
    healthy: false,
    why: 'nvidia-smi ships with the NVIDIA driver, so on a machine (not a container) where the command does not exist, the driver is not installed.',
    next: 'Install the NVIDIA driver for your GPU and operating system, reboot, and check that nvidia-smi lists the GPU.',
  },
  'driver-not-loaded': {
    layer: 'Driver: installed but not loaded',
    healthy: false,
    why: 'The nvidia-smi program is there, but the kernel driver it talks to is not loaded.',
    next: 'Install or repair the driver for the kernel you are running, or reboot after a driver update; then run nvidia-smi again.',
  },
  'driver-mismatch': {
    layer: 'Driver: updated but not yet reloaded',
    healthy: false,
    why: 'The driver’s libraries were updated while the old kernel module is still running, which usually follows a driver update on a machine that has not been rebooted since.',
    next: 'Reboot, then run nvidia-smi again.',
  },
  'container-no-gpu': {
    layer: 'Container: started without GPU access',
    healthy: false,
    why: 'The container was not given the GPU, so neither the driver’s tools nor the GPU itself are visible inside it.',
    next: 'Check that nvidia-smi works on the host first. Then start the container with GPU access: with Docker, docker run --gpus all …, which needs the NVIDIA Container Toolkit installed on the host.',
  },
  'container-no-smi': {
    layer: 'Nothing broken: the container just lacks nvidia-smi',
    healthy: true,
    why: 'PyTorch can use the GPU. Some containers are given the GPU for computation without the nvidia-smi program, so the command is missing while CUDA works.',
    next: 'Run the one-line test to be sure, then write device-agnostic code: device = torch.device("cuda" if torch.cuda.is_available() else "cpu").',
  },
  'wrong-python': {
    layer: 'Process: a different Python environment',
    healthy: false,
    why: 'The interpreter that ran the check has no PyTorch at all, so it is probably not the one you installed into (a terminal venv against a notebook kernel, say).',
    next: 'Print sys.executable in both places, activate the project’s environment or pick the right notebook kernel, and run check_env.py with that interpreter.',
  },
  'arch-unsupported': {
    layer: 'PyTorch build: no code for this GPU',
    healthy: false,
    why: 'is_available() is True, but the build has no kernels compiled for your GPU’s compute capability: the GPU is much older or newer than the build supports.',
    next: 'Compare torch.cuda.get_device_capability(0) with torch.cuda.get_arch_list(), and install a build from the official selector that covers your GPU.',
  },
  'apple-mps': {
    layer: 'No NVIDIA GPU: use the mps backend',
    healthy: true,
    why: 'Apple silicon has no CUDA, so nvidia-smi and torch.cuda do not apply. PyTorch’s GPU backend on a Mac is mps, and the placement ideas of this course apply to it unchanged.',
    next: 'Check torch.backends.mps.is_available() and pick the device in three steps: cuda if available, else mps if available, else cpu.',
  },
  healthy: {
    layer: 'Nothing broken: every layer works',
    healthy: true,
    why: 'The driver sees the GPU, your PyTorch has CUDA, this process can see the GPU and a kernel ran on it.',
    next: `Write device-agnostic code: device = torch.device("cuda" if torch.cuda.is_available() else "cpu"), and pass device everywhere. ${NO_TOOLKIT}`,
  },
};

/** True when `id` names a diagnosis rather than a question. */
export function isDiagnosis(id) {
  return Object.hasOwn(DIAGNOSES, id);
}

/**
 * Follows the tree from the first question using `answers` ({ questionId: optionId }).
 * Returns the steps taken, and either the next question to ask or the diagnosis reached.
 * Answers to questions off the path are ignored.
 */
export function walk(answers) {
  const path = [];
  let at = FIRST_QUESTION;
  while (!isDiagnosis(at)) {
    const question = QUESTIONS[at];
    const option = question.options.find((o) => o.id === answers[at]);
    if (!option) return { path, question: at, diagnosis: null };
    path.push({ question: at, option: option.id });
    at = option.next;
  }
  return { path, question: null, diagnosis: at };
}

/** The option object for one answer. */
export function optionOf(questionId, optionId) {
  return QUESTIONS[questionId].options.find((o) => o.id === optionId);
}

/**
 * Reads pasted terminal output (nvidia-smi, check_env.py, the one-liner) into answers,
 * plus a list of plain-language findings. Only what the text shows is answered.
 */
export function readOutput(text) {
  const answers = {};
  const findings = [];
  const has = (pattern) => pattern.test(text);

  if (has(/couldn't communicate with the NVIDIA driver/i)) {
    answers.smi = 'no-driver';
    findings.push('nvidia-smi cannot talk to the driver.');
  } else if (has(/Driver\/library version mismatch/i)) {
    answers.smi = 'mismatch';
    findings.push('nvidia-smi reports a driver/library version mismatch.');
  } else if (has(/nvidia-smi:\s*(command\s+)?not found|'nvidia-smi' is not recognized/i)) {
    answers.smi = 'not-found';
    findings.push('The nvidia-smi command was not found.');
  } else if (has(/NVIDIA-SMI\s+\d|Driver Version:|^GPU \d+: .+\(UUID:|name,\s*driver_version/im)) {
    answers.smi = 'table';
    findings.push('nvidia-smi lists a GPU: the driver layer works.');
  }

  if (has(/No module named '?torch'?/)) {
    answers.torchCuda = 'no-module';
    findings.push('This Python has no torch module.');
  } else if (
    has(/built for CUDA:\s*None/i) ||
    has(/version\.cuda\)?\s*[:=]?\s*None/) ||
    has(/Torch not compiled with CUDA enabled/i)
  ) {
    answers.torchCuda = 'none';
    findings.push('torch.version.cuda is None: this PyTorch is a build without CUDA.');
  } else if (has(/built for CUDA:\s*\d+\.\d+/i)) {
    answers.torchCuda = 'version';
    const version = text.match(/built for CUDA:\s*(\d+\.\d+)/i)[1];
    findings.push(`PyTorch was built for CUDA ${version}.`);
  }
  if (has(/torch version:\s*\S+\+cpu\b/i)) {
    findings.push('torch.__version__ ends in +cpu: the CPU-only build.');
  }

  const available = text.match(/CUDA available:\s*(True|False)/i);
  if (available) {
    const isTrue = available[1].toLowerCase() === 'true';
    findings.push(`torch.cuda.is_available() is ${isTrue ? 'True' : 'False'}.`);
    if (isTrue) answers.available = 'true';
    else if (has(/driver on your system is too old/i)) {
      answers.available = 'false-old-driver';
      findings.push('PyTorch warns that the NVIDIA driver is too old.');
    } else if (has(/device count:\s*0\b/i)) answers.available = 'false-zero';
    answers.containerTorch = isTrue ? 'true' : 'false';
  }
  const count = text.match(/device count:\s*(\d+)/i);
  if (count) findings.push(`torch.cuda.device_count() is ${count[1]}.`);

  if (has(/no kernel image is available for execution on the device/i)) {
    answers.runCheck = 'no-kernel-image';
    findings.push('The one-line test failed: no kernel image for this GPU.');
  } else if (has(/^\s*6\.0\s*$/m)) {
    answers.runCheck = 'six';
    findings.push('The one-line test printed 6.0: a kernel ran on the GPU.');
  }
  return { answers, findings };
}

/** The lesson's example: check_env.py on a working driver with a CPU-only PyTorch. */
export const CPU_ONLY_EXAMPLE = [
  'python:             /home/ana/tickets/.venv/bin/python',
  'torch version:      2.x.x+cpu',
  'built for CUDA:     None',
  'CUDA available:     False',
  'device count:       0',
].join('\n');
