const { loadTasks, withTag, pending, formatTask } = require("./tasks");

const [file, tag] = process.argv.slice(2);
if (!file) {
  console.error("usage: node cli.js TASKS.json [TAG]");
  process.exit(2);
}

let tasks = loadTasks(file);
if (tag) tasks = withTag(tasks, tag);

for (const t of tasks) {
  console.log(formatTask(t));
}
console.log(`${pending(tasks).length} of ${tasks.length} open`);
