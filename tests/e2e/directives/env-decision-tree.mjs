// e2e spec for the "what does your machine say?" tree (lesson 3): a GPU in nvidia-smi plus
// torch.version.cuda = None leads to the CPU-only wheel; "Change" reopens a question;
// no nvidia-smi inside a container with is_available() False leads to the container;
// the lesson's CPU-only example, pasted, is read and finished with the keyboard; a healthy
// paste reaches "every layer works".

export default async function check({ page, figure, assert }) {
  const root = figure.locator('.wb-env');
  const result = figure.locator('.wb-env-result');
  const prompt = figure.locator('.wb-env-prompt');
  const option = (name) => figure.getByRole('button', { name, exact: true });

  assert.equal(await figure.locator('.fallback').isHidden(), true, 'the fallback is hidden');
  assert.equal(await result.getAttribute('aria-live'), 'polite');
  assert.equal(await prompt.textContent(), 'What does nvidia-smi print?');

  // The classic case, clicked through.
  await option('A table that lists my GPU').click();
  assert.match(await prompt.textContent(), /^What does torch\.version\.cuda print/);
  await option('None (and torch.__version__ ends in +cpu)').click();
  assert.equal(await root.getAttribute('data-diagnosis'), 'cpu-wheel');
  assert.match(await result.textContent(), /^Broken layer: PyTorch build: a CPU-only wheel/);
  assert.match(await result.textContent(), /Next step: .*“Get Started” page/);
  assert.match(await result.textContent(), /do not need NVIDIA’s CUDA toolkit/);

  // Change the first answer: back to the nvidia-smi question, later answers forgotten.
  await figure.getByRole('button', { name: 'Change the answer to: What does nvidia-smi print?' }).click();
  assert.equal(await prompt.textContent(), 'What does nvidia-smi print?');
  assert.equal(await result.isHidden(), true);
  assert.equal(await figure.locator('.wb-env-answer').count(), 0);

  // No nvidia-smi, inside a container, and PyTorch says False: the container has no GPU.
  await option('nvidia-smi: command not found').click();
  await option('Yes, inside a container').click();
  await option('False').click();
  assert.equal(await root.getAttribute('data-diagnosis'), 'container-no-gpu');
  assert.match(await result.textContent(), /Container: started without GPU access.*--gpus all.*NVIDIA Container Toolkit/);
  assert.equal(await figure.locator('.wb-env-answer').count(), 3);

  // The lesson's example, pasted: the widget reads it and asks only what it lacks.
  await figure.getByRole('button', { name: 'Start over' }).click();
  await figure.getByRole('button', { name: 'Use the lesson’s CPU-only example' }).click();
  const findings = figure.locator('.wb-env-findings');
  assert.match(await findings.textContent(), /torch\.version\.cuda is None/);
  assert.match(await findings.textContent(), /ends in \+cpu/);
  assert.equal(await prompt.textContent(), 'What does nvidia-smi print?');
  // Keyboard: focus is on the first answer; Enter picks it.
  const focused = await page.evaluate(() => document.activeElement?.textContent);
  assert.equal(focused, 'A table that lists my GPU');
  await page.keyboard.press('Enter');
  assert.equal(await root.getAttribute('data-diagnosis'), 'cpu-wheel');

  // A healthy machine, pasted in full.
  await figure.getByLabel('Paste what nvidia-smi and check_env.py printed (optional)').fill(
    [
      '| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4 |',
      'torch version:      2.3.0+cu121',
      'built for CUDA:     12.1',
      'CUDA available:     True',
      'device count:       1',
      '6.0',
    ].join('\n'),
  );
  await figure.getByRole('button', { name: 'Read my output' }).click();
  assert.equal(await root.getAttribute('data-diagnosis'), 'healthy');
  assert.match(await result.textContent(), /^Result: Nothing broken: every layer works/);
  assert.match(await findings.textContent(), /PyTorch was built for CUDA 12\.1\./);

  // Is-available False with device count 0 and no warning: the process cannot see the GPU.
  await figure.getByLabel('Paste what nvidia-smi and check_env.py printed (optional)').fill(
    'Driver Version: 550.54.15\nbuilt for CUDA: 12.1\nCUDA available: False\ndevice count: 0',
  );
  await figure.getByRole('button', { name: 'Read my output' }).click();
  assert.equal(await root.getAttribute('data-diagnosis'), 'hidden-gpus');
  assert.match(await result.textContent(), /CUDA_VISIBLE_DEVICES/);
}
