// Preloaded (`node --require`) into each command the start-up bench times: at exit, the process's
// own CPU time — its start-up included — on fd 3, which the bench reads.
const { writeSync } = require('node:fs');

process.on('exit', () => writeSync(3, JSON.stringify(process.cpuUsage())));
