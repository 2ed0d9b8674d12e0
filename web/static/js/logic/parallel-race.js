// Parallel race, the arithmetic: how many rounds N equal tasks need on a given number
// of cores, how long each lane takes, and who wins by how much. No DOM here, so node's
// test runner can check the numbers the widget (widgets/parallel-race.js) animates.
//
// The model is the one the lesson and the server's fallback table use: every core
// finishes one task per round, and a lane needs ceil(tasks / cores) rounds. By default a
// task takes the same time on either kind of core; `cpuCoreSpeed` lets a CPU core finish
// its task that many times faster, which is closer to real hardware and narrows the gap.

/** Limits of the widget's inputs: big enough to make the point, small enough to draw. */
export const LIMITS = {
  tasks: { min: 1, max: 10000 },
  cpuCores: { min: 1, max: 128 },
  gpuCores: { min: 1, max: 16896 },
};

/** How many times faster one CPU core finishes a task than one GPU core (choices). */
export const CPU_CORE_SPEEDS = [1, 2, 4, 8, 16];

/** Rounds needed to finish `tasks` equal tasks on `cores` cores (as fallbacks.rs). */
export function roundsNeeded(tasks, cores) {
  if (tasks <= 0) return 0;
  return Math.ceil(tasks / Math.max(1, cores));
}

/** One lane of the race: its cores, rounds, and the time one round takes. */
export function lane(tasks, cores, roundTime) {
  const rounds = roundsNeeded(tasks, cores);
  const busyInLastRound = rounds === 0 ? 0 : tasks - (rounds - 1) * cores;
  return {
    tasks,
    cores,
    rounds,
    roundTime,
    finishTime: rounds * roundTime,
    busyInLastRound,
    idleInLastRound: cores - busyInLastRound,
  };
}

/**
 * The whole race. Times are in "GPU task times": one GPU core needs 1 to finish a task,
 * one CPU core needs 1 / cpuCoreSpeed.
 */
export function race({ tasks, cpuCores, gpuCores, cpuCoreSpeed = 1 }) {
  const cpu = lane(tasks, cpuCores, 1 / cpuCoreSpeed);
  const gpu = lane(tasks, gpuCores, 1);
  let winner = 'tie';
  if (gpu.finishTime < cpu.finishTime) winner = 'gpu';
  else if (cpu.finishTime < gpu.finishTime) winner = 'cpu';
  const slower = Math.max(cpu.finishTime, gpu.finishTime);
  const faster = Math.min(cpu.finishTime, gpu.finishTime);
  return { cpu, gpu, winner, ratio: faster === 0 ? 1 : slower / faster, slowest: slower };
}

/** Where a lane stands at simulated time `t`: rounds and tasks done, tasks in flight. */
export function laneAt(laneState, t) {
  const { tasks, cores, rounds, roundTime } = laneState;
  if (rounds === 0) return { roundsDone: 0, tasksDone: 0, tasksRunning: 0, finished: true };
  const roundsDone = Math.min(rounds, Math.floor(t / roundTime + 1e-9));
  const tasksDone = Math.min(tasks, roundsDone * cores);
  const tasksRunning = roundsDone < rounds ? Math.min(cores, tasks - tasksDone) : 0;
  return { roundsDone, tasksDone, tasksRunning, finished: roundsDone === rounds };
}

/** A ratio as the page prints it: whole numbers plain, others to two decimals. */
export function formatRatio(ratio) {
  const rounded = Math.round(ratio * 100) / 100;
  return `${Number.isInteger(rounded) ? rounded : rounded.toFixed(2)}×`;
}

/** One sentence that says who wins and by how much. */
export function verdict(result) {
  if (result.winner === 'tie') return 'Both lanes finish at the same time.';
  const who = result.winner === 'gpu' ? 'GPU' : 'CPU';
  return `The ${who} finishes ${formatRatio(result.ratio)} sooner.`;
}

/** Wall-clock length of the animation: ~25 ms a round of the slower lane, 0.6–3 s. */
export function animationMillis(result) {
  const slowRounds = Math.max(result.cpu.rounds, result.gpu.rounds);
  return Math.min(3000, Math.max(600, slowRounds * 25));
}
