// e2e check of the CPU/GPU timeline (lesson 5): the unsynchronised host timer reads only
// the CPU's launches, a loss.item() marker moved with the arrow keys or dragged opens a
// gap in the GPU lane, and a sync in every step costs CPU + GPU time per step.
export default async function check({ page, figure, params, assert }) {
  const steps = Math.min(Math.max(Math.round(Number(params.steps ?? 8)), 1), 20);
  const cpu = 3;
  const gpu = 10;
  const value = (key) => figure.locator(`dd[data-value="${key}"]`).textContent();
  const waitFor = async (key, text) => {
    await figure.locator(`dd[data-value="${key}"]`, { hasText: text }).waitFor({ timeout: 3000 });
  };

  assert.equal(await figure.locator('.fallback').isHidden(), true);
  // No sync: the timer stops when the last launch returns.
  assert.equal(await value('noSync'), `${cpu * steps} ms`);
  assert.equal(await value('sync'), `${cpu + gpu * steps} ms`);
  assert.equal(await value('idle'), '0 ms');
  assert.equal(await figure.locator('.tw-timeline-kernel').count(), steps);

  // Keyboard: the marker is a slider; four arrow presses put loss.item() after step 4.
  const marker = figure.getByLabel(/Add loss\.item\(\)/);
  await marker.focus();
  const position = Math.min(4, steps);
  for (let i = 0; i < position; i += 1) await page.keyboard.press('ArrowRight');
  assert.equal(await marker.inputValue(), String(position));
  const gap = position < steps ? cpu : 0;
  await waitFor('sync', `${cpu + gpu * steps + gap} ms`);
  assert.equal(await value('noSync'), `${cpu + gpu * position + cpu * (steps - position)} ms`);
  assert.equal(await value('idle'), `${gap} ms`);
  assert.equal(await figure.locator('.tw-timeline-wait').count(), 1);
  const code = await figure.locator('pre.tw-code').textContent();
  assert.ok(code.includes(`if step == ${position}:`), code);

  // Every step: the lanes take turns, CPU + GPU per step.
  await figure.getByLabel('loss.item() in every step').check();
  await waitFor('sync', `${(cpu + gpu) * steps} ms`);
  assert.equal(await value('perStep'), `${cpu + gpu} ms`);
  assert.equal(await figure.locator('.tw-timeline-wait').count(), steps);
  assert.equal(await marker.isDisabled(), true);
  await figure.getByLabel('loss.item() in every step').uncheck();

  // Drag: press at the lane start and let go where step 2 ends on the GPU.
  if (steps >= 2) {
    await marker.fill('0');
    await waitFor('sync', `${cpu + gpu * steps} ms`);
    const lane = await figure.locator('.tw-timeline-lane-cpu').boundingBox();
    const x = lane.x + (lane.width * (cpu + 2 * gpu)) / ((cpu + gpu) * steps);
    const y = lane.y + lane.height / 2;
    await page.mouse.move(lane.x + 2, y);
    await page.mouse.down();
    await page.mouse.move(x, y, { steps: 5 });
    await page.mouse.up();
    assert.equal(await marker.inputValue(), '2', 'dragging moved the marker to step 2');
    await waitFor('noSync', `${cpu + gpu * 2 + cpu * (steps - 2)} ms`);
  }
}
